"""Plugins: the format plugin docs/plugins.md walks through, built from that page as a real package,
pip-installed into a folder of its own beside zotsync (the shared environment stays as it was), and run
by a real `zotsync sync`; a plugin that fails to load is one warning line and the rest works."""

from __future__ import annotations

import contextlib
import csv
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import ROOT
from factories import pip_install

from zotsync import sources
from zotsync.config import SOURCE_TYPES, SourceConfig, SourceGiven, local_path
from zotsync.errors import ConfigError
from zotsync.sources.memory import MemorySource

GUIDE = ROOT / "docs" / "plugins.md"


def guide_files() -> dict[str, str]:
    """The files docs/plugins.md shows: each fenced block right after a "`name`:" line."""
    text = GUIDE.read_text(encoding="utf-8")
    return dict(re.findall(r"^`([\w.]+)`:\n\n```\w+\n(.*?)^```$", text, flags=re.M | re.S))


def zotsync(plugins: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(plugins)}
    return subprocess.run(
        [sys.executable, "-m", "zotsync", *args], capture_output=True, text=True, env=env, timeout=300
    )


def use_formats(project: Path, names: str) -> str:
    config = project / "config" / "zotsync.yaml"
    text = config.read_text(encoding="utf-8")
    config.write_text(re.sub(r"formats: \[.*\]", f"formats: [{names}]", text), encoding="utf-8")
    return str(config)


@pytest.fixture(scope="module")
def plugins(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the guide's `zotsync-shelf`, installed, and beside it a broken package: a format
    whose module fails to import, and a "processor" that is not one."""
    files = guide_files()
    assert set(files) == {"pyproject.toml", "zotsync_shelf.py"}, files
    shelf = tmp_path_factory.mktemp("zotsync-shelf")
    for name, text in files.items():
        (shelf / name).write_text(text, encoding="utf-8")
    broken = tmp_path_factory.mktemp("zotsync-broken")
    (broken / "pyproject.toml").write_text(
        files["pyproject.toml"]
        .replace('name = "zotsync-shelf"', 'name = "zotsync-broken"')
        .replace('shelf = "zotsync_shelf:EXPORTER"', 'broken = "zotsync_broken:EXPORTER"')
        + '\n[project.entry-points."zotsync.processors"]\nwrong = "zotsync_wrong:PROCESSOR"\n'
        + '\n[tool.setuptools]\npy-modules = ["zotsync_broken", "zotsync_wrong"]\n',
        encoding="utf-8",
    )
    broken_code = "raise RuntimeError('this plugin is broken')\n"
    (broken / "zotsync_broken.py").write_text(broken_code, encoding="utf-8")
    (broken / "zotsync_wrong.py").write_text("PROCESSOR = 'not a processor'\n", encoding="utf-8")
    target = tmp_path_factory.mktemp("site")
    pip_install(shelf, target)
    pip_install(broken, target)
    return target


@pytest.mark.slow  # builds and installs a package, runs zotsync in a subprocess
def test_the_guide_s_format_plugin_is_written_by_sync(project: Path, plugins: Path) -> None:
    config = use_formats(project, "md, csv, shelf")
    done = zotsync(plugins, "--config", config, "sync")
    assert done.returncode == 0, done.stderr
    shelf = (project / "exports" / "shelf.txt").read_text(encoding="utf-8").splitlines()
    with (project / "exports" / "catalog.csv").open(encoding="utf-8-sig", newline="") as file:
        rows = list(csv.DictReader(file))
    assert rows
    # the plugin's lines are the page's rows, in order, under their categories
    assert [line for line in shelf if line.startswith("[")] == [
        f"[{'x' if row['status'] == 'read' else ' '}] {row['title']}"
        + (f" ({row['venue']})" if row["venue"] else "")
        for row in rows
    ]
    assert [line for line in shelf if line.startswith("==")] == [
        f"== {category} ==" for category in dict.fromkeys(row["category"] for row in rows)
    ]
    # the broken plugin beside it: one warning line naming it, and the sync went on
    warnings = [line for line in done.stderr.splitlines() if "plugin 'broken'" in line]
    assert len(warnings) == 1 and "this plugin is broken" in warnings[0], done.stderr
    assert done.stderr.count("plugin 'wrong'") == 1
    assert (
        "zotsync: plugin 'wrong' (zotsync.processors, zotsync_wrong:PROCESSOR) is not a zotsync.Processor"
        in (done.stderr)
    )


@pytest.mark.slow
def test_a_plugin_s_format_is_valid_where_a_built_in_one_is(project: Path, plugins: Path) -> None:
    helped = zotsync(plugins, "export", "--help")
    assert helped.returncode == 0 and "md|csv|html|bib|atom|shelf]" in helped.stdout, helped.stdout
    config = use_formats(project, "md")
    assert zotsync(plugins, "--config", config, "pull").returncode == 0
    printed = zotsync(plugins, "--config", config, "export", "--format", "shelf", "--output", "-")
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout.startswith("== ")
    # without the plugin installed, the same config is one clear line (exit 2)
    config = use_formats(project, "md, shelf")
    refused = zotsync(project / "nothing-installed", "--config", config, "sync")
    assert refused.returncode == 2
    assert (
        "config key 'exports.formats' must list some of md, csv, html, bib, atom: 'shelf' is not one of them"
        in refused.stderr
    )


@dataclass(frozen=True, slots=True)
class MemorySettings:
    """The memory type's own key in the `source` section."""

    objects: Path | None = local_path(None, "a JSON file of its objects")  # noqa: RUF009 (a config key)


def test_a_source_type_of_one_s_own_is_valid_in_source_type_with_its_own_keys_and_check(
    project: Path, run, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A type of source a package adds (here `register`ed, as the `zotsync.sources` entry point's are
    read into the same registry): `source.type` takes it, its own keys in the `source` section are read
    like any (a typo is one line), its own check says what it needs, and a sync reads the library
    through it."""

    @contextlib.contextmanager
    def open_memory(config: SourceConfig, progress: bool, deadline: float) -> Iterator[MemorySource]:
        objects = json.loads(config.options.objects.read_text(encoding="utf-8"))
        yield MemorySource(objects, name=config.library_id)

    def needs_a_name(given: SourceGiven) -> None:
        if not given.values["library_id"]:
            raise ConfigError(f"{given.path}: source.type memory needs 'source.library_id' (a name)")

    monkeypatch.setattr(sources, "_extra", {})
    memory = sources.SourceType("memory", "a library in memory", open_memory, needs_a_name, MemorySettings)
    sources.register(memory)
    config = project / "config" / "zotsync.yaml"
    assert run("-q", "--config", str(config), "sync").code == 0  # the snapshot the memory source holds
    page = (project / "exports" / "catalog.md").read_text(encoding="utf-8")

    def source_section(lines: str) -> None:
        text = config.read_text(encoding="utf-8")
        config.write_text(re.sub(r"source:\n(  .*\n)+", f"source:\n{lines}", text), encoding="utf-8")

    source_section("  type: memory\n  objects: ../seeds/zotero-library.json\n")
    refused = run("--config", str(config), "sync")
    assert refused.code == 2 and "source.type memory needs 'source.library_id' (a name)" in refused.err
    source_section("  type: memory\n  library_id: demo\n  object: ../seeds/zotero-library.json\n")
    typo = run("--config", str(config), "sync")
    assert typo.code == 2 and "zotsync.yaml:6: unknown config key 'source.object'" in typo.err
    source_section("  type: memory\n  library_id: demo\n  objects: ../seeds/zotero-library.json\n")
    synced = run("--config", str(config), "sync")
    assert synced.code == 0, synced.err
    assert (project / "exports" / "catalog.md").read_text(encoding="utf-8") == page
    library = json.loads(run("--config", str(config), "status", "--format", "json").out)["library"]
    assert (library["kind"], library["source"]) == ("memory", "demo")  # its id, `memory:demo`, read as any
    # the key is the memory type's alone, and an unknown type names every type there is
    source_section("  type: snapshot\n  path: ../seeds/zotero-library.json\n  objects: x.json\n")
    assert "unknown config key 'source.objects'" in run("--config", str(config), "sync").err
    source_section("  type: nothing\n")
    unknown = run("--config", str(config), "sync")
    assert unknown.code == 2 and "must be one of snapshot, web, local, memory, not 'nothing'" in unknown.err
    assert tuple(sources.BUILT_IN) == SOURCE_TYPES  # what the JSON Schema lists: the built-in ones
