"""Zotero sources. Each turns its own records into model objects and reports changes since a version.

A kind of source is a `SourceType`: its name (the value of `source.type` and `init --source`), what it
needs of the `source` section (`check`, one clear line when something is missing), keys of its own
there (`settings`, read as every section is: config.py delegates them to the type), and how to `open`
one. The built-in types are listed in BUILT_IN; an installed package adds one through the
`zotsync.sources` entry point (docs/plugins.md), a program using zotsync with `register`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..config import DEFAULT_DEADLINE, SourceConfig, SourceGiven
from ..errors import ConfigError

if TYPE_CHECKING:  # the registry is read when a config is loaded: no source (nor the model) loads then
    from .base import Source
    from .snapshot import SnapshotSource

    # How a type opens its source: (the section, draw a progress bar, the pull's deadline in seconds).
    Opener = Callable[[SourceConfig, bool, float], AbstractContextManager[Source]]

GROUP = "zotsync.sources"  # the entry-point group of source plugins


def _needs_nothing(given: SourceGiven) -> None:
    return None


@dataclass(frozen=True, slots=True)
class SourceType:
    name: str  # the value of `source.type`
    summary: str  # one line, for the docs and `init --help`
    open: Opener  # the configured source, closed after use
    # What this type needs of the `source` section, beyond what every type is checked for (the key's
    # form, the URL's scheme): raises ConfigError, pointing at where the user wrote the value.
    check: Callable[[SourceGiven], None] = _needs_nothing
    # Keys of its own in the `source` section: a dataclass of `config.setting` fields, read by the same
    # rules as every section's; the values reach `open` as `config.options`. None: the common keys only.
    settings: type | None = None


@contextlib.contextmanager
def _open_web(config: SourceConfig, progress: bool, deadline: float) -> Iterator[Source]:
    from .web import WebSource  # imports pyzotero, which the other sources do not need

    with WebSource(config, progress=progress, deadline=deadline) as web:
        yield web


@contextlib.contextmanager
def _open_local(config: SourceConfig, progress: bool, deadline: float) -> Iterator[Source]:
    if config.local_api:  # `type: local` with a `base_url`: the desktop's local API, read as the web's
        with _open_web(config, progress, deadline) as web:
            yield web
        return
    from .local import LocalSource

    assert config.path is not None  # guaranteed by `_check_local`
    yield LocalSource(config.path, config.library_type, config.library_id)


@contextlib.contextmanager
def _open_snapshot(config: SourceConfig, progress: bool, deadline: float) -> Iterator[Source]:
    from .snapshot import SnapshotSource

    assert config.path is not None  # guaranteed by `_check_snapshot`
    yield SnapshotSource(config.path)


def _check_web(given: SourceGiven) -> None:
    if not given.values["library_id"].isdigit():
        at = given.path if "library_id" in given.from_env else given.line("library_id")
        raise ConfigError(f"{at}: source.type web needs a numeric 'source.library_id' (or ZOTERO_LIBRARY_ID)")


def _check_local(given: SourceGiven) -> None:
    values, path = given.values, given.path
    if values["base_url"] and values["path"]:
        base_url = given.from_env.get("base_url", "source.base_url")
        raise ConfigError(
            f"{path}: source.type local reads either zotero.sqlite ('source.path') or the Zotero desktop's "
            f"local API ('{base_url}', e.g. http://localhost:23119), not both"
            + (" (unset ZOTERO_API_BASE, or drop source.path)" if "base_url" in given.from_env else "")
        )
    if not values["path"] and not values["base_url"]:
        raise ConfigError(
            f"{path}: source.type local needs config key 'source.path' (zotero.sqlite) or "
            "'source.base_url' (the Zotero desktop's local API, http://localhost:23119)"
        )


def _check_snapshot(given: SourceGiven) -> None:
    if not given.values["path"]:
        raise ConfigError(f"{given.path}: source.type snapshot needs config key 'source.path'")


# The built-in types, in the order the docs and `source.type`'s message name them.
BUILT_IN: dict[str, SourceType] = {
    kind.name: kind
    for kind in (
        SourceType("snapshot", "a snapshot file (the Web API's JSON)", _open_snapshot, _check_snapshot),
        SourceType("web", "the Zotero Web API", _open_web, _check_web),
        SourceType("local", "zotero.sqlite, or the Zotero desktop's local API", _open_local, _check_local),
    )
}

_extra: dict[str, SourceType] = {}


def register(kind: SourceType) -> SourceType:
    """Add a type of source for this run (a program using zotsync, a test); before a config names it."""
    _extra[kind.name] = kind
    return kind


def _plugins() -> dict[str, SourceType]:
    from ..plugins import discovered

    return discovered(GROUP, SourceType, tuple(BUILT_IN))


def names() -> tuple[str, ...]:
    """Every type's name: the built-in ones first, then the plugins' and those `register` added."""
    return tuple(dict.fromkeys([*BUILT_IN, *_plugins(), *_extra]))


def get(name: str) -> SourceType:
    """The type of `name` (a KeyError for an unknown one, which config rules out)."""
    return BUILT_IN.get(name) or _extra.get(name) or _plugins()[name]


@contextlib.contextmanager
def open_source(
    config: SourceConfig, progress: bool = False, deadline: float = DEFAULT_DEADLINE
) -> Iterator[Source]:
    """The configured source, closed after use (the web source holds an HTTP connection pool);
    `progress` lets a long web pull draw a bar on a terminal; `deadline` (seconds) bounds a pull over
    HTTP."""
    with get(config.type).open(config, progress, deadline) as source:
        yield source


def __getattr__(name: str) -> Any:
    """`Source` (the protocol) and `SnapshotSource`, imported when first named here."""
    if name == "Source":
        from .base import Source

        return Source
    if name == "SnapshotSource":
        from .snapshot import SnapshotSource

        return SnapshotSource
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["BUILT_IN", "SnapshotSource", "Source", "SourceType", "get", "names", "open_source", "register"]
