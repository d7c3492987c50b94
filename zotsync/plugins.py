"""Plugins: other installed packages add formats, processors and sources through entry points.

A package declares, in its pyproject.toml,

    [project.entry-points."zotsync.formats"]
    shelf = "zotsync_shelf:EXPORTER"

and its object is then known by its own `name` wherever a built-in one is (docs/plugins.md). Entry points
are read only when a registry is first asked for more than its built-in names, so `import zotsync` and
`zotsync --help` stay light; and importlib.metadata, which reads every installed package's metadata, is
asked only when some package on the path declares a zotsync group at all (`_declared` looks at the
packages' entry_points.txt files), so a run with no plugin installed pays a few milliseconds, not tens.
A plugin that fails to load, or is not the kind of object its group holds, is one warning line naming
it; the rest of zotsync works without it.
"""

from __future__ import annotations

import logging
import os
import sys
from functools import cache
from typing import Any

from .text import one_line

GROUPS = ("zotsync.formats", "zotsync.processors", "zotsync.sources")

log = logging.getLogger("zotsync")


@cache
def discovered(group: str, kind: type, built_in: tuple[str, ...] = ()) -> dict[str, Any]:
    """The objects of `kind` the installed packages offer in `group`, by their `name`, in the order the
    entry points are listed; read once per run. A built-in name stays the built-in's."""
    found: dict[str, Any] = {}
    if group not in _declared():
        return found
    from importlib.metadata import entry_points

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


@cache
def _declared() -> frozenset[str]:
    """The zotsync groups some package on `sys.path` declares an entry point in (a superset: a package
    that only mentions one counts too). Where the path holds what this look cannot read (a zip file),
    every group, so that importlib.metadata decides."""
    groups: set[str] = set()
    for entry in sys.path:
        folder = entry or os.curdir
        if os.path.isfile(folder):
            return frozenset(GROUPS)
        try:
            with os.scandir(folder) as listing:
                metadata = [e.path for e in listing if e.name.endswith((".dist-info", ".egg-info"))]
        except OSError:  # a folder that is not there (yet): nothing installed in it
            continue
        for found in metadata:
            try:
                with open(os.path.join(found, "entry_points.txt"), encoding="utf-8") as file:
                    text = file.read()
            except (OSError, UnicodeDecodeError):
                continue
            groups.update(group for group in GROUPS if f"[{group}]" in text)
    return frozenset(groups)
