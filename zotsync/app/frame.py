"""The page as a pandas DataFrame: for notebooks and analysis (the Python API's `catalogue_frame`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..catalogue import load_catalogue
from ..config import Config
from ..gcpause import bulk_phase
from .page import merge
from .stores import open_store

if TYPE_CHECKING:
    import pandas


def catalogue_frame(config: Config) -> pandas.DataFrame:
    import pandas

    catalogue = load_catalogue(config.catalog, config.path)
    with open_store(config, readonly=True) as store, bulk_phase():
        rows = merge(config, catalogue, store, creators=False, links=False, notes_plan=True).page.rows
        columns: dict[str, list[Any]] = {
            "category": [r.category for r in rows],
            "status": [r.status for r in rows],
            "title": [r.title for r in rows],
            "venue": [r.venue for r in rows],
            "year": [int(r.year) if r.year else None for r in rows],
            "why": [r.why for r in rows],
            "authors": [list(r.authors) for r in rows],
            "doi": [r.doi for r in rows],
            "url": [r.url for r in rows],
            "note": [r.note_link for r in rows],
            "noted": [r.noted for r in rows],
            "zotero_key": [r.zotero_key for r in rows],
            "tags": [list(r.tags) for r in rows],
            "collections": [list(r.collections) for r in rows],
            "venue_source": [r.venue_source for r in rows],
            "cited_by": [int(r.cited_by) if r.cited_by else None for r in rows],
            "retracted": [r.retracted for r in rows],
            "open_access_url": [r.open_access_url for r in rows],
        }
    frame = pandas.DataFrame(columns)
    frame["year"] = frame["year"].astype("Int64")
    frame["cited_by"] = frame["cited_by"].astype("Int64")
    return frame
