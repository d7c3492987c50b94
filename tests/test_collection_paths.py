"""Collection paths are built once per collection: deep chains, cycles and dangling parents stay cheap."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from conftest import write_config
from factories import api_collection, api_item, write_json

from zotsync.model import PATH_DEPTH, Collection, Library


def chain(depth: int) -> tuple[Collection, ...]:
    """Level 0 at the top, each level inside the one before; listed deepest first (the worst order)."""
    return tuple(
        Collection(f"K{i:07d}", 1, f"Level {i}", f"K{i - 1:07d}" if i else None)
        for i in reversed(range(depth))
    )


def test_a_path_names_every_ancestor_from_the_top() -> None:
    paths = Library(collections=chain(4)).collection_paths()
    assert paths == {
        "K0000000": "Level 0",
        "K0000001": "Level 0 / Level 1",
        "K0000002": "Level 0 / Level 1 / Level 2",
        "K0000003": "Level 0 / Level 1 / Level 2 / Level 3",
    }


def test_a_ten_thousand_deep_chain_gives_bounded_paths() -> None:
    paths = Library(collections=chain(10_000)).collection_paths()
    assert len(paths) == 10_000
    assert paths[f"K{PATH_DEPTH - 1:07d}"] == " / ".join(f"Level {i}" for i in range(PATH_DEPTH))
    deepest = paths["K0009999"].split(" / ")
    assert deepest[:16] == [f"Level {i}" for i in range(16)]
    assert deepest[16] == "…" and deepest[-1] == "Level 9999" and len(deepest) == PATH_DEPTH
    # today's full paths would be 10,000²/2 names (~600 MB of text); these stay linear
    assert sum(len(p) for p in paths.values()) < 10_000 * PATH_DEPTH * 12


def test_cycles_and_dangling_parents_stop_the_walk() -> None:
    collections = (
        Collection("AAAA2222", 1, "a", "BBBB2222"),
        Collection("BBBB2222", 1, "b", "AAAA2222"),
        Collection("CCCC2222", 1, "c", "BBBB2222"),
        Collection("DDDD2222", 1, "d", "GQNE2222"),
    )
    paths = Library(collections=collections).collection_paths()
    assert set(paths) == {"AAAA2222", "BBBB2222", "CCCC2222", "DDDD2222"}
    assert paths["DDDD2222"] == "d"
    assert paths["CCCC2222"].endswith("b / c") and paths["AAAA2222"].endswith("a")


def key_of(number: int) -> str:
    """The `number`th of Zotero-shaped keys C2222222, C2222223, …"""
    alphabet = "23456789ABCDEFGHIJKLMNPQRSTUVWXYZ"
    digits = [alphabet[number // len(alphabet) ** power % len(alphabet)] for power in range(7)]
    return "C" + "".join(reversed(digits))


def test_sync_with_ten_thousand_nested_collections(tmp_path: Path, run) -> None:
    keys = [key_of(i) for i in range(10_000)]
    objects = [api_collection(keys[i], f"L{i}", keys[i - 1] if i else None) for i in range(10_000)]
    objects.append(api_item("DEEP2222", "Deep down", collections=[keys[-1]]))
    write_json(tmp_path / "library.json", objects)
    (tmp_path / "catalog.yaml").write_text("categories: []\n")
    config = write_config(
        tmp_path,
        "source: {type: snapshot, path: library.json}\ncatalog: catalog.yaml\nstore: s.sqlite\n"
        "exports: {dir: out, formats: [csv]}\n",
    )
    assert run("-q", "--config", str(config), "sync").code == 0
    (row,) = csv.DictReader(io.StringIO((tmp_path / "out" / "catalog.csv").read_text(encoding="utf-8")))
    assert row["collections"].startswith("L0 / L1 / ") and row["collections"].endswith(
        " / … / L9985 / " + " / ".join(f"L{i}" for i in range(9986, 10_000))
    )


ZOTERO_KEY_ALPHABET = "23456789ABCDEFGHIJKLMNPQRSTUVWXYZ"


def zotero_key(number: int) -> str:
    """The `number`th key in Zotero's alphabet (eight characters, as Zotero makes them)."""
    digits = []
    for _ in range(8):
        number, digit = divmod(number, len(ZOTERO_KEY_ALPHABET))
        digits.append(ZOTERO_KEY_ALPHABET[digit])
    return "".join(reversed(digits))


def csv_of_an_item_in(count: int, folder: Path, run) -> Path:
    """`sync` of a library whose one paper is filed in `count` collections: `count` rows in the CSV."""
    folder.mkdir()
    keys = [zotero_key(i) for i in range(count)]
    objects = [api_collection(key, f"Shelf {i:05d}") for i, key in enumerate(keys)]
    objects.append(api_item("WIDE2222", "Filed everywhere", collections=keys))
    write_json(folder / "library.json", objects)
    (folder / "catalog.yaml").write_text("categories: []\n")
    config = write_config(
        folder,
        "source: {type: snapshot, path: library.json}\ncatalog: catalog.yaml\nstore: s.sqlite\n"
        "exports: {dir: out, formats: [csv]}\n",
    )
    assert run("-q", "--config", str(config), "sync").code == 0
    return folder / "out" / "catalog.csv"


def test_an_item_in_thousands_of_collections_makes_a_csv_linear_in_them(tmp_path: Path, run) -> None:
    """Each of the item's N placements is a row; a row listing all N paths made the file N² (a 2 MB
    snapshot gave a 2.4 GB CSV). A row lists 20 paths, then `…`."""
    small, large = (
        csv_of_an_item_in(2_500, tmp_path / "small", run),
        csv_of_an_item_in(5_000, tmp_path / "large", run),
    )
    assert large.stat().st_size <= 2.1 * small.stat().st_size  # twice the collections, twice the file
    assert large.stat().st_size <= 5_000 * 400  # a few hundred bytes a row, whatever N is
    rows = list(csv.DictReader(io.StringIO(large.read_text(encoding="utf-8"))))
    assert [row["category"] for row in rows] == [f"Shelf {i:05d}" for i in range(5_000)]
    assert {row["collections"] for row in rows} == {"; ".join([f"Shelf {i:05d}" for i in range(20)] + ["…"])}
