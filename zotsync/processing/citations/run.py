"""A run of the scholarly graph (`citations`): which items are due, asking OpenAlex in batches, keeping
the answers."""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, TypeVar

from ... import normalize
from ...facts import item_facts
from ...net import RequestFailed
from ...reconcile.scope import Audience
from ...version import __version__
from .. import Derived, Job, Report
from ..enrich.matching import Query, as_mapping, first_text, judge
from ..enrich.run import HOMEPAGE, MAX_TEXT
from ..enrich.services import (
    MALFORMED,
    ROWS,
    Asking,
    ServiceFailed,
    json_answer,
    limits_for,
    openalex_hits,
    words,
)
from .work import NAME, WORK

log = logging.getLogger("zotsync")

BATCH = 50  # DOIs or ids a request: OpenAlex takes up to 100 values in one filter, and 50 a page by default
MAX_REFERENCES = 2000  # references kept per work: a survey's list, not a pathological one
# What a first answer reads of a work, and what a refresh of its counts reads (its references are kept).
WORK_FIELDS = (
    "id,doi,title,display_name,publication_year,type,primary_location,authorships,"
    "cited_by_count,counts_by_year,is_retracted,best_oa_location,open_access,referenced_works"
)
COUNT_FIELDS = "id,doi,cited_by_count,counts_by_year,is_retracted,best_oa_location,open_access"
CITED_FIELDS = "id,doi,title,display_name,publication_year,cited_by_count"  # a work the list cites
ID_BATCH = 100  # ids a request when only titles are asked: OpenAlex's most values in one filter
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class Ask:
    """What is asked about one item: its DOI (`normalize.doi`: case and prefix folded), else its title."""

    key: str
    doi: str
    query: Query

    @property
    def digest(self) -> str:
        """What the answer was asked from: a changed item is asked again, its references with it."""
        fields = [self.doi, self.query.title, self.query.family, self.query.year]
        return hashlib.sha256(json.dumps(fields, ensure_ascii=False).encode()).hexdigest()[:32]


@dataclass(slots=True)
class Run:
    due: int = 0
    found: int = 0
    not_found: int = 0
    ambiguous: int = 0
    refreshed: int = 0
    waiting: int = 0
    requests: int = 0
    failure: str = ""
    deadline_reached: bool = False

    def report(self) -> Report:
        counts = {
            "due": self.due,
            "found": self.found,
            "refreshed": self.refreshed,
            "ambiguous": self.ambiguous,
            "not_found": self.not_found,
            "waiting": self.waiting,
            "requests": self.requests,
        }
        warnings = []
        if self.failure:
            warnings.append(
                f"citations: openalex: {self.failure}; {self.waiting} items wait for the next run"
            )
        return Report(NAME, counts, warnings)


def graph(job: Job) -> Run:
    """Ask about every item due (all of them with `job.refresh`) that `job.audience` lets leave the
    machine, the page's first, within the deadline; keep each batch's answers as they come."""
    settings = job.config.enrich
    run = Run()
    now = job.now()
    max_age = timedelta(days=settings.citations_max_age_days)
    audience = job.audience.digest if job.audience else ""
    settled = _settled_mark(max_age, audience, job.config.exports.suggestions_page)
    if not job.refresh and not job.dry_run and _still_settled(job.mark(), settled, job.store.generation, now):
        return run
    known = job.results()
    asks = _asks(job)
    forget = [key for key in known if key not in asks and not key.startswith(WORK)]
    stamp = now.isoformat(timespec="seconds")
    new, stale = _due(asks, known, max_age, now, job.refresh)
    run.due = len(new) + len(stale)
    saved = dict(known)

    def save(results: list[Derived]) -> None:
        job.save(results)
        saved.update((result.key, result) for result in results)

    with OpenAlex(settings, min(job.deadline, settings.deadline)) as api:
        by_doi = [ask for ask in new if ask.doi]
        by_title = [ask for ask in new if not ask.doi]
        steps: list[tuple[Sequence[Any], Callable[[Any], int]]] = [
            (list(_chunks(by_doi, BATCH)), lambda batch: _ask_dois(api, batch, stamp, save, run)),
            (by_title, lambda ask: _ask_title(api, ask, stamp, save, run)),
            (list(_chunks(stale, BATCH)), lambda batch: _refresh(api, batch, stamp, save, run)),
        ]
        for units, step in steps:
            for unit in units:
                run.waiting += _take(api, step, unit)
        if job.config.exports.suggestions_page:  # the page lists them with their titles: ask for those

            def titles(batch: list[str]) -> int:
                save(cited_works(api, batch, stamp))
                return len(batch)

            for ids in _chunks(untitled_works(saved), ID_BATCH):
                _take(api, titles, ids)
        run.requests = api.requests
        run.failure = api.failure
        run.deadline_reached = api.deadline_reached or api.out_of_time()
    job.save([], forget)
    for key in forget:
        saved.pop(key, None)
    if run.deadline_reached and not run.failure:
        log.info("citations: enrich.deadline reached; %d items wait for the next run", run.waiting)
    if not run.waiting and not job.dry_run:
        # a cited work's title is never asked again: only the items' answers come due
        due_at = min((_due_at(r, max_age) for k, r in saved.items() if not k.startswith(WORK)), default=None)
        job.remember({**settled, "generation": job.store.generation, "due_at": due_at})
    else:
        job.remember(None)
    return run


def _due(
    asks: Mapping[str, Ask], known: Mapping[str, Derived], max_age: timedelta, now: datetime, refresh: bool
) -> tuple[list[Ask], list[tuple[Ask, Derived]]]:
    """The items to ask about in full (new, changed, not found before and due again), and the works
    whose counts are due again (their references kept)."""
    new: list[Ask] = []
    stale: list[tuple[Ask, Derived]] = []
    for ask in asks.values():
        old = known.get(ask.key)
        if refresh or old is None or old.inputs != ask.digest or not isinstance(old.value, dict):
            new.append(ask)
        elif _expired(old, max_age, now):
            if old.value.get("outcome") == "found" and old.value.get("id"):
                stale.append((ask, old))
            else:
                new.append(ask)  # not found, or ambiguous: asked again in full
    return new, stale


def _take(api: OpenAlex, step: Callable[[Any], int], unit: Any) -> int:
    """Ask about `unit` (a batch, or one item) unless OpenAlex is out of this run; the items left
    waiting for the next run."""
    size = len(unit) if isinstance(unit, list) else 1
    if api.failure or api.out_of_time():
        return size
    try:
        step(unit)
    except (RequestFailed, ServiceFailed) as failure:
        api.fail(failure)
        return size
    except MALFORMED as malformed:
        log.debug("citations: %s: %s", type(malformed).__name__, malformed)
        api.fail(ServiceFailed("openalex answered in a form zotsync cannot read"))
        return size
    return 0


def untitled_works(results: Mapping[str, Derived], minimum: int = 3) -> list[str]:
    """The works cited by at least `minimum` of the items that the library does not hold and that were
    never asked about: what suggestions.md would list without a title."""
    held: set[str] = set()
    counts: dict[str, int] = {}
    for key, result in results.items():
        value = result.value
        if key.startswith(WORK) or not isinstance(value, dict):
            continue
        if value.get("id"):
            held.add(str(value["id"]))
        for work in set(value.get("references") or ()):
            counts[work] = counts.get(work, 0) + 1
    return sorted(
        work
        for work, count in counts.items()
        if count >= minimum and work not in held and WORK + work not in results
    )


def _chunks(values: Sequence[_T], size: int) -> Iterator[list[_T]]:
    for start in range(0, len(values), size):
        yield list(values[start : start + size])


def _asks(job: Job) -> dict[str, Ask]:
    """What may be asked about each paper the audience lets leave the machine, the page's first."""
    library = job.library()
    audience = job.audience(library) if job.audience else Audience()
    items = {item.key: item for item in library.items}
    asks = {}
    for key in audience.order(items):
        item = items[key]
        if not item.is_regular or item.deleted or not item.title.strip():
            continue
        facts = library.facts.get(key) or item_facts(item)
        found = library.found.get(key)
        doi = normalize.doi(normalize.doi_name(facts.doi) or (found.doi if found else ""))
        if (
            "," in doi or "|" in doi
        ):  # would split OpenAlex's filter (`,` between filters, `|` between values)
            doi = ""  # found by its title instead
        year = facts.year or (found.year if found else "")
        query = Query(key, item.item_type, item.title.strip(), item.first_family, year, doi, "", False, ())
        asks[key] = Ask(key, doi, query)
    return asks


def _expired(result: Derived, max_age: timedelta, now: datetime) -> bool:
    return _due_at(result, max_age) <= now.isoformat(timespec="seconds")


def _due_at(result: Derived, max_age: timedelta) -> str:
    try:
        made = datetime.fromisoformat(result.made_at)
    except ValueError:
        return ""  # unreadable: due now
    return (made + max_age).isoformat(timespec="seconds")


def _settled_mark(max_age: timedelta, audience: str, titles: bool) -> dict[str, Any]:
    """What must stay the same for a run to find nothing due without looking (`titles`: the cited
    works' titles are asked for suggestions.md)."""
    what = [max_age.total_seconds(), BATCH, __version__, audience, titles]
    return {"settings": hashlib.sha256(json.dumps(what).encode()).hexdigest()[:16]}


def _still_settled(mark: Any, settled: Mapping[str, Any], generation: int, now: datetime) -> bool:
    if not isinstance(mark, dict) or mark.get("settings") != settled["settings"]:
        return False
    if mark.get("generation") != generation:
        return False
    due_at = mark.get("due_at")
    return due_at is None or (isinstance(due_at, str) and now.isoformat(timespec="seconds") < due_at)


# -- the three questions -----------------------------------------------------------------------------


def _ask_dois(
    api: OpenAlex, batch: list[Ask], stamp: str, save: Callable[[list[Derived]], None], run: Run
) -> int:
    works = api.works("doi", [ask.doi for ask in batch], WORK_FIELDS)
    by_doi = {normalize.doi(first_text(work.get("doi"))): work for work in works}
    results = []
    for ask in batch:
        work = by_doi.get(ask.doi)
        if work is None:
            run.not_found += 1
            results.append(Derived(ask.key, ask.digest, {"outcome": "not_found", "asked": "doi"}, stamp))
        else:
            run.found += 1
            results.append(Derived(ask.key, ask.digest, work_value(work), stamp))
    save(results)
    return len(batch)


def _ask_title(api: OpenAlex, ask: Ask, stamp: str, save: Callable[[list[Derived]], None], run: Run) -> int:
    works = api.search(ask.query.title)
    pairs = [(hit, work) for work in works for hit in openalex_hits([work])]
    verdict = judge(ask.query, [hit for hit, _ in pairs])
    if verdict.outcome == "filled" and verdict.hit is not None:
        work = next(work for hit, work in pairs if hit is verdict.hit)
        value = work_value(work)
        run.found += 1
    else:
        value = {"outcome": verdict.outcome, "asked": "title"}
        value["candidates"] = [hit.candidate() for hit in verdict.candidates]
        if verdict.outcome == "ambiguous":
            run.ambiguous += 1
        else:
            run.not_found += 1
    save([Derived(ask.key, ask.digest, value, stamp)])
    return 1


def _refresh(
    api: OpenAlex,
    batch: list[tuple[Ask, Derived]],
    stamp: str,
    save: Callable[[list[Derived]], None],
    run: Run,
) -> int:
    """Counts, retraction and open copy again; the references kept (they change with the item)."""
    works = api.works("openalex", [str(old.value["id"]) for _, old in batch], COUNT_FIELDS)
    by_id = {openalex_id(first_text(work.get("id"))): work for work in works}
    results = []
    for ask, old in batch:
        work = by_id.get(str(old.value["id"]))
        if work is None:  # merged into another work, or gone: asked again in full next time
            results.append(Derived(ask.key, "", old.value, old.made_at))
            continue
        fresh = work_value(work)
        value = {
            **old.value,
            **{k: fresh[k] for k in ("cited_by", "counts_by_year", "retracted", "open_access_url")},
        }
        results.append(Derived(ask.key, ask.digest, value, stamp))
        run.refreshed += 1
    save(results)
    return len(batch)


def cited_works(api: OpenAlex, ids: list[str], stamp: str) -> list[Derived]:
    """The title, year, DOI and count of the works `ids` (at most ID_BATCH), as kept (`work:W…`); a
    work OpenAlex does not return is kept with no title, so that it is not asked about again."""
    works = api.works("openalex", ids, CITED_FIELDS)
    by_id = {openalex_id(first_text(work.get("id"))): work for work in works}
    kept = []
    for work_id in ids:
        work = by_id.get(work_id, {})
        cited = work.get("cited_by_count")
        value = {
            "outcome": "work",
            "title": (first_text(work.get("title")) or first_text(work.get("display_name")))[:MAX_TEXT],
            "year": str(work.get("publication_year") or "")[:4],
            "doi": normalize.doi_name(first_text(work.get("doi"))),
            "cited_by": cited if isinstance(cited, int) and not isinstance(cited, bool) else None,
        }
        kept.append(Derived(WORK + work_id, "", value, stamp))
    return kept


# -- a work as kept ---------------------------------------------------------------------------------------


def openalex_id(url: str) -> str:
    """`https://openalex.org/W2109415576` → `W2109415576`; "" for anything else."""
    tail = url.rsplit("/", 1)[-1].upper()
    return tail if tail[:1] == "W" and tail[1:].isdigit() else ""


def work_value(work: Mapping[str, Any]) -> dict[str, Any]:
    """What is kept of an OpenAlex work: its id, DOI, title and year, count, references, retraction and
    open copy. Only an http(s) URL is kept as a link: the page shows it as one."""
    cited = work.get("cited_by_count")
    references = work.get("referenced_works") or []
    years = {}
    for entry in work.get("counts_by_year") or []:
        entry = as_mapping(entry)
        year, count = entry.get("year"), entry.get("cited_by_count")
        if isinstance(year, int) and isinstance(count, int):
            years[str(year)] = count
    return {
        "outcome": "found",
        "id": openalex_id(first_text(work.get("id"))),
        "doi": normalize.doi(first_text(work.get("doi"))),
        "title": (first_text(work.get("title")) or first_text(work.get("display_name")))[:MAX_TEXT],
        "cited_by": cited if isinstance(cited, int) and not isinstance(cited, bool) and cited >= 0 else None,
        "counts_by_year": years,
        "retracted": work.get("is_retracted") is True,
        "open_access_url": open_copy(work),
        "references": [ref for raw in references[:MAX_REFERENCES] if (ref := openalex_id(first_text(raw)))],
    }


def open_copy(work: Mapping[str, Any]) -> str:
    """Where a reader without a subscription reads the work: the best open location's PDF or page, else
    the `open_access` URL; "" when it is not open."""
    best = as_mapping(work.get("best_oa_location"))
    oa = as_mapping(work.get("open_access"))
    for url in (first_text(best.get("pdf_url")), first_text(best.get("landing_page_url"))):
        if url.startswith(("https://", "http://")) and best.get("is_oa") is not False:
            return url[: MAX_TEXT * 4]
    url = first_text(oa.get("oa_url"))
    if oa.get("is_oa") is True and url.startswith(("https://", "http://")):
        return url[: MAX_TEXT * 4]
    return ""


# -- OpenAlex --------------------------------------------------------------------------------------------


@dataclass(slots=True)
class OpenAlex:
    """OpenAlex for one run: its pace, the run's deadline, `mailto` for its polite pool; one failure
    leaves it out for the rest of the run."""

    settings: Any
    deadline: float
    failure: str = ""
    deadline_reached: bool = False
    _asking: Asking | None = None
    _policy: Any = None
    _session: Any = None
    _ends: float = field(default=0.0)
    _clock: Any = None

    def __post_init__(self) -> None:
        from ...net import policy as net_policy

        self._clock = net_policy.REAL_CLOCK
        self._ends = self._clock.monotonic() + self.deadline

    def __enter__(self) -> OpenAlex:
        return self

    def __exit__(self, *_: object) -> None:
        if self._session is not None:
            self._session.close()

    @property
    def requests(self) -> int:
        return self._policy.requests if self._policy is not None else 0

    def out_of_time(self) -> bool:
        return self._clock.monotonic() >= self._ends

    def fail(self, failure: Exception) -> None:
        if isinstance(failure, RequestFailed) and failure.kind == "deadline":
            self.deadline_reached = True
            self._ends = self._clock.monotonic()  # nothing more this run, and no fault of OpenAlex's
            return
        from ..enrich.run import _why

        self.failure = _why(failure) if isinstance(failure, RequestFailed) else str(failure)

    def works(self, by: str, values: list[str], fields: str) -> list[Mapping[str, Any]]:
        """The works whose `by` (doi, openalex) is one of `values`, in one request."""
        answer = self._get(
            "/works",
            {"filter": f"{by}:" + "|".join(values), "per-page": len(values), "select": fields},
        )
        results = as_mapping(answer).get("results") or []
        if not isinstance(results, list):
            raise TypeError("results is not a list")
        return [as_mapping(work) for work in results]

    def search(self, title: str) -> list[Mapping[str, Any]]:
        answer = self._get("/works", {"search": words(title), "per-page": ROWS, "select": WORK_FIELDS})
        results = as_mapping(answer).get("results") or []
        if not isinstance(results, list):
            raise TypeError("results is not a list")
        return [as_mapping(work) for work in results]

    def _get(self, path: str, params: Mapping[str, Any]) -> Any:
        return self._client().get(path, params, lambda reply: json_answer(reply, "openalex"))

    def _client(self) -> Asking:
        if self._asking is None:
            import requests  # only a run that asks pays for importing it

            from ...net import HttpClient, RequestPolicy
            from ...net.transports import RequestsTransport

            mailto = self.settings.mailto
            self._session = requests.Session()
            self._policy = RequestPolicy(limits_for("openalex", polite=bool(mailto)))
            self._policy.start(max(0.0, self._ends - self._clock.monotonic()))
            agent = f"zotsync/{__version__} (+{HOMEPAGE}" + (f"; mailto:{mailto})" if mailto else ")")
            self._asking = Asking(
                name="openalex",
                base=self.settings.endpoint("openalex"),
                http=HttpClient(RequestsTransport(self._session), self._policy),
                headers={"User-Agent": agent, "Accept": "application/json"},
                params={"mailto": mailto} if mailto else {},
            )
        return self._asking
