"""Enrichment at scale: 10,000 items without a venue against fake metadata services that answer after
50 ms and allow 10 requests a second each.

    python bench/bench_enrich.py [--items 10000] [--deadline 120] [--quick]

The library is a snapshot of conference papers with a title, a first author and a year but no venue and
no DOI. The fake services (tests/metadata_server.py, on 127.0.0.1) know 80 % of them on DBLP and 10 % on
Crossref alone; 10 % are known nowhere (those are asked at DBLP, Crossref and OpenAlex: arXiv only
knows papers by id). Each service refuses a request that comes sooner than its limit allows (429 with
Retry-After), so a client that does not pace itself shows up as refused requests.

zotsync is told the services' limit (10 a second each) instead of the real services' published ones
(DBLP asks for one a second), and runs `sync` in this process with `enrich.deadline` as given, again and
again until nothing is due, as cron would. Then it measures, each beside its goal:

- requests per item over those first runs (≤ 2 on average: the first confident hit stops the search);
- each run's wall time (≤ the deadline + 10 s: a run ends by its deadline, the rest waits), and the
  time all of them took against what the rate limit allows (requests ÷ 10 a second);
- requests the services refused for coming too fast (0);
- requests on an unchanged run (0);
- an unchanged `zotsync -q sync` with enrichment on, run as its own process, median of 3 (≤ 1 s).

Exits 1 when a goal is missed. A full run takes about 20 minutes (the rate limit's ~1,200 s); `--quick`
does 1,000 items with a 30 s deadline.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from metadata_server import MetadataServer, Paper  # noqa: E402

ALPHABET = "23456789ABCDEFGHIJKLMNPQRSTUVWXYZ"
TOPICS = ("tensor", "kernel", "fusion", "graph", "compiler", "tile", "warp", "memory", "schedule", "sparse")
RATE = 10.0  # requests a second each fake service allows
LATENCY = 0.05


def key_of(number: int) -> str:
    digits = [ALPHABET[number // len(ALPHABET) ** power % len(ALPHABET)] for power in range(7)]
    return "E" + "".join(reversed(digits))


def word_of(number: int) -> str:
    """A made-up word, different for every number: each title names its paper."""
    letters = "bcdfghjklmnpqrstvwxz"
    word = ""
    while True:
        number, digit = divmod(number, len(letters))
        word += letters[digit] + "aeiou"[number % 5]
        if not number:
            return word


def library(items: int) -> tuple[list[dict], list[Paper]]:
    objects, papers = [], []
    for n in range(items):
        # four words of its own among seven: no two titles share most of their words
        own = " ".join(word_of(n * 4 + k) for k in range(1, 4))
        title = f"{word_of(n * 4).title()}: {TOPICS[n % 10].title()} {TOPICS[n // 10 % 10]} for {own}"
        family, year = f"Zh{word_of(n * 3 + 1)}", str(2015 + n % 10)
        data = {
            "key": key_of(n),
            "version": 1,
            "itemType": "conferencePaper",
            "title": title,
            "creators": [{"creatorType": "author", "firstName": "Lin", "lastName": family}],
            "date": year,
            "tags": [],
            "collections": [],
            "relations": {},
        }
        objects.append({"key": data["key"], "version": 1, "library": {"type": "user", "id": 1}, "data": data})
        share = n % 10
        if share == 9:
            continue  # known nowhere
        papers.append(
            Paper(
                title,
                (f"Lin {family}", "Ada Lovelace"),
                year,
                ("OSDI", "SOSP", "PLDI", "ASPLOS", "MLSys")[n % 5],
                dblp=f"conf/{('osdi', 'sosp', 'pldi', 'asplos', 'mlsys')[n % 5]}/{family}{year[2:]}",
                doi=f"10.5555/{n}",
                known_by=("crossref",) if share == 8 else ("dblp", "crossref", "openalex"),
            )
        )
    return objects, papers


def prepare(folder: Path, items: int, server: MetadataServer, deadline: float) -> Path:
    objects, papers = library(items)
    server.add(*papers)
    (folder / "library.json").write_text(json.dumps(objects), encoding="utf-8")
    (folder / "catalog.yaml").write_text("title: Bench\ncategories: []\n", encoding="utf-8")
    config = folder / "zotsync.yaml"
    config.write_text(
        "source: {type: snapshot, path: library.json}\ncatalog: catalog.yaml\nstore: store.sqlite\n"
        "exports: {dir: exports, formats: [md, csv]}\n"
        f"enrich:\n  enabled: true\n  deadline: {deadline}\n  endpoints: {json.dumps(server.endpoints())}\n",
        encoding="utf-8",
    )
    return config


def console_script() -> list[str]:
    script = Path(sys.executable).with_name("zotsync")
    return [str(script)] if script.exists() else [sys.executable, "-m", "zotsync"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--deadline", type=float, default=120.0, help="enrich.deadline, seconds")
    parser.add_argument("--quick", action="store_true", help="1,000 items, a 30 s deadline")
    args = parser.parse_args()
    items, deadline = (1_000, 30.0) if args.quick else (args.items, args.deadline)
    load = " ".join(f"{v:.2f}" for v in os.getloadavg())
    print(f"load average: {load}; {items} items, deadline {deadline:g} s")

    from zotsync.app.sync import run_sync
    from zotsync.config import load_config
    from zotsync.processing.enrich import services

    # The fake services' limit is zotsync's pace here (the real DBLP's one a second would take hours).
    services.INTERVALS.update(dict.fromkeys(services.INTERVALS, 1.0 / RATE))
    services.POLITE_INTERVALS.clear()

    folder = Path(tempfile.mkdtemp(prefix="bench-enrich-"))
    missed: list[str] = []
    try:
        with MetadataServer(latency=LATENCY, rate=RATE) as server:
            config = load_config(prepare(folder, items, server, deadline))
            runs: list[tuple[float, dict[str, int]]] = []
            while True:
                started = time.monotonic()
                counts = run_sync(config).processed[0].counts
                runs.append((time.monotonic() - started, counts))
                said = ", ".join(f"{counts[k]} {k.replace('_', ' ')}" for k in ("due", "filled", "not_found"))
                print(
                    f"  run {len(runs)}: {runs[-1][0]:7.1f} s, {said}, {counts['waiting']} waiting, "
                    f"{counts['requests']} requests",
                    flush=True,
                )
                if not counts["waiting"] or len(runs) > 4 * items / (RATE * deadline) + 10:
                    break
            asked = sum(c["filled"] + c["not_found"] + c["ambiguous"] for _, c in runs)
            requests = sum(c["requests"] for _, c in runs)
            refused = server.too_fast
            # Each service has its own limit: the busiest one sets the floor on the time it can take.
            busiest = max(len(server.asked(s)) for s in ("dblp", "crossref", "openalex", "arxiv"))
            server.reset()
            started = time.monotonic()
            again = run_sync(config).processed[0].counts
            unchanged_wall = time.monotonic() - started
            unchanged_requests = len(server.requests) + again["requests"]
            walls = []
            for _ in range(3):
                began = time.perf_counter()
                subprocess.run([*console_script(), "-q", "--config", str(config.path), "sync"], check=True)
                walls.append(time.perf_counter() - began)
            unchanged_process = len(server.requests)
    finally:
        shutil.rmtree(folder, ignore_errors=True)

    per_item = requests / max(asked, 1)
    enrich_wall = sum(wall for wall, _ in runs)
    floor = busiest / RATE
    longest = max(wall for wall, _ in runs)
    median = statistics.median(walls)
    rows = [
        ("items answered on the first runs", f"{asked} of {items}", "all", asked == items),
        ("requests per item, first runs", f"{per_item:.2f} ({requests} requests)", "≤ 2.00", per_item <= 2),
        (
            "runs it took",
            f"{len(runs)}",
            f"≥ {math.ceil(floor / deadline)}: the limit's time ÷ the deadline",
            True,
        ),
        (
            "longest run",
            f"{longest:.1f} s",
            f"≤ deadline + 10 s = {deadline + 10:g} s",
            longest <= deadline + 10,
        ),
        (
            "all first runs",
            f"{enrich_wall:.0f} s",
            f"≥ the busiest limit's {floor:.0f} s, ≤ 1.3 × + 10 s a run",
            enrich_wall <= 1.3 * floor + 10 * len(runs),
        ),
        ("requests refused as too fast", str(refused), "0", refused == 0),
        (
            "requests on an unchanged run",
            f"{unchanged_requests} ({unchanged_wall:.2f} s in process)",
            "0",
            unchanged_requests == 0,
        ),
        (
            "unchanged `zotsync -q sync`",
            f"{median:.2f} s (median of 3; {unchanged_process} requests)",
            "≤ 1.00 s",
            median <= 1.0 and unchanged_process == 0,
        ),
    ]
    width = max(len(r[0]) for r in rows)
    print()
    for name, figure, goal, ok in rows:
        print(f"{name:<{width}}  {figure:<40}  goal {goal:<34} {'ok' if ok else 'MISSED'}")
        if not ok:
            missed.append(name)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
