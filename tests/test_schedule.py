"""`zotsync schedule`: the crontab entry (driven through a stand-in `crontab` on PATH that keeps the
table in a temp file), the systemd user timer (in a temporary unit folder), never the real ones."""

from __future__ import annotations

import configparser
import os
import shlex
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import READ_ONLY_REASON
from factories import config_of

from zotsync.schedule import parse_every

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the stand-in crontab is a sh script")

# A user's crontab with what python-crontab would rewrite if it rendered the table: a quoted variable,
# `0 * * * *` (it prefers @hourly), odd spacing, trailing blanks, a `%`, a commented-out job, no final
# newline after a comment. All of it must come back byte for byte.
USER_TABLE = (
    "# m h  dom mon dow   command   \n"
    'MAILTO="me@example.org"\n'
    "SHELL=/bin/bash\n"
    "0 * * * *    /usr/local/bin/backup --all   # nightly-ish\n"
    "\n"
    "*/5 * * * * date +\\%s >> /tmp/ticks\n"
    "# 30 2 * * * /old/job\n"
    "@reboot  /usr/bin/true\n"
    "  # the end"
)

STAND_IN = """#!/bin/sh
# A stand-in for crontab(1): the table lives in $CRONTAB_FILE; each call is noted in $CRONTAB_FILE.calls.
echo "$*" >> "$CRONTAB_FILE.calls"
if [ "$1" = "-l" ]; then
  if [ -f "$CRONTAB_FILE" ]; then cat "$CRONTAB_FILE"; else echo "no crontab for tester" >&2; exit 1; fi
elif [ -n "$CRONTAB_REFUSE" ]; then
  echo "crontab: $CRONTAB_REFUSE" >&2; exit 1
else
  cat "$1" > "$CRONTAB_FILE"
fi
"""


class Cron:
    def __init__(self, table: Path) -> None:
        self.table = table

    def read(self) -> str:
        return self.table.read_bytes().decode("utf-8")

    def writes(self) -> int:
        calls = self.table.with_name(self.table.name + ".calls")
        return sum(1 for line in calls.read_text().splitlines() if line != "-l") if calls.exists() else 0

    def ours(self) -> list[str]:
        return [line for line in self.read().splitlines() if line.endswith("# zotsync-schedule")]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's folders (config, state/logs) in a temp dir, so nothing touches the real ones."""
    for name in ("XDG_CONFIG_HOME", "XDG_STATE_HOME"):
        monkeypatch.setenv(name, str(tmp_path / "home" / name.lower()))
    # and no way to the user's own systemd: `schedule remove --systemd` must never disable a real timer
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "home" / "runtime"))
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", f"unix:path={tmp_path / 'home' / 'no-bus'}")
    monkeypatch.delenv("ZOTERO_API_KEY", raising=False)
    return tmp_path / "home"


@pytest.fixture
def cron(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, home: Path) -> Cron:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "crontab"
    script.write_text(STAND_IN, encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("CRONTAB_FILE", str(tmp_path / "table"))
    return Cron(tmp_path / "table")


def log_folder(home: Path) -> Path:
    return home / "xdg_state_home" / "zotsync" / "log"


# -- cron ---------------------------------------------------------------------------------------------
def test_install_twice_leaves_one_entry_and_the_users_lines_byte_for_byte(project, run, cron, home) -> None:
    cron.table.write_bytes(USER_TABLE.encode())
    first = run("--config", config_of(project), "schedule", "install", "--every", "1h")
    assert first.code == 0, first.err
    table = cron.read()
    assert table.startswith(USER_TABLE + "\n")  # a newline for the user's last line, as cron needs
    [entry] = cron.ours()
    assert table == USER_TABLE + "\n" + entry + "\n"
    assert entry in first.err and str(log_folder(home) / "zotsync.log") in first.err

    again = run("--config", config_of(project), "schedule", "install", "--every", "1h")
    assert again.code == 0 and "already installed" in again.err
    assert cron.read() == table and cron.writes() == 1  # the same entry: the table is not even rewritten

    every_6h = run("--config", config_of(project), "schedule", "install", "--every", "6h")
    assert every_6h.code == 0
    [replaced] = cron.ours()
    assert replaced.startswith("17 */6 * * * ")
    assert cron.read() == USER_TABLE + "\n" + replaced + "\n"  # in the old entry's place


@pytest.mark.slow
def test_the_entry_runs_this_zotsync_with_absolute_paths_quietly_and_logs(project, run, cron, home) -> None:
    assert run("-q", "--config", config_of(project), "schedule", "install", "--every", "1h").code == 0
    [entry] = cron.ours()
    fields = entry.split(" ", 5)
    assert fields[:5] == ["17", "*", "*", "*", "*"]
    command = fields[5].removesuffix(" # zotsync-schedule")
    argv = shlex.split(command)
    assert Path(argv[0]).is_absolute() and Path(argv[0]).parent == Path(sys.executable).absolute().parent
    logs = log_folder(home)
    assert argv[1:] == [
        "--config",
        str(Path(config_of(project)).resolve()),
        "-q",
        "--log-file",
        str(logs / "zotsync.log"),
        "sync",
        ">>",
        str(logs / "cron.log"),
        "2>&1",
    ]
    assert logs.is_dir()  # made at install time: cron's `>>` cannot make it
    # Run the entry the way cron does: /bin/sh, from the home folder, with a bare PATH.
    done = subprocess.run(
        ["/bin/sh", "-c", command],
        cwd=home,
        env={"PATH": "/usr/bin:/bin", "HOME": str(home)},
        timeout=120,
    )
    assert done.returncode == 0
    assert (project / "exports" / "catalog.md").read_text(encoding="utf-8").startswith("# GPU 编译与性能")
    log = (logs / "zotsync.log").read_text(encoding="utf-8")
    assert " INFO first pull → 480: " in log and " INFO exit 0 after " in log
    assert (logs / "cron.log").read_bytes() == b""  # -q: nothing but errors would land there


def test_show_and_remove_touch_only_the_entry(project, run, cron) -> None:
    cron.table.write_bytes(USER_TABLE.encode())
    none = run("--config", config_of(project), "schedule", "show")
    assert (none.code, none.out) == (0, "no zotsync entry in the crontab\n")
    assert (
        run("-q", "--config", config_of(project), "schedule", "install", "--cron", "*/20 8-18 * * 1-5").code
        == 0
    )
    [entry] = cron.ours()
    assert entry.startswith("*/20 8-18 * * 1-5 ")
    shown = run("--config", config_of(project), "schedule", "show")
    assert (shown.code, shown.out) == (0, entry + "\n")

    removed = run("--config", config_of(project), "schedule", "remove")
    assert removed.code == 0 and "removed" in removed.err
    assert cron.read() == USER_TABLE + "\n"  # only the newline cron needed stays
    again = run("--config", config_of(project), "schedule", "remove")
    assert again.code == 0 and "no zotsync entry" in again.err


def test_remove_keeps_every_other_line_exactly(project, run, cron) -> None:
    table = USER_TABLE + "\n"
    cron.table.write_bytes(table.encode())
    assert run("-q", "--config", config_of(project), "schedule", "install").code == 0
    # The user adds lines after ours; remove deletes ours alone, wherever it is.
    cron.table.write_bytes((cron.read() + "MAILTO=\n15 3 * * 0 /weekly  \n").encode())
    assert run("-q", "--config", config_of(project), "schedule", "remove").code == 0
    assert cron.read() == table + "MAILTO=\n15 3 * * 0 /weekly  \n"


def test_install_into_an_empty_crontab(project, run, cron) -> None:
    assert not cron.table.exists()  # `crontab -l` says "no crontab for tester"
    result = run("--config", config_of(project), "schedule", "install")
    assert result.code == 0, result.err
    [entry] = cron.ours()
    assert cron.read() == entry + "\n" and entry.startswith("17 * * * * ")  # the default: hourly


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--cron", "61 * * * *"), "--cron '61 * * * *' is not a cron expression"),
        (("--cron", "* * * *"), "is not a cron expression"),
        (("--cron", "@reboot"), "is not a cron expression"),
        (("--every", "7m"), "--every '7m': use minutes that divide an hour"),
        (("--every", "2d"), "--every '2d'"),
        (("--every", "1h", "--cron", "17 * * * *"), "give --every or --cron, not both"),
    ],
)
def test_a_bad_schedule_is_one_line_exit_2_and_the_table_untouched(project, run, cron, args, message) -> None:
    cron.table.write_bytes(USER_TABLE.encode())
    result = run("--config", config_of(project), "schedule", "install", *args)
    assert result.code == 2
    assert result.err.startswith("zotsync: error: ") and result.err.count("\n") == 1
    assert message in result.err
    assert cron.read() == USER_TABLE and cron.writes() == 0


def test_a_crontab_that_refuses_the_table_is_one_line_exit_1(project, run, cron, monkeypatch) -> None:
    cron.table.write_bytes(USER_TABLE.encode())
    monkeypatch.setenv("CRONTAB_REFUSE", "errors in crontab file, can't install")
    result = run("--config", config_of(project), "schedule", "install")
    assert result.code == 1 and result.err.count("\n") == 1
    assert "`crontab` refused the new table: crontab: errors in crontab file" in result.err
    assert cron.read() == USER_TABLE


def test_no_crontab_command(project, run, home, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    result = run("--config", config_of(project), "schedule", "install")
    assert result.code == 1 and result.err.count("\n") == 1
    assert "no `crontab` command on this machine: install cron, or use --systemd" in result.err
    monkeypatch.setattr(sys, "platform", "win32")
    result = run("--config", config_of(project), "schedule", "show")
    assert result.code == 1 and result.err.count("\n") == 1
    assert "Windows has no crontab: use Task Scheduler" in result.err


def test_install_needs_a_valid_config(project, run, cron) -> None:
    result = run("--config", str(project / "nowhere.yaml"), "schedule", "install")
    assert result.code == 2 and "config file not found" in result.err
    assert not cron.table.exists() and cron.writes() == 0


def test_a_key_in_the_shell_gets_a_note_that_cron_will_not_see_it(tmp_path, run, cron, monkeypatch) -> None:
    from test_web_source import write_web_config

    config = write_web_config(tmp_path, "http://127.0.0.1:9", api_key=None)
    monkeypatch.setenv("ZOTERO_API_KEY", "Sh3llK3ySh3llK3ySh3llK3y")
    result = run("--config", str(config), "schedule", "install")
    assert result.code == 0
    assert "cron does not see this shell's ZOTERO_API_KEY" in result.err
    assert "Sh3llK3y" not in result.err + cron.read()


# -- systemd ------------------------------------------------------------------------------------------
def units_of(home: Path) -> Path:
    return home / "xdg_config_home" / "systemd" / "user"


def parse_unit(path: Path) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None, strict=True)
    parser.optionxform = str  # keys are case-sensitive in systemd
    parser.read_string(path.read_text(encoding="utf-8"))
    return parser


@pytest.mark.slow
def test_systemd_install_writes_the_service_and_timer_pair(project, run, home) -> None:
    result = run("--config", config_of(project), "schedule", "install", "--systemd", "--every", "30m")
    assert result.code == 0, result.err
    folder = units_of(home)
    service, timer = folder / "zotsync.service", folder / "zotsync.timer"
    assert sorted(folder.iterdir()) == [service, timer]
    assert f"wrote {service}" in result.err and f"wrote {timer}" in result.err
    assert "systemctl --user daemon-reload && systemctl --user enable --now zotsync.timer" in result.err
    unit = parse_unit(service)
    assert unit["Service"]["Type"] == "oneshot"
    argv = shlex.split(unit["Service"]["ExecStart"])
    logs = log_folder(home)
    assert Path(argv[0]).is_absolute()
    assert argv[1:] == [
        "--config",
        str(Path(config_of(project)).resolve()),
        "-q",
        "--log-file",
        str(logs / "zotsync.log"),
        "sync",
    ]
    assert unit["Service"]["EnvironmentFile"] == f"-{home / 'xdg_config_home' / 'zotsync' / 'env'}"
    when = parse_unit(timer)
    assert when["Timer"]["OnCalendar"] == "*-*-* *:00/30:00"
    assert when["Timer"]["Persistent"] == "true"
    assert when["Install"]["WantedBy"] == "timers.target"
    # Run the service's command as systemd would (no shell, no PATH of ours): it syncs.
    done = subprocess.run(argv, env={"HOME": str(home)}, cwd=home, timeout=120, capture_output=True)
    assert done.returncode == 0, done.stderr
    assert " INFO exit 0 after " in (logs / "zotsync.log").read_text(encoding="utf-8")


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
@pytest.mark.parametrize("every", ["5m", "30m", "1h", "6h", "12h", "1d"])
def test_systemd_accepts_each_calendar_expression(every: str) -> None:
    expression = parse_every(every).on_calendar
    done = subprocess.run(
        ["systemd-analyze", "calendar", "--iterations=3", expression],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert f"Normalized form: {expression}" in done.stdout or "Next elapse:" in done.stdout


def test_every_maps_to_cron_and_calendar() -> None:
    cases = {
        "30m": ("*/30 * * * *", "*-*-* *:00/30:00"),
        "1h": ("17 * * * *", "*-*-* *:17:00"),
        "6h": ("17 */6 * * *", "*-*-* 00/6:17:00"),
        "1d": ("17 6 * * *", "*-*-* 06:17:00"),
    }
    for every, (crontab_form, calendar) in cases.items():
        assert (parse_every(every).cron, parse_every(every).on_calendar) == (crontab_form, calendar)


def test_systemd_remove_deletes_only_its_two_files(project, run, home) -> None:
    folder = units_of(home)
    folder.mkdir(parents=True)
    other = folder / "backup.timer"
    other.write_text("[Timer]\nOnCalendar=daily\n", encoding="utf-8")
    assert run("-q", "--config", config_of(project), "schedule", "install", "--systemd").code == 0
    shown = run("--config", config_of(project), "schedule", "show", "--systemd")
    assert "OnCalendar=*-*-* *:17:00" in shown.out and "ExecStart=" in shown.out
    removed = run("--config", config_of(project), "schedule", "remove", "--systemd")
    assert removed.code == 0 and "systemctl --user stop zotsync.timer" in removed.err
    assert sorted(folder.iterdir()) == [other]
    assert other.read_text(encoding="utf-8") == "[Timer]\nOnCalendar=daily\n"
    none = run("--config", config_of(project), "schedule", "show", "--systemd")
    assert none.out.startswith("no zotsync timer in ")


def test_systemd_remove_disables_the_timer_before_deleting_its_units(project, run, home) -> None:
    """An enabled timer is a link in timers.target.wants to its unit (what `systemctl --user enable`
    makes). Before: the units went and the link stayed, dangling, the timer still enabled, with the
    advice to disable it printed after. Now the timer is disabled first — through systemctl, or, when
    the user's systemd does not answer (as here), by removing that link — and the user is told so
    before the units go."""
    folder = units_of(home)
    assert run("-q", "--config", config_of(project), "schedule", "install", "--systemd").code == 0
    link = folder / "timers.target.wants" / "zotsync.timer"
    link.parent.mkdir()
    link.symlink_to(folder / "zotsync.timer")
    mine = folder / "timers.target.wants" / "backup.timer"  # another timer the user enabled: stays
    mine.symlink_to(folder / "backup.timer")
    removed = run("--config", config_of(project), "schedule", "remove", "--systemd")
    assert removed.code == 0, removed.err
    assert not link.is_symlink() and not (folder / "zotsync.timer").exists()
    assert mine.is_symlink()
    said = removed.err.splitlines()
    disabled = next(i for i, line in enumerate(said) if "disabled zotsync.timer" in line)
    assert disabled < min(i for i, line in enumerate(said) if line.startswith("removed "))
    assert "systemctl --user daemon-reload" in said[-1]


def test_systemd_never_replaces_a_unit_it_did_not_write(project, run, home) -> None:
    folder = units_of(home)
    folder.mkdir(parents=True)
    mine = folder / "zotsync.service"
    mine.write_text("[Service]\nExecStart=/my/own/zotsync\n", encoding="utf-8")
    result = run("--config", config_of(project), "schedule", "install", "--systemd")
    assert result.code == 1 and "was not written by zotsync" in result.err
    assert sorted(folder.iterdir()) == [mine] and "/my/own/" in mine.read_text(encoding="utf-8")
    assert run("-q", "--config", config_of(project), "schedule", "remove", "--systemd").code == 0
    assert mine.exists()


def test_systemd_takes_every_not_cron(project, run, home) -> None:
    result = run("--config", config_of(project), "schedule", "install", "--systemd", "--cron", "17 * * * *")
    assert result.code == 2 and "--systemd takes --every" in result.err
    assert not units_of(home).exists()


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_systemd_analyze_verifies_the_pair(project, run, home) -> None:
    assert (
        run("-q", "--config", config_of(project), "schedule", "install", "--systemd", "--every", "1d").code
        == 0
    )
    folder = units_of(home)
    done = subprocess.run(
        ["systemd-analyze", "verify", str(folder / "zotsync.service"), str(folder / "zotsync.timer")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr


def test_a_bare_schedule_prints_its_help(run) -> None:
    result = run("schedule")
    assert result.code == 0 and "install" in result.out and "github" in result.out


# -- a log folder that cannot be made: exit 1, like any file zotsync makes (tests/test_file_failures.py) --


@pytest.mark.parametrize("where", ["under a file", "under a read-only folder"])
def test_schedule_install_without_a_log_folder_is_exit_1_and_the_crontab_untouched(
    project: Path,
    run,
    cron: Cron,
    monkeypatch: pytest.MonkeyPatch,
    request,
    tmp_path: Path,
    where: str,
) -> None:
    if where == "under a file":
        state = tmp_path / "state-is-a-file"
        state.write_text("", encoding="utf-8")
        reason = f"{state} is a file, not a folder"
    else:
        state = request.getfixturevalue("read_only") / "state"
        reason = READ_ONLY_REASON
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    cron.table.write_bytes(USER_TABLE.encode())
    result = run("--config", config_of(project), "schedule", "install")
    assert result.code == 1
    line = result.err.strip()
    assert result.err.count("\n") == 1
    assert line.startswith(f"zotsync: error: cannot make the log folder {state / 'zotsync' / 'log'}: ")
    assert reason in line, line
    assert cron.read() == USER_TABLE and cron.writes() == 0


def test_a_failed_schedule_install_leaves_no_log_folder_behind(
    project: Path,
    run,
    cron: Cron,
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CRONTAB_REFUSE", "errors in crontab file, can't install")
    result = run("--config", config_of(project), "schedule", "install")
    assert result.code == 1
    assert not (home / "xdg_state_home").exists()


# -- a path a job cannot hold: a line break would end the crontab line, the unit's setting ---------------
# A folder name that, written into a crontab line as it stands, starts a job of its own.
INJECTED = "reading\n* * * * * touch /tmp/zotsync-injected #"


def hostile_config(project: Path, folder_name: str) -> Path:
    """The bundled config, unchanged, in a folder whose name holds `folder_name` (it reads ../seeds)."""
    hostile = project / folder_name
    shutil.copytree(project / "config", hostile / "config")
    shutil.copytree(project / "seeds", hostile / "seeds")
    return hostile / "config" / "zotsync.yaml"


@pytest.mark.parametrize(
    ("where", "name"),
    [
        ("config file", INJECTED),
        ("config file", "carriage\rreturn"),
        ("config file", "escape\x1b[2J"),
        ("config file", "bidi\u202eoverride"),
        ("config file", "latin-1 caf\udce9"),  # the byte 0xe9 of a Latin-1 folder name, as Python holds it
        ("log file", INJECTED),
        ("zotsync command", INJECTED),
    ],
)
def test_a_control_character_in_a_path_of_the_cron_entry_is_refused_and_nothing_written(
    project: Path, run, cron: Cron, home: Path, monkeypatch: pytest.MonkeyPatch, where: str, name: str
) -> None:
    config = config_of(project)
    if where == "config file":
        config = str(hostile_config(project, name))
    elif where == "log file":
        monkeypatch.setenv("XDG_STATE_HOME", str(project / name))
    else:  # an interpreter in such a folder: the entry would run `…/python -m zotsync`
        monkeypatch.setattr(sys, "executable", str(project / name / "bin" / "python3"))
    cron.table.write_bytes(USER_TABLE.encode())
    result = run("--config", config, "schedule", "install", "--every", "1h")
    assert result.code == 2, result.err
    assert result.err.count("\n") == 1 and result.err.startswith(f"zotsync: error: the {where} ")
    assert "holds a line break, another control character" in result.err
    assert cron.read() == USER_TABLE and cron.writes() == 0
    assert not (home / "xdg_state_home").exists() and not (project / name).is_file()
    if where == "log file":
        assert not (project / name).exists()  # not even the log folder was made


@pytest.mark.parametrize("name", [INJECTED, "tab\tand\x7fdel"])
def test_a_control_character_in_a_path_of_the_systemd_unit_is_refused_and_nothing_written(
    project: Path, run, home: Path, name: str
) -> None:
    result = run("--config", str(hostile_config(project, name)), "schedule", "install", "--systemd")
    assert result.code == 2, result.err
    assert result.err.count("\n") == 1 and result.err.startswith("zotsync: error: the config file ")
    assert not units_of(home).exists() and not (home / "xdg_state_home").exists()


def test_an_environment_file_path_with_a_line_break_is_refused_for_systemd(
    project: Path, run, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config\nExecStartPre=/bin/sh -c evil"))
    result = run("--config", config_of(project), "schedule", "install", "--systemd")
    assert result.code == 2 and result.err.startswith("zotsync: error: the environment file ")
    assert (
        not (home / "config\nExecStartPre=/bin/sh -c evil").exists()
        and not (home / "xdg_state_home").exists()
    )


# -- the user's crontab as bytes: CRLF lines and bytes that are not UTF-8 come back as they were ---------
def test_crlf_lines_stay_crlf_after_install_and_remove(project, run, cron: Cron) -> None:
    table = b'MAILTO="me@example.org"\r\n0 * * * *  /usr/local/bin/backup --all\r\n# the end\r\n'
    cron.table.write_bytes(table)
    assert run("-q", "--config", config_of(project), "schedule", "install").code == 0
    installed = cron.table.read_bytes()
    [entry] = cron.ours()
    assert installed == table + entry.encode() + b"\n"
    shown = run("--config", config_of(project), "schedule", "show")
    assert (shown.code, shown.out) == (0, entry + "\n")
    # an entry of ours written with CRLF (the user's editor) is replaced in place, CRLF kept
    cron.table.write_bytes(table + entry.encode() + b"\r\n" + b"15 3 * * 0 /weekly\r\n")
    assert run("-q", "--config", config_of(project), "schedule", "install", "--every", "6h").code == 0
    [replaced] = cron.ours()
    assert replaced.startswith("17 */6 * * * ")
    assert cron.table.read_bytes() == table + replaced.encode() + b"\r\n" + b"15 3 * * 0 /weekly\r\n"
    assert run("-q", "--config", config_of(project), "schedule", "remove").code == 0
    assert cron.table.read_bytes() == table + b"15 3 * * 0 /weekly\r\n"


# Latin-1: a comment, a variable and a job's path, as an editor in a Latin-1 locale saves them.
LATIN_1_TABLE = b"# caf\xe9 cr\xe8me\nMAILTO=ren\xe9@example.org\n0 3 * * * /home/ren\xe9/backup\n"


def test_a_crontab_with_latin_1_bytes_keeps_them_through_install_show_and_remove(project, run, cron) -> None:
    cron.table.write_bytes(LATIN_1_TABLE)
    installed = run("--config", config_of(project), "schedule", "install")
    assert installed.code == 0, installed.err
    table = cron.table.read_bytes()
    assert table.startswith(LATIN_1_TABLE) and table.count(b"\n") == 4
    [entry] = [line for line in table.decode("latin-1").splitlines() if line.endswith("# zotsync-schedule")]
    shown = run("--config", config_of(project), "schedule", "show")
    assert (shown.code, shown.out) == (0, entry + "\n")
    removed = run("--config", config_of(project), "schedule", "remove")
    assert removed.code == 0 and "removed the zotsync entry" in removed.err
    assert cron.table.read_bytes() == LATIN_1_TABLE


@pytest.mark.parametrize("command", [("install",), ("show",), ("remove",)])
def test_a_crontab_that_is_not_text_is_refused_with_one_line(project, run, cron, command) -> None:
    table = b"MAILTO=me@example.org\n0 3 * * * /backup\x00\n"
    cron.table.write_bytes(table)
    result = run("--config", config_of(project), "schedule", *command)
    assert result.code == 1 and result.err.count("\n") == 1
    assert result.err == (
        "zotsync: error: the crontab holds a NUL byte (line 2): it is not a text table zotsync can edit "
        "safely; fix it with `crontab -e`\n"
    )
    assert cron.table.read_bytes() == table and cron.writes() == 0


@pytest.mark.slow
def test_lines_python_crontab_cannot_parse_are_kept_and_print_nothing(project, run, cron: Cron) -> None:
    table = b"bb * * * * /typo\n@every 5m /not-cron-syntax\n"
    cron.table.write_bytes(table)
    # In its own process, as a user runs it: pytest's own log handlers would hide what reaches stderr.
    shown = subprocess.run(
        [sys.executable, "-m", "zotsync", "--config", config_of(project), "schedule", "show"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (shown.returncode, shown.stdout, shown.stderr) == (0, "no zotsync entry in the crontab\n", "")
    assert run("-q", "--config", config_of(project), "schedule", "install").code == 0
    [entry] = cron.ours()
    assert cron.table.read_bytes() == table + entry.encode() + b"\n"
    removed = run("-q", "--config", config_of(project), "schedule", "remove")
    assert (removed.code, removed.err) == (0, "")
    assert cron.table.read_bytes() == table
