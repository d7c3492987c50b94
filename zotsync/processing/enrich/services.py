"""The metadata services enrichment asks, each at its real API's paths, and their answers read into `Hit`s.

The wire formats live here and nowhere else: DBLP's search (`/search/publ/api`), Crossref's works
(`/works/{doi}`, `/works?query.bibliographic=`), OpenAlex's works (`/works/doi:{doi}`, `/works?search=`)
and arXiv's Atom feed (`/api/query?id_list=`). Every request goes through `net.HttpClient` under the
service's own `RequestPolicy`: its published rate limit as the pause between two requests, bounded
retries honouring Retry-After, the run's deadline, and a capped body.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import quote

from ...model import is_preprint
from ...net import HttpClient, Limits, Reply
from .matching import Hit, Query, Verdict, as_mapping, first_text, judge, year_of

_T = TypeVar("_T")
ROWS = 5  # hits asked for per search: enough to see a second version of the paper, or a near title

# Seconds between the starts of two requests, as each service publishes its limit: DBLP asks for "at
# least one or two seconds" between requests (its FAQ), Crossref allows 5 requests a second in its
# public pool and 10 in its polite one (with `mailto`), OpenAlex 10 a second, arXiv one every 3 seconds.
INTERVALS = {"dblp": 1.0, "crossref": 0.2, "openalex": 0.1, "arxiv": 3.0}
POLITE_INTERVALS = {"crossref": 0.1}
# A little slower than the limit: requests paced at exactly the limit reach the service with the jitter
# of the network, and a limit counted over a window would refuse the one that arrives early.
PACE_MARGIN = 1.05


def limits_for(service: str, polite: bool) -> Limits:
    """A metadata service is worth less than a sync's time: few retries, short waits, a small body."""
    interval = POLITE_INTERVALS.get(service, INTERVALS[service]) if polite else INTERVALS[service]
    interval *= PACE_MARGIN
    return Limits(
        max_attempts=3,
        connect_attempts=2,
        retry_wait=1.0,
        retry_wait_max=10.0,
        max_server_wait=60.0,  # a longer Retry-After takes the service out of this run, not the sync
        min_interval=interval,
        timeout=10.0,
        request_deadline=30.0,
        max_body=8 * 2**20,
    )


class ServiceFailed(Exception):
    """The service gave no usable answer (an HTML page for JSON, a refusal): it is left out of this run."""


# What reading an answer of the wrong shape raises (`"author": 5` iterated, a title that is a number,
# a feed nested past the recursion limit): the answer is malformed, and the service is left out of the
# run as for an HTML page, never the sync failed or the item recorded as not found.
MALFORMED = (TypeError, ValueError, KeyError, IndexError, AttributeError, RecursionError)


@dataclass(slots=True)
class Asking:
    """One service's requests in one run: its base URL, client, and the parameters every request carries."""

    name: str
    base: str
    http: HttpClient
    headers: Mapping[str, str]
    params: Mapping[str, str] = field(default_factory=dict)  # `mailto` for the polite pools

    def get(self, path: str, params: Mapping[str, Any], parse: Callable[[Reply], _T]) -> _T:
        return self.http.get(
            self.base + path, {**params, **self.params}, self.headers, parse, shown=f"{self.name} {path}"
        )


# -- answers as text -----------------------------------------------------------------------------------


def json_answer(reply: Reply, service: str) -> Any:
    """The JSON body of a 200; None for a 404, 400 or 410 (the service has no answer to this question).
    Anything else it sends (an HTML bot check with 200, a refusal) fails the service for this run."""
    if reply.status in (400, 404, 410):
        return None
    if reply.status != 200:
        raise ServiceFailed(f"{service} answered HTTP {reply.status}")
    text = reply.body.lstrip()
    if text[:1] == b"<":  # DBLP's bot check answers 200 with a page
        raise ServiceFailed(f"{service} answered with an HTML page, not JSON (a bot check?)")
    try:
        answer = json.loads(reply.body)
    except ValueError:
        raise ServiceFailed(f"{service} answered with a body that is not JSON") from None
    except RecursionError:  # `[[[[…` 200,000 deep: the parser recurses
        raise ServiceFailed(f"{service} answered with JSON nested too deep to read") from None
    if not isinstance(answer, dict):  # every answer of these APIs is an object
        raise ServiceFailed(f"{service} answered with JSON that is not an object")
    return answer


def words(title: str) -> str:
    """A title as a search query: its words alone (DBLP and OpenAlex read some punctuation as operators)."""
    return " ".join(re.findall(r"\w+", title))


# -- DBLP -------------------------------------------------------------------------------------------------


def ask_dblp(asking: Asking, query: Query) -> Verdict:
    answer = asking.get(
        "/search/publ/api",
        {"q": words(query.title), "format": "json", "h": ROWS},
        lambda reply: json_answer(reply, "dblp"),
    )
    return judge(query, dblp_hits(answer))


def dblp_hits(answer: Any) -> list[Hit]:
    hits = as_mapping(as_mapping(as_mapping(answer).get("result")).get("hits")).get("hit", [])
    if isinstance(hits, dict):
        hits = [hits]
    found = []
    for raw in hits if isinstance(hits, list) else ():
        info = as_mapping(as_mapping(raw).get("info"))
        authors = as_mapping(info.get("authors")).get("author", [])
        if isinstance(authors, dict):  # one author: an object, not a list
            authors = [authors]
        names = tuple(
            re.sub(r"\s+\d{4}\Z", "", name)  # "Xiaopeng Zhang 0009": DBLP's homonym number
            for author in authors
            if isinstance(authors, list)
            if (name := first_text(as_mapping(author).get("text") if isinstance(author, dict) else author))
        )
        key = first_text(info.get("key"))
        kind, _, rest = key.partition("/")
        stream = rest.partition("/")[0] if kind in ("conf", "journals") else ""
        venue = first_text(info.get("venue"))
        preprint = stream == "corr" or is_preprint("", venue)
        found.append(
            Hit(
                service="dblp",
                title=first_text(info.get("title")),
                authors=names,
                first_family="",
                year=year_of(info.get("year")),
                venue="arXiv" if stream == "corr" else venue,
                venue_key="" if preprint else stream,
                published=not preprint and bool(venue),
                doi=first_text(info.get("doi")),
            )
        )
    return found


# -- Crossref ---------------------------------------------------------------------------------------------


def ask_crossref(asking: Asking, query: Query) -> Verdict:
    if query.doi and not query.doi.casefold().startswith("10.48550/"):  # arXiv DOIs are DataCite's
        work = asking.get(
            f"/works/{quote(query.doi, safe='/')}", {}, lambda reply: json_answer(reply, "crossref")
        )
        if work is not None:
            verdict = judge(query, crossref_hits([as_mapping(work).get("message")]))
            if verdict.outcome == "filled":
                return verdict
    answer = asking.get(
        "/works",
        {"query.bibliographic": " ".join(filter(None, (query.title, query.family))), "rows": ROWS},
        lambda reply: json_answer(reply, "crossref"),
    )
    items = as_mapping(as_mapping(answer).get("message")).get("items", [])
    return judge(query, crossref_hits(items if isinstance(items, list) else []))


def crossref_hits(works: Sequence[Any]) -> list[Hit]:
    found = []
    for raw in works:
        work = as_mapping(raw)
        title = first_text(work.get("title"))
        if not title:  # a "component" (a figure, a table) has none
            continue
        authors = [as_mapping(a) for a in work.get("author") or [] if isinstance(a, dict)]
        names = tuple(
            " ".join(filter(None, (first_text(a.get("given")), first_text(a.get("family")))))
            or first_text(a.get("name"))
            for a in authors
        )
        kind = first_text(work.get("type"))
        venue = first_text(work.get("container-title"))
        venue = venue or first_text(as_mapping(work.get("event")).get("name"))
        if kind == "posted-content":
            venue = first_text(as_mapping((work.get("institution") or [{}])[0]).get("name")) or venue
        preprint = kind == "posted-content" or is_preprint("", venue)
        found.append(
            Hit(
                service="crossref",
                title=title,
                authors=names,
                first_family=first_text(authors[0].get("family")) if authors else "",
                year=_crossref_year(work),
                venue=venue,
                venue_key="",
                published=not preprint and bool(venue),
                doi=first_text(work.get("DOI")),
            )
        )
    return found


def _crossref_year(work: Mapping[str, Any]) -> str:
    for name in ("published", "issued", "published-print", "published-online"):
        parts = as_mapping(work.get(name)).get("date-parts")
        if isinstance(parts, list) and parts and isinstance(parts[0], list) and parts[0]:
            year = year_of(parts[0][0])
            if year:
                return year
    return ""


# -- OpenAlex ---------------------------------------------------------------------------------------------

_OPENALEX_FIELDS = "id,doi,title,display_name,publication_year,type,primary_location,authorships"


def ask_openalex(asking: Asking, query: Query) -> Verdict:
    if query.doi:
        work = asking.get(
            f"/works/doi:{quote(query.doi, safe='/')}",
            {"select": _OPENALEX_FIELDS},
            lambda reply: json_answer(reply, "openalex"),
        )
        if work is not None:
            verdict = judge(query, openalex_hits([work]))
            if verdict.outcome == "filled":
                return verdict
    answer = asking.get(
        "/works",
        {"search": words(query.title), "per-page": ROWS, "select": _OPENALEX_FIELDS},
        lambda reply: json_answer(reply, "openalex"),
    )
    results = as_mapping(answer).get("results", [])
    return judge(query, openalex_hits(results if isinstance(results, list) else []))


def openalex_hits(works: Sequence[Any]) -> list[Hit]:
    found = []
    for raw in works:
        work = as_mapping(raw)
        title = first_text(work.get("title")) or first_text(work.get("display_name"))
        if not title:
            continue
        source = as_mapping(as_mapping(work.get("primary_location")).get("source"))
        venue = first_text(source.get("display_name"))
        preprint = (
            first_text(work.get("type")) == "preprint"
            or first_text(source.get("type")) == "repository"
            or is_preprint("", venue)
        )
        if preprint and "arxiv" in venue.casefold():
            venue = "arXiv"  # "arXiv (Cornell University)"
        names = tuple(
            name
            for a in work.get("authorships") or []
            if (name := first_text(as_mapping(as_mapping(a).get("author")).get("display_name")))
        )
        found.append(
            Hit(
                service="openalex",
                title=title,
                authors=names,
                first_family="",
                year=year_of(work.get("publication_year")),
                venue=venue,
                venue_key="",
                published=not preprint and bool(venue),
                doi=re.sub(r"^https?://(dx\.)?doi\.org/", "", first_text(work.get("doi")), flags=re.I),
            )
        )
    return found


# -- arXiv ------------------------------------------------------------------------------------------------

_ATOM = "{http://www.w3.org/2005/Atom}"
_ARXIV = "{http://arxiv.org/schemas/atom}"


def ask_arxiv(asking: Asking, query: Query) -> Verdict | None:
    if not query.arxiv:
        return None  # arXiv is asked by id only: its search would add nothing DBLP's does not
    feed = asking.get("/api/query", {"id_list": query.arxiv, "max_results": 1}, arxiv_feed)
    return judge(query, arxiv_hits(feed))


def arxiv_feed(reply: Reply) -> ElementTree.Element | None:
    if reply.status in (400, 404):
        return None
    if reply.status != 200:
        raise ServiceFailed(f"arxiv answered HTTP {reply.status}")
    if b"<!DOCTYPE" in reply.body[:1024].upper():  # an Atom feed declares no entities: an HTML page does
        raise ServiceFailed("arxiv answered with an HTML page, not an Atom feed")
    try:
        return ElementTree.fromstring(reply.body)
    except ElementTree.ParseError:
        raise ServiceFailed("arxiv answered with a body that is not an Atom feed") from None


def arxiv_hits(feed: ElementTree.Element | None) -> list[Hit]:
    if feed is None:
        return []
    found = []
    for entry in feed.iter(f"{_ATOM}entry"):
        if "/api/errors" in (entry.findtext(f"{_ATOM}id") or ""):
            continue
        year = year_of(entry.findtext(f"{_ATOM}published"))
        reference = " ".join((entry.findtext(f"{_ARXIV}journal_ref") or "").split())
        authors = entry.iter(f"{_ATOM}author")
        names = tuple(name for author in authors if (name := (author.findtext(f"{_ATOM}name") or "")))
        found.append(
            Hit(
                service="arxiv",
                title=" ".join((entry.findtext(f"{_ATOM}title") or "").split()),
                authors=names,
                first_family="",
                year=year,
                # the authors' own note of where it appeared: free text ("ActaAstron.56:1-50,2006")
                venue=journal_name(reference) if reference else "arXiv",
                venue_key="",
                published=bool(reference),
                doi=(entry.findtext(f"{_ARXIV}doi") or "").strip(),
            )
        )
    return found


def journal_name(reference: str) -> str:
    """The venue of an arXiv `journal_ref` without its volume, pages and year ("ActaAstron.56:1-50,2006"
    → "ActaAstron."; "ISSTA 2020" → "ISSTA"), or the reference itself when that leaves too little."""
    head = re.split(r"[\s,:;(]*\d", reference, maxsplit=1)[0].strip()
    return head if sum(c.isalpha() for c in head) >= 3 else reference


# -- the services, by name ---------------------------------------------------------------------------

# Each service's question about an item; None when it has none to ask (arXiv, for an item without an id).
ASK: dict[str, Callable[[Asking, Query], Verdict | None]] = {
    "dblp": ask_dblp,
    "crossref": ask_crossref,
    "openalex": ask_openalex,
    "arxiv": ask_arxiv,
}
