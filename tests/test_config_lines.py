"""Config errors point at the line of the config (or the environment variable) that holds the value."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import write_config


def web_config(folder: Path, library_type: str = "user", library_id: str = '"9876543"') -> Path:
    (folder / "catalog.yaml").write_text("categories: []\n", encoding="utf-8")
    return write_config(
        folder,
        f"""\
        source:
          type: web
          library_type: {library_type}
          library_id: {library_id}
        catalog: catalgo.yaml
        """,
    )


@pytest.mark.parametrize("command", ["status", "sync", "list"])
def test_a_missing_catalogue_names_the_config_line_and_the_file_meant(tmp_path: Path, run, command) -> None:
    config = web_config(tmp_path)
    result = run("--config", str(config), command)
    assert result.code == 2
    assert result.err == (
        f"zotsync: error: {config}:5: catalogue not found: {tmp_path / 'catalgo.yaml'} "
        "(did you mean 'catalog.yaml'?)\n"
    )


def test_a_missing_catalogue_with_nothing_near_says_how_to_get_one(tmp_path: Path, run) -> None:
    config = write_config(tmp_path, "source: {type: snapshot, path: x.json}\ncatalog: reading.yaml\n")
    result = run("--config", str(config), "status")
    assert result.err == (
        f"zotsync: error: {config}:2: catalogue not found: {tmp_path / 'reading.yaml'} "
        "(`zotsync init` writes an empty one)\n"
    )


@pytest.mark.parametrize("named", ["nowhere.yaml", "zotsyn.yaml"])
def test_a_missing_catalogue_is_not_matched_by_its_extension_or_with_the_config(
    tmp_path: Path, run, named: str
) -> None:
    (tmp_path / "unclosed.yaml").write_text("categories: [\n", encoding="utf-8")  # near only by ".yaml"
    config = write_config(tmp_path, f"source: {{type: snapshot, path: x.json}}\ncatalog: {named}\n")
    assert config.name == "zotsync.yaml"  # "zotsyn" is one letter from it: still never suggested
    result = run("--config", str(config), "status")
    assert result.err.endswith("(`zotsync init` writes an empty one)\n"), result.err


def test_a_bad_library_type_names_its_line(tmp_path: Path, run) -> None:
    config = web_config(tmp_path, library_type="users")
    result = run("--config", str(config), "sync")
    assert (result.code, result.err) == (
        2,
        f"zotsync: error: {config}:3: config key 'source.library_type' must be user or group, not 'users'\n",
    )


def test_a_bad_library_type_from_the_environment_names_the_variable(
    tmp_path: Path, run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ZOTERO_LIBRARY_TYPE", "users")
    config = web_config(tmp_path)
    result = run("--config", str(config), "sync")
    assert result.err == (
        f"zotsync: error: {config}: ZOTERO_LIBRARY_TYPE (for 'source.library_type') must be user or group, "
        "not 'users'\n"
    )


def test_an_empty_library_id_names_its_line(tmp_path: Path, run) -> None:
    config = web_config(tmp_path, library_id='""')
    result = run("--config", str(config), "sync")
    assert (result.code, result.err) == (
        2,
        f"zotsync: error: {config}:4: source.type web needs a numeric 'source.library_id' "
        "(or ZOTERO_LIBRARY_ID)\n",
    )


def test_zotero_api_base_on_a_local_source_is_named_as_the_culprit(
    tmp_path: Path, run, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file has no base_url: the error must not send the user looking for one there."""
    monkeypatch.setenv("ZOTERO_API_BASE", "http://127.0.0.1:1")
    config = write_config(tmp_path, "source:\n  type: local\n  path: Zotero\ncatalog: catalog.yaml\n")
    result = run("--config", str(config), "sync")
    assert result.code == 2
    assert "'ZOTERO_API_BASE'" in result.err and "unset ZOTERO_API_BASE" in result.err
    assert "source.base_url" not in result.err


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ("", "zotsync.yaml: no source"),  # an empty file
        ("catalog: catalog.yaml\n", "zotsync.yaml: no source"),
        ("source:\ncatalog: catalog.yaml\n", "zotsync.yaml: no source"),
        (
            'catalog: catalog.yaml\nsource:\n  library_id: "1"\n',
            "zotsync.yaml:2: config key 'source.type' is missing",
        ),
    ],
)
def test_a_config_without_a_source_type_says_so(tmp_path: Path, run, body: str, said: str) -> None:
    """Not "source.type snapshot needs config key 'source.path'": the user never chose a snapshot."""
    (tmp_path / "catalog.yaml").write_text("categories: []\n", encoding="utf-8")
    config = write_config(tmp_path, body)
    result = run("--config", str(config), "sync")
    assert result.code == 2
    assert result.err == (
        f"zotsync: error: {tmp_path / said}: set source.type (web, local or snapshot) and where the library "
        "is (`zotsync init` writes a commented config; docs/configuration.md)\n"
    )
    assert not (tmp_path / ".zotsync").exists()
