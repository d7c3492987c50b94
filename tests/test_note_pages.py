"""Note pages: a Markdown page per paper with Zotero notes or annotations, linked from its row, written
from every source, rewritten only when its notes change, never over a file zotsync did not write."""

from __future__ import annotations

import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest
from conftest import ROOT
from factories import (
    api_annotation,
    api_child,
    api_item,
    api_pdf,
    config_of,
    csv_rows,
    edit_snapshot,
    edited_note,
    make_project,
    note_pages,
    source_project,
    sync,
    write_json,
)
from markdown_it import MarkdownIt
from zotero_server import FakeLibrary
from zotero_sqlite import GROUP_ID, GROUP_LIBRARY, ZoteroDB
from zotero_sqlite import build as build_zotero_db

import zotsync.app.page
from zotsync.store import Store

SHARED = ROOT.parent / "shared" / "fixtures"

NOTE_HTML = (
    '<div data-schema-version="9"><h1>Why tiles</h1><p>Tiles keep <strong>data</strong> on chip; see '
    '<a href="https://example.org/tiles">the post</a>.</p><ul><li>reuse</li><li>fusion</li></ul></div>'
)


def library_objects() -> list[dict]:
    """A has a note and two annotations in its PDF; B and C a note each (their rows curated); D none;
    and a standalone note."""
    return [
        api_item("PAPERAAA", "Tiling Matters", date="2023", publicationTitle="OSDI", url="https://a.example"),
        api_child("NQTEAAAA", "PAPERAAA", "note", title="", note=NOTE_HTML),
        api_pdf("PDFAAAAA", "PAPERAAA"),
        api_annotation(
            "ANNQAAAA",
            "PDFAAAAA",
            "read second",
            "00002|000100|00010",
            annotationPageLabel="3",
            annotationComment="my comment",
            annotationColor="#2ea8e5",
        ),
        api_annotation("ANNQBBBB", "PDFAAAAA", "read first", "00000|000050|00010", annotationPageLabel="1"),
        api_item("PAPERBBB", "Curated Not Noted"),
        api_child("NQTEBBBB", "PAPERBBB", "note", title="", note="<p>b's note</p>"),
        api_item("PAPERCCC", "Curated With Its Own Note"),
        api_child("NQTECCCC", "PAPERCCC", "note", title="", note="<p>c's note</p>"),
        api_item("PAPERDDD", "Without Notes"),
        api_item("STNDAAAA", "", "note", note="<p>a standalone note</p>"),
    ]


REAL_CATALOGUE = "title: Real\ncategories: []\n"  # the real libraries' papers, uncurated


def mtimes(folder: Path) -> dict[str, int]:
    """The exports' modification times; the manifest left out, which follows every file zotsync writes
    (tests/test_lost_store.py checks it)."""
    return {
        str(p.relative_to(folder)): p.stat().st_mtime_ns
        for p in (folder / "out").rglob("*")
        if p.is_file() and p.name != ".zotsync-manifest.json"
    }


# -- the rows ------------------------------------------------------------------------------------------


def test_rows_get_the_mark_and_a_note_link_unless_the_curator_set_them(tmp_path: Path, run) -> None:
    sync(run, make_project(tmp_path, library_objects()))
    rows = csv_rows(tmp_path)
    assert (rows["PAPERAAA"]["noted"], rows["PAPERAAA"]["note"]) == ("true", "notes/PAPERAAA.md")
    assert (rows["PAPERBBB"]["noted"], rows["PAPERBBB"]["note"]) == ("false", "notes/PAPERBBB.md")
    assert (rows["PAPERCCC"]["noted"], rows["PAPERCCC"]["note"]) == ("true", "https://my.notes/c")
    assert (rows["PAPERDDD"]["noted"], rows["PAPERDDD"]["note"]) == ("false", "")
    assert "STNDAAAA" not in rows  # a standalone note is no paper: no row, no page
    assert note_pages(tmp_path) == {"PAPERAAA", "PAPERBBB", "PAPERCCC"}
    page = (tmp_path / "out" / "catalog.md").read_text(encoding="utf-8")
    row_a = next(line for line in page.splitlines() if "Tiling Matters" in line)
    assert row_a.startswith("| ⬜ 📝 |")
    assert "[Paper](https://a.example) / [Note](notes/PAPERAAA.md) / [PDF](" in row_a
    row_c = next(line for line in page.splitlines() if "Own Note" in line)
    assert "[Note](https://my.notes/c)" in row_c and "notes/PAPERCCC.md" not in row_c


def test_a_note_page_holds_the_paper_its_notes_and_its_annotations_in_reading_order(
    tmp_path: Path, run
) -> None:
    sync(run, make_project(tmp_path, library_objects()))
    page = (tmp_path / "out" / "notes" / "PAPERAAA.md").read_text(encoding="utf-8")
    assert page.splitlines()[:5] == [
        "# Tiling Matters",
        "",
        "Lovelace, Ada · OSDI · 2023",
        "",
        "[Paper](https://a.example) / [PDF](zotero://open-pdf/library/items/PDFAAAAA) / "
        "[Zotero](zotero://select/library/items/PAPERAAA)",
    ]
    notes, annotations = page.split("\n## Notes\n")[1].split("\n## Annotations\n")
    assert (
        "### Why tiles" in notes
        and "Tiles keep **data** on chip; see [the post](https://example.org/tiles)." in notes
    )
    assert "- reuse\n- fusion" in notes
    assert annotations == (
        "\n### Full Text PDF\n\n> read first\n\n🟡 p. 1\n\n> read second\n\n🔵 p. 3\n\nmy comment\n"
    )


def test_the_demo_writes_its_three_note_pages_and_its_reading_list_stays_as_it_was(
    project: Path, run
) -> None:
    assert run("-q", "--config", config_of(project), "sync").code == 0
    exports = project / "exports"
    assert (exports / "catalog.md").read_bytes() == (ROOT / "tests" / "golden" / "catalog.md").read_bytes()
    assert (exports / "catalog.csv").read_bytes() == (ROOT / "tests" / "golden" / "catalog.csv").read_bytes()
    objects = json.loads((project / "seeds" / "zotero-library.json").read_text(encoding="utf-8"))
    notes = {
        o["data"]["parentItem"]: o["data"]["note"] for o in objects if o["data"].get("itemType") == "note"
    }
    assert {p.stem for p in (exports / "notes").glob("*.md")} == set(notes) and len(notes) == 3
    for key, html in notes.items():  # each note's words, read from its HTML here, are on its page
        shown = rendered_text((exports / "notes" / f"{key}.md").read_text(encoding="utf-8"))
        assert " ".join(html_text(html).split()) in shown


# -- byte-stable and incremental -------------------------------------------------------------------------


def test_an_unchanged_sync_leaves_every_note_page_alone(tmp_path: Path, run) -> None:
    config = make_project(tmp_path, library_objects())
    sync(run, config)
    before = mtimes(tmp_path)
    edit_snapshot(tmp_path, lambda objects: objects)  # the same library, a new file: read again
    sync(run, config)
    assert mtimes(tmp_path) == before


def test_an_edited_note_rewrites_only_its_page_without_rendering_the_reading_list(
    tmp_path: Path, run, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = make_project(tmp_path, library_objects())
    sync(run, config)
    before = mtimes(tmp_path)
    edit_snapshot(tmp_path, edited_note("NQTEBBBB", "<p>b's note, <em>edited</em></p>"))

    def no_reconcile(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the reading list was rendered again")

    monkeypatch.setattr(zotsync.app.page, "reconcile", no_reconcile)
    err = sync(run, config)
    after = mtimes(tmp_path)
    assert {name for name in after if after[name] != before.get(name)} == {"out/notes/PAPERBBB.md"}
    assert "b's note, *edited*" in (tmp_path / "out" / "notes" / "PAPERBBB.md").read_text(encoding="utf-8")
    assert "wrote" in err and "PAPERBBB.md" in err
    monkeypatch.undo()
    sync(run, config)  # and the next sync, rendering or not, agrees
    assert mtimes(tmp_path) == after


def test_a_rendering_sync_rewrites_only_the_note_pages_whose_head_or_notes_changed(
    tmp_path: Path, run
) -> None:
    config = make_project(tmp_path, library_objects())
    sync(run, config)
    before = mtimes(tmp_path)

    def retitle(objects: list[dict]) -> list[dict]:
        for obj in objects:
            if obj["key"] == "PAPERAAA":
                obj["data"]["title"] = "Tiling Matters More"
                obj["version"] = obj["data"]["version"] = obj["version"] + 1000
        return objects

    edit_snapshot(tmp_path, retitle)
    sync(run, config)
    after = mtimes(tmp_path)
    changed = {name for name in after if after[name] != before.get(name)}
    assert changed == {"out/catalog.md", "out/catalog.csv", "out/notes/PAPERAAA.md", "out/CHANGES.md"} - (
        set() if "out/CHANGES.md" in after else {"out/CHANGES.md"}
    )
    assert (
        (tmp_path / "out" / "notes" / "PAPERAAA.md")
        .read_text(encoding="utf-8")
        .startswith("# Tiling Matters More\n")
    )


def test_a_paper_whose_notes_and_annotations_are_gone_loses_its_page_mark_and_link(
    tmp_path: Path, run
) -> None:
    config = make_project(tmp_path, library_objects())
    sync(run, config)
    gone = {"NQTEAAAA", "ANNQAAAA", "ANNQBBBB"}
    edit_snapshot(tmp_path, lambda objects: [o for o in objects if o["key"] not in gone])
    sync(run, config)
    assert note_pages(tmp_path) == {"PAPERBBB", "PAPERCCC"}
    row = csv_rows(tmp_path)["PAPERAAA"]
    assert (row["noted"], row["note"]) == ("false", "")
    assert "notes/PAPERAAA.md" not in (tmp_path / "out" / "catalog.md").read_text(encoding="utf-8")


def test_a_first_note_gives_a_paper_its_page_mark_and_link(tmp_path: Path, run) -> None:
    config = make_project(tmp_path, library_objects())
    sync(run, config)
    edit_snapshot(
        tmp_path,
        lambda objects: [*objects, api_child("NQTEDDDD", "PAPERDDD", "note", title="", note="<p>d</p>")],
    )
    sync(run, config)
    assert "PAPERDDD" in note_pages(tmp_path)
    assert (csv_rows(tmp_path)["PAPERDDD"]["noted"], csv_rows(tmp_path)["PAPERDDD"]["note"]) == (
        "true",
        "notes/PAPERDDD.md",
    )


def test_a_file_zotsync_did_not_write_is_left_alone_and_said_so(tmp_path: Path, run) -> None:
    config = make_project(tmp_path, library_objects())
    mine = tmp_path / "out" / "notes" / "PAPERAAA.md"
    mine.parent.mkdir(parents=True)
    mine.write_text("my own notes\n", encoding="utf-8")
    err = sync(run, config)
    assert f"{mine} was not written by zotsync: left as it is" in err
    edit_snapshot(tmp_path, edited_note("NQTEAAAA", "<p>edited</p>"))
    sync(run, config)
    assert mine.read_text(encoding="utf-8") == "my own notes\n"
    (tmp_path / "out" / "notes" / "own.md").write_text("another file of mine\n", encoding="utf-8")
    edit_snapshot(tmp_path, lambda objects: [o for o in objects if o["key"] != "NQTEBBBB"])
    sync(run, config)
    assert (tmp_path / "out" / "notes" / "own.md").read_text(encoding="utf-8") == "another file of mine\n"


def test_notes_false_writes_none_and_removes_those_it_wrote(tmp_path: Path, run) -> None:
    config = make_project(tmp_path, library_objects())
    sync(run, config)
    assert note_pages(tmp_path)
    make_project(tmp_path, library_objects(), ", notes: false")
    sync(run, config)
    assert note_pages(tmp_path) == set()
    rows = csv_rows(tmp_path)
    assert (rows["PAPERAAA"]["noted"], rows["PAPERAAA"]["note"]) == ("false", "")
    assert (rows["PAPERCCC"]["noted"], rows["PAPERCCC"]["note"]) == ("false", "https://my.notes/c")


def test_export_writes_the_note_pages_beside_the_page_and_the_page_alone_elsewhere(
    tmp_path: Path, run
) -> None:
    config = make_project(tmp_path, library_objects())
    assert run("-q", "--config", str(config), "pull").code == 0
    elsewhere = run("--config", str(config), "export", "--format", "md", "--output", str(tmp_path / "x.md"))
    assert elsewhere.code == 0 and note_pages(tmp_path) == set()
    assert "[Note](notes/PAPERAAA.md)" in (tmp_path / "x.md").read_text(encoding="utf-8")
    result = run("--config", str(config), "export", "--format", "md")
    assert result.code == 0, result.err
    assert note_pages(tmp_path) == {"PAPERAAA", "PAPERBBB", "PAPERCCC"}
    assert run("-q", "--config", str(config), "export", "--format", "csv").code == 0
    assert note_pages(tmp_path) == {"PAPERAAA", "PAPERBBB", "PAPERCCC"}  # the CSV leaves them be
    before = mtimes(tmp_path)
    sync(run, config)  # the sync finds them recorded: its own bytes, nothing rewritten
    assert {k: v for k, v in mtimes(tmp_path).items() if "notes/" in k} == {
        k: v for k, v in before.items() if "notes/" in k
    }


# -- every source --------------------------------------------------------------------------------------


def one_paper() -> list[dict]:
    """A paper, its note, its PDF and one highlight as zotero_sqlite.add_annotation writes it."""
    return [
        api_item("PAPERAAA", "Tiling Matters", date="2023", publicationTitle="OSDI", url="https://a.example"),
        api_child("NQTEAAAA", "PAPERAAA", "note", title="", note=NOTE_HTML),
        api_pdf("PDFAAAAA", "PAPERAAA"),
        api_annotation("ANNQAAAA", "PDFAAAAA", "highlighted words", "00000|000001|00000"),
    ]


def test_every_source_writes_the_same_note_page(tmp_path: Path, run, zotero_api) -> None:
    objects = one_paper()
    pages = {}
    snapshot = tmp_path / "snapshot"
    snapshot.mkdir()
    sync(run, make_project(snapshot, objects))
    pages["snapshot"] = (snapshot / "out" / "notes" / "PAPERAAA.md").read_bytes()

    web = zotero_api(FakeLibrary.from_snapshot(objects, library_id="4242"))
    desktop = zotero_api(FakeLibrary.from_snapshot(objects, library_id="4242"), keys={})
    desktop.local = True
    database = tmp_path / "zotero" / "zotero.sqlite"
    database.parent.mkdir()
    zotero_db = build_zotero_db(database, objects[:3])
    zotero_db.add_annotation("ANNQAAAA", "PDFAAAAA", "highlighted words")
    from factories import ZOTERO_API_KEY

    sources = {
        "web": f"{{type: web, library_type: user, library_id: '4242', api_key: {ZOTERO_API_KEY}, "
        f"base_url: '{web.url}'}}",
        "desktop local API": f"{{type: local, base_url: '{desktop.url}'}}",
        "zotero.sqlite": f"{{type: local, path: '{database}'}}",
    }
    for name, source in sources.items():
        folder = tmp_path / name.replace(" ", "-")
        sync(run, source_project(folder, source))
        pages[name] = (folder / "out" / "notes" / "PAPERAAA.md").read_bytes()
    assert b"> highlighted words" in pages["snapshot"] and b"### Why tiles" in pages["snapshot"]
    assert all(page == pages["snapshot"] for page in pages.values()), {k: v[-200:] for k, v in pages.items()}


def test_a_group_librarys_annotations_open_in_the_groups_library(tmp_path: Path, run, zotero_api) -> None:
    objects = [
        *one_paper(),
        api_annotation(
            "ANNQIMGE",
            "PDFAAAAA",
            "",
            "00001|000001|00000",
            annotationType="image",
            annotationPosition='{"pageIndex": 4}',
        ),
    ]
    for obj in objects:
        obj["library"] = {"type": "group", "id": 777, "name": "a group", "links": {}}
    server = zotero_api(FakeLibrary.from_snapshot(objects, library_type="group", library_id="777"))
    from factories import ZOTERO_API_KEY

    config = source_project(
        tmp_path,
        f"{{type: web, library_type: group, library_id: '777', api_key: {ZOTERO_API_KEY}, "
        f"base_url: '{server.url}'}}",
    )
    sync(run, config)
    page = (tmp_path / "out" / "notes" / "PAPERAAA.md").read_text(encoding="utf-8")
    assert "🟡 p. 1 [Image](zotero://open-pdf/groups/777/items/PDFAAAAA?page=5&annotation=ANNQIMGE)" in page
    assert "[Zotero](zotero://select/groups/777/items/PAPERAAA)" in page


def test_a_group_librarys_note_page_is_the_same_from_the_web_and_from_zotero_sqlite(
    tmp_path: Path, run, zotero_api
) -> None:
    objects = one_paper()
    for obj in objects:
        obj["library"] = {"type": "group", "id": GROUP_ID, "name": "A group", "links": {}}
    server = zotero_api(FakeLibrary.from_snapshot(objects, library_type="group", library_id=str(GROUP_ID)))
    database = tmp_path / "zotero" / "zotero.sqlite"
    database.parent.mkdir()
    zotero_db = ZoteroDB(database)
    zotero_db.add([api_item("USERPAPR", "A paper of the user library")])  # not the group's: no page
    zotero_db.add(objects[:3], library=GROUP_LIBRARY)
    zotero_db.add_annotation("ANNQAAAA", "PDFAAAAA", "highlighted words", library=GROUP_LIBRARY)
    from factories import ZOTERO_API_KEY

    sources = {
        "web": f"{{type: web, library_type: group, library_id: '{GROUP_ID}', api_key: {ZOTERO_API_KEY}, "
        f"base_url: '{server.url}'}}",
        "zotero.sqlite": f"{{type: local, path: '{database}', library_type: group, "
        f"library_id: '{GROUP_ID}'}}",
    }
    pages = {}
    for name, source in sources.items():
        folder = tmp_path / name
        sync(run, source_project(folder, source))
        pages[name] = (folder / "out" / "notes" / "PAPERAAA.md").read_text(encoding="utf-8")
        assert sorted(p.name for p in (folder / "out" / "notes").iterdir()) == ["PAPERAAA.md"]
    assert "> highlighted words" in pages["web"] and "### Why tiles" in pages["web"]
    assert f"zotero://select/groups/{GROUP_ID}/items/PAPERAAA" in pages["web"]
    assert pages["zotero.sqlite"] == pages["web"]


def test_a_key_that_may_not_read_notes_is_said_once_and_the_pull_goes_on(
    tmp_path: Path, run, zotero_api
) -> None:
    from factories import ZOTERO_API_KEY

    server = zotero_api(FakeLibrary.from_snapshot(one_paper(), library_id="4242"))
    server.keys_without_notes.add(ZOTERO_API_KEY)
    config = source_project(
        tmp_path,
        f"{{type: web, library_type: user, library_id: '4242', api_key: {ZOTERO_API_KEY}, "
        f"base_url: '{server.url}'}}",
    )
    asked = lambda: [r for r in server.requests if r.path == "/keys/current"]  # noqa: E731

    said = sync(run, config)
    assert said.count("the API key may not read notes") == 1, said
    assert "https://www.zotero.org/settings/keys" in said and len(asked()) == 1
    page = (tmp_path / "out" / "notes" / "PAPERAAA.md").read_text(encoding="utf-8")
    assert "> highlighted words" in page and "Why tiles" not in page  # the annotation came; the note not

    server.reset()  # an incremental pull asks nothing more and says nothing more
    again = sync(run, config)
    assert "may not read notes" not in again and asked() == [] and len(server.requests) == 1

    server.keys_without_notes.clear()  # the key now reads notes: a full read brings them, no question
    server.reset()
    result = run("--config", str(config), "pull", "--full")
    assert result.code == 0 and "may not read notes" not in result.err and asked() == []
    sync(run, config)
    assert "Why tiles" in (tmp_path / "out" / "notes" / "PAPERAAA.md").read_text(encoding="utf-8")


def test_a_library_without_notes_asks_the_keys_permissions_once_and_says_nothing(
    tmp_path: Path, run, zotero_api
) -> None:
    from factories import ZOTERO_API_KEY

    server = zotero_api(FakeLibrary.from_snapshot(one_paper()[:1], library_id="4242"))
    config = source_project(
        tmp_path,
        f"{{type: web, library_type: user, library_id: '4242', api_key: {ZOTERO_API_KEY}, "
        f"base_url: '{server.url}'}}",
    )
    said = sync(run, config)
    assert "may not read notes" not in said
    assert [r.path for r in server.requests].count("/keys/current") == 1


def test_a_pull_that_changes_only_a_note_moves_the_notes_generation_alone(tmp_path: Path, run) -> None:
    config = make_project(tmp_path, library_objects())
    assert run("-q", "--config", str(config), "pull").code == 0
    with Store(tmp_path / "store.sqlite") as store:
        before = store.sync_state
    edit_snapshot(tmp_path, edited_note("NQTEAAAA", "<p>edited</p>"))
    assert run("-q", "--config", str(config), "pull").code == 0
    with Store(tmp_path / "store.sqlite") as store:
        after = store.sync_state
        assert store.papers_with_changed_notes(before.notes_generation) == {"PAPERAAA"}
    assert after.content_generation == before.content_generation
    assert after.notes_generation == before.notes_generation + 1


# -- real data -----------------------------------------------------------------------------------------


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skip = 0

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.skip += tag in ("script", "style")
        if tag in ("p", "li", "h1", "h2", "h3", "h4", "h5", "h6", "br", "tr", "td", "th", "div", "pre"):
            self.parts.append(" ")

    def handle_endtag(self, tag: str) -> None:
        self.skip -= tag in ("script", "style") and self.skip > 0

    def handle_data(self, data: str) -> None:
        if not self.skip:
            self.parts.append(data)


def html_text(html: str) -> str:
    """The words a browser shows for `html`, on one line (read here with the standard library)."""
    parser = _Text()
    parser.feed(html)
    parser.close()
    return " ".join("".join(parser.parts).split())


def rendered_text(markdown: str) -> str:
    """The words a Markdown page shows, on one line (rendered by markdown-it, read back as above)."""
    return html_text(MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(markdown))


def web_library_objects() -> list[dict]:
    folder = SHARED / "zotero-web-library"
    objects: dict[str, dict] = {}
    for path in sorted(folder.glob("test-user-*.json")):
        found = json.loads(path.read_text(encoding="utf-8"))
        for obj in found if isinstance(found, list) else []:
            if isinstance(obj, dict) and "data" in obj and "itemType" in obj["data"]:
                objects[obj["key"]] = obj
    return list(objects.values())


@pytest.mark.skipif(not (SHARED / "zotero-web-library").is_dir(), reason="../shared/fixtures is absent")
def test_the_web_librarys_real_notes_and_annotations_make_their_pages(tmp_path: Path, run) -> None:
    objects = web_library_objects()
    if not any(
        o["key"] == "N2PJUHD6" for o in objects
    ):  # the reader's annotations' PDF is not in the fixture
        objects += [api_item("READERPP", "A paper for the reader's PDF"), api_pdf("N2PJUHD6", "READERPP")]
    data = {o["key"]: o["data"] for o in objects}
    live = {k for k, d in data.items() if not d.get("deleted")}
    # Independently of zotsync: each paper's notes, and its annotations through their attachment.
    papers: dict[str, list[dict]] = {}
    for key, item in data.items():
        parent = item.get("parentItem")
        if key not in live or not parent or parent not in live:
            continue
        if item["itemType"] == "note":
            papers.setdefault(parent, [])
        elif item["itemType"] == "annotation" and data[parent].get("parentItem") in live:
            papers.setdefault(data[parent]["parentItem"], []).append(item)
    regular = {k for k in papers if data[k]["itemType"] not in ("note", "attachment", "annotation")}
    # highlight, note, image (one PDF), and note, ink, underline (the reader's, in the PDF added above)
    assert sum(map(len, papers.values())) == 7
    write_json(tmp_path / "library.json", objects)
    config = source_project(tmp_path, "{type: snapshot, path: library.json}", catalogue=REAL_CATALOGUE)
    sync(run, config)
    assert note_pages(tmp_path) == regular
    for key, found in papers.items():
        shown = rendered_text((tmp_path / "out" / "notes" / f"{key}.md").read_text(encoding="utf-8"))
        positions = []
        for item in sorted(found, key=lambda a: a["annotationSortIndex"]):
            for text in (item.get("annotationText", ""), item.get("annotationComment", "")):
                if text.strip():
                    assert " ".join(text.split()) in shown, (key, text)
            if item.get("annotationPageLabel"):
                assert f"p. {item['annotationPageLabel']}" in shown
            first = " ".join((item.get("annotationText") or item.get("annotationComment") or "").split())
            if first:
                positions.append(shown.index(first))
        assert positions == sorted(positions), key  # reading order


def real_database() -> Path:
    return SHARED / "zotero-sqlite" / "betterbibtex-testprofile-9.0.4.sqlite"


@pytest.mark.skipif(not real_database().is_file(), reason="../shared/fixtures is absent")
def test_a_real_databases_notes_make_their_pages(tmp_path: Path, run) -> None:
    import sqlite3

    shutil.copy(real_database(), tmp_path / "zotero.sqlite")
    uri = f"{(tmp_path / 'zotero.sqlite').as_uri()}?immutable=1"
    with sqlite3.connect(uri, uri=True) as db:  # an independent reading of the user library's child notes
        rows = db.execute(
            """
            SELECT p.key, n.note FROM itemNotes n
            JOIN items i ON i.itemID = n.itemID JOIN items p ON p.itemID = n.parentItemID
            JOIN libraries l ON l.libraryID = i.libraryID
            WHERE l.type = 'user' AND n.parentItemID IS NOT NULL
              AND i.itemID NOT IN (SELECT itemID FROM deletedItems)
              AND p.itemID NOT IN (SELECT itemID FROM deletedItems)
              AND p.itemID NOT IN (SELECT itemID FROM itemAttachments)
            """
        ).fetchall()
    expected: dict[str, list[str]] = {}
    for key, note in rows:
        expected.setdefault(key, []).append(note)
    assert len(rows) >= 40
    config = source_project(tmp_path, "{type: local, path: zotero.sqlite}", catalogue=REAL_CATALOGUE)
    sync(run, config)
    assert set(expected) <= note_pages(tmp_path)
    for key, notes in expected.items():
        shown = rendered_text((tmp_path / "out" / "notes" / f"{key}.md").read_text(encoding="utf-8"))
        for note in notes:
            words = html_text(note)
            # Each note's text, up to what markdownify writes differently (list markers, quotes' marks).
            assert re.sub(r"\W+", " ", words[:60]).strip() in re.sub(r"\W+", " ", shown), (key, words[:60])


# -- note pages with the page's other settings ------------------------------------------------------------


def links_in(markdown: str) -> list[str]:
    """The targets of the Markdown page's links, read with a CommonMark parser."""
    targets: list[str] = []

    def walk(tokens: list) -> None:
        for token in tokens:
            if token.type == "link_open":
                targets.append(token.attrGet("href"))
            walk(token.children or [])

    walk(MarkdownIt().parse(markdown))
    return targets


def test_a_category_page_links_to_the_note_page_from_its_own_folder(tmp_path: Path, run) -> None:
    """With `split: category` the rows sit in categories/<name>.md: their Note links (and the note
    pages' links back to the paper's own) resolve from there."""
    config = make_project(tmp_path, library_objects(), ", split: category")
    sync(run, config)
    out = tmp_path / "out"
    pages = sorted((out / "categories").glob("*.md"))
    assert pages, "a split page writes its category pages"
    noted = [target for page in pages for target in links_in(page.read_text(encoding="utf-8"))]
    to_notes = [target for target in noted if "notes/" in target]
    assert "../notes/PAPERAAA.md" in to_notes and "../notes/PAPERBBB.md" in to_notes
    for page in pages:
        for target in links_in(page.read_text(encoding="utf-8")):
            if target.startswith("../notes/"):
                assert (page.parent / target).resolve().is_file(), (page.name, target)
    assert "notes/" not in (out / "catalog.md").read_text(encoding="utf-8")  # the index lists categories


def test_a_paper_the_scope_keeps_off_the_page_gets_no_note_page(tmp_path: Path, run) -> None:
    """`exports.scope: curated` keeps PAPERAAA (uncurated, in no named collection) off the page: its
    notes make no page, and a page for it written before goes."""
    config = make_project(tmp_path, library_objects())
    sync(run, config)
    assert "PAPERAAA" in note_pages(tmp_path)
    config.write_text(
        config.read_text(encoding="utf-8").replace("language: en", "language: en, scope: curated"),
        encoding="utf-8",
    )
    sync(run, config)
    assert note_pages(tmp_path) == {"PAPERBBB", "PAPERCCC"}
    assert "PAPERAAA" not in csv_rows(tmp_path)


def test_export_into_the_exports_folder_writes_the_formats_other_files_and_records_them(
    tmp_path: Path, run
) -> None:
    """`export --format md` into exports.dir with `split: category` and the tags page: the category pages,
    the tags page and the note pages come with it, recorded, so that the next sync finds them as its own
    and changes nothing."""
    config = make_project(tmp_path, library_objects(), ", split: category, tags_page: true")
    assert run("-q", "--config", str(config), "pull").code == 0
    exported = run("--config", str(config), "export", "--format", "md")
    assert exported.code == 0, exported.err
    out = tmp_path / "out"
    written = {str(p.relative_to(out).as_posix()) for p in out.rglob("*.md")}
    assert {"catalog.md", "tags.md"} <= written
    assert any(name.startswith("categories/") for name in written)
    assert {"notes/PAPERAAA.md", "notes/PAPERBBB.md", "notes/PAPERCCC.md"} <= written
    before = mtimes(tmp_path)
    first = run("--config", str(config), "sync")
    assert first.code == 0 and "left as it is" not in first.err  # every file is zotsync's
    after = mtimes(tmp_path)
    assert after.pop("out/CHANGES.md")  # the first sync's baseline, new
    assert {name: t for name, t in after.items() if name.endswith(".md")} == {
        name: t for name, t in before.items() if name.endswith(".md")
    }
