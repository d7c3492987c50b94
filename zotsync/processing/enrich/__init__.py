"""Enrichment: the venue, year and DOI that Zotero lacks, from DBLP, Crossref, OpenAlex and arXiv.

For each item that lacks one of them (or is a preprint whose published version may be known), the
services are asked in `enrich.services` order until one gives a confident answer (`matching`: the
title, the first author and the year agree): a published venue stops the search, a preprint's goes on
in case a later service knows the published version. The answer, "not found" and "ambiguous" included,
is kept per item in the store (`Derived`), with a digest of what was asked:

- an item whose question is unchanged is not asked again: a published venue is kept for as long as the
  item stays as it is; "not found", "ambiguous" and a preprint's venue are asked again after
  `run.RETRY_AFTER` (a service learns of new papers, a preprint gets published);
- a run with nothing due costs nothing: it notes the store's content generation when it ends with
  nothing left to ask (`Job.remember`), and the next run with the same generation, settings and no
  answer come due returns at once, without reading the library;
- a service that is down, slow, rate-limiting or answering an HTML page is left out for the rest of the
  run, with one warning line; its items wait for the next run, and what was filled before stays.

Only the title, the first author's family name, a DOI or an arXiv id leave the machine, and only for
the items the page's settings let out (`Job.audience`): the page's own first, never one that only
excluded collections or tags hold. Each answer is kept as it arrives. A malformed answer, or a redirect
to another host, leaves its service out of the run like any other failure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .settings import NAME, EnrichConfig

if TYPE_CHECKING:  # read when a config is loaded (its section): neither the store nor the model load then
    from ...config import Config
    from ...model import FoundMetadata, Library
    from .. import Derived, Job, Report

# -- the processor ----------------------------------------------------------------------------------


class Enricher:
    name = NAME
    settings = EnrichConfig  # the `enrich` section

    def enabled(self, config: Config) -> bool:
        return config.enrich.enabled

    def run(self, job: Job) -> Report:
        # The services, their HTTP client and the matching rules load only when enrichment runs: a sync
        # with it off (the default) imports none of them.
        from .run import enrich

        return enrich(job).report()

    def attach(self, library: Library, results: Mapping[str, Derived]) -> Library:
        found = {key: e for key, r in results.items() if (e := enrichment(r.value)) is not None}
        return replace(library, found={**library.found, **found})


PROCESSOR = Enricher()


def enrichment(value: Any) -> FoundMetadata | None:
    """A stored answer as reconcile reads it; None unless a service filled something."""
    from ...model import FoundMetadata

    if not isinstance(value, dict) or value.get("outcome") != "filled":
        return None
    names = ("service", "venue", "venue_key", "venue_year", "year", "doi")
    text = {name: str(value.get(name) or "") for name in names}
    return FoundMetadata(published=bool(value.get("published")), **text)
