"""Category names one slip apart: `LLM inferance` beside `LLM Inference` is a section nobody meant.

`status` lists them; the page keeps both (the curator decides which is the typo). Names are compared
case-folded, and are near when they differ only in case and spacing, or in one word of letters (four or
more) by one typo: a letter added, dropped, replaced, or two swapped. Words with digits never count
(`Papers 2023` beside `Papers 2024`), nor short ones (`GPU` beside `TPU`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from rapidfuzz.distance import OSA

_SHORTEST_WORD = 4  # shorter words are often other words after one edit: GPU, TPU, CPU; LLM, VLM


def near_duplicates(names: Iterable[str]) -> list[tuple[str, str]]:
    """Pairs of distinct names one slip apart, each pair sorted, in order. Linear in the names: only
    names that share all words but one, and a one-letter deletion of that one, are compared."""
    unique = sorted(set(names))
    folded = {name: name.casefold().split() for name in unique}
    buckets: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for name, words in folded.items():
        buckets[("", "".join(words))].append(name)  # case and spacing only
        for position, word in enumerate(words):
            if len(word) < _SHORTEST_WORD or not word.isalpha():
                continue
            rest = (str(position), *words[:position], "\0", *words[position + 1 :])
            for variant in {word} | {word[:i] + word[i + 1 :] for i in range(len(word))}:
                buckets[(*rest, variant)].append(name)
    pairs: set[tuple[str, str]] = set()
    for key, members in buckets.items():
        for i, first in enumerate(members):
            for second in members[i + 1 :]:
                if key[0] == "" or _one_typo(folded[first], folded[second], int(key[0])):
                    pairs.add((first, second))
    return sorted(pairs)


def _one_typo(first: list[str], second: list[str], position: int) -> bool:
    a, b = first[position], second[position]
    return len(b) >= _SHORTEST_WORD and b.isalpha() and OSA.distance(a, b, score_cutoff=1) <= 1
