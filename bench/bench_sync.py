"""Request budget and wall time of the web source against the fake Zotero server (tests/zotero_server.py).

    python bench/bench_sync.py [--only budget,pull] [--sizes 1000,20000] [--latency 0.02] [--repeat 3]

Budget rows: for each size N it builds a synthetic library of N items (three quarters regular items, the
rest child notes and PDFs, nested collections), serves it on 127.0.0.1, and measures a first sync, a
no-change sync and syncs after k = 10 and k = 500 changes (edits, additions, trashing, permanent
deletions), then a plain pyzotero script, `zot.everything(zot.items())`, against the same server. It checks
the targets of issue 3:

    unchanged sync = 1 request;  k changes <= ceil(k/50) + 4;  first sync <= ceil(N/100) + ceil(C/100) + 3;
    first-sync wall time <= the naive script's.

Goal rows (issue 11): a first `zotsync -q pull` (the real entry point, in this process: source, store and
all) of 20k items + 8k children, against the naive script over the same server:

    at 50 ms per request: zotsync's wall time <= 0.30 x the naive script's (4 connections' floor ~ 0.20);
    at 0 ms: zotsync's client CPU (this process's, all threads) <= 1.5 x the naive script's.

Medians of --repeat runs, the two clients taking turns. The server runs in its own process, as the real
API does, and waits the given latency before each answer. Exits 1 if a target or goal is missed. The
helpers (Remote, KEY, naive_everything, zotsync_pull, first_pull_goals) are importable by other benches.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import multiprocessing
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, TypeVar

import httpx2
from pyzotero import Zotero

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from zotero_server import FakeLibrary, ZoteroServer, synthetic_library

from zotsync.app.pull import pull
from zotsync.config import SourceConfig
from zotsync.sources.web import WebSource
from zotsync.store import Store

KEY = "BenchK3yBenchK3yBenchK3y"


@dataclass
class Row:
    size: int
    phase: str
    requests: int
    target: str
    seconds: float
    ok: bool | None  # None: shown for information, no target
    note: str = ""


T = TypeVar("T")


def best_of(repeat: int, run: Callable[[], T]) -> tuple[float, T]:
    best, result = math.inf, None
    for _ in range(repeat):
        started = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - started)
    assert result is not None
    return best, result


def change(library: FakeLibrary, k: int, round_: int) -> None:
    """k item changes, as a user makes them: mostly edits, some additions, trashing and deletions."""
    keys = sorted(k for k, o in library.items.items() if not o["data"].get("parentItem"))
    keys = keys[round_ * k :] + keys[: round_ * k]  # different items each round
    adds, trashes, deletes = k // 10, k // 10, k // 20
    edits = k - adds - trashes - deletes
    for n, key in enumerate(keys[:edits]):
        library.edit_item(key, title=f"Edited in round {round_} ({n})")
    for key in keys[edits : edits + trashes]:
        library.trash_item(key)
    for key in keys[edits + trashes : edits + trashes + deletes]:
        library.delete_item(key)
    for n in range(adds):
        library.add_item(f"Added in round {round_} ({n})", "preprint")


def serve(conn: Connection, size: int, latency: float, children: int | None = None) -> None:
    """The server process: the fake API over a synthetic library, driven by commands on a pipe. Its own
    process, like the real API, so that the client and the server do not share one interpreter lock."""
    library = FakeLibrary.from_snapshot(synthetic_library(size, children=children))
    with ZoteroServer(library, keys={KEY: None}) as server:
        server.latency = latency
        conn.send((server.url, len(library.collections)))
        while True:
            command, *args = conn.recv()
            if command == "stop":
                return
            if command == "change":
                change(library, *args)
                conn.send(None)
            elif command == "reset":
                server.reset()
                conn.send(None)
            elif command == "requests":
                conn.send(len(server.requests))
            elif command == "versions":
                conn.send({k: o["version"] for k, o in library.items.items()})
            elif command == "latency":
                server.latency = args[0]
                conn.send(None)


class Remote:
    """The fake API in its own process over a synthetic library of `size` items (`children` of them child
    notes and attachments; a quarter when None); call it with a command: "latency", "reset", "requests"…"""

    def __init__(self, size: int, latency: float, children: int | None = None) -> None:
        context = multiprocessing.get_context("spawn")
        self.conn, child = context.Pipe()
        self.process = context.Process(target=serve, args=(child, size, latency, children), daemon=True)
        self.process.start()
        self.url, self.collections = self.conn.recv()

    def __call__(self, command: str, *args: object) -> Any:
        self.conn.send((command, *args))
        return self.conn.recv()

    def stop(self) -> None:
        self.conn.send(("stop",))
        self.process.join(10)


def bench(size: int, repeat: int, latency: float, folder: Path) -> list[Row]:
    server = Remote(size, latency)
    rows: list[Row] = []
    try:
        config = SourceConfig(
            type="web", library_type="user", library_id="1", api_key=KEY, base_url=server.url
        )

        def first_sync() -> WebSource:
            source = WebSource(config)
            source.changes(None)
            source.close()
            return source

        seconds, source = best_of(repeat, first_sync)
        target = math.ceil(size / 100) + math.ceil(server.collections / 100) + 3
        rows.append(
            Row(size, "first sync", source.requests, f"<= {target}", seconds, source.requests <= target)
        )

        store = Store(folder / f"store-{size}.sqlite")
        source = WebSource(config)
        started = time.perf_counter()
        pull(source, store)
        rows.append(
            Row(size, "first pull (+ store)", source.requests, "", time.perf_counter() - started, None)
        )

        def incremental(phase: str, target: int, exact: bool = False) -> None:
            source = WebSource(config)
            started = time.perf_counter()
            pull(source, store)
            seconds = time.perf_counter() - started
            mirrored = store.item_versions() == server("versions")
            ok = (source.requests == target if exact else source.requests <= target) and mirrored
            note = "" if mirrored else "store differs from the library"
            rows.append(
                Row(size, phase, source.requests, f"{'=' if exact else '<='} {target}", seconds, ok, note)
            )
            source.close()

        incremental("no-change sync", 1, exact=True)
        for round_, k in enumerate((10, 500)):
            server("change", k, round_)
            incremental(f"k = {k} changes", math.ceil(k / 50) + 4)
        store.close()

        def naive() -> int:
            client = httpx2.Client(trust_env=False, follow_redirects=True, timeout=60)
            zot = Zotero("1", "user", KEY, client=client)
            zot.endpoint = server.url
            items = zot.everything(zot.items())
            client.close()
            return len(items)

        server("reset")
        naive_seconds, _ = best_of(repeat, naive)
        naive_requests = server("requests") // repeat
        rows.append(Row(size, "naive everything()", naive_requests, "", naive_seconds, None, "the reference"))
        first = rows[0]
        first.ok = first.ok and first.seconds <= naive_seconds
        first.note = f"{first.seconds / naive_seconds:.2f}x the naive time (target <= 1)"
        if latency:
            # The same two reads with no latency at all: pure CPU on both sides, for information.
            server("latency", 0.0)
            seconds, source = best_of(repeat, first_sync)
            server("reset")
            bare_naive, _ = best_of(repeat, naive)
            ratio = f"the sync takes {seconds / bare_naive:.2f}x the naive time"
            note = "(after the changes)"
            rows.append(Row(size, "first sync, 0 latency", source.requests, "", seconds, None, note))
            rows.append(
                Row(size, "naive, 0 latency", server("requests") // repeat, "", bare_naive, None, ratio)
            )
    finally:
        server.stop()
    return rows


# -- issue 11's two web rows: the first pull against a naive pyzotero script -----------------------------
@dataclass
class Goal:
    """One measured goal: zotsync's figure next to the naive script's, their ratio and the bound."""

    name: str
    ours: float
    naive: float
    unit: str
    most: float  # the goal: ours / naive <= most
    note: str = ""

    @property
    def ratio(self) -> float:
        return self.ours / self.naive if self.naive else math.inf

    @property
    def ok(self) -> bool:
        return self.ratio <= self.most

    def line(self) -> str:
        figures = f"{self.ours:7.2f} {self.unit} vs {self.naive:7.2f} {self.unit}"
        verdict = "yes" if self.ok else "NO"
        return (
            f"{self.name:<44} {figures}  {self.ratio:5.2f} x  <= {self.most:.2f} x  {verdict:<3}  {self.note}"
        )


def naive_everything(url: str, key: str = KEY) -> int:
    """What a user would write first: pyzotero's `everything(zot.items())`, one page after the other."""
    client = httpx2.Client(trust_env=False, follow_redirects=True, timeout=60)
    zot = Zotero("1", "user", key, client=client)
    zot.endpoint = url
    items = zot.everything(zot.items())
    client.close()
    return len(items)


def zotsync_pull(url: str, folder: Path, key: str = KEY) -> None:
    """`zotsync -q pull` through the real entry point, in this process, into a new store."""
    from zotsync.cli import main as zotsync_main

    folder.mkdir(parents=True)
    catalogue = Path(__file__).resolve().parent.parent / "seeds" / "catalog.yaml"
    config = folder / "zotsync.yaml"
    config.write_text(
        f"source:\n  type: web\n  library_type: user\n  library_id: '1'\n  api_key: {key}\n"
        f"  base_url: {url}\ncatalog: {json.dumps(str(catalogue))}\nstore: store.sqlite\n",
        encoding="utf-8",
    )
    code = zotsync_main(["-q", "--config", str(config), "pull"])
    if code:
        raise SystemExit(f"zotsync pull failed with exit code {code}")


def measured(run: Callable[[], object]) -> tuple[float, float]:
    """Wall and CPU seconds of one run (CPU: this process's, every thread; the server runs elsewhere)."""
    wall, cpu = time.perf_counter(), time.process_time()
    run()
    return time.perf_counter() - wall, time.process_time() - cpu


@contextlib.contextmanager
def source_phase() -> Iterator[list[tuple[float, float]]]:
    """Records the wall and CPU seconds of every `WebSource.changes` call meanwhile: the part of a pull that
    is the web source's (the rest is writing the store)."""
    phases: list[tuple[float, float]] = []
    original = WebSource.changes

    def timed(self: WebSource, *args: Any) -> Any:
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            return original(self, *args)
        finally:
            phases.append((time.perf_counter() - wall, time.process_time() - cpu))

    WebSource.changes = timed  # type: ignore[method-assign]
    try:
        yield phases
    finally:
        WebSource.changes = original  # type: ignore[method-assign]


def first_pull_goals(
    items: int = 20_000, children: int = 8_000, latency: float = 0.05, repeat: int = 3
) -> list[Goal]:
    """Issue 11's rows: a first pull of `items` items (`children` of them child notes and attachments) at
    `latency` per request, wall time ≤ 0.30 × the naive script's; and at 0 ms, client CPU ≤ 1.5 × the
    naive script's. Medians of `repeat` runs, the two clients taking turns."""
    server = Remote(items, latency, children)
    label = f"{(items - children) // 1000}k items + {children // 1000}k children"
    goals = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for delay in (latency, 0.0):
                server("latency", delay)
                ours, theirs = [], []
                with source_phase() as phases:
                    for n in range(repeat):
                        folder = Path(tmp) / f"{delay}-{n}"
                        ours.append(measured(lambda folder=folder: zotsync_pull(server.url, folder)))
                        theirs.append(measured(lambda: naive_everything(server.url)))
                wall = [statistics.median(w for w, _ in runs) for runs in (ours, theirs)]
                cpu = [statistics.median(c for _, c in runs) for runs in (ours, theirs)]
                source_wall = statistics.median(w for w, _ in phases)
                source_cpu = statistics.median(c for _, c in phases)
                if delay:
                    name = f"first pull, {label}, {delay * 1000:.0f} ms: wall"
                    note = f"source alone {source_wall:.2f} s ({source_wall / wall[1]:.2f} x); floor ≈ 0.20 x"
                    goals.append(Goal(name, wall[0], wall[1], "s", 0.30, note))
                else:
                    name = f"first pull, {label}, 0 ms: client CPU"
                    note = f"source alone {source_cpu:.2f} s CPU ({source_cpu / cpu[1]:.2f} x)"
                    note += f"; wall {wall[0]:.2f} s vs {wall[1]:.2f} s"
                    goals.append(Goal(name, cpu[0], cpu[1], "s", 1.5, note))
    finally:
        server.stop()
    return goals


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes", default="1000", help="comma-separated library sizes (items) for the budget rows"
    )
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs per timing (best for budgets, median for goals)"
    )
    parser.add_argument(
        "--latency",
        type=float,
        default=0.02,
        help="seconds the server waits before each answer in the budget rows, standing for the network "
        "round trip and the API's own work (default 0.02; real api.zotero.org pages take longer)",
    )
    parser.add_argument("--items", type=int, default=20_000, help="first-pull goals: regular items")
    parser.add_argument("--children", type=int, default=8_000, help="first-pull goals: child items")
    parser.add_argument(
        "--goal-latency", type=float, default=0.05, help="first-pull goals: seconds per request"
    )
    parser.add_argument(
        "--only", default="budget,pull", help="budget (request budgets), pull (first-pull goals)"
    )
    args = parser.parse_args(argv)
    only = set(args.only.split(","))
    failed = 0
    if "budget" in only:
        sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
        rows: list[Row] = []
        with tempfile.TemporaryDirectory() as tmp:
            for size in sizes:
                rows += bench(size, args.repeat, args.latency, Path(tmp))
        header = f"{'N':>6}  {'phase':<22} {'requests':>8}  {'target':<8} {'wall s':>8}  {'ok':<4} note"
        print(f"server on 127.0.0.1 in its own process; {args.latency * 1000:.0f} ms latency per request")
        print(header)
        print("-" * len(header))
        for r in rows:
            verdict = "-" if r.ok is None else "yes" if r.ok else "NO"
            figures = f"{r.requests:>8}  {r.target:<8} {r.seconds:>8.3f}"
            print(f"{r.size:>6}  {r.phase:<22} {figures}  {verdict:<4} {r.note}")
        checked = [r for r in rows if r.ok is not None]
        failed += sum(not r.ok for r in checked)
        print(f"\nbudget targets met: {sum(bool(r.ok) for r in checked)} of {len(checked)}\n")
    if "pull" in only:
        goals = first_pull_goals(args.items + args.children, args.children, args.goal_latency, args.repeat)
        print(f"first pull: zotsync -q pull vs naive pyzotero everything(); medians of {args.repeat}")
        for goal in goals:
            print(goal.line())
        failed += sum(not g.ok for g in goals)
        print(f"\ngoals met: {sum(g.ok for g in goals)} of {len(goals)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
