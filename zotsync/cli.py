"""The command line: parse options, find and load the config, call a use case, map errors to exit codes.

No logic lives here. Use-case modules are imported inside the command that runs them, so `zotsync
--help` and `--version` start without pandas, pyzotero or the store (bench/bench_startup.py).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from . import formats, runlog
from .errors import Interrupted, Terminated, ZotsyncError
from .secrets import RedactFilter, redact, register, register_url
from .text import json_safe, one_line, one_line_each, printable
from .version import __version__

if TYPE_CHECKING:
    from .config import Config

log = logging.getLogger("zotsync")


class _State:
    """The global options (given before or after the command) and the config they lead to."""

    def __init__(self) -> None:
        self.config_path: str | None = None
        self.verbose = False
        self.quiet = False
        self.logging_to: Path | None = None
        self.output_cut = False  # stdout's reader stopped reading (a pipe into `head`)
        self._config: Config | None = None
        self._stderr = logging.StreamHandler(sys.stderr)
        self._stderr.setFormatter(logging.Formatter("zotsync: %(message)s"))
        self._stderr.addFilter(RedactFilter())
        log.handlers = [self._stderr]
        self.set_levels()

    def absorb(self, params: dict[str, Any], command: str) -> None:
        """Take the global options given before the command (`zotsync -q sync`), or after it
        (`zotsync sync -q`), out of its params. -q and -v each keep their meaning whatever their order
        (`-qv`, `-vq`): -q silences what a run says it did, -v still adds each step and tracebacks."""
        config_path, verbose, quiet, log_file = (
            params.pop(name) for name in ("config_path", "verbose", "quiet", "log_file")
        )
        self.config_path = config_path or self.config_path
        self.verbose, self.quiet = self.verbose or verbose, self.quiet or quiet
        self.set_levels()
        if log_file is not None and self.logging_to is None:
            self.log_to(log_file, command)

    def log_to(self, path: Path, command: str) -> None:
        path = path.expanduser()  # as for --config: a quoted `~` reaches zotsync unexpanded
        runlog.open_log(path, logging.DEBUG if self.verbose else logging.INFO, RedactFilter())
        runlog.events.info("zotsync %s %s", __version__, command)
        self.logging_to = path

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
            register(self._config.source.api_key)
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
        click.Option(
            ["--log-file"],
            metavar="PATH",
            type=click.Path(path_type=Path),  # a folder is refused by runlog, as a run-time failure
            help="Also log this run to PATH (rotating, timestamped, even with -q).",
        ),
    ]


class _Names(click.Choice):
    """A choice among a registry's names (formats, source types), read when a command's help or its
    option first asks: the names may come from the installed plugins, whose entry points cost a start
    that never uses them."""

    def __init__(self, names: Callable[[], Sequence[str]]) -> None:
        self._names = names
        super().__init__(())

    @property
    def choices(self) -> tuple[str, ...]:
        return tuple(self._names())

    @choices.setter
    def choices(self, _: Sequence[str]) -> None:  # click sets its own copy; the registry is the truth
        pass


def _source_types() -> Sequence[str]:
    """`source.type`'s values: the built-in ones as `init` offers them (web, its default, first), then
    the plugins'."""
    from .sources import names

    offered = ("web", "local", "snapshot")
    return sorted(names(), key=lambda name: offered.index(name) if name in offered else len(offered))


class _Command(click.Command):
    """A command that also takes the global options after its name: `zotsync sync -q --config X`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.params += _global_options()

    def invoke(self, ctx: click.Context) -> Any:
        ctx.ensure_object(_State).absorb(ctx.params, ctx.info_name or "")
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as exc:  # before click sees it: it would print a blank line into cron.log
            raise Interrupted.of(exc) from None
        except BrokenPipeError:  # click exits 1 quietly (`zotsync list | head`); the log says why
            ctx.ensure_object(_State).output_cut = True
            raise


class _Group(click.Group):
    """Every command (and the commands of every subgroup) takes the global options."""

    command_class = _Command
    group_class = type  # subgroups are _Groups too


@click.group(
    cls=_Group,
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    params=_global_options(),  # the same options every command takes after its name
)
@click.version_option(__version__, prog_name="zotsync")
@click.pass_context
def cli(ctx: click.Context, **global_options: Any) -> None:
    """Keep a curated reading list in sync with a Zotero library."""
    ctx.ensure_object(_State).absorb(global_options, ctx.invoked_subcommand or "")
    if ctx.invoked_subcommand is None:  # a bare `zotsync`: the help, like git and llm
        click.echo(ctx.get_help())
        ctx.exit(0)


class _Count(click.IntRange):
    """A count of papers or works: at least 1; beyond any library's size it means "all" (taken as is,
    a larger number overflowed SQLite's integers)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        return min(super().convert(value, param, ctx), 10**9)


COUNT = _Count(min=1)


@cli.command("pull")
@click.option("--full", is_flag=True, help="Re-read the whole library and drop what no longer exists.")
@click.option("--force", is_flag=True, help="Proceed past the safety valve once (sync.max_removal).")
@click.option("--dry-run", is_flag=True, help="Say what the pull would change, and change nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object: what changed.")
@pass_state
def pull_command(state: _State, full: bool, force: bool, dry_run: bool, as_json: bool) -> int:
    """Bring the local store up to date with the Zotero source."""
    from .app import pull

    report = pull.run_pull(state.config, full=full, progress=not state.quiet, force=force, dry_run=dry_run)
    if as_json:
        click.echo(json_safe(json.dumps(report.to_dict(dry_run), ensure_ascii=False)))
    state.say(("dry run: " if dry_run else "") + report.summary(), log_only=as_json)
    return _said_plan(state, report.stopped, as_json) if dry_run else 0


def _said_plan(state: _State, stopped: str, as_json: bool) -> int:
    """The end of a dry run's text: whether the safety valve would stop it (then the real run's exit
    code, 1)."""
    if stopped:
        state.say(f"the safety valve would stop the real run: {stopped}", log_only=as_json)
    state.say("dry run: nothing was written", log_only=as_json)
    return 1 if stopped else 0


@cli.command("export")
@click.option("--format", "fmt", type=_Names(formats.names), required=True, help="Output format.")
@click.option(
    "--output", metavar="PATH|-", help="Where to write (default: <exports.dir>/catalog.<ext>; - is stdout)."
)
@pass_state
def export_command(state: _State, fmt: str, output: str | None) -> None:
    """Write the merged catalogue in one format (`exports.formats` lists what `sync` writes). A page
    written into exports.dir brings the format's other files: note pages, category pages, tags page."""
    from .app import page

    if output == "-":
        _write_output(state, page.render(state.config, fmt), output)
        return
    path = page.default_output(state.config, fmt) if output is None else Path(output)
    text, others = page.export(state.config, fmt, path)
    _write_output(state, text, path)
    _say_files(state, others, "wrote", False)


@cli.command("sync")
@click.option("--full", is_flag=True, help="Re-read the whole library and drop what no longer exists.")
@click.option("--force", is_flag=True, help="Proceed past the safety valve once (sync.max_removal).")
@click.option("--dry-run", is_flag=True, help="Say what the sync would change and write, and change nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object: what changed, requests, files.")
@click.option("--exit-code", is_flag=True, help="Exit 3 when an export changed, 0 when nothing did.")
@pass_state
def sync_command(
    state: _State, full: bool, force: bool, dry_run: bool, as_json: bool, exit_code: bool
) -> int:
    """Pull, then export every format in exports.formats (safe to run from cron)."""
    from .app import sync

    started = time.monotonic()
    progress = not (state.quiet or as_json)
    result = sync.run_sync(state.config, progress=progress, full=full, force=force, dry_run=dry_run)
    if as_json:  # stdout holds the JSON alone; the human lines would only repeat it (on stderr)
        click.echo(json_safe(json.dumps(result.to_dict(time.monotonic() - started), ensure_ascii=False)))
    state.say(("dry run: " if dry_run else "") + result.pull.summary(), log_only=as_json)
    _say_files(state, result.written, "would write" if dry_run else "wrote", as_json)
    removed = [(path, True) for path in result.removed]  # a format or a note page that went
    _say_files(state, removed, "would remove" if dry_run else "removed", as_json)
    if dry_run:
        if result.due:
            state.say(f"would run: {', '.join(result.due)}", log_only=as_json)
        code = _said_plan(state, result.pull.stopped, as_json)
        return code or (3 if exit_code and result.changed else 0)  # as the real run would
    return 3 if exit_code and result.changed else 0


# Past this many files of one folder (note pages), a run says how many it wrote, not each (-v names them).
_FILES_NAMED = 20


def _say_files(state: _State, written: Sequence[tuple[Path, bool]], verb: str, as_json: bool) -> None:
    """Each file written (or unchanged); a folder with many of them (a first sync's note pages) as one
    line with their count, each one then only with -v (and in the log)."""
    by_folder: dict[Path, list[Path]] = {}
    for path, wrote in written:
        if wrote:
            by_folder.setdefault(path.parent, []).append(path)
    crowded = {folder for folder, paths in by_folder.items() if len(paths) > _FILES_NAMED}
    for path, wrote in written:
        if not wrote:
            state.say(f"unchanged {path}", log_only=as_json)
        elif path.parent not in crowded:
            state.say(f"{verb} {path}", log_only=as_json)
        else:
            runlog.events.info("%s %s", verb, path)  # a --log-file keeps every name
            if state.verbose:
                state.say(f"{verb} {path}", log_only=as_json)
    for folder in sorted(crowded):
        state.say(f"{verb} {len(by_folder[folder])} files in {folder}{os.sep}", log_only=as_json)


@cli.command("enrich")
@click.option("--dry-run", is_flag=True, help="Print what would be filled, and from where; write nothing.")
@click.option("--refresh", is_flag=True, help="Ask again about every item, whatever was answered before.")
@pass_state
def enrich_command(state: _State, dry_run: bool, refresh: bool) -> None:
    """Fill in missing venues, years and DOIs from DBLP, Crossref, OpenAlex and arXiv now (whatever
    enrich.enabled says): titles and first authors leave the machine."""
    from .app import enrich

    result = enrich.run_enrich(state.config, dry_run=dry_run, refresh=refresh)
    if result.answers:  # one line per item whatever its title holds
        click.echo("\n".join(one_line(answer.line(dry_run)) for answer in result.answers))
    state.say(result.summary())


@cli.command("status")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@pass_state
def status_command(state: _State, fmt: str) -> None:
    """Counts, last sync, and the reconciliation problems a curator should look at."""
    from .app import status

    report = status.status(state.config).to_dict()
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
    from .app import edit

    for message in edit.pin(state.config, target, zotero_key, force=force).messages:
        state.say(message)


@cli.command("adopt")
@click.argument("zotero_key", metavar="ZOTERO_KEY")
@click.option("--category", required=True, metavar="NAME", help="The catalogue category to add it to.")
@click.option("--new-category", is_flag=True, help="Add the category at the end if the catalogue lacks it.")
@pass_state
def adopt_command(state: _State, zotero_key: str, category: str, new_category: bool) -> None:
    """Add the Zotero item ZOTERO_KEY (say, one `zotsync list --uncurated` shows) to the catalogue YAML
    as a new entry at the end of a category, keeping comments and layout."""
    from .app import edit

    for message in edit.adopt(state.config, zotero_key, category, new_category=new_category).messages:
        state.say(message)


@cli.command("snapshot")
@click.option("--output", metavar="FILE|-", required=True, help="Where to write the snapshot; - is stdout.")
@pass_state
def snapshot_command(state: _State, output: str) -> None:
    """Write the store's library as a snapshot file (the Zotero Web API's JSON), which
    `source.type: snapshot` reads back into the same store and exports."""
    from .app import snapshot

    _write_output(state, snapshot.render(state.config), output)


def _write_output(state: _State, text: str | bytes, output: str | Path) -> None:
    """`--output`: `-` is stdout; else the file, replaced atomically and only when it changes."""
    from .outputs import write_atomically

    if output == "-":  # as text: the console's encoding decides (Windows' is not always UTF-8)
        click.echo(text.decode("utf-8") if isinstance(text, bytes) else text, nl=False)
        return
    path = Path(output)
    state.say_written(path, write_atomically(path, text))


@cli.command("list")
@click.option("--uncurated", is_flag=True, help="Only items no curated entry claims.")
@click.option("--collection", metavar="PATH", help="Only items in this collection (Parent / Child) or below.")
@click.option("--tag", metavar="TAG", help="Only items with this Zotero tag.")
@click.option("--search", metavar="TEXT", help="Only items whose title, authors or DOI contain TEXT.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@pass_state
def list_command(
    state: _State, uncurated: bool, collection: str | None, tag: str | None, search: str | None, fmt: str
) -> None:
    """The library's items: key, year, title, venue, collections, and whether a curated entry claims
    each — where to find the ZOTERO_KEY for `adopt` and `pin`."""
    from .app import listing

    filters = listing.Filters(uncurated=uncurated, collection=collection, tag=tag, search=search)
    items = listing.list_items(state.config, filters)
    if fmt == "json":
        click.echo(json_safe(json.dumps([item.to_dict() for item in items], ensure_ascii=False, indent=2)))
        return
    if items:  # one line per item whatever its title holds, and nothing that drives the terminal
        click.echo("\n".join(one_line(listing.format_line(item)) for item in items))
    state.say(listing.summary(items))


@cli.command("search")
@click.argument("words", metavar="TEXT", nargs=-1, required=True)
@click.option(
    "--limit",
    type=COUNT,
    default=20,
    show_default=True,
    metavar="N",
    help="At most N papers.",
)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option(
    "--mode",
    type=click.Choice(["keyword", "semantic", "hybrid"]),
    default=None,
    help="keyword: every word must occur; semantic: by meaning; hybrid: both, fused (the default once "
    "search.semantic is on, else keyword).",
)
@pass_state
def search_command(state: _State, words: tuple[str, ...], limit: int, fmt: str, mode: str | None) -> None:
    """Full-text search of the store: titles, authors, abstracts, tags, the curated why, Zotero notes and
    annotations. One paper per hit, best first, with where it matched and a snippet; every word of TEXT
    must occur (any script: `张量` finds 张量编译器). With search.semantic on, also by meaning."""
    from .app import hits as shown

    if mode is None:
        from .app.meaning import default_mode

        mode = default_mode(state.config)
    if mode == "keyword":
        from .app import search

        hits = search.search(state.config, " ".join(words), limit)
    else:  # by meaning, alone or fused: the keyword search is imported only when it is asked
        from .app import meaning

        hits = meaning.search(state.config, " ".join(words), limit, mode)
    if fmt == "json":
        click.echo(json_safe(json.dumps([hit.to_dict() for hit in hits], ensure_ascii=False, indent=2)))
        return
    if hits:
        click.echo("\n".join(shown.format_hit(hit) for hit in hits))
    state.say(shown.summary(hits, limit))


@cli.command("suggest")
@click.option(
    "--min",
    "minimum",
    type=COUNT,
    default=3,
    show_default=True,
    metavar="N",
    help="Works cited by at least N of the page's papers.",
)
@click.option("--limit", type=COUNT, default=20, show_default=True, metavar="N", help="At most N works.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "md"]), default="text", show_default=True)
@pass_state
def suggest_command(state: _State, minimum: int, limit: int, fmt: str) -> None:
    """The works cited by at least N of the page's papers that the library lacks, best first: the list's
    blind spots (needs enrich.citations and a sync)."""
    from .app.suggest import suggest

    found, page = suggest(state.config, minimum, limit)
    if fmt == "json":
        click.echo(json_safe(json.dumps([s.to_dict() for s in found], ensure_ascii=False, indent=2)))
    elif fmt == "md":
        click.echo(page, nl=False)
    else:
        from .export.suggestions import format_text

        if found:
            click.echo(format_text(found))
        state.say(
            f"{len(found)} works cited by at least {minimum} of the page's papers that the library lacks"
        )


@cli.command("related")
@click.argument("key")
@click.option(
    "--limit",
    type=COUNT,
    default=10,
    show_default=True,
    metavar="N",
    help="At most N papers.",
)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@pass_state
def related_command(state: _State, key: str, limit: int, fmt: str) -> None:
    """The papers of the library nearest in meaning to the paper KEY, best first, with their similarity
    (search.semantic must be on)."""
    from .app import meaning

    hits = meaning.related(state.config, key, limit)
    if fmt == "json":
        click.echo(json_safe(json.dumps([hit.to_dict() for hit in hits], ensure_ascii=False, indent=2)))
        return
    if hits:
        click.echo("\n".join(meaning.format_related(hit) for hit in hits))
    state.say(f"{len(hits)} paper{'' if len(hits) == 1 else 's'}")


@cli.command("mcp")
@click.option(
    "--transport",
    type=click.Choice(["stdio", "http"]),
    default="stdio",
    show_default=True,
    help="stdio: on stdin/stdout, as an assistant starts it; http: streamable HTTP on 127.0.0.1.",
)
@click.option(
    "--port",
    type=click.IntRange(min=1, max=65535),
    default=8000,
    show_default=True,
    metavar="N",
    help="With --transport http: the port on 127.0.0.1.",
)
@pass_state
def mcp_command(state: _State, transport: str, port: int) -> None:
    """Serve the reading list to an AI assistant over the Model Context Protocol (MCP), read-only: search,
    papers with their notes and annotations, categories. Needs the `mcp` extra."""
    import importlib.util

    config = state.config  # a config problem is exit 2 before anything is served
    if importlib.util.find_spec("mcp") is None:
        raise click.UsageError("zotsync mcp needs the MCP SDK: pip install '.[mcp]' in zotsync's folder")
    try:
        from . import mcp_server
    except ImportError as exc:  # an SDK before 2 (FastMCP, no MCPServer)
        raise click.UsageError(
            f"zotsync mcp needs the MCP SDK 2.3 or later: pip install '.[mcp]' in zotsync's folder ({exc})"
        ) from None

    mcp_server.serve(config, "http" if transport == "http" else "stdio", port)


@cli.command("init")
@click.argument("folder", metavar="[DIR]", default=".", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--source",
    type=_Names(_source_types),
    default="web",
    show_default=True,
    help="Where the library comes from: the Zotero Web API, zotero.sqlite, or a snapshot file.",
)
@click.option(
    "--library-type",
    type=click.Choice(["user", "group"]),
    default="user",
    show_default=True,
    help="A user's library or a group's.",
)
@click.option("--library-id", default="", metavar="ID", help="web: your userID or the group's id.")
@click.option(
    "--path", metavar="PATH", help="local: the Zotero data directory (~/Zotero); snapshot: the file."
)
@click.option("--demo", is_flag=True, help="Write the bundled demo (catalogue, snapshot, config) instead.")
@pass_state
def init_command(
    state: _State, folder: Path, source: str, library_type: str, library_id: str, path: str | None, demo: bool
) -> None:
    """Start a reading list in DIR (default: here): a commented zotsync.yaml, an empty catalog.yaml and
    exports/. Never writes over a file."""
    from .app import init

    started = init.init_demo(folder) if demo else init.init(folder, source, library_type, library_id, path)
    for written in started.written:
        state.say(f"wrote {written}{'/' if written.is_dir() else ''}")
    here = started.folder.resolve() == Path.cwd().resolve()
    click.echo("next steps:" if here else f"next steps, in {started.folder}:")
    for step in started.next_steps:
        click.echo(f"  {step}")


@cli.group("schedule", invoke_without_command=True)
@click.pass_context
def schedule_group(ctx: click.Context) -> None:
    """Run `zotsync sync` on a schedule: one tagged crontab entry, a systemd user timer, or a GitHub
    Actions workflow (docs/scheduling.md)."""
    if ctx.invoked_subcommand is None:  # a bare `zotsync schedule`: its help, as a bare `zotsync`
        click.echo(ctx.get_help())


_EVERY = click.option("--every", metavar="30m|1h|6h|1d", help="How often (default 1h).")
_CRON = click.option(
    "--cron", "cron_expression", metavar="EXPR", help="A cron expression, e.g. '17 * * * *'."
)
_SYSTEMD = click.option("--systemd", "systemd_timer", is_flag=True, help="A systemd user timer, not cron.")


@schedule_group.command("install")
@_EVERY
@_CRON
@_SYSTEMD
@pass_state
def schedule_install_command(
    state: _State, every: str | None, cron_expression: str | None, systemd_timer: bool
) -> None:
    """Install (or replace) the schedule that runs `zotsync -q sync` with this config."""
    from .app import schedule

    schedule.install(state.config, state.say, every, cron_expression, systemd_timer)


@schedule_group.command("show")
@_SYSTEMD
def schedule_show_command(systemd_timer: bool) -> None:
    """Print the installed schedule, or say there is none."""
    from .app import schedule

    click.echo(schedule.show(systemd_timer))


@schedule_group.command("remove")
@_SYSTEMD
@pass_state
def schedule_remove_command(state: _State, systemd_timer: bool) -> None:
    """Remove zotsync's schedule, and nothing else."""
    from .app import schedule

    schedule.remove(state.say, systemd_timer)


@schedule_group.command("github")
@_EVERY
@_CRON
@click.option(
    "--output",
    type=click.Path(path_type=Path),  # a folder is refused when writing, like export --output's
    default=".github/workflows/zotsync.yml",
    show_default=True,
    help="Where to write the workflow.",
)
@click.option("--force", is_flag=True, help="Replace an existing workflow file.")
@click.option(
    "--pages", is_flag=True, help="Also build the MkDocs site and deploy it to GitHub Pages (mkdocs.yml)."
)
@click.option(
    "--install",
    "install_spec",
    metavar="SPEC",
    help="What the runner pip-installs (default: . in a clone of zotsync).",
)
@pass_state
def schedule_github_command(
    state: _State,
    every: str | None,
    cron_expression: str | None,
    output: Path,
    force: bool,
    pages: bool,
    install_spec: str | None,
) -> None:
    """Write a GitHub Actions workflow that syncs on a schedule (in UTC) and on demand, and commits the
    exports when they changed; with --pages it also builds the MkDocs site and deploys it to GitHub
    Pages. Run it from the root of the repository."""
    from .app import schedule

    schedule.write_workflow(
        state.config, state.say, every, cron_expression, output, force, install_spec, pages
    )


# -- errors: one line each -----------------------------------------------------------------------------


@contextlib.contextmanager
def _sigterm_unwinds() -> Iterator[None]:
    """While a command runs, SIGTERM raises Terminated in the main thread (as SIGINT raises
    KeyboardInterrupt) instead of killing the process where it stands; only the main thread may set a
    handler (a caller running zotsync in another thread keeps its own)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(signum: int, frame: object) -> None:
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def main(argv: Sequence[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    register(os.environ.get("ZOTERO_API_KEY"))
    register_url(os.environ.get("ZOTERO_API_BASE"))
    state = _State()  # -v as click parsed it (`-qv`, after the command), not as a word of argv
    try:
        with _sigterm_unwinds():
            result = cli.main(args=args, prog_name="zotsync", standalone_mode=False, obj=state)
        code = result if isinstance(result, int) else 0
    except ZotsyncError as exc:
        if type(exc) is Interrupted and sys.stderr.isatty():
            click.echo(err=True)  # the terminal echoed ^C: the error line starts on a line of its own
        code = _fail(str(exc), exc.exit_code, state.verbose)
    except click.exceptions.Abort as exc:  # a signal before a command ran (click turned it into Abort)
        stop = Interrupted.of(exc.__cause__)
        code = _fail(str(stop), stop.exit_code, False)
    except click.UsageError as exc:
        code = _fail(usage_message(exc), exc.exit_code, False)
    except click.ClickException as exc:
        code = _fail(" ".join(exc.format_message().split()), exc.exit_code, False)
    except Exception as exc:  # a bug: still one line, the traceback only when asked for
        code = _fail(f"unexpected {type(exc).__name__}: {exc}", 1, state.verbose)
    except SystemExit as exc:  # click's answer to a closed stdout (`zotsync list | head`): exit 1, quietly
        code = exc.code if isinstance(exc.code, int) else 1
        if state.output_cut:
            runlog.events.warning("the output was cut short: what read it (a pipe) stopped reading")
    runlog.close_log(code)  # the log file ends with `exit N` however the run ended
    # A request thread a failed pull left behind may still log a step: not into this run's stderr, which
    # a caller running zotsync in-process (a test, a notebook) may have closed by then.
    log.removeHandler(state._stderr)
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
    message = " ".join(exc.format_message().split())
    if message.startswith("No such command") and "Did you mean" not in message and exc.ctx is not None:
        # `zotsync help`, `zotsync schedule list`: say where the commands are (click >= 8.4 suggests
        # a near one itself; older versions never do)
        return f"{message.rstrip('.')} (`{exc.ctx.command_path} --help` lists the commands)"
    return message


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
