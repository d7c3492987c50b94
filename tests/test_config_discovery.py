"""Which config file a command reads: --config, $ZOTSYNC_CONFIG, ./zotsync.yaml, ./config/zotsync.yaml,
the user's config folder — and one line naming them all when none is there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from zotsync.config import config_keys, find_config, user_config_path

ROOT = Path(__file__).resolve().parent.parent

SEEDS = Path(__file__).resolve().parent.parent / "seeds"


def demo_config(folder: Path, title: str) -> Path:
    """A config in `folder` whose catalogue has a page title of its own, so a run shows which one it read."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "catalog.yaml").write_text(f"title: {title}\ncategories: []\n", encoding="utf-8")
    path = folder / "zotsync.yaml"
    path.write_text(
        f"source: {{type: snapshot, path: {(SEEDS / 'zotero-library.json').as_posix()}}}\n"
        "catalog: catalog.yaml\n",
        encoding="utf-8",
    )
    return path


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Every place a config may be, none written yet; the working directory and user folder are temp."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("ZOTSYNC_CONFIG", raising=False)
    return {
        "option": tmp_path / "option",
        "env": tmp_path / "env",
        "here": work,
        "config_dir": work / "config",
        "user": tmp_path / "xdg" / "zotsync",
    }


ORDER = ["option", "env", "here", "config_dir", "user"]


@pytest.mark.parametrize("winner", ORDER)
def test_the_first_place_that_has_a_config_wins(places, monkeypatch, winner: str) -> None:
    for name in ORDER[ORDER.index(winner) :]:
        demo_config(places[name], name)
    explicit = str(places["option"] / "zotsync.yaml") if winner == "option" else None
    if winner in ("option", "env"):
        monkeypatch.setenv("ZOTSYNC_CONFIG", str(places["env"] / "zotsync.yaml"))
    found = find_config(explicit)
    assert found.resolve() == (places[winner] / "zotsync.yaml").resolve()


def test_a_sync_reads_the_discovered_config_and_writes_beside_it(places, run) -> None:
    demo_config(places["config_dir"], "from config/")
    demo_config(places["user"], "from the user folder")
    assert run("-q", "sync").code == 0
    page = (places["config_dir"] / "exports" / "catalog.md").read_text(encoding="utf-8")
    assert page.startswith("# from config/\n")
    assert not (places["user"] / "exports").exists()


def test_the_user_config_folder_is_platformdirs(places, run) -> None:
    assert user_config_path() == places["user"] / "zotsync.yaml"
    demo_config(places["user"], "mine")
    assert run("-q", "sync").code == 0
    assert (places["user"] / "exports" / "catalog.md").read_text(encoding="utf-8").startswith("# mine\n")
    result = run("status", "--format", "json")
    assert result.code == 0 and json.loads(result.out)["library"]["items"] == 64


def test_no_config_anywhere_names_the_places_and_init(places, run) -> None:
    result = run("sync")
    assert result.code == 2 and result.err.count("\n") == 1
    line = result.err
    assert line.startswith("zotsync: error: no config file: looked for --config, $ZOTSYNC_CONFIG, ")
    for place in ("./zotsync.yaml", "./config/zotsync.yaml", str(places["user"] / "zotsync.yaml")):
        assert place in line
    assert "zotsync init" in line


@pytest.mark.parametrize("where", ["zotsync.yaml", "config/zotsync.yaml"])
def test_from_a_subfolder_the_error_points_at_the_config_above_without_using_it(
    places, run, monkeypatch, where: str
) -> None:
    demo_config((places["here"] / where).parent, "above")
    below = places["here"] / "exports" / "md"
    below.mkdir(parents=True)
    monkeypatch.chdir(below)
    result = run("status")
    assert result.code == 2
    assert result.err.endswith(f"; found ../../{where}: run from there or pass --config\n")
    assert "zotsync init" not in result.err


def test_a_named_config_that_is_missing_is_not_replaced_by_another(places, run, monkeypatch) -> None:
    demo_config(places["here"], "here")
    monkeypatch.setenv("ZOTSYNC_CONFIG", str(places["env"] / "zotsync.yaml"))
    result = run("sync")
    assert result.code == 2 and "config file not found: " in result.err and "env" in result.err


@pytest.mark.parametrize(
    ("exports", "said"),
    [
        ("format: [md]", "unknown config key 'exports.format' (did you mean 'exports.formats'?)"),
        (
            "formats: [md, cvs]",
            "config key 'exports.formats' must list some of md, csv, html, bib, atom: 'cvs' is not one of "
            "them (did you mean 'csv'?)",
        ),
    ],
)
def test_a_misspelt_key_or_value_gets_a_did_you_mean(places, run, exports: str, said: str) -> None:
    path = demo_config(places["here"], "here")
    path.write_text(path.read_text(encoding="utf-8") + f"exports:\n  {exports}\n", encoding="utf-8")
    result = run("sync")
    assert result.code == 2
    assert result.err == f"zotsync: error: {Path('zotsync.yaml')}:4: {said}\n"


def test_a_key_in_the_wrong_section_is_pointed_to_its_place(places, run) -> None:
    path = demo_config(places["here"], "here")
    path.write_text(path.read_text(encoding="utf-8") + "library_id: '123'\n", encoding="utf-8")
    result = run("sync")
    assert result.code == 2
    assert "unknown config key 'library_id' (did you mean 'source.library_id'?)" in result.err


def test_config_keys_lists_every_section_and_leaf() -> None:
    keys = config_keys()
    assert len(keys) == len(set(keys))
    for key in ("source.type", "source.api_key", "catalog", "store", "exports.formats", "reconcile.venues"):
        assert key in keys


def test_the_published_json_schema_is_the_models() -> None:
    """docs/zotsync.schema.json (for an editor's checks and completion) is what the typed config
    yields: regenerate it with `python -c "import json, zotsync.config as c;
    print(json.dumps(c.json_schema(), indent=2, ensure_ascii=False))" > docs/zotsync.schema.json`."""
    import json

    from zotsync.config import json_schema

    published = json.loads((ROOT / "docs" / "zotsync.schema.json").read_text(encoding="utf-8"))
    assert published == json_schema()
    properties = published["properties"]
    keys = [
        *properties,
        *(f"{name}.{leaf}" for name, spec in properties.items() for leaf in spec.get("properties", {})),
    ]
    assert sorted(keys) == sorted(config_keys())


@pytest.mark.parametrize("how", ["option", "env"])
def test_a_tilde_in_a_named_config_is_the_home_folder(places, run, monkeypatch, tmp_path: Path, how) -> None:
    """`ZOTSYNC_CONFIG="~/list/zotsync.yaml"` quoted, or in a crontab line or a systemd unit: no shell
    expands the `~` there, so zotsync does."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("USERPROFILE", str(tmp_path / "home"))  # what expanduser reads on Windows
    demo_config(tmp_path / "home" / "list", "from home")
    if how == "env":
        monkeypatch.setenv("ZOTSYNC_CONFIG", "~/list/zotsync.yaml")
    result = run(*(["--config", "~/list/zotsync.yaml"] if how == "option" else []), "-q", "sync")
    assert result.code == 0, result.err
    page = (tmp_path / "home" / "list" / "exports" / "catalog.md").read_text(encoding="utf-8")
    assert page.startswith("# from home")
