"""Exports stay well-formed and output stays harmless whatever Zotero or the catalogue holds."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

from conftest import write_config
from factories import api_collection, api_item, api_pdf, placement, write_json
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from zotsync.export.markdown import render_markdown
from zotsync.export.mdtext import LINK_SCHEMES, cell, link
from zotsync.labels import labels_for
from zotsync.model import Link
from zotsync.text import one_line

# Terminal controls and bidi overrides: none may reach a page or a terminal raw.
RAW_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
ESC_TITLE = "Evil \x1b]0;pwned\x07 title \x1b[2J with \u202eexe.txt"


def allowed(href: str) -> bool:
    """Whether a browser would open `href` as a web, mail, Zotero or DOI link or a relative path: it
    drops tabs and line breaks and leading controls and spaces, then reads the scheme (WHATWG URL)."""
    href = re.sub("[\t\n\r]", "", href).lstrip("".join(map(chr, range(0x21))))
    scheme = re.match(r"([A-Za-z][A-Za-z0-9+.-]*):", href)
    return scheme is None or scheme.group(1).lower() in {"http", "https", "mailto", "zotero", "doi"}


def markdown_parser() -> MarkdownIt:
    parser = MarkdownIt("commonmark").enable("table")
    parser.validateLink = lambda url: True  # judge zotsync's output, not markdown-it's own safety net
    return parser


def tables(page: str) -> list[list[list[str]]]:
    """Each table of the page as markdown-it parses it: body rows, each a list of cell contents."""
    found: list[list[list[str]]] = []
    row: list[str] | None = None
    in_body = False
    for token in markdown_parser().parse(page):
        if token.type == "table_open":
            found.append([])
        elif token.type == "tbody_open":
            in_body = True
        elif token.type == "tbody_close":
            in_body = False
        elif token.type == "tr_open" and in_body:
            row = []
        elif token.type == "inline" and row is not None:
            row.append(token.content)
        elif token.type == "tr_close" and row is not None:
            found[-1].append(row)
            row = None
    return found


def hrefs(page: str) -> list[str]:
    out = []
    for token in markdown_parser().parse(page):
        for child in token.children or ():
            if child.type == "link_open":
                out.append(str(child.attrs["href"]))
    return out


# -- a whole sync on a hostile library -----------------------------------------------------------------

HOSTILE_LINKS = {
    "Paper": "https://example.org/a\nb",
    "Note": "notes/x\r\n.md",
    "Evil": "javascript:alert(1)",
    "Evil2": "JaVaScRiPt:alert(2)",
    "Evil3": "java\nscript:alert(3)",
    "Data": "data:text/html,<script>alert(4)</script>",
    "VB": "vbscript:msgbox(5)",
    "Entity": "javascript&colon;alert(6)",
    "Mail": "mailto:a@example.org",
    "DOI": "doi:10.1/x",
}


def hostile_project(folder: Path) -> Path:
    items = [api_collection("CQLL2222", "Top\nLevel")]
    for number in range(15):
        key = f"ITM{number:02d}222".replace("0", "A").replace("1", "B")[:8]
        items.append(
            api_item(
                key,
                f"{ESC_TITLE} {number}\nsecond line | pipe",
                url=f"https://example.org/{number}\nnext",
                DOI=f"10.1/{number}\r\nx",
                publicationTitle="Journal\nof Breaks",
                tags=["a\nb", "c\x1b[31m"],
                collections=["CQLL2222"] if number % 2 else [],
            )
        )
        items.append(api_pdf(f"PDF{number:02d}Z22".replace("0", "A").replace("1", "B")[:8], key, url="x\ny"))
    write_json(folder / "library.json", items)
    links = ", ".join(f'{label}: "{url}"' for label, url in HOSTILE_LINKS.items()).replace("\n", "\\n")
    links = links.replace("\r", "\\r")
    entries = "".join(
        f'      - title: "Curated \\e[1m{number}\\nline \\u202e"\n'
        f'        why: "why\\nnot \\a"\n'
        f"        links: {{{links}}}\n"
        for number in range(15)
    )
    (folder / "catalog.yaml").write_text(
        f'title: "Page\\ntitle"\ncategories:\n  - name: "Cat\\negory"\n    entries:\n{entries}',
        encoding="utf-8",
    )
    return write_config(
        folder,
        "source: {type: snapshot, path: library.json}\ncatalog: catalog.yaml\nstore: store.sqlite\n"
        'exports: {dir: out, archive_link: "a.md#{key}\\nx", language: en}\n'
        'reconcile: {inbox_tags: ["a\\nb"]}\n',
    )


def test_a_hostile_library_gives_one_table_row_per_placement(tmp_path: Path, run) -> None:
    assert run("-q", "--config", str(hostile_project(tmp_path)), "sync").code == 0
    page = (tmp_path / "out" / "catalog.md").read_text(encoding="utf-8")
    data = (tmp_path / "out" / "catalog.csv").read_text(encoding="utf-8")
    placements = list(csv.DictReader(io.StringIO(data)))
    assert len(placements) == 30  # 15 curated entries, 15 Zotero items (in a collection or Unfiled)
    rows = [row for table in tables(page) for row in table]
    assert len(rows) == len(placements)
    assert all(len(row) == 5 for row in rows)
    assert not RAW_UNSAFE.search(page) and not RAW_UNSAFE.search(data.replace("\r", ""))


def test_only_web_mail_zotero_doi_and_relative_targets_are_links(tmp_path: Path, run) -> None:
    assert run("-q", "--config", str(hostile_project(tmp_path)), "sync").code == 0
    page = (tmp_path / "out" / "catalog.md").read_text(encoding="utf-8")
    targets = hrefs(page)
    assert targets and all(map(allowed, targets)), targets
    assert not any(re.match(r"(java|vb)script:|data:", h, re.IGNORECASE) for h in targets)
    assert "mailto:a@example.org" in targets and "doi:10.1/x" in targets
    assert "https://example.org/a%20b" in targets  # the broken line joined, like cell text
    # the refused ones are still on the page, as text
    assert "Evil (javascript:alert(1))" in page and "Data (data:text/html,&lt;script&gt;" in page


def test_link_markdown_writes_unsafe_schemes_as_text() -> None:
    assert link("Paper", "https://a/b c") == "[Paper](https://a/b%20c)"
    assert link("Note", "notes/a.md") == "[Note](notes/a.md)"
    assert link("Z", "zotero://select/library/items/X") == "[Z](zotero://select/library/items/X)"
    assert link("Evil", "javascript:alert(1)") == "Evil (javascript:alert(1))"
    assert link("Evil", " javascript:x") == "Evil (javascript:x)"
    assert link("Evil", "file:///etc/passwd") == "Evil (file:///etc/passwd)"
    assert link("Entity", "a&amp;b") == "[Entity](a\\&amp;b)"  # not decoded into a scheme
    assert link("[x]", "https://a") == "[\\[x\\]](https://a)"
    assert set(LINK_SCHEMES) == {"http", "https", "mailto", "zotero", "doi"}


# -- properties: any text is one cell, and rows stay rows --------------------------------------------

ANY_TEXT = st.text(
    alphabet=st.one_of(
        st.characters(),
        st.sampled_from("|\\\n\r\t\x1b\x07\x85\u2028\u202e\u2066[]()<>&`*_#-=:; "),
    ),
    max_size=30,
)


@given(st.lists(st.tuples(ANY_TEXT, ANY_TEXT, ANY_TEXT, ANY_TEXT, ANY_TEXT), min_size=1, max_size=4))
@settings(max_examples=150, deadline=None)
def test_any_text_anywhere_keeps_one_row_per_placement_and_five_cells(
    rows: list[tuple[str, str, str, str, str]],
) -> None:
    placements = [
        placement(title=title, venue=venue, why=why, tags=(label,), links=(Link(label, url), Link("P", url)))
        for title, venue, why, label, url in rows
    ]
    page = render_markdown("title", "", placements, labels_for("en")).decode()
    body = [row for table in tables(page) for row in table]
    assert len(body) == len(placements)
    assert all(len(row) == 5 for row in body)
    assert not RAW_UNSAFE.search(page)
    assert all(map(allowed, hrefs(page)))


@given(ANY_TEXT)
@settings(max_examples=300)
def test_any_text_is_one_cell(text: str) -> None:
    page = render_markdown("t", "", [placement(title=text)], labels_for("en")).decode()
    (table,) = tables(page)
    assert len(table) == 1 and len(table[0]) == 5
    escaped = cell(text)
    assert not RAW_UNSAFE.search(escaped) and "\n" not in escaped


@given(ANY_TEXT)
def test_one_line_leaves_one_printable_line(text: str) -> None:
    shown = one_line(text)
    assert len(shown.splitlines()) <= 1 and not RAW_UNSAFE.search(shown)


# -- what zotsync prints ------------------------------------------------------------------------------


def test_status_prints_hostile_titles_escaped_one_line_each(tmp_path: Path, run) -> None:
    config = str(hostile_project(tmp_path))
    assert run("-q", "--config", config, "sync").code == 0
    result = run("--config", config, "status")
    assert result.code == 0
    assert not RAW_UNSAFE.search(result.out) and "\\x1b]0;pwned\\x07" in result.out
    assert "\\u202e" in result.out
    inbox = result.out.split("inbox items not yet curated: ")[1].splitlines()
    assert inbox[0] == "15" and all(line.startswith("  - ") for line in inbox[1:16])
    as_json = run("--config", config, "status", "--format", "json")
    assert not RAW_UNSAFE.search(as_json.out) and "\\u202e" in as_json.out


def test_a_quoted_title_with_a_newline_cannot_forge_a_second_error_line(tmp_path: Path, run) -> None:
    config = str(hostile_project(tmp_path))
    assert run("-q", "--config", config, "pull").code == 0
    forged = "nothing like it\nzotsync: error: \x1b[2Jforged"
    result = run("--config", config, "pin", forged, "ITMAA222")
    assert result.code == 2
    assert result.err.count("\n") == 1 and result.err.startswith("zotsync: error: no curated entry titled")
    assert "\\nzotsync: error: \\x1b[2Jforged" in result.err


def test_adopt_messages_show_a_hostile_title_on_one_line(tmp_path: Path, run) -> None:
    config = str(hostile_project(tmp_path))
    assert run("-q", "--config", config, "pull").code == 0
    result = run("--config", config, "adopt", "ITMAA222", "--category", "Cat\negory")
    assert result.code == 0, result.err
    assert result.err.count("\n") == 1 and not RAW_UNSAFE.search(result.err)
    assert "\\x1b]0;pwned\\x07" in result.err and "\\nsecond line" in result.err


def test_list_prints_one_line_per_item_with_controls_escaped(tmp_path: Path, run) -> None:
    config = str(hostile_project(tmp_path))
    assert run("-q", "--config", config, "pull").code == 0
    result = run("--config", config, "list")
    assert result.code == 0
    lines = result.out.splitlines()
    assert len(lines) == 15 and not RAW_UNSAFE.search(result.out)
    assert all("\\x1b]0;pwned\\x07" in line and "\\nsecond line" in line for line in lines)
    as_json = run("--config", config, "list", "--format", "json")
    assert not RAW_UNSAFE.search(as_json.out) and "\\u202e" in as_json.out
