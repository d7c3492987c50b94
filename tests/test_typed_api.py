"""A library typed for its users: the installed package ships py.typed, so a user's script that uses
`zotsync.load_config`, `sync` and `search` passes `mypy --strict`; its public types are importable from
`zotsync` itself; a config built in code, without a file, works."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SEEDS
from factories import pip_install

import zotsync
from zotsync.config import ExportsConfig, SourceConfig

USER_SCRIPT = """\
from __future__ import annotations

import zotsync


def main(path: str) -> list[str]:
    config: zotsync.Config = zotsync.load_config(path)
    result: zotsync.SyncResult = zotsync.sync(config)
    print(result.summary(), result.to_dict()["files"], result.pull.to_dict()["items_added"])
    titles = []
    for hit in zotsync.search(config, "tensor", limit=5):
        titles.append(hit.title)
        print(hit.summary(), hit.to_dict()["categories"])
    try:
        zotsync.pull(config)
    except zotsync.ZotsyncError as exc:
        print(exc.exit_code)
    return titles
"""


@pytest.mark.slow  # installs the wheel and runs mypy in a subprocess
def test_a_user_s_script_passes_mypy_strict_against_the_installed_package(
    built_wheel: Path, tmp_path: Path
) -> None:
    site = tmp_path / "site"
    pip_install(built_wheel, site)
    assert (site / "zotsync" / "py.typed").is_file()
    (tmp_path / "user.py").write_text(USER_SCRIPT, encoding="utf-8")
    # mypy finds the installed package on the path the interpreter it asks reports (PEP 561)
    env = {**os.environ, "PYTHONPATH": str(site)}
    checked = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-incremental",
            "--python-executable",
            sys.executable,
            "user.py",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.startswith("Success: no issues found in 1 source file")


def test_the_public_types_are_importable_from_zotsync_itself() -> None:
    from zotsync.app.sync import SyncResult
    from zotsync.errors import ZotsyncError
    from zotsync.formats import Exporter, Output
    from zotsync.processing import Processor
    from zotsync.sources import SourceType

    assert (zotsync.SyncResult, zotsync.ZotsyncError) == (SyncResult, ZotsyncError)
    assert (zotsync.Exporter, zotsync.Output, zotsync.Processor, zotsync.SourceType) == (
        Exporter,
        Output,
        Processor,
        SourceType,
    )
    for name in zotsync.__all__:  # each public name resolves, from the module that defines it
        value = getattr(zotsync, name)
        assert name == "__version__" or value.__module__.startswith("zotsync"), name
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        zotsync.Nothing  # noqa: B018


def test_a_config_built_in_code_without_a_file_syncs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    config = zotsync.Config(
        path=tmp_path / "never-written.yaml",
        source=SourceConfig(type="snapshot", path=SEEDS / "zotero-library.json"),
        catalog=SEEDS / "catalog.yaml",
        store=tmp_path / "store.sqlite",
        exports=ExportsConfig(dir=tmp_path / "out"),
    )
    result = zotsync.sync(config)
    assert result.changed and (tmp_path / "out" / "catalog.md").is_file()
    frame = zotsync.catalogue_frame(config)
    assert zotsync.status(config).to_dict()["catalogue"]["entries"] == len(frame)
    assert list(frame.index) == list(range(len(frame)))  # the page's order, as docs/python-api.md says
    assert not (tmp_path / "never-written.yaml").exists()
    # a missing catalogue is one clear line, with no config file to point into
    missing = zotsync.Config(
        path=tmp_path / "never-written.yaml",
        source=config.source,
        catalog=tmp_path / "nowhere.yaml",
        store=config.store,
        exports=config.exports,
    )
    with pytest.raises(zotsync.ConfigError) as raised:
        zotsync.status(missing)
    assert str(raised.value).startswith(f"catalogue not found: {tmp_path / 'nowhere.yaml'}")
    assert "never-written" not in str(raised.value)
