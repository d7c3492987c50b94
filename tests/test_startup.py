"""A fast start: `zotsync --help` and `--version` load neither pandas nor pyzotero (nor its httpx2) nor
the store; cli.py imports each use case inside its command. The timing is bench/bench_startup.py's job."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("pandas", "pyzotero", "httpx2", "sqlite3", "rapidfuzz", "zotsync.app", "zotsync.store")


def loaded_after(code: str) -> set[str]:
    probe = f"import json, sys\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.splitlines()[-1]))


@pytest.mark.slow
def test_importing_the_cli_loads_nothing_heavy() -> None:
    assert not loaded_after("import zotsync.cli") & set(HEAVY)


@pytest.mark.slow
@pytest.mark.parametrize("flag", ["--help", "--version"])
def test_help_and_version_load_nothing_heavy(flag: str) -> None:
    modules = loaded_after(f"from zotsync.cli import main\nmain([{flag!r}])")
    assert not modules & set(HEAVY), sorted(modules & set(HEAVY))
    assert "click" in modules  # the probe did run the command line


@pytest.mark.slow
def test_loading_a_config_reads_no_package_metadata_when_no_plugin_is_installed() -> None:
    """The registries know their built-in names without looking; the installed packages' metadata
    (importlib.metadata, tens of milliseconds) is read only when some package declares a zotsync plugin,
    and the processors' config sections load neither the store nor the model."""
    from conftest import ROOT

    config = ROOT / "config" / "zotsync.yaml"
    modules = loaded_after(f"import zotsync\nzotsync.load_config({str(config)!r})")
    assert "zotsync.processing.enrich.settings" in modules  # the probe did read the processors' sections
    assert not modules & {"importlib.metadata", "zotsync.store", "zotsync.model", "sqlite3"}


@pytest.mark.slow
def test_an_unchanged_sync_imports_nothing_that_renders(tmp_path) -> None:
    """The cron run that finds nothing changed loads neither reconcile, nor CHANGES.md's writer, nor the
    page (the processors' audience is made only when a processor runs)."""
    from conftest import SEEDS
    from factories import snapshot_project

    from zotsync.app.sync import run_sync
    from zotsync.config import load_config

    config = snapshot_project(
        tmp_path, json.loads((SEEDS / "zotero-library.json").read_text(encoding="utf-8"))
    )
    run_sync(load_config(config))  # the first sync renders
    modules = loaded_after(f"from zotsync.cli import main\nmain(['-q', '--config', {str(config)!r}, 'sync'])")
    assert "zotsync.app.sync" in modules  # the probe did sync
    rendering = {"zotsync.app.page", "zotsync.app.changes", "zotsync.reconcile", "zotsync.export.changelog"}
    assert not modules & rendering, sorted(modules & rendering)


def test_the_built_in_pages_are_the_exporters_own() -> None:
    """The page names an unchanged sync checks without importing the exporters are the ones each
    exporter declares (and writes)."""
    import importlib

    from zotsync import formats

    assert set(formats.BUILT_IN_PAGES) == set(formats.BUILT_IN)
    for name, module in formats.BUILT_IN.items():
        assert importlib.import_module(module).EXPORTER.page == formats.BUILT_IN_PAGES[name]
        assert formats.page(name) == formats.BUILT_IN_PAGES[name]


@pytest.mark.slow
def test_an_unchanged_sync_with_every_format_imports_no_exporter(tmp_path) -> None:
    from conftest import SEEDS
    from factories import snapshot_project

    from zotsync.app.sync import run_sync
    from zotsync.config import load_config

    library = json.loads((SEEDS / "zotero-library.json").read_text(encoding="utf-8"))
    config = snapshot_project(tmp_path, library, settings="  formats: [md, csv, html, bib, atom]\n")
    run_sync(load_config(config))  # the first sync renders
    assert (config.parent / "exports" / "catalog.bib").exists()
    modules = loaded_after(f"from zotsync.cli import main\nmain(['-q', '--config', {str(config)!r}, 'sync'])")
    assert "zotsync.app.sync" in modules
    from zotsync.formats import BUILT_IN

    exporters = {m for m in modules if m in BUILT_IN.values() or m.split(".")[0] == "bibtexparser"}
    assert not exporters, sorted(exporters)
