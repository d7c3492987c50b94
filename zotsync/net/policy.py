"""How zotsync asks a service: paced, retried with backoff, bounded by a deadline, on a clock tests can fake.

A `RequestPolicy` is one run of requests to one service (a pull from the Zotero API, a round of metadata
lookups). It owns what every request of that run shares: the time before which no request may start (a
service's rate limit, `Backoff`, `Retry-After`), the run's deadline, whether the run was given up (a
request thread stops at its next step), the retry rule, and the count of requests sent. The transport
and the protocol are the caller's (see `client.HttpClient`).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol, TypeVar

import tenacity

log = logging.getLogger("zotsync.net")

_T = TypeVar("_T")


class Clock(Protocol):
    """Time as a policy sees it: injectable, so retry and deadline tests run on fake time."""

    def monotonic(self) -> float: ...

    def now(self) -> datetime:
        """Wall-clock time (UTC), for `Retry-After` given as an HTTP date."""
        ...

    def sleep(self, seconds: float, interrupt: threading.Event | None = None) -> bool:
        """Wait `seconds`; True when `interrupt` was set meanwhile (the wait then ends early)."""
        ...


class RealClock:
    def monotonic(self) -> float:
        return time.monotonic()

    def now(self) -> datetime:
        return datetime.now(UTC)

    def sleep(self, seconds: float, interrupt: threading.Event | None = None) -> bool:
        if interrupt is None:
            time.sleep(seconds)  # Ctrl-C ends a sleep on every platform; on Windows, not a lock's wait
            return False
        return interrupt.wait(seconds)


REAL_CLOCK: Clock = RealClock()


class Transient(Exception):
    """A failure worth retrying: 429, 5xx, a dropped connection, a timeout, a truncated or malformed body."""

    def __init__(self, reason: str, retry_after: float | None = None, unreachable: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after
        self.unreachable = unreachable  # no connection could be made at all
        self.attempts = 1  # set by the retry rule as it goes


class GivenUp(Exception):
    """The run was given up while this request ran: it ends here (the caller has the failure that counts)."""


class RequestFailed(Exception):
    """A request failed for good (retries spent, a wait too long, the deadline passed); `reason` says why
    in a few words and `kind` which of those it was, so each caller can word its own line."""

    def __init__(self, kind: str, reason: str, attempts: int = 1) -> None:
        super().__init__(reason)
        self.kind = kind  # "unreachable" | "failed" | "deadline" | "wait" | "body" | "invalid"
        self.reason = reason
        self.attempts = attempts
        self.shown = ""  # the request it is about (`GET /path`), when one is

    @property
    def after(self) -> str:
        return f"after {self.attempts} attempts" if self.attempts > 1 else "at the first attempt"


@dataclass(frozen=True, slots=True)
class Limits:
    """The rules of one service; every figure is in seconds unless named otherwise."""

    max_attempts: int = 5  # per request, including the first
    connect_attempts: int = 3  # while the host has never answered: an unreachable host is said so quickly
    retry_wait: float = 1.0  # base of the exponential backoff; also the jitter's range
    retry_wait_max: float = 60.0
    max_server_wait: float = 300.0  # a server asking for a longer pause fails the run at once
    min_interval: float = 0.0  # between the starts of two requests: a service's published rate limit
    timeout: float = 30.0  # for connecting and for each read
    request_deadline: float = 120.0  # for one whole response, body included: a dripping body cannot stall
    max_body: int = 64 * 2**20  # bytes of one decompressed response


class RequestPolicy:
    def __init__(self, limits: Limits = Limits(), clock: Clock | None = None) -> None:
        self.limits = limits
        self.clock = clock or REAL_CLOCK
        self.requests = 0  # requests sent, retries included: tests and benchmarks check budgets
        self.answered = False  # whether the host ever answered: one that never did is not retried long
        self.deadline = math.inf  # seconds the run may take (`start`)
        self._ends = math.inf  # monotonic time by which the run must be done
        self._not_before = 0.0  # monotonic time before which no request may start
        self._last_start = -math.inf
        self._lock = threading.Lock()
        self._thread = threading.local()  # each request thread's `given_up` (see `serve`)

    # -- the run ----------------------------------------------------------------------------------
    def start(self, deadline: float) -> None:
        """A new run of requests that must end within `deadline` seconds."""
        self.deadline = deadline
        self._ends = self.clock.monotonic() + deadline

    def left(self) -> float:
        return self._ends - self.clock.monotonic()

    def serve(self, given_up: threading.Event) -> None:
        """Mark the calling thread as a request thread of a run that `given_up` ends early."""
        self._thread.given_up = given_up

    def given_up(self) -> threading.Event | None:
        """In a request thread, the Event set when its run is given up; None in any other thread."""
        return getattr(self._thread, "given_up", None)

    def check_given_up(self) -> None:
        """In a request thread whose run was given up: end the request here."""
        given_up = self.given_up()
        if given_up is not None and given_up.is_set():
            raise GivenUp()

    def check_deadline(self) -> None:
        if self.clock.monotonic() > self._ends:
            raise self.deadline_passed()

    def deadline_passed(self) -> RequestFailed:
        return RequestFailed("deadline", f"the run did not finish within its deadline of {self.deadline:g} s")

    # -- waiting ----------------------------------------------------------------------------------
    def pause(self, seconds: float) -> None:
        """Sleep, unless that would pass the run's deadline: then fail now rather than later. A request
        thread wakes when its run is given up, and ends its request."""
        if self.clock.monotonic() + seconds > self._ends:
            raise self.deadline_passed()
        if seconds <= 0:
            return
        if self.clock.sleep(seconds, self.given_up()):
            raise GivenUp()

    def pace(self) -> None:
        """Wait until a request may start: after the server's last asked-for pause and, with a rate
        limit, `min_interval` after the start before."""
        with self._lock:
            now = self.clock.monotonic()
            start = max(now, self._not_before, self._last_start + self.limits.min_interval)
            self._last_start = start  # claimed now, so concurrent requests queue up one interval apart
        if start > now:
            self.pause(start - now)

    def count(self) -> None:
        """One more request is being sent."""
        with self._lock:
            self.requests += 1

    def hold(self, seconds: float, header: str) -> None:
        """No request before `seconds` from now; a wait longer than we would ever sit through fails now,
        saying when to try again (a cron run that sleeps for a day keeps the lock for a day)."""
        if seconds > self.limits.max_server_wait:
            raise RequestFailed("wait", self._too_long(seconds, header))
        with self._lock:
            self._not_before = max(self._not_before, self.clock.monotonic() + seconds)

    def _too_long(self, seconds: float, header: str) -> str:
        if seconds < 10 * 365 * 86400:
            until = self.clock.now() + timedelta(seconds=seconds)
            asked, retry = f"{seconds:.0f} s", f"after {until:%Y-%m-%d %H:%M} UTC"
        else:
            asked, retry = "without end", "later"
        most = self.limits.max_server_wait
        return (
            f"the server asks to wait {asked} ({header}), longer than zotsync waits ({most:.0f} s); "
            f"nothing was stored, try again {retry}"
        )

    # -- retrying ---------------------------------------------------------------------------------
    def retrying(self, attempt: Callable[[], _T], describe: str = "") -> _T:
        """`attempt()` until it returns, retrying a `Transient` failure with backoff (or the server's
        Retry-After) within the limits and the deadline; a failure that stays is a `RequestFailed`."""
        retrying = tenacity.Retrying(
            stop=self._stop,
            wait=self._wait,
            retry=tenacity.retry_if_exception_type(Transient),
            sleep=self.pause,
            before_sleep=lambda state: self._log_retry(state, describe),
            reraise=True,
        )
        try:
            return retrying(attempt)
        except Transient as exc:
            kind = "unreachable" if self._never_reached(exc) else "failed"
            raise RequestFailed(kind, exc.reason, exc.attempts) from None

    def _never_reached(self, exc: BaseException | None) -> bool:
        """A failure to connect to a host that has not answered once in this run: down or mistyped."""
        return isinstance(exc, Transient) and exc.unreachable and not self.answered

    def _stop(self, state: tenacity.RetryCallState) -> bool:
        exc = state.outcome.exception() if state.outcome else None
        limits = self.limits
        if isinstance(exc, Transient):
            exc.attempts = state.attempt_number
            if self._never_reached(exc):
                return state.attempt_number >= min(limits.connect_attempts, limits.max_attempts)
        return state.attempt_number >= limits.max_attempts

    def _wait(self, state: tenacity.RetryCallState) -> float:
        """The server's Retry-After when it gave one, else exponential backoff with jitter (short while
        the host has never answered: it is likely down or mistyped, not busy)."""
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, Transient) and exc.retry_after is not None:
            return exc.retry_after
        limits = self.limits
        base = limits.retry_wait / 4 if self._never_reached(exc) else limits.retry_wait
        backoff = tenacity.wait_exponential_jitter(multiplier=base, max=limits.retry_wait_max, jitter=base)
        return float(backoff(state))

    def _log_retry(self, state: tenacity.RetryCallState, describe: str) -> None:
        exc = state.outcome.exception() if state.outcome else None
        pause = state.next_action.sleep if state.next_action else 0.0
        # Debug, not info: a failure must end in one line on stderr, and a success needs no commentary.
        log.debug(
            "%s%s; retrying in %.2f s (attempt %d of %d)",
            f"{describe}: " if describe else "",
            exc.reason if isinstance(exc, Transient) else exc,
            pause,
            state.attempt_number + 1,
            self.limits.max_attempts,
        )
