"""Items as the store's rows hold them, and back: one `items` row (`ItemRecord`, the truth) and one
`item_page` row (`PageRecord`, the page's narrow read model with the item's facts) per item.

The stored text must not change without a migration: a `pull --full` compares an item's `items` row with
the one it would write, and skips it when they are equal.
"""

from __future__ import annotations

import functools
import itertools
import json
import operator
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

from ..facts import item_facts
from ..model import VENUE_FIELDS, Creator, Item, ItemFacts, Tag

# The data fields the page is made of (`Item.get` callers in model.py and reconcile/): `load_page` reads
# only these, so abstracts and notes stay on disk. A field added here needs a migration that empties
# `item_page`, which every upgrade then fills again (`schema.settle`).
PAGE_FIELDS: tuple[str, ...] = (
    *VENUE_FIELDS,
    "publisher",  # a book's venue (model.PUBLISHER_FIELDS)
    "date",
    "DOI",
    "extra",
    "url",
    "archiveID",
    "ISBN",
    "conferenceName",
    "contentType",
    "linkMode",
    "dateAdded",
    "citationKey",  # Zotero 7's own field for Better BibTeX's key (catalog.bib)
)
_PAGE_FIELD_SET = frozenset(PAGE_FIELDS)
_STRINGS = frozenset({str})


def page_fields_sql(column: str) -> str:
    """SQL that makes the `item_page.fields` of an `items.fields` column (for triggers)."""
    pairs = ", ".join(f"'{f}', json_extract({column}, '$.{f}')" for f in PAGE_FIELDS)
    return f"json_patch('{{}}', json_object({pairs}))"  # json_patch drops the null (absent) ones


# One encoder each, built once (json.dumps with options builds one per call).
def _encoder(sort_keys: bool = False, separators: tuple[str, str] = (", ", ": ")) -> Callable[[Any], str]:
    """json.JSONEncoder(ensure_ascii=False, …).encode, the same text, without the Python layers that
    build json's C encoder anew on every call (5 calls per item a pull writes: ~0.1 s at 28k items). No
    check for reference cycles: what the store encodes came from JSON or from model objects."""
    encoder = json.JSONEncoder(ensure_ascii=False, sort_keys=sort_keys, separators=separators)
    c_encoder = getattr(json.encoder, "c_make_encoder", None)
    if c_encoder is None:  # a Python without json's C speedups
        return encoder.encode
    make = c_encoder(
        None, encoder.default, json.encoder.encode_basestring, None, *separators[::-1], sort_keys, False, True
    )
    return lambda value: "".join(make(value, 0))


FIELDS_JSON = _encoder(sort_keys=True)  # items.fields
COMPACT_JSON = _encoder(separators=(",", ":"))  # what LEAF_JSON may not write (a float)


@functools.cache
def _msgspec_encode() -> Callable[[Any], bytes]:
    import msgspec  # when a pull first writes an item: an unchanged sync never needs it

    return msgspec.json.Encoder().encode


def LEAF_JSON(value: Any) -> str:  # named as the encoders beside it
    """COMPACT_JSON's text, ~3 x faster, for what holds no float: the creators, tags, memberships and
    facts, whose leaves the model makes strings, integers and booleans (msgspec escapes strings as json
    does with ensure_ascii=False, but writes some floats otherwise). What msgspec refuses (a lone
    surrogate, a str subclass) goes to json as before, which writes it or names the fault."""
    try:
        return _msgspec_encode()(value).decode()
    except Exception:
        return COMPACT_JSON(value)


_scan_json = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # C scanner, undocumented


def from_json(text: str) -> Any:
    """json.loads for the store's own JSON (written without leading blanks): its C scanner directly, as
    three Python layers around it cost more than the scan itself, 175,000 times at 100k items."""
    try:
        return _scan_json(text, 0)[0]
    except StopIteration:
        return json.loads(text)  # not what the store writes: let json name the fault


class ItemRecord(NamedTuple):
    """An `items` row: every column, in the table's order."""

    key: str
    version: int
    item_type: str
    parent_key: str | None
    title: str
    deleted: int
    creators: str  # JSON [[creator_type, last_name, first_name, name], …]
    fields: str  # JSON object: every other data field verbatim, keys sorted
    tags: str  # JSON [[tag, type], …] in Zotero's order
    collections: str  # JSON [collection key, …] in Zotero's order


class PageRecord(NamedTuple):
    """An `item_page` row: the record's columns but `fields`, which holds only PAGE_FIELDS, and facts."""

    key: str
    version: int
    item_type: str
    parent_key: str | None
    title: str
    deleted: int
    creators: str
    tags: str
    collections: str
    fields: str  # JSON object: the PAGE_FIELDS that are present and not null
    facts: str | None  # JSON [ItemFacts in their order] of a regular item; NULL: none


INSERT_ITEM = "INSERT OR REPLACE INTO items VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
INSERT_PAGE = "INSERT OR REPLACE INTO item_page VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"

_new_tuple = tuple.__new__  # a NamedTuple from values, without its Python-level __new__
_new_creator = functools.partial(_new_tuple, Creator)  # the same for each of 300k creators, in C
_new_tag = functools.partial(_new_tuple, Tag)


def item_record(item: Item) -> ItemRecord:
    """An item as the store holds it: its `items` row."""
    fields = item.fields if type(item.fields) is dict else dict(item.fields)  # json encodes dicts only
    return _new_tuple(
        ItemRecord,
        (
            item.key,
            item.version,
            item.item_type,
            item.parent_key,
            item.title,
            int(item.deleted),
            # tuples (creators and tags are named tuples) encode as the arrays the columns hold
            LEAF_JSON(item.creators) if item.creators else "[]",
            FIELDS_JSON(fields),
            LEAF_JSON(item.tags) if item.tags else "[]",
            LEAF_JSON(item.collections) if item.collections else "[]",
        ),
    )


def page_record(record: ItemRecord, item: Item) -> PageRecord:
    """The `item_page` row of `item`, whose `items` row is `record`."""
    fields = item.fields  # in the item's order, which is cheaper to follow than PAGE_FIELDS'
    page_fields = {f: v for f, v in fields.items() if f in _PAGE_FIELD_SET and v is not None}
    return _new_tuple(
        PageRecord,
        (
            record.key,
            record.version,
            record.item_type,
            record.parent_key,
            record.title,
            record.deleted,
            record.creators,
            record.tags,
            record.collections,
            # Zotero's fields are strings; any other value (a float above all) goes to json
            LEAF_JSON(page_fields)
            if _STRINGS.issuperset(map(type, page_fields.values()))
            else COMPACT_JSON(page_fields),
            facts_json(item),
        ),
    )


def facts_json(item: Item) -> str | None:
    """The `item_page.facts` of `item`: its ItemFacts as a JSON list; NULL unless it is regular."""
    return LEAF_JSON(item_facts(item)) if item.is_regular else None


def creators_of(text: str) -> tuple[Creator, ...]:
    return tuple(map(_new_creator, from_json(text))) if text != "[]" else ()


def compact_creators(objects_json: str) -> str:
    """Creators stored as objects (schema ≤ 7) as the arrays `item_record` writes: the same text."""
    return COMPACT_JSON([Creator(**c) for c in from_json(objects_json)])


def items_of(
    records: Iterable[tuple[Any, ...]], known: set[str] | None, library: tuple[str, str] = ("user", "")
) -> Iterator[Item]:
    """The items of `items` rows, each with every field; their memberships only in `known` collections
    (None: all of them, also of collections the store no longer has)."""
    library_type, library_id = library
    for key, version, item_type, parent_key, title, deleted, creators, fields, tags, memberships in records:
        listed = from_json(memberships) if memberships != "[]" else ()
        yield Item(
            key,
            version,
            item_type,
            title,
            creators_of(creators),
            tuple(map(_new_tag, from_json(tags))) if tags != "[]" else (),
            tuple(c for c in listed if c in known) if known is not None else tuple(listed),
            parent_key,
            bool(deleted),
            library_type,
            library_id,
            from_json(fields),
        )


def page_items(
    rows: Iterable[tuple[Any, ...]],
    known: set[str] | None,
    library: tuple[str, str] = ("user", ""),
    facts: dict[str, ItemFacts] | None = None,
    creators: bool = True,
) -> Iterator[Item]:
    """The items of `item_page` rows; their memberships only in `known` collections (None: all). The
    rows' stored facts go into `facts`, when given; without `creators`, the items with facts there
    come without their creators."""
    library_type, library_id = library
    # A library repeats a few thousand tags over 100k items; Tag is immutable, so equal ones share one.
    shared_tags: dict[tuple[str, int], Tag] = {}
    shared: dict[str, str] = {}  # years and venues, which repeat across items
    for (
        key,
        version,
        item_type,
        parent_key,
        title,
        deleted,
        item_creators,
        tags,
        memberships,
        fields,
        stored_facts,
    ) in rows:
        item_tags: tuple[Tag, ...] = ()
        if tags != "[]":
            item_tags = tuple(
                shared_tags.get(t) or shared_tags.setdefault(t, _new_tag(t))
                for t in map(tuple, from_json(tags))
            )
        item_collections: tuple[str, ...] = ()
        if memberships != "[]":
            listed = from_json(memberships)
            item_collections = tuple(c for c in listed if c in known) if known is not None else tuple(listed)
        item_fields = from_json(fields)
        with_facts = facts is not None and stored_facts is not None
        if facts is not None and stored_facts is not None:
            values = from_json(stored_facts)
            # Equal strings share one object (much less memory at scale): years and venues repeat across
            # items, the DOI and URL are usually the fields' own, the normalised DOI usually the DOI.
            title_key, year, venue_source, authors, doi, url, read, doi_key = values
            if doi and (same := item_fields.get("DOI")) == doi:
                doi = same
            if url and (same := item_fields.get("url")) == url:
                url = same
            facts[key] = _new_tuple(
                ItemFacts,
                (
                    title_key,
                    shared.setdefault(year, year),
                    shared.setdefault(venue_source, venue_source),
                    tuple(authors),
                    doi,
                    url,
                    read,
                    doi if doi_key == doi else doi_key,
                ),
            )
        yield Item(
            key,
            version,
            item_type,
            title,
            tuple(map(_new_creator, from_json(item_creators)))
            if item_creators != "[]" and (creators or not with_facts)
            else (),
            item_tags,
            item_collections,
            parent_key,
            bool(deleted),
            library_type,
            library_id,
            item_fields,
        )


def grouped(rows: Iterable[tuple[Any, ...]]) -> Iterator[tuple[str, list[tuple[Any, ...]]]]:
    """(key, rest of each row) groups of rows sorted by their first column."""
    for key, group in itertools.groupby(rows, key=operator.itemgetter(0)):
        yield key, [row[1:] for row in group]
