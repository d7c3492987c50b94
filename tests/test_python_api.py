"""The Python API: `import zotsync` stays light, and its functions do what the commands do."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

import zotsync
from zotsync.errors import ConfigError

ROOT = Path(__file__).resolve().parent.parent
GOLDEN_CSV = ROOT / "tests" / "golden" / "catalog.csv"


@pytest.mark.slow
def test_importing_zotsync_loads_neither_pandas_nor_the_store() -> None:
    code = "import sys, zotsync; print(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", "import json; " + code], capture_output=True, text=True, timeout=60, check=True
    )
    loaded = set(json.loads(done.stdout))
    heavy = {"pandas", "numpy", "sqlite3", "pyzotero", "httpx2", "zotsync.store", "zotsync.app"}
    assert not heavy & loaded, heavy & loaded


def test_sync_then_the_frame_holds_the_demo_rows_as_the_reviewed_csv_does(project: Path) -> None:
    config = zotsync.load_config(project / "config" / "zotsync.yaml")
    result = zotsync.sync(config)
    assert result.changed and result.pull.to_version == 480
    frame = zotsync.catalogue_frame(config)
    with GOLDEN_CSV.open(encoding="utf-8", newline="") as stream:
        golden = list(csv.DictReader(stream))
    assert len(frame) == len(golden) == 64
    assert list(frame.columns) == list(golden[0])  # the CSV's columns, venue_source included
    assert str(frame["year"].dtype) == "Int64" and frame["noted"].dtype == bool
    for record, expected in zip(frame.to_dict("records"), golden, strict=True):
        for column in ("authors", "tags", "collections"):
            value = record[column]
            assert isinstance(value, list)
            assert "; ".join(value) == expected[column], (column, record["title"])
        year = record["year"]
        assert ("" if year is None or str(year) == "<NA>" else str(year)) == expected["year"]
        assert ("true" if record["noted"] else "false") == expected["noted"]
        assert ("true" if record["retracted"] else "") == expected["retracted"]
        cited = record["cited_by"]
        assert ("" if cited is None or str(cited) == "<NA>" else str(cited)) == expected["cited_by"]
        for column in (
            "category",
            "status",
            "title",
            "venue",
            "why",
            "doi",
            "url",
            "note",
            "zotero_key",
            "venue_source",
            "open_access_url",
        ):
            assert record[column] == expected[column], (column, record["title"])


def test_the_frame_holds_values_not_spreadsheet_guards(project: Path) -> None:
    """The CSV puts a `'` before a cell a spreadsheet would run; the frame holds the value itself."""
    catalog = project / "seeds" / "catalog.yaml"
    config = zotsync.load_config(project / "config" / "zotsync.yaml")
    zotsync.pull(config)
    frame = zotsync.catalogue_frame(config)
    first_why = frame.loc[0, "why"]
    catalog.write_text(catalog.read_text(encoding="utf-8").replace(first_why, "=1+1", 1), encoding="utf-8")
    assert zotsync.catalogue_frame(config).loc[0, "why"] == "=1+1"


def test_status_is_a_typed_report(project: Path) -> None:
    config = zotsync.load_config(project / "config" / "zotsync.yaml")
    zotsync.pull(config)
    report = zotsync.status(config)
    assert (report.catalogue.entries, report.catalogue.read, report.catalogue.unread) == (64, 29, 35)
    assert report.to_json()["catalogue"]["categories"] == 14


def test_load_config_searches_as_the_command_line_does(project: Path, monkeypatch) -> None:
    monkeypatch.chdir(project)
    assert zotsync.load_config().path == Path("config/zotsync.yaml")
    monkeypatch.chdir(project / "seeds")
    monkeypatch.delenv("ZOTSYNC_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(project / "nowhere"))
    with pytest.raises(ConfigError, match="no config file"):
        zotsync.load_config()
