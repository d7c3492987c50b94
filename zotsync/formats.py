"""The export formats: one registry that the CLI (`--format`), the config (`exports.formats`), `init` and
the docs derive from.

A format is an `Exporter`: its name, the page file it writes, what it needs of the library, and a
`render` that turns what it is given (`export.base.ExportInput`) into the files to write. Exporters
only render; one writer (`export.writer`) writes every file of a sync, records it, and removes what an
earlier sync wrote and this one no longer does.

The built-in formats are modules listed in BUILT_IN, each defining `EXPORTER`, imported by name when
first asked for: their names are known without importing any exporter, so `zotsync --help` and the
config's validation stay light. An installed package adds one through the `zotsync.formats` entry point
(zotsync.plugins, docs/plugins.md), read only when a name beyond the built-in ones is asked for; a
program using zotsync as a library adds a format of its own with `register` (before it loads a config
naming it).
"""

from __future__ import annotations

import enum
import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .export.base import ExportInput


GROUP = "zotsync.formats"  # the entry-point group of format plugins

# Format name → the module whose EXPORTER it is, in the order `sync` writes them by default.
BUILT_IN: dict[str, str] = {
    "md": "zotsync.export.markdown",
    "csv": "zotsync.export.csv",
    "html": "zotsync.export.html",
    "bib": "zotsync.export.bibtex",
    "atom": "zotsync.export.atom",
}
DEFAULT = ("md", "csv")  # `exports.formats` when the config names none
# The page file of each built-in format, known without importing its exporter: an unchanged sync only
# needs the names of the pages to check them, and `bib` alone would import bibtexparser (0.1 s).
BUILT_IN_PAGES: dict[str, str] = {
    "md": "catalog.md",
    "csv": "catalog.csv",
    "html": "catalog.html",
    "bib": "catalog.bib",
    "atom": "feed.xml",
}


class Needs(enum.Flag):
    """What an exporter needs beyond the page rows; the library is loaded with no more than this."""

    NOTHING = 0
    ZOTERO_LINKS = enum.auto()  # rows carry Zotero's links (paper, PDFs, zotero://): attachments are read
    CREATORS = enum.auto()  # each item's creators as Zotero holds them, not just the authors' names
    NOTES = enum.auto()  # each paper's child notes and its PDFs' annotations (`Library.notes`): note pages


@dataclass(frozen=True, slots=True)
class Output:
    """A file an exporter made: where it goes, relative to `exports.dir` (a PurePosixPath, or a str
    with `/` between folders), and its text (or, for a large page, the text already encoded as UTF-8: a
    str holding one emoji takes four bytes a character)."""

    path: PurePosixPath
    text: str | bytes
    # What the file was made from, when the next sync may keep it without making it again (a note page:
    # its head); kept in the store's record of the file.
    made_from: str | None = None
    kept: bool = False  # True: the file as the last export left it (`text` is not given), not rewritten

    def __post_init__(self) -> None:
        if isinstance(self.path, str):  # a plugin's `Output("shelf.md", text)`
            object.__setattr__(self, "path", PurePosixPath(self.path))

    @property
    def data(self) -> bytes:
        return self.text if isinstance(self.text, bytes) else self.text.encode("utf-8")

    @property
    def str_text(self) -> str:
        return self.text.decode("utf-8") if isinstance(self.text, bytes) else self.text


@dataclass(frozen=True, slots=True)
class Exporter:
    name: str  # a value of `exports.formats` and `--format`
    summary: str  # one line, for `--help` and the docs
    page: str  # the page file, relative to `exports.dir`: what `--output` replaces
    render: Callable[[ExportInput], Iterable[Output]]  # the page first, then any other file
    needs: Needs = Needs.NOTHING


def register(exporter: Exporter) -> Exporter:
    """Add a format for this run: one a program using zotsync builds, or a test's. Built-in formats
    need no call."""
    _extra[exporter.name] = exporter
    return exporter


_extra: dict[str, Exporter] = {}


def names() -> tuple[str, ...]:
    """Every format's name: the built-in ones first, in their order, then the plugins' and those
    `register` added."""
    return tuple(dict.fromkeys([*BUILT_IN, *_plugins(), *_extra]))


def get(name: str) -> Exporter:
    """The exporter of `name` (a KeyError for an unknown one, which config and the CLI rule out)."""
    if name in _extra:
        return _extra[name]
    if name in BUILT_IN:
        return _load(BUILT_IN[name])
    return _plugins()[name]


def page(name: str) -> str:
    """The page file of format `name`, relative to `exports.dir`, without importing a built-in exporter."""
    if name in BUILT_IN_PAGES and name not in _extra:
        return BUILT_IN_PAGES[name]
    return get(name).page


def _plugins() -> dict[str, Exporter]:
    from .plugins import discovered

    return discovered(GROUP, Exporter, tuple(BUILT_IN))


@cache
def _load(module: str) -> Exporter:
    exporter = importlib.import_module(module).EXPORTER
    if not isinstance(exporter, Exporter):
        raise TypeError(f"{module}.EXPORTER is not a zotsync Exporter")
    return exporter


def needs(formats: Iterable[str]) -> Needs:
    """What the library must hold for all of `formats`."""
    wanted = Needs.NOTHING
    for name in formats:
        wanted |= get(name).needs
    return wanted
