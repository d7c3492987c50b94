"""The attachments' full text (`fulltext.enabled`): the test server speaks `/fulltext` as the Web API
does, a pull brings the texts in at the protocol's floor, the store keeps them compressed and indexed,
and `search` finds their words, naming the paper. Each check reads the texts back independently (the
server's own bodies, the store's rows through plain SQL)."""

from __future__ import annotations

import json
import sqlite3
import urllib.request
import zlib
from pathlib import Path

import pytest
from factories import ZOTERO_API_KEY, config_for, small_library, write_web_config
from zotero_server import FakeLibrary, ZoteroServer

from zotsync.app.pull import pull
from zotsync.sources.web import WebSource
from zotsync.store import Store

MLIR_TEXT = (
    "MLIR reuses dialects: the affine dialect lowers loops; Müller and Gómez measured Emiralioğlu's passes."
)


def _get(server: ZoteroServer, path: str, **headers: str) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(server.url + path, headers={"Zotero-API-Key": ZOTERO_API_KEY, **headers})
    try:
        with urllib.request.urlopen(request) as answer:
            return answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def _library_with_text() -> FakeLibrary:
    library = small_library()
    library.set_fulltext("MLRPAAAA", MLIR_TEXT, indexedPages=3, totalPages=12)
    return library


def _pull(server: ZoteroServer, store_path: Path, full: bool = False):
    with WebSource(config_for(server)) as source, Store(store_path) as store:
        report = pull(source, store, full=full, fulltext=True)
        return report, source.requests


def _rows(store_path: Path) -> dict[str, tuple[str, str | None, int | None, int | None]]:
    db = sqlite3.connect(store_path)
    try:
        return {
            key: (stamp, None if blob is None else zlib.decompress(blob).decode(), indexed, total)
            for key, stamp, blob, indexed, total in db.execute(
                "SELECT key, stamp, text, indexed_pages, total_pages FROM fulltext"
            )
        }
    finally:
        db.close()


def test_the_server_speaks_fulltext_as_the_web_api(zotero_api) -> None:
    server = zotero_api(_library_with_text())
    prefix = f"/users/{server.library.library_id}"
    status, headers, body = _get(server, f"{prefix}/fulltext?since=0")
    assert status == 200
    version = int(headers["Last-Modified-Version"])
    assert json.loads(body) == {"MLRPAAAA": version}
    assert _get(server, f"{prefix}/fulltext?since={version}")[2] == b"{}"
    assert _get(server, f"{prefix}/fulltext")[0] == 400  # since is required
    assert _get(server, f"{prefix}/fulltext?since=0", **{"If-Modified-Since-Version": str(version)})[0] == 304
    status, headers, body = _get(server, f"{prefix}/items/MLRPAAAA/fulltext")
    assert status == 200 and json.loads(body) == {"content": MLIR_TEXT, "indexedPages": 3, "totalPages": 12}
    assert _get(server, f"{prefix}/items/TRMSAAAA/fulltext")[0] == 404


def test_a_pull_brings_the_text_and_a_no_change_sync_asks_nothing_more(zotero_api, tmp_path: Path) -> None:
    server = zotero_api(_library_with_text())
    store_path = tmp_path / "store.sqlite"
    report, _ = _pull(server, store_path)
    assert report.texts is not None and report.texts.fetched == 1
    assert report.summary().endswith("; full text: 1 fetched, 0 removed")
    assert report.to_dict()["fulltext"] == {"fetched": 1, "without_text": 0, "removed": 0}
    _, text, indexed, total = _rows(store_path)["MLRPAAAA"]
    assert text == MLIR_TEXT and (indexed, total) == (3, 12)
    server.reset()
    report, requests = _pull(server, store_path)
    assert requests == 1 and len(server.requests) == 1  # the one conditional request: 304
    assert report.texts is None


def test_an_edited_text_is_fetched_alone_and_a_deleted_attachment_loses_its_words(
    zotero_api, tmp_path: Path
) -> None:
    library = _library_with_text()
    library.add_item(
        "Second PDF", "attachment", key="TRMPAAAA", parent="TRMSAAAA", contentType="application/pdf"
    )
    library.set_fulltext("TRMPAAAA", "Tiramisu schedules polyhedral tiles")
    server = zotero_api(library)
    store_path = tmp_path / "store.sqlite"
    _pull(server, store_path)
    assert set(_rows(store_path)) == {"MLRPAAAA", "TRMPAAAA"}
    library.set_fulltext("TRMPAAAA", "Tiramisu now schedules sparse tensors")
    server.reset()
    _pull(server, store_path)
    fetched = [p for p in server.paths() if p.endswith("/fulltext") and "/items/" in p]
    assert fetched == [f"/users/{library.library_id}/items/TRMPAAAA/fulltext"]
    assert _rows(store_path)["TRMPAAAA"][1] == "Tiramisu now schedules sparse tensors"
    library.delete_item("TRMPAAAA")
    _pull(server, store_path)
    assert set(_rows(store_path)) == {"MLRPAAAA"}
    db = sqlite3.connect(store_path)
    assert (
        db.execute("SELECT rowid FROM fulltext_index WHERE fulltext_index MATCH 'tiramisu'").fetchall() == []
    )
    assert db.execute(
        "SELECT count(*) FROM fulltext_index WHERE fulltext_index MATCH 'dialects'"
    ).fetchone() == (1,)
    db.close()
    library.trash_item("MLRPAAAA")
    _pull(server, store_path)
    assert _rows(store_path) == {}


def test_a_failed_text_request_is_one_line_and_the_sync_goes_on(zotero_api, tmp_path: Path, run) -> None:
    from zotero_server import Fault

    server = zotero_api(_library_with_text())
    config = _project(server, tmp_path)
    assert run("-q", "--config", str(config), "pull").code == 0
    server.library.set_fulltext("MLRPAAAA", "a newer text")
    # the items' versions, the collections' versions and /deleted answer; the texts' listing fails
    server.inject(None, None, None, Fault.error_body(400, "no such thing"))
    result = run("--config", str(config), "sync")
    assert result.code == 0, result.err
    assert "the PDFs' text was not brought up to date" in result.err
    assert run("-q", "--config", str(config), "pull").code == 0  # the next one asks again, and gets it
    assert _rows(tmp_path / "store.sqlite")["MLRPAAAA"][1] == "a newer text"


def test_a_dry_run_asks_for_no_text(zotero_api, tmp_path: Path, run) -> None:
    server = zotero_api(_library_with_text())
    config = _project(server, tmp_path)
    server.reset()
    assert run("-q", "--config", str(config), "pull", "--dry-run").code == 0
    assert server.paths() and not [path for path in server.paths() if "fulltext" in path]


def test_a_key_without_file_access_gets_one_line_and_the_sync_goes_on(
    zotero_api, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server = zotero_api(_library_with_text())
    server.keys_without_files.add(ZOTERO_API_KEY)
    report, _ = _pull(server, tmp_path / "store.sqlite")
    assert report.texts is not None and report.texts.refused
    assert report.result.items_added > 0
    warnings = [r for r in caplog.records if r.levelname == "WARNING" and "full text" in r.getMessage()]
    assert len(warnings) == 1


def _project(server: ZoteroServer, folder: Path) -> Path:
    config = write_web_config(folder, server.url)
    config.write_text(config.read_text() + "fulltext:\n  enabled: true\n", encoding="utf-8")
    return config


def test_search_finds_words_of_the_pdf_and_names_the_paper(zotero_api, tmp_path: Path, run) -> None:
    library = _library_with_text()
    library.add_item(
        "Markup PDF", "attachment", key="TRMPAAAA", parent="TRMSAAAA", contentType="application/pdf"
    )
    library.set_fulltext("TRMPAAAA", "<script>alert(1)</script> **bold** [x](y) zanzibar\x00tiles")
    server = zotero_api(library)
    config = _project(server, tmp_path)
    assert run("-q", "--config", str(config), "pull").code == 0
    result = run("--config", str(config), "search", "affine", "dialect", "--format", "json")
    assert result.code == 0, result.err
    hits = json.loads(result.out)
    assert [(h["zotero_key"], h["where"]) for h in hits] == [("MLRAAAAA", "fulltext")]
    assert "affine dialect" in hits[0]["snippet"]
    for query, key in (("muller", "MLRAAAAA"), ("gomez", "MLRAAAAA"), ("emiralioglu", "MLRAAAAA")):
        found = json.loads(run("--config", str(config), "search", query, "--format", "json").out)
        assert [h["zotero_key"] for h in found] == [key], query
        assert found[0]["snippet"]
    hits = json.loads(run("--config", str(config), "search", "zanzibar", "--format", "json").out)
    assert hits[0]["zotero_key"] == "TRMSAAAA"
    assert "<script>alert(1)</script> **bold** [x](y) zanzibar tiles" in hits[0]["snippet"]
    text = run("--config", str(config), "search", "zanzibar").out
    assert "<script>alert(1)</script>" in text and "\x00" not in text
    # turned off, the text stays in the store but is no longer searched
    config.write_text(config.read_text().replace("enabled: true", "enabled: false"), encoding="utf-8")
    assert json.loads(run("--config", str(config), "search", "zanzibar", "--format", "json").out) == []


# -- zotero.sqlite ----------------------------------------------------------------------------------------

SQLITE_FIXTURES = Path(__file__).resolve().parent.parent.parent / "shared" / "fixtures" / "zotero-sqlite"
VOICECODER = SQLITE_FIXTURES / "voicecoder-6.0.27.sqlite"
needs_fixture = pytest.mark.skipif(not VOICECODER.exists(), reason=f"{VOICECODER} is not present")


def _text_keys(database: Path) -> list[str]:
    db = sqlite3.connect(f"file:{database}?immutable=1", uri=True)
    try:
        return sorted(
            key for (key,) in db.execute("SELECT i.key FROM fulltextItems f JOIN items i USING (itemID)")
        )
    finally:
        db.close()


@needs_fixture
def test_real_databases_rows_without_cache_files_count_as_without_text(tmp_path: Path) -> None:
    from zotsync.sources.local import LocalSource

    for database in sorted(SQLITE_FIXTURES.glob("*.sqlite")):
        data = tmp_path / database.stem
        data.mkdir()
        copy = data / "zotero.sqlite"
        copy.write_bytes(database.read_bytes())
        with Store(tmp_path / f"{database.stem}.zotsync") as store:
            report = pull(LocalSource(copy), store, fulltext=True)
            counts = store.fulltext_counts()
            attachments = store.attachment_keys()
        listed = [key for key in _text_keys(copy) if key in attachments]
        assert counts.with_text == 0, database.name
        assert counts.without_text == len(listed), database.name
        # none has a cache file beside it: each listed text is read as one without words
        assert report.texts is None or (report.texts.fetched, report.texts.without_text) == (0, len(listed))
        assert copy.read_bytes() == database.read_bytes()


@needs_fixture
@pytest.mark.skipif(not hasattr(__import__("os"), "mkfifo"), reason="no named pipes here")
def test_cache_files_are_read_as_text_and_only_when_regular_and_bounded(tmp_path: Path) -> None:
    import os

    from zotsync.sources.local import MAX_CACHE, LocalSource

    data = tmp_path / "Zotero"
    data.mkdir()
    database = data / "zotero.sqlite"
    database.write_bytes(VOICECODER.read_bytes())
    before = database.read_bytes()
    with Store(tmp_path / "probe.sqlite") as store:
        pull(LocalSource(database), store)
        attachments = store.attachment_keys()
    keys = [key for key in _text_keys(database) if key in attachments]
    plain, symlink, fifo, invalid, huge, nul = keys[:6]

    def cache(key: str) -> Path:
        folder = data / "storage" / key
        folder.mkdir(parents=True, exist_ok=True)
        return folder / ".zotero-ft-cache"

    cache(plain).write_text("Voice coding with <b>HTML</b> and # Markdown héllo", encoding="utf-8")
    secret = tmp_path / "secret.txt"
    secret.write_text("outside words", encoding="utf-8")
    cache(symlink).symlink_to(secret)
    os.mkfifo(cache(fifo))
    cache(invalid).write_bytes(b"caf\xe9 broken \xff\xfe bytes")
    with cache(huge).open("wb") as handle:
        handle.write(b"zyxwordbegin " + b"filler " * (50 * 2**20 // 7))
    cache(nul).write_bytes(b"nul\x00separated\x00words")
    store_path = tmp_path / "store.sqlite"
    with Store(store_path) as store:
        pull(LocalSource(database), store, fulltext=True)
        assert store.fulltext_of(plain) == "Voice coding with <b>HTML</b> and # Markdown héllo"
        assert store.fulltext_of(symlink) is None and store.fulltext_of(fifo) is None
        assert store.fulltext_of(invalid) == "caf\ufffd broken \ufffd\ufffd bytes"
        assert len(store.fulltext_of(huge) or "") == MAX_CACHE
        assert store.fulltext_of(nul) == "nul separated words"
        assert [hit.attachment for hit in store.fulltext_search(["hello"], 10)] == [plain]
        assert store.fulltext_search(["outside"], 10) == []
        assert [hit.attachment for hit in store.fulltext_search(["zyxwordbegin"], 10)] == [huge]
    assert database.read_bytes() == before
    # an edited cache file is read again, alone; a removed one leaves no words behind
    cache(plain).write_text("Voice coding rewritten entirely", encoding="utf-8")
    cache(huge).unlink()
    with Store(store_path) as store:
        report = pull(LocalSource(database), store, fulltext=True)
        assert report.texts is not None and (report.texts.fetched, report.texts.without_text) == (1, 1)
        assert report.summary().endswith("; full text: 1 fetched, 1 without text, 0 removed")
        assert store.fulltext_search(["hello"], 10) == []
        assert store.fulltext_search(["zyxwordbegin"], 10) == []
        assert [hit.attachment for hit in store.fulltext_search(["rewritten"], 10)] == [plain]


# -- ranking and accents, in the library's own fields ------------------------------------------------------


def test_a_title_match_ranks_first_and_accents_fold_as_the_page_folds(
    zotero_api, tmp_path: Path, run
) -> None:
    library = FakeLibrary("user", "1234567", "tester")
    tagged = [
        library.add_item(f"Kernel study {n}", tags=[{"tag": "张量编译"}], abstractNote="张量 everywhere")
        for n in range(30)
    ]
    titled = library.add_item("张量 programs", creators=[])
    noted = library.add_item("Plain title")
    library.add_item("n", "note", parent=noted, note="<p>张量 in a note</p>")
    authors = [
        {"creatorType": "author", "firstName": "Ana", "lastName": name}
        for name in ("Müller", "Gómez", "Emiralioğlu")
    ]
    accented = library.add_item("Compilers by hand", creators=authors)
    server = zotero_api(library)
    config = write_web_config(tmp_path, server.url)
    assert run("-q", "--config", str(config), "pull").code == 0
    hits = json.loads(run("--config", str(config), "search", "张量", "--format", "json", "--limit", "50").out)
    keys = [h["zotero_key"] for h in hits]
    assert keys[0] == titled  # the title first, then the notes (and curated whys), then tags and abstracts
    assert keys.index(noted) < min(keys.index(key) for key in tagged)
    assert set(tagged) <= set(keys)
    for query in ("muller", "gomez", "emiralioglu", "Müller"):
        found = json.loads(run("--config", str(config), "search", query, "--format", "json").out)
        assert [(h["zotero_key"], h["where"]) for h in found] == [(accented, "authors")], query
        assert "Müller; Ana Gómez; Ana Emiralioğlu" in found[0]["snippet"]  # shown as Zotero has it


# -- reading it back: the Python API, MCP's get_fulltext, status; the local API ----------------------------


def test_the_text_comes_back_through_the_python_api_mcp_and_status(zotero_api, tmp_path: Path, run) -> None:
    import zotsync
    from zotsync.app.ask import AskError, ReadingList

    server = zotero_api(_library_with_text())
    config_path = _project(server, tmp_path)
    assert run("-q", "--config", str(config_path), "sync").code == 0
    config = zotsync.load_config(config_path)
    whole = zotsync.fulltext(config, "MLRAAAAA")
    assert (whole.text, whole.attachments, whole.truncated) == (MLIR_TEXT, ["MLRPAAAA"], False)
    cut = zotsync.fulltext(config, "MLRAAAAA", query="affine", max_chars=20)
    assert cut.truncated and cut.text == MLIR_TEXT[:20]  # the passage around `affine` holds it all
    with pytest.raises(zotsync.ConfigError, match="TRMSAAAA"):
        zotsync.fulltext(config, "TRMSAAAA")
    answer = ReadingList(config).get_fulltext("MLRAAAAA", query="dialect", max_chars=4000)
    assert answer.value == {"zotero_key": "MLRAAAAA", "attachments": ["MLRPAAAA"], "text": MLIR_TEXT}
    with pytest.raises(AskError, match="no PDF text"):
        ReadingList(config).get_fulltext("TRMSAAAA")
    with pytest.raises(AskError, match="no passage of the PDF text of 'MLRAAAAA' holds the words"):
        ReadingList(config).get_fulltext("MLRAAAAA", query="zucchiniflux")
    report = json.loads(run("--config", str(config_path), "status", "--format", "json").out)
    assert report["fulltext"] == {"with_text": 1, "without_text": 0, "partial": 1, "chars": len(MLIR_TEXT)}
    assert (
        "full text: 1 attachments with text (1 partly indexed)"
        in run("--config", str(config_path), "status").out
    )


def test_the_desktop_local_api_serves_the_text_too(zotero_api, tmp_path: Path) -> None:
    from zotsync.config import SourceConfig

    server = zotero_api(_library_with_text())
    server.local = True
    config = SourceConfig(type="local", base_url=server.url)
    with WebSource(config) as source, Store(tmp_path / "store.sqlite") as store:
        report = pull(source, store, fulltext=True)
        assert report.texts is not None and report.texts.fetched == 1
        assert store.fulltext_of("MLRPAAAA") == MLIR_TEXT
    assert any(path.endswith("/api/users/0/fulltext") for path in server.paths())
    # Zotero indexes PDFs without moving the local API's version: every pull lists the texts again,
    # and fetches only what changed
    server.library.fulltext["MLRPAAAA"] = (99, json.dumps({"content": "re-indexed words"}).encode())
    server.reset()
    with WebSource(config) as source, Store(tmp_path / "store.sqlite") as store:
        report = pull(source, store, fulltext=True)
        assert report.texts is not None and report.texts.fetched == 1
        assert store.fulltext_of("MLRPAAAA") == "re-indexed words"


def test_a_text_fetch_honours_retry_after(zotero_api, tmp_path: Path, fake_time) -> None:
    from zotero_server import Fault

    server = zotero_api(_library_with_text())
    store_path = tmp_path / "store.sqlite"
    with WebSource(config_for(server)) as source, Store(store_path) as store:
        pull(source, store)  # the items alone: the next pull asks 304, then for the texts
    server.reset()
    server.inject(None, None, Fault.status_code(429, retry_after=3))
    report, _ = _pull(server, store_path)
    assert report.texts is not None and report.texts.fetched == 1
    fetches = [r for r in server.requests if r.path.endswith("/items/MLRPAAAA/fulltext")]
    assert [r.status for r in fetches] == [429, 200]
    assert fetches[1].at - fetches[0].at >= 3


def test_a_snippet_shows_the_word_the_index_matched() -> None:
    from zotsync import searchtext
    from zotsync.app.fulltext import snippet

    text = "Tiles everywhere. " + "padding " * 40 + "Here one tile stands. " + "more " * 40 + "Gödel ends."
    shown = snippet(text, searchtext.parse_query("tile"))
    assert "Here one tile stands." in shown and shown.startswith("…") and shown.endswith("…")
    assert "Gödel ends." in snippet(text, searchtext.parse_query("godel"))
