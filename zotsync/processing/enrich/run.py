"""A run of enrichment (`enrich`): which items are due, asking the services, keeping the answers."""

from __future__ import annotations

import hashlib
import json
import logging
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from ...facts import item_facts
from ...net import HttpClient, RequestFailed, RequestPolicy
from ...net import policy as net_policy
from ...reconcile.scope import Audience
from ...version import __version__
from .. import Derived, Job, Report
from .matching import Hit, Query, Verdict, query_of
from .services import ASK, MALFORMED, Asking, ServiceFailed, limits_for
from .settings import NAME, EnrichConfig

log = logging.getLogger("zotsync")

RETRY_AFTER = timedelta(days=30)  # "not found", "ambiguous" and preprint-only answers are asked again then
HOMEPAGE = "https://github.com/zotsync/zotsync"
MAX_TEXT = 500  # characters of a service's title or venue kept


@dataclass(frozen=True, slots=True)
class Found:
    """What one run decided for one item (the value kept in the store is `value`)."""

    query: Query
    value: dict[str, Any]

    @property
    def outcome(self) -> str:
        return str(self.value["outcome"])


@dataclass(slots=True)
class Run:
    """One run of enrichment: what it found, what it left waiting, and the services that failed."""

    found: list[Found] = field(default_factory=list)
    due: int = 0  # items that were due
    waiting: int = 0  # due items left for the next run (deadline, a service down)
    requests: int = 0
    failures: dict[str, str] = field(default_factory=dict)  # service → why it was left out
    deadline_reached: bool = False

    def report(self) -> Report:
        outcomes = Counter(f.outcome for f in self.found)
        counts = {
            "due": self.due,
            "filled": outcomes["filled"],
            "ambiguous": outcomes["ambiguous"],
            "not_found": outcomes["not_found"],
            "waiting": self.waiting,
            "requests": self.requests,
        }
        warnings = []
        if self.failures:
            why = "; ".join(f"{service}: {reason}" for service, reason in self.failures.items())
            warnings.append(f"enrichment: {why}; {self.waiting} items wait for the next run")
        return Report(NAME, counts, warnings)


# -- a run ------------------------------------------------------------------------------------------------


def enrich(job: Job, on_found: Callable[[Found], None] | None = None) -> Run:
    """Ask about every item due (all of them with `job.refresh`) that `job.audience` lets leave the
    machine, the page's first, within the deadline; keep each answer as it comes (not in a dry run: a
    run stopped half-way keeps what it learnt) and hand it to `on_found`."""
    settings = job.config.enrich
    run = Run()
    now = job.now()
    if not settings.services:
        return run  # nothing to ask
    settled = _settled_mark(settings, job.audience.digest if job.audience else "")
    if not job.refresh and not job.dry_run and _still_settled(job.mark(), settled, job.store.generation, now):
        return run  # nothing is due, known without reading the library
    known = job.results()
    queries = _queries(job, settings)
    forget = [key for key in known if key not in queries]
    due = [q for q in queries.values() if job.refresh or is_due(q, known.get(q.key), settings, now)]
    run.due = len(due)
    stamp = now.isoformat(timespec="seconds")
    saved = dict(known)  # the results as the store holds them after each save

    def save(batch: list[Derived], gone: list[str]) -> None:
        job.save(batch, gone)
        saved.update((result.key, result) for result in batch)
        for key in gone:
            saved.pop(key, None)

    with _Services(settings, min(job.deadline, settings.deadline)) as services:
        for index, query in enumerate(due):
            if services.exhausted():
                run.waiting += len(due) - index
                break
            value = services.ask(query)
            if value is None:  # a service that would have been asked failed: ask again next run
                run.waiting += 1
                continue
            save([Derived(query.key, query.digest, value, stamp)], [])  # one commit: no fsync in WAL
            found = Found(query, value)
            run.found.append(found)
            if on_found:
                on_found(found)
        run.requests = services.requests
        run.failures = dict(services.failures)
        run.deadline_reached = services.deadline_reached or services.out_of_time()
    save([], forget)
    if run.deadline_reached and not run.failures:  # no fault: the rest is for the next run
        log.info("enrichment: enrich.deadline reached; %d items wait for the next run", run.waiting)
    if not run.waiting and not job.dry_run:
        # Nothing left to ask until an answer comes due or the library changes: say so for next time.
        due_at = min((_due_at(r) for r in saved.values() if not _final(r.value)), default=None, key=str)
        job.remember({**settled, "generation": job.store.generation, "due_at": due_at})
    else:
        job.remember(None)
    return run


def _queries(job: Job, settings: EnrichConfig) -> dict[str, Query]:
    """What may be asked about each item the audience lets leave the machine, in its order (the
    page's first), by item key."""
    library = job.library()
    audience = job.audience(library) if job.audience else Audience()
    items = {item.key: item for item in library.items}
    queries = {}
    for key in audience.order(items):
        item = items[key]
        query = query_of(item, library.facts.get(key) or item_facts(item), settings.prefer_published)
        if query is not None:
            queries[key] = query
    return queries


def is_due(query: Query, known: Derived | None, settings: EnrichConfig, now: datetime) -> bool:
    """Whether to ask about `query` now: never asked, asked about something else (the item changed),
    an answer that is not final and has come due, or a service configured since that was not asked."""
    if known is None or known.inputs != query.digest or not isinstance(known.value, dict):
        return True
    if _final(known.value):
        return False
    asked = known.value.get("asked") or {}
    if any(service not in asked for service in settings.services):
        return True
    return _due_at(known) <= now.isoformat(timespec="seconds")


def _final(value: Any) -> bool:
    """An answer kept for as long as the item stays as it is: a published venue was found."""
    return isinstance(value, dict) and value.get("outcome") == "filled" and bool(value.get("published"))


def _due_at(result: Derived) -> str:
    try:
        made = datetime.fromisoformat(result.made_at)
    except ValueError:
        return ""  # unreadable: due now
    return (made + RETRY_AFTER).isoformat(timespec="seconds")


def _settled_mark(settings: EnrichConfig, audience: str) -> dict[str, Any]:
    """What must stay the same for a run to find nothing due without looking: the settings that decide
    what is due (`audience`: the digest of those that decide who may be asked about), and this code."""
    what = [settings.services, settings.prefer_published, RETRY_AFTER.total_seconds(), __version__]
    what.append(audience)
    return {"settings": hashlib.sha256(json.dumps(what).encode()).hexdigest()[:16]}


def _still_settled(mark: Any, settled: Mapping[str, Any], generation: int, now: datetime) -> bool:
    """Whether the last run left nothing to ask that could have come due since: the library and the
    settings as they were, and no answer due again yet."""
    if not isinstance(mark, dict) or mark.get("settings") != settled["settings"]:
        return False
    if mark.get("generation") != generation:
        return False
    due_at = mark.get("due_at")
    return due_at is None or (isinstance(due_at, str) and now.isoformat(timespec="seconds") < due_at)


# -- asking the services about one item ------------------------------------------------------------


class _Services:
    """The services of one run, each with its own policy (its rate limit, the run's deadline), sharing
    one requests session; a service that fails is left out for the rest of the run."""

    def __init__(self, settings: EnrichConfig, deadline: float) -> None:
        self.settings = settings
        self.failures: dict[str, str] = {}
        self.out_of_time_for: set[str] = set()  # services whose next request would end past the deadline
        self.deadline_reached = False
        self._asking: dict[str, Asking] = {}
        self._policies: list[RequestPolicy] = []
        self._session: Any = None
        self._clock = net_policy.REAL_CLOCK  # the clock every policy of the run uses (tests fake it)
        self._ends = self._clock.monotonic() + deadline

    def __enter__(self) -> _Services:
        return self

    def __exit__(self, *_: object) -> None:
        if self._session is not None:
            self._session.close()

    @property
    def requests(self) -> int:
        return sum(policy.requests for policy in self._policies)

    def out_of_time(self) -> bool:
        return self._clock.monotonic() >= self._ends

    def exhausted(self) -> bool:
        """Nothing more can be asked in this run: the deadline passed, or every service failed or would
        end past it."""
        done = set(self.failures) | self.out_of_time_for
        return self.out_of_time() or done >= set(self.settings.services)

    def ask(self, query: Query) -> dict[str, Any] | None:
        """The answer about `query` to keep; None when a service that would have been asked failed (then
        nothing is kept, and the item is asked again next run) unless another one filled it."""
        asked: dict[str, str] = {}
        candidates: list[Hit] = []
        fallback: Verdict | None = None  # a preprint's venue, while a published one may come
        complete = True
        for service in self.settings.services:
            if service in self.failures or service in self.out_of_time_for or self.out_of_time():
                complete = False
                continue
            try:
                verdict = ASK[service](self._asking_for(service), query)
            except (RequestFailed, ServiceFailed) as failure:
                self._fail(service, failure)
                complete = False
                continue
            except MALFORMED as malformed:
                log.debug("enrichment: %s: %s: %s", service, type(malformed).__name__, malformed)
                self._fail(service, ServiceFailed(f"{service} answered in a form zotsync cannot read"))
                complete = False
                continue
            if verdict is None:
                asked[service] = "not_asked"  # it had no question to answer
                continue
            asked[service] = verdict.outcome
            if verdict.outcome == "filled" and verdict.hit is not None:
                if verdict.hit.published:
                    return _value(query, verdict.hit, asked, candidates)
                asked[service] = "preprint"  # it knows the paper, as a preprint only
                fallback = fallback or verdict
            candidates += verdict.candidates
        if not complete:
            return None
        if fallback is not None and fallback.hit is not None and _fills(query, fallback.hit):
            asked[fallback.hit.service] = "filled"
            return _value(query, fallback.hit, asked, candidates)
        outcome = "ambiguous" if candidates else "not_found"
        return {"outcome": outcome, "asked": asked, "candidates": [c.candidate() for c in candidates[:5]]}

    def _asking_for(self, service: str) -> Asking:
        asking = self._asking.get(service)
        if asking is None:
            import requests  # only a run that asks a service pays for importing it

            from ...net.transports import RequestsTransport

            if self._session is None:
                self._session = requests.Session()
            mailto = self.settings.mailto
            policy = RequestPolicy(limits_for(service, polite=bool(mailto)))
            policy.start(max(0.0, self._ends - self._clock.monotonic()))
            self._policies.append(policy)
            agent = f"zotsync/{__version__} (+{HOMEPAGE}" + (f"; mailto:{mailto})" if mailto else ")")
            asking = self._asking[service] = Asking(
                name=service,
                base=self.settings.endpoint(service),
                http=HttpClient(RequestsTransport(self._session), policy),
                headers={"User-Agent": agent, "Accept": "application/json, application/atom+xml;q=0.9"},
                params={"mailto": mailto} if mailto and service in ("crossref", "openalex") else {},
            )
        return asking

    def _fail(self, service: str, failure: Exception) -> None:
        if isinstance(failure, RequestFailed) and failure.kind == "deadline":
            # The next request (its pace, a backoff, a Retry-After) would end past the run's deadline:
            # the service is done for this run, and that is no fault of its own.
            self.out_of_time_for.add(service)
            self.deadline_reached = True
            return
        reason = _why(failure) if isinstance(failure, RequestFailed) else str(failure)
        self.failures[service] = reason
        log.debug("enrichment: %s left out of this run: %s", service, reason)


def _why(failure: RequestFailed) -> str:
    """A failure in a few words: a connection error's own text quotes the request (and so a title)."""
    if failure.kind == "unreachable":
        return f"cannot be reached (no connection could be made, {failure.after})"
    if failure.reason.startswith(("ConnectError", "connection failed")):
        return f"the connection failed {failure.after}"
    if failure.kind == "wait":  # the pull's advice ("nothing was stored, try again …") is not ours
        return failure.reason.partition("; nothing was stored")[0]
    return failure.reason


def _fills(query: Query, hit: Hit) -> bool:
    """Whether a preprint's answer gives the item anything: a venue, a year or a DOI it lacks."""
    return (
        "venue" in query.needs
        or ("year" in query.needs and bool(hit.year))
        or ("doi" in query.needs and bool(hit.doi))
    )


def _same_version(query: Query, hit: Hit) -> bool:
    """Whether `hit` is the version of the paper the item's row shows, whose DOI it may take: a published
    item's published version; a preprint's preprint, or its published version when the row shows that."""
    if not query.preprint:
        return hit.published
    return not hit.published or "published" in query.needs


def _value(query: Query, hit: Hit, asked: Mapping[str, str], candidates: list[Hit]) -> dict[str, Any]:
    from ...normalize import doi_name

    return {
        "outcome": "filled",
        "service": hit.service,
        "title": hit.title[:MAX_TEXT],
        "venue": hit.venue[:MAX_TEXT],  # a service's text reaches the page: never a page of its own
        "venue_key": hit.venue_key,
        "venue_year": hit.year,
        "published": hit.published,
        "year": hit.year if "year" in query.needs else "",
        "doi": doi_name(hit.doi) if "doi" in query.needs and _same_version(query, hit) else "",
        "asked": dict(asked),
        "candidates": [c.candidate() for c in candidates[:5]],
    }
