"""The scholarly graph (`enrich.citations`): each paper's citation count, its references, whether it was
retracted and where an open-access copy is, from OpenAlex.

A paper with a DOI is asked in batches of DOIs (`filter=doi:a|b|…`, 50 a request); a paper without one
by its title, under enrichment's matching rules (the title, the first author and the year agree; a near
title that is another paper is never taken). Per item the store keeps the work's OpenAlex id, its count,
its references and when they were asked (`Derived`, digest of what was asked):

- references are kept for as long as the item stays as it is;
- counts, retraction and the open copy are asked again after `enrich.citations_max_age_days`, in batches
  of OpenAlex ids (`filter=openalex:W1|W2|…`), references left out;
- a run with nothing due returns at once (`Job.remember`), without reading the library;
- a service that is down, hangs or answers an HTML page leaves the rest for the next run, with one
  warning line; what was found before stays.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from .work import NAME, work_facts

if TYPE_CHECKING:  # read when a config is loaded: neither the store nor the model load then
    from ...config import Config
    from ...model import Library
    from .. import Derived, Job, Report


class Citations:
    name = NAME  # its settings are keys of the `enrich` section (the contract's `enrich.citations`)

    def enabled(self, config: Config) -> bool:
        return config.enrich.citations

    def run(self, job: Job) -> Report:
        from .run import graph  # the HTTP client loads only when the graph is asked for

        return graph(job).report()

    def attach(self, library: Library, results: Mapping[str, Derived]) -> Library:
        values = {key: r.value for key, r in results.items() if isinstance(r.value, dict)}
        works = {key: w for key, value in values.items() if (w := work_facts(value)) is not None}
        return replace(
            library,
            works={**library.works, **works},
            derived={**library.derived, NAME: values},
        )


PROCESSOR = Citations()
