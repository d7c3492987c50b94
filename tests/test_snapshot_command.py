"""`zotsync snapshot`: the store's library written as a snapshot file, read back by `source.type: snapshot`.

Round trips from each source (a snapshot, a zotero.sqlite, the Web API through the fake server): the
store filled from the written file holds the same rows, and the exports are byte-identical.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import factories
import pytest
from conftest import ZOTERO_API_KEY, Run
from zotero_server import FakeLibrary
from zotero_sqlite import build, load_snapshot

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT / "seeds" / "zotero-library.json"
CATALOG = ROOT / "seeds" / "catalog.yaml"


def write_config(folder: Path, name: str, **source: str) -> Path:
    """A config whose store and exports live in `folder/name-*`."""
    lines = ["source:", *(f"  {key}: {json.dumps(value)}" for key, value in source.items())]
    lines += [
        f"catalog: {json.dumps(str(CATALOG))}",
        f"store: {json.dumps(str(folder / f'{name}.sqlite'))}",
        "exports:",
        f"  dir: {json.dumps(str(folder / f'{name}-exports'))}",
        "  formats: [md, csv]",
        "",
    ]
    path = folder / f"{name}.yaml"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def store_rows(path: Path, scratch: Path) -> dict[str, Any]:
    """The store's library as rows, read with plain SQL from a copy (not through zotsync's code):
    every items row (tags and memberships included) and collections row, and the library's identity."""
    copy = scratch / f"rows-of-{path.name}"
    shutil.copyfile(path, copy)
    with sqlite3.connect(copy) as db:
        rows = {
            table: db.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall()
            for table in ("items", "collections")
        }
        rows["identity"] = db.execute(
            "SELECT name, value FROM sync_state WHERE name IN ('library_type', 'library_id', 'library_name')"
            " ORDER BY name"
        ).fetchall()
    copy.unlink()
    return rows


def exports(folder: Path, name: str) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((folder / f"{name}-exports").glob("catalog.*"))}


def round_trip(run: Callable[..., Run], tmp_path: Path, config: Path, name: str) -> tuple[Path, Path]:
    """sync from `config`, write its snapshot, sync a second project from that snapshot: both configs."""
    synced = run("--config", str(config), "sync")
    assert synced.code == 0, synced.err
    frozen = tmp_path / f"{name}-snapshot.json"
    written = run("--config", str(config), "snapshot", "--output", str(frozen))
    assert written.code == 0, written.err
    assert written.err.strip() == f"wrote {frozen}"
    replay = write_config(tmp_path, f"{name}-replay", type="snapshot", path=str(frozen))
    replayed = run("--config", str(replay), "sync")
    assert replayed.code == 0, replayed.err
    return frozen, replay


def assert_same_library(tmp_path: Path, name: str) -> None:
    original = store_rows(tmp_path / f"{name}.sqlite", tmp_path)
    replayed = store_rows(tmp_path / f"{name}-replay.sqlite", tmp_path)
    assert len(original["items"]) > 10 and original["collections"]
    assert any(tags != "[]" for *_, tags, _ in original["items"])
    assert replayed == original
    assert exports(tmp_path, f"{name}-replay") == exports(tmp_path, name)
    assert len(exports(tmp_path, name)) == 2


def assert_byte_stable(run: Callable[..., Run], frozen: Path, replay: Path) -> None:
    """The replayed store's own snapshot is the same file, byte for byte."""
    again = run("--config", str(replay), "snapshot", "--output", "-")
    assert again.code == 0, again.err
    assert again.out.encode("utf-8") == frozen.read_bytes()


# -- from each source -----------------------------------------------------------------------------------


def test_round_trip_from_a_snapshot(tmp_path: Path, run) -> None:
    config = write_config(tmp_path, "seed", type="snapshot", path=str(SEED))
    frozen, replay = round_trip(run, tmp_path, config, "seed")
    assert_same_library(tmp_path, "seed")
    assert_byte_stable(run, frozen, replay)
    # A snapshot replays into the same library version: its newest object's.
    with (
        sqlite3.connect(tmp_path / "seed.sqlite") as a,
        sqlite3.connect(tmp_path / "seed-replay.sqlite") as b,
    ):
        query = "SELECT value FROM sync_state WHERE name = 'library_version'"
        assert a.execute(query).fetchone() == b.execute(query).fetchone() == ("480",)


def unusual_items() -> list[dict[str, Any]]:
    """Shapes the demo lacks: a case (its title is caseName), an email (subject), an organisation as
    author, an annotation under a PDF, a trashed note, an item in a collection that goes to the trash."""
    objects = [
        factories.api_collection("TRSHCQLL", "Soon trashed", version=5),
        factories.api_item(
            "CASEAAAA",
            "",
            "case",
            caseName="Marbury v. Madison",
            court="SCOTUS",
            dateDecided="1803",
            version=5,
        ),
        factories.api_item("MAILAAAA", "", "email", subject="Re: the draft", version=5),
        factories.api_item(
            "QRGAAAAA",
            "Consortium report",
            "report",
            creators=[{"creatorType": "author", "name": "The Tensor Compiler Consortium"}],
            tags=["read", {"tag": "auto", "type": 1}],
            collections=["TRSHCQLL"],
            version=5,
        ),
        factories.api_pdf("QRGPDFAA", "QRGAAAAA", filename="report.pdf", md5="abc", mtime=1, version=5),
        factories.api_child("QRGNQTEA", "QRGAAAAA", "note", note="<p>gone</p>", deleted=1, version=5),
    ]
    for obj in objects:
        data = obj["data"]
        if data.get("itemType") in ("case", "email", "note"):
            del data["title"]  # these types have none: caseName, subject, the note itself
        if data.get("itemType") in ("note", "attachment"):
            del data["creators"]
    return objects


def test_round_trip_from_a_zotero_database(tmp_path: Path, run) -> None:
    data_dir = tmp_path / "Zotero"
    objects = [*load_snapshot(SEED), *unusual_items()]
    zdb = build(data_dir / "zotero.sqlite", objects, seed=5)
    zdb.add_annotation("ANNQTAAA", "QRGPDFAA", "highlighted")
    zdb.trash_collection("TRSHCQLL", at="2024-06-01 10:00:00")
    config = write_config(tmp_path, "local", type="local", path=str(data_dir))
    frozen, replay = round_trip(run, tmp_path, config, "local")
    assert_same_library(tmp_path, "local")
    assert_byte_stable(run, frozen, replay)

    by_key = {o["key"]: o["data"] for o in json.loads(frozen.read_text("utf-8"))}
    assert "TRSHCQLL" not in by_key  # a trashed collection is not in the store, so not in the file
    assert by_key["CASEAAAA"]["caseName"] == "Marbury v. Madison" and "title" not in by_key["CASEAAAA"]
    assert by_key["QRGNQTEA"]["deleted"] == 1 and by_key["QRGNQTEA"]["parentItem"] == "QRGAAAAA"
    assert by_key["ANNQTAAA"]["annotationText"] == "highlighted"
    with sqlite3.connect(tmp_path / "local-replay.sqlite") as db:
        titles = dict(db.execute("SELECT key, title FROM items WHERE key IN ('CASEAAAA', 'MAILAAAA')"))
    assert titles == {"CASEAAAA": "Marbury v. Madison", "MAILAAAA": "Re: the draft"}


def test_round_trip_from_the_web_api(tmp_path: Path, run, zotero_api) -> None:
    library = FakeLibrary.from_snapshot([*load_snapshot(SEED), *unusual_items()])
    library.trash_item("AS5BSQEA")
    library.delete_collection("TRSHCQLL")
    server = zotero_api(library)
    config = write_config(
        tmp_path,
        "web",
        type="web",
        library_type="user",
        library_id=library.library_id,
        api_key=ZOTERO_API_KEY,
        base_url=server.url,
    )
    frozen, replay = round_trip(run, tmp_path, config, "web")
    assert_same_library(tmp_path, "web")
    assert_byte_stable(run, frozen, replay)
    assert ZOTERO_API_KEY not in frozen.read_text("utf-8")
    by_key = {o["key"]: o for o in json.loads(frozen.read_text("utf-8"))}
    assert by_key["AS5BSQEA"]["data"]["deleted"] == 1
    # the library's web page comes along, so `exports.zotero_links: web` links the same pages after a replay
    assert by_key["AS5BSQEA"]["library"] == {
        "type": "user",
        "id": 9876543,
        "links": {"alternate": {"href": f"https://www.zotero.org/{library.name}", "type": "text/html"}},
    }


# -- the file ---------------------------------------------------------------------------------------------


def test_the_file_is_the_web_apis_json_parents_before_children(tmp_path: Path, run) -> None:
    config = write_config(tmp_path, "seed", type="snapshot", path=str(SEED))
    assert run("--config", str(config), "pull").code == 0
    result = run("--config", str(config), "snapshot", "--output", "-")
    assert result.code == 0 and result.err == ""
    objects = json.loads(result.out)
    seed = {o["key"]: o for o in load_snapshot(SEED)}
    assert [o["key"] for o in objects] != sorted(seed)  # an order of its own …
    assert sorted(o["key"] for o in objects) == sorted(seed)  # … of every object of the library
    collections = [o for o in objects if "name" in o["data"]]
    assert objects[: len(collections)] == collections  # collections first, by key
    assert [o["key"] for o in collections] == sorted(o["key"] for o in collections)
    position = {o["key"]: n for n, o in enumerate(objects)}
    for obj in objects:
        assert set(obj) == {"key", "version", "library", "data"}
        assert obj["key"] == obj["data"]["key"] and obj["version"] == obj["data"]["version"]
        assert obj["version"] == seed[obj["key"]]["version"]
        if "parentItem" in obj["data"]:
            assert position[obj["data"]["parentItem"]] < position[obj["key"]]
            assert "collections" not in obj["data"]
    for key, obj in seed.items():  # each object's data as the API gave it, bar relations
        mine = next(o for o in objects if o["key"] == key)["data"]
        theirs = {k: v for k, v in obj["data"].items() if k != "relations"}
        assert mine == theirs, key


def test_the_snapshot_is_written_atomically_and_only_when_changed(tmp_path: Path, run) -> None:
    config = write_config(tmp_path, "seed", type="snapshot", path=str(SEED))
    assert run("--config", str(config), "pull").code == 0
    target = tmp_path / "out" / "library.json"
    assert run("--config", str(config), "snapshot", "--output", str(target)).code == 0
    mtime = target.stat().st_mtime_ns
    again = run("--config", str(config), "snapshot", "--output", str(target))
    assert (again.code, again.err.strip()) == (0, f"unchanged {target}")
    assert target.stat().st_mtime_ns == mtime
    assert [p.name for p in target.parent.iterdir()] == ["library.json"]  # no temporary file left


def test_without_a_store_it_says_pull_first(tmp_path: Path, run) -> None:
    config = write_config(tmp_path, "none", type="snapshot", path=str(SEED))
    result = run("--config", str(config), "snapshot", "--output", str(tmp_path / "x.json"))
    assert result.code == 1
    assert result.err.splitlines() == [
        f"zotsync: error: no store at {tmp_path / 'none.sqlite'}: run `zotsync pull` first"
    ]
    assert not (tmp_path / "x.json").exists()


def test_an_unwritable_output_is_one_line_and_exit_1(tmp_path: Path, run) -> None:
    config = write_config(tmp_path, "seed", type="snapshot", path=str(SEED))
    assert run("--config", str(config), "pull").code == 0
    (tmp_path / "taken").write_text("a file where a folder should be", encoding="utf-8")
    result = run("--config", str(config), "snapshot", "--output", str(tmp_path / "taken" / "x.json"))
    assert result.code == 1
    assert len(result.err.splitlines()) == 1 and result.err.startswith("zotsync: error: cannot write ")


def test_output_is_required(tmp_path: Path, run) -> None:
    config = write_config(tmp_path, "seed", type="snapshot", path=str(SEED))
    result = run("--config", str(config), "snapshot")
    assert result.code == 2 and "--output" in result.err


@pytest.mark.parametrize("library_id", ["", "4711"])
def test_group_identity_survives(tmp_path: Path, run, library_id: str) -> None:
    group = {"type": "group", "id": int(library_id), "name": "Lab"} if library_id else {"type": "group"}
    objects = [{**o, "library": group} for o in load_snapshot(SEED)]
    source = factories.write_json(tmp_path / "group.json", objects)
    config = write_config(tmp_path, "group", type="snapshot", path=str(source))
    round_trip(run, tmp_path, config, "group")
    assert_same_library(tmp_path, "group")
    identity = dict(store_rows(tmp_path / "group-replay.sqlite", tmp_path)["identity"])
    assert identity == {
        "library_type": "group",
        "library_id": library_id,
        "library_name": "Lab" if library_id else "",
    }
