"""The command line: parse options, find and load the config, call a use case, map errors to exit codes.

No logic lives here. Use-case modules are imported inside the command that runs them, so `zotsync
--help` and `--version` start without pandas, pyzotero or the store (bench/bench_startup.py).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from . import __version__, runlog
from .errors import ZotsyncError
from .text import json_safe, one_line, one_line_each, printable

if TYPE_CHECKING:
    from .config import Config

log = logging.getLogger("zotsync")


# Secrets seen in this run: whatever zotsync prints passes through `redact`, so an API key that slipped
# into an exception or a log line (belt and braces: none should) is still not shown.
_secrets: set[str] = set()


def redact(text: str) -> str:
    for secret in _secrets:
        text = text.replace(secret, "***")
    return text


class _Redact(logging.Filter):
    """Log lines, like every message, are one line with no secret and no terminal control in them."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = redact(one_line(record.getMessage())), ()
        return True


class _State:
    """The global options (given before or after the command) and the config they lead to."""

    def __init__(self, config_path: str | None, verbose: bool, quiet: bool) -> None:
        self.config_path = config_path
        self.verbose = verbose
        self.quiet = quiet
        self._config: Config | None = None
        self._stderr = logging.StreamHandler(sys.stderr)
        self._stderr.setFormatter(logging.Formatter("zotsync: %(message)s"))
        self._stderr.addFilter(_Redact())
        log.handlers = [self._stderr]
        self.set_levels()

    def absorb(self, params: dict[str, Any]) -> None:
        """Take the global options a subcommand was given (`zotsync sync -q`) out of its params."""
        config_path, verbose, quiet = (params.pop(name) for name in ("config_path", "verbose", "quiet"))
        self.config_path = config_path or self.config_path
        self.verbose, self.quiet = self.verbose or verbose, self.quiet or quiet
        self.set_levels()

    def set_levels(self) -> None:
        self._stderr.setLevel(
            logging.DEBUG if self.verbose else logging.WARNING if self.quiet else logging.INFO
        )
        log.setLevel(
            logging.DEBUG if self.verbose else logging.INFO
        )  # the handlers choose; a log file sees INFO

    @property
    def config(self) -> Config:
        if self._config is None:
            from .config import find_config, load_config

            self._config = load_config(find_config(self.config_path))
            runlog.events.info("config %s", self._config.path)
            if self._config.source.api_key:
                _secrets.add(self._config.source.api_key)
        return self._config

    def say(self, message: str, log_only: bool = False) -> None:
        message = one_line(message)  # a title with a newline or an ESC must not shape the output
        runlog.events.info(message)  # reaches a --log-file, if there is one, even under -q
        if not (self.quiet or log_only):
            click.echo(message, err=True)

    def say_written(self, path: Path, wrote: bool, log_only: bool = False) -> None:
        self.say(f"{'wrote' if wrote else 'unchanged'} {path}", log_only)


pass_state = click.make_pass_decorator(_State)


def _global_options() -> list[click.Option]:
    return [
        click.Option(
            ["--config", "config_path"],
            metavar="PATH",
            help="Config file (else $ZOTSYNC_CONFIG, ./zotsync.yaml, ./config/zotsync.yaml, the user's "
            "config folder).",
        ),
        click.Option(["-v", "--verbose"], is_flag=True, help="Log each step, and show tracebacks on errors."),
        click.Option(["-q", "--quiet"], is_flag=True, help="Print nothing but errors."),
    ]


class _Command(click.Command):
    """A command that also takes the global options after its name: `zotsync sync -q --config X`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.params += _global_options()

    def invoke(self, ctx: click.Context) -> Any:
        ctx.ensure_object(_State).absorb(ctx.params)
        return super().invoke(ctx)


class _Group(click.Group):
    """Every command (and the commands of every subgroup) takes the global options."""

    command_class = _Command
    group_class = type  # subgroups are _Groups too


@click.group(
    cls=_Group,
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.option(
    "--config",
    "config_path",
    metavar="PATH",
    help="Config file (else $ZOTSYNC_CONFIG, ./zotsync.yaml, ./config/zotsync.yaml, the user's config "
    "folder).",
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
    ctx.obj = _State(config_path, verbose, quiet)
    if log_file is not None:
        runlog.open_log(log_file, logging.DEBUG if verbose else logging.INFO, _Redact())
        runlog.events.info("zotsync %s %s", __version__, ctx.invoked_subcommand or "")
    if ctx.invoked_subcommand is None:  # a bare `zotsync`: the help, like git and llm
        click.echo(ctx.get_help())
        ctx.exit(0)


@cli.command("pull")
@click.option("--full", is_flag=True, help="Re-read the whole library and drop what no longer exists.")
@pass_state
def pull_command(state: _State, full: bool) -> None:
    """Bring the local store up to date with the Zotero source."""
    from . import app

    state.say(app.run_pull(state.config, full=full, progress=not state.quiet).summary())


@cli.command("export")
@click.option("--format", "fmt", type=click.Choice(["md", "csv"]), required=True, help="Output format.")
@click.option(
    "--output", metavar="PATH|-", help="Where to write (default: <exports.dir>/catalog.<ext>; - is stdout)."
)
@pass_state
def export_command(state: _State, fmt: str, output: str | None) -> None:
    """Write the merged catalogue as Markdown or CSV."""
    from . import app
    from .export import write_atomically

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
    from . import app

    started = time.monotonic()
    result = app.run_sync(state.config, progress=not (state.quiet or as_json), full=full)
    if as_json:  # stdout holds the JSON alone; the human lines would only repeat it (on stderr)
        click.echo(json_safe(json.dumps(result.summary(time.monotonic() - started), ensure_ascii=False)))
    state.say(result.pull.summary(), log_only=as_json)
    for path, wrote in result.written:
        state.say_written(path, wrote, log_only=as_json)
    return 3 if exit_code and result.changed else 0


@cli.command("status")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@pass_state
def status_command(state: _State, fmt: str) -> None:
    """Counts, last sync, and the reconciliation problems a curator should look at."""
    from . import app
    from .commands import status

    report = app.status(state.config)
    if fmt == "json":
        click.echo(json_safe(json.dumps(report, ensure_ascii=False, indent=2)))
    else:  # one line per row: the data is made one-line (and harmless on a terminal) before formatting
        click.echo(status.format_text(one_line_each(report)))


@cli.command("pin")
@click.argument("target", metavar="TITLE_OR_KEY")
@click.argument("zotero_key", metavar="ZOTERO_KEY")
@click.option("--force", is_flag=True, help="Replace another zotero_key the entry already has.")
@pass_state
def pin_command(state: _State, target: str, zotero_key: str, force: bool) -> None:
    """Record that a curated entry is the Zotero item ZOTERO_KEY: adds `zotero_key` to the entry in the
    catalogue YAML (every placement of it), keeping comments and layout. TITLE_OR_KEY is the entry's
    title, or the key it is pinned to now."""
    from . import app

    for message in app.pin(state.config, target, zotero_key, force=force).messages:
        state.say(message)


@cli.command("adopt")
@click.argument("zotero_key", metavar="ZOTERO_KEY")
@click.option("--category", required=True, metavar="NAME", help="The catalogue category to add it to.")
@click.option("--new-category", is_flag=True, help="Add the category at the end if the catalogue lacks it.")
@pass_state
def adopt_command(state: _State, zotero_key: str, category: str, new_category: bool) -> None:
    """Add the Zotero item ZOTERO_KEY (say, one `zotsync list --uncurated` shows) to the catalogue YAML
    as a new entry at the end of a category, keeping comments and layout."""
    from . import app

    for message in app.adopt(state.config, zotero_key, category, new_category=new_category).messages:
        state.say(message)


# -- errors: one line each -----------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
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
    except click.UsageError as exc:
        code = _fail(usage_message(exc), exc.exit_code, False)
    except click.ClickException as exc:
        code = _fail(" ".join(exc.format_message().split()), exc.exit_code, False)
    except Exception as exc:  # a bug: still one line, the traceback only when asked for
        code = _fail(f"unexpected {type(exc).__name__}: {exc}", 1, verbose)
    runlog.close_log(code)
    return code


def usage_message(exc: click.UsageError) -> str:
    """click's usage errors as one line that says what is wanted: `--format must be md or csv`."""
    param = exc.param if isinstance(exc, click.BadParameter) else None
    if param is not None:
        name = _param_name(param)
        if isinstance(param.type, click.Choice):
            return f"{name} must be {_either([str(c) for c in param.type.choices])}"
        if isinstance(exc, click.MissingParameter):
            kind = exc.param_type or param.param_type_name
            metavar = f" {param.metavar}" if isinstance(param, click.Option) and param.metavar else ""
            return f"missing {kind} {name}{metavar}{_see_help(exc.ctx)}"
    return " ".join(exc.format_message().split())


def _param_name(param: click.Parameter) -> str:
    if isinstance(param, click.Option):
        return max(param.opts, key=len)
    return param.human_readable_name  # an argument's metavar: ZOTERO_KEY


def _either(choices: Sequence[str]) -> str:
    return choices[0] if len(choices) == 1 else f"{', '.join(choices[:-1])} or {choices[-1]}"


def _see_help(ctx: click.Context | None) -> str:
    return f" (see `{ctx.command_path} --help`)" if ctx is not None else ""


def _fail(message: str, code: int, verbose: bool) -> int:
    message = one_line(message)  # quoted data (a title with a newline) cannot forge a second error line
    if verbose:
        click.echo(redact(printable(traceback.format_exc())), err=True, nl=False)
    click.echo(redact(f"zotsync: error: {message}"), err=True)
    runlog.events.error(message)  # the file handler masks secrets too
    return code
