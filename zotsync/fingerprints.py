"""Digests of what every output depends on besides its data: zotsync's own code, and the config. The
export record compares them (export/record.py), so that a changed renderer or setting renders again."""

from __future__ import annotations

import dataclasses
import hashlib
import sys
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from .inputs import absolute
from .version import __version__

if TYPE_CHECKING:
    from .config import Config

_PACKAGE = Path(__file__).resolve().parent


@cache
def code_digest() -> str:
    """zotsync's version and source, the HTML page's style and script included (a changed renderer must
    re-render even at the same version)."""
    digest = hashlib.sha256(f"{__version__} {sys.version_info[:3]}".encode())
    for path in sorted(_PACKAGE.rglob("*")):
        if path.suffix in (".py", ".yaml", ".js", ".css") and "__pycache__" not in path.parts:
            digest.update(path.relative_to(_PACKAGE).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def config_digest(config: Config) -> str:
    """Every setting, the API key left out (it changes what may be read, not what is written)."""
    # The config file by its resolved path: `--config zotsync.yaml` and the same file named from elsewhere
    # (cron's absolute path) are the same settings, and must not render the page again (30 s at 100k).
    public = dataclasses.replace(
        config,
        path=absolute(config.path) if config.path else config.path,
        source=dataclasses.replace(config.source, api_key=""),
    )
    return hashlib.sha256(repr(public).encode()).hexdigest()
