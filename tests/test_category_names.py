"""Category names: one name however its accents are encoded, and `status` flags names one typo apart."""

from __future__ import annotations

import csv
import io
import json
import unicodedata
from pathlib import Path

from conftest import write_config
from factories import api_collection, api_item, write_json
from hypothesis import given, settings
from hypothesis import strategies as st

from zotsync.reconcile.categories import near_duplicates

NFC = "Caf\u00e9 Papers"  # é as one character, as most systems type it
NFD = "Cafe\u0301 Papers"  # e + a combining acute, as macOS file names and some keyboards give it


def project(folder: Path, categories: list[str], collections: list[str]) -> Path:
    """A catalogue with one entry per category, and a library with one uncurated item per collection."""
    objects = []
    for number, name in enumerate(collections):
        key, letter = f"CLCT{'ABCDEFGH'[number]}222", "ABCDEFGH"[number]
        objects += [
            api_collection(key, name),
            api_item(f"ITEM{letter}222", f"Paper {number}", collections=[key]),
        ]
    write_json(folder / "library.json", objects)
    entries = "".join(
        f'  - name: "{name}"\n    entries:\n      - title: "Curated {number}"\n'
        for number, name in enumerate(categories)
    )
    (folder / "catalog.yaml").write_text(f"categories:\n{entries}", encoding="utf-8")
    return write_config(
        folder,
        "source: {type: snapshot, path: library.json}\ncatalog: catalog.yaml\nstore: store.sqlite\n"
        "exports: {dir: out, language: en}\n",
    )


def headings(folder: Path) -> list[str]:
    page = (folder / "out" / "catalog.md").read_text(encoding="utf-8")
    return [line[3:] for line in page.splitlines() if line.startswith("## ")]


def test_a_category_and_a_collection_spelt_nfc_and_nfd_are_one_heading(tmp_path: Path, run) -> None:
    assert NFC != NFD and unicodedata.normalize("NFC", NFD) == NFC
    config = str(project(tmp_path, [NFC], [NFD]))
    assert run("-q", "--config", config, "sync").code == 0
    assert headings(tmp_path) == [NFC]
    rows = list(csv.DictReader(io.StringIO((tmp_path / "out" / "catalog.csv").read_text(encoding="utf-8"))))
    assert {row["category"] for row in rows} == {NFC}
    assert {row["title"] for row in rows} == {"Curated 0", "Paper 0"}


def test_two_collections_spelt_nfc_and_nfd_are_one_heading(tmp_path: Path, run) -> None:
    config = str(project(tmp_path, [], [NFD, NFC]))
    assert run("-q", "--config", config, "sync").code == 0
    assert headings(tmp_path) == [NFC]
    listed = run("--config", config, "list", "--collection", NFD)
    assert listed.code == 0 and "Paper 0" in listed.out and "Paper 1" in listed.out


def test_a_catalogue_naming_one_category_in_nfc_and_nfd_names_it_twice(tmp_path: Path, run) -> None:
    config = str(project(tmp_path, [NFC, NFD], []))
    result = run("-q", "--config", config, "sync")
    assert result.code == 2
    assert f"category '{NFC}' appears twice" in result.err and result.err.count("\n") == 1
    assert not (tmp_path / "out" / "catalog.md").exists()


def test_adopt_into_a_category_typed_in_another_normal_form(tmp_path: Path, run) -> None:
    config = str(project(tmp_path, [NFD], [NFC]))
    assert run("-q", "--config", config, "pull").code == 0
    result = run("--config", config, "adopt", "ITEMA222", "--category", NFC)
    assert result.code == 0, result.err
    text = (tmp_path / "catalog.yaml").read_text(encoding="utf-8")
    assert text.count("name:") == 1 and 'title: "Paper 0"' in text  # into the one category, not a new one


def test_status_flags_a_category_one_typo_from_another(tmp_path: Path, run) -> None:
    config = str(
        project(tmp_path, ["LLM Inference", "GPU", "Papers 2023"], ["LLM inferance", "TPU", "Papers 2024"])
    )
    assert run("-q", "--config", config, "sync").code == 0
    assert "LLM inferance" in headings(tmp_path)  # the page keeps both: the curator decides
    report = json.loads(run("--config", config, "status", "--format", "json").out)
    assert report["near_duplicate_categories"] == [{"names": ["LLM Inference", "LLM inferance"]}]
    text = run("--config", config, "status").out
    assert "near-duplicate category names: 1\n  - LLM Inference ≈ LLM inferance\n" in text


def test_near_duplicates_are_one_slip_apart_and_no_more() -> None:
    names = ["LLM Inference", "LLM inferance", "llm  inference", "Compiler", "Compilers", "Compilres"]
    names += ["GPU", "TPU", "Papers 2023", "Papers 2024", "Graph Compilers", "Tensor Compilers"]
    assert near_duplicates(names) == [
        ("Compiler", "Compilers"),
        ("Compilers", "Compilres"),  # two letters swapped; Compiler → Compilres takes two slips
        ("LLM Inference", "LLM inferance"),
        ("LLM Inference", "llm  inference"),
        ("LLM inferance", "llm  inference"),
    ]


WORD = st.text(alphabet="abcdefghij", min_size=1, max_size=9)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(WORD, min_size=1, max_size=3).map(" ".join), max_size=12))
def test_near_duplicates_find_every_pair_a_plain_comparison_finds(names: list[str]) -> None:
    """The blocking never misses a pair: the same answer as comparing every name with every other."""

    def one_slip(a: str, b: str) -> bool:
        x, y = a.casefold().split(), b.casefold().split()
        if "".join(x) == "".join(y):
            return True
        differing = [(p, q) for p, q in zip(x, y, strict=False) if p != q]
        if len(x) != len(y) or len(differing) != 1:
            return False
        ((p, q),) = differing
        if min(len(p), len(q)) < 4:
            return False
        swaps = {p[:i] + p[i + 1] + p[i] + p[i + 2 :] for i in range(len(p) - 1)}
        edits = {p[:i] + p[i + 1 :] for i in range(len(p))} | swaps
        edits |= {p[:i] + c + p[i + 1 :] for i in range(len(p)) for c in set(q)}
        edits |= {p[:i] + c + p[i:] for i in range(len(p) + 1) for c in set(q)}
        return q in edits

    unique = sorted(set(names))
    expected = [(a, b) for i, a in enumerate(unique) for b in unique[i + 1 :] if one_slip(a, b)]
    assert near_duplicates(names) == expected
