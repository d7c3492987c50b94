"""Requests run a few at a time on threads, with their replies taken in order, and a progress bar."""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from queue import SimpleQueue
from typing import TypeVar

import click

from .policy import RequestPolicy

_R = TypeVar("_R")
_Job = tuple["Future[_R]", Callable[[], _R]]  # a call handed to a request thread, and its future


def run_ahead(
    policy: RequestPolicy,
    calls: Sequence[Callable[[], _R]],
    concurrency: int,
    *,
    size: Callable[[_R], int] = lambda _reply: 1,
    advance: Callable[[int], None] | None = None,
    each: Callable[[int, _R], None] | None = None,
    keep_running: tuple[type[BaseException], ...] = (),
) -> list[_R]:
    """Run the calls at most `concurrency` at a time; the replies in call order, or, with `each`, handed
    to `each(index, reply)` in this thread as they arrive and not kept: then only a few calls run ahead
    of what `each` took, so memory holds a few replies whatever their number. `advance(size(reply))`
    moves a progress bar. The first failure (or one of `each`, or Ctrl-C) is raised at once, and the
    requests still running give up at their next step (`policy.check_given_up`) — except for the
    `keep_running` failures, after which the requests still running finish first."""
    results: dict[int, _R] = {}
    take = each or results.__setitem__
    if len(calls) <= 1 or concurrency == 1:
        for index, call in enumerate(calls):
            reply = call()
            take(index, reply)
            if advance:
                advance(size(reply))
        return [results[index] for index in sorted(results)]
    queue = iter(enumerate(calls))
    running: dict[Future[_R], int] = {}
    jobs: SimpleQueue[_Job[_R] | None] = SimpleQueue()
    # Daemon threads, not a ThreadPoolExecutor, which joins its threads at exit: a request stalled on the
    # network must not keep a failed or interrupted run alive for its read timeout.
    # Set when this run is given up (a failure, Ctrl-C): its requests still running stop at their next
    # step instead of retrying or sleeping on. One per run, so that a later run never revives them.
    given_up = threading.Event()
    workers = [
        threading.Thread(
            target=_work, args=(policy, jobs, given_up), name=f"zotsync-request-{n}", daemon=True
        )
        for n in range(min(concurrency, len(calls)))
    ]
    for worker in workers:
        worker.start()
    # Requests ahead of what `each` took: one at first, one more each time `each` finds no reply waiting,
    # up to two per connection (then a reply waiting for `each` leaves no connection idle). Against a
    # server that answers faster than the caller takes replies (the desktop's local API) a few suffice,
    # and more would only make the threads contend for the interpreter (bench/bench_sync.py); against a
    # distant server all connections are busy within a few round trips.
    ahead, most = 1, 2 * concurrency

    def submit() -> None:
        while len(running) < ahead and (call := next(queue, None)):
            future: Future[_R] = Future()
            running[future] = call[0]
            jobs.put((future, call[1]))

    try:
        submit()
        while running:
            done = {future for future in running if future.done()}
            if not done:
                if ahead < most:
                    ahead += 1
                    submit()
                done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in sorted(done, key=running.__getitem__):
                index = running.pop(future)
                take(index, future.result())
                if advance:
                    advance(size(future.result()))
                submit()
    except keep_running:
        raise  # the requests still running finish first, as after the last reply
    except BaseException:
        given_up.set()  # what still runs ends at its next step, and nothing waits for it
        raise
    finally:
        for _ in workers:
            jobs.put(None)
        if not given_up.is_set():
            for worker in workers:
                worker.join()
    return [results[index] for index in sorted(results)]


def _work(policy: RequestPolicy, jobs: SimpleQueue[_Job[_R] | None], given_up: threading.Event) -> None:
    """A request thread of one run: each call it is given, until it is given None."""
    policy.serve(given_up)
    while (job := jobs.get()) is not None:
        future, call = job
        try:
            future.set_result(call())
        except BaseException as exc:
            future.set_exception(exc)


@contextlib.contextmanager
def progress(total: int, label: str, shown: bool, least: int = 100) -> Iterator[Callable[[int], None]]:
    """A bar on stderr only when `shown` (not -q), on a terminal, and for more than `least` objects."""
    if not (shown and total > least and sys.stderr.isatty()):
        yield lambda _n: None
        return
    with click.progressbar(length=total, label=label, file=sys.stderr) as bar:
        yield bar.update
