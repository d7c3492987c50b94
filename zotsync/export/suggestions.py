"""What the list is missing: the works that many of the page's papers cite and the library lacks (the
scholarly graph's references, `enrich.citations`), best first; and `suggestions.md`, their page.

The graph is what the `citations` processor keeps (`Library.derived["citations"]`): per item key its
work (`id`, `doi`, `references`), and per cited work it was asked about (`work:W…`) its title, year, DOI
and count. Pure: it reads what it is given.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from .. import normalize
from ..labels import Labels
from ..model import Library, Placement
from .mdtext import inline, line, link

GRAPH = "citations"  # the processor whose results these are (zotsync/processing/citations)
WORK = "work:"  # the key prefix of a cited work's record among them
DEFAULT_MIN = 3
DEFAULT_LIMIT = 20
PAGE = "suggestions.md"


@dataclass(slots=True)
class Suggestion:
    openalex: str  # W…
    title: str  # empty while OpenAlex was not asked about it
    year: str
    doi: str
    cited_by_list: int  # how many of the page's papers cite it
    citing: list[str] = field(default_factory=list)  # their Zotero keys, in page order
    cited_by: int = 0  # how many works cite it, OpenAlex says

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def graph_of(library: Library) -> Mapping[str, Any]:
    graph: Mapping[str, Any] = library.derived.get(GRAPH, {})
    return graph


def page_papers(rows: Sequence[Placement]) -> list[str]:
    """The page's Zotero items, once each, in page order."""
    return list(dict.fromkeys(row.zotero_key for row in rows if row.zotero_key))


def cited(rows: Sequence[Placement], graph: Mapping[str, Any]) -> dict[str, list[str]]:
    """Each work the page's papers cite → the papers citing it (a paper's references counted once)."""
    citing: dict[str, list[str]] = defaultdict(list)
    for key in page_papers(rows):
        value = graph.get(key)
        if isinstance(value, dict) and isinstance(value.get("references"), list):
            for work in dict.fromkeys(value["references"]):
                citing[work].append(key)
    return citing


def candidates(
    rows: Sequence[Placement], library: Library, minimum: int = DEFAULT_MIN
) -> tuple[dict[str, list[str]], set[str]]:
    """The works cited by at least `minimum` of the page's papers that the library does not hold (by its
    OpenAlex id or DOI), with their citing papers; and the DOIs the library holds."""
    graph = graph_of(library)
    held = {
        str(v["id"])
        for k, v in graph.items()
        if not k.startswith(WORK) and isinstance(v, dict) and v.get("id")
    }
    dois = {fact.doi_key for fact in library.facts.values() if fact.doi_key}
    wanted = {
        work: keys for work, keys in cited(rows, graph).items() if len(keys) >= minimum and work not in held
    }
    return wanted, dois


def suggestions(
    rows: Sequence[Placement], library: Library, minimum: int = DEFAULT_MIN, limit: int = DEFAULT_LIMIT
) -> list[Suggestion]:
    """The suggestions, best first: most of the page's papers citing, then most cited, then by title."""
    graph = graph_of(library)
    wanted, dois = candidates(rows, library, minimum)
    titles = {fact.title_key for fact in library.facts.values() if fact.title_key}
    found = []
    for work, keys in wanted.items():
        known = graph.get(WORK + work)
        known = known if isinstance(known, dict) else {}
        doi = str(known.get("doi") or "")
        title = str(known.get("title") or "")
        if (doi and normalize.doi(doi) in dois) or (title and normalize.title(title) in titles):
            continue  # the library holds it, though OpenAlex did not know the library's copy
        count = known.get("cited_by")
        found.append(
            Suggestion(
                openalex=work,
                title=title,
                year=str(known.get("year") or ""),
                doi=doi,
                cited_by_list=len(keys),
                citing=list(keys),
                cited_by=count if isinstance(count, int) else 0,
            )
        )
    found.sort(key=lambda s: (-s.cited_by_list, -s.cited_by, s.title.casefold() or "~", s.openalex))
    return found[:limit]


def unknown_titles(found: Iterable[Suggestion]) -> list[str]:
    return [s.openalex for s in found if not s.title]


def render(found: Sequence[Suggestion], labels: Labels, titles: Mapping[str, str]) -> str:
    """suggestions.md: one line per work, best first; `titles` maps a citing paper's key to its title."""
    out = [f"# {line(labels.suggest_title)}", ""]
    for s in found:
        doi = normalize.doi_name(s.doi)
        where = f"https://doi.org/{doi}" if doi else f"https://openalex.org/{s.openalex}"
        year = f" ({inline(s.year)})" if s.year else ""
        by = "; ".join(inline(titles.get(key, key)) for key in s.citing[:5])
        more = f"; +{len(s.citing) - 5}" if len(s.citing) > 5 else ""
        out.append(f"- **{s.cited_by_list}** · {link(s.title or s.openalex, where)}{year} — {by}{more}")
    return "\n".join(out) + "\n"


def format_text(found: Sequence[Suggestion]) -> str:
    lines = []
    for s in found:
        year = f" ({s.year})" if s.year else ""
        doi = f" doi:{s.doi}" if s.doi else ""
        lines.append(f"{s.cited_by_list:>3}  {s.title or '(title unknown)'}{year}{doi} [{s.openalex}]")
    return "\n".join(lines)


def page_of(rows: Sequence[Placement], library: Library, labels: Labels) -> str:
    """suggestions.md as the exports write it: from what the store holds, asking nothing."""
    titles = {row.zotero_key: row.title for row in rows if row.zotero_key}
    return render(suggestions(rows, library), labels, titles)
