"""Reconcile a large synthetic library against a large catalogue; print time, memory, and the evidence
for the fuzzy threshold.

    python bench/bench_reconcile.py [--items 100000] [--entries 5000] [--seed 7]

The catalogue mixes 20% exact titles, 20% DOIs, 10% titles with a small edit, and 50% papers that are
not in the library. Target: the match in < 5 s on 2 cores. Exits non-zero when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import sys
import time
import tracemalloc
from pathlib import Path

from rapidfuzz import fuzz

from zotsync import normalize
from zotsync.model import CatalogueEntry, Item
from zotsync.reconcile import match
from zotsync.reconcile.match import FUZZY_MARGIN, FUZZY_THRESHOLD, TitleIndex

ROOT = Path(__file__).resolve().parent.parent
ALPHABET = "23456789ABCDEFGHIJKLMNPQRSTUVWXYZ"
SYLLABLES = [
    "ten",
    "sor",
    "ker",
    "nel",
    "fu",
    "sion",
    "gra",
    "ph",
    "com",
    "pi",
    "ler",
    "tile",
    "warp",
    "mem",
    "ory",
    "sched",
    "ule",
    "spar",
    "se",
    "flow",
    "data",
    "par",
    "al",
    "lel",
    "quant",
    "ize",
    "cache",
]


def vocabulary(rng: random.Random, size: int = 6000) -> list[str]:
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 3))))
    common = ["for", "the", "of", "and", "on", "with", "a", "deep", "learning", "gpu", "efficient", "towards"]
    return sorted(words) + common * 40  # function words and buzzwords recur, as in real titles


def make_title(rng: random.Random, words: list[str]) -> str:
    name = rng.choice(words).capitalize()
    return f"{name}: " + " ".join(rng.choice(words) for _ in range(rng.randint(5, 12)))


def small_edit(rng: random.Random, title: str, words: list[str]) -> str:
    """What drifts between a curated title and Zotero's: a typo, a word swapped, dropped or added."""
    parts = title.split(" ")
    kind = rng.choice(["typo", "swap", "drop", "add"])
    i = rng.randrange(1, len(parts))
    if kind == "typo" and len(parts[i]) > 3:
        w = parts[i]
        j = rng.randrange(len(w) - 1)
        parts[i] = w[:j] + w[j + 1] + w[j] + w[j + 2 :]
    elif kind == "swap":
        parts[i] = rng.choice(words)
    elif kind == "drop" and len(parts) > 4:
        del parts[i]
    else:
        parts.insert(i, rng.choice(words))
    return " ".join(parts)


def key(n: int) -> str:
    digits = []
    for _ in range(8):
        n, r = divmod(n, len(ALPHABET))
        digits.append(ALPHABET[r])
    return "".join(digits)


def build(n_items: int, n_entries: int, seed: int) -> tuple[list[Item], list[CatalogueEntry], dict[str, str]]:
    rng = random.Random(seed)
    words = vocabulary(rng)
    items, seen = [], set()
    while len(items) < n_items:
        title = make_title(rng, words)
        if normalize.title(title) in seen:
            continue
        seen.add(normalize.title(title))
        n = len(items)
        data = {
            "key": key(n),
            "version": 1,
            "itemType": "journalArticle",
            "title": title,
            "date": str(2000 + n % 26),
            "DOI": f"10.5555/{n}" if n % 2 else "",
        }
        items.append(Item.from_api({"data": data, "library": {"type": "user", "id": 1}}))
    picks = rng.sample(range(n_items), n_entries // 2)
    entries, truth = [], {}
    for i, n in enumerate(picks):
        item = items[n]
        share = i / len(picks)
        if share < 0.4:  # 20% of the catalogue: the exact title
            entries.append(CatalogueEntry("C", item.title))
        elif share < 0.8:  # 20%: a DOI and an unrelated working title
            if not item.doi:
                entries.append(CatalogueEntry("C", item.title))
            else:
                entries.append(CatalogueEntry("C", make_title(rng, words), doi=item.doi.upper()))
        else:  # 10%: a small edit of the title
            entries.append(CatalogueEntry("C", small_edit(rng, item.title, words)))
        truth[normalize.title(entries[-1].title)] = item.key
    while len(entries) < n_entries:  # 50%: not in the library
        title = make_title(rng, words)
        if normalize.title(title) not in seen:
            entries.append(CatalogueEntry("C", title))
    return items, entries, truth


def threshold_evidence(items: list[Item], entries: list[CatalogueEntry], truth: dict[str, str]) -> list[str]:
    """Scores of true small-edit pairs against the best score of papers that are not in the library."""
    index = TitleIndex({i.key: normalize.title(i.title) for i in items})
    by_key = {i.key: normalize.title(i.title) for i in items}
    edited = [
        e for e in entries if (t := normalize.title(e.title)) in truth and t != by_key[truth[t]] and not e.doi
    ]
    true_scores = sorted(
        fuzz.ratio(normalize.title(e.title), by_key[truth[normalize.title(e.title)]]) for e in edited
    )
    absent = [e for e in entries if normalize.title(e.title) not in truth][:1000]
    false_scores = sorted(
        b[0].score for e in absent if (b := index.nearest(normalize.title(e.title), limit=1))
    )
    demo = json.loads((ROOT / "seeds" / "zotero-library.json").read_text(encoding="utf-8"))
    demo_titles = [
        normalize.title(o["data"]["title"])
        for o in demo
        if o["data"].get("title") and "parentItem" not in o["data"]
    ]
    demo_max = max(
        fuzz.ratio(a, b) for i, a in enumerate(demo_titles) for b in demo_titles[i + 1 :] if a != b
    )
    lines = [f"{'threshold':>9} | {'small edits found':>17} | {'absent papers above it':>22}"]
    for t in (80, 85, 88, 90, 92, 95):
        found = sum(s >= t for s in true_scores) / len(true_scores)
        wrong = sum(s >= t for s in false_scores) / max(1, len(false_scores))
        lines.append(f"{t:>9} | {found:>16.1%} | {wrong:>21.1%}")
    lines.append(
        f"small-edit scores: min {true_scores[0]:.1f}, 10th pct {true_scores[len(true_scores) // 10]:.1f}; "
        f"best score of an absent paper: max {false_scores[-1]:.1f}; "
        f"closest two distinct demo-library titles: {demo_max:.1f}"
    )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--entries", type=int, default=5_000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    items, entries, truth = build(args.items, args.entries, args.seed)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    result = match(entries, items)
    seconds = time.perf_counter() - start
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracemalloc.start()
    match(entries, items)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()

    got = {t: i.key for t, i in result.by_title.items()}
    correct = sum(got.get(t) == k for t, k in truth.items())
    wrong = sum(1 for t, k in got.items() if truth.get(t) != k)
    by_rule: dict[str, int] = {}
    for rule in result.rule.values():
        by_rule[rule] = by_rule.get(rule, 0) + 1
    print(f"reconcile {args.items:,} Zotero items × {args.entries:,} curated entries (seed {args.seed})")
    print(f"  match wall time     {seconds:6.2f} s   (target < 5 s)")
    rss_growth = max(0, rss_after - rss_before) / 1024
    print(f"  peak traced memory  {peak / 2**20:6.1f} MiB; process max RSS grew {rss_growth:.1f} MiB")
    print(f"  matched {len(got):,}: {correct:,} correct, {wrong:,} wrong, of {len(truth):,} findable")
    print(f"  by rule {by_rule}")
    print(f"  ambiguities {len(result.ambiguities)}, duplicates {len(result.duplicates)}")
    print(f"fuzzy threshold {FUZZY_THRESHOLD:.0f}, margin {FUZZY_MARGIN:.0f}; evidence (fuzz.ratio):")
    for line in threshold_evidence(items, entries, truth):
        print("  " + line)
    return 0 if seconds < 5 and wrong == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
