"""Global options anywhere, a bare `zotsync`, and click's usage errors as one line that says what to do."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from factories import config_of


def test_global_options_work_after_the_command(project: Path, run) -> None:
    result = run("sync", "-q", "--config", config_of(project))
    assert (result.code, result.out, result.err) == (0, "", "")
    assert (project / "exports" / "catalog.md").exists()
    status = run("status", "--format", "json", "--config", config_of(project))
    assert status.code == 0 and json.loads(status.out)["catalogue"]["entries"] == 64


def test_verbose_after_the_command_shows_the_traceback(project: Path, run) -> None:
    (project / "seeds" / "zotero-library.json").write_text("nope", encoding="utf-8")
    result = run("pull", "--config", config_of(project), "-v")
    assert result.code == 1 and "Traceback" in result.err


def test_quiet_before_and_config_after_the_command(project: Path, run) -> None:
    result = run("-q", "sync", "--config", config_of(project))
    assert (result.code, result.err) == (0, "")


def test_bare_zotsync_prints_the_help_on_stdout(run) -> None:
    result = run()
    assert result.code == 0 and result.err == ""
    assert result.out.startswith("Usage: zotsync ") and "Commands:" in result.out and "sync" in result.out


def test_help_of_a_command_lists_the_global_options(run) -> None:
    result = run("sync", "--help")
    assert result.code == 0 and "--config PATH" in result.out and "--quiet" in result.out


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["export"], "zotsync: error: --format must be md, csv, html, bib or atom\n"),
        (["export", "--format", "pdf"], "zotsync: error: --format must be md, csv, html, bib or atom\n"),
        (["status", "--format", "xml"], "zotsync: error: --format must be text or json\n"),
        (
            ["adopt", "ABCD2345"],
            "zotsync: error: missing option --category NAME (see `zotsync adopt --help`)\n",
        ),
        (["pin", "A title"], "zotsync: error: missing argument ZOTERO_KEY (see `zotsync pin --help`)\n"),
    ],
)
def test_usage_errors_are_one_line_with_exit_2(project: Path, run, args: list[str], line: str) -> None:
    result = run("--config", config_of(project), *args)
    assert (result.code, result.out, result.err) == (2, "", line)


def test_an_unknown_option_suggests_the_near_one(run) -> None:
    result = run("export", "--frmat", "md")
    assert result.code == 2 and result.err.count("\n") == 1
    assert result.err.startswith("zotsync: error: No such option '--frmat'") and "--format" in result.err


def test_an_unknown_command_is_one_line(run) -> None:
    result = run("synk")
    assert result.code == 2 and result.err.count("\n") == 1 and "synk" in result.err


@pytest.mark.parametrize(
    ("args", "where"), [(["help"], "zotsync --help"), (["schedule", "list"], "zotsync schedule --help")]
)
def test_an_unknown_command_with_no_near_one_says_where_the_commands_are(run, args, where) -> None:
    result = run(*args)
    assert (result.code, result.out) == (2, "")
    assert result.err == f"zotsync: error: No such command '{args[-1]}' (`{where}` lists the commands)\n"


# -- -q and -v together: each keeps its meaning, in any order and combined (`-qv`, `-vq`) ---------------


@pytest.mark.parametrize(
    "args",
    [
        ["-qv", "pull"],
        ["-vq", "pull"],
        ["-q", "-v", "pull"],
        ["-v", "-q", "pull"],
        ["-q", "pull", "-v"],
        ["pull", "-vq"],
    ],
)
def test_quiet_and_verbose_together_still_show_the_traceback(project: Path, run, args: list[str]) -> None:
    (project / "seeds" / "zotero-library.json").write_text("nope", encoding="utf-8")
    result = run("--config", config_of(project), *args)
    assert result.code == 1
    assert "Traceback" in result.err
    last = result.err.splitlines()[-1]
    assert last.startswith("zotsync: error: ") and "snapshot is not valid JSON" in last


@pytest.mark.parametrize("flags", [["-qv"], ["-vq"]])
def test_quiet_and_verbose_together_keep_the_summary_lines_off(project: Path, run, flags: list[str]) -> None:
    result = run(*flags, "--config", config_of(project), "sync")
    assert result.code == 0 and result.out == ""
    assert "wrote" not in result.err and "first pull" not in result.err  # what -q silences
    assert (project / "exports" / "catalog.md").exists()


def test_an_option_value_spelt_like_v_is_not_the_verbose_flag(project: Path, run) -> None:
    result = run("--config", config_of(project), "list", "--search", "-v")  # no store yet: fails
    assert result.code == 1 and "Traceback" not in result.err
    assert result.err == "zotsync: error: no store at " + str(project / ".zotsync" / "zotsync.sqlite") + (
        ": run `zotsync pull` first\n"
    )
