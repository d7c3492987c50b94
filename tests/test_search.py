"""`zotsync search`: the full-text index every pull keeps, over real stores filled by real pulls — the
demo snapshot, the fake Zotero server, built zotero.sqlite files and the real fixtures in
../shared/fixtures (skipped without them) — and what a hit shows."""

from __future__ import annotations

import copy
import html
import json
import random
import shutil
import sqlite3
import string
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import Run
from factories import (
    USER_ID,
    api_child,
    api_item,
    api_pdf,
    back_to_schema,
    read,
    snapshot_project,
    write_json,
    write_web_config,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from zotero_server import FakeLibrary
from zotero_sqlite import build

import zotsync
from zotsync import searchtext
from zotsync.app.hits import SearchHit, format_hit
from zotsync.app.pull import pull
from zotsync.sources.memory import MemorySource
from zotsync.store import Store, exclusive_lock, searchindex
from zotsync.text import UNSAFE, json_safe

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "fixtures"
WEB_LIBRARY = SHARED / "zotero-web-library"
REAL_SQLITE = SHARED / "zotero-sqlite"

pytestmark = pytest.mark.skipif(
    not searchindex.available(), reason="this SQLite has no FTS5 trigram tokenizer"
)


# -- a project of our own: a snapshot, a catalogue, a config ---------------------------------------------


def local_project(folder: Path, data_dir: Path) -> Path:
    """A project reading the zotero.sqlite in `data_dir`, with an empty catalogue."""
    (folder / "catalog.yaml").write_text("categories: []\n", encoding="utf-8")
    config = folder / "zotsync.yaml"
    config.write_text(
        f"source:\n  type: local\n  path: {json.dumps(str(data_dir))}\ncatalog: catalog.yaml\n"
        "store: store.sqlite\n",
        encoding="utf-8",
    )
    return config


def search(run: Any, config: Path, *words: str) -> list[dict[str, Any]]:
    done = run("--config", str(config), "search", *words, "--format", "json", "--limit", "100")
    assert done.code == 0, done.err
    return json.loads(done.out)


def keys(hits: list[dict[str, Any]]) -> set[str]:
    return {hit["zotero_key"] for hit in hits}


def note(key: str, parent: str, html: str) -> dict[str, Any]:
    return api_child(key, parent, "note", note=html, title="")


def annotation(key: str, attachment: str, text: str, comment: str = "", sort: str = "00000|000100|00000"):
    return api_child(
        key,
        attachment,
        "annotation",
        title="",
        annotationType="highlight",
        annotationText=text,
        annotationComment=comment,
        annotationColor="#ffd400",
        annotationPageLabel="3",
        annotationSortIndex=sort,
        annotationPosition="{}",
    )


def index_agrees_with_items(path: Path) -> dict[str, tuple[str, ...]]:
    """The index as the pulls left it, checked against the same index made anew from `items` in one
    scan (the full path, which shares no step with a pull's incremental one but the text of a paper):
    the same papers with the same fields, and each short-index row made from its paper's fields."""
    copy = path.with_name("check-" + path.name)
    source = sqlite3.connect(path)
    target = sqlite3.connect(copy, isolation_level=None)
    source.backup(target)
    source.close()
    kept = searchindex.papers(target)
    target.execute("BEGIN")
    searchindex.rebuild(target)
    assert searchindex.papers(target) == kept
    target.execute("ROLLBACK")
    counts = [
        target.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
        for t in ("search_papers", "search_index", "search_short")
    ]
    assert len(set(counts)) == 1, counts
    for paper_id, *columns in target.execute("SELECT rowid, * FROM search_index"):
        short = target.execute("SELECT * FROM search_short WHERE rowid = ?", (paper_id,)).fetchone()
        assert tuple(short) == tuple(map(searchtext.short_terms, columns))
    target.close()
    copy.unlink()
    return kept


# -- scripts without spaces, and Latin words -------------------------------------------------------------

PAPERS = [
    api_item("ZHNG2345", "深度学习系统", abstractNote="本文提出一种张量编译器，自动生成高效的算子。"),
    api_item("DLPR2345", "调度与映射", abstractNote="用分析模型选择计算块执行顺序。"),
    api_item(
        "FLSH2345",
        "FlashAttention-2: Faster Attention with Better Parallelism and Work Partitioning",
        abstractNote="Tiling and warp-specialization on GPUs; their kernels.",
        tags=["Attention", "GPU"],
    ),
    api_item("GRPH2345", "Graphene: An IR for Optimized Tensor Computations on GPUs"),
    api_item(
        "MLIR2345", "MLIR-based code generation", creators=[{"creatorType": "author", "name": "Ömer Çelik"}]
    ),
    api_item("THAI2345", "การคอมไพล์", abstractNote="ภาษาไทยไม่มีช่องว่าง"),
]


def test_a_two_character_chinese_word_finds_the_longer_word_it_is_part_of(tmp_path: Path, run: Run) -> None:
    """`张量` is two characters: the trigram index alone finds nothing for it (SQLite 3.40), the short
    index finds every paper holding it inside a longer run (`张量编译器`)."""
    config = snapshot_project(tmp_path, PAPERS)
    assert run("-q", "--config", str(config), "pull").code == 0
    for word in ("张量", "张量编译器", "编译器", "张", "器", "量编", "高效的"):
        hits = search(run, config, word)
        assert keys(hits) == {"ZHNG2345"}, word
        assert hits[0]["where"] == "abstract" and word in hits[0]["snippet"]
    assert keys(search(run, config, "调度")) == {"DLPR2345"}
    assert keys(search(run, config, "张量", "调度")) == set()  # every word, in one paper
    assert search(run, config, "量子") == []  # no bigram spans the two words of 量，子
    assert keys(search(run, config, "ไทย")) == {"THAI2345"}  # Thai is written without spaces too
    assert keys(search(run, config, "ไม")) == {"THAI2345"}


def test_latin_words_match_any_case_and_across_punctuation(tmp_path: Path, run: Run) -> None:
    config = snapshot_project(tmp_path, PAPERS)
    assert run("-q", "--config", str(config), "pull").code == 0
    assert keys(search(run, config, "flashattention")) == {"FLSH2345"}
    assert keys(search(run, config, "ATTENTION")) == {"FLSH2345"}  # inside FlashAttention too
    assert keys(search(run, config, "warp specialization")) == {"FLSH2345"}
    assert keys(search(run, config, "Warp-Specialization")) == {"FLSH2345"}
    assert keys(search(run, config, "tiling,", "(GPUs)")) == {"FLSH2345"}
    assert keys(search(run, config, "gpus")) == {"FLSH2345", "GRPH2345"}
    assert keys(search(run, config, "çelik")) == {"MLIR2345"}  # authors; case folded beyond ASCII
    assert [hit["where"] for hit in search(run, config, "attention")] == ["title"]  # the first field of two
    assert [hit["where"] for hit in search(run, config, "gpu", "kernels")] == ["abstract"]  # holds both


def test_short_latin_words_match_whole_words(tmp_path: Path, run: Run) -> None:
    """`IR` finds "An IR for", not "their" or "MLIR": two letters inside a word would match nearly
    everything."""
    config = snapshot_project(tmp_path, PAPERS)
    assert run("-q", "--config", str(config), "pull").code == 0
    assert keys(search(run, config, "IR")) == {"GRPH2345"}
    assert keys(search(run, config, "ir", "tensor")) == {"GRPH2345"}
    assert keys(search(run, config, "An", "IR")) == {"GRPH2345"}
    assert keys(search(run, config, "2")) == {"FLSH2345"}  # FlashAttention-2


# -- the seed catalogue ------------------------------------------------------------------------------------


@pytest.mark.parametrize("word", ["张量", "调度", "编译器", "流水线", "warp"])
def test_the_seed_catalogues_chinese_whys_are_searchable(project: Path, run: Run, word: str) -> None:
    """On the bundled demo, after a sync: every curated entry whose why holds the word is a hit that
    matched there; every hit holds the word in a field an independent reading of the demo finds."""
    config = project / "config" / "zotsync.yaml"
    assert run("-q", "--config", str(config), "sync").code == 0
    hits = search(run, config, word)
    catalogue = yaml.safe_load((project / "seeds" / "catalog.yaml").read_text(encoding="utf-8"))
    entries = [e for c in catalogue["categories"] for e in c.get("entries") or []]
    by_why = {e["title"] for e in entries if word.casefold() in (e.get("why") or "").casefold()}
    assert by_why, "the demo's whys hold the word"
    found = {hit["title"]: hit for hit in hits}
    assert by_why <= found.keys()
    assert all("why" in found[title]["fields"] for title in by_why)
    # each hit, read independently: the word is in the curated text or in the item's own fields
    status = json.loads(run("--config", str(config), "status", "--format", "json").out)
    curated_key = {m["zotero_key"]: m["title"] for m in status["matches"]}
    items = {
        o["key"]: o["data"]
        for o in json.loads((project / "seeds" / "zotero-library.json").read_text("utf-8"))
    }
    curated = {e["title"]: e for e in entries}
    for hit in hits:
        data = items.get(hit["zotero_key"], {})
        texts = [
            data.get("title", ""),
            data.get("abstractNote", ""),
            *(t["tag"] for t in data.get("tags", [])),
        ]
        texts += [
            f"{c.get('firstName', '')} {c.get('lastName', '')} {c.get('name', '')}"
            for c in data.get("creators", [])
        ]
        entry = curated.get(curated_key.get(hit["zotero_key"], hit["title"]), {})
        texts += [entry.get("title", ""), entry.get("why") or ""]
        assert any(word.casefold() in text.casefold() for text in texts), hit
    assert len(hits) == len({hit["zotero_key"] or hit["title"] for hit in hits})  # one hit per paper


def test_a_hit_names_the_pages_categories(project: Path, run: Run) -> None:
    config = project / "config" / "zotsync.yaml"
    assert run("-q", "--config", str(config), "sync").code == 0
    csv = (project / "exports" / "catalog.csv").read_text(encoding="utf-8")
    import csv as csv_module

    rows = list(csv_module.DictReader(csv.splitlines()))
    for hit in search(run, config, "tensor"):
        placed = [
            r["category"]
            for r in rows
            if (r["zotero_key"] or r["title"]) == (hit["zotero_key"] or hit["title"])
        ]
        assert hit["categories"] == list(dict.fromkeys(placed)), hit


# -- notes and annotations from every source ---------------------------------------------------------------

NOTES_LIBRARY = [
    api_item("PAPR2345", "Ansor: Generating High-Performance Tensor Programs", abstractNote="Search space."),
    note(
        "NTES2345",
        "PAPR2345",
        "<div data-schema-version='8'><h1>Reading</h1><p>The <b>sketch</b> rules&nbsp;are clever; "
        "启发式规则很重要</p><ul><li>evolutionary</li><li>search</li></ul></div>",
    ),
    api_pdf("PDFA2345", "PAPR2345"),
    annotation(
        "ANNA2345", "PDFA2345", "learned cost model guides the search", "compare with Halide autoscheduler"
    ),
    annotation(
        "ANNB2345", "PDFA2345", "", "an image annotation has only its comment", sort="00001|000010|00000"
    ),
    api_item("THRR2345", "Another paper"),
    note("LNEN2345", "", "<p>A standalone note about zebrafish</p>"),
]


def test_notes_and_annotations_count_for_their_paper(tmp_path: Path, run: Run) -> None:
    objects = copy.deepcopy(NOTES_LIBRARY)
    del objects[-1]["data"]["parentItem"]  # standalone: no parent
    config = snapshot_project(tmp_path, objects)
    assert run("-q", "--config", str(config), "pull").code == 0
    for words, where in [
        (["sketch", "rules"], "note"),
        (["启发式"], "note"),
        (["cost", "model"], "annotation"),
        (["autoscheduler"], "annotation"),
        (["image", "annotation"], "annotation"),
        (["evolutionary", "search"], "note"),
        (["ansor", "halide"], "title"),  # words from two fields of one paper: the first field
    ]:
        hits = search(run, config, *words)
        assert [(hit["zotero_key"], hit["where"]) for hit in hits] == [("PAPR2345", where)], words
    assert search(run, config, "zebrafish") == []  # a standalone note is no paper
    assert search(run, config, "data-schema-version") == []  # markup is not text
    assert search(run, config, "nbsp") == []


def test_the_web_source_keeps_the_index_in_step_pull_by_pull(
    tmp_path: Path, run: Run, zotero_api: Any
) -> None:
    """Every kind of change a pull brings changes what search finds, and after each the index is what a
    fresh build from the items gives."""
    library = FakeLibrary.from_snapshot(NOTES_LIBRARY[:-1], library_id=USER_ID)
    server = zotero_api(library)
    config = write_web_config(tmp_path, server.url)
    seed_catalogue = json.dumps(str(ROOT / "seeds" / "catalog.yaml"))
    config.write_text(
        config.read_text(encoding="utf-8").replace(seed_catalogue, "catalog.yaml"), encoding="utf-8"
    )
    (tmp_path / "catalog.yaml").write_text("categories: []\n", encoding="utf-8")
    store = tmp_path / "store.sqlite"

    def pulled() -> None:
        server.reset()
        assert run("-q", "--config", str(config), "pull").code == 0
        index_agrees_with_items(store)

    assert run("-q", "--config", str(config), "pull").code == 0
    assert keys(search(run, config, "sketch")) == {"PAPR2345"}  # the first search builds the index
    index_agrees_with_items(store)
    library.edit_item("NTES2345", note="<p>now about <i>tiling</i> only</p>")
    pulled()
    assert search(run, config, "sketch") == [] and keys(search(run, config, "tiling")) == {"PAPR2345"}
    library.edit_item("NTES2345", parentItem="THRR2345")  # the note moves to another paper
    pulled()
    assert keys(search(run, config, "tiling")) == {"THRR2345"}
    library.edit_item("PDFA2345", parentItem="THRR2345")  # the PDF moves, its annotations with it
    pulled()
    assert keys(search(run, config, "autoscheduler")) == {"THRR2345"}
    library.delete_item("ANNA2345")
    pulled()
    assert search(run, config, "autoscheduler") == []
    library.trash_item("THRR2345")
    pulled()
    assert search(run, config, "tiling") == [] and search(run, config, "another") == []
    library.restore_item("THRR2345")
    pulled()
    assert keys(search(run, config, "tiling")) == {"THRR2345"}
    library.edit_item("THRR2345", title="Renamed 张量 paper", tags=[{"tag": "调度"}])
    pulled()
    assert keys(search(run, config, "张量", "调度")) == {"THRR2345"}
    library.delete_item("THRR2345")  # with its children
    pulled()
    assert search(run, config, "tiling") == [] and search(run, config, "张量") == []
    assert keys(search(run, config, "ansor")) == {"PAPR2345"}
    assert run("-q", "--config", str(config), "pull", "--full").code == 0
    assert index_agrees_with_items(store)


def test_a_zotero_database_s_notes_and_annotations_are_searchable(tmp_path: Path, run: Run) -> None:
    data_dir = tmp_path / "Zotero"
    zdb = build(data_dir / "zotero.sqlite", NOTES_LIBRARY[:3] + NOTES_LIBRARY[5:6])
    zdb.add_annotation("ANNA2345", "PDFA2345", "learned cost model guides the search")
    config = local_project(tmp_path, data_dir)
    assert run("-q", "--config", str(config), "pull").code == 0
    assert [(h["zotero_key"], h["where"]) for h in search(run, config, "sketch")] == [("PAPR2345", "note")]
    assert [(h["zotero_key"], h["where"]) for h in search(run, config, "cost model")] == [
        ("PAPR2345", "annotation")
    ]
    index_agrees_with_items(tmp_path / "store.sqlite")


# -- incremental equals rebuilt, under any sequence of edits ------------------------------------------------

_KEY = "23456789ABCDEFGHIJKLMNPQRSTUVWXYZ"
WORDS = ["tensor", "warp", "张量编译器", "调度", "IR", "a", "kernel", "Zotero", "流水线", "GPU"]


def zkey(prefix: str, n: int) -> str:
    """The n-th of a family of Zotero keys: `prefix` (four characters), then two of n's, then 22."""
    return prefix + _KEY[n // len(_KEY)] + _KEY[n % len(_KEY)] + "22"


@st.composite
def edits(draw: st.DrawFn) -> list[tuple[str, int, int, str]]:
    kinds = st.sampled_from(
        [
            "note",
            "edit_note",
            "move_note",
            "pdf",
            "annotate",
            "move_pdf",
            "trash",
            "restore",
            "delete",
            "retitle",
            "delete_child",
        ]
    )
    text = st.lists(st.sampled_from(WORDS), min_size=0, max_size=4).map(" ".join)
    step = st.tuples(kinds, st.integers(0, 3), st.integers(0, 11), text)
    return draw(st.lists(st.lists(step, min_size=1, max_size=4), min_size=1, max_size=6))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=edits())
def test_after_any_pulls_the_index_is_what_a_fresh_build_gives(tmp_path_factory: Any, batches: Any) -> None:
    """Notes added, edited, moved between papers and deleted; PDFs added and moved with their annotations;
    papers trashed, restored, retitled and deleted, a few per pull: after each pull the index a pull keeps
    equals the one built from scratch."""
    folder = tmp_path_factory.mktemp("property")
    papers = [zkey("PPRS", n) for n in range(4)]
    source = MemorySource([api_item(key, f"Paper {n} tensor") for n, key in enumerate(papers)])
    path = folder / "store.sqlite"
    with Store(path) as store:
        pull(source, store)
        store.build_search_index()
    children: dict[str, str] = {}  # child key → kind
    for batch in batches:
        for kind, paper_n, child_n, text in batch:
            paper, child = papers[paper_n], zkey({"note": "NTES", "pdf": "PDFS"}.get(kind, "ANNS"), child_n)
            notes = [k for k, v in children.items() if v == "note"]
            pdfs = [k for k, v in children.items() if v == "pdf"]
            existing = source._objects  # the memory source's own objects
            if kind == "note":
                source.put(note(child, paper, f"<p>{text}</p>"))
                children[child] = "note"
            elif kind == "edit_note" and notes:
                source.edit(notes[child_n % len(notes)], note=f"<p>{text}</p>")
            elif kind == "move_note" and notes:
                source.edit(notes[child_n % len(notes)], parentItem=paper)
            elif kind == "pdf":
                source.put(api_pdf(child, paper))
                children[child] = "pdf"
            elif kind == "annotate" and pdfs:
                source.put(annotation(child, pdfs[child_n % len(pdfs)], text, text[::-1]))
                children[child] = "annotation"
            elif kind == "move_pdf" and pdfs:
                source.edit(pdfs[child_n % len(pdfs)], parentItem=paper)
            elif kind in ("trash", "restore") and paper in existing:
                source.edit(paper, deleted=1 if kind == "trash" else 0)
            elif kind == "delete" and paper in existing:
                source.delete(paper)
                children = {k: v for k, v in children.items() if k in source._objects}
            elif kind == "retitle" and paper in existing:
                source.edit(paper, title=f"{text} paper", abstractNote=text[::-1])
            elif kind == "delete_child" and children:
                gone = sorted(children)[child_n % len(children)]
                if gone in source._objects:
                    source.delete(gone)
                children = {k: v for k, v in children.items() if k in source._objects}
        with Store(path) as store:
            pull(source, store)
        index_agrees_with_items(path)


@pytest.mark.parametrize("batch", [1, 1000])
@pytest.mark.parametrize("order", ["papers first", "children first"])
def test_a_first_pull_into_an_indexed_store_indexes_each_paper_whole_whatever_the_order_items_come_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch: int, order: str
) -> None:
    """A pull that fills an indexed store takes the items batch by batch as the source hands them over; a
    note or an annotation that comes in another batch than its paper (before or after it) still ends in
    its row."""
    import zotsync.store.landing as landing

    monkeypatch.setattr(landing, "BATCH", batch)
    objects = copy.deepcopy(NOTES_LIBRARY[:-1])
    path = write_json(tmp_path / "lib.json", objects if order == "papers first" else objects[::-1])
    from zotsync.sources.snapshot import SnapshotSource

    with Store(tmp_path / "store.sqlite") as store:
        store.build_search_index()
        pull(SnapshotSource(path), store)
        for words in ("sketch", "autoscheduler", "image annotation", "ansor"):
            assert [h.paper for h in store.search(searchtext.parse_query(words), 10)] == ["PAPR2345"], words
    index_agrees_with_items(tmp_path / "store.sqlite")


def test_a_library_replaced_by_another_source_replaces_the_index_too(tmp_path: Path) -> None:
    """A store switched to another library: the old papers leave the index with their items, the
    catalogue's side stays (its entries may match the new library)."""
    path = tmp_path / "store.sqlite"
    with Store(path) as store:
        pull(MemorySource(copy.deepcopy(NOTES_LIBRARY[:-1]), name="first"), store)
        store.build_search_index()
        store.replace_curated([searchindex.Curated("title:only in the catalogue", "Only", "目录", "C")], "x")
        pull(
            MemorySource(
                [api_item("NWPR2345", "A new library's paper", abstractNote="wombats")], name="other"
            ),
            store,
        )
        assert store.search(searchtext.parse_query("sketch"), 10) == []
        assert [h.paper for h in store.search(searchtext.parse_query("wombats"), 10)] == ["NWPR2345"]
        assert [h.paper for h in store.search(searchtext.parse_query("目录"), 10)] == [
            "title:only in the catalogue"
        ]
    index_agrees_with_items(path)


# -- a killed pull -----------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("where", ["items", "index"])
def test_a_killed_pull_leaves_index_and_data_agreeing(tmp_path: Path, where: str) -> None:
    """SIGKILL while a pull writes its items, or while it brings the index up to date: the next open
    finds the store as the last finished pull left it — its items and its index, which agree — and the
    next pull lands all of it."""
    objects = copy.deepcopy(NOTES_LIBRARY[:-1])
    objects += [api_item(zkey("FLLR", n), f"Filler {n}") for n in range(60)]
    path = write_json(tmp_path / "lib.json", objects)
    db_path = tmp_path / "s.sqlite"
    from zotsync.sources.snapshot import SnapshotSource

    with Store(db_path) as store:
        pull(SnapshotSource(path), store)
        store.build_search_index()
    before = index_agrees_with_items(db_path)
    for obj in objects:
        obj["version"] = obj["data"]["version"] = obj["version"] + 1000
        if obj["data"]["itemType"] == "note":
            obj["data"]["note"] = "<p>rewritten with marsupials</p>"
        if obj["data"]["itemType"] == "annotation":
            obj["data"]["annotationText"] = "platypus"
    write_json(path, objects)
    kill = (
        "real, calls = s.item_record, [0]\n"
        "def convert(item):\n"
        "    calls[0] += 1\n"
        "    if calls[0] == 40:\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
        "    return real(item)\n"
        "s.BATCH = 10\n"
        "s.item_record = convert\n"
        if where == "items"
        else "real = i._insert\n"
        "def insert(db, rows):\n"
        "    real(db, rows)\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
        "i._insert = insert\n"
    )
    script = (
        "import os, signal\n"
        "import zotsync.store.landing as s\n"
        "import zotsync.store.searchindex as i\n"
        "from pathlib import Path\n"
        "from zotsync.store import Store\n"
        "from zotsync.sources import SnapshotSource\n"
        "from zotsync.app.pull import pull\n"
        + kill
        + f"pull(SnapshotSource(Path({str(path)!r})), Store(Path({str(db_path)!r})))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60)
    assert done.returncode == -9, done.stderr
    assert sqlite3.connect(db_path).execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert index_agrees_with_items(db_path) == before
    with Store(db_path) as store:
        assert [h.paper for h in store.search(searchtext.parse_query("sketch"), 10)] == ["PAPR2345"]
        assert store.search(searchtext.parse_query("marsupials"), 10) == []
        pull(SnapshotSource(path), store)
        assert [h.paper for h in store.search(searchtext.parse_query("marsupials"), 10)] == ["PAPR2345"]
        assert [h.paper for h in store.search(searchtext.parse_query("platypus"), 10)] == ["PAPR2345"]
    index_agrees_with_items(db_path)


# -- hostile text ------------------------------------------------------------------------------------------

HOSTILE = st.lists(
    st.sampled_from(
        [
            *list("ab <>&\"'/;="),
            "\x1b]0;pwned\x07",
            "\x1b[2J",
            "\u202e",
            "\u2066",
            "\n",
            "\r",
            "\t",
            "\x00",
            "\u2028",
            "\x85",
            "<script>",
            "</p>",
            "&lt;",
            "\x9b",
            "张",
            "\ud7ff",
        ]
    ),
    max_size=30,
).map("".join)


@settings(max_examples=200, deadline=None)
@given(before=HOSTILE, after=HOSTILE)
def test_hostile_text_around_a_match_is_shown_as_text(before: str, after: str) -> None:
    """Whatever surrounds the match in a note (escape sequences, bidi overrides, line breaks, markup),
    the hit prints as exactly two lines with no control, and its JSON is the same text, escaped."""
    text = searchtext.join(
        [searchtext.note_text(f"<p>{html.escape(before)} zebrafish {html.escape(after)}</p>")]
    )
    columns = ("", "", "", "", "", text, "")
    found = searchtext.locate(searchtext.parse_query("zebrafish"), columns)
    hit = SearchHit("ABCD2345", f"{before}title{after}", [f"{after}cat"], found.where, found.snippet)
    lines = format_hit(hit).split("\n")
    assert len(lines) == 2 and not any(UNSAFE.search(line) for line in lines)
    assert "zebrafish" in found.snippet and found.where == "note"
    printed = json_safe(json.dumps([hit.as_json()], ensure_ascii=False))
    assert not UNSAFE.search(printed)
    assert json.loads(printed)[0]["snippet"] == found.snippet


def test_hostile_notes_reach_the_terminal_as_text(tmp_path: Path, run: Run) -> None:
    html = (
        '<p onclick="x()">before \x1b]0;pwned\x07 \u202eevil\u202c zebrafish\nsecond line\r\x1b[2J</p>'
        "<script>alert('zebrafish')</script><style>p{}</style>&lt;b&gt;escaped&lt;/b&gt;"
    )
    title = "Title \x1b[31mred\x1b[0m \u202eand\nbroken"
    config = snapshot_project(tmp_path, [api_item("HSTL2345", title), note("HSNT2345", "HSTL2345", html)])
    assert run("-q", "--config", str(config), "pull").code == 0
    done = run("--config", str(config), "search", "zebrafish")
    assert done.code == 0
    lines = done.out.rstrip("\n").split("\n")
    assert len(lines) == 2 and not any(UNSAFE.search(line) for line in lines)
    assert "alert" not in done.out and "onclick" not in done.out
    assert "\\x1b" in lines[0]  # the title's escapes shown, not obeyed
    hits = search(run, config, "zebrafish")
    assert hits[0]["where"] == "note" and "evil" in hits[0]["snippet"]
    assert "\x1b" not in hits[0]["snippet"] and "\u202e" not in hits[0]["snippet"]
    assert keys(search(run, config, "escaped")) == {"HSTL2345"}  # an entity is text


# -- the catalogue's side ----------------------------------------------------------------------------------

CATALOGUE = """\
categories:
  - name: Compilers
    entries:
      - title: "Ansor: Generating High-Performance Tensor Programs"
        why: 用搜索生成张量程序
      - title: A paper nobody has in Zotero
        why: 只在目录里的论文
  - name: Search
    entries:
      - title: "Ansor: Generating High-Performance Tensor Programs"
"""


def test_curated_titles_and_whys_are_searched_and_an_edit_is_seen_without_a_sync(
    tmp_path: Path, run: Run
) -> None:
    config = snapshot_project(tmp_path, NOTES_LIBRARY[:-1], CATALOGUE)
    assert run("-q", "--config", str(config), "sync").code == 0
    hits = search(run, config, "张量程序")
    assert [(h["zotero_key"], h["where"], h["categories"]) for h in hits] == [
        ("PAPR2345", "why", ["Compilers", "Search"])
    ]
    only = search(run, config, "目录")
    assert [(h["zotero_key"], h["title"], h["categories"]) for h in only] == [
        ("", "A paper nobody has in Zotero", ["Compilers"])
    ]
    catalogue = tmp_path / "catalog.yaml"
    catalogue.write_text(CATALOGUE.replace("用搜索生成张量程序", "进化搜索与代价模型"), encoding="utf-8")
    assert search(run, config, "张量程序") == []  # the search matched the edited catalogue itself
    assert keys(search(run, config, "代价模型")) == {"PAPR2345"}
    stamp = read(tmp_path / "store.sqlite", "SELECT value FROM sync_state WHERE name = 'search_catalogue'")
    assert keys(search(run, config, "代价模型")) == {"PAPR2345"}
    assert (
        read(tmp_path / "store.sqlite", "SELECT value FROM sync_state WHERE name = 'search_catalogue'")
        == stamp
    )
    assert run("-q", "--config", str(config), "sync").code == 0  # the sync writes the same, nothing new
    assert keys(search(run, config, "代价模型")) == {"PAPR2345"}
    index_agrees_with_items(tmp_path / "store.sqlite")


def test_a_search_that_may_not_update_the_catalogue_side_says_so_and_searches_the_index(
    tmp_path: Path, run: Run
) -> None:
    config = snapshot_project(tmp_path, NOTES_LIBRARY[:-1], CATALOGUE)
    assert run("-q", "--config", str(config), "sync").code == 0
    assert keys(search(run, config, "张量程序")) == {"PAPR2345"}  # the index, built
    catalogue = tmp_path / "catalog.yaml"
    catalogue.write_text(CATALOGUE.replace("用搜索生成张量程序", "进化搜索与代价模型"), encoding="utf-8")
    with exclusive_lock(tmp_path / "store.sqlite"):  # a sync is running
        done = run("--config", str(config), "search", "张量程序", "--format", "json")
    assert done.code == 0
    assert keys(json.loads(done.out)) == {"PAPR2345"}  # as the last sync left it
    assert "another zotsync run holds the lock" in done.err and "as the last sync left it" in done.err
    assert search(run, config, "张量程序") == []  # the lock is free again: brought up to date


def test_a_pull_after_the_sync_is_matched_again_by_the_next_search(tmp_path: Path, run: Run) -> None:
    """The curated entry with no item matches one a pull brings: its why then belongs to that paper."""
    config = snapshot_project(tmp_path, NOTES_LIBRARY[:-1], CATALOGUE)
    assert run("-q", "--config", str(config), "sync").code == 0
    write_json(
        tmp_path / "library.json", [*NOTES_LIBRARY[:-1], api_item("NBDY2345", "A paper nobody has in Zotero")]
    )
    assert run("-q", "--config", str(config), "pull").code == 0
    assert [(h["zotero_key"], h["where"]) for h in search(run, config, "目录")] == [("NBDY2345", "why")]
    index_agrees_with_items(tmp_path / "store.sqlite")


# -- stores, commands, the Python API ------------------------------------------------------------------------


def test_a_store_from_before_search_is_upgraded_by_a_pull_and_indexed_by_the_first_search(
    tmp_path: Path, run: Run
) -> None:
    config = snapshot_project(tmp_path, NOTES_LIBRARY[:-1])
    assert run("-q", "--config", str(config), "pull").code == 0
    store = tmp_path / "store.sqlite"
    back_to_schema(store, 12)
    done = run("--config", str(config), "search", "sketch")
    assert done.code == 1 and "run `zotsync pull` once to upgrade it" in done.err
    assert (
        run("-q", "--config", str(config), "pull").code == 0
    )  # nothing new in the library: only the upgrade
    assert read(store, "SELECT name FROM sqlite_master WHERE name LIKE 'search%'") == []
    assert keys(search(run, config, "sketch")) == {"PAPR2345"}
    index_agrees_with_items(store)


def test_pulls_build_no_index_until_the_first_search_which_builds_it_once(tmp_path: Path, run: Run) -> None:
    """A store nobody searches costs its pulls nothing for search: the first search builds the index in
    one line on stderr, from then on pulls keep it and searches say nothing more."""
    config = snapshot_project(tmp_path, NOTES_LIBRARY[:-1], CATALOGUE)
    store = tmp_path / "store.sqlite"
    assert run("-q", "--config", str(config), "sync").code == 0
    assert read(store, "SELECT name FROM sqlite_master WHERE name LIKE 'search%'") == []
    first = run("--config", str(config), "search", "张量程序")
    assert first.code == 0 and first.err.splitlines() == [
        "zotsync: building the search index (once: from now on every pull keeps it current)",
        "1 paper",
    ]
    index_agrees_with_items(store)
    write_json(tmp_path / "library.json", [*NOTES_LIBRARY[:-1], api_item("NWPR2345", "Wombat tensors")])
    assert run("-q", "--config", str(config), "pull").code == 0
    index_agrees_with_items(store)  # the pull kept it
    again = run("--config", str(config), "search", "wombat")
    assert again.code == 0 and again.err == "1 paper\n"


def test_a_first_search_that_may_not_build_the_index_says_why_in_one_line(tmp_path: Path, run: Run) -> None:
    config = snapshot_project(tmp_path, NOTES_LIBRARY[:-1])
    assert run("-q", "--config", str(config), "pull").code == 0
    with exclusive_lock(tmp_path / "store.sqlite"):  # a sync is running
        done = run("-q", "--config", str(config), "search", "sketch")
    assert done.code == 1 and done.out == ""
    assert done.err.startswith("zotsync: error: cannot build the search index: another zotsync run holds")
    assert len(done.err.splitlines()) == 1
    assert keys(search(run, config, "sketch")) == {"PAPR2345"}  # once the lock is free


def test_a_sqlite_without_the_trigram_tokenizer_keeps_the_store_working_without_search(
    tmp_path: Path, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite before 3.34 (or without FTS5): the store is made and synced as any other, `search` says
    why in one line, and the first search under a SQLite that has it builds the index, the catalogue's
    side included."""
    monkeypatch.setattr(searchindex, "available", lambda: False)
    config = snapshot_project(tmp_path, copy.deepcopy(NOTES_LIBRARY[:-1]), CATALOGUE)
    store = tmp_path / "store.sqlite"
    assert run("-q", "--config", str(config), "sync").code == 0
    assert read(store, "SELECT name FROM sqlite_master WHERE name LIKE 'search%'") == []
    done = run("--config", str(config), "search", "sketch")
    assert done.code == 1 and "has no FTS5 trigram tokenizer (SQLite 3.34 or later)" in done.err
    assert len(done.err.splitlines()) == 1
    monkeypatch.undo()
    assert keys(search(run, config, "sketch")) == {"PAPR2345"}
    assert keys(search(run, config, "张量程序")) == {"PAPR2345"}
    index_agrees_with_items(store)


def test_the_command_line(tmp_path: Path, run: Run) -> None:
    config = snapshot_project(tmp_path, PAPERS)
    done = run("--config", str(config), "search", "tensor")
    assert done.code == 1 and "run `zotsync pull` first" in done.err  # no store: nothing is created
    assert not (tmp_path / "store.sqlite").exists()
    assert run("-q", "--config", str(config), "pull").code == 0
    done = run("-q", "--config", str(config), "search", "GPUs")
    assert done.code == 0 and done.err == ""
    assert done.out.splitlines() == [  # the title outweighs the abstract
        "GRPH2345  Graphene: An IR for Optimized Tensor Computations on GPUs  [Unfiled]",
        "          title: Graphene: An IR for Optimized Tensor Computations on GPUs",
        "FLSH2345  FlashAttention-2: Faster Attention with Better Parallelism and Work Partitioning"
        "  [Unfiled]",
        "          abstract: Tiling and warp-specialization on GPUs; their kernels.",
    ]
    done = run("--config", str(config), "search", "GPUs", "--limit", "1")
    assert done.err == "1 paper (the first; --limit shows more)\n"
    # a limit past any library's size means all of them, not an overflow of SQLite's integers
    done = run("--config", str(config), "search", "GPUs", "--limit", "9" * 30)
    assert done.code == 0 and done.err == "2 papers\n", done.err
    for args, message in [
        (["--", "-!-"], "no word to look for"),
        (["x", "--limit", "0"], "--limit"),
        ([], "missing argument TEXT"),
        (["x", "--format", "xml"], "--format must be text or json"),
        (["x" * 1001], "at most 1000"),
    ]:
        done = run("--config", str(config), "search", *args)
        assert done.code == 2 and message in done.err, (args, done.err)
    hits = search(run, config, "nothing-like-this")
    assert hits == []


def test_the_python_api(tmp_path: Path, run: Run) -> None:
    config_path = snapshot_project(tmp_path, NOTES_LIBRARY[:-1], CATALOGUE)
    config = zotsync.load_config(config_path)
    zotsync.sync(config)
    hits = zotsync.search(config, "张量")
    assert [(h.zotero_key, h.title, h.categories, h.where) for h in hits] == [
        ("PAPR2345", "Ansor: Generating High-Performance Tensor Programs", ["Compilers", "Search"], "why")
    ]
    assert "张量" in hits[0].snippet and isinstance(hits[0].categories, list)
    assert zotsync.search(config, "autoscheduler", limit=1)[0].where == "annotation"


# -- real data -----------------------------------------------------------------------------------------------


def _real_web_objects() -> list[dict[str, Any]]:
    objects: dict[str, dict[str, Any]] = {}
    for path in sorted(WEB_LIBRARY.glob("test-user-*.json")):
        body = json.loads(path.read_text(encoding="utf-8"))
        for obj in body if isinstance(body, list) else [body]:
            if isinstance(obj, dict) and "data" in obj and "key" in obj:
                objects[obj["key"]] = obj
    return list(objects.values())


@pytest.mark.skipif(not WEB_LIBRARY.is_dir(), reason="../shared/fixtures/zotero-web-library is absent")
def test_the_real_web_librarys_annotations_and_notes_are_found_on_their_paper(
    tmp_path: Path, run: Run
) -> None:
    """Zotero's own web-library test account: each annotation's text or comment, and each child note,
    finds its paper (read here from the JSON: the annotation's attachment's parent, the note's parent)."""
    objects = _real_web_objects()
    by_key = {o["key"]: o["data"] for o in objects}
    config = snapshot_project(tmp_path, objects)
    assert run("-q", "--config", str(config), "pull").code == 0
    checked = 0
    rng = random.Random(7)
    for key, data in sorted(by_key.items()):
        parent = by_key.get(data.get("parentItem", ""), {})
        if data["itemType"] == "annotation":
            paper, text = (
                parent.get("parentItem"),
                f"{data.get('annotationText', '')} {data.get('annotationComment', '')}",
            )
        elif data["itemType"] == "note" and parent:
            paper, text = data["parentItem"], searchtext.note_text(data.get("note", ""))
        else:
            continue
        paper_data = by_key.get(paper or "", {})
        if not paper_data or paper_data.get("deleted") or parent.get("deleted") or data.get("deleted"):
            continue
        words = [w for w in searchtext.parse_query(text).words if len(w) >= 4]
        if not words:
            continue
        chosen = rng.sample(words, min(2, len(words)))
        assert paper in keys(search(run, config, *chosen)), (key, chosen)
        checked += 1
    assert checked >= 3
    # annotations whose attachment the fixtures lack hang from no paper: no hit
    orphans = [d for d in by_key.values() if d["itemType"] == "annotation" and d["parentItem"] not in by_key]
    assert orphans and search(run, config, "awesome") == []
    index_agrees_with_items(tmp_path / "store.sqlite")


@pytest.mark.skipif(not REAL_SQLITE.is_dir(), reason="../shared/fixtures/zotero-sqlite is absent")
def test_a_real_zotero_databases_notes_find_their_paper(tmp_path: Path, run: Run) -> None:
    """Better BibTeX's test profile (Zotero 9.0.4): 48 child notes; each note's words find its parent,
    read here from zotero.sqlite with plain SQL."""
    data_dir = tmp_path / "Zotero"
    data_dir.mkdir()
    shutil.copy(REAL_SQLITE / "betterbibtex-testprofile-9.0.4.sqlite", data_dir / "zotero.sqlite")
    notes = read(
        data_dir / "zotero.sqlite",
        "SELECT parent.key, n.note FROM itemNotes n JOIN items parent ON parent.itemID = n.parentItemID"
        " JOIN items i ON i.itemID = n.itemID WHERE i.libraryID = 1"
        " AND n.itemID NOT IN (SELECT itemID FROM deletedItems)"
        " AND n.parentItemID NOT IN (SELECT itemID FROM deletedItems)",
    )
    config = local_project(tmp_path, data_dir)
    assert run("-q", "--config", str(config), "pull").code == 0
    checked = 0
    for parent, note_html in notes:
        words = [
            w for w in searchtext.parse_query(searchtext.note_text(note_html or "")).words if len(w) >= 3
        ]
        if words:
            assert parent in keys(search(run, config, *words[:3])), (parent, words[:3])
            checked += 1
    assert checked >= 20
    index_agrees_with_items(tmp_path / "store.sqlite")


def test_note_text_reads_what_a_reader_sees() -> None:
    html = (
        '<div data-schema-version="8"><h1>Title</h1><p>one<br>two</p><ul><li>three</li><li>four</li></ul>'
        '<p><span class="highlight" data-annotation="%7B%7D">“quoted”</span>'
        ' <span class="citation">(Doe, 2020)</span></p><img data-attachment-key="ABCD2345"/>'
        "<table><tr><td>cell</td><td>next</td></tr></table>"
        "<script>var x = 1;</script>5 &gt; 3 &amp; done</div>"
    )
    assert (
        searchtext.clean(searchtext.note_text(html))
        == "Title one two three four “quoted” (Doe, 2020) cell next 5 > 3 & done"
    )


def test_a_paper_with_many_notes_is_one_hit(tmp_path: Path, run: Run) -> None:
    notes = [
        note(
            zkey("NTES", n),
            "PAPR2345",
            f"<p>kernel note {n} {''.join(random.Random(n).choices(string.ascii_lowercase, k=8))}</p>",
        )
        for n in range(30)
    ]
    config = snapshot_project(tmp_path, [NOTES_LIBRARY[0], *notes])
    assert run("-q", "--config", str(config), "pull").code == 0
    hits = search(run, config, "kernel")
    assert [h["zotero_key"] for h in hits] == ["PAPR2345"] and hits[0]["snippet"].startswith("kernel note")
