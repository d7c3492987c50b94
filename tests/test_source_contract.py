"""One contract every source keeps, run on each of them: the in-memory source, a snapshot file, the Web
API (the fake server) and a zotero.sqlite (built by tests/zotero_sqlite.py). After every pull, the store
holds what the library holds — whatever the source and however it reports changes (incremental lists,
or the whole library each time) — and a pull after no change changes nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import pytest
from factories import api_collection, api_item, config_for
from zotero_server import FakeLibrary
from zotero_sqlite import ZoteroDB, build

from zotsync.app.pull import pull
from zotsync.model import Library
from zotsync.sources.base import Source
from zotsync.sources.local import LocalSource
from zotsync.sources.memory import MemorySource
from zotsync.sources.snapshot import SnapshotSource
from zotsync.sources.web import WebSource
from zotsync.store import Store

STAMP = "2026-12-01 10:00:00"


def library_objects() -> list[dict[str, Any]]:
    return [
        api_collection("CQLLAAAA", "Compilers", version=1),
        api_collection("CQLLBBBB", "Kernels", parent="CQLLAAAA", version=1),
        api_item("PAPRAAAA", "Rammer", "conferencePaper", version=1, collections=["CQLLAAAA"], date="2020"),
        api_item("PAPRBBBB", "Roller", version=1, collections=["CQLLBBBB"], DOI="10.1145/3503222"),
        api_item("PAPRCCCC", "Welder", version=1, tags=["gpu"]),
        api_item("PAPRDDDD", "Ansor", version=1),
    ]


class EditableLibrary(Protocol):
    """A library a source reads, with the edits every kind of library can make."""

    def source(self) -> Source: ...

    def retitle(self, key: str, title: str) -> None: ...

    def add(self, key: str, title: str) -> None: ...

    def trash(self, key: str) -> None: ...

    def delete(self, key: str) -> None: ...


class InMemory:
    def __init__(self, tmp_path: Path, objects: list[dict[str, Any]]) -> None:
        self.memory = MemorySource(objects, name="contract")

    def source(self) -> Source:
        return self.memory

    def retitle(self, key: str, title: str) -> None:
        self.memory.edit(key, title=title)

    def add(self, key: str, title: str) -> None:
        self.memory.put(api_item(key, title))

    def trash(self, key: str) -> None:
        self.memory.edit(key, deleted=1)

    def delete(self, key: str) -> None:
        self.memory.delete(key)


class InSnapshot:
    def __init__(self, tmp_path: Path, objects: list[dict[str, Any]]) -> None:
        self.path, self.objects = tmp_path / "library.json", {o["key"]: o for o in objects}
        self._write()

    def _write(self) -> None:
        self.path.write_text(json.dumps(list(self.objects.values())), encoding="utf-8")

    def _bump(self, obj: dict[str, Any]) -> None:
        version = max(o["version"] for o in self.objects.values()) + 1
        obj["version"] = obj["data"]["version"] = version

    def source(self) -> Source:
        return SnapshotSource(self.path)

    def retitle(self, key: str, title: str) -> None:
        self.objects[key]["data"]["title"] = title
        self._bump(self.objects[key])
        self._write()

    def add(self, key: str, title: str) -> None:
        self.objects[key] = api_item(key, title)
        self._bump(self.objects[key])
        self._write()

    def trash(self, key: str) -> None:
        self.objects[key]["data"]["deleted"] = 1
        self._bump(self.objects[key])
        self._write()

    def delete(self, key: str) -> None:
        del self.objects[key]
        self._write()


class OnTheWeb:
    def __init__(self, tmp_path: Path, objects: list[dict[str, Any]], server: Any) -> None:
        self.server = server
        self.library: FakeLibrary = server.library

    def source(self) -> Source:
        return WebSource(config_for(self.server))

    def retitle(self, key: str, title: str) -> None:
        self.library.edit_item(key, title=title)

    def add(self, key: str, title: str) -> None:
        self.library.add_item(title, key=key)

    def trash(self, key: str) -> None:
        self.library.trash_item(key)

    def delete(self, key: str) -> None:
        self.library.delete_item(key)


class InZoteroDatabase:
    def __init__(self, tmp_path: Path, objects: list[dict[str, Any]]) -> None:
        self.path = tmp_path / "zotero.sqlite"
        self.db: ZoteroDB = build(self.path, objects)

    def source(self) -> Source:
        return LocalSource(self.path)

    def retitle(self, key: str, title: str) -> None:
        self.db.edit_field(key, "title", title, at=STAMP)

    def add(self, key: str, title: str) -> None:
        self.db.add_item(api_item(key, title)["data"])

    def trash(self, key: str) -> None:
        self.db.trash(key, at=STAMP)

    def delete(self, key: str) -> None:
        self.db.erase(key)


@pytest.fixture(params=["memory", "snapshot", "web", "local"])
def library(
    request: pytest.FixtureRequest, tmp_path: Path, zotero_api, fake_time
) -> Iterator[EditableLibrary]:
    objects = library_objects()
    if request.param == "memory":
        yield InMemory(tmp_path, objects)
    elif request.param == "snapshot":
        yield InSnapshot(tmp_path, objects)
    elif request.param == "web":
        yield OnTheWeb(tmp_path, objects, zotero_api(FakeLibrary.from_snapshot(objects)))
    else:
        yield InZoteroDatabase(tmp_path, objects)


def titles(library: Library) -> dict[str, tuple[str, bool]]:
    """Each regular item: its title and whether it is in the trash; the collections by name."""
    return {i.key: (i.title, i.deleted) for i in library.items if i.is_regular} | {
        c.key: (c.name, False) for c in library.collections
    }


EXPECTED = {
    "CQLLAAAA": ("Compilers", False),
    "CQLLBBBB": ("Kernels", False),
    "PAPRAAAA": ("Rammer", False),
    "PAPRBBBB": ("Roller", False),
    "PAPRCCCC": ("Welder", False),
    "PAPRDDDD": ("Ansor", False),
}


def test_the_first_pull_mirrors_the_library(library: EditableLibrary, tmp_path: Path) -> None:
    with Store(tmp_path / "store.sqlite") as store:
        report = pull(library.source(), store)
        assert report.result.items_added == 4 and report.result.collections_changed == 2
        assert titles(store.load()) == EXPECTED
        memberships = {i.key: i.collections for i in store.load().items}
    assert memberships["PAPRAAAA"] == ("CQLLAAAA",) and memberships["PAPRBBBB"] == ("CQLLBBBB",)


def test_a_pull_after_no_change_changes_nothing(library: EditableLibrary, tmp_path: Path) -> None:
    with Store(tmp_path / "store.sqlite") as store:
        pull(library.source(), store)
        generation = store.generation
        report = pull(library.source(), store)
        assert not report.result.changed
        assert store.generation == generation


def test_edits_additions_the_trash_and_deletions_all_reach_the_store(
    library: EditableLibrary, tmp_path: Path
) -> None:
    with Store(tmp_path / "store.sqlite") as store:
        pull(library.source(), store)
        library.retitle("PAPRAAAA", "Rammer (revised)")
        library.add("PAPREEEE", "Welder 2")
        library.trash("PAPRCCCC")
        library.delete("PAPRDDDD")
        report = pull(library.source(), store)
        assert (report.result.items_added, report.result.items_removed) == (1, 1)
        expected = {k: v for k, v in EXPECTED.items() if k != "PAPRDDDD"} | {
            "PAPRAAAA": ("Rammer (revised)", False),
            "PAPREEEE": ("Welder 2", False),
            "PAPRCCCC": ("Welder", True),
        }
        assert titles(store.load()) == expected


def test_the_source_names_its_library_the_same_way_each_time(library: EditableLibrary) -> None:
    """The store compares the id with the one it holds: another id would rebuild it from scratch."""
    assert library.source().id == library.source().id
