"""Rendering and reading costs at scale: the exports of 100k rows, a 5,000-entry catalogue, deep collections.

    python bench/bench_render.py [--rows 100000] [--entries 5000] [--depth 10000]

Prints the median of 3 runs of each, 5 for the YAML (wall seconds; the machine may be shared, so CPU
seconds beside them) and exits 1 when a target is missed. Targets: each export renders 100k rows in
≤ 1.0 s (the whole `export` at 100k has 3 s), the catalogue parses on libyaml ≥ 3× faster (CPU) than on
PyYAML's Python parser, and a 10,000-deep chain of collections gets its paths in ≤ 0.2 s.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable

import yaml

from zotsync import yamlio
from zotsync.catalogue import parse_catalogue
from zotsync.export.csv import render_csv
from zotsync.export.markdown import render_markdown
from zotsync.labels import labels_for
from zotsync.model import Collection, Library, Link, Placement

TARGETS = {"md": 1.0, "csv": 1.0, "paths": 0.2}
YAML_SPEEDUP = 3.0


def rows(count: int) -> list[Placement]:
    out = []
    for i in range(count):
        links = [Link("Paper", f"https://doi.org/10.1145/{i}", kind="paper")]
        if i % 3 == 0:
            links.append(Link("Note", f"notes/n{i}.md"))
        if i % 2:
            links.append(Link("PDF", f"zotero://open-pdf/library/items/P{i:07d}", kind="pdf"))
        links.append(Link("Zotero", f"zotero://select/library/items/K{i:07d}", kind="zotero"))
        out.append(
            Placement(
                category=f"Collection {i % 200} / Sub {i % 7}",
                status="read" if i % 4 == 0 else "unread",
                title=f"Tensor program {i}: scheduling, fusion & layout"
                if i % 10 == 0
                else f"Paper {i} 编译",
                venue="" if i % 5 == 0 else f"OSDI'{i % 25:02d}",
                year=str(2000 + i % 25),
                why="" if i % 2 else f"Because {i} | matters",
                authors=("Hopper, Grace", "Lovelace, Ada"),
                doi=f"10.1145/{i}",
                url=f"https://example.org/{i}",
                noted=i % 6 == 0,
                links=tuple(links),
                zotero_key=f"K{i:07d}",
                tags=("gpu", "ir") if i % 3 else (),
                collections=(f"Collection {i % 200} / Sub {i % 7}",),
            )
        )
    return out


def catalogue_text(entries: int) -> str:
    lines = ["title: Bench", "categories:"]
    for category in range(entries // 50):
        lines += [f"  - name: Category {category}", "    entries:"]
        for i in range(50):
            lines += [
                f'      - title: "Paper {category}-{i}: a study of things"',
                "        venue: OSDI'20",
                "        status: read",
                f"        why: 用 rTask 统一算子内外并行性 {i}",
                f'        links: {{Paper: "https://example.org/{i}", Note: "notes/{i}.md"}}',
            ]
    return "\n".join(lines) + "\n"


def measure(work: Callable[[], object], runs: int = 3) -> tuple[float, float]:
    walls, cpus = [], []
    for _ in range(runs):
        wall, cpu = time.perf_counter(), time.process_time()
        work()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--entries", type=int, default=5_000)
    parser.add_argument("--depth", type=int, default=10_000)
    args = parser.parse_args()

    text = catalogue_text(args.entries)

    class PureStrict(yaml.SafeLoader):  # the same rules on the Python parser, for the comparison
        construct_mapping = yamlio._StrictLoader.construct_mapping

    PureStrict.add_constructor(
        yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
        lambda loader, node: loader.construct_mapping(node, True),
    )
    _, c_cpu = measure(lambda: yamlio.parse_yaml(text, "c.yaml"), runs=5)
    _, py_cpu = measure(lambda: yaml.load(text, Loader=PureStrict), runs=5)
    _, schema_cpu = measure(lambda: parse_catalogue(yamlio.parse_yaml(text, "c.yaml"), "c.yaml"))  # type: ignore[arg-type]

    # after the YAML: 100k live rows would make every GC pass of the parse slower
    page = rows(args.rows)
    labels = labels_for("zh")
    results = {
        "md": measure(lambda: render_markdown("Bench", "", page, labels)),
        "csv": measure(lambda: render_csv(page)),
    }
    chain = tuple(
        Collection(f"K{i:07d}", 1, f"Level {i}", f"K{i - 1:07d}" if i else None)
        for i in reversed(range(args.depth))
    )
    results["paths"] = measure(lambda: Library(collections=chain).collection_paths())

    missed = []
    for name, (wall, cpu) in results.items():
        what = {"md": f"Markdown, {args.rows} rows", "csv": f"CSV, {args.rows} rows"}.get(
            name, f"collection paths, a {args.depth}-deep chain"
        )
        ok = wall <= TARGETS[name]
        missed += [] if ok else [name]
        verdict = "ok" if ok else "MISSED"
        print(f"{what:40} {wall:6.2f} s wall {cpu:6.2f} s CPU  (target ≤ {TARGETS[name]} s) {verdict}")
    speedup = py_cpu / c_cpu
    ok = speedup >= YAML_SPEEDUP or not yaml.__with_libyaml__
    missed += [] if ok else ["yaml"]
    print(
        f"{f'catalogue, {args.entries} entries':40} {c_cpu:6.2f} s CPU on libyaml vs {py_cpu:.2f} s on the "
        f"Python parser: {speedup:.1f}× (target ≥ {YAML_SPEEDUP}×) {'ok' if ok else 'MISSED'}; "
        f"with the schema checks {schema_cpu:.2f} s"
    )
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
