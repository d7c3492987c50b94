"""`list --collection` as a person types it: any case and spacing around ` / `, or the end of a path
when only one path ends so; it says which collection it took, and names the candidates when several fit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from factories import api_collection, api_item, snapshot_project

COLLECTIONS = [
    api_collection("CGPVAAAA", "GPU"),
    api_collection("CKRNAAAA", "Kernels", parent="CGPVAAAA"),
    api_collection("CATTAAAA", "Attention", parent="CKRNAAAA"),
    api_collection("CLLMAAAA", "LLM"),
    api_collection("CLKRAAAA", "Kernels", parent="CLLMAAAA"),
    api_collection("CSYSAAAA", "Systems"),
]
ITEMS = {
    "PGPVAAAA": "CGPVAAAA",
    "PKRNAAAA": "CKRNAAAA",
    "PATTAAAA": "CATTAAAA",
    "PLKRAAAA": "CLKRAAAA",
    "PSYSAAAA": "CSYSAAAA",
}


@pytest.fixture
def config(tmp_path: Path, run) -> str:
    objects = [*COLLECTIONS] + [
        api_item(key, f"Paper {key}", collections=[collection]) for key, collection in ITEMS.items()
    ]
    path = str(snapshot_project(tmp_path, objects))
    assert run("-q", "--config", path, "pull").code == 0
    return path


def keys(out: str) -> set[str]:
    return {item["zotero_key"] for item in json.loads(out)}


@pytest.mark.parametrize(
    ("typed", "path", "expected"),
    [
        ("gpu/kernels", "GPU / Kernels", {"PKRNAAAA", "PATTAAAA"}),
        ("  GPU  /   Kernels / ", "GPU / Kernels", {"PKRNAAAA", "PATTAAAA"}),
        ("Attention", "GPU / Kernels / Attention", {"PATTAAAA"}),
        ("kernels / attention", "GPU / Kernels / Attention", {"PATTAAAA"}),
        ("llm/KERNELS", "LLM / Kernels", {"PLKRAAAA"}),
    ],
)
def test_a_path_in_any_spacing_or_its_unique_end_is_taken_and_said(
    config: str, run, typed: str, path: str, expected: set[str]
) -> None:
    result = run("--config", config, "list", "--collection", typed, "--format", "json")
    assert result.code == 0, result.err
    assert keys(result.out) == expected
    (said,) = result.err.splitlines()
    assert said.startswith("zotsync: --collection '") and said.endswith(f"' is the collection '{path}'")


def test_the_exact_path_is_taken_without_a_word(config: str, run) -> None:
    result = run("--config", config, "list", "--collection", "GPU / Kernels", "--format", "json")
    assert result.code == 0 and keys(result.out) == {"PKRNAAAA", "PATTAAAA"}
    assert "--collection" not in result.err
    # a name that is a whole path and the end of others is the whole path
    result = run("--config", config, "list", "--collection", "gpu", "--format", "json")
    assert keys(result.out) == {"PGPVAAAA", "PKRNAAAA", "PATTAAAA"}


def test_an_end_several_paths_share_names_them_and_exits_2(config: str, run) -> None:
    result = run("--config", config, "list", "--collection", "kernels")
    assert result.code == 2 and result.out == ""
    assert result.err == (
        "zotsync: error: --collection 'kernels' names 2 collections ('GPU / Kernels', 'LLM / Kernels'): "
        "give more of its path\n"
    )


def test_a_collection_that_is_nowhere_is_one_line_and_exit_2(config: str, run) -> None:
    result = run("--config", config, "list", "--collection", "Compilers")
    assert result.code == 2
    assert (
        result.err == "zotsync: error: --collection 'Compilers': no collection is named so or ends with it\n"
    )
