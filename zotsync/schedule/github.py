"""A GitHub Actions workflow that runs `zotsync sync --exit-code` on a schedule and commits the exports
when they changed. Paths in it are relative to the repository root: the folder it is written from."""

from __future__ import annotations

import json
import shlex
import tomllib
from pathlib import Path

from .. import __version__
from ..config import Config
from ..errors import ConfigError
from . import fill, template


def workflow(config: Config, root: Path, cron: str, when: str, install: str | None = None) -> str:
    if config.source.type == "local":
        raise ConfigError(
            "a GitHub runner cannot read the Zotero database on this computer: use source.type web"
        )
    exports = _inside(root, config.exports.dir, "exports.dir")
    _inside(root, config.catalog, "catalogue")  # the runner checks out the repository, nothing else
    if config.source.type == "snapshot" and config.source.path is not None:
        _inside(root, config.source.path, "snapshot")
    return fill(
        template("zotsync.yml"),
        cron=cron,
        when=when,
        install=shlex.quote(install or default_install(root)),
        config=shlex.quote(_inside(root, config.path, "config file")),
        store=json.dumps(_inside(root, config.store, "store")),  # a YAML string, whatever the path holds
        exports=shlex.quote(exports),
    )


def default_install(root: Path) -> str:
    """`.` when the repository is a clone of zotsync itself (the quick start's layout), else the
    release this file was written with."""
    try:
        project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8")).get("project", {})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        project = {}
    return "." if project.get("name") == "zotsync" else f"zotsync=={__version__}"


def _inside(root: Path, path: Path, what: str) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        raise ConfigError(
            f"the {what} {path} is outside {root}: run `zotsync schedule github` from the repository "
            "that holds the config, the catalogue and the exports"
        ) from None
