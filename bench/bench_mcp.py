"""`zotsync mcp` through the protocol: start to `initialize`; `search` and `get_paper` at 5,000 papers.

    python bench/bench_mcp.py [--papers 5000] [--calls 100] [--starts 5] [--keep DIR]

It builds bench_scale.py's synthetic library (about 5,000 regular papers, half with an abstract, and
their notes and PDFs) and a 1,000-entry catalogue, syncs it from a snapshot with the real `zotsync`
command and runs one `zotsync search` (which builds the search index, as a user's first search does).
Then, with the MCP SDK's own client (`ClientSession` over `stdio_client`), the server started as an
assistant starts it (`zotsync mcp --config …`, a real subprocess):

- start to `initialize`: from spawning the server to its answer to `initialize`, the median of --starts;
  beside it, for information, the same for the SDK's own empty server (`MCPServer` with no tool): most
  of the start is the SDK's import;
- `search` p50 and p95 over --calls queries (words of the titles and abstracts, two-word queries, words
  found nowhere), and `get_paper` p50 and p95 over --calls papers, in one session after one unmeasured
  call of each (the first question makes the page: shown apart, for information).

The machine may be shared: figures are noisy, so check the load average printed first. Exits 1 when a
goal is missed.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

import anyio  # noqa: E402  (the MCP SDK brings it: pip install -e '.[mcp]')
from bench_scale import Row, build_catalogue, build_library, report, snapshot_setup, zotsync, zotsync_command  # noqa: E402
from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

START_GOAL, P50_GOAL, P95_GOAL = 1.0, 0.050, 0.200


def make_project(folder: Path, papers: int) -> tuple[Path, list[dict[str, Any]], float]:
    """A synced project of about `papers` regular items; its regular items' data; and the first search
    of a server while the store had no search index yet (it makes one of its own, in memory)."""
    objects = build_library(round(papers / 0.75))  # a quarter of synthetic_library's items are children
    config = snapshot_setup(folder, objects, build_catalogue(objects, 1_000))
    zotsync(config, "-q", "sync")
    own_index = anyio.run(first_search, config)
    zotsync(config, "-q", "search", "the")
    regular = [
        o["data"]
        for o in objects
        if "parentItem" not in o["data"] and "name" not in o["data"] and not o["data"].get("deleted")
        and o["data"].get("itemType") not in ("note", "attachment")
    ]  # fmt: skip
    return config, regular, own_index


def queries(regular: list[dict[str, Any]], n: int, rng: random.Random) -> list[str]:
    words = [w for d in regular for w in d["title"].split() if len(w) >= 4 and w.isalpha()]
    abstract = [w for d in regular[:200] for w in d.get("abstractNote", "").split() if len(w) >= 5]
    made = []
    for i in range(n):
        kind = i % 4
        if kind == 0:
            made.append(rng.choice(words))
        elif kind == 1:
            made.append(f"{rng.choice(words)} {rng.choice(words)}")
        elif kind == 2:
            made.append(rng.choice(abstract) if abstract else rng.choice(words))
        else:
            made.append(f"zq{rng.randrange(10**6)}x")  # found nowhere
    return made


# The SDK alone: a server with no tool, to show what of the start is the SDK's own import.
EMPTY_SERVER = "from mcp.server import MCPServer; MCPServer('empty').run()"


def parameters(config: Path | None) -> StdioServerParameters:
    """`zotsync mcp --config config`; None: the SDK's empty server."""
    if config is None:
        return StdioServerParameters(command=sys.executable, args=["-c", EMPTY_SERVER])
    command = zotsync_command()
    return StdioServerParameters(command=command[0], args=[*command[1:], "mcp", "--config", str(config)])


async def time_to_initialize(config: Path | None) -> float:
    started = time.perf_counter()
    with open(os.devnull, "w") as quiet:
        async with (
            stdio_client(parameters(config), errlog=quiet) as (read, write),
            ClientSession(read, write) as s,
        ):
            await s.initialize()
            return time.perf_counter() - started


async def first_search(config: Path) -> float:
    """One search on a store nobody searched: the server's own index is made first."""
    with open(os.devnull, "w") as quiet:
        async with (
            stdio_client(parameters(config), errlog=quiet) as (read, write),
            ClientSession(read, write) as s,
        ):
            await s.initialize()
            started = time.perf_counter()
            result = await s.call_tool("search", {"query": "the"})
            if result.is_error:
                raise SystemExit(f"search failed: {result.content[0].text}")
            return time.perf_counter() - started


async def calls(
    config: Path, asked: list[tuple[str, dict[str, Any]]]
) -> tuple[dict[str, float], dict[str, list[float]]]:
    """The first call of each tool (unmeasured in the percentiles), then each of `asked`, timed."""
    first: dict[str, float] = {}
    times: dict[str, list[float]] = {}
    with open(os.devnull, "w") as quiet:
        async with (
            stdio_client(parameters(config), errlog=quiet) as (read, write),
            ClientSession(read, write) as s,
        ):
            await s.initialize()
            for tool, arguments in asked:
                started = time.perf_counter()
                result = await s.call_tool(tool, arguments)
                took = time.perf_counter() - started
                if result.is_error:
                    raise SystemExit(f"{tool} {arguments} failed: {result.content[0].text}")
                if tool not in first:
                    first[tool] = took
                else:
                    times.setdefault(tool, []).append(took)
    return first, times


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--papers", type=int, default=5_000, help="regular items in the library")
    parser.add_argument("--calls", type=int, default=100, help="timed calls of each tool")
    parser.add_argument("--starts", type=int, default=5, help="timed starts; the median is shown")
    parser.add_argument("--keep", type=Path, help="build the project in DIR and keep it")
    options = parser.parse_args(argv)
    print(f"load average: {', '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    folder = options.keep or Path(tempfile.mkdtemp(prefix="bench-mcp-"))
    try:
        started = time.perf_counter()
        config, regular, own_index = make_project(folder, options.papers)
        print(f"{len(regular)} papers synced and indexed in {time.perf_counter() - started:.1f} s")
        rng = random.Random(7)
        keys = [d["key"] for d in rng.sample(regular, min(len(regular), options.calls + 1))]
        asked = [("get_paper", {"key": key}) for key in keys]
        asked += [("search", {"query": q}) for q in queries(regular, options.calls + 1, rng)]
        rng.shuffle(asked)
        starts, empty = [], []
        for _ in range(options.starts):  # in turn, so that both see the same load
            starts.append(anyio.run(time_to_initialize, config))
            empty.append(anyio.run(time_to_initialize, None))
        first, times = anyio.run(calls, config, asked)
    finally:
        if options.keep is None:
            shutil.rmtree(folder, ignore_errors=True)
    start = statistics.median(starts)
    rows = [
        Row("start to initialize (median)", f"{start:.2f} s", f"<= {START_GOAL:g} s", start <= START_GOAL),
        Row("  the SDK alone: an empty server", f"{statistics.median(empty):.2f} s", "-", None),
    ]
    for tool in ("search", "get_paper"):
        measured = times[tool]
        p50, p95 = percentile(measured, 0.50), percentile(measured, 0.95)
        why_slower = "makes the page" if tool == "get_paper" else "opens the index"
        rows += [
            Row(f"{tool} p50 ({len(measured)} calls)", ms(p50), f"<= {ms(P50_GOAL)}", p50 <= P50_GOAL),
            Row(f"{tool} p95", ms(p95), f"<= {ms(P95_GOAL)}", p95 <= P95_GOAL),
            Row(f"{tool}, first call", ms(first[tool]), "-", None, [why_slower]),
        ]
    rows.append(
        Row("search before any `zotsync search`", ms(own_index), "-", None, ["makes the server's own index"])
    )
    return report(rows)


if __name__ == "__main__":
    sys.exit(main())
