"""One CSV row per placement, columns exactly as the contract names them."""

from __future__ import annotations

import io
from collections.abc import Sequence

import pandas as pd

from ..model import Placement

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
)
FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


def render_csv(rows: Sequence[Placement]) -> str:
    records = [
        (
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
            "; ".join(row.collections),
        )
        for row in rows
    ]
    frame = pd.DataFrame.from_records(records, columns=list(COLUMNS), coerce_float=False).astype(str)
    frame = frame.map(lambda value: one_line_ending(guard_formula(value)))
    buffer = io.StringIO()
    frame.to_csv(buffer, index=False, lineterminator="\n")
    return buffer.getvalue()


def guard_formula(value: str) -> str:
    """A spreadsheet would run `=cmd|…` as a formula; a leading `'` makes it text."""
    return "'" + value if value.startswith(FORMULA_TRIGGERS) else value


def one_line_ending(value: str) -> str:
    """A bare CR inside a cell is not quoted by CSV writers and would end the row: make it LF."""
    return value.replace("\r\n", "\n").replace("\r", "\n")
