"""The scholarly graph at scale: 5,000 papers (4,000 with a DOI) against a fake OpenAlex answering after
50 ms.

    python bench/bench_citations.py [--items 5000] [--quick]

The library is a snapshot of papers with a title, a first author and a year; 80 % carry a DOI. The fake
OpenAlex (tests/metadata_server.py, on 127.0.0.1) knows every one of them, each citing a few papers of
the library and some of 60 works the library lacks. zotsync runs `sync` with `enrich.citations` on, in
this process, at OpenAlex's published pace (10 requests a second), and the bench measures, each beside
its goal:

- requests of the first sync: DOI batches ≤ 1 per 50 DOI'd papers, plus one title search per paper
  without a DOI;
- requests of a sync on the unchanged library (0);
- `zotsync suggest` once the titles are in the store (≤ 1 s), and the id batches its first run asked.

Exits 1 when a goal is missed. A full run takes about two minutes (1,000 title searches at 10 a second);
`--quick` does 1,000 papers. Timings are wall time on a shared machine: noisy.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from metadata_server import MetadataServer, Paper  # noqa: E402

ALPHABET = "23456789ABCDEFGHIJKLMNPQRSTUVWXYZ"
LATENCY = 0.05
EXTERNAL = 60  # works the library lacks, which its papers cite


def key_of(number: int) -> str:
    digits = [ALPHABET[number // len(ALPHABET) ** power % len(ALPHABET)] for power in range(7)]
    return "C" + "".join(reversed(digits))


def word_of(number: int) -> str:
    letters = "bcdfghjklmnpqrstvwxz"
    word = ""
    while True:
        number, digit = divmod(number, len(letters))
        word += letters[digit] + "aeiou"[number % 5]
        if not number:
            return word


def library(items: int) -> tuple[list[dict], list[Paper]]:
    chance = random.Random(31)
    objects, papers = [], []
    for n in range(items):
        title = " ".join(word_of(n * 5 + k) for k in range(5)).capitalize()
        family, year = f"Zh{word_of(n * 3 + 1)}", str(2015 + n % 10)
        doi = f"10.5555/bench.{n}" if n % 5 else ""
        data = {
            "key": key_of(n),
            "version": 1,
            "itemType": "journalArticle",
            "title": title,
            "creators": [{"creatorType": "author", "firstName": "Lin", "lastName": family}],
            "date": year,
            "DOI": doi.upper(),  # OpenAlex answers in lower case, with its https://doi.org/ prefix
            "tags": [],
            "collections": [],
            "relations": {},
        }
        objects.append({"key": data["key"], "version": 1, "library": {"type": "user", "id": 1}, "data": data})
        cites = [f"W{10**6 + chance.randrange(items)}" for _ in range(chance.randrange(6))]
        cites += [f"W{9 * 10**6 + chance.randrange(EXTERNAL)}" for _ in range(chance.randrange(4))]
        papers.append(
            Paper(
                title,
                (f"Lin {family}",),
                year,
                "Journal",
                kind="journal",
                doi=doi,
                openalex=f"W{10**6 + n}",
                cited_by=chance.randrange(2000),
                references=tuple(cites),
                retracted=n % 997 == 0,
                oa_url=f"https://repository.example/{n}.pdf" if n % 3 == 0 else "",
                known_by=("openalex",),
            )
        )
    for n in range(EXTERNAL):
        title = "External " + " ".join(word_of(10**6 + n * 3 + k) for k in range(3))
        papers.append(
            Paper(title, ("Ada Lovelace",), "2010", openalex=f"W{9 * 10**6 + n}", known_by=("openalex",))
        )
    return objects, papers


def prepare(folder: Path, items: int, server: MetadataServer) -> Path:
    objects, papers = library(items)
    server.add(*papers)
    (folder / "library.json").write_text(json.dumps(objects), encoding="utf-8")
    (folder / "catalog.yaml").write_text("title: Bench\ncategories: []\n", encoding="utf-8")
    config = folder / "zotsync.yaml"
    endpoint = json.dumps({"openalex": server.endpoints()["openalex"]})
    config.write_text(
        "source: {type: snapshot, path: library.json}\ncatalog: catalog.yaml\nstore: store.sqlite\n"
        "exports: {dir: exports, formats: [md, csv]}\n"
        f"enrich:\n  citations: true\n  deadline: 3600\n  endpoints: {endpoint}\n",
        encoding="utf-8",
    )
    return config


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=5_000)
    parser.add_argument("--quick", action="store_true", help="1,000 papers")
    args = parser.parse_args()
    items = 1_000 if args.quick else args.items
    with_doi = sum(1 for n in range(items) if n % 5)
    load = " ".join(f"{v:.2f}" for v in os.getloadavg())
    print(f"load average: {load}; {items} papers, {with_doi} with a DOI; OpenAlex answers after 50 ms")

    from zotsync.app.suggest import suggest
    from zotsync.app.sync import run_sync
    from zotsync.config import load_config

    folder = Path(tempfile.mkdtemp(prefix="bench-citations-"))
    try:
        with MetadataServer(latency=LATENCY) as server:
            config = load_config(prepare(folder, items, server))
            started = time.monotonic()
            first = run_sync(config).processed[0].counts
            first_wall = time.monotonic() - started
            batches = sum(1 for r in server.requests if r.params.get("filter", "").startswith("doi:"))
            searches = sum(1 for r in server.requests if "search" in r.params)
            total = len(server.requests)
            server.reset()
            again = run_sync(config).processed[0].counts
            unchanged = len(server.requests) + again["requests"]
            server.reset()
            started = time.monotonic()
            found, _ = suggest(config, 3, 20)
            suggest_first = time.monotonic() - started
            id_batches = len(server.requests)
            server.reset()
            walls = []
            for _ in range(3):
                began = time.perf_counter()
                suggest(config, 3, 20)
                walls.append(time.perf_counter() - began)
            suggest_asked = len(server.requests)
    finally:
        shutil.rmtree(folder, ignore_errors=True)

    allowed = math.ceil(with_doi / 50)
    suggest_wall = min(walls)
    rows = [
        ("papers found", f"{first['found']} of {items}", "all", first["found"] == items),
        ("DOI batches, first sync", f"{batches}", f"≤ {allowed} (1 per 50 DOI'd papers)", batches <= allowed),
        (
            "title searches, first sync",
            f"{searches}",
            f"≤ {items - with_doi} (papers without a DOI)",
            searches <= items - with_doi,
        ),
        (
            "all requests, first sync",
            f"{total} in {first_wall:.1f} s",
            "batches + searches",
            total == batches + searches,
        ),
        ("requests, unchanged sync", f"{unchanged}", "0", unchanged == 0),
        (
            "suggest, first run",
            f"{suggest_first:.2f} s, {id_batches} id batches, {len(found)} works",
            "-",
            True,
        ),
        (
            "suggest from the store",
            f"{suggest_wall:.2f} s (best of 3), {suggest_asked} requests",
            "≤ 1 s, 0 requests",
            suggest_wall <= 1.0 and suggest_asked == 0,
        ),
    ]
    width = max(len(r[0]) for r in rows)
    for name, got, goal, ok in rows:
        print(f"{name:<{width}}  {got:<40} goal {goal:<42} {'ok' if ok else 'MISSED'}")
    return 0 if all(ok for *_, ok in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
