"""Search by meaning (`search.semantic`): vectors from the model the `wordllama` wheel carries, kept per
paper in the store and remade only for changed text; `search --mode`, `related`, the Python API, the MCP
answer and note pages' "Related in this list". Checked against what the papers are about, as a reader
would judge it (written here), never against the code's own output alone."""

from __future__ import annotations

import importlib.util
import json
import socket
from pathlib import Path

import pytest
from factories import api_child, api_item, edit_snapshot, read, write_json

import zotsync
from zotsync import embed
from zotsync.app import meaning
from zotsync.processing import meaning as processing_meaning

pytestmark = pytest.mark.skipif(not embed.available(), reason="the semantic extra is not installed")

# Papers of several fields; the first words of each key say its topic.
PAPERS = {
    "FUSEAAAA": (
        "Operator fusion for deep learning compilers",
        "We merge adjacent GPU kernels of a neural network so that intermediate tensors stay in "
        "registers and shared memory instead of global memory, cutting memory traffic.",
    ),
    "BIRDAAAA": (
        "Migration routes of songbirds across Europe",
        "We track warblers and swallows with light-level geolocators across the Sahara and the "
        "Mediterranean, and relate their stopover sites to weather and food.",
    ),
    "RATEAAAA": (
        "Interest rates and inflation expectations",
        "How central bank monetary policy announcements move households' expectations of inflation and "
        "the yield curve of government bonds.",
    ),
    "PRTNAAAA": (
        "Predicting protein structure from sequence",
        "A neural network predicts the three-dimensional fold of a protein from its amino acid sequence "
        "and multiple sequence alignments.",
    ),
    "PEMSAAAA": (
        "Metre and rhyme in Romantic poetry",
        "A reading of the sonnets and odes of Keats and Shelley: stanza forms, metre, imagery of nature.",
    ),
}
ZH_ABSTRACT = "把相邻的 GPU 算子融合成一个内核，减少访存。"
CATALOGUE = """\
categories:
  - name: Systems
    entries:
      - title: Operator fusion for deep learning compilers
        why: fewer trips to DRAM
  - name: Nature
    entries:
      - title: Migration routes of songbirds across Europe
      - title: Predicting protein structure from sequence
"""


def objects(abstracts: dict[str, str] | None = None) -> list[dict]:
    found = []
    for key, (title, abstract) in PAPERS.items():
        found.append(api_item(key, title, abstractNote=(abstracts or {}).get(key, abstract)))
    found.append(api_child("NTEFUSE2", "FUSEAAAA", "note", note="<p>Fusion saves bandwidth.</p>"))
    found.append(api_child("NTEBIRD2", "BIRDAAAA", "note", note="<p>Stopovers matter.</p>"))
    return found


def project(folder: Path, semantic: bool = True, papers: list[dict] | None = None, exports: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    write_json(folder / "library.json", papers if papers is not None else objects())
    (folder / "catalog.yaml").write_text(CATALOGUE, encoding="utf-8")
    config = folder / "zotsync.yaml"
    config.write_text(
        "source: {type: snapshot, path: library.json}\ncatalog: catalog.yaml\nstore: store.sqlite\n"
        f"exports: {{dir: out, language: en{exports}}}\n"
        f"search: {{semantic: {'true' if semantic else 'false'}}}\n",
        encoding="utf-8",
    )
    return config


def synced(run, config: Path) -> dict:
    result = run("--config", str(config), "sync", "--json")
    assert result.code == 0, result.err
    return json.loads(result.out)


def edit_abstract(folder: Path, key: str, abstract: str) -> None:
    """A new abstract for the paper `key` in the project's snapshot, at a newer version."""

    def edit(objects: list[dict]) -> list[dict]:
        for obj in objects:
            if obj["key"] == key:
                obj["version"] = obj["data"]["version"] = 9999
                obj["data"]["abstractNote"] = abstract
        return objects

    edit_snapshot(folder, edit)


def vectors(config: Path) -> dict[str, tuple[str, bytes]]:
    rows = read(config.parent / "store.sqlite", "SELECT paper, made_from, vector FROM paper_vectors")
    return {paper: (digest, vector) for paper, digest, vector in rows}


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every socket refused: a model that tried the network would fail here."""

    def refused(*_args: object, **_kw: object) -> None:
        raise AssertionError("a socket was opened")

    monkeypatch.setattr(socket.socket, "__init__", refused)
    monkeypatch.setattr(socket, "create_connection", refused)
    monkeypatch.setattr(socket, "getaddrinfo", refused)


def test_embedding_opens_no_socket(run, tmp_path: Path, offline: None) -> None:
    for read_once in (embed._table, embed._floats, embed._tokenizer, embed._tokens):
        read_once.cache_clear()  # read the model's files again, with the network refused
    config = project(tmp_path)
    assert synced(run, config)["processed"]["meaning"]["embedded"] == len(PAPERS)
    assert run("--config", str(config), "search", "--mode", "semantic", "bird migration").code == 0
    stored = vectors(config)
    assert set(stored) == set(PAPERS)
    assert all(len(vector) == 4 + embed.DIMENSIONS for _, vector in stored.values())  # int8 and a scale


def test_a_paraphrase_finds_the_paper_keywords_miss(run, tmp_path: Path) -> None:
    config = project(tmp_path)
    synced(run, config)
    query = "combining kernels to reduce memory bandwidth"
    words = run("--config", str(config), "search", query, "--mode", "keyword", "--format", "json")
    assert words.code == 0 and json.loads(words.out) == []  # no paper holds all these words
    found = run("--config", str(config), "search", query, "--mode", "semantic", "--format", "json")
    assert found.code == 0, found.err
    assert json.loads(found.out)[0]["zotero_key"] == "FUSEAAAA"
    assert json.loads(found.out)[0]["where"] == "meaning"
    birds = run("--config", str(config), "search", "where do small birds fly in winter", "--format", "json")
    assert birds.code == 0, birds.err  # hybrid: the default once semantic is on
    assert json.loads(birds.out)[0]["zotero_key"] == "BIRDAAAA"
    # A hit by meaning is placed as a hit by words is: a curated paper in its categories (the catalogue
    # says so), any other in its collections (these have none).
    poems = run(
        "--config", str(config), "search", "odes to nightingales", "--mode", "semantic", "--format", "json"
    )
    placed = {
        hit["zotero_key"]: hit["categories"]
        for hit in json.loads(found.out) + json.loads(birds.out) + json.loads(poems.out)
    }
    assert placed["FUSEAAAA"] == ["Systems"] and placed["BIRDAAAA"] == ["Nature"]
    assert placed["PEMSAAAA"] == ["Unfiled"]
    # and nothing below the similarity floor: interest rates have nothing to do with any of these
    assert "RATEAAAA" not in placed
    related = run("--config", str(config), "related", "BIRDAAAA", "--format", "json")
    assert {hit["zotero_key"]: hit["categories"] for hit in json.loads(related.out)}["PRTNAAAA"] == ["Nature"]


def test_a_hybrid_search_is_not_padded_with_papers_of_other_subjects(run, tmp_path: Path) -> None:
    config = project(tmp_path)
    synced(run, config)
    found = run("--config", str(config), "search", "swallows", "--limit", "5", "--format", "json")
    assert found.code == 0, found.err
    hits = json.loads(found.out)
    assert hits[0]["zotero_key"] == "BIRDAAAA" and hits[0]["where"] == "abstract"
    assert len(hits) < 5  # five papers, one about birds
    for hit in hits[1:]:
        assert hit["where"] == "meaning", hit
        assert float(hit["snippet"].removeprefix("similarity ")) >= meaning.SIMILARITY_FLOOR


def test_related_lists_the_nearest_papers_never_the_paper_itself(run, tmp_path: Path) -> None:
    config = project(tmp_path)
    synced(run, config)
    result = run("--config", str(config), "related", "PRTNAAAA", "--format", "json")
    assert result.code == 0, result.err
    hits = json.loads(result.out)
    assert [hit["zotero_key"] for hit in hits] and "PRTNAAAA" not in [hit["zotero_key"] for hit in hits]
    assert set(hits[0]) >= {"zotero_key", "title", "score"}
    assert [hit["score"] for hit in hits] == sorted((hit["score"] for hit in hits), reverse=True)
    assert len(hits) == len(PAPERS) - 1
    text = run("--config", str(config), "related", "FUSEAAAA", "--limit", "2")
    assert text.code == 0 and len(text.out.splitlines()) == 2


def test_the_same_text_gives_the_same_vector_and_the_same_ranking(run, tmp_path: Path) -> None:
    texts = ["Operator fusion for deep learning compilers", "张量编译器", ""]
    assert embed.embed(texts).tobytes() == embed.embed(list(reversed(texts)))[::-1].tobytes()
    config = project(tmp_path)
    synced(run, config)
    loaded = zotsync.load_config(config)
    first = zotsync.related(loaded, "FUSEAAAA")
    meaning._cached.clear()  # read from the store again
    assert zotsync.related(loaded, "FUSEAAAA") == first
    asked = ("--config", str(config), "search", "protein folding", "--mode", "semantic", "--format", "json")
    again, twice = run(*asked), run(*asked)
    assert again.out == twice.out and json.loads(again.out)[0]["zotero_key"] == "PRTNAAAA"


def test_one_edited_abstract_re_embeds_one_paper(run, tmp_path: Path) -> None:
    config = project(tmp_path)
    synced(run, config)
    before = vectors(config)
    assert synced(run, config)["processed"]["meaning"]["embedded"] == 0  # nothing changed

    edit_abstract(tmp_path, "RATEAAAA", "Bond markets and the yield curve after rate rises.")
    assert synced(run, config)["processed"]["meaning"]["embedded"] == 1
    after = vectors(config)
    assert {key for key in after if after[key] != before[key]} == {"RATEAAAA"}


def test_empty_huge_and_chinese_abstracts_work(run, tmp_path: Path) -> None:
    papers = [
        *objects({"RATEAAAA": "", "PEMSAAAA": "metre " * 200_000}),  # empty; 1.2 MB
        api_item("ZHCNAAAA", "张量编译器的算子融合", abstractNote=ZH_ABSTRACT),
    ]
    config = project(tmp_path, papers=papers)
    assert synced(run, config)["processed"]["meaning"]["embedded"] == len(PAPERS) + 1
    for key in ("RATEAAAA", "PEMSAAAA", "ZHCNAAAA"):
        result = run("--config", str(config), "related", key, "--format", "json")
        assert result.code == 0, result.err
        assert len(json.loads(result.out)) == len(PAPERS)
    found = run("--config", str(config), "search", "算子融合", "--mode", "semantic", "--format", "json")
    assert found.code == 0, found.err
    assert json.loads(found.out)[0]["zotero_key"] == "ZHCNAAAA"


def test_with_the_option_off_related_says_how_to_turn_it_on(run, tmp_path: Path) -> None:
    config = project(tmp_path, semantic=False)
    synced(run, config)
    result = run("--config", str(config), "related", "FUSEAAAA")
    assert result.code == 2
    assert len(result.err.strip().splitlines()) == 1
    assert "search: {semantic: true}" in result.err
    semantic = run("--config", str(config), "search", "fusion", "--mode", "semantic")
    assert semantic.code == 2 and "search: {semantic: true}" in semantic.err
    assert not read(tmp_path / "store.sqlite", "SELECT * FROM paper_vectors")  # off: nothing embedded
    words = run("--config", str(config), "search", "fusion", "--format", "json")  # keyword, as before
    assert words.code == 0 and json.loads(words.out)[0]["zotero_key"] == "FUSEAAAA"


def test_turned_on_before_a_sync_the_plain_search_still_answers(
    run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = project(tmp_path, semantic=False)
    synced(run, config)
    config.write_text(config.read_text(encoding="utf-8").replace("semantic: false", "semantic: true"))
    words = run("--config", str(config), "search", "songbirds", "--format", "json")  # hybrid, the default
    assert words.code == 0 and [hit["zotero_key"] for hit in json.loads(words.out)] == ["BIRDAAAA"]
    assert "no paper has a vector of meaning yet" in words.err
    assert words.err.count("searching by words alone") == 1
    asked = run("--config", str(config), "search", "songbirds", "--mode", "semantic")  # asked for: an error
    assert asked.code == 1 and "run `zotsync sync`" in asked.err
    # the model's package gone: the same, and the sync says so once, in its own words
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == embed.PACKAGE else find_spec(name, *a)
    )
    gone = run("--config", str(config), "search", "songbirds", "--format", "json")
    assert gone.code == 0 and json.loads(gone.out)[0]["zotero_key"] == "BIRDAAAA"
    assert "searching by words alone (search by meaning needs the wordllama package" in gone.err

    def missing(job: object) -> None:  # as `update` fails in a process that never had the package
        embed.installed()

    monkeypatch.setattr(processing_meaning, "update", missing)
    sync = run("--config", str(config), "sync")
    assert sync.code == 0 and "search by meaning: search by meaning" not in sync.err
    assert sync.err.count("search by meaning needs the wordllama package") == 1


def test_note_pages_list_related_papers_of_the_page(run, tmp_path: Path) -> None:
    config = project(tmp_path, exports=", scope: curated")
    synced(run, config)
    page = (tmp_path / "out" / "notes" / "BIRDAAAA.md").read_text(encoding="utf-8")
    section = page.split("## Related in this list", 1)[1].split("\n## ", 1)[0]
    # the page's other papers, by their titles; the one with a note page linked to it
    assert sorted(section.strip().splitlines()) == [
        "- Predicting protein structure from sequence",
        "- [Operator fusion for deep learning compilers](FUSEAAAA.md)",
    ]
    assert "Interest rates" not in section  # not curated: not on this page
    off = project(tmp_path / "off", semantic=False)
    synced(run, off)
    assert "Related in this list" not in (tmp_path / "off" / "out" / "notes" / "BIRDAAAA.md").read_text()


def test_the_mcp_answer_is_related_s_json(run, tmp_path: Path) -> None:
    from zotsync.app.ask import AskError, ReadingList

    config = project(tmp_path)
    synced(run, config)
    asked = run("--config", str(config), "related", "BIRDAAAA", "--limit", "3", "--format", "json")
    cli = json.loads(asked.out)
    assert ReadingList(zotsync.load_config(config)).related("BIRDAAAA", 3).value == cli
    off = project(tmp_path / "off", semantic=False)
    synced(run, off)
    with pytest.raises(AskError, match="search by meaning is not on"):
        ReadingList(zotsync.load_config(off)).related("BIRDAAAA", 3)


def test_a_stored_vector_keeps_its_direction() -> None:
    import numpy as np

    from zotsync.processing.meaning import Vectors, encode

    made = embed.embed([f"{title}\n{abstract}" for title, abstract in PAPERS.values()])
    back = Vectors.from_rows(list(PAPERS), b"".join(encode(made))).matrix
    cosines = (made * back).sum(axis=1) / np.linalg.norm(back, axis=1)
    assert cosines.min() > 0.999


def test_a_hit_in_no_collection_is_unfiled_as_the_page_says() -> None:
    from zotsync.reconcile import UNFILED

    assert meaning.UNFILED == UNFILED


TEXTS = [
    "",
    " ",
    "  two  spaces  ",
    "combining kernels to avoid writing intermediate results back to DRAM",
    "Line one\nline two\ttabbed",
    "héllo wörld, naïve café — “quotes” ½ ﬁ",
    "张量编译器把相邻的算子融合",
    "日本語のテキストと한국어 텍스트",
    "emoji 😀🚀 and symbols Ω≈√∫≤",
    ZH_ABSTRACT,
    *(f"{title}\n{abstract}" for title, abstract in PAPERS.values()),
    "fusion " * 140,
]


def test_a_query_is_tokenized_as_the_model_s_tokenizer_does(tmp_path: Path) -> None:
    import sqlite3

    from zotsync.tokens import Tokens, _build

    source = embed._folder() / embed.TOKENIZER
    _build(source, tmp_path / "tokens.sqlite")
    tokens = Tokens(sqlite3.connect(tmp_path / "tokens.sqlite"))
    tokenizer = embed._tokenizer()
    for text in TEXTS:
        assert tokens.tokenize(text) == tokenizer.encode(text, add_special_tokens=False).ids, text
    assert tokens.tokenize("a </s> b") is None  # a special token's spelling: left to the tokenizer


def test_a_query_s_vector_is_the_one_a_batch_gives_it() -> None:
    import numpy as np

    batch = embed.embed(TEXTS)
    for text, vector in zip(TEXTS, batch, strict=True):
        assert np.allclose(embed.embed_one(text), vector, atol=1e-6), text
    assert np.allclose(embed.embed_one("x </s> y"), embed.embed(["x </s> y"])[0], atol=1e-6)


def test_the_embedding_bar_keeps_quiet_under_q(run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import contextlib

    from zotsync import net

    asked: list[bool] = []

    @contextlib.contextmanager
    def progress(total: int, label: str, shown: bool, least: int = 100):  # type: ignore[no-untyped-def]
        asked.append(shown)
        yield lambda _n: None

    monkeypatch.setattr(net, "progress", progress)
    config = project(tmp_path / "quiet")
    assert run("--config", str(config), "sync", "-q").code == 0

    edit_abstract(config.parent, "BIRDAAAA", "Warblers over the Alps.")
    assert run("--config", str(config), "sync").code == 0
    assert asked == [False, True]


def test_a_damaged_tokenizer_cache_is_made_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from zotsync import tokens

    source = embed._folder() / embed.TOKENIZER
    cache = tmp_path / "cache" / "tokenizer.sqlite"
    monkeypatch.setattr(tokens, "cache_path", lambda _source: cache)
    cache.parent.mkdir()
    cache.write_bytes(b"not a database")
    found = tokens.Tokens.open(source)
    assert found is not None
    expected = embed._tokenizer().encode("operator fusion", add_special_tokens=False).ids
    assert found.tokenize("operator fusion") == expected


def test_products_a_block_at_a_time_are_the_matrix_s() -> None:
    import numpy as np

    from zotsync.processing.meaning import Vectors, encode

    rng = np.random.default_rng(7)
    made = rng.normal(size=(2500, embed.DIMENSIONS)).astype(np.float32)  # more than two blocks
    made /= np.linalg.norm(made, axis=1, keepdims=True)
    blob = b"".join(encode(made))
    query = rng.normal(size=embed.DIMENSIONS).astype(np.float32)
    query /= np.linalg.norm(query)
    by_blocks = Vectors.from_rows([str(i) for i in range(len(made))], blob)
    whole = Vectors.from_rows([str(i) for i in range(len(made))], blob)
    assert np.allclose(by_blocks.products(query), whole.matrix @ query, atol=1e-5)
    assert np.allclose(by_blocks.products(query), made @ query, atol=0.02)  # int8 keeps the direction
    assert by_blocks.related("5", 5) == whole.related("5", 5)


@pytest.mark.slow
def test_a_search_by_meaning_imports_no_keyword_search(run, tmp_path: Path) -> None:
    import subprocess
    import sys

    config = project(tmp_path)
    synced(run, config)
    script = (
        "import sys\nfrom zotsync.cli import main\n"
        f"code = main(['--config', {str(config)!r}, 'search', '--mode', 'semantic', 'birds', '-q'])\n"
        "heavy = [m for m in ('zotsync.app.search', 'zotsync.reconcile', 'zotsync.catalogue', 'tokenizers',"
        " 'pandas') if m in sys.modules]\n"
        "print(code, heavy)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip().splitlines()[-1] == "0 []", done.stdout + done.stderr


def test_a_query_is_tokenized_alike_in_another_thread() -> None:
    import threading

    tokens = embed._tokens()
    assert tokens is not None
    here = tokens.tokenize("combining kernels")
    there: list[object] = []
    thread = threading.Thread(target=lambda: there.append(tokens.tokenize("combining kernels")))
    thread.start()
    thread.join()
    assert here is not None
    assert there == [here]  # not None: the compact form served the other thread too
