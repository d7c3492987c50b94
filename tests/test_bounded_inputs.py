"""Every file zotsync reads is a regular file within a bound, so every run ends: a named pipe, a device
(`/dev/zero`, `/dev/urandom`), a loop of symbolic links or a file of gigabytes given as the config, the
catalogue, the venue table, the snapshot or beside a zotero.sqlite is one line, never a hang."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, SEEDS
from factories import small_library, write_web_config
from hypothesis import given
from hypothesis import strategies as st
from zotero_sqlite import build, load_snapshot

from zotsync.inputs import MAX_SNAPSHOT, MAX_YAML
from zotsync.model import may_hold_lone_surrogates, without_lone_surrogates

posix_only = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes and /dev are POSIX")

INPUTS = ("snapshot", "catalogue", "venue table", "config file", "Zotero's journal")


def folder_with(tmp_path: Path, **paths: Path) -> Path:
    """A reading list whose config names `paths` (snapshot, catalog, venues) or the seeds; the config."""
    snapshot = paths.get("snapshot", SEEDS / "zotero-library.json")
    venues = paths.get("venues")
    config = tmp_path / "zotsync.yaml"
    config.write_text(
        f'source:\n  type: {paths.get("kind", "snapshot")}\n  path: "{snapshot}"\n'
        f'catalog: "{paths.get("catalog", SEEDS / "catalog.yaml")}"\n'
        f'store: "{tmp_path / "store.sqlite"}"\nexports:\n  dir: "{tmp_path / "exports"}"\n'
        + (f'reconcile:\n  abbreviate_venues: true\n  venues: "{venues}"\n' if venues else ""),
        encoding="utf-8",
    )
    return config


def zotsync(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The real command in a process of its own, which a hang cannot take the suite down with: killed
    after a minute (a failure, not a measure), and kept to 2 GB of memory (reading /dev/zero whole
    would take the machine's)."""

    def small() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (2 * 2**30, 2 * 2**30))

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "zotsync", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        env=env,
        preexec_fn=small,
    )


def one_line(stderr: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


def place(kind: str, where: Path) -> Path:
    """`where` made a named pipe, or the device `kind` names."""
    if kind == "pipe":
        os.mkfifo(where)
        return where
    return Path(kind)


@pytest.mark.slow
@posix_only
@pytest.mark.parametrize("kind", ["pipe", "/dev/zero", "/dev/urandom"])
@pytest.mark.parametrize("what", INPUTS)
def test_an_input_that_is_not_a_regular_file_is_one_line_and_the_run_ends(
    tmp_path: Path, what: str, kind: str
) -> None:
    args: list[str]
    if what == "Zotero's journal":
        database = tmp_path / "zotero" / "zotero.sqlite"
        database.parent.mkdir()
        build(database, load_snapshot(SEEDS / "zotero-library.json"))
        journal = database.with_name("zotero.sqlite-journal")
        if kind == "pipe":
            os.mkfifo(journal)
        else:
            journal.symlink_to(kind)
        args = ["--config", str(folder_with(tmp_path, snapshot=database.parent, kind="local")), "sync"]
        shown = journal
    elif what == "config file":
        shown = place(kind, tmp_path / "zotsync.yaml")
        args = ["--config", str(shown), "sync"]
    else:
        key = {"snapshot": "snapshot", "catalogue": "catalog", "venue table": "venues"}[what]
        shown = place(kind, tmp_path / f"{key}.input")
        args = ["--config", str(folder_with(tmp_path, **{key: shown})), "sync"]
    result = zotsync("-q", *args, cwd=tmp_path)
    device = "a pipe" if kind == "pipe" else "a device"
    assert f"cannot read {what} {shown}: it is {device}, not a regular file" in one_line(result.stderr)
    assert result.returncode == (1 if what in ("snapshot", "Zotero's journal") else 2)
    assert not (tmp_path / "exports").exists()


def test_a_config_from_a_pipe_is_refused_saying_why(tmp_path: Path, run) -> None:
    """`--config <(…)`: the shell passes /dev/fd/N, a pipe. Its relative paths would start from /dev/fd,
    where no store can be made (before, that read "another zotsync run holds the lock")."""
    if not Path("/dev/fd").is_dir():
        pytest.skip("no /dev/fd on this system")
    config = (
        folder_with(tmp_path).read_text(encoding="utf-8").replace(f'"{tmp_path / "store.sqlite"}"', "x.db")
    )
    read_end, write_end = os.pipe()
    os.write(write_end, config.encode())
    os.close(write_end)
    try:
        result = run("-q", "--config", f"/dev/fd/{read_end}", "sync")
    finally:
        os.close(read_end)
    assert result.code == 2
    assert one_line(result.err) == (
        f"zotsync: error: cannot read config file /dev/fd/{read_end}: it is a pipe, not a regular file "
        "(zotsync reads its config from a file: the paths in it start from its folder)"
    )


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs Linux's /proc")
def test_a_store_where_no_lock_file_can_be_made_says_so_not_that_another_run_holds_it(
    tmp_path: Path, run
) -> None:
    config = folder_with(tmp_path)
    text = config.read_text(encoding="utf-8").replace(str(tmp_path / "store.sqlite"), "/proc/self/fd/x.db")
    config.write_text(text, encoding="utf-8")
    result = run("-q", "--config", str(config), "sync")
    assert result.code == 1
    line = one_line(result.err)
    assert "another zotsync run" not in line
    assert line.startswith("zotsync: error: cannot create the lock file /proc/")
    why = "its folder takes no new files; set `store:` in the config to a path in a folder of your own"
    assert line.endswith(f"x.db.lock: {why}")


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="symbolic links")
@pytest.mark.parametrize(
    ("what", "key", "code"),
    [("snapshot", "snapshot", 1), ("catalogue", "catalog", 2), ("venue table", "venues", 2)],
)
def test_a_loop_of_symbolic_links_is_one_line(tmp_path: Path, run, what: str, key: str, code: int) -> None:
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    result = run("-q", "--config", str(folder_with(tmp_path, **{key: loop})), "sync")
    assert result.code == code
    assert (
        one_line(result.err) == f"zotsync: error: cannot read {what} {loop}: it is a loop of symbolic links"
    )


def test_a_catalogue_past_the_yaml_bound_is_refused_unparsed(tmp_path: Path, run) -> None:
    catalogue = tmp_path / "catalog.yaml"
    shutil.copy(SEEDS / "catalog.yaml", catalogue)
    with catalogue.open("ab") as stream:
        stream.write(b"#" * (MAX_YAML - catalogue.stat().st_size) + b"\n")  # a comment: valid YAML
    result = run("-q", "--config", str(folder_with(tmp_path, catalog=catalogue)), "sync")
    assert result.code == 2
    assert one_line(result.err) == (
        f"zotsync: error: cannot read catalogue {catalogue}: it is larger than 16 MB, zotsync's bound for "
        "this kind of file (is it the right one?)"
    )


def test_a_snapshot_past_its_bound_is_refused_unread(tmp_path: Path, run) -> None:
    snapshot = tmp_path / "library.json"
    with snapshot.open("wb") as stream:
        stream.truncate(MAX_SNAPSHOT + 1)  # sparse where the file system can: no gigabyte written
    result = run("-q", "--config", str(folder_with(tmp_path, snapshot=snapshot)), "sync")
    assert result.code == 1
    assert one_line(result.err) == (
        f"zotsync: error: cannot read snapshot {snapshot}: it is larger than 1024 MB, zotsync's bound for "
        "this kind of file (is it the right one?)"
    )


@pytest.mark.slow
@posix_only
def test_a_log_file_that_is_a_pipe_is_refused_not_waited_on(tmp_path: Path) -> None:
    log = tmp_path / "zotsync.log"
    os.mkfifo(log)
    result = zotsync(
        "-q", "--log-file", str(log), "--config", str(folder_with(tmp_path)), "sync", cwd=tmp_path
    )
    assert result.returncode == 1
    assert one_line(result.stderr) == (
        f"zotsync: error: cannot open the log file {log}: it is not a regular file (a pipe or a socket could "
        "stall a run that writes to it)"
    )


# -- what a source holds that no number type can: one line naming it ---------------------------------------


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("[" * 200_000 + "]" * 200_000, "snapshot is nested too deeply to be a Zotero library"),
        ('[\n{"key": "AS5BSQEA",\n "version": ' + "9" * 5000 + "}]", "snapshot holds a number of more than"),
    ],
    ids=["nested 200,000 deep", "a 5,000-digit number"],
)
def test_a_snapshot_python_cannot_read_is_one_line_naming_it(
    tmp_path: Path, run, text: str, why: str
) -> None:
    snapshot = tmp_path / "library.json"
    snapshot.write_text(text, encoding="utf-8")
    result = run("-q", "--config", str(folder_with(tmp_path, snapshot=snapshot)), "sync")
    assert result.code == 1
    line = one_line(result.err)
    assert line.startswith(f"zotsync: error: {snapshot}")
    assert why in line and "unexpected" not in line
    if "digits" in why:
        assert line.startswith(f"zotsync: error: {snapshot}:3: ")  # the number's line


def damaged_database(tmp_path: Path, statement: str) -> Path:
    """A data folder whose zotero.sqlite (the demo library) had `statement` run on it."""
    import sqlite3

    database = tmp_path / "zotero" / "zotero.sqlite"
    database.parent.mkdir()
    build(database, load_snapshot(SEEDS / "zotero-library.json"))
    with sqlite3.connect(database) as db:
        db.execute(statement)
    db.close()
    return database.parent


@pytest.mark.parametrize(
    ("statement", "line"),
    [
        ("UPDATE items SET version = 'abc' WHERE key = 'AS5BSQEA'", "item AS5BSQEA has version 'abc'"),
        ("UPDATE items SET version = 1e30 WHERE key = 'AS5BSQEA'", "item AS5BSQEA has version 1e+30"),
        ("UPDATE items SET version = 2.5 WHERE key = 'AS5BSQEA'", "item AS5BSQEA has version 2.5"),
        (
            "UPDATE collections SET version = 'x', synced = 1"
            " WHERE collectionID = (SELECT min(collectionID) FROM collections)",
            "collection {key} has version 'x'",
        ),
        (
            "UPDATE itemTags SET type = 'auto' WHERE rowid = (SELECT min(rowid) FROM itemTags)",
            "item {key} has the tag",
        ),
    ],
    ids=["text version", "1e30", "a fraction", "collection version", "text tag type"],
)
def test_a_damaged_zotero_database_is_one_line_naming_the_object(
    tmp_path: Path, run, statement: str, line: str
) -> None:
    import sqlite3

    folder = damaged_database(tmp_path, statement)
    with sqlite3.connect(folder / "zotero.sqlite") as db:
        collection = db.execute(
            "SELECT key FROM collections WHERE collectionID = (SELECT min(collectionID) FROM collections)"
        ).fetchone()[0]
        tagged = db.execute(
            "SELECT key FROM items JOIN itemTags USING (itemID) ORDER BY itemTags.rowid LIMIT 1"
        ).fetchone()[0]
    db.close()
    expected = line.format(key=collection if "collection" in line else tagged)
    result = run("-q", "--config", str(folder_with(tmp_path, snapshot=folder, kind="local")), "sync")
    assert result.code == 1
    error = one_line(result.err)
    assert error.startswith(f"zotsync: error: {folder / 'zotero.sqlite'}: {expected}")
    assert "unexpected" not in error


def test_an_item_type_id_that_is_no_number_skips_the_item_with_a_warning(tmp_path: Path, run) -> None:
    folder = damaged_database(tmp_path, "UPDATE items SET itemTypeID = 'x' WHERE key = 'AS5BSQEA'")
    result = run("-q", "--config", str(folder_with(tmp_path, snapshot=folder, kind="local")), "sync")
    assert result.code == 0
    assert one_line(result.err) == (
        f"zotsync: {folder / 'zotero.sqlite'}: item AS5BSQEA has an unknown item type id 'x'; skipped"
    )


# -- keys: what a source takes in, `zotsync snapshot` writes and a snapshot reads back ------------------

NOT_A_KEY = "not a Zotero key (8 characters: digits 2–9 and capitals but O)"


@pytest.mark.parametrize("key", ["abcd2345", "ABCD234", "ABCD23456", "ABCD2O45", "ABCD1234"])
def test_a_snapshot_item_whose_key_is_not_a_zotero_key_is_refused(tmp_path: Path, run, key: str) -> None:
    snapshot = tmp_path / "library.json"
    objects = load_snapshot(SEEDS / "zotero-library.json")
    objects.append({"key": key, "version": 1, "data": {"key": key, "itemType": "book", "title": "Odd"}})
    snapshot.write_text(json.dumps(objects), encoding="utf-8")
    result = run("-q", "--config", str(folder_with(tmp_path, snapshot=snapshot)), "sync")
    assert result.code == 1
    assert one_line(result.err) == f"zotsync: error: {snapshot}: item {key}: 'key' is missing or {NOT_A_KEY}"


def test_a_web_item_whose_key_is_not_a_zotero_key_is_refused(tmp_path: Path, run, zotero_api) -> None:
    library = small_library()
    library.add_item("Lower case", key="lower234")
    server = zotero_api(library)
    result = run("-q", "--config", str(write_web_config(tmp_path, server.url)), "sync")
    assert result.code == 1
    assert (
        one_line(result.err) == f"zotsync: error: Zotero API: item lower234: 'key' is missing or {NOT_A_KEY}"
    )


@pytest.mark.parametrize("kind", ["item", "collection"])
def test_a_zotero_database_key_a_snapshot_could_not_hold_is_refused_at_the_source(
    tmp_path: Path, run, kind: str
) -> None:
    """Before, the local source took any key in: `zotsync snapshot` then wrote a file that zotsync
    refused to read back."""
    table = "items" if kind == "item" else "collections"
    id_column = "itemID" if kind == "item" else "collectionID"
    folder = damaged_database(
        tmp_path,
        f"UPDATE {table} SET key = 'PAPER-1' WHERE {id_column} = (SELECT min({id_column}) FROM {table})",
    )
    result = run("-q", "--config", str(folder_with(tmp_path, snapshot=folder, kind="local")), "sync")
    assert result.code == 1
    assert one_line(result.err) == (
        f"zotsync: error: {folder / 'zotero.sqlite'}: the {kind} key 'PAPER-1' is {NOT_A_KEY}"
    )
    assert not (tmp_path / "store.sqlite").exists()


def test_snapshot_writes_no_file_it_would_refuse_to_read_from_an_older_store(tmp_path: Path, run) -> None:
    """A store an older zotsync filled may hold a key its sources took in then (any letters and digits)."""
    import sqlite3

    config = folder_with(tmp_path)
    assert run("-q", "--config", str(config), "pull").code == 0
    with sqlite3.connect(tmp_path / "store.sqlite") as db:
        db.execute("UPDATE items SET key = 'lower234' WHERE key = 'AS5BSQEA'")
    db.close()
    frozen = tmp_path / "frozen.json"
    result = run("-q", "--config", str(config), "snapshot", "--output", str(frozen))
    assert result.code == 1
    assert one_line(result.err) == (
        f"zotsync: error: the store holds the item key 'lower234', which is {NOT_A_KEY}: a snapshot of it "
        "could not be read back; pull the library again into a new store"
    )
    assert not frozen.exists()


# A key with a line break after it: `$` matches before a final newline, so `^…$` took "ABCD2345\n",
# which gave `notes/ABCD2345\n.md`, a broken link and a broken anchor.
def test_a_snapshot_key_with_a_trailing_newline_is_refused(tmp_path: Path, run) -> None:
    snapshot = tmp_path / "library.json"
    objects = load_snapshot(SEEDS / "zotero-library.json")
    objects.append({"key": "ABCD2345\n", "version": 1, "data": {"itemType": "book", "title": "Odd"}})
    snapshot.write_text(json.dumps(objects), encoding="utf-8")
    result = run("-q", "--config", str(folder_with(tmp_path, snapshot=snapshot)), "sync")
    assert result.code == 1
    assert one_line(result.err) == (
        f"zotsync: error: {snapshot}: item (without a valid key): 'key' is missing or {NOT_A_KEY}"
    )
    assert not (tmp_path / "exports").exists()


@pytest.mark.parametrize("kind", ["item", "collection"])
def test_a_zotero_database_key_with_a_trailing_newline_is_refused(tmp_path: Path, run, kind: str) -> None:
    table = "items" if kind == "item" else "collections"
    id_column = "itemID" if kind == "item" else "collectionID"
    folder = damaged_database(
        tmp_path,
        f"UPDATE {table} SET key = 'ABCD2345' || char(10) "
        f"WHERE {id_column} = (SELECT min({id_column}) FROM {table})",
    )
    result = run("-q", "--config", str(folder_with(tmp_path, snapshot=folder, kind="local")), "sync")
    assert result.code == 1
    assert one_line(result.err) == (
        f"zotsync: error: {folder / 'zotero.sqlite'}: the {kind} key 'ABCD2345\\n' is {NOT_A_KEY}"
    )


def test_snapshot_refuses_a_stored_key_with_a_trailing_newline(tmp_path: Path, run) -> None:
    import sqlite3

    config = folder_with(tmp_path)
    assert run("-q", "--config", str(config), "pull").code == 0
    with sqlite3.connect(tmp_path / "store.sqlite") as db:
        db.execute("UPDATE items SET key = 'AS5BSQEA' || char(10) WHERE key = 'AS5BSQEA'")
    db.close()
    frozen = tmp_path / "frozen.json"
    result = run("-q", "--config", str(config), "snapshot", "--output", str(frozen))
    assert result.code == 1
    assert "the store holds the item key 'AS5BSQEA\\n'" in one_line(result.err)
    assert not frozen.exists()


# -- half an emoji ----------------------------------------------------------------------------------------

HALF = "Half \ud83d an emoji"  # what JSON's "Half \ud83d an emoji" decodes to: no encoder can write it
WARNING = (
    "zotsync: 1 object holds text that is not valid Unicode (half of an emoji, a lone UTF-16 surrogate), "
    "kept with U+FFFD (\ufffd) in its place: {key}"
)


def test_half_an_emoji_in_a_snapshot_is_replaced_and_named_once(tmp_path: Path, run) -> None:
    objects = load_snapshot(SEEDS / "zotero-library.json")
    target = next(o for o in objects if o["data"].get("title") and not o["data"].get("parentItem"))
    target["data"]["title"] = HALF
    snapshot = tmp_path / "library.json"
    snapshot.write_text(json.dumps(objects), encoding="utf-8")  # ASCII: the half is written "\ud83d"
    config = folder_with(tmp_path, snapshot=snapshot)
    result = run("-q", "--config", str(config), "sync")
    assert (result.code, result.err) == (0, WARNING.format(key=target["key"]) + "\n")
    assert "Half \ufffd an emoji" in (tmp_path / "exports" / "catalog.md").read_text(encoding="utf-8")
    assert run("-q", "--config", str(config), "sync").err == ""  # the same file is not read again


def test_half_an_emoji_from_the_web_api_is_replaced_and_named_once(tmp_path: Path, run, zotero_api) -> None:
    library = small_library()
    key = library.add_item(HALF)
    server = zotero_api(library)
    config = write_web_config(tmp_path, server.url)
    result = run("-q", "--config", str(config), "sync")
    assert (result.code, result.err) == (0, WARNING.format(key=key) + "\n")
    assert run("-q", "--config", str(config), "list", "--search", "emoji").out.startswith(f"{key} ")
    assert "Half \ufffd an emoji" in run("--config", str(config), "list", "--format", "json").out
    assert run("-q", "--config", str(config), "sync").err == ""  # unchanged: nothing read, nothing said


def is_half(c: str) -> bool:
    return 0xD800 <= ord(c) <= 0xDFFF


@given(st.lists(st.text(st.characters(exclude_categories=[])), max_size=4), st.booleans())
def test_any_text_comes_out_writable_and_text_without_halves_unchanged(
    texts: list[str], escaped: bool
) -> None:
    """Whatever a server or a file sends — halves escaped (`\\ud83d`) or as their raw UTF-8 bytes — the
    cheap test on the raw text never misses one, and what comes out can be written."""
    objects = [
        {"key": "ABCD2345", "data": {"key": "ABCD2345", "title": t, "tags": [{"tag": t}]}} for t in texts
    ]
    raw = (
        json.dumps(objects)
        if escaped
        else json.dumps(objects, ensure_ascii=False).encode("utf-8", "surrogatepass")
    )
    sent = [o["data"]["title"] for o in json.loads(raw)]  # a pair of halves decodes to its one character
    halves = [t for t in sent if any(map(is_half, t))]
    assert may_hold_lone_surrogates(raw) or not halves
    clean, repaired = without_lone_surrogates(json.loads(raw))
    json.dumps(clean, ensure_ascii=False).encode("utf-8")  # raises on any half left
    assert repaired == ["ABCD2345"] * len(halves)
    assert [o["data"]["title"] for o in clean] == [
        "".join("\ufffd" if is_half(c) else c for c in t) for t in sent
    ]


# -- a server that repeats itself ---------------------------------------------------------------------------


def test_a_page_that_repeats_an_item_key_is_said_at_once(tmp_path: Path, run, zotero_api) -> None:
    """A faulty mirror sending one item twice on a page: before, 4 reads and 7 s later, "the library kept
    changing"; now one line naming the key after the first read, since reading again cannot mend it."""
    library = small_library()
    server = zotero_api(library)
    server.repeat_key = True
    result = run("-q", "--config", str(write_web_config(tmp_path, server.url)), "sync")
    assert result.code == 1
    line = one_line(result.err)
    named = line.removeprefix("zotsync: error: Zotero API: one page of a listing holds the item ")[:8]
    assert named in library.items
    assert line == (
        f"zotsync: error: Zotero API: one page of a listing holds the item {named} twice; the server is not "
        "serving its library correctly (a faulty mirror?), and reading again would not mend it"
    )
    item_pages = [
        r for r in server.requests if r.path.endswith("/items") and r.params.get("format") == "json"
    ]
    assert len(item_pages) == 1  # read once, not started over
    assert not (tmp_path / "store.sqlite").exists()
