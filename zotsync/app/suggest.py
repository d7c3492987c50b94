"""`zotsync suggest`: the works many of the page's papers cite that the library lacks, from the scholarly
graph kept in the store; their titles asked of OpenAlex once, in batches of ids, and kept."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

from ..catalogue import load_catalogue
from ..config import Config
from ..errors import ZotsyncError
from ..export import suggestions as found_here
from ..export.suggestions import WORK, Suggestion
from ..processing.citations.work import NAME
from ..store import Store
from .page import merge
from .stores import open_store

log = logging.getLogger("zotsync")


def suggest(
    config: Config, minimum: int = found_here.DEFAULT_MIN, limit: int = found_here.DEFAULT_LIMIT
) -> tuple[list[Suggestion], str]:
    """The suggestions, best first, and the page's text of them (suggestions.md)."""
    catalogue = load_catalogue(config.catalog, config.path)
    with open_store(config, must_exist=True) as store:
        merged = merge(config, catalogue, store, creators=False, links=False)
        rows, library = merged.page.rows, merged.library
        graph = found_here.graph_of(library)
        if not any(not key.startswith(WORK) for key in graph):
            if config.enrich.citations:  # on, but OpenAlex has not answered yet (offline, refused)
                raise ZotsyncError(
                    "no citation data in the store yet: OpenAlex has answered for no paper (the last "
                    "sync's warning says why); the next zotsync sync asks again"
                )
            raise ZotsyncError(
                "no citation data in the store: set enrich.citations: true and run zotsync sync first"
            )
        found = found_here.suggestions(rows, library, minimum, limit)
        # never asked about (a work OpenAlex did not know is kept with no title, and not asked again)
        missing = [work for work in found_here.unknown_titles(found) if WORK + work not in graph]
        if missing:
            learnt = _ask_titles(config, store, missing)
            for suggestion in found:
                value = learnt.get(suggestion.openalex)
                if value:
                    suggestion.title, suggestion.year = value["title"], value["year"]
                    suggestion.doi = value["doi"]
                    suggestion.cited_by = value["cited_by"] or 0
    titles = {row.zotero_key: row.title for row in rows if row.zotero_key}
    return found, found_here.render(found, merged.page.labels, titles)


def _ask_titles(config: Config, store: Store, ids: list[str]) -> dict[str, dict[str, Any]]:
    """Ask OpenAlex for the works `ids` (batches of 100), keep them in the store; {} when it is out of
    reach (one warning line: the works are listed by their ids)."""
    from ..net import RequestFailed
    from ..processing.citations.run import ID_BATCH, OpenAlex, cited_works
    from ..processing.enrich.services import MALFORMED, ServiceFailed

    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    learnt: dict[str, dict[str, Any]] = {}
    with OpenAlex(config.enrich, config.enrich.deadline) as api:
        for start in range(0, len(ids), ID_BATCH):
            try:
                kept = cited_works(api, ids[start : start + ID_BATCH], stamp)
            except (RequestFailed, ServiceFailed, *MALFORMED) as failure:
                api.fail(failure)
                log.warning("suggest: openalex: %s; the works are listed by their OpenAlex ids", api.failure)
                break
            store.save_derived(NAME, kept)
            learnt.update((k.key.removeprefix(WORK), k.value) for k in kept)
    return learnt
