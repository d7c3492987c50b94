"""One CSV row per placement: the contract's columns in its order, then `venue_source` (where the venue
came from: curated, zotero, or the metadata service that found it; empty when unknown), then the
scholarly graph's `cited_by`, `retracted` and `open_access_url` (empty when `enrich.citations` is off).

The standard library's writer: byte for byte what pandas wrote (pandas writes through it too), faster
at 100k rows, and nothing heavy to import.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator, Sequence
from pathlib import PurePosixPath

from ..formats import Exporter, Output
from ..model import Placement
from ..text import DATA_CONTROLS, strip_controls
from .base import ExportInput

COLUMNS = (
    "category",
    "status",
    "title",
    "venue",
    "year",
    "why",
    "authors",
    "doi",
    "url",
    "note",
    "noted",
    "zotero_key",
    "tags",
    "collections",
    "venue_source",
    "cited_by",  # the scholarly graph's (enrich.citations): empty when it is off or knows nothing
    "retracted",
    "open_access_url",
)
# A cell starting with one of these gets a `'`. CR and LF: a CR is written as LF, and a cell that started
# with CR keeps its guard.
FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r", "\n")
_TRIGGERS = frozenset(FORMULA_TRIGGERS)
# What a spreadsheet may skip, or shows as nothing, before a formula's `=`: whitespace (line breaks
# included) and the zero-width characters. A cell whose first other character is a trigger is a formula
# to some importer (one that trims, or the user who deletes what looks like nothing).
_BLANKS = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\xad\u061c\u1680\u180e"
    + "".join(map(chr, range(0x2000, 0x2010)))  # the typographic spaces, zero-width ones, LRM, RLM
    + "\u2028\u2029\u202f\u205f\u2060\u2061\u2062\u2063\u2064\u3000\ufeff"
)
_LOOK_CLOSER = _TRIGGERS | frozenset(_BLANKS)  # the first characters of a cell that may be a formula
# A cell a spreadsheet or a terminal shows as the data it is: no control characters, no bidi overrides,
# no bare CR (which CSV writers do not quote).
_NEEDS_CLEANING = re.compile(f"[\r{DATA_CONTROLS}]")  # what strip_controls drops, and CR
# The paths a `collections` cell lists at most: an item filed in 10,000 collections is 10,000 rows, and
# each row listing every path would make the file quadratic in the library (CHANGELOG: 2.4 GB once).
MAX_COLLECTIONS = 20
MORE = "…"


def render_csv(rows: Sequence[Placement]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(COLUMNS)
    writer.writerows(map(_record, rows))
    return buffer.getvalue()


def _record(row: Placement) -> list[str]:
    values = [
        row.category,
        row.status,
        row.title,
        row.venue,
        row.year,
        row.why,
        "; ".join(row.authors),
        row.doi,
        row.url,
        row.note_link,
        "true" if row.noted else "false",
        row.zotero_key,
        "; ".join(row.tags),
        collections_cell(row.collections),
        row.venue_source,
        row.cited_by,
        "true" if row.retracted else "",
        row.open_access_url,
    ]
    if _NEEDS_CLEANING.search("".join(values)):  # one search a row: most rows need nothing
        values = [one_line_ending(strip_controls(value)) for value in values]
    # A spreadsheet would run `=cmd|…` as a formula; a leading `'` makes it text. The guard looks at the
    # text as it is written, after the cleaning above: a NUL or a bidi override dropped there must not
    # uncover a formula behind the guard's back. Inline, not a call per cell (there are millions): only a
    # cell that starts with a trigger or a blank is looked at closer.
    return ["'" + value if value[:1] in _LOOK_CLOSER and is_formula(value) else value for value in values]


def is_formula(value: str) -> bool:
    """Whether a spreadsheet could read `value` as a formula: it starts with a trigger, or its first
    character past the leading blanks is one."""
    return value[:1] in _TRIGGERS or value.lstrip(_BLANKS)[:1] in _TRIGGERS


def collections_cell(paths: tuple[str, ...]) -> str:
    """The item's collection paths joined with `; `: at most `MAX_COLLECTIONS` of them, then `…`."""
    if len(paths) <= MAX_COLLECTIONS:
        return "; ".join(paths)
    return "; ".join((*paths[:MAX_COLLECTIONS], MORE))


def one_line_ending(value: str) -> str:
    """A bare CR inside a cell is not quoted by CSV writers and would end the row: make it LF."""
    return value.replace("\r\n", "\n").replace("\r", "\n")


def _outputs(given: ExportInput) -> Iterator[Output]:
    yield Output(PurePosixPath(EXPORTER.page), render_csv(given.page.rows))


# A CSV has no links column, and its `note` is the curator's Note link, never one of Zotero's: its rows
# need none of Zotero's links, and the attachments they are made from stay unread.
EXPORTER = Exporter(
    name="csv",
    summary="the same rows as data: one CSV row per placement, the contract's columns",
    page="catalog.csv",
    render=_outputs,
)
