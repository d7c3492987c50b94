"""Frozen value objects shared by every layer: what a Zotero library holds and what a page shows.

Sources turn their raw records (API JSON, zotero.sqlite rows) into these at the boundary, so the store,
the reconciler and the exporters never see a source's own shapes.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

# Item types that are never entries of their own: they hang below a regular item.
CHILD_TYPES = ("note", "attachment", "annotation")

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
# Item types whose venue is who published them (a book's publisher, a thesis's university, a report's
# institution), their kind of document only when that is missing; every other type looks at VENUE_FIELDS.
PUBLISHER_FIELDS: dict[str, tuple[str, ...]] = {
    "book": ("publisher",),
    "thesis": ("university", "thesisType"),
    "report": ("institution", "reportType"),
}

# An item or collection key as Zotero makes them: 8 characters, digits 2–9 and capitals without O (a
# key that is not one would make a snapshot zotsync refuses to read back).
ZOTERO_KEY = re.compile(r"^[23456789ABCDEFGHIJKLMNPQRSTUVWXYZ]{8}\Z")
_YEAR = re.compile(r"(?<!\d)(1[5-9]\d\d|2\d\d\d)(?!\d)")


class Creator(NamedTuple):
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


class Tag(NamedTuple):  # a tuple, so the store writes an item's tags as they are
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
        data, key = _data_and_key(obj, "collection")
        name = data.get("name")
        if not isinstance(name, str):
            raise InvalidObject(f"collection {key}: 'name' is not a string")
        parent = data.get("parentCollection")
        if parent not in (None, False) and not isinstance(parent, str):
            raise InvalidObject(f"collection {key}: 'parentCollection' is not a collection key")
        return cls(
            key=key,
            version=_version(obj, data, "collection", key),
            name=name,
            parent_key=parent or None,
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
        """An API item object (or its bare `data`); raises InvalidObject naming the item and the field."""
        data, key = _data_and_key(obj, "item")
        get = data.get
        item_type, title, parent = get("itemType"), get("title", ""), get("parentItem")
        if not isinstance(item_type, str) or not item_type:
            raise InvalidObject(f"item {key}: 'itemType' is missing or not a string")
        if not isinstance(title, str):
            raise InvalidObject(f"item {key}: 'title' is not a string")
        if parent not in (None, False, "") and not isinstance(parent, str):
            raise InvalidObject(f"item {key}: 'parentItem' is not an item key")
        library = obj.get("library") or {}
        if not isinstance(library, dict):
            raise InvalidObject(f"item {key}: 'library' is not an object")
        return cls(
            key,
            _version(obj, data, "item", key),
            item_type,
            title or _own_title(data),
            _creators(get("creators", ()), key),
            _tags(get("tags", ()), key),
            _keys(get("collections", ()), key),
            parent or None,
            bool(get("deleted", False)),
            str(library.get("type", "user")),
            str(library.get("id", "")),
            {k: v for k, v in data.items() if k not in _STRUCTURED},
        )

    def get(self, name: str) -> str:
        value = self.fields.get(name, "")
        return value if isinstance(value, str) else ""

    @property
    def is_regular(self) -> bool:
        """A top-level bibliographic item: what the catalogue is made of."""
        return self.parent_key is None and self.item_type not in CHILD_TYPES

    @property
    def year(self) -> str:
        match = _YEAR.search(self.get("date"))
        return match.group(1) if match else ""

    @property
    def venue_source(self) -> str:
        """Where the work appeared, as Zotero spells it (empty when unknown)."""
        fields = self.fields  # a plain loop: this runs once per item per export (100k at scale)
        for name in PUBLISHER_FIELDS.get(self.item_type, VENUE_FIELDS):
            value = fields.get(name)
            if isinstance(value, str) and (value := value.strip()):
                return value
        return ""

    @property
    def first_family(self) -> str:
        """The family name of the first author (else of the first creator): the one a citation leads with."""
        first = next((c for c in self.creators if c.creator_type == "author"), None)
        first = first or (self.creators[0] if self.creators else None)
        return "" if first is None else (first.last_name or first.name).strip()

    @property
    def doi(self) -> str:
        return self.get("DOI") or self.extra_field("DOI")

    @property
    def url(self) -> str:
        return self.get("url")

    def extra_field(self, name: str) -> str:
        """`Name: value` from Zotero's free-form `extra` field (one per line; plugins store state there)."""
        extra = self.get("extra")
        if not extra:
            return ""  # most items: no line to scan
        prefix = name.casefold() + ":"
        for line in extra.splitlines():
            if line.casefold().startswith(prefix):
                return line[len(prefix) :].strip()
        return ""

    @property
    def is_pdf(self) -> bool:
        return self.item_type == "attachment" and self.get("contentType") == "application/pdf"


def _own_title(data: Mapping[str, Any]) -> str:
    """The field a case, an email or a statute has in place of `title`: what Zotero shows as its title."""
    return next(
        (v for f in ("caseName", "subject", "nameOfAct") if isinstance(v := data.get(f), str) and v), ""
    )


_STRUCTURED = frozenset(
    {"key", "version", "itemType", "creators", "tags", "collections", "parentItem", "deleted", "relations"}
)

NOT_A_KEY = "not a Zotero key (8 characters: digits 2–9 and capitals but O)"
MAX_VERSION = 2**53  # Zotero's versions are JavaScript integers; anything above is not a version


class InvalidObject(ValueError):
    """An API object zotsync cannot read; the message names the object (by key) and the field."""


def sane_version(value: object) -> int | None:
    """A library or object version: an integer 0 … 2^53 (as a number or digits); None otherwise."""
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 16:
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_VERSION:
        return value
    return None


# Half of a UTF-16 surrogate pair (half an emoji): JSON's `"\ud83d"` decodes to it, and no encoder can
# write it, so one in a title failed every pull where the store wrote it.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def may_hold_lone_surrogates(raw: bytes | str) -> bool:
    """Whether JSON text can decode to a lone surrogate: it holds a `\\uD800`–`\\uDFFF` escape or (as
    bytes) the UTF-8 form of one, which `json.loads` lets through. A cheap test of the raw text, so that
    only such text is searched object by object (a false alarm costs that search, nothing else)."""
    if isinstance(raw, bytes):
        return b"\\ud" in raw or b"\\uD" in raw or b"\xed" in raw
    return "\\ud" in raw or "\\uD" in raw


def without_lone_surrogates(objects: list[Any]) -> tuple[list[Any], list[str]]:
    """The API objects with every lone surrogate in their text replaced by U+FFFD (which shows where it
    was), and the keys of the objects that held one."""
    repaired: list[str] = []
    result = []
    for obj in objects:
        try:
            clean, changed = _clean(obj)
        except RecursionError:  # JSON nested as deep as the parser reads: no Zotero object is
            raise InvalidObject("an object is nested too deeply to be read") from None
        if changed:
            data = clean.get("data") if isinstance(clean, dict) else None
            key = data.get("key") if isinstance(data, dict) else None
            repaired.append(_shown(key or (clean.get("key") if isinstance(clean, dict) else None)))
        result.append(clean)
    return result, repaired


def _clean(value: Any) -> tuple[Any, bool]:
    if isinstance(value, str):
        text, count = _LONE_SURROGATE.subn("\ufffd", value)
        return text, count > 0
    if isinstance(value, dict):
        pairs = [(_clean(k), _clean(v)) for k, v in value.items()]
        return {k: v for (k, _), (v, _) in pairs}, any(a or b for (_, a), (_, b) in pairs)
    if isinstance(value, list):
        items = [_clean(v) for v in value]
        return [v for v, _ in items], any(changed for _, changed in items)
    return value, False


def _data_and_key(obj: Mapping[str, Any], kind: str) -> tuple[Mapping[str, Any], str]:
    key = obj.get("key")
    if "data" in obj:
        data = obj["data"]
    elif "itemType" in obj or "name" in obj:
        data = obj  # the bare `data` object, as some snapshot files hold it
    else:
        raise InvalidObject(f"{kind} {_shown(key)}: no 'data' object")
    if not isinstance(data, dict):
        raise InvalidObject(f"{kind} {_shown(key)}: 'data' is not an object")
    key = data.get("key", key)
    if not isinstance(key, str) or not ZOTERO_KEY.match(key):
        raise InvalidObject(f"{kind} {_shown(key)}: 'key' is missing or {NOT_A_KEY}")
    return data, key


def _version(obj: Mapping[str, Any], data: Mapping[str, Any], kind: str, key: str) -> int:
    version = sane_version(data.get("version", obj.get("version", 0)))
    if version is None:
        raise InvalidObject(f"{kind} {key}: 'version' is not an integer from 0 to 2^53")
    return version


# What `from_api` does for every creator and tag, kept cheap (it runs for each of them in a pull): a tuple
# of types, not a `list | tuple` union built on each call; named tuples without their Python-level __new__.
_ARRAY = (list, tuple)
_new_tuple = tuple.__new__


def _creators(raw: object, key: str) -> tuple[Creator, ...]:
    if not isinstance(raw, _ARRAY):
        raise InvalidObject(f"item {key}: 'creators' is not a list")
    creators = []
    for creator in raw:  # JSON objects are dicts: `type(...) is` is much cheaper than an ABC check
        if type(creator) is not dict:
            raise InvalidObject(f"item {key}: an entry of 'creators' is not an object")
        get = creator.get
        kind, last, first, name = (
            get("creatorType", "author"),
            get("lastName", ""),
            get("firstName", ""),
            get("name", ""),
        )
        if not (type(kind) is type(last) is type(first) is type(name) is str):
            raise InvalidObject(f"item {key}: a creator's name or type is not a string")
        creators.append(_new_tuple(Creator, (kind, last, first, name)))
    return tuple(creators)


def _tags(raw: object, key: str) -> tuple[Tag, ...]:
    if not isinstance(raw, _ARRAY):
        raise InvalidObject(f"item {key}: 'tags' is not a list")
    tags = []
    for tag in raw:
        name = tag.get("tag") if type(tag) is dict else None
        if not isinstance(name, str):
            raise InvalidObject(f"item {key}: a tag has no 'tag' string")
        kind = tag.get("type", 0)
        if kind not in (0, 1) or isinstance(kind, bool):
            raise InvalidObject(f"item {key}: tag '{name}' has a 'type' other than 0 or 1")
        tags.append(_new_tuple(Tag, (name, int(kind))))
    return tuple(tags)


def _keys(raw: object, key: str) -> tuple[str, ...]:
    if not isinstance(raw, _ARRAY) or not all(type(k) is str for k in raw):
        raise InvalidObject(f"item {key}: 'collections' is not a list of collection keys")
    return tuple(raw)


def _shown(key: object) -> str:
    """An object's key as a message may quote it: short, one line, or a placeholder."""
    text = key if isinstance(key, str) else ""
    return text if text.isalnum() and len(text) <= 32 else "(without a valid key)"


def library_url_of(obj: Mapping[str, Any]) -> str:
    """The library's web page an API object names (`library.links.alternate.href`), when it is an
    http(s) URL; else empty."""
    library = obj.get("library")
    links = library.get("links") if isinstance(library, dict) else None
    alternate = links.get("alternate") if isinstance(links, dict) else None
    href = alternate.get("href") if isinstance(alternate, dict) else None
    if not isinstance(href, str) or not href.startswith(("https://", "http://")) or not href.isprintable():
        return ""
    return href.rstrip("/")


def category_name(name: str) -> str:
    """A category or collection name as zotsync compares and shows it: one spelling of each character
    (NFC), so a name typed where the system decomposes accents (macOS: NFD) is the same name, not a
    second heading that looks just like the first."""
    return unicodedata.normalize("NFC", name)


def collection_path(path: str) -> str:
    """A collection path as a user writes it (`exclude_collections`, `list --collection`) as the page
    names it: outer spaces and slashes trimmed, one Unicode form (`category_name`)."""
    return category_name(path.strip().strip("/").strip())


def in_collections(collections: Iterable[str], paths: Sequence[str]) -> bool:
    """Whether any of `collections` (full paths) is one of `paths` (as `collection_path` gives them) or
    lies below one (`Parent / Child`)."""
    return any(c == p or c.startswith(p + " / ") for c in collections for p in paths)


PATH_DEPTH = 32  # collection levels a path shows in full
_HEAD, _TAIL = 16, 15  # of a deeper one: the top names and the last ones


class ItemFacts(NamedTuple):
    title_key: str  # normalize.title of the title: what the matcher compares and the page sorts by
    year: str
    venue_source: str  # where the work appeared, as Zotero spells it
    authors: tuple[str, ...]  # the creators' display names, in Zotero's order
    doi: str
    url: str
    read: bool  # marked Read by the Reading List plugin (`Read_Status: read` in `extra`)
    doi_key: str  # normalize.doi of the DOI: what the DOI stage and the duplicate search compare


@dataclass(frozen=True, slots=True)
class Library:
    """Everything the store holds about one Zotero library."""

    items: tuple[Item, ...] = ()
    collections: tuple[Collection, ...] = ()
    version: int | None = None
    library_type: str = "user"
    library_id: str = ""
    # the library's web page (https://www.zotero.org/<user>): an item's is `<library_url>/items/<key>`
    library_url: str = ""
    # item key → what the page derives from that item alone (facts.py), as the store computed
    # it when it wrote the item; reconcile computes the facts of any item missing here itself.
    facts: Mapping[str, ItemFacts] = field(default_factory=dict, compare=False, repr=False)
    # item key → the metadata a processor found for the item (a venue, a year, a DOI that Zotero lacks),
    # handed over by the processor's `attach`: what reconcile reads of any processor, by no name.
    found: Mapping[str, FoundMetadata] = field(default_factory=dict, compare=False, repr=False)
    # item key → what a processor learnt of the work itself (citations, retraction, an open copy), handed
    # over by the processor's `attach`: the page reads it whoever found it.
    works: Mapping[str, WorkFacts] = field(default_factory=dict, compare=False, repr=False)
    # processor name → item key → what that processor derived for the item (zotsync/processing), joined
    # in by the processor itself (`Processor.attach`), for the processors' own use.
    derived: Mapping[str, Mapping[str, Any]] = field(default_factory=dict, compare=False, repr=False)
    # paper key → its Zotero notes and annotations, for the papers whose note pages an export makes
    # (loaded only when an exporter needs them: `formats.Needs.NOTES`).
    notes: Mapping[str, PaperNotes] = field(default_factory=dict, compare=False, repr=False)

    def collection_paths(self) -> dict[str, str]:
        """Collection key → `Parent / Child` path. Each path is built once from its parent's, so the
        work is linear in the collections however deep they nest; a cycle or a dangling parent stops
        the walk. A path deeper than PATH_DEPTH shows its first and last names around ` / … / `: the
        full paths of a 10,000-deep chain would be hundreds of MB of text."""
        by_key = {c.key: c for c in self.collections}
        # key → (depth, the first names, the last names when the path is elided)
        known: dict[str, tuple[int, tuple[str, ...], tuple[str, ...]]] = {}
        for collection in self.collections:
            chain: list[Collection] = []  # from `collection` up to the first one whose path is known
            seen: set[str] = set()
            node: Collection | None = collection
            while node is not None and node.key not in known and node.key not in seen:
                seen.add(node.key)
                chain.append(node)
                node = by_key.get(node.parent_key) if node.parent_key else None
            depth, head, tail = known[node.key] if node is not None and node.key in known else (0, (), ())
            for member in reversed(chain):
                depth += 1
                name = category_name(member.name)
                if depth <= PATH_DEPTH:
                    head += (name,)
                else:  # keep the top _HEAD names and the last _TAIL ones
                    tail = (*(tail or head[_HEAD:]), name)[-_TAIL:]
                    head = head[:_HEAD]
                known[member.key] = (depth, head, tail)
        return {
            key: " / ".join(head) + (" / … / " + " / ".join(tail) if tail else "")
            for key, (_, head, tail) in known.items()
        }


@dataclass(frozen=True, slots=True)
class PaperNotes:
    """What a paper's note page shows of Zotero: its child notes (oldest first) and, per attachment
    (oldest first), the annotations made in it, in reading order. Nothing in the trash."""

    notes: tuple[Item, ...] = ()
    annotated: tuple[tuple[Item, tuple[Item, ...]], ...] = ()  # (attachment, its annotations)

    def __bool__(self) -> bool:
        return bool(self.notes or self.annotated)


@dataclass(frozen=True, slots=True)
class Changes:
    """What a source reports for one pull: upserts, deletions, and the version they bring us to.

    `complete` means the upserts are the whole library, so anything else in the store is gone.
    """

    library_version: int
    items: tuple[Item, ...] = ()
    collections: tuple[Collection, ...] = ()
    deleted_items: frozenset[str] = frozenset()
    deleted_collections: frozenset[str] = frozenset()
    complete: bool = False
    library_type: str = "user"
    library_id: str = ""
    library_name: str = ""  # a group's name, or the user's zotero.org name; "" when the source does not say
    library_url: str = ""  # the library's web page (the API's `links.alternate`); "" when none is given
    # False when an object's content may change without its version (a hand-edited snapshot): the store
    # then compares content, not just versions, before it skips an object.
    trust_versions: bool = True


# Where preprints are posted, as a venue names them ("arXiv", DBLP's "CoRR", "bioRxiv"…): an item there
# is a preprint whose published version a metadata service may know.
_PREPRINT_SERVER = re.compile(r"^(?:arxiv|corr|biorxiv|medrxiv|chemrxiv|techrxiv|ssrn|research square)\b")


def venue_year(venue: str) -> str:
    """The year a venue names: `arXiv 2025`, `OSDI'20` (20xx); "" when it names none."""
    if m := re.search(r"(?<!\d)((?:19|20)\d\d)(?!\d)", venue):
        return m.group(1)
    if m := re.search(r"['’](\d\d)(?!\d)", venue):
        return "20" + m.group(1)
    return ""


def is_preprint(item_type: str, venue: str) -> bool:
    """Whether an item of `item_type` that Zotero says appeared in `venue` is a preprint."""
    return item_type == "preprint" or bool(_PREPRINT_SERVER.match(venue.strip().casefold()))


class FoundMetadata(NamedTuple):
    """What a metadata processor found for a Zotero item (`Library.found`; enrichment's services fill
    it, zotsync/processing/enrich), as reconcile reads it: the venue as the finder names it, and what to
    fill where Zotero has nothing."""

    service: str  # who found it, shown as the venue's source: dblp, crossref, openalex, arxiv…
    venue: str  # as the service names it: "OSDI", "Proceedings of the … Symposium on …", "arXiv"
    venue_key: str  # DBLP's stream of the venue ("osdi" of conf/osdi/…), which the short names know
    venue_year: str  # the year of that venue (the published version's, for a preprint)
    published: bool  # a published venue, not a preprint server
    year: str  # the year to fill where Zotero has none
    doi: str  # the DOI to fill where Zotero has none


class WorkFacts(NamedTuple):
    """What a scholarly graph (OpenAlex, zotsync/processing/citations) says of a Zotero item's work."""

    cited_by: str = ""  # how many works cite it, as digits; empty when unknown
    retracted: bool = False
    open_access_url: str = ""  # where a reader without a subscription finds it; empty when none


class Link(NamedTuple):
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
    noted: bool | None = None  # the 📝 mark as the curator set it; None: not given (note pages may set it)
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


class Placement(NamedTuple):
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
    added: str = ""  # the day the item joined the library (YYYY-MM-DD); empty for an unmatched entry
    # where `venue` came from: curated, zotero, or the metadata service that found it; empty when unknown
    venue_source: str = ""
    noted_by_curator: bool = False  # `noted` is the curator's own (true or false), which a note page keeps
    cited_by: str = ""  # works citing it (enrich.citations), as digits; empty when unknown
    retracted: bool = False  # the work was retracted: every format says so
    open_access_url: str = ""  # an open-access copy of it; empty when none is known

    @property
    def curated(self) -> bool:
        return bool(self.curated_title)

    @property
    def note_link(self) -> str:
        return next((link.url for link in self.links if link.label == "Note"), "")


@dataclass(frozen=True, slots=True)
class FullText:
    """The text Zotero extracted from one attachment (its full-text index), as a source read it.
    `stamp` names this version of the text (the Web API's version; for zotero.sqlite, its version and
    the cache file's size and time): a text whose stamp the store holds is not read again. `content`
    None: Zotero lists the attachment but holds no text for it."""

    key: str
    stamp: str
    content: str | None
    indexed_pages: int | None = None
    total_pages: int | None = None
    indexed_chars: int | None = None
    total_chars: int | None = None

    @property
    def partial(self) -> bool:
        """Zotero indexed only part of the attachment (its page or character limit)."""
        pages = self.indexed_pages is not None and self.total_pages is not None
        if pages and self.indexed_pages < self.total_pages:  # type: ignore[operator]
            return True
        chars = self.indexed_chars is not None and self.total_chars is not None
        return chars and self.indexed_chars < self.total_chars  # type: ignore[operator]
