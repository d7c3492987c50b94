"""Frozen value objects shared by every layer: what a Zotero library holds and what a page shows.

Sources turn their raw records (API JSON, zotero.sqlite rows) into these at the boundary, so the store,
the reconciler and the exporters never see a source's own shapes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Status = Literal["read", "unread"]

# Fields that name where a work appeared, by item type, strongest first. Zotero maps type-specific
# names onto base fields (proceedingsTitle → publicationTitle, repository → publisher, …); the raw API
# JSON carries the type-specific name, so look for those.
VENUE_FIELDS: tuple[str, ...] = (
    "publicationTitle",
    "proceedingsTitle",
    "bookTitle",
    "blogTitle",
    "websiteTitle",
    "forumTitle",
    "encyclopediaTitle",
    "dictionaryTitle",
    "repository",
    "reportType",
    "thesisType",
    "institution",
    "university",
    "company",
)

_YEAR = re.compile(r"(?<!\d)(1[5-9]\d\d|2\d\d\d)(?!\d)")


@dataclass(frozen=True, slots=True)
class Creator:
    creator_type: str
    last_name: str = ""
    first_name: str = ""
    name: str = ""  # single-field name (organisations)

    @property
    def display(self) -> str:
        """`Last, First`, or the single-field name."""
        if self.name:
            return self.name
        return f"{self.last_name}, {self.first_name}" if self.first_name else self.last_name

    @classmethod
    def from_api(cls, raw: Mapping[str, Any]) -> Creator:
        return cls(
            creator_type=str(raw.get("creatorType", "author")),
            last_name=str(raw.get("lastName", "")),
            first_name=str(raw.get("firstName", "")),
            name=str(raw.get("name", "")),
        )


@dataclass(frozen=True, slots=True)
class Tag:
    name: str
    type: int = 0  # 0 manual, 1 automatic


@dataclass(frozen=True, slots=True)
class Collection:
    key: str
    version: int
    name: str
    parent_key: str | None = None
    deleted: bool = False  # in the trash (Zotero 7+): gone from the page until restored

    @classmethod
    def from_api(cls, obj: Mapping[str, Any]) -> Collection:
        data = obj.get("data", obj)
        parent = data.get("parentCollection") or None
        return cls(
            key=str(data["key"]),
            version=int(data.get("version", obj.get("version", 0))),
            name=str(data["name"]),
            parent_key=str(parent) if parent else None,
            deleted=bool(data.get("deleted", False)),
        )


@dataclass(frozen=True, slots=True)
class Item:
    """A Zotero item of any type; `fields` keeps every data field verbatim for later use."""

    key: str
    version: int
    item_type: str
    title: str = ""
    creators: tuple[Creator, ...] = ()
    tags: tuple[Tag, ...] = ()
    collections: tuple[str, ...] = ()
    parent_key: str | None = None
    deleted: bool = False
    library_type: str = "user"
    library_id: str = ""
    fields: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @classmethod
    def from_api(cls, obj: Mapping[str, Any]) -> Item:
        data = obj.get("data", obj)
        library = obj.get("library") or {}
        return cls(
            key=str(data["key"]),
            version=int(data.get("version", obj.get("version", 0))),
            item_type=str(data.get("itemType", "")),
            title=str(next((data[f] for f in _TITLE_FIELDS if data.get(f)), "")),
            creators=tuple(Creator.from_api(c) for c in data.get("creators", ())),
            tags=tuple(Tag(str(t["tag"]), int(t.get("type", 0))) for t in data.get("tags", ())),
            collections=tuple(str(c) for c in data.get("collections", ())),
            parent_key=str(data["parentItem"]) if data.get("parentItem") else None,
            deleted=bool(data.get("deleted", False)),
            library_type=str(library.get("type", "user")),
            library_id=str(library.get("id", "")),
            fields={k: v for k, v in data.items() if k not in _STRUCTURED},
        )

    def get(self, name: str) -> str:
        value = self.fields.get(name, "")
        return value if isinstance(value, str) else ""

    @property
    def is_regular(self) -> bool:
        """A top-level bibliographic item: what the catalogue is made of."""
        return self.parent_key is None and self.item_type not in ("note", "attachment", "annotation")

    @property
    def year(self) -> str:
        match = _YEAR.search(self.get("date"))
        return match.group(1) if match else ""

    @property
    def venue_source(self) -> str:
        """Where the work appeared, as Zotero spells it (empty when unknown)."""
        return next((value for f in VENUE_FIELDS if (value := self.get(f).strip())), "")

    @property
    def doi(self) -> str:
        return self.get("DOI") or self.extra_field("DOI")

    @property
    def url(self) -> str:
        return self.get("url")

    def extra_field(self, name: str) -> str:
        """`Name: value` from Zotero's free-form `extra` field (one per line; plugins store state there)."""
        prefix = name.casefold() + ":"
        for line in self.get("extra").splitlines():
            if line.casefold().startswith(prefix):
                return line[len(prefix) :].strip()
        return ""

    @property
    def is_pdf(self) -> bool:
        return self.item_type == "attachment" and self.get("contentType") == "application/pdf"


# `title`, or the field an item type has in its place (case, email, statute), as Zotero shows it.
_TITLE_FIELDS = ("title", "caseName", "subject", "nameOfAct")

_STRUCTURED = frozenset(
    {"key", "version", "itemType", "creators", "tags", "collections", "parentItem", "deleted", "relations"}
)


@dataclass(frozen=True, slots=True)
class Library:
    """Everything the store holds about one Zotero library."""

    items: tuple[Item, ...] = ()
    collections: tuple[Collection, ...] = ()
    version: int | None = None
    library_type: str = "user"
    library_id: str = ""

    def collection_paths(self) -> dict[str, str]:
        """Collection key → `Parent / Child` path (cycles and dangling parents stop the walk)."""
        by_key = {c.key: c for c in self.collections}
        paths: dict[str, str] = {}
        for collection in self.collections:
            names, seen, node = [], set(), collection
            while node is not None and node.key not in seen:
                seen.add(node.key)
                names.append(node.name)
                node = by_key.get(node.parent_key) if node.parent_key else None
            paths[collection.key] = " / ".join(reversed(names))
        return paths


@dataclass(frozen=True, slots=True)
class Link:
    label: str
    url: str
    # "" for a curator's link; for one zotsync adds, what it is (paper, pdf, zotero, archive), so the page
    # can name it in its own language.
    kind: str = ""


@dataclass(frozen=True, slots=True)
class CatalogueEntry:
    """One curated row as the curator wrote it; `line` points back into the YAML for messages."""

    category: str
    title: str
    venue: str = ""
    status: Status | None = None
    why: str = ""
    noted: bool = False
    links: tuple[Link, ...] = ()
    zotero_key: str = ""
    doi: str = ""
    arxiv: str = ""
    url: str = ""
    isbn: str = ""
    year: str = ""
    line: int = 0


@dataclass(frozen=True, slots=True)
class Category:
    name: str
    entries: tuple[CatalogueEntry, ...] = ()


@dataclass(frozen=True, slots=True)
class Catalogue:
    title: str = ""
    description: str = ""
    categories: tuple[Category, ...] = ()

    @property
    def entries(self) -> tuple[CatalogueEntry, ...]:
        return tuple(e for c in self.categories for e in c.entries)


@dataclass(frozen=True, slots=True)
class Placement:
    """One row of the page: an entry (curated, matched, or Zotero-only) in one category."""

    category: str
    status: Status
    title: str
    venue: str  # curated or derived from Zotero; empty when unknown
    year: str
    why: str  # curated; empty when none
    authors: tuple[str, ...]
    doi: str
    url: str
    noted: bool
    links: tuple[Link, ...]
    zotero_key: str
    tags: tuple[str, ...]
    collections: tuple[str, ...]
    curated_title: str = ""  # the title the curator wrote; empty for a row that only Zotero knows

    @property
    def curated(self) -> bool:
        return bool(self.curated_title)

    @property
    def note_link(self) -> str:
        return next((link.url for link in self.links if link.label == "Note"), "")
