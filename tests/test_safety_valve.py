"""The safety valve (octodns' TooMuchChange): a pull that would take more than `sync.max_removal` of the
page's Zotero items away is refused before it touches the store — the store and the exports stay exactly
as they were — unless `--force`. Through the snapshot source and the web source on the fake server."""

from __future__ import annotations

import csv
import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from conftest import ROOT, ZOTERO_API_KEY, write_config
from zotero_server import FakeLibrary

from zotsync.export.changelog import BASELINE
from zotsync.model import Changes
from zotsync.plan import MIN_REFUSED_REMOVAL, leaving
from zotsync.store import Store

SEED = ROOT / "seeds" / "zotero-library.json"
SEED_ITEMS = 64  # regular, top-level, not trashed: the Zotero items on the demo page
USER_ID = "1234567"


def refusal(gone: int, of: int, allowed: str = "30%") -> str:
    return (
        f"zotsync: error: this pull would remove {gone} of the {of} Zotero items on the page "
        f"({gone / of:.0%}; sync.max_removal allows {allowed}); the store and the exports are left as they "
        "were. If the library really lost them, run the command again with --force"
    )


def state_of(folder: Path, store: Path) -> tuple[list[str], dict[str, tuple[bytes, int]]]:
    """The store's rows (read from a copy, so reading cannot change it) and every export's bytes and
    modification time."""
    copy = folder / "copy.sqlite"
    shutil.copyfile(store, copy)
    with sqlite3.connect(copy) as db:
        rows = list(db.iterdump())
    copy.unlink()
    exports = folder / "exports"
    files = {
        p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(exports.rglob("*")) if p.is_file()
    }
    return rows, files


def page_keys(store: Path) -> set[str]:
    with Store(store) as opened:
        return opened.catalogue_item_keys()


# -- the snapshot source ----------------------------------------------------------------------------------


class Demo:
    def __init__(self, project: Path, run) -> None:
        self.project, self.run = project, run
        self.config = str(project / "config" / "zotsync.yaml")
        self.snapshot = project / "seeds" / "zotero-library.json"
        self.store = project / ".zotsync" / "zotsync.sqlite"

    def sync(self, *flags: str):
        return self.run("--config", self.config, "sync", *flags)

    def objects(self) -> list[dict]:
        return json.loads(self.snapshot.read_text(encoding="utf-8"))

    def write(self, objects: list[dict]) -> None:
        self.snapshot.write_text(json.dumps(objects, ensure_ascii=False), encoding="utf-8")

    def drop_items(self, count: int) -> None:
        """Delete `count` of the page's items from the snapshot (a hand-edited file needs no version)."""
        objects = self.objects()
        regular = [
            o
            for o in objects
            if "name" not in o["data"]
            and not o["data"].get("parentItem")
            and not o["data"].get("deleted")
            and o["data"]["itemType"] not in ("note", "attachment", "annotation")
        ]
        doomed = {o["key"] for o in regular[:count]}
        self.write([o for o in objects if o["key"] not in doomed])

    def assert_refused(self, result, gone: int, of: int = SEED_ITEMS, before=None) -> None:
        assert result.code == 1
        assert result.err.splitlines() == [refusal(gone, of)]
        if before is not None:
            assert state_of(self.project, self.store) == before


@pytest.fixture
def demo(project: Path, run) -> Demo:
    d = Demo(project, run)
    assert d.sync("-q").code == 0
    assert len(page_keys(d.store)) == SEED_ITEMS
    return d


def test_an_emptied_library_is_refused_and_nothing_changes(demo: Demo) -> None:
    before = state_of(demo.project, demo.store)
    demo.write([o for o in demo.objects() if "name" in o["data"]])  # only the collections are left
    for command in ("sync", "pull"):
        result = demo.run("--config", demo.config, command)
        demo.assert_refused(result, SEED_ITEMS, before=before)
    assert (demo.project / "exports" / "CHANGES.md").read_text(encoding="utf-8") == BASELINE


def test_a_library_swapped_for_another_is_refused(demo: Demo, tmp_path: Path) -> None:
    before = state_of(demo.project, demo.store)
    other = FakeLibrary("user", "1", "someone else's")
    for n in range(40):
        other.add_item(f"Another paper {n}", "journalArticle", date="2020")
    demo.write(other.snapshot())
    demo.assert_refused(demo.sync(), SEED_ITEMS, before=before)


def test_force_proceeds_once_and_the_next_run_needs_nothing(demo: Demo) -> None:
    demo.write([o for o in demo.objects() if "name" in o["data"]])
    result = demo.sync("--force")
    assert result.code == 0, result.err
    assert page_keys(demo.store) == set()
    with (demo.project / "exports" / "catalog.csv").open(encoding="utf-8", newline="") as stream:
        rows = list(csv.DictReader(stream))
    assert rows and not any(row["zotero_key"] for row in rows)  # only the curated entries, unmatched
    assert "### Removed" in (demo.project / "exports" / "CHANGES.md").read_text(encoding="utf-8")
    # Once: the library now is what it is; the next sync has nothing left to remove.
    assert demo.sync().code == 0
    # And the valve is armed again: restore the library, then empty it once more.
    shutil.copyfile(SEED, demo.snapshot)
    assert demo.sync("-q").code == 0
    demo.write([o for o in demo.objects() if "name" in o["data"]])
    demo.assert_refused(demo.sync(), SEED_ITEMS)


@pytest.mark.parametrize("emptied", ["", "# saved half-way\n", "categories: []\n"])
def test_a_catalogue_emptied_by_accident_leaves_the_exports_as_they_were(demo: Demo, emptied: str) -> None:
    """A curated page (`scope: curated`) with its catalogue emptied — an editor's crash, a sync
    conflict — would publish an empty page and drop every note page: the exports wait, the pull goes
    ahead, and --force publishes it."""
    config = Path(demo.config)
    config.write_text(
        config.read_text(encoding="utf-8").replace("exports:\n", "exports:\n  scope: curated\n", 1),
        encoding="utf-8",
    )
    assert demo.sync("-q").code == 0
    catalogue = demo.project / "seeds" / "catalog.yaml"
    exports = state_of(demo.project, demo.store)[1]
    page = (demo.project / "exports" / "catalog.md").read_text(encoding="utf-8")
    entries = page.count("\n| ✅") + page.count("\n| ⬜")
    catalogue.write_text(emptied, encoding="utf-8")
    for flags in ((), ("--dry-run",)):
        result = demo.sync(*flags)
        assert result.code == 1
        assert result.err.splitlines() == [
            f"zotsync: error: this sync would empty the page ({entries} entries at the last sync; "
            "catalog.yaml names no category); the exports are left as they were. If you mean it, run the "
            "command again with --force"
        ]
        assert state_of(demo.project, demo.store)[1] == exports
    assert demo.run("--config", demo.config, "status").code == 0  # only the exports wait
    assert demo.sync("-q", "--force").code == 0
    assert "\n| ✅" not in (demo.project / "exports" / "catalog.md").read_text(encoding="utf-8")
    assert demo.sync("-q").code == 0  # the page is empty now: nothing more to refuse


def test_the_threshold_is_a_share_of_the_page(demo: Demo) -> None:
    # 30% of 64 is 19.2: removing 19 is allowed, 20 is not.
    shutil.copyfile(SEED, demo.project / "seed.json")
    demo.drop_items(20)
    before = state_of(demo.project, demo.store)
    demo.assert_refused(demo.sync(), 20, before=before)
    shutil.copyfile(demo.project / "seed.json", demo.snapshot)
    demo.drop_items(19)
    result = demo.sync()
    assert result.code == 0, result.err
    assert len(page_keys(demo.store)) == SEED_ITEMS - 19


def test_trashing_most_items_counts_like_deleting_them(demo: Demo) -> None:
    objects = demo.objects()
    for obj in objects:
        if "name" not in obj["data"] and not obj["data"].get("parentItem"):
            obj["data"]["deleted"] = 1
    demo.write(objects)
    demo.assert_refused(demo.sync(), SEED_ITEMS)


def test_pointing_the_config_at_another_library_is_a_removal_too(demo: Demo) -> None:
    other = demo.project / "other.json"
    other.write_text(json.dumps([o for o in demo.objects() if "name" in o["data"]]), encoding="utf-8")
    config = Path(demo.config)
    config.write_text(
        config.read_text(encoding="utf-8").replace("../seeds/zotero-library.json", "../other.json"),
        encoding="utf-8",
    )
    demo.assert_refused(demo.sync(), SEED_ITEMS)


def test_sync_max_removal_is_configurable_and_validated(demo: Demo) -> None:
    config = Path(demo.config)
    text = config.read_text(encoding="utf-8")
    for bad in ("1.5", "-0.1", "'most'", "true"):
        config.write_text(text + f"sync:\n  max_removal: {bad}\n", encoding="utf-8")
        result = demo.sync()
        assert result.code == 2, bad
        assert "config key 'sync.max_removal' must be a share from 0 to 1" in result.err
    config.write_text(text + "sync:\n  max_removal: 1\n", encoding="utf-8")  # never refuse
    demo.write([o for o in demo.objects() if "name" in o["data"]])
    assert demo.sync("-q").code == 0
    assert page_keys(demo.store) == set()


def test_a_tiny_library_can_still_lose_an_item(tmp_path: Path, run) -> None:
    """Below the floor the share does not matter: a library of two may lose one (50%) or both."""
    assert MIN_REFUSED_REMOVAL == 3
    objects = json.loads(SEED.read_text(encoding="utf-8"))
    papers = [
        o for o in objects if o["data"].get("itemType") == "conferencePaper" and not o["data"].get("deleted")
    ]
    snapshot = tmp_path / "lib.json"
    config = write_config(
        tmp_path,
        f"""\
        source: {{type: snapshot, path: lib.json}}
        catalog: {ROOT / "seeds" / "catalog.yaml"}
        store: store.sqlite
        """,
    )
    for kept in ([papers[0], papers[1]], [papers[0]], []):
        snapshot.write_text(json.dumps(kept), encoding="utf-8")
        result = run("--config", str(config), "sync")
        assert result.code == 0, result.err
    snapshot.write_text(json.dumps(papers[:3]), encoding="utf-8")
    assert run("-q", "--config", str(config), "sync").code == 0
    snapshot.write_text("[]", encoding="utf-8")
    result = run("--config", str(config), "sync")
    assert result.code == 1 and result.err.splitlines() == [refusal(3, 3)]


def test_what_leaves_the_page() -> None:
    """Pure: deleted, trashed, turned into a child, or missing from a complete read or another library;
    an item that comes back live stays, whatever the deletion log says."""
    from zotsync.model import Item

    def item(key: str, **data) -> Item:
        return Item.from_api(
            {
                "key": key,
                "version": 2,
                "data": {"key": key, "version": 2, "title": key, "itemType": "book", **data},
            }
        )

    def gone(changes: Changes, switching: bool) -> set[str]:
        # What the store's landing makes of the items (which stay on the page), as a pull sees it.
        with Store(Path(":memory:")) as store, store.landing("snapshot:x") as landing:
            landing.add(changes.items)
            return leaving(on_page, landing.arrived, changes, switching)

    on_page = {"AAAAAAAA", "BBBBBBBB", "CCCCCCCC", "DDDDDDDD", "EEEEEEEE"}
    incremental = Changes(
        library_version=2,
        items=(item("AAAAAAAA", deleted=1), item("BBBBBBBB", parentItem="ZZZZZZZZ"), item("EEEEEEEE")),
        deleted_items=frozenset({"CCCCCCCC", "EEEEEEEE"}),
    )
    assert gone(incremental, switching=False) == {"AAAAAAAA", "BBBBBBBB", "CCCCCCCC"}
    complete = Changes(library_version=2, items=(item("EEEEEEEE"),), complete=True)
    assert gone(complete, switching=False) == on_page - {"EEEEEEEE"}
    other_library = Changes(library_version=2, items=(item("DDDDDDDD"),))
    assert gone(other_library, switching=True) == on_page - {"DDDDDDDD"}


# -- the web source on the fake Zotero server -------------------------------------------------------------


class WebProject:
    def __init__(self, folder: Path, server, run) -> None:
        self.folder, self.server, self.run = folder, server, run
        self.store = folder / "store.sqlite"
        lines = [
            "source:",
            "  type: web",
            "  library_type: user",
            f"  library_id: '{USER_ID}'",
            f"  api_key: {ZOTERO_API_KEY}",
            f"  base_url: {server.url}",
            f"catalog: {ROOT / 'seeds' / 'catalog.yaml'}",
            "store: store.sqlite",
            "exports: {dir: exports}",
        ]
        self.config = folder / "zotsync.yaml"
        self.config.write_text("\n".join(lines) + "\n", encoding="utf-8")

    def sync(self, *flags: str):
        return self.run("--config", str(self.config), "sync", *flags)


@pytest.fixture
def web(tmp_path: Path, zotero_api, run) -> WebProject:
    server = zotero_api(FakeLibrary.from_snapshot(SEED, library_id=USER_ID))
    project = WebProject(tmp_path, server, run)
    result = project.sync("-q")
    assert result.code == 0, result.err
    assert len(page_keys(project.store)) == SEED_ITEMS
    return project


def test_web_an_emptied_library_is_refused_then_forced(web: WebProject) -> None:
    library = web.server.library
    top = [k for k, o in library.items.items() if not o["data"].get("parentItem")]
    for key in top:  # permanently deleted in Zotero: /deleted lists them
        library.delete_item(key)
    before = state_of(web.folder, web.store)
    for command in ("sync", "pull"):
        result = web.run("--config", str(web.config), command)
        assert result.code == 1
        assert result.err.splitlines() == [refusal(SEED_ITEMS, SEED_ITEMS)]
        assert state_of(web.folder, web.store) == before
    result = web.run("--config", str(web.config), "pull", "--force")
    assert result.code == 0, result.err
    assert page_keys(web.store) == set()
    with Store(web.store) as store:
        assert store.library_version == library.version


def test_web_a_library_swapped_for_another_behind_the_same_id(web: WebProject) -> None:
    other = FakeLibrary("user", USER_ID, "someone else's")
    for n in range(10):  # a younger library: version 10, older than the store's 480
        other.add_item(f"Another paper {n}", "journalArticle")
    web.server.libraries[other.prefix] = other
    before = state_of(web.folder, web.store)
    result = web.sync()
    assert result.code == 1
    # The web source reads a library older than the store in full (it says so); the valve then sees it.
    assert result.err.splitlines() == [
        "zotsync: the library is at version 10, older than the stored 480: reading everything",
        refusal(SEED_ITEMS, SEED_ITEMS),
    ]
    assert state_of(web.folder, web.store) == before
    result = web.sync("--force")
    assert result.code == 0, result.err
    assert len(page_keys(web.store)) == 10
