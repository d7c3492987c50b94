"""A library saved as one JSON file in the Web API's own format (the bundled demo is one): read here as a
source, and written here from a store (`zotsync snapshot`), so the two stay each other's inverse."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ..errors import ConfigError, SourceError
from ..inputs import MAX_SNAPSHOT, file_digest, read_text_input
from ..model import (
    CHILD_TYPES,
    Changes,
    Collection,
    Creator,
    InvalidObject,
    Item,
    Library,
    library_url_of,
    may_hold_lone_surrogates,
    without_lone_surrogates,
)
from .base import Sink, split_objects, warn_repaired


class SnapshotSource:
    def __init__(self, path: Path) -> None:
        self.path = path

    requests = 0  # reads a local file: no HTTP

    @property
    def id(self) -> str:
        return f"snapshot:{self.path}"

    def content_digest(self) -> str | None:
        """The file's SHA-256, taken before any parsing: the same bytes are the same library. None when
        unreadable (`changes` then reports why)."""
        return file_digest(self.path)

    def changes(self, since: int | None, sink: Sink | None = None) -> Changes | None:
        try:
            text = read_text_input(self.path, "snapshot", MAX_SNAPSHOT, SourceError)
        except FileNotFoundError:
            raise ConfigError(f"snapshot not found: {self.path}") from None
        objects = _parse(self.path, text)
        if not isinstance(objects, list) or not all(isinstance(o, dict) for o in objects):
            raise SourceError(f"{self.path}: a snapshot is a JSON array of Zotero API objects")
        repaired: list[str] = []
        try:
            if may_hold_lone_surrogates(text):
                objects, repaired = without_lone_surrogates(objects)
            items, collections = split_objects(objects)
        except InvalidObject as exc:
            raise SourceError(f"{self.path}: {exc}") from None
        except (KeyError, TypeError, ValueError) as exc:
            raise SourceError(f"{self.path}: an object lacks a valid {exc} field") from None
        warn_repaired(repaired)
        library: dict[str, Any] = next(
            (o["library"] for o in objects if isinstance(o.get("library"), dict)), {}
        )
        version = max([*(i.version for i in items), *(c.version for c in collections)], default=0)
        # A snapshot is the whole library, so it also tells what was deleted: whatever it lacks. It is
        # read whole every time because a hand-edited file need not bump any version.
        return Changes(
            library_version=version,
            items=tuple(items),
            collections=tuple(collections),
            complete=True,
            trust_versions=False,
            library_type=str(library.get("type", "user")),
            library_id=str(library.get("id", "")),
            library_name=str(library.get("name", "")),
            library_url=library_url_of({"library": library}),
        )


def _parse(path: Path, text: str) -> Any:
    """The snapshot's JSON; whatever Python cannot read is one line naming the file (and the line)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise SourceError(f"{path}:{exc.lineno}: snapshot is not valid JSON: {exc.msg}") from None
    except RecursionError:  # arrays or objects nested thousands deep: no Zotero object is
        raise SourceError(f"{path}: snapshot is nested too deeply to be a Zotero library") from None
    except ValueError:  # an integer longer than Python converts (sys.get_int_max_str_digits())
        most = sys.get_int_max_str_digits()
        digits = re.search(rf"\d{{{most + 1},}}", text)
        line = f":{text.count(chr(10), 0, digits.start()) + 1}" if digits else ""
        raise SourceError(
            f"{path}{line}: snapshot holds a number of more than {most} digits, which no Zotero library holds"
        ) from None


# -- writing ------------------------------------------------------------------------------------------


def dumps(library: Library, library_name: str = "") -> str:
    """The library as a snapshot file: a JSON array of Web API objects (`key`, `version`, `library`,
    `data`), collections first, then each top-level item followed by its children (notes, attachments,
    their annotations), all by key: the same library gives the same bytes."""
    identity: dict[str, Any] = {"type": library.library_type}
    if library.library_id:
        identity["id"] = int(library.library_id) if library.library_id.isdigit() else library.library_id
    if library_name:
        identity["name"] = library_name
    if library.library_url:
        identity["links"] = {"alternate": {"href": library.library_url, "type": "text/html"}}
    objects = [_api_object(_collection_data(c), identity) for c in library.collections]
    objects += [_api_object(_item_data(item), identity) for item in _parents_first(library.items)]
    return json.dumps(objects, ensure_ascii=False, indent=2) + "\n"


def _api_object(data: dict[str, Any], library: Mapping[str, Any]) -> dict[str, Any]:
    return {"key": data["key"], "version": data["version"], "library": dict(library), "data": data}


def _collection_data(collection: Collection) -> dict[str, Any]:
    return {
        "key": collection.key,
        "version": collection.version,
        "name": collection.name,
        "parentCollection": collection.parent_key or False,
    }


def _item_data(item: Item) -> dict[str, Any]:
    data: dict[str, Any] = {"key": item.key, "version": item.version}
    if item.parent_key:
        data["parentItem"] = item.parent_key
    data["itemType"] = item.item_type
    data.update(item.fields)
    if item.creators or item.item_type not in CHILD_TYPES:  # child types' API data has no `creators`
        data["creators"] = [_creator(c) for c in item.creators]
    data["tags"] = [{"tag": t.name, "type": t.type} if t.type else {"tag": t.name} for t in item.tags]
    if not item.parent_key or item.collections:  # the API gives child items no `collections`
        data["collections"] = list(item.collections)
    if item.deleted:
        data["deleted"] = 1
    return data


def _creator(creator: Creator) -> dict[str, str]:
    out = {"creatorType": creator.creator_type}
    if creator.name:
        out["name"] = creator.name
    if creator.first_name or creator.last_name or not creator.name:
        out.update(firstName=creator.first_name, lastName=creator.last_name)
    return out


def _parents_first(items: tuple[Item, ...]) -> Iterator[Item]:
    """Each item before its children, siblings by key; children whose parent is missing come last."""
    keys = {item.key for item in items}
    children: dict[str | None, list[Item]] = {}
    for item in sorted(items, key=lambda i: i.key):
        parent = item.parent_key if item.parent_key in keys else None
        children.setdefault(parent, []).append(item)
    roots = [i for i in children.get(None, ()) if not i.parent_key]
    orphans = [i for i in children.get(None, ()) if i.parent_key]
    seen: set[str] = set()

    def walk(item: Item) -> Iterator[Item]:
        if item.key in seen:  # a cycle of parents in a damaged store: each item once
            return
        seen.add(item.key)
        yield item
        for child in children.get(item.key, ()):
            yield from walk(child)

    for item in (*roots, *orphans):
        yield from walk(item)
    for item in sorted(items, key=lambda i: i.key):  # what a cycle of parents kept from any root
        yield from walk(item)
