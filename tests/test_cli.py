"""The command line as a user meets it: exit codes, one-line errors, and the files it writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import write_config
from factories import config_of

from zotsync.cli import cli


def test_sync_writes_both_exports_and_status_reports_counts(project: Path, run) -> None:
    result = run("--config", config_of(project), "sync")
    assert result.code == 0, result.err
    assert (
        (project / "exports" / "catalog.md")
        .read_text(encoding="utf-8")
        .startswith("# GPU 编译与性能 · 论文\n")
    )
    assert (
        (project / "exports" / "catalog.csv").read_text(encoding="utf-8").startswith("category,status,title,")
    )
    status = json.loads(run("--config", config_of(project), "status", "--format", "json").out)
    assert status["catalogue"] == {
        "entries": 64,
        "read": 29,
        "unread": 35,
        "curated": 46,
        "matched": 46,
        "categories": 14,
    }
    assert (status["library"]["items"], status["library"]["trashed"]) == (64, 1)
    assert status["unmatched"] == [] and status["ambiguous"] == []


def test_second_sync_is_idempotent_and_leaves_exports_untouched(project: Path, run) -> None:
    assert run("--config", config_of(project), "sync").code == 0
    md = project / "exports" / "catalog.md"
    before = (md.read_bytes(), md.stat().st_mtime_ns)
    second = run("--config", config_of(project), "sync")
    assert second.code == 0
    assert "up to date at library version 480" in second.err
    assert "unchanged" in second.err
    assert (md.read_bytes(), md.stat().st_mtime_ns) == before


def test_export_to_stdout_and_to_a_path(project: Path, run) -> None:
    assert run("-q", "--config", config_of(project), "pull").code == 0
    to_stdout = run("--config", config_of(project), "export", "--format", "csv", "--output", "-")
    assert to_stdout.code == 0 and to_stdout.out.startswith("category,status,title,venue,year,why,")
    target = project / "elsewhere" / "list.md"
    assert (
        run("-q", "--config", config_of(project), "export", "--format", "md", "--output", str(target)).code
        == 0
    )
    assert (
        target.read_text(encoding="utf-8").count("\n| ✅")
        + target.read_text(encoding="utf-8").count("\n| ⬜")
        == 64
    )


def test_config_from_environment_variable(project: Path, run, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZOTSYNC_CONFIG", config_of(project))
    assert run("-q", "pull").code == 0


def test_quiet_prints_nothing(project: Path, run) -> None:
    result = run("-q", "--config", config_of(project), "sync")
    assert (result.code, result.out, result.err) == (0, "", "")


def test_export_before_any_pull_says_what_to_do(project: Path, run) -> None:
    result = run("--config", config_of(project), "export", "--format", "md")
    assert result.code == 1
    assert result.err.startswith("zotsync: error: no store at ") and "run `zotsync pull` first" in result.err


ERRORS = [
    # (what is broken, how, expected exit code, a fragment of the one-line message)
    ("config", None, 2, "config file not found"),
    ("config", "source:\n  type: snapshot\n   path: x\n", 2, "zotsync.yaml:3: malformed YAML"),
    (
        "config",
        "source:\n  type: snapshot\n  path: x.json\n  colour: blue\ncatalog: c.yaml\n",
        2,
        "zotsync.yaml:4: unknown config key 'source.colour'",
    ),
    ("config", "source: {type: ftp, path: x}\ncatalog: c.yaml\n", 2, "'source.type' must be one of"),
    ("config", "source: {type: web}\ncatalog: c.yaml\n", 2, "needs a numeric 'source.library_id'"),
    (
        "catalog",
        "title: t\ncategories:\n  - name: A\n    entries:\n      - venue: X\n",
        2,
        "catalog.yaml:5: entry without a title in category 'A'",
    ),
    (
        "catalog",
        "categories:\n  - name: A\n    entries:\n      - title: T\n        status: done\n",
        2,
        "catalog.yaml:5: status must be read or unread, not 'done'",
    ),
    (
        "catalog",
        "categories:\n  - name: A\n    entries:\n      - title: T\n        staus: read\n",
        2,
        "catalog.yaml:5: unknown entry key 'staus'",
    ),
    ("catalog", "categories:\n  - name: A\n    entries:\n      - title: 'T\n", 2, "malformed YAML"),
    ("snapshot", '[{"key": "AB', 1, "snapshot is not valid JSON"),
    ("snapshot", '{"items": []}', 1, "a snapshot is a JSON array"),
]


@pytest.mark.parametrize(("broken", "content", "code", "message"), ERRORS)
def test_errors_are_one_line_with_the_right_exit_code(
    project: Path, run, broken: str, content: str | None, code: int, message: str
) -> None:
    config = project / "config" / "zotsync.yaml"
    target = {
        "config": config,
        "catalog": project / "seeds" / "catalog.yaml",
        "snapshot": project / "seeds" / "zotero-library.json",
    }[broken]
    if broken == "config" and content and "catalog: c.yaml" in content:
        target = write_config(project, content)
        config = target
    elif content is None:
        target.unlink()
    else:
        target.write_text(content, encoding="utf-8")
    result = run("--config", str(config), "sync")
    assert result.code == code
    assert result.err.count("\n") == 1 and result.err.startswith("zotsync: error: "), result.err
    assert message in result.err
    assert "Traceback" not in result.err


def test_a_failed_pull_keeps_store_and_exports(project: Path, run) -> None:
    assert run("-q", "--config", config_of(project), "sync").code == 0
    exports = {p.name: p.read_bytes() for p in (project / "exports").rglob("*") if p.is_file()}
    store = project / ".zotsync" / "zotsync.sqlite"
    (project / "seeds" / "zotero-library.json").write_text("[{", encoding="utf-8")
    assert run("--config", config_of(project), "sync").code == 1
    assert {p.name: p.read_bytes() for p in (project / "exports").rglob("*") if p.is_file()} == exports
    assert (
        json.loads(run("--config", config_of(project), "status", "--format", "json").out)["catalogue"][
            "entries"
        ]
        == 64
    )
    assert store.exists()


def test_verbose_shows_the_traceback(project: Path, run) -> None:
    (project / "seeds" / "zotero-library.json").write_text("nope", encoding="utf-8")
    result = run("-v", "--config", config_of(project), "pull")
    assert result.code == 1 and "Traceback" in result.err


def test_bad_option_is_a_usage_error(project: Path, run) -> None:
    result = run("--config", config_of(project), "export", "--format", "pdf")
    assert result.code == 2 and result.err.startswith("zotsync: error: ") and result.err.count("\n") == 1


def test_lock_held_by_another_run_fails_fast(project: Path, run) -> None:
    from zotsync.store import exclusive_lock

    with exclusive_lock(project / ".zotsync" / "zotsync.sqlite"):
        result = run("--config", config_of(project), "sync")
    assert result.code == 1 and "another zotsync run holds the lock" in result.err


def test_relative_paths_resolve_against_the_config_folder(project: Path, run, monkeypatch) -> None:
    monkeypatch.chdir(project.parent)
    assert run("-q", "--config", config_of(project), "sync").code == 0
    assert (project / "exports" / "catalog.md").exists()


def test_every_command_has_help(run) -> None:
    for name, command in cli.commands.items():
        assert command.help, name
        assert run(name, "--help").code == 0


def test_version(run) -> None:
    result = run("--version")
    assert result.code == 0 and result.out.startswith("zotsync, version ")


@pytest.mark.slow
def test_python_dash_m_runs_the_same_entry_point(project: Path) -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "zotsync", "--config", config_of(project), "-q", "sync"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


def test_status_text_lists_an_unmatched_entry_with_its_nearest_candidate(project: Path, run) -> None:
    catalog = project / "seeds" / "catalog.yaml"
    text = catalog.read_text(encoding="utf-8").replace(
        "  - name: Compiler\n    entries:\n",
        "  - name: Compiler\n    entries:\n      - title: Scheduling memory access with tile graphs\n",
    )
    catalog.write_text(text, encoding="utf-8")
    assert run("-q", "--config", config_of(project), "sync").code == 0
    report = run("--config", config_of(project), "status").out
    assert "unmatched curated entries: 1\n" in report
    (line,) = [line for line in report.splitlines() if "Scheduling memory access with tile graphs" in line]
    assert "(no candidate) — nearest: Welder: Scheduling Deep Learning Memory Access via Tile-graph [" in line
