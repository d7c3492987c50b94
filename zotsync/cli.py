"""The command line: parse options, load config, call the app, map errors to exit codes. No logic."""

from __future__ import annotations

import json
import logging
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import click

from . import __version__, app, runlog
from .commands import snapshot
from .config import Config, load_config, resolve_path
from .errors import ZotsyncError
from .export import write_atomically

log = logging.getLogger("zotsync")


# Secrets seen in this run: whatever zotsync prints passes through `redact`, so an API key that slipped
# into an exception or a log line (belt and braces: none should) is still not shown.
_secrets: set[str] = set()


def redact(text: str) -> str:
    for secret in _secrets:
        text = text.replace(secret, "***")
    return text


class _Redact(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = redact(record.getMessage()), ()
        return True


class _State:
    def __init__(self, config_path: str | None, verbose: bool, quiet: bool) -> None:
        self.config_path = config_path
        self.verbose = verbose
        self.quiet = quiet
        self._config: Config | None = None

    @property
    def config(self) -> Config:
        if self._config is None:
            self._config = load_config(resolve_path(self.config_path))
            runlog.events.info("config %s", self._config.path)
            if self._config.source.api_key:
                _secrets.add(self._config.source.api_key)
        return self._config

    def say(self, message: str, log_only: bool = False) -> None:
        runlog.events.info(message)  # reaches a --log-file, if there is one, even under -q
        if not (self.quiet or log_only):
            click.echo(message, err=True)

    def say_written(self, path: Path, wrote: bool, log_only: bool = False) -> None:
        self.say(f"{'wrote' if wrote else 'unchanged'} {path}", log_only)


pass_state = click.make_pass_decorator(_State)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--config",
    "config_path",
    metavar="PATH",
    help="Config file (default: $ZOTSYNC_CONFIG, else ./config/zotsync.yaml).",
)
@click.option("-v", "--verbose", is_flag=True, help="Log each step, and show tracebacks on errors.")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing but errors.")
@click.option(
    "--log-file",
    metavar="PATH",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also log this run to PATH (rotating, timestamped, even with -q).",
)
@click.version_option(__version__, prog_name="zotsync")
@click.pass_context
def cli(
    ctx: click.Context, config_path: str | None, verbose: bool, quiet: bool, log_file: Path | None
) -> None:
    """Keep a curated reading list in sync with a Zotero library."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("zotsync: %(message)s"))
    handler.addFilter(_Redact())
    handler.setLevel(logging.DEBUG if verbose else logging.WARNING if quiet else logging.INFO)
    log.handlers = [handler]
    log.setLevel(logging.DEBUG if verbose else logging.INFO)  # the handlers choose; a log file sees INFO
    ctx.obj = _State(config_path, verbose, quiet)
    if log_file is not None:
        runlog.open_log(log_file, logging.DEBUG if verbose else logging.INFO, _Redact())
        runlog.events.info("zotsync %s %s", __version__, ctx.invoked_subcommand or "")


@cli.command("pull")
@click.option("--full", is_flag=True, help="Re-read the whole library and drop what no longer exists.")
@pass_state
def pull_command(state: _State, full: bool) -> None:
    """Bring the local store up to date with the Zotero source."""
    state.say(app.run_pull(state.config, full=full, progress=not state.quiet).summary())


@cli.command("export")
@click.option("--format", "fmt", type=click.Choice(["md", "csv"]), required=True, help="Output format.")
@click.option(
    "--output", metavar="PATH|-", help="Where to write (default: <exports.dir>/catalog.<ext>; - is stdout)."
)
@pass_state
def export_command(state: _State, fmt: str, output: str | None) -> None:
    """Write the merged catalogue as Markdown or CSV."""
    text = app.render(state.config, fmt)
    if output == "-":
        click.echo(text, nl=False)
        return
    path = app.default_output(state.config, fmt) if output is None else Path(output)
    state.say_written(path, write_atomically(path, text))


@cli.command("sync")
@click.option("--full", is_flag=True, help="Re-read the whole library and drop what no longer exists.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object: what changed, requests, files.")
@click.option("--exit-code", is_flag=True, help="Exit 3 when an export changed, 0 when nothing did.")
@pass_state
def sync_command(state: _State, full: bool, as_json: bool, exit_code: bool) -> int:
    """Pull, then export every format in exports.formats (safe to run from cron)."""
    started = time.monotonic()
    result = app.run_sync(state.config, progress=not (state.quiet or as_json), full=full)
    if as_json:  # stdout holds the JSON alone; the human lines would only repeat it (on stderr)
        click.echo(json.dumps(result.summary(time.monotonic() - started), ensure_ascii=False))
    state.say(result.pull.summary(), log_only=as_json)
    for path, wrote in result.written:
        state.say_written(path, wrote, log_only=as_json)
    return 3 if exit_code and result.changed else 0


@cli.command("status")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@pass_state
def status_command(state: _State, fmt: str) -> None:
    """Counts, last sync, and the reconciliation problems a curator should look at."""
    report = app.status(state.config)
    if fmt == "json":
        click.echo(json.dumps(report, ensure_ascii=False, indent=2))
    else:
        click.echo(format_status(report))


@cli.command("pin")
@click.argument("target", metavar="TITLE_OR_KEY")
@click.argument("zotero_key", metavar="ZOTERO_KEY")
@click.option("--force", is_flag=True, help="Replace another zotero_key the entry already has.")
@pass_state
def pin_command(state: _State, target: str, zotero_key: str, force: bool) -> None:
    """Record that a curated entry is the Zotero item ZOTERO_KEY: adds `zotero_key` to the entry in the
    catalogue YAML (every placement of it), keeping comments and layout. TITLE_OR_KEY is the entry's
    title, or the key it is pinned to now."""
    for message in app.pin(state.config, target, zotero_key, force=force).messages:
        state.say(message)


@cli.command("adopt")
@click.argument("zotero_key", metavar="ZOTERO_KEY")
@click.option("--category", required=True, metavar="NAME", help="The catalogue category to add it to.")
@click.option("--new-category", is_flag=True, help="Add the category at the end if the catalogue lacks it.")
@pass_state
def adopt_command(state: _State, zotero_key: str, category: str, new_category: bool) -> None:
    """Add the Zotero item ZOTERO_KEY (say, one `status` lists in the inbox) to the catalogue YAML as a
    new entry at the end of a category, keeping comments and layout."""
    for message in app.adopt(state.config, zotero_key, category, new_category=new_category).messages:
        state.say(message)


@cli.command("snapshot")
@click.option("--output", metavar="FILE|-", required=True, help="Where to write the snapshot; - is stdout.")
@pass_state
def snapshot_command(state: _State, output: str) -> None:
    """Write the store's library as a snapshot file (the Zotero Web API's JSON), which
    `source.type: snapshot` reads back into the same store and exports."""
    text = snapshot.render(state.config)
    if output == "-":
        click.echo(text, nl=False)
        return
    state.say_written(Path(output), write_atomically(Path(output), text))


def format_status(report: dict[str, Any]) -> str:
    lib, cat = report["library"], report["catalogue"]
    name = f' "{lib["name"]}"' if lib["name"] else ""
    lines = [
        f"library: {lib['type']} {lib['id'] or '(local)'}{name} from {lib['source']}, "
        f"version {lib['version']}, last sync {lib['last_sync_at']}; {lib['items']} items "
        f"({lib['trashed']} in the trash), {lib['collections']} collections",
        f"catalogue: {cat['entries']} entries in {cat['categories']} categories; read {cat['read']}, "
        f"unread {cat['unread']}; {cat['matched']} of the curated papers matched in Zotero",
    ]
    sections = (
        ("unmatched curated entries", report["unmatched"], _unmatched),
        (
            "ambiguous matches",
            report["ambiguous"],
            lambda a: f"{' | '.join(a['titles'])} ↔ {', '.join(a['zotero_keys'])} (by {a['rule']})",
        ),
        (
            "duplicates in Zotero",
            report["duplicates"],
            lambda d: f"{d['title']}: {', '.join(d['zotero_keys'])} ({d['reason']})",
        ),
        (
            "status disagreements",
            report["status_conflicts"],
            lambda s: f"{s['title']}: curated {s['curated']}, Zotero {s['zotero']}",
        ),
        ("inbox items not yet curated", report["inbox"], lambda i: f"{i['title']} [{i['zotero_key']}]"),
    )
    for heading, rows, show in sections:
        lines.append(f"{heading}: {len(rows)}")
        lines += [f"  - {show(row)}" for row in rows]
    return "\n".join(lines)


def _unmatched(entry: dict[str, Any]) -> str:
    nearest = "; ".join(f"{c['title']} [{c['zotero_key']}] {c['score']}" for c in entry["nearest"])
    return f"{entry['title']} ({entry['reason']})" + (f" — nearest: {nearest}" if nearest else "")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    verbose = "-v" in args or "--verbose" in args
    if os.environ.get("ZOTERO_API_KEY"):
        _secrets.add(os.environ["ZOTERO_API_KEY"])
    try:
        result = cli.main(args=args, prog_name="zotsync", standalone_mode=False)
        code = result if isinstance(result, int) else 0
    except ZotsyncError as exc:
        code = _fail(str(exc), exc.exit_code, verbose)
    except click.exceptions.Abort:
        code = _fail("interrupted", 130, False)
    except click.ClickException as exc:
        code = _fail(exc.format_message(), exc.exit_code, False)
    except Exception as exc:  # a bug: still one line, the traceback only when asked for
        code = _fail(f"unexpected {type(exc).__name__}: {exc}", 1, verbose)
    runlog.close_log(code)
    return code


def _fail(message: str, code: int, verbose: bool) -> int:
    if verbose:
        click.echo(redact(traceback.format_exc()), err=True, nl=False)
    click.echo(redact(f"zotsync: error: {message}"), err=True)
    runlog.events.error(message)  # the file handler masks secrets too
    return code
