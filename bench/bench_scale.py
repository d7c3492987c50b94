"""zotsync at scale: every row of the scale table (issue 11) in one run, wall time and peak memory of the
real `zotsync` command, with the goal beside each figure.

    python bench/bench_scale.py [--quick] [--repeat 3]
        [--only export,sync,web,status,pull,pin,version,everything,mcp,fulltext]

It builds a synthetic library (100,000 items: three quarters regular items, half of them with an
~800-character abstract, the rest child notes and PDFs; nested collections) as a snapshot file, a
5,000-entry catalogue (exact titles, DOIs, edited titles and papers not in the library, in 50 categories),
and runs the console script in a subprocess for each measure. Wall times are medians of --repeat runs;
peak RSS is the child's own (`os.wait4`, Unix only; "n/a" elsewhere). The web rows serve a 28,000-item
library (about 20k items + 8k children) from bench/bench_sync.py's fake Zotero server process, once with
50 ms per request and once with none, and compare `zotsync pull` with a naive pyzotero `everything()`
script run the same way (its own process); at 50 ms also with a client that only fetches zotsync's
requests on 4 connections, the floor no pull can beat. `pin` runs against a 20,000-item store with
catalogues of 1k / 2.5k / 5k / 10k entries and must grow linearly. `--quick` shrinks every size for a
fast try.

The new capabilities' costs (`everything`, `mcp`, `fulltext`): on the same 100k library, a text for every
PDF written into the store (a snapshot has none to give), then the first embedding (the sync turning
`search.semantic` on: its time, papers a second and the vectors' size), then every capability on at once
(`fulltext.enabled`, `search.semantic`, `enrich.citations` against a fake OpenAlex on 127.0.0.1, note
pages, all five formats): the first such sync runs in a child process with OpenAlex's pace lifted (30,000
requests at 10 a second would take an hour), and a no-change sync after it must stay <= 1 s and ask
nothing. On that store, each MCP tool (`search`, `get_paper`, `related`, `get_fulltext`) through the MCP
SDK's stdio client (bench_mcp.py's). `fulltext` runs bench_fulltext.py at 1,000 PDFs (300 with
`--quick`): the first pull of the texts against the floor of 4 connections at 50 ms a request.

The machine may be shared: figures are noisy, so check the load average printed first. Exits 1 when a
goal is missed.
"""

from __future__ import annotations

import argparse
import compileall
import json
import multiprocessing
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from bench_reconcile import make_title, vocabulary  # noqa: E402  (titles with a realistic spread of words)
from bench_sync import KEY, Remote  # noqa: E402  (the fake-server process the web rows share)
from zotero_server import synthetic_library  # noqa: E402

ABSTRACT_WORDS = (
    "tensor",
    "kernel",
    "fusion",
    "graph",
    "compiler",
    "tile",
    "warp",
    "memory",
    "schedule",
    "sparse",
)
MB = 1024 * 1024


@dataclass
class Sizes:
    items: int = 100_000
    entries: int = 5_000
    web_items: int = 28_000
    pin_items: int = 20_000
    pin_entries: tuple[int, ...] = (1_000, 2_500, 5_000, 10_000)

    @classmethod
    def quick(cls) -> Sizes:
        return cls(
            items=10_000, entries=1_000, web_items=4_000, pin_items=4_000, pin_entries=(250, 500, 1_000)
        )


@dataclass
class Run:
    seconds: float
    rss: int | None  # bytes; None where the platform cannot tell
    cpu: float  # user + system seconds of the child
    code: int
    stderr: str = ""


@dataclass
class Row:
    measure: str
    figure: str
    goal: str
    ok: bool | None  # None: for information
    notes: list[str] = field(default_factory=list)


# -- running the real command -------------------------------------------------------------------------


def zotsync_command() -> list[str]:
    script = Path(sys.executable).with_name("zotsync")
    return [str(script)] if script.exists() else [sys.executable, "-m", "zotsync"]


def compile_package() -> None:
    """Measure zotsync as installed: pip compiles a package's bytecode when it installs it, while a
    checkout run with PYTHONDONTWRITEBYTECODE=1 would compile every changed module on every run (up to
    0.1 s a run, which the naive script, installed by pip, never pays)."""
    import zotsync

    compileall.compile_dir(Path(zotsync.__file__).parent, quiet=1)


def run_child(
    argv: Sequence[str], env: dict[str, str] | None = None, timeout: float = 600, cwd: Path | None = None
) -> Run:
    """One child process, timed; its own peak RSS and CPU via wait4 where the OS offers it."""
    started = time.perf_counter()
    process = subprocess.Popen(
        list(argv),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env or child_env(),
        text=True,
        cwd=cwd,
    )
    if hasattr(os, "wait4"):
        # stderr is small (errors only, -q); read it after the child ends
        deadline = started + timeout
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                process.kill()
                pid, status, usage = os.wait4(process.pid, 0)
                break
            time.sleep(0.002)
        seconds = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        stderr = process.stderr.read() if process.stderr else ""
        factor = 1 if sys.platform == "darwin" else 1024  # ru_maxrss: bytes on macOS, KiB on Linux
        return Run(
            seconds, usage.ru_maxrss * factor, usage.ru_utime + usage.ru_stime, process.returncode, stderr
        )
    _, stderr = process.communicate(timeout=timeout)
    return Run(time.perf_counter() - started, None, 0.0, process.returncode, stderr)


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ZOTERO_", "ZOTSYNC_"))}
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    return env


def zotsync(config: Path, *args: str, timeout: float = 600) -> Run:
    run = run_child([*zotsync_command(), "--config", str(config), *args], timeout=timeout)
    if run.code != 0:
        raise SystemExit(f"zotsync {' '.join(args)} failed ({run.code}): {run.stderr.strip()[-500:]}")
    return run


SPREAD: list[str] = ["", ""]  # the range of the last median_runs' wall times, and CPU times, for notes


def median_runs(repeat: int, once: Any) -> tuple[float, int | None, float]:
    runs = [once() for _ in range(repeat)]
    rss = [r.rss for r in runs if r.rss is not None]
    walls = [r.seconds for r in runs]
    SPREAD[0] = f"{min(walls):.2f}-{max(walls):.2f} s over {len(walls)}" if len(walls) > 1 else ""
    cpus = [r.cpu for r in runs]
    SPREAD[1] = f"{min(cpus):.2f}-{max(cpus):.2f} s of CPU over {len(cpus)}" if len(cpus) > 1 else ""
    return (
        statistics.median(r.seconds for r in runs),
        max(rss) if rss else None,
        statistics.median(r.cpu for r in runs),
    )


# -- the data -----------------------------------------------------------------------------------------


def build_library(n_items: int, seed: int = 11) -> list[dict[str, Any]]:
    """synthetic_library, retitled from a 6,000-word vocabulary (its own 22 words make every title look
    alike, which no real library does), with an ~800-character abstract on every other regular item."""
    rng = random.Random(seed)
    objects = synthetic_library(n_items, seed=seed)
    regular = [o for o in objects if "parentItem" not in o["data"] and "name" not in o["data"]]
    words, seen = vocabulary(rng), set()
    for obj in regular:
        while (title := make_title(rng, words)).casefold() in seen:
            pass
        seen.add(title.casefold())
        obj["data"]["title"] = title
    for obj in regular[::2]:
        words = []
        while sum(map(len, words)) + len(words) < 800:
            words.append(rng.choice(ABSTRACT_WORDS))
        obj["data"]["abstractNote"] = " ".join(words)
    return objects


def build_catalogue(objects: list[dict[str, Any]], n_entries: int, seed: int = 5) -> str:
    """A catalogue as a curator keeps it: 40% exact titles, 20% DOIs under a working title, 10% titles
    with a word dropped, 30% papers not in the library; 50 categories; some statuses, notes and links."""
    rng = random.Random(seed)
    regular = [
        o["data"]
        for o in objects
        if o["data"].get("itemType") not in ("note", "attachment", None)
        and "parentItem" not in o["data"]
        and "name" not in o["data"]
        and not o["data"].get("deleted")
    ]
    picks = rng.sample(regular, min(len(regular), n_entries))
    n_categories = 50
    lines = ['title: "Scale benchmark reading list"', "categories:"]
    for c in range(n_categories):
        lines += [f'  - name: "Topic {c}"', "    entries:"]
        for i in range(c, n_entries, n_categories):
            data, kind = picks[i % len(picks)], i % 10
            if kind < 4:
                entry = {"title": data["title"]}
            elif kind < 6 and data.get("DOI"):
                entry = {"title": f"Working title {i}", "doi": data["DOI"].upper()}
            elif kind < 7:
                words = data["title"].split(" ")
                del words[1]
                entry = {"title": " ".join(words)}
            else:
                entry = {"title": f"A paper not in the library, number {i}"}
            if i % 3 == 0:
                entry["status"] = "read"
            if i % 4 == 0:
                entry["why"] = f"Why entry {i} matters: it measures something."
            if i % 7 == 0:
                entry["links"] = {"Note": f"https://notes.example.org/{i}"}
            first = True
            for key, value in entry.items():
                dash = "      - " if first else "        "
                first = False
                if isinstance(value, dict):
                    inner = ", ".join(f"{k}: {json.dumps(v)}" for k, v in value.items())
                    lines.append(f"{dash}{key}: {{{inner}}}")
                else:
                    lines.append(f"{dash}{key}: {json.dumps(value, ensure_ascii=False)}")
    return "\n".join(lines) + "\n"


def write_config(folder: Path, source: str) -> Path:
    config = folder / "zotsync.yaml"
    config.write_text(
        f"{source}\ncatalog: catalog.yaml\nstore: store/zotsync.sqlite\n"
        "exports:\n  dir: exports\n  formats: [md, csv]\n",
        encoding="utf-8",
    )
    return config


def snapshot_setup(folder: Path, objects: list[dict[str, Any]], catalogue: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "library.json").write_text(json.dumps(objects, ensure_ascii=False), encoding="utf-8")
    (folder / "catalog.yaml").write_text(catalogue, encoding="utf-8")
    return write_config(folder, "source:\n  type: snapshot\n  path: library.json")


def web_setup(folder: Path, url: str, catalogue: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "catalog.yaml").write_text(catalogue, encoding="utf-8")
    source = (
        f"source:\n  type: web\n  library_type: user\n  library_id: '1'\n  api_key: {KEY}\n  base_url: {url}"
    )
    return write_config(folder, source)


# -- the rows -----------------------------------------------------------------------------------------


def fmt_rss(rss: int | None) -> str:
    return "n/a" if rss is None else f"{rss / MB:.0f} MB"


def timed_row(measure: str, seconds: float, goal: float, rss: int | None = None, rss_goal: int = 0) -> Row:
    ok = seconds <= goal and (rss is None or not rss_goal or rss <= rss_goal * MB)
    figure = f"{seconds:.2f} s" + (f", {fmt_rss(rss)}" if rss_goal else "")
    goals = f"<= {goal:g} s" + (f", <= {rss_goal} MB" if rss_goal else "")
    return Row(measure, figure, goals, ok, [f"runs {SPREAD[0]}"] if SPREAD[0] else [])


def in_child(function: Any, *args: Any) -> Any:
    """Run a data builder in its own process: a child forked from a parent that holds the library
    would start at the parent's peak RSS (Linux counts it), and every figure would be that peak."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(function, args)


def make_snapshot_project(folder: Path, n_items: int, n_entries: int) -> tuple[Path, int]:
    objects = build_library(n_items)
    n_children = sum("parentItem" in o["data"] for o in objects)
    return snapshot_setup(folder, objects, build_catalogue(objects, n_entries)), n_children


def make_pin_projects(base: Path, n_items: int, sizes: Sequence[int]) -> list[tuple[int, Path, str, str]]:
    """A project per catalogue size, with an entry that matches nothing and a regular item no entry claims."""
    objects = build_library(n_items)
    projects = []
    for n in sizes:
        catalogue = build_catalogue(objects, n)
        config = snapshot_setup(base / str(n), objects, catalogue)
        claimed = set(catalogue.split('"'))
        key = next(
            o["data"]["key"]
            for o in reversed(objects)
            if "parentItem" not in o["data"]
            and o["data"].get("itemType") in ("conferencePaper", "journalArticle", "preprint", "book")
            and not o["data"].get("deleted")
            and o["data"]["title"] not in claimed
            and o["data"].get("DOI", "").upper() not in claimed
        )
        projects.append((n, config, f"A paper not in the library, number {7 if n > 7 else 0}", key))
    return projects


def web_catalogue(n_items: int, n_entries: int) -> str:
    return build_catalogue(synthetic_library(n_items), n_entries)


def snapshot_rows(sizes: Sizes, repeat: int, folder: Path, only: set[str]) -> list[Row]:
    rows: list[Row] = []
    started = time.perf_counter()
    config, n_children = in_child(make_snapshot_project, folder, sizes.items, sizes.entries)
    first = zotsync(config, "-q", "sync")
    label = f"{sizes.items // 1000}k"
    print(
        f"  built {sizes.items:,} items ({n_children:,} children) and {sizes.entries:,} entries "
        f"in {time.perf_counter() - started:.0f} s; first sync {first.seconds:.1f} s, {fmt_rss(first.rss)}",
        flush=True,
    )
    if "export" in only:
        for fmt in ("csv", "md"):
            out = folder / f"out.{fmt}"
            seconds, rss, _ = median_runs(
                repeat,
                lambda fmt=fmt, out=out: zotsync(
                    config, "-q", "export", "--format", fmt, "--output", str(out)
                ),
            )
            rows.append(timed_row(f"export --format {fmt} at {label}", seconds, 2, rss, 300))
    if "sync" in only:
        seconds, rss, _ = median_runs(repeat, lambda: zotsync(config, "-q", "sync"))
        row = timed_row(f"no-change sync at {label} (snapshot)", seconds, 1)
        row.notes.append(f"peak {fmt_rss(rss)}")
        rows.append(row)
    if "status" in only:
        seconds, rss, _ = median_runs(repeat, lambda: zotsync(config, "status"))
        row = timed_row(f"status at {label}", seconds, 1)
        row.notes.append(f"peak {fmt_rss(rss)}")
        rows.append(row)
        rows += changed_rows(config, label)
    return rows


def changed_rows(config: Path, label: str) -> list[Row]:
    """For information: `status` and `export` right after the catalogue changed, when no sync has kept
    the report or written the page for what they are asked (each one run: a whole reconcile)."""
    catalogue = config.parent / "catalog.yaml"
    kept = catalogue.read_bytes()
    rows: list[Row] = []
    try:
        catalogue.write_bytes(kept + b"\n# edited\n")
        SPREAD[0] = ""
        for name, args in (
            ("status", ("status",)),
            (
                "export --format csv",
                ("-q", "export", "--format", "csv", "--output", str(config.parent / "x.csv")),
            ),
        ):
            run = zotsync(config, *args)
            row = timed_row(f"{name} at {label}, catalogue edited since the sync", run.seconds, 0)
            row.ok, row.goal = None, "(information: nothing kept to reuse)"
            row.notes.append(f"peak {fmt_rss(run.rss)}")
            rows.append(row)
    finally:
        catalogue.write_bytes(kept)
    return rows


NAIVE = """
import sys, httpx2
from pyzotero import Zotero
client = httpx2.Client(trust_env=False, follow_redirects=True, timeout=60)
zot = Zotero("1", "user", sys.argv[2], client=client)
zot.endpoint = sys.argv[1]
items = zot.everything(zot.items())
print(len(items))
"""

# The wire's floor under the API's rule of at most 4 concurrent requests: a client that sends zotsync's own
# requests (the same pages and parameters, the first two first, then the rest as their Total-Results
# allow) on 4 connections and does nothing with the answers. No pull can take less than this. With a
# store path it also keeps what it fetched, as leanly as a store can: each page decoded once (msgspec,
# the item's `data` left as the server's bytes) and one SQLite row per item (key, version, that JSON),
# in one transaction, in the main thread as the pages arrive. Its CPU is what keeping the library costs
# before anything is derived from it: no model objects, no columns, no page rows, no facts.
FLOOR = """
import json, sqlite3, sys
from concurrent.futures import ThreadPoolExecutor
import httpx2
url, key, items, collections = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
client = httpx2.Client(trust_env=False, timeout=60, limits=httpx2.Limits(max_connections=4))
headers = {"Zotero-API-Key": key, "Zotero-API-Version": "3", "Accept-Encoding": "gzip, deflate"}
keep = lambda response: None
if len(sys.argv) > 5:
    import msgspec
    class Item(msgspec.Struct):
        key: str
        version: int
        data: msgspec.Raw
    decode = msgspec.json.Decoder(list[Item]).decode
    db = sqlite3.connect(sys.argv[5], isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("CREATE TABLE items (key TEXT PRIMARY KEY, version INTEGER NOT NULL, data TEXT NOT NULL)")
    db.execute("BEGIN")
    def keep(response):
        rows = [(i.key, i.version, bytes(i.data).decode()) for i in decode(response.content)]
        db.executemany("INSERT OR REPLACE INTO items VALUES (?, ?, ?)", rows)
def get(path, params, start):
    response = client.get(url + path, params={**params, "start": start}, headers=headers)
    response.raise_for_status()
    return response
with ThreadPoolExecutor(4) as pool:
    firsts = [pool.submit(get, path, params, 0) for path, params in (items, collections)]
    rest = []
    for (path, params), first in zip((items, collections), firsts):
        total = int(first.result().headers["Total-Results"])
        rest += [(path, pool.submit(get, path, params, start)) for start in range(100, total, 100)]
    keep(firsts[0].result())
    for path, future in rest:
        if path == items[0]:
            keep(future.result())
    print(sum(len(future.result().content) for _, future in rest))
if len(sys.argv) > 5:
    db.execute("COMMIT")
"""


def fetch_only(url: str, store: Path | None = None) -> Run:
    """FLOOR's client, once: zotsync's first-pull requests, answers dropped (or, with `store`, kept
    there as leanly as they can be)."""
    from zotsync.sources.web import WebSource, _collection_page, _item_page

    def listing(path: str, params: dict[str, Any]) -> str:
        return json.dumps([path, {k: v for k, v in params.items() if k != "start"}])

    assert WebSource.CONCURRENCY == 4
    run = run_child(
        [
            sys.executable,
            "-c",
            FLOOR,
            url,
            KEY,
            listing("/users/1/items", _item_page(0)),
            listing("/users/1/collections", _collection_page(0)),
            *([str(store)] if store else []),
        ]
    )
    if run.code:
        raise SystemExit(f"the fetch-only client failed: {run.stderr[-500:]}")
    return run


def web_rows(sizes: Sizes, repeat: int, folder: Path, only: set[str]) -> list[Row]:
    rows: list[Row] = []
    catalogue = in_child(web_catalogue, sizes.web_items, sizes.entries)
    server = Remote(sizes.web_items, 0.05)
    try:
        label = f"{sizes.web_items // 1000}k"
        if "pull" in only:
            for latency in (0.05, 0.0):
                server("latency", latency)

                def first_pull(n: list[int] = [0], latency: float = latency) -> Run:  # noqa: B006
                    n[0] += 1
                    config = web_setup(folder / f"pull-{latency}-{n[0]}", server.url, catalogue)
                    return zotsync(config, "-q", "pull")

                def naive() -> Run:
                    run = run_child([sys.executable, "-c", NAIVE, server.url, KEY])
                    if run.code:
                        raise SystemExit(f"the naive script failed: {run.stderr[-500:]}")
                    return run

                server("reset")
                ours, ours_rss, ours_cpu = median_runs(repeat, first_pull)
                shown = 0 if latency else 1  # the row's own measure: wall time, or CPU at 0 ms
                spreads = [f"zotsync {SPREAD[shown]}"]
                requests = server("requests") // repeat
                server("reset")
                theirs, _, theirs_cpu = median_runs(repeat, naive)
                spreads.append(f"naive {SPREAD[shown]}")
                naive_requests = server("requests") // repeat
                if latency:
                    floor, _, _ = median_runs(repeat, lambda: fetch_only(server.url))
                    floor_spread = SPREAD[0]
                    ratio = ours / theirs
                    row = Row(
                        f"first web pull {label} at 50 ms/request",
                        f"{ratio:.2f} x ({ours:.2f} s vs {theirs:.2f} s)",
                        "<= 0.25 x",
                        ratio <= 0.25,
                    )
                    floor_row = Row(
                        "  its floor: 4 connections that only fetch",
                        f"{floor / theirs:.2f} x ({floor:.2f} s); zotsync {ours / floor:.2f} x it",
                        "(information)",
                        None,
                        [floor_spread] if floor_spread else [],
                    )
                else:
                    ratio = ours_cpu / theirs_cpu if theirs_cpu else float("inf")
                    row = Row(
                        f"first web pull {label} at 0 ms: client CPU",
                        f"{ratio:.2f} x ({ours_cpu:.2f} s vs {theirs_cpu:.2f} s CPU)",
                        "<= 1.2 x",
                        ratio <= 1.2,
                    )

                    def lean(n: list[int] = [0]) -> Run:  # noqa: B006
                        n[0] += 1
                        return fetch_only(server.url, folder / f"lean-{n[0]}.sqlite")

                    _, _, lean_cpu = median_runs(repeat, lean)
                    lean_ratio = lean_cpu / theirs_cpu if theirs_cpu else float("inf")
                    floor_row = Row(
                        "  beside it: a client that keeps one raw row per item",
                        f"{lean_ratio:.2f} x ({lean_cpu:.2f} s CPU); zotsync {ours_cpu / lean_cpu:.2f} x it",
                        "(information)",
                        None,
                        [SPREAD[1]] if SPREAD[1] else [],
                    )
                row.notes.append(f"{requests} vs {naive_requests} requests; peak {fmt_rss(ours_rss)}")
                if repeat > 1:
                    row.notes.append("; ".join(spreads))
                rows.append(row)
                rows.append(floor_row)
        if "web" in only:
            server("latency", 0.0)
            config = web_setup(folder / "web-sync", server.url, catalogue)
            zotsync(config, "-q", "sync")
            server("reset")
            seconds, rss, _ = median_runs(repeat, lambda: zotsync(config, "-q", "sync"))
            requests = server("requests") / repeat
            row = timed_row(f"no-change sync at {label} (web)", seconds, 0.5)
            row.ok = row.ok and requests == 1
            row.figure += f", {requests:g} request(s)"
            row.goal += ", 1 request (a 304)"
            row.notes.append(f"peak {fmt_rss(rss)}")
            rows.append(row)
    finally:
        server.stop()
    return rows


# -- the new capabilities: everything on ---------------------------------------------------------------

EVERYTHING = """fulltext:
  enabled: true
search:
  semantic: true
enrich:
  citations: true
  deadline: 3600
  endpoints: {endpoints}
sync:
  deadline: 3600
"""
ALL_FORMATS = "exports:\n  dir: exports\n  formats: [md, csv, html, bib, atom]\n  notes: true\n"
TEXT_CHARS = 3_000  # characters of each PDF's text: 12,500 PDFs at 100k items, ~37 MB of text


def add_texts(store_path: Path, chars: int = TEXT_CHARS, seed: int = 3) -> tuple[int, int]:
    """A text for every PDF of the store, written as a pull writes them (a snapshot source has none to
    give): how many, and their UTF-8 bytes."""
    from zotsync.model import FullText
    from zotsync.store import Store

    rng = random.Random(seed)
    words = vocabulary(rng)  # the titles' 6,000 words: a word of a query is in some texts, not in all
    written = size = 0
    with Store(store_path) as store:
        keys = sorted(store.attachment_keys())
        with store.fulltext_writer() as writer:
            for n, key in enumerate(keys):
                body: list[str] = [f"uniq{n}"]
                while sum(map(len, body)) + len(body) < chars:
                    body.append(rng.choice(words))
                content = " ".join(body)
                writer.add(FullText(key, "1", content, 12, 12, len(content), len(content)))
                written, size = written + 1, size + len(content.encode())
    return written, size


def paced_sync(config: Path) -> dict[str, Any]:
    """A sync in this (child) process with OpenAlex's pace lifted: the fake answers at once, and the
    ~30,000 requests of a first graph at 100k items would otherwise take an hour at 10 a second."""
    from zotsync.app.sync import run_sync
    from zotsync.config import load_config
    from zotsync.processing.enrich import services

    services.INTERVALS["openalex"] = 0.0
    result = run_sync(load_config(config))
    return {p.name: dict(p.counts) for p in result.processed}


def everything_keys(store_path: Path, n: int, seed: int = 9) -> dict[str, list[str]]:
    """Keys for the MCP calls: papers with a vector, and papers whose PDF has text."""
    import sqlite3

    db = sqlite3.connect(store_path)
    try:
        papers = [k for (k,) in db.execute("SELECT key FROM items WHERE parent_key IS NULL AND deleted = 0"
                                            " AND item_type NOT IN ('note', 'attachment')")]  # fmt: skip
        with_text = [k for (k,) in db.execute(
            "SELECT DISTINCT i.parent_key FROM items i JOIN fulltext f ON f.key = i.key"
            " JOIN items p ON p.key = i.parent_key WHERE p.deleted = 0 AND i.deleted = 0")]  # fmt: skip
    finally:
        db.close()
    rng = random.Random(seed)
    return {
        "papers": rng.sample(papers, min(n, len(papers))),
        "texts": rng.sample(with_text, min(n, len(with_text))),
    }


def everything_titles(store_path: Path, keys: list[str]) -> list[str]:
    import sqlite3

    db = sqlite3.connect(store_path)
    try:
        return [db.execute("SELECT title FROM items WHERE key = ?", (key,)).fetchone()[0] for key in keys]
    finally:
        db.close()


def vectors_size(store_path: Path) -> tuple[int, int]:
    import sqlite3

    db = sqlite3.connect(store_path)
    try:
        count, size = db.execute(
            "SELECT count(*), sum(length(paper) + length(made_from) + length(vector)) FROM paper_vectors"
        ).fetchone()
    finally:
        db.close()
    return count, size or 0


def everything_rows(sizes: Sizes, repeat: int, folder: Path, only: set[str]) -> list[Row]:
    """The no-change sync at 100k with every capability on (the PDFs' text, search by meaning, the
    scholarly graph against a fake OpenAlex on 127.0.0.1, note pages, every format), and on the way the
    first embedding; then the MCP tools' latency on that store."""
    from metadata_server import MetadataServer

    rows: list[Row] = []
    started = time.perf_counter()
    plain = folder.parent / "snapshot"
    if (plain / "store").exists():  # the snapshot rows' synced project: the same library
        shutil.copytree(plain, folder, ignore=shutil.ignore_patterns("exports", "out.*", "x.csv"))
        config = folder / "zotsync.yaml"
    else:
        config, _ = in_child(make_snapshot_project, folder, sizes.items, sizes.entries)
        zotsync(config, "-q", "sync", timeout=3600)
    store_path = folder / "store" / "zotsync.sqlite"
    texts, text_bytes = in_child(add_texts, store_path)
    base = config.read_text(encoding="utf-8").split("exports:")[0]
    label = f"{sizes.items // 1000}k"
    print(
        f"  {texts:,} PDF texts ({text_bytes / MB:.0f} MB) in {time.perf_counter() - started:.0f} s",
        flush=True,
    )
    # the first embedding: a sync turning search.semantic on over a store synced without it
    config.write_text(base + ALL_FORMATS + "search:\n  semantic: true\n", encoding="utf-8")
    first = zotsync(config, "-q", "sync", timeout=3600)
    count, size = vectors_size(store_path)
    rows.append(
        Row(
            f"first embedding: the sync turning search.semantic on, {label}",
            f"{first.seconds:.1f} s, {count / first.seconds:,.0f} papers/s ({count:,} papers)",
            "<= 120 s",
            first.seconds <= 120 and count > 0,
            [f"CPU {first.cpu:.1f} s", f"peak {fmt_rss(first.rss)}"],
        )
    )
    rows.append(Row("vectors in the store", f"{size / MB:.1f} MB", "<= 100 MB", size <= 100 * MB))
    with MetadataServer() as server:
        endpoints = json.dumps({"openalex": server.endpoints()["openalex"]})
        config.write_text(base + ALL_FORMATS + EVERYTHING.format(endpoints=endpoints), encoding="utf-8")
        began = time.perf_counter()
        counts = in_child(paced_sync, config)
        graph = counts.get("citations", {})
        print(
            f"  everything on, first sync {time.perf_counter() - began:.0f} s (OpenAlex unpaced): "
            f"{len(server.requests):,} requests, {graph}",
            flush=True,
        )
        zotsync(config, "-q", "sync")  # unmeasured: the first console-script run after the config's
        server.reset()
        seconds, rss, cpu = median_runs(repeat, lambda: zotsync(config, "-q", "sync"))
        asked = len(server.requests)
    row = timed_row(f"no-change sync at {label}, everything on", seconds, 1)
    row.ok = row.ok and asked == 0
    row.figure += f", {asked} requests"
    row.goal += ", 0 requests"
    row.notes += [f"peak {fmt_rss(rss)}", f"CPU {cpu:.2f} s", "text, meaning, graph, notes, 5 formats"]
    rows.append(row)
    # by hand, the config named from its folder (cron names it by its absolute path): the same settings
    SPREAD[0] = ""
    by_hand = run_child([*zotsync_command(), "--config", config.name, "-q", "sync"], cwd=config.parent)
    if by_hand.code:
        raise SystemExit(f"zotsync sync by a relative --config failed: {by_hand.stderr[-500:]}")
    row = timed_row(f"the same, --config {config.name} from its folder", by_hand.seconds, 1)
    row.notes.append(f"peak {fmt_rss(by_hand.rss)}")
    rows.append(row)
    if "mcp" in only:
        rows += mcp_rows(config, store_path)
    return rows


MCP_CALLS = 30  # timed calls of each tool


def mcp_rows(config: Path, store_path: Path) -> list[Row]:
    """A call of each tool through the MCP SDK's stdio client, on the everything-on store: p50 / p95
    in one session after one unmeasured call of each (bench_mcp.py's client)."""
    import anyio
    from bench_mcp import calls, percentile, queries

    keys = everything_keys(store_path, MCP_CALLS + 1)
    rng = random.Random(4)
    titles = everything_titles(store_path, keys["papers"])
    regular = [{"title": t, "abstractNote": " ".join(ABSTRACT_WORDS)} for t in titles]
    asked: list[tuple[str, dict[str, Any]]] = []
    for n, query in enumerate(queries(regular, MCP_CALLS + 1, rng)):  # bench_mcp.py's mix of queries
        asked.append(("search", {"query": query}))
        asked.append(("get_paper", {"key": keys["papers"][n % len(keys["papers"])]}))
        asked.append(("related", {"key": keys["papers"][n % len(keys["papers"])]}))
        text_key = keys["texts"][n % len(keys["texts"])]
        asked.append(("get_fulltext", {"key": text_key, "query": rng.choice(ABSTRACT_WORDS)}))
    first, times = anyio.run(calls, config, asked)
    # The first search after a sync that rendered the page makes the search index (texts included).
    rows = [
        Row(
            "MCP search, the first call after the sync",
            f"{first['search']:.1f} s",
            "(information: it makes the search index)",
            None,
        )
    ]
    for tool in ("search", "get_paper", "related", "get_fulltext"):
        p50, p95 = percentile(times[tool], 0.5), percentile(times[tool], 0.95)
        rows.append(
            Row(
                f"MCP {tool} through the SDK's stdio client",
                f"p50 {p50 * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms",
                "p50 <= 50 ms, p95 <= 200 ms",
                p50 <= 0.05 and p95 <= 0.2,
                [f"{len(times[tool])} calls after a first one of {first[tool] * 1000:.0f} ms"],
            )
        )
    return rows


def fulltext_row(quick: bool) -> list[Row]:
    """bench_fulltext.py at a size that runs in about a minute: the first pull of the texts against the
    floor of 4 connections at 50 ms a request, and its no-change sync."""
    papers = "300" if quick else "1000"
    argv = [sys.executable, str(HERE / "bench_fulltext.py"), "--papers", papers, "--chars", "30000"]
    done = subprocess.run(
        [*argv, "--naive", "20", "--queries", "20"], capture_output=True, text=True, env=child_env()
    )
    lines = {line.split("  ")[0]: line for line in done.stdout.splitlines()}
    rows = []
    for name in ("first pull", "no-change sync"):
        line = lines.get(name)
        if line is None:
            raise SystemExit(f"bench_fulltext.py printed no {name!r} line: {done.stderr[-500:]}")
        figure, goal, *_ = [f.strip() for f in line[len(name) :].split("  ") if f.strip()]
        measure = f"full text ({papers} PDFs x 30 KB, 50 ms): {name}"
        rows.append(Row(measure, figure, goal, line.rstrip().endswith("ok")))
    return rows


def pin_rows(sizes: Sizes, repeat: int, folder: Path) -> list[Row]:
    figures: list[tuple[int, float]] = []
    for n, config, target, key in in_child(
        make_pin_projects, folder / "pin", sizes.pin_items, sizes.pin_entries
    ):
        catalogue = (config.parent / "catalog.yaml").read_text(encoding="utf-8")
        zotsync(config, "-q", "pull")
        path = config.parent / "catalog.yaml"

        def once(
            path: Path = path,
            config: Path = config,
            catalogue: str = catalogue,
            key: str = key,
            target: str = target,
        ) -> Run:
            path.write_text(catalogue, encoding="utf-8")
            return zotsync(config, "-q", "pin", target, key, timeout=300)

        seconds, _, _ = median_runs(repeat if n <= 5_000 else max(1, repeat), once)
        figures.append((n, seconds))
        print(f"  pin with {n:,} entries: {seconds:.2f} s", flush=True)
    (small_n, small_s), (big_n, big_s) = figures[0], figures[-1]
    # linear: growing the catalogue k-fold may cost at most k-fold (plus the fixed cost of a run)
    growth = big_s / small_s if small_s else float("inf")
    linear = growth <= big_n / small_n
    series = " / ".join(f"{s:.2f}" for _, s in figures)
    labels = " / ".join(f"{n / 1000:g}k" for n, _ in figures)
    row = timed_row(f"pin, {big_n:,}-entry catalogue ({sizes.pin_items // 1000}k items)", big_s, 2)
    row.ok = row.ok and linear
    row.figure += f"; {series} s at {labels}"
    row.goal += f", linear (x{growth:.1f} for x{big_n / small_n:g} entries)"
    return [row]


def version_row(repeat: int) -> Row:
    seconds, _, _ = median_runs(max(repeat, 5), lambda: run_child([*zotsync_command(), "--version"]))
    return timed_row("zotsync --version", seconds, 0.15)


def report(rows: list[Row]) -> int:
    """The rows side by side, each figure beside its goal; 1 when a goal is missed."""
    width = max(len(r.measure) for r in rows)
    fig_width = max(len(r.figure) for r in rows)
    header = f"{'measure':<{width}}  {'figure':<{fig_width}}  {'ok':<3}  goal"
    print("\n" + header + "\n" + "-" * len(header))
    for r in rows:
        verdict = "-" if r.ok is None else "yes" if r.ok else "NO"
        notes = f"   ({'; '.join(r.notes)})" if r.notes else ""
        print(f"{r.measure:<{width}}  {r.figure:<{fig_width}}  {verdict:<3}  {r.goal}{notes}")
    goals = [r for r in rows if r.ok is not None]
    print(f"\ngoals met: {sum(r.ok is True for r in goals)} of {len(goals)}")
    return 1 if any(r.ok is False for r in goals) else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a fast try")
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure; the median is shown")
    parser.add_argument(
        "--only",
        default="export,sync,web,status,pull,pin,version,everything,mcp,fulltext",
        help="comma-separated rows to run",
    )
    parser.add_argument("--keep", metavar="DIR", help="build in DIR and keep it (default: a temp folder)")
    args = parser.parse_args(argv)
    sizes = Sizes.quick() if args.quick else Sizes()
    only = set(args.only.split(","))
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    print(
        f"zotsync at scale: {' '.join(zotsync_command())}; {os.cpu_count()} CPUs"
        + (f", load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}" if load else "")
        + f"; medians of {args.repeat}",
        flush=True,
    )
    compile_package()
    folder = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="zotsync-scale-"))
    rows: list[Row] = []
    try:
        if only & {"export", "sync", "status"}:
            rows += snapshot_rows(sizes, args.repeat, folder / "snapshot", only)
        if only & {"web", "pull"}:
            rows += web_rows(sizes, args.repeat, folder / "web", only)
        if only & {"everything", "mcp"}:
            rows += everything_rows(sizes, args.repeat, folder / "everything", only)
        if "fulltext" in only:
            rows += fulltext_row(args.quick)
        if "pin" in only:
            rows += pin_rows(sizes, args.repeat, folder)
        if "version" in only:
            rows.append(version_row(args.repeat))
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    return report(rows)


if __name__ == "__main__":
    sys.exit(main())
