"""The PDFs' full text (`fulltext.enabled`) against the fake Zotero API at 50 ms a request.

    python bench/bench_fulltext.py [--papers 5000] [--chars 60000] [--latency 0.05] [--queries 200]

A library of N papers, each with a PDF whose text is about 60 KB (Zipf-distributed words, as a real
text's are), served by tests/zotero_server.py in its own process (the real API is another machine).
One run measures, side by side with the targets:

    first pull (items and texts)   <= 1.2 x the floor of 4 connections: ceil(requests / 4) x latency
    no-change sync                 1 request, <= 0.5 s
    peak RSS of the client          <= 400 MB
    store growth for the text       <= 1.0 x the raw text (UTF-8 bytes)
    search p50 / p95                <= 100 / 300 ms (`zotsync.search`, a word or two of the texts)
    a 5 MB text                     pulled, stored and searched within the bounds above

and, for comparison, a client that fetches the texts one at a time (timed on --naive of them).

Timings are wall-clock on a shared machine: noisy. Exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import random
import resource
import sqlite3
import statistics
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

KEY = "BenchK3yBenchK3yBenchK3y"
USER = "1"
BIG = 5 * 2**20  # characters of the one large text


def vocabulary(rng: random.Random, size: int = 20_000) -> list[str]:
    syllables = ["ka", "to", "ri", "en", "sa", "mu", "lo", "ve", "th", "ion", "al", "er", "st", "ne", "qu"]
    words = {"".join(rng.choices(syllables, k=rng.randint(1, 4))) for _ in range(size * 2)}
    return sorted(words)[:size]


def make_text(rng: random.Random, words: list[str], weights: list[float], chars: int) -> str:
    picked = rng.choices(words, cum_weights=weights, k=chars // 6)
    text = " ".join(picked)
    return text[:chars]


def serve(conn: Connection, papers: int, chars: int, latency: float) -> None:
    """The server process: the library, then commands from the bench."""
    from zotero_server import FakeLibrary, ZoteroServer

    rng = random.Random(7)
    words = vocabulary(rng)
    cumulative, total = [], 0.0
    for rank in range(1, len(words) + 1):
        total += 1 / rank
        cumulative.append(total)
    bases = [make_text(rng, words, cumulative, chars * 2) for _ in range(40)]
    library = FakeLibrary("user", USER, "bench")
    texts: dict[str, bytes] = {}
    raw = 0
    for n in range(papers):
        paper = library.add_item(f"Paper {n} on {words[n % len(words)]}", creators=[])
        pdf = library.add_item("Full Text PDF", "attachment", parent=paper, contentType="application/pdf")
        base = bases[n % len(bases)]
        start = rng.randrange(chars)
        content = f"uniq{n} " + base[start : start + chars]
        raw += len(content.encode())
        texts[pdf] = json.dumps({"content": content, "indexedPages": 12, "totalPages": 12}).encode()
    library.set_fulltexts(texts)
    server = ZoteroServer(library, keys={KEY: None}).start()
    server.latency = latency
    conn.send((server.url, raw, words[:2000]))
    while True:
        command, *_ = conn.recv()
        if command == "stop":
            server.stop()
            conn.send(None)
            return
        if command == "reset":
            server.reset()
            conn.send(None)
        elif command == "requests":
            conn.send(len(server.requests))
        elif command == "big":
            paper = library.add_item("The big one", creators=[])
            pdf = library.add_item("Big PDF", "attachment", parent=paper, contentType="application/pdf")
            content = ("bigword " + make_text(rng, words, cumulative, BIG))[:BIG]
            library.set_fulltext(pdf, content, indexedChars=BIG, totalChars=BIG * 2)
            conn.send(len(content.encode()))


def rss_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024 if sys.platform != "darwin" else peak / 2**20


def without_text_size(store: Path, scratch: Path) -> tuple[int, int]:
    """The store's size compacted, with and without the full-text tables."""
    whole, bare = scratch / "whole.sqlite", scratch / "bare.sqlite"
    for path in (whole, bare):
        path.unlink(missing_ok=True)
    db = sqlite3.connect(store)
    db.execute("VACUUM INTO ?", (str(whole),))
    db.close()
    db = sqlite3.connect(whole)
    db.execute("VACUUM INTO ?", (str(bare),))
    db.close()
    db = sqlite3.connect(bare)
    db.execute("DROP TABLE fulltext_index")
    db.execute("DROP TABLE fulltext")
    db.commit()
    db.execute("VACUUM")
    db.close()
    return whole.stat().st_size, bare.stat().st_size


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--papers", type=int, default=5000)
    parser.add_argument("--chars", type=int, default=60_000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--naive", type=int, default=200, help="texts a one-at-a-time client fetches")
    args = parser.parse_args()

    import httpx2

    import zotsync
    from zotsync.app.pull import pull
    from zotsync.config import SourceConfig
    from zotsync.sources.web import WebSource
    from zotsync.store import Store

    context = multiprocessing.get_context("spawn")
    conn, child = context.Pipe()
    process = context.Process(target=serve, args=(child, args.papers, args.chars, args.latency), daemon=True)
    process.start()
    url, raw, words = conn.recv()

    def call(command: str) -> Any:
        conn.send((command,))
        return conn.recv()

    rows: list[tuple[str, str, str, bool]] = []
    with tempfile.TemporaryDirectory(prefix="zotsync-bench-fulltext-") as folder_name:
        folder = Path(folder_name)
        store_path = folder / "store.sqlite"
        source_config = SourceConfig(
            type="web", library_type="user", library_id=USER, api_key=KEY, base_url=url
        )
        config_path = folder / "zotsync.yaml"
        config_path.write_text(
            f"source:\n  type: web\n  library_type: user\n  library_id: '{USER}'\n  api_key: {KEY}\n"
            f"  base_url: {json.dumps(url)}\ncatalog: {json.dumps(str(ROOT / 'seeds' / 'catalog.yaml'))}\n"
            "store: store.sqlite\nfulltext:\n  enabled: true\nsync:\n  deadline: 3600\n",
            encoding="utf-8",
        )

        # first pull: items and texts
        call("reset")
        started = time.perf_counter()
        with WebSource(source_config, deadline=3600) as source, Store(store_path) as store:
            report = pull(source, store, fulltext=True)
            requests = source.requests
        first = time.perf_counter() - started
        item_pages = math.ceil(2 * args.papers / 100) + 1  # items and the (empty) collections
        floor = (math.ceil(item_pages / 4) + 1 + math.ceil(args.papers / 4)) * args.latency
        fetched = report.texts.fetched if report.texts else 0
        rows.append(
            (
                "first pull",
                f"{first:.1f} s, {requests} requests, {fetched} texts ({raw / 2**20:.0f} MB)",
                f"<= 1.2 x floor {floor:.1f} s ({first / floor:.2f} x)",
                first <= 1.2 * floor and fetched == args.papers,
            )
        )
        # side by side: a client that fetches the texts one at a time (as Kerko does), on a sample
        sample = min(args.naive, args.papers)
        with Store(store_path) as store:
            keys = sorted(store.fulltext_stamps())[:sample]
        started = time.perf_counter()
        with httpx2.Client(base_url=url, headers={"Zotero-API-Key": KEY}, trust_env=False) as client:
            for key in keys:
                client.get(f"/users/{USER}/items/{key}/fulltext").json()
        naive = (time.perf_counter() - started) / max(1, sample) * args.papers
        rows.append(("one at a time", f"~{naive:.0f} s for {args.papers} texts (from {sample} timed)",
                     f"zotsync {naive / first:.1f} x faster", first < naive))  # fmt: skip
        # no-change sync
        call("reset")
        started = time.perf_counter()
        with WebSource(source_config) as source, Store(store_path) as store:
            pull(source, store, fulltext=True)
            requests = source.requests
        quiet = time.perf_counter() - started
        rows.append(("no-change sync", f"{quiet:.2f} s, {requests} request", "1 request, <= 0.5 s",
                     requests == 1 and quiet <= 0.5))  # fmt: skip
        # the store's growth
        whole, bare = without_text_size(store_path, folder)
        growth = (whole - bare) / raw
        rows.append(("store growth", f"{(whole - bare) / 2**20:.0f} MB for {raw / 2**20:.0f} MB of text",
                     f"<= 1.0 x ({growth:.2f} x)", growth <= 1.0))  # fmt: skip
        # search
        config = zotsync.load_config(config_path)
        zotsync.search(config, words[5])  # builds the index once
        rng = random.Random(3)
        times = []
        found = 0
        for n in range(args.queries):
            query = " ".join(rng.sample(words[20:2000], 1 + n % 2))
            started = time.perf_counter()
            found += bool(zotsync.search(config, query))
            times.append(time.perf_counter() - started)
        p50 = statistics.median(times) * 1000
        p95 = statistics.quantiles(times, n=20)[-1] * 1000
        rows.append(("search", f"p50 {p50:.0f} ms, p95 {p95:.0f} ms ({found}/{args.queries} found)",
                     "p50 <= 100, p95 <= 300 ms", p50 <= 100 and p95 <= 300))  # fmt: skip
        # one 5 MB text
        big = call("big")
        before = rss_mb()
        started = time.perf_counter()
        with WebSource(source_config) as source, Store(store_path) as store:
            report = pull(source, store, fulltext=True)
        big_pull = time.perf_counter() - started
        started = time.perf_counter()
        hits = zotsync.search(config, "bigword")
        big_search = time.perf_counter() - started
        ok = bool(hits) and hits[0].where == "fulltext" and big_pull < 10 and big_search < 1
        measured = (
            f"pulled in {big_pull:.2f} s, found in {big_search * 1000:.0f} ms, "
            f"RSS {before:.0f} → {rss_mb():.0f} MB ({big / 2**20:.1f} MB)"
        )
        rows.append(("a 5 MB text", measured, "bounded", ok))
        peak = rss_mb()
        rows.append(("peak RSS", f"{peak:.0f} MB", "<= 400 MB", peak <= 400))
    call("stop")
    process.join(10)
    width = max(len(r[0]) for r in rows)
    print(f"{args.papers} papers × {args.chars // 1000} KB of text at {args.latency * 1000:.0f} ms a request")
    for name, measured, target, ok in rows:
        print(f"{name:<{width}}  {measured:<60}  {target:<32}  {'ok' if ok else 'MISS'}")
    return 0 if all(ok for *_, ok in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
