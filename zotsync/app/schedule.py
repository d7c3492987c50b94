"""`zotsync schedule install|show|remove|github`: what each command does, over cron, systemd, github.
`say` tells the user one line (the CLI: stderr unless -q, and the log file)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from ..config import Config
from ..errors import ConfigError, FileError
from ..folders import cause, make_folders, remove_folders
from ..outputs import write_atomically
from ..schedule import cron, github, job_argv, log_dir, parse_every, schedule_of, systemd

Say = Callable[[str], None]


def install(
    config: Config, say: Say, every: str | None, cron_expression: str | None, systemd_timer: bool
) -> None:
    """`config`, loaded: a broken config fails now, not at the first scheduled run."""
    logs = log_dir()
    argv = job_argv(config.path, logs / "zotsync.log")  # a path no job can hold is refused before any write
    try:
        made = make_folders(logs)  # cron's `>>` cannot make the folder
    except OSError as exc:  # a file zotsync makes: a run-time failure (exit 1), not a usage error
        raise FileError(f"cannot make the log folder {logs}: {cause(exc, logs)}") from None
    try:
        _install(say, argv, config, logs, every, cron_expression, systemd_timer)
    except BaseException:
        remove_folders(made)  # a failed install leaves no trace, not even the log folder
        raise


def _install(
    say: Say,
    argv: list[str],
    config: Config,
    logs: Path,
    every: str | None,
    cron_expression: str | None,
    systemd_timer: bool,
) -> None:
    key_from_shell = config.source.type == "web" and bool(os.environ.get("ZOTERO_API_KEY"))
    if systemd_timer:
        if cron_expression:
            raise ConfigError("--systemd takes --every (a timer uses OnCalendar=, not a cron expression)")
        interval = parse_every(every or "1h")
        for path in systemd.install(systemd.unit_dir(), systemd.units(interval, argv)):
            say(f"wrote {path}")
        say(f"runs every {interval}; log: {logs / 'zotsync.log'} (and `journalctl --user -u zotsync`)")
        if key_from_shell:
            say(
                "note: the timer does not see this shell's ZOTERO_API_KEY: put ZOTERO_API_KEY=… in "
                f"{systemd.environment_file()}"
            )
        say(f"enable it with: {systemd.ENABLE}")
        return
    expression, words = schedule_of(every, cron_expression)
    line = cron.entry(expression, argv, logs / "cron.log")
    table = cron.read_table()
    updated = cron.with_entry(table, line)
    if updated != table:
        cron.write_table(updated)
    say(f"{'installed' if updated != table else 'already installed'} in the crontab, {words}:")
    say(line)
    say(f"log: {logs / 'zotsync.log'}; the job's own output (errors only): {logs / 'cron.log'}")
    if key_from_shell:
        say(
            "note: cron does not see this shell's ZOTERO_API_KEY: put api_key in the config, or a "
            "ZOTERO_API_KEY=… line above the entry (`crontab -e`)"
        )


def show(systemd_timer: bool) -> str:
    """The installed schedule as text, or a sentence saying there is none."""
    if systemd_timer:
        paths = systemd.installed(systemd.unit_dir())
        if not paths:
            return f"no zotsync timer in {systemd.unit_dir()}"
        return "\n".join(f"# {path}\n{path.read_text(encoding='utf-8')}" for path in paths)
    lines = cron.find(cron.read_table())
    return "\n".join(lines) if lines else "no zotsync entry in the crontab"


def remove(say: Say, systemd_timer: bool) -> None:
    if systemd_timer:
        folder = systemd.unit_dir()
        if not systemd.installed(folder):
            say(f"no zotsync timer in {folder}")
            return
        # Disabled first: deleting the units of an enabled timer leaves it enabled, its link dangling.
        if systemd.disable(folder):
            say("stopped and disabled zotsync.timer")
        else:
            say(
                "systemd did not answer: disabled zotsync.timer by removing its link in "
                f"{folder / systemd.WANTS}; if it runs now, stop it with: {systemd.STOP}"
            )
        for path in systemd.remove(folder):
            say(f"removed {path}")
        if not systemd.reload():
            say("then: systemctl --user daemon-reload")
        return
    table = cron.read_table()
    kept = cron.without(table)
    if kept == table:
        say("no zotsync entry in the crontab")
        return
    cron.write_table(kept)
    say("removed the zotsync entry from the crontab")


def write_workflow(
    config: Config,
    say: Say,
    every: str | None,
    cron_expression: str | None,
    output: Path,
    force: bool,
    install_spec: str | None,
    pages: bool = False,
) -> None:
    expression, words = schedule_of(every, cron_expression)
    text = github.workflow(config, Path.cwd(), expression, words, install_spec, pages)
    if output.exists() and not output.is_dir() and not force:  # a folder: write_atomically refuses it
        raise ConfigError(f"{output} exists: --force replaces it")
    write_atomically(output, text)
    say(f"wrote {output} ({words}, in UTC)")
    if install_spec is None:
        spec = github.default_install(Path.cwd())
        say(f"the runner installs: pip install {spec} (--install SPEC chooses another)")
    if pages:
        say(
            "next: add the repository secret ZOTERO_API_KEY, set Settings → Pages → Source to GitHub "
            "Actions, commit and push the workflow, then run it once from the Actions tab "
            "(docs/publishing.md)"
        )
        return
    say(
        "next: add the repository secret ZOTERO_API_KEY, commit and push the workflow, then run it "
        "once from the Actions tab (docs/scheduling.md)"
    )
