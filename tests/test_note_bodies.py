"""What a note page makes of the notes and annotations Zotero holds, whatever they hold: one note that the
converter cannot read never stops a sync; a link that points at nothing on the site is text; `none`
means no `zotero://` link; nested lists nest in python-markdown and CommonMark; an empty note is no note;
a huge note costs bounded memory."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from conftest import ROOT
from factories import (
    ZOTERO_API_KEY,
    api_annotation,
    api_child,
    api_item,
    api_pdf,
    csv_rows,
    edit_snapshot,
    edited_note,
    make_project,
    markdown_it,
    mkdocs_build,
    note_pages,
    python_markdown,
    source_project,
    sync,
)
from zotero_server import FakeLibrary
from zotero_sqlite import build as build_zotero_db

from zotsync.export.notes import MAX_NOTE

# -- one bad note never stops the list -----------------------------------------------------------------

DEEP_DIVS = "<div>" * 1000 + "words under a thousand divs" + "</div>" * 1000
DEEP_LISTS = "<ul><li>" * 400 + "words under four hundred lists" + "</li></ul>" * 400
# The position of an image annotation, as Zotero's JSON text: a page index no page has, and nesting
# deeper than Python's JSON reader recurses.
HUGE_PAGE = '{"pageIndex": 1e400, "rects": [[1, 2, 3, 4]]}'
DEEP_POSITION = '{"pageIndex": 1, "x": ' + "[" * 100_000 + "]" * 100_000 + "}"

BAD_NOTES = {
    "PAPERBBB": '<ol start="一"><li>first of a list numbered in Chinese</li></ol>',
    "PAPERCCC": '<table><tr><td colspan="²">a cell spanning ² columns</td><td>next</td></tr></table>',
    "PAPERDDD": '<ol start="' + "9" * 5000 + '"><li>first of a list numbered with 5,000 digits</li></ol>',
    "PAPEREEE": DEEP_DIVS,
    "PAPERFFF": DEEP_LISTS,
}
BAD_POSITIONS = {"PAPERGGG": HUGE_PAGE, "PAPERHHH": DEEP_POSITION}


def bad_library() -> list[dict]:
    objects = [
        api_item("PAPERAAA", "A Good Paper"),
        api_child("NQTEAAAA", "PAPERAAA", "note", title="", note="<p>fine</p>"),
    ]
    for key, html in BAD_NOTES.items():
        objects += [
            api_item(key, f"Paper {key}"),
            api_child(f"NQTE{key[-4:]}", key, "note", title="", note=html),
        ]
    for key, position in BAD_POSITIONS.items():
        pdf = f"PDF{key[-5:]}"
        objects += [
            api_item(key, f"Paper {key}"),
            api_pdf(pdf, key),
            api_annotation(
                f"ANN{key[-5:]}",
                pdf,
                "",
                "00000|000001|00000",
                annotationType="image",
                annotationPosition=position,
                annotationComment=f"image comment of {key}",
            ),
        ]
    return objects


def zotero_sqlite_of(path: Path, objects: list[dict]) -> Path:
    """A zotero.sqlite holding `objects`, with the image annotations written as Zotero writes them."""
    path.parent.mkdir(parents=True)
    annotations = [obj for obj in objects if obj["data"]["itemType"] == "annotation"]
    zotero_db = build_zotero_db(path, [obj for obj in objects if obj not in annotations])
    for obj in annotations:
        data = obj["data"]
        zotero_db.add_annotation(obj["key"], data["parentItem"], "")
        with sqlite3.connect(path) as db:
            db.execute(
                "UPDATE itemAnnotations SET type = 3, position = ?, comment = ? WHERE itemID ="
                " (SELECT itemID FROM items WHERE key = ?)",
                (data["annotationPosition"], data["annotationComment"], obj["key"]),
            )
        db.close()
    return path


def test_a_note_or_annotation_the_converter_cannot_read_never_stops_a_sync_from_any_source(
    tmp_path: Path, run, zotero_api
) -> None:
    objects = bad_library()
    web = zotero_api(FakeLibrary.from_snapshot(objects, library_id="4242"))
    database = zotero_sqlite_of(tmp_path / "zotero" / "zotero.sqlite", objects)
    snapshot = tmp_path / "snapshot"
    snapshot.mkdir()
    projects = {
        "snapshot": make_project(snapshot, objects),
        "web": source_project(
            tmp_path / "web",
            f"{{type: web, library_type: user, library_id: '4242', api_key: {ZOTERO_API_KEY}, "
            f"base_url: '{web.url}'}}",
        ),
        "zotero.sqlite": source_project(tmp_path / "local", f"{{type: local, path: '{database}'}}"),
    }
    papers = {"PAPERAAA", *BAD_NOTES, *BAD_POSITIONS}
    for name, config in projects.items():
        err = sync(run, config)
        folder = config.parent
        assert note_pages(folder) == papers, name
        assert set(csv_rows(folder)) == papers, name
        pages = {key: (folder / "out" / "notes" / f"{key}.md").read_text(encoding="utf-8") for key in papers}
        assert "1. first of a list numbered in Chinese" in pages["PAPERBBB"], name
        assert "a cell spanning ² columns | next |" in pages["PAPERCCC"], name
        assert "1. first of a list numbered with 5,000 digits" in pages["PAPERDDD"], name
        # the notes nested too deeply: their words as plain text, one warning each
        for key, words in (
            ("PAPEREEE", "words under a thousand divs"),
            ("PAPERFFF", "words under four hundred lists"),
        ):
            assert f"## Notes\n\n{words}\n" in pages[key], (name, pages[key][-300:])
            warned = [line for line in err.splitlines() if f"NQTE{key[-4:]}" in line]
            assert len(warned) == 1 and "plain text" in warned[0], (name, err)
        # the image annotations: the page, without a page number it cannot have
        for key in BAD_POSITIONS:
            assert f"image comment of {key}" in pages[key], name
            assert f"?annotation=ANN{key[-5:]})" in pages[key], (name, pages[key])
        assert "fine" in pages["PAPERAAA"]
        assert "unexpected" not in err, (name, err)


def test_a_page_number_is_one_a_pdf_can_have() -> None:
    from zotsync.export.notes import _page_number

    assert [_page_number(text) for text in ('{"pageIndex": 4}', '{"pageIndex": 4.0}', "")] == [5, 5, None]
    refused = ['{"pageIndex": 1e400}', '{"pageIndex": -1}', '{"pageIndex": true}', '{"pageIndex": "2"}']
    refused += ["[" * 100_000 + "]" * 100_000, '{"pageIndex": 1' + "0" * 5000 + "}", "[4]", "{"]
    assert [_page_number(text) for text in refused] == [None] * len(refused)


# -- a link to nothing on the site is text ---------------------------------------------------------------

RELATIVE_LINKS = (
    '<p>See <a href="figure1.png">the figure</a>, <a href="#results">the results</a>,'
    ' <a href="java&#x09;script:alert(1)">a script</a>, <a href="/\\evil.example/">a host</a>'
    ' and <a href="https://example.org/ok">the web</a>.</p><h2 id="results">Results</h2>'
)
SITE = """\
site_name: notes
theme: {name: material}
markdown_extensions: [tables, toc]
validation:
  omitted_files: warn
  absolute_links: warn
  unrecognized_links: warn
  anchors: warn
"""


@pytest.mark.skipif(not __import__("importlib").util.find_spec("mkdocs"), reason="mkdocs is not installed")
def test_a_relative_link_in_a_note_is_text_and_the_site_builds_strict(tmp_path: Path, run) -> None:
    objects = [
        api_item("PAPERAAA", "Links"),
        api_child("NQTEAAAA", "PAPERAAA", "note", title="", note=RELATIVE_LINKS),
    ]
    site = tmp_path / "site"
    site.mkdir()
    (site / "mkdocs.yml").write_text(SITE, encoding="utf-8")
    (site / "docs").mkdir()
    (site / "docs" / "index.md").write_text("# Home\n\n[The list](list/catalog.md)\n", encoding="utf-8")
    from factories import write_json

    write_json(site / "library.json", objects)
    config = source_project(site, "{type: snapshot, path: library.json}")
    text = config.read_text(encoding="utf-8").replace("dir: out", "dir: docs/list")
    config.write_text(text, encoding="utf-8")
    sync(run, config)
    page = (site / "docs" / "list" / "notes" / "PAPERAAA.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)]*)\)", page)
    assert "https://example.org/ok" in links
    assert not [link for link in links if not re.match(r"(https?|mailto|zotero|doi):", link)], links
    assert "the figure (figure1.png)" in page and "the results (\\#results)" in page
    mkdocs_build(site, tmp_path / "html")
    html = (tmp_path / "html" / "list" / "notes" / "PAPERAAA" / "index.html").read_text(encoding="utf-8")
    hrefs = re.findall(r'<a href="([^"]*)"[^>]*>(?:the figure|the results|a script|a host|the web)<', html)
    assert hrefs == ["https://example.org/ok"], hrefs


# -- zotero_links: none --------------------------------------------------------------------------------

ANNOTATIONS_NOTE = (
    '<div data-schema-version="9"><h1>Annotations</h1>'
    '<p><img alt="" data-attachment-key="IMGEAAAA" width="391" height="245"><br>area comment</p>'
    '<p>"highlighted" (<a href="zotero://open-pdf/library/items/PDFAAAAA?page=3">Lovelace 2023, p. 3</a>)</p>'
    '<p><a href="zotero://select/library/items/PAPERAAA">zotero://select/library/items/PAPERAAA</a></p></div>'
)


REAL_NOTE = ROOT.parent / "shared" / "fixtures" / "zotero-notes" / "zotero-test-note.html"


def links_library() -> list[dict]:
    """A paper with a note of images and links into Zotero, an image annotation and, where the fixtures
    are, Zotero's own "Add Note from Annotations" note (an image annotation, citations, highlights)."""
    real = REAL_NOTE.read_text(encoding="utf-8") if REAL_NOTE.is_file() else "<p>no real note here</p>"
    return [
        api_item("PAPERAAA", "Images", url="https://a.example"),
        api_child("NQTEAAAA", "PAPERAAA", "note", title="", note=ANNOTATIONS_NOTE),
        api_child("NQTEREAL", "PAPERAAA", "note", title="", note=real),
        api_pdf("PDFAAAAA", "PAPERAAA"),
        api_annotation(
            "ANNQIMGE",
            "PDFAAAAA",
            "",
            "00000|000001|00000",
            annotationType="image",
            annotationPosition='{"pageIndex": 2}',
        ),
    ]


def test_zotero_links_none_puts_no_zotero_link_on_a_note_page(tmp_path: Path, run) -> None:
    config = make_project(tmp_path, links_library(), ", zotero_links: none")
    sync(run, config)
    page = (tmp_path / "out" / "notes" / "PAPERAAA.md").read_text(encoding="utf-8")
    assert zotero_hrefs(page, tmp_path) == [], page
    assert "Image  \narea comment" in page  # the note's image, as a word
    assert "(Lovelace 2023, p. 3)" in page  # the citation's words, no link
    assert "🟡 p. 1 Image" in page  # the image annotation
    if REAL_NOTE.is_file():
        assert "Image  \n(Emiralioğlu, 2019, p. 598) area comment" in page
    # a sync in which only the note changed remakes the page under the same setting
    edit_snapshot(tmp_path, edited_note("NQTEAAAA", ANNOTATIONS_NOTE + "<p>an edit</p>"))
    sync(run, config)
    page = (tmp_path / "out" / "notes" / "PAPERAAA.md").read_text(encoding="utf-8")
    assert "an edit" in page and zotero_hrefs(page, tmp_path) == [], page


def zotero_hrefs(page: str, folder: Path) -> list[str]:
    """The `zotero:` link targets of the page: in its Markdown, and as both renderers make it HTML."""
    found = re.findall(r"\]\((zotero:[^)]*)\)", page)
    for renderer in (python_markdown, markdown_it):
        found += re.findall(r'href="(zotero:[^"]*)"', renderer(page, folder), re.IGNORECASE)
    return found


def test_zotero_links_local_keeps_the_links_into_zotero(tmp_path: Path, run) -> None:
    sync(run, make_project(tmp_path, links_library()))
    page = (tmp_path / "out" / "notes" / "PAPERAAA.md").read_text(encoding="utf-8")
    assert "[Image](zotero://select/library/items/IMGEAAAA)" in page
    assert "[Lovelace 2023, p. 3](zotero://open-pdf/library/items/PDFAAAAA?page=3)" in page
    assert "[Image](zotero://open-pdf/library/items/PDFAAAAA?page=3&annotation=ANNQIMGE)" in page
    if REAL_NOTE.is_file():
        assert "[Image](zotero://select/library/items/UVUZDZL4)  \n(Emiralioğlu, 2019, p. 598)" in page


# -- nested lists --------------------------------------------------------------------------------------

NESTED = (
    "<ol><li>one<ul><li>one a</li><li>one b<ol start='9'><li>nine</li><li>ten<p>ten's second paragraph</p>"
    "</li></ol></li></ul></li><li>two<blockquote><p>a quote in two</p></blockquote></li>"
    "<li>three<ul><li>three a<ul><li>three a i</li></ul></li></ul></li></ol><p>after the list</p>"
)
# Each text → the lists it sits in, outermost first, as the note's HTML nests it.
NESTING = {
    "one": ("ol",),
    "one a": ("ol", "ul"),
    "one b": ("ol", "ul"),
    "nine": ("ol", "ul", "ol"),
    "ten": ("ol", "ul", "ol"),
    "ten's second paragraph": ("ol", "ul", "ol"),
    "two": ("ol",),
    "a quote in two": ("ol", "blockquote"),
    "three": ("ol",),
    "three a": ("ol", "ul"),
    "three a i": ("ol", "ul", "ul"),
    "after the list": (),
}


class _Nesting(HTMLParser):
    """Each text of rendered HTML → the lists and quotes around it."""

    def __init__(self) -> None:
        super().__init__()
        self.open: list[str] = []
        self.found: dict[str, tuple[str, ...]] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("ul", "ol", "blockquote"):
            self.open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("ul", "ol", "blockquote"):
            assert self.open.pop() == tag

    def handle_data(self, data: str) -> None:
        if data.strip():
            self.found[data.strip()] = tuple(self.open)


def nesting(html: str) -> dict[str, tuple[str, ...]]:
    parser = _Nesting()
    parser.feed(html)
    return parser.found


def test_nested_lists_in_a_note_nest_in_python_markdown_and_in_commonmark(tmp_path: Path, run) -> None:
    objects = [
        api_item("PAPERAAA", "Lists"),
        api_child("NQTEAAAA", "PAPERAAA", "note", title="", note=NESTED),
    ]
    sync(run, make_project(tmp_path, objects))
    page = (tmp_path / "out" / "notes" / "PAPERAAA.md").read_text(encoding="utf-8")
    body = page.split("## Notes\n")[1]
    assert nesting(NESTED) == NESTING
    for renderer in (python_markdown, markdown_it):
        found = nesting(renderer(body, tmp_path))
        assert {text: found.get(text) for text in NESTING} == NESTING, (renderer.__name__, body)
    assert "9. nine\n        10. ten" in body  # the list's own numbers


EDITOR_SAMPLE = ROOT.parent / "shared" / "fixtures" / "zotero-notes" / "note-editor-index.dev.js"


@pytest.mark.skipif(not EDITOR_SAMPLE.is_file(), reason="../shared/fixtures is absent")
def test_the_note_editors_own_nested_lists_nest_in_both_renderers(tmp_path: Path) -> None:
    from zotsync.export.notes import note_body
    from zotsync.labels import labels_for
    from zotsync.model import Item

    # the note editor's development sample: its `html1` string, as Zotero's note editor writes notes
    html = EDITOR_SAMPLE.read_text(encoding="utf-8").split("let html1 = `", 1)[1].split("`;", 1)[0]
    note = Item("NQTEAAAA", 1, "note", parent_key="PAPERAAA", fields={"note": html})
    body = note_body(note, labels_for("en"))
    texts = ("List (supports any node)", "One", "Two", "Three", "Other")
    written = nesting(html)
    assert [written[text] for text in texts] == [("ul",), *[("ul", "ol")] * 4]
    for renderer in (python_markdown, markdown_it):
        found = nesting(renderer(body, tmp_path))
        assert {text: found.get(text) for text in texts} == {text: written[text] for text in texts}, (
            renderer.__name__
        )


# -- an empty note is no note --------------------------------------------------------------------------

EMPTY_NOTES = (
    '<div class="zotero-note znv1"></div>',
    '<div data-schema-version="9"><p> </p><p></p><p>&nbsp;</p>\n<p><br></p></div>',
    "",
)


def test_an_empty_note_gives_no_mark_no_link_and_no_page(tmp_path: Path, run) -> None:
    objects = [
        api_item("PAPERAAA", "Noted"),
        api_child("NQTEAAAA", "PAPERAAA", "note", title="", note="<p>words</p>"),
    ]
    for letter, html in zip("BCD", EMPTY_NOTES, strict=True):
        key = f"PAPEREM{letter}"
        objects += [
            api_item(key, f"Empty {letter}"),
            api_child(f"NQTEEMP{letter}", key, "note", title="", note=html),
        ]
    # an empty note beside an image: the image is something to show
    objects += [
        api_item("PAPERIMG", "An image"),
        api_child(
            "NQTEIMGE", "PAPERIMG", "note", title="", note='<p><img data-attachment-key="IMGEAAAA"></p>'
        ),
    ]
    sync(run, make_project(tmp_path, objects))
    rows = csv_rows(tmp_path)
    assert note_pages(tmp_path) == {"PAPERAAA", "PAPERIMG"}
    for letter in "BCD":
        assert (rows[f"PAPEREM{letter}"]["noted"], rows[f"PAPEREM{letter}"]["note"]) == ("false", "")
    catalog = (tmp_path / "out" / "catalog.md").read_text(encoding="utf-8")
    assert all("📝" not in line for line in catalog.splitlines() if "Empty" in line)
    # a note emptied later takes its page, mark and link with it
    edit_snapshot(tmp_path, edited_note("NQTEAAAA", EMPTY_NOTES[0]))
    sync(run, make_project(tmp_path, json.loads((tmp_path / "library.json").read_text(encoding="utf-8"))))
    assert note_pages(tmp_path) == {"PAPERIMG"}
    assert csv_rows(tmp_path)["PAPERAAA"]["noted"] == "false"


def test_a_blank_note_is_one_that_shows_nothing() -> None:
    from zotsync.searchtext import blank_note

    assert all(blank_note(html) for html in EMPTY_NOTES)
    shown = ["<p>x</p>", "x", '<img data-attachment-key="A">', "<p>&amp;</p>", "<p>&lt;</p>", "<p>0</p>"]
    assert not any(blank_note(html) for html in shown)


# -- memory --------------------------------------------------------------------------------------------

PEAK = """
import resource, sys
from zotsync.cli import main
code = main(sys.argv[1:])
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(peak * (1 if sys.platform == "darwin" else 1024), code)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="the resource module is Unix-only")
def test_a_twenty_megabyte_note_syncs_in_bounded_memory(tmp_path: Path) -> None:
    paragraph = (
        "<p>Tiles keep <strong>data</strong> on chip; <em>fusion</em> saves "
        "<a href='https://x.example'>a trip</a>.</p>"
    )
    html = '<div data-schema-version="9">' + paragraph * (20_000_000 // len(paragraph)) + "</div>"
    objects = [api_item("PAPERAAA", "Huge"), api_child("NQTEAAAA", "PAPERAAA", "note", title="", note=html)]
    config = make_project(tmp_path, objects)
    done = subprocess.run(
        [sys.executable, "-c", PEAK, "-q", "--config", str(config), "sync"],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
    )
    peak, code = done.stdout.split()
    assert code == "0", done.stderr
    assert int(peak) < 600 * 2**20, f"peak RSS {int(peak) / 2**20:.0f} MB"
    page = (tmp_path / "out" / "notes" / "PAPERAAA.md").read_text(encoding="utf-8")
    assert page.count("Tiles keep **data** on chip") > 1000
    # cut where a tag begins, before the limit, and said so
    shown = html.rfind("<", 0, MAX_NOTE + 1)
    marker = (
        f"The note goes on in Zotero: this page shows the first {shown:,} of its {len(html):,} characters."
    )
    assert page.endswith(f"\n\n{marker}\n"), page[-300:]
    print(f"peak RSS of a sync with a {len(html):,}-character note: {int(peak) / 2**20:.0f} MB")
