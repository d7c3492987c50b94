"""Note pages at scale: 100,000 items with 30,000 child notes and 150,000 annotations, from the web.

    python bench/bench_notes.py [--quick] [--repeat 3]

The library (bench_scale.py's 100,000 items, then child notes up to 30,000 and 150,000 highlight, note,
underline and image annotations in the PDFs) is built and served by a fake Zotero API in its own process
(tests/zotero_server.py, no latency), with bench_scale.py's 5,000-entry catalogue. Each measure runs the
real `zotsync -q sync --json` in a child process:

- the first sync, which pulls everything and writes every note page (for information);
- a sync after no change (goal: <= 1 s, as for a library without notes);
- a sync after one note was edited in a paper whose 📝 is already set (goal: <= 2 s), which must rewrite
  that paper's note page and no other file.

Wall times are medians of --repeat runs (each edit run edits another note). Prints the load average
first and the figures side by side with their goals; exits 1 when a goal is missed.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from bench_scale import (  # noqa: E402
    Row,
    build_catalogue,
    build_library,
    compile_package,
    report,
    zotsync_command,
)
from zotero_server import FakeLibrary, ZoteroServer  # noqa: E402

KEY = "BENCHNOTESKEY0000000000"
WORDS = ("tensor", "kernel", "fusion", "graph", "compiler", "tile", "warp", "memory", "schedule", "sparse")
COLOURS = ("#ffd400", "#ff6666", "#5fb236", "#2ea8e5", "#a28ae5")
KINDS = ("highlight", "highlight", "highlight", "underline", "note", "image")


def note_html(rng: random.Random, n: int) -> str:
    """A note as Zotero 7's editor writes one: a heading, paragraphs, a highlight, a citation, a list."""

    def words(k: int) -> str:
        return " ".join(rng.choices(WORDS, k=k))

    return (
        f'<div data-schema-version="9"><h1>Reading notes {n}</h1>\n<p>{words(30)}</p>\n'
        f'<p><span class="highlight" data-annotation="%7B%7D">“{words(15)}”</span> '
        f'<span class="citation" data-citation="%7B%7D">(<span class="citation-item">Author, 2024, '
        f"p. {n % 300}</span>)</span> {words(10)}</p>\n<ul><li>{words(8)}</li><li><strong>{words(4)}"
        f"</strong> {words(6)}</li></ul>\n<p>{words(25)}</p></div>"
    )


def build(n_items: int, n_notes: int, n_annotations: int, seed: int = 11) -> tuple[FakeLibrary, str]:
    """The library and the catalogue."""
    rng = random.Random(seed)
    objects = build_library(n_items, seed=seed)
    catalogue = build_catalogue(objects, max(1000, n_items // 20))
    regular = [
        o["data"]["key"]
        for o in objects
        if "parentItem" not in o["data"] and "name" not in o["data"] and not o["data"].get("deleted")
    ]
    pdfs = [o["data"]["key"] for o in objects if o["data"].get("contentType") == "application/pdf"]
    notes = [o for o in objects if o["data"].get("itemType") == "note"]
    for obj in notes:  # the synthetic library's notes, as the note editor writes them
        obj["data"]["note"] = note_html(rng, len(notes))
    library = FakeLibrary.from_snapshot(objects)
    del objects
    for n in range(max(0, n_notes - len(notes))):
        key = library.new_key()
        data = {"itemType": "note", "parentItem": rng.choice(regular), "note": note_html(rng, n)}
        library.items[key] = library._item_object(
            {"key": key, "version": 1, **data, "tags": [], "relations": {}}
        )
    for n in range(n_annotations):
        key, kind = library.new_key(), rng.choice(KINDS)
        page = rng.randint(0, 20)
        data = {
            "itemType": "annotation",
            "parentItem": rng.choice(pdfs),
            "annotationType": kind,
            "annotationText": " ".join(rng.choices(WORDS, k=12))
            if kind in ("highlight", "underline")
            else "",
            "annotationComment": " ".join(rng.choices(WORDS, k=6)) if n % 3 == 0 else "",
            "annotationColor": rng.choice(COLOURS),
            "annotationPageLabel": str(page + 1),
            "annotationSortIndex": f"{page:05d}|{rng.randint(0, 9999):06d}|{rng.randint(0, 999):05d}",
            "annotationPosition": json.dumps({"pageIndex": page, "rects": [[1, 2, 3, 4]]}),
        }
        library.items[key] = library._item_object(
            {"key": key, "version": 1, **data, "tags": [], "relations": {}}
        )
    return library, catalogue


def serve(conn: Connection, n_items: int, n_notes: int, n_annotations: int, folder: str) -> None:
    """The fake API in its own process (the library's memory stays out of the benchmark's)."""
    library, catalogue = build(n_items, n_notes, n_annotations)
    Path(folder, "catalog.yaml").write_text(catalogue, encoding="utf-8")
    counts = {
        kind: sum(o["data"].get("itemType") == kind for o in library.items.values())
        for kind in ("note", "annotation", "attachment")
    }
    live = {k for k, o in library.items.items() if not o["data"].get("deleted")}
    editable = sorted(
        k
        for k, o in library.items.items()
        if o["data"].get("itemType") == "note" and o["data"]["parentItem"] in live
    )
    with ZoteroServer(library, keys={KEY: None}) as server:
        conn.send((server.url, len(library.items), counts))
        edits = 0
        while True:
            command, *_ = conn.recv()
            if command == "stop":
                return
            if command == "edit":  # a note of a paper on the page (so its 📝 is set already), edited
                edits += 1
                key = editable[edits * 7919 % len(editable)]
                library.edit_item(key, note=f"<p>Edited note, round {edits}: <b>{'tile ' * 20}</b></p>")
                conn.send((key, library.items[key]["data"]["parentItem"]))


def sync_json(config: Path) -> tuple[float, dict[str, Any]]:
    """One `zotsync sync --json` in its own process: wall time and the JSON it printed."""
    import subprocess

    started = time.perf_counter()
    process = subprocess.run(
        [*zotsync_command(), "--config", str(config), "sync", "--json"],
        capture_output=True,
        text=True,
        timeout=3600,
        env={k: v for k, v in os.environ.items() if not k.startswith(("ZOTERO_", "ZOTSYNC_"))},
    )
    seconds = time.perf_counter() - started
    if process.returncode != 0:
        raise SystemExit(f"zotsync sync failed ({process.returncode}): {process.stderr.strip()[-800:]}")
    return seconds, json.loads(process.stdout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of the sizes, for a fast try")
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure; the median is shown")
    args = parser.parse_args(argv)
    scale = 10 if args.quick else 1
    n_items, n_notes, n_annotations = 100_000 // scale, 30_000 // scale, 150_000 // scale
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    print(
        f"note pages at scale: {n_items:,} items, {n_notes:,} child notes, {n_annotations:,} annotations; "
        f"{os.cpu_count()} CPUs"
        + (f", load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}" if load else ""),
        flush=True,
    )
    compile_package()
    folder = Path(tempfile.mkdtemp(prefix="zotsync-notes-"))
    context = multiprocessing.get_context("spawn")
    conn, child = context.Pipe()
    server = context.Process(target=serve, args=(child, n_items, n_notes, n_annotations, str(folder)))
    server.start()
    rows: list[Row] = []
    try:
        url, total, counts = conn.recv()
        config = folder / "zotsync.yaml"
        config.write_text(
            "source:\n  type: web\n  library_type: user\n  library_id: '1'\n"
            f"  api_key: {KEY}\n  base_url: {url}\ncatalog: catalog.yaml\nstore: store/zotsync.sqlite\n"
            "exports:\n  dir: exports\n  formats: [md, csv]\n",
            encoding="utf-8",
        )
        print(f"  serving {total:,} objects: {counts}", flush=True)
        seconds, _ = sync_json(config)
        pages = sorted((folder / "exports" / "notes").glob("*.md"))
        rows.append(
            Row("first sync, every note page written", f"{seconds:.1f} s, {len(pages):,} pages", "", None)
        )

        times = [sync_json(config)[0] for _ in range(args.repeat)]
        rows.append(_timed("no-change sync", statistics.median(times), 1.0))

        catalogue_page = folder / "exports" / "catalog.md"
        times, problems = [], []
        for _ in range(args.repeat):
            before = {p: p.stat().st_mtime_ns for p in [catalogue_page, *pages]}
            conn.send(("edit",))
            note, paper = conn.recv()
            seconds, result = sync_json(config)
            times.append(seconds)
            target = folder / "exports" / "notes" / f"{paper}.md"
            changed = sorted(p for p, mtime in before.items() if p.stat().st_mtime_ns != mtime)
            if result["files"] != [str(target)] or changed != [target]:
                problems.append(f"note {note}: wrote {result['files']}, changed {[p.name for p in changed]}")
        row = _timed("one edited note: only its page rewritten", statistics.median(times), 2.0)
        if problems:
            row.ok = False
            row.notes += problems
        rows.append(row)
    finally:
        conn.send(("stop",))
        server.join(30)
        shutil.rmtree(folder, ignore_errors=True)
    return report(rows)


def _timed(measure: str, seconds: float, goal: float) -> Row:
    return Row(measure, f"{seconds:.2f} s", f"<= {goal:g} s", seconds <= goal)


if __name__ == "__main__":
    sys.exit(main())
