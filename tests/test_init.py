"""`zotsync init`: a reading list of one's own from nothing — for each source, never over a file — and
`init --demo`, which writes the bundled demo that reproduces the seed page anywhere."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
import zotero_server
from conftest import ZOTERO_API_KEY

from zotsync.catalogue import load_catalogue
from zotsync.config import load_config

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOT = ROOT / "seeds" / "zotero-library.json"
GOLDEN = ROOT / "tests" / "golden"


@pytest.fixture(autouse=True)
def no_outside_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Discovery must find only what a test writes: no $ZOTSYNC_CONFIG, an empty user config folder."""
    monkeypatch.delenv("ZOTSYNC_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    for variable in ("ZOTERO_API_KEY", "ZOTERO_LIBRARY_ID", "ZOTERO_LIBRARY_TYPE", "ZOTERO_API_BASE"):
        monkeypatch.delenv(variable, raising=False)


def test_init_web_writes_a_commented_config_an_empty_catalogue_and_exports(tmp_path: Path, run) -> None:
    folder = tmp_path / "list"
    result = run("init", str(folder), "--library-id", "9876543")
    assert result.code == 0, result.err
    assert sorted(p.name for p in folder.iterdir()) == ["catalog.yaml", "exports", "zotsync.yaml"]
    config_text = (folder / "zotsync.yaml").read_text(encoding="utf-8")
    assert config_text.startswith("# ") and "ZOTERO_API_KEY" in config_text
    config = load_config(folder / "zotsync.yaml")
    assert (config.source.type, config.source.library_type, config.source.library_id) == (
        "web",
        "user",
        "9876543",
    )
    assert config.catalog == (folder / "catalog.yaml").resolve()
    assert config.exports.dir == (folder / "exports").resolve()
    assert config.exports.language == "en"
    catalogue = load_catalogue(folder / "catalog.yaml")
    assert catalogue.categories == () and catalogue.title == "My reading list"
    assert "#  - name: " in (folder / "catalog.yaml").read_text(encoding="utf-8")  # the commented example
    steps = result.out.splitlines()
    assert steps[0] == f"next steps, in {folder}:"
    assert [s.strip()[:2] for s in steps[1:]] == ["1.", "2.", "3."]
    assert "ZOTERO_API_KEY" in steps[1] and "zotsync sync" in steps[2] and "zotsync adopt" in steps[3]
    assert f"wrote {folder / 'zotsync.yaml'}\n" in result.err


def test_init_web_without_an_id_says_where_to_find_it(tmp_path: Path, run, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = run("init")
    assert result.code == 0 and result.out.startswith("next steps:\n")
    assert "set source.library_id" in result.out
    sync = run("sync")  # discovery finds ./zotsync.yaml; the empty id is the one thing left to fill in
    assert sync.code == 2 and "needs a numeric 'source.library_id'" in sync.err


def test_init_local_and_snapshot_point_at_their_path(tmp_path: Path, run, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    started = run("init", "local", "--source", "local", "--path", "Zotero data")
    assert started.code == 0  # written anyway (it may be mounted later), and said
    assert (
        f"{tmp_path / 'Zotero data'} does not exist: the first sync fails until source.path in zotsync.yaml "
        "names Zotero's data folder or its zotero.sqlite\n"
    ) in started.err
    local = load_config(tmp_path / "local" / "zotsync.yaml")
    assert (local.source.type, local.source.path) == ("local", tmp_path / "Zotero data")
    group = run("init", "group", "--source", "local", "--library-type", "group", "--library-id", "42")
    assert group.code == 0
    grouped = load_config(tmp_path / "group" / "zotsync.yaml")
    assert (grouped.source.library_type, grouped.source.library_id) == ("group", "42")
    assert grouped.source.path == Path.home() / "Zotero"
    snapped = run("init", "snap", "--source", "snapshot", "--path", str(SNAPSHOT))
    assert snapped.code == 0 and "does not exist" not in snapped.err
    snap = load_config(tmp_path / "snap" / "zotsync.yaml")
    assert (snap.source.type, snap.source.path) == ("snapshot", SNAPSHOT)
    assert "no key" in run("init", "snap2", "--source", "snapshot", "--path", "x.json").out


def test_init_snapshot_needs_a_path(tmp_path: Path, run) -> None:
    result = run("init", str(tmp_path / "x"), "--source", "snapshot")
    assert result.code == 2 and result.err.startswith("zotsync: error: --source snapshot needs --path")
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("existing", ["zotsync.yaml", "catalog.yaml"])
def test_init_never_writes_over_a_file_and_writes_nothing_then(tmp_path: Path, run, existing: str) -> None:
    (tmp_path / existing).write_text("mine\n", encoding="utf-8")
    result = run("init", str(tmp_path), "--library-id", "1")
    assert result.code == 2 and result.err.count("\n") == 1
    assert result.err.startswith(f"zotsync: error: {tmp_path / existing} already exists")
    assert [p.name for p in tmp_path.iterdir()] == [existing]
    assert (tmp_path / existing).read_text(encoding="utf-8") == "mine\n"
    demo = run("init", "--demo", str(tmp_path))
    assert demo.code == 2 and [p.name for p in tmp_path.iterdir()] == [existing]


def test_init_demo_reproduces_the_seed_page_anywhere(tmp_path: Path, run, monkeypatch) -> None:
    folder = tmp_path / "demo"
    assert run("init", "--demo", str(folder)).code == 0
    assert (folder / "zotero-library.json").read_bytes() == SNAPSHOT.read_bytes()
    monkeypatch.chdir(folder)
    assert run("-q", "sync").code == 0
    for name in ("catalog.md", "catalog.csv"):
        assert (folder / "exports" / name).read_bytes() == (GOLDEN / name).read_bytes(), name


def test_a_new_library_from_init_to_the_first_adoption_over_the_web(
    tmp_path: Path, run, zotero_api, monkeypatch
) -> None:
    """What the README's "Use your own library" walks through, against the fake Zotero server."""
    server = zotero_api(zotero_server.FakeLibrary.from_snapshot(SNAPSHOT))
    monkeypatch.setenv("ZOTERO_API_KEY", ZOTERO_API_KEY)
    monkeypatch.setenv("ZOTERO_API_BASE", server.url)
    monkeypatch.chdir(tmp_path)
    assert run("init", "--library-id", "9876543").code == 0
    first = run("sync")
    assert first.code == 0, first.err
    page = (tmp_path / "exports" / "catalog.md").read_text(encoding="utf-8")
    assert page.startswith("# My reading list\n")
    uncurated = json.loads(run("list", "--uncurated", "--format", "json").out)
    assert len(uncurated) == 64 and all(not item["curated"] for item in uncurated)
    # one row per collection an item is in (`Unfiled` when none)
    rows = sum(max(1, len(item["collections"])) for item in uncurated)
    assert page.count("\n| ⬜") + page.count("\n| ✅") == rows
    pick = uncurated[0]
    adopted = run("adopt", pick["zotero_key"], "--category", "To read", "--new-category")
    assert adopted.code == 0, adopted.err
    catalogue = load_catalogue(tmp_path / "catalog.yaml")
    assert [(c.name, [e.zotero_key for e in c.entries]) for c in catalogue.categories] == [
        ("To read", [pick["zotero_key"]])
    ]
    assert "#  - name: " in (tmp_path / "catalog.yaml").read_text(encoding="utf-8")  # comments kept
    assert run("-q", "sync").code == 0
    page = (tmp_path / "exports" / "catalog.md").read_text(encoding="utf-8")
    assert "\n## To read\n" in page and pick["title"] in page
    assert len(json.loads(run("list", "--uncurated", "--format", "json").out)) == 63
    assert ZOTERO_API_KEY not in page + first.err + adopted.err


@pytest.mark.parametrize("text", ["", "# nothing yet\n", "# no newline at the end"])
def test_adopt_works_on_an_empty_catalogue(project: Path, run, text: str) -> None:
    config = str(project / "config" / "zotsync.yaml")
    catalog = project / "seeds" / "catalog.yaml"
    catalog.write_text(text, encoding="utf-8")
    assert run("-q", "--config", config, "sync").code == 0
    key = json.loads(run("--config", config, "list", "--format", "json").out)[0]["zotero_key"]
    result = run("--config", config, "adopt", key, "--category", "First", "--new-category")
    assert result.code == 0, result.err
    new = catalog.read_text(encoding="utf-8")
    assert new.startswith(text) and yaml.safe_load(new)["categories"][0]["entries"][0]["zotero_key"] == key


@pytest.mark.slow
def test_the_fake_zotero_server_runs_standalone_for_a_walkthrough(tmp_path: Path) -> None:
    """`python tests/zotero_server.py --port 0 --key K`: what the README walkthrough was tried against."""
    import subprocess
    import sys
    import urllib.request

    server = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "zotero_server.py"), "--port", "0", "--key", ZOTERO_API_KEY],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        assert line.startswith("serving users/9876543 (library version 480) at http://127.0.0.1:"), line
        url = line.split(" at ", 1)[1].strip()
        request = urllib.request.Request(
            f"{url}/users/9876543/items/top?limit=1", headers={"Zotero-API-Key": ZOTERO_API_KEY}
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            assert answer.status == 200 and answer.headers["Last-Modified-Version"] == "480"
    finally:
        server.terminate()
        server.wait(10)


@pytest.mark.slow
def test_the_fake_zotero_server_on_a_taken_port_says_so_in_one_line() -> None:
    import socket
    import subprocess
    import sys

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, str(ROOT / "tests" / "zotero_server.py"), "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert (done.returncode, done.stdout) == (1, "")
    [line] = done.stderr.splitlines()  # one line, no traceback ("Address already in use" on Linux)
    assert line.startswith(f"zotero_server.py: cannot listen on 127.0.0.1:{port} (")
    assert line.endswith("); --port 0 takes any free port")


def test_the_catalogue_templates_example_stays_true_after_an_adoption(project: Path, run) -> None:
    """`adopt --new-category` replaces `categories: []`: the comment must not then speak of a `[]` above,
    and uncommenting the example must still add a category."""
    from zotsync.app.init import CATALOG_TEMPLATE

    config = str(project / "config" / "zotsync.yaml")
    catalog = project / "seeds" / "catalog.yaml"
    catalog.write_text(CATALOG_TEMPLATE, encoding="utf-8")
    assert run("-q", "--config", config, "sync").code == 0
    key = json.loads(run("--config", config, "list", "--format", "json").out)[0]["zotero_key"]
    assert run("--config", config, "adopt", key, "--category", "First", "--new-category").code == 0
    text = catalog.read_text(encoding="utf-8")
    assert "\ncategories: []" not in text and "the `[]` above" not in text
    example = "\n".join(line[1:] if line.startswith("#  ") else line for line in text.splitlines())
    assert [c["name"] for c in yaml.safe_load(example)["categories"]] == ["First", "Compilers"]


def test_the_config_init_writes_names_enrichment_commented_out_and_what_leaves_the_machine(
    tmp_path: Path, run
) -> None:
    assert run("init", str(tmp_path / "list"), "--source", "web", "--library-id", "1").code == 0
    text = (tmp_path / "list" / "zotsync.yaml").read_text(encoding="utf-8")
    assert "# enrich:\n#   enabled: true\n" in text
    assert "title and first author then leave this machine" in text
    # every commented section, uncommented, is a config that loads with each capability on
    uncommented = re.sub(r"^# ([a-z]+:)$", r"\1", text, flags=re.M)
    uncommented = re.sub(r"^#   ([a-z]+: )", r"  \1", uncommented, flags=re.M)
    (tmp_path / "list" / "zotsync.yaml").write_text(uncommented, encoding="utf-8")
    from zotsync.config import load_config

    config = load_config(tmp_path / "list" / "zotsync.yaml")
    assert config.enrich.enabled and config.enrich.citations
    assert config.fulltext.enabled and config.search.semantic
