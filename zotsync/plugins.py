"""Plugins: other installed packages add formats, processors and sources through entry points.

A package declares, in its pyproject.toml,

    [project.entry-points."zotsync.formats"]
    shelf = "zotsync_shelf:EXPORTER"

and its object is then known by its own `name` wherever a built-in one is (docs/plugins.md). Entry points
are read only when a registry is first asked for more than its built-in names, so `import zotsync` and
`zotsync --help` stay light. A plugin that fails to load, or is not the kind of object its group holds,
is one warning line naming it; the rest of zotsync works without it.
"""

from __future__ import annotations

import logging
from functools import cache
from typing import Any

from .text import one_line

GROUPS = ("zotsync.formats", "zotsync.processors", "zotsync.sources")

log = logging.getLogger("zotsync")


@cache
def discovered(group: str, kind: type, built_in: tuple[str, ...] = ()) -> dict[str, Any]:
    """The objects of `kind` the installed packages offer in `group`, by their `name`, in the order the
    entry points are listed; read once per run. A built-in name stays the built-in's."""
    from importlib.metadata import entry_points

    found: dict[str, Any] = {}
    for point in entry_points(group=group):
        try:
            loaded = point.load()
        except Exception as exc:  # a plugin's own bug must not stop zotsync: any failure is its own
            log.warning(
                "plugin '%s' (%s, %s) could not be loaded, left out: %s",
                point.name,
                group,
                point.value,
                one_line(f"{type(exc).__name__}: {exc}"),
            )
            continue
        if not isinstance(loaded, kind):
            log.warning(
                "plugin '%s' (%s, %s) is not a zotsync.%s, left out",
                point.name,
                group,
                point.value,
                kind.__name__,
            )
            continue
        name = str(getattr(loaded, "name", ""))
        if name in built_in or name in found:
            log.warning(
                "plugin '%s' (%s, %s) is named '%s', which is taken: left out",
                point.name,
                group,
                point.value,
                one_line(name),
            )
            continue
        found[name] = loaded
    return found
