"""A GitHub Actions workflow that runs `zotsync sync --exit-code` on a schedule and commits the exports
when they changed. Paths in it are relative to the repository root: the folder it is written from."""

from __future__ import annotations

import json
import shlex
import subprocess
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from urllib.request import url2pathname

from .. import __version__
from ..config import Config
from ..errors import ConfigError
from . import fill, fit_for_a_job, template


def workflow(config: Config, root: Path, cron: str, when: str, install: str | None = None) -> str:
    if config.source.type == "local":
        raise ConfigError(
            "a GitHub runner cannot read the Zotero database on this computer: use source.type web"
        )
    exports = fit_for_a_job("exports folder", _inside(root, config.exports.dir, "exports.dir"))
    _inside(root, config.catalog, "catalogue")  # the runner checks out the repository, nothing else
    if config.source.type == "snapshot" and config.source.path is not None:
        _inside(root, config.source.path, "snapshot")
    return fill(
        template("zotsync.yml"),
        cron=cron,
        when=when,
        install=shlex.quote(fit_for_a_job("install spec", install or default_install(root))),
        config=shlex.quote(fit_for_a_job("config file", _inside(root, config.path, "config file"))),
        # a YAML string (json.dumps escapes a line break, but the runner would still get a path with one)
        store=json.dumps(fit_for_a_job("store", _inside(root, config.store, "store"))),
        exports=shlex.quote(exports),
    )


def default_install(root: Path) -> str:
    """`.` when the repository is a clone of zotsync itself (the quick start's layout); else the public
    git repository this zotsync was installed from, when there is one (a registry may not have the
    release); else the release this file was written with."""
    try:
        project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8")).get("project", {})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        project = {}
    if project.get("name") == "zotsync":
        return "."
    origin = installed_from()
    return f"zotsync @ git+{origin}" if origin else f"zotsync=={__version__}"


def installed_from(direct_url: Mapping[str, Any] | None = None) -> str | None:
    """The https URL of the git repository this zotsync was installed from: pip's record of the
    install (`direct_url.json`), then that checkout's `origin` remote. None when there is none."""
    if direct_url is None:
        from importlib import metadata

        try:
            direct_url = json.loads(metadata.distribution("zotsync").read_text("direct_url.json") or "{}")
        except (metadata.PackageNotFoundError, ValueError):
            return None
    url = str(direct_url.get("url", ""))
    if direct_url.get("vcs_info", {}).get("vcs") == "git":
        return url if url.startswith("https://") else None
    if not url.startswith("file:"):
        return None
    try:
        done = subprocess.run(
            ["git", "-C", url2pathname(urlsplit(url).path), "remote", "get-url", "origin"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    remote = done.stdout.strip()
    return remote if done.returncode == 0 and remote.startswith("https://") else None


def _inside(root: Path, path: Path, what: str) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        raise ConfigError(
            f"the {what} {path} is outside {root}: run `zotsync schedule github` from the repository "
            "that holds the config, the catalogue and the exports"
        ) from None
