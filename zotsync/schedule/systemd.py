"""A systemd user service + timer pair: zotsync.service runs one sync, zotsync.timer starts it."""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from ..errors import ZotsyncError
from ..outputs import write_atomically
from . import Every, fill, fit_for_a_job, template

NAMES = ("zotsync.service", "zotsync.timer")
MARK = "# Written by `zotsync schedule install --systemd`"  # the files' first line: they are ours
ENABLE = "systemctl --user daemon-reload && systemctl --user enable --now zotsync.timer"
DISABLE = "systemctl --user disable --now zotsync.timer"
STOP = "systemctl --user stop zotsync.timer"
WANTS = "timers.target.wants"  # where `enable` links the timer (its [Install] WantedBy=timers.target)


class SystemdError(ZotsyncError):
    """A unit file zotsync did not write is in the way, or the folder cannot be written."""


def unit_dir() -> Path:
    """Where systemd looks for the user's own units."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "systemd" / "user"


def environment_file() -> Path:
    return platformdirs.user_config_path("zotsync") / "env"


@dataclass(frozen=True, slots=True)
class Units:
    service: str
    timer: str


def units(every: Every, argv: list[str]) -> Units:
    service = fill(
        template("zotsync.service"),
        environment_file=quote(fit_for_a_job("environment file", environment_file())),
        command=" ".join(quote(fit_for_a_job("command's word", arg)) for arg in argv),
    )
    timer = fill(template("zotsync.timer"), every=f"every {every}", when=f"OnCalendar={every.on_calendar}")
    return Units(service, timer)


def quote(arg: str) -> str:
    """One word of a unit file: `%` and `$` would be expanded by systemd, and blanks split words."""
    arg = arg.replace("%", "%%").replace("$", "$$")
    if re.fullmatch(r"[\w/.:+@=,-]+", arg):
        return arg
    return '"' + arg.replace("\\", "\\\\").replace('"', '\\"') + '"'


def ours(path: Path) -> bool:
    try:
        return path.read_text(encoding="utf-8").startswith(MARK)
    except (OSError, UnicodeDecodeError):
        return False


def install(folder: Path, pair: Units) -> list[Path]:
    paths = [folder / name for name in NAMES]
    for path in paths:  # check both before writing either
        if path.exists() and not ours(path):
            raise SystemdError(f"{path} exists and was not written by zotsync: move it away first")
    for path, text in zip(paths, (pair.service, pair.timer), strict=True):
        write_atomically(path, text)
    return paths


def disable(folder: Path) -> bool:
    """Stop and disable our timer before its files go, so that no enabled timer is left behind with a
    dangling link: through systemctl when the user's systemd answers, else by removing the link `enable`
    made (what `disable` does on disk). Whether systemd itself was reached."""
    reached = _systemctl("disable", "--now", "zotsync.timer")
    link = folder / WANTS / "zotsync.timer"
    if link.is_symlink() and os.path.realpath(link) == os.path.realpath(folder / "zotsync.timer"):
        link.unlink()
    return reached


def reload() -> bool:
    """`systemctl --user daemon-reload`: systemd forgets the removed units."""
    return _systemctl("daemon-reload")


def _systemctl(*args: str) -> bool:
    try:
        done = subprocess.run(["systemctl", "--user", *args], capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError):  # no systemctl, or it hangs
        return False
    return done.returncode == 0


def remove(folder: Path) -> list[Path]:
    """Delete our two files (only if they are ours); the paths deleted."""
    removed = []
    for path in (folder / name for name in NAMES):
        if path.exists() and ours(path):
            path.unlink()
            removed.append(path)
    return removed


def installed(folder: Path) -> list[Path]:
    return [folder / name for name in NAMES if ours(folder / name)]
