"""Schedules a user installs in one command: a crontab entry, a systemd user timer, a GitHub workflow.

What they share lives here: the intervals `--every` accepts, cron expressions checked by python-crontab,
and the command line a scheduled run executes (absolute paths, since cron and systemd start it from
elsewhere with a bare environment)."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import platformdirs

from ..errors import ConfigError
from ..text import UNSAFE, one_line

# Past the hour, not on it, when every other job on the machine (and GitHub's scheduler) starts.
MINUTE = 17
DAILY_HOUR = 6


@dataclass(frozen=True, slots=True)
class Every:
    """`--every 30m|1h|6h|1d`: minutes that divide an hour, hours that divide a day, or one day, so the
    runs fall at the same times every day."""

    amount: int
    unit: str  # m | h | d

    def __str__(self) -> str:
        return f"{self.amount}{self.unit}"

    @property
    def cron(self) -> str:
        if self.unit == "m":
            return f"*/{self.amount} * * * *"
        if self.unit == "h":
            return f"{MINUTE} {'*' if self.amount == 1 else f'*/{self.amount}'} * * *"
        return f"{MINUTE} {DAILY_HOUR} * * *"

    @property
    def on_calendar(self) -> str:
        """The same times as a systemd OnCalendar= expression."""
        if self.unit == "m":
            return f"*-*-* *:00/{self.amount}:00"
        if self.unit == "h":
            return f"*-*-* {'*' if self.amount == 1 else f'00/{self.amount}'}:{MINUTE:02}:00"
        return f"*-*-* {DAILY_HOUR:02}:{MINUTE:02}:00"


def parse_every(text: str) -> Every:
    found = re.fullmatch(r"\s*(\d+)\s*([mhd])\s*", text.lower())
    amount, unit = (int(found[1]), found[2]) if found else (0, "")
    if (
        (unit == "m" and 5 <= amount < 60 and 60 % amount == 0)
        or (unit == "h" and 1 <= amount < 24 and 24 % amount == 0)
        or (unit == "d" and amount == 1)
    ):
        return Every(amount, unit)
    raise ConfigError(
        f"--every {text!r}: use minutes that divide an hour (5m … 30m), hours that divide a day "
        "(1h, 2h, 3h, 4h, 6h, 8h, 12h) or 1d; --cron EXPR for anything else"
    )


def check_cron(expression: str) -> str:
    """A five-field cron expression (minute hour day month weekday), as cron and GitHub read it."""
    from crontab import CronSlices  # python-crontab: imported here, only the schedule commands need it

    fields = expression.split()
    if len(fields) != 5 or not CronSlices.is_valid(" ".join(fields)):
        raise ConfigError(
            f"--cron {expression!r} is not a cron expression: five fields, minute hour day month "
            "weekday, e.g. '17 * * * *'"
        )
    return " ".join(fields)


def schedule_of(every: str | None, cron: str | None) -> tuple[str, str]:
    """(cron expression, words for it) from `--every` or `--cron`, at most one of them; hourly when
    neither is given."""
    if every and cron:
        raise ConfigError("give --every or --cron, not both")
    if cron:
        expression = check_cron(cron)
        return expression, f"at '{expression}'"
    interval = parse_every(every or "1h")
    return interval.cron, f"every {interval}"


def executable() -> list[str]:
    """How to start this very zotsync again: the console script beside the interpreter (a venv's
    bin/ or Scripts/), else the interpreter with `-m zotsync`. Not resolved: a venv's python is a link."""
    python = Path(sys.executable).absolute()
    script = python.with_name("zotsync.exe" if sys.platform == "win32" else "zotsync")
    return [str(script)] if script.is_file() else [str(python), "-m", "zotsync"]


def job_argv(config: Path, log_file: Path) -> list[str]:
    return [
        *(fit_for_a_job("zotsync command", part) for part in executable()),
        "--config",
        fit_for_a_job("config file", config.resolve()),
        "-q",
        "--log-file",
        fit_for_a_job("log file", log_file),
        "sync",
    ]


def fit_for_a_job(what: str, value: str | Path) -> str:
    """`value` as a crontab line, a unit file or a workflow may hold it. A line break ends a crontab line
    (what follows is a job of its own: `* * * * * touch …`), a unit file's setting or a YAML scalar; the
    other control characters and bidi overrides have no place in a path a job runs, and unit files and
    workflows are UTF-8: refused, exit 2, before anything is written."""
    text = str(value)
    if UNSAFE.search(text) or not is_utf8(text):
        shown = one_line(text.encode("utf-8", "backslashreplace").decode("utf-8"))
        raise ConfigError(
            f"the {what} {shown} holds a line break, another control character or a byte that is not "
            "UTF-8, which a crontab line, a unit file or a workflow cannot carry safely; nothing was written"
        )
    return text


def is_utf8(text: str) -> bool:
    """False for a path whose bytes are not UTF-8 (Python holds them as lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def log_dir() -> Path:
    """Where scheduled runs log: the user log folder each OS expects (~/.local/state/zotsync/log on
    Linux, ~/Library/Logs/zotsync on macOS)."""
    return platformdirs.user_log_path("zotsync")


def template(name: str) -> str:
    return resources.files(__package__).joinpath("templates", name).read_text(encoding="utf-8")


def fill(text: str, **values: str) -> str:
    for name, value in values.items():
        text = text.replace(f"@{name.upper()}@", value)
    return text
