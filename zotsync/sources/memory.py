"""A library held in memory, as Web API objects with versions: the simplest source there is.

For a program that builds a library in code (a notebook, a converter from another tool, a test of its
own), and the reference every real source is held to (tests/test_source_contract.py runs the same
tests on it and on the snapshot, web and local sources). It keeps the protocol's rules: every change
takes the next library version, a deletion is remembered with its version, and `changes(since)` gives
what changed after `since` or, with None, the whole library.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from ..model import Changes
from .base import Sink, is_collection, split_objects


class MemorySource:
    requests = 0  # no HTTP

    def __init__(
        self, objects: Iterable[Mapping[str, Any]] = (), name: str = "memory", library_type: str = "user"
    ) -> None:
        self.name = name
        self.library_type = library_type
        self.version = 0
        self._objects: dict[str, dict[str, Any]] = {}
        self._deleted: dict[str, tuple[str, int]] = {}  # key → (items | collections, version)
        for obj in objects:
            self.put(obj)

    @property
    def id(self) -> str:
        return f"memory:{self.name}"

    def put(self, obj: Mapping[str, Any]) -> None:
        """Add or replace an object (an item or a collection, as the API's JSON): the next version."""
        self.version += 1
        stored = copy.deepcopy(dict(obj))
        stored["version"] = self.version
        data = stored.setdefault("data", {})
        data["version"] = self.version
        self._objects[stored["key"]] = stored
        self._deleted.pop(stored["key"], None)

    def edit(self, key: str, **data: Any) -> None:
        """Change fields of an object's data (`deleted=1` moves an item to the trash)."""
        obj = copy.deepcopy(self._objects[key])
        obj["data"].update(data)
        self.put(obj)

    def delete(self, key: str) -> None:
        """Delete an object for good (an item's children go with it, as in Zotero)."""
        self.version += 1
        doomed = [key, *(k for k, o in self._objects.items() if o["data"].get("parentItem") == key)]
        for gone in doomed:
            obj = self._objects.pop(gone)
            self._deleted[gone] = ("collections" if is_collection(obj) else "items", self.version)

    def changes(self, since: int | None, sink: Sink | None = None) -> Changes | None:
        if since is not None and since >= self.version:
            return None
        changed = [o for o in self._objects.values() if since is None or o["version"] > since]
        items, collections = split_objects(copy.deepcopy(changed))
        deleted = (
            {
                kind: frozenset(
                    k for k, (what, version) in self._deleted.items() if what == kind and version > since
                )
                for kind in ("items", "collections")
            }
            if since is not None
            else {"items": frozenset(), "collections": frozenset()}
        )
        return Changes(
            library_version=self.version,
            items=tuple(items),
            collections=tuple(collections),
            deleted_items=deleted["items"],
            deleted_collections=deleted["collections"],
            complete=since is None,
            library_type=self.library_type,
        )
