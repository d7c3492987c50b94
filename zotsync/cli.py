"""The command line: parse options, load config, call the app, map errors to exit codes. No logic."""

from __future__ import annotations

import json
import logging
import os
import sys
import traceback
from pathlib import Path
from typing import Any

import click

from . import __version__, app
from .config import Config, load_config, resolve_path
from .errors import ZotsyncError
from .export import write_atomically
from .secrets import RedactFilter, redact, register

log = logging.getLogger("zotsync")


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
            register(self._config.source.api_key)
        return self._config

    def say(self, message: str) -> None:
        if not self.quiet:
            click.echo(message, err=True)

    def say_written(self, path: Path, wrote: bool) -> None:
        self.say(f"{'wrote' if wrote else 'unchanged'} {path}")


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
@click.version_option(__version__, prog_name="zotsync")
@click.pass_context
def cli(ctx: click.Context, config_path: str | None, verbose: bool, quiet: bool) -> None:
    """Keep a curated reading list in sync with a Zotero library."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("zotsync: %(message)s"))
    handler.addFilter(RedactFilter())
    log.handlers = [handler]
    log.setLevel(logging.DEBUG if verbose else logging.WARNING if quiet else logging.INFO)
    ctx.obj = _State(config_path, verbose, quiet)


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
@pass_state
def sync_command(state: _State) -> None:
    """Pull, then export every format in exports.formats (safe to run from cron)."""
    result = app.run_sync(state.config, progress=not state.quiet)
    state.say(result.pull.summary())
    for path, wrote in result.written:
        state.say_written(path, wrote)


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


def format_status(report: dict[str, Any]) -> str:
    lib, cat = report["library"], report["catalogue"]
    lines = [
        f"library: version {lib['version']}, last sync {lib['last_sync_at']}; {lib['items']} items "
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
    register(os.environ.get("ZOTERO_API_KEY"))
    try:
        result = cli.main(args=args, prog_name="zotsync", standalone_mode=False)
        return result if isinstance(result, int) else 0
    except ZotsyncError as exc:
        return _fail(str(exc), exc.exit_code, verbose)
    except click.exceptions.Abort:
        return _fail("interrupted", 130, False)
    except click.ClickException as exc:
        return _fail(exc.format_message(), exc.exit_code, False)
    except Exception as exc:  # a bug: still one line, the traceback only when asked for
        return _fail(f"unexpected {type(exc).__name__}: {exc}", 1, verbose)


def _fail(message: str, code: int, verbose: bool) -> int:
    if verbose:
        click.echo(redact(traceback.format_exc()), err=True, nl=False)
    click.echo(redact(f"zotsync: error: {message}"), err=True)
    return code
