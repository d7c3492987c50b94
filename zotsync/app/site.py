"""The site the exports are read on (`exports.site`, `exports.site_url`), for the links of the files a
site serves as they are: a plain folder or GitHub, or an MkDocs site found by its mkdocs.yml."""

from __future__ import annotations

import logging
import posixpath
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config import Config
from ..errors import ConfigError
from ..export.base import Site

NAMES = ("mkdocs.yml", "mkdocs.yaml")
log = logging.getLogger("zotsync")


@dataclass(frozen=True, slots=True)
class MkDocsSite:
    """What an mkdocs.yml says of the exports folder inside its docs folder."""

    config: Path
    directory_urls: bool
    url: str  # the exports folder's URL, from the site's `site_url`; "" without one


def site_of(config: Config) -> Site:
    exports = config.exports
    found = find_mkdocs(exports.dir) if exports.site != "folder" else None
    if exports.site == "folder" or (exports.site == "auto" and found is None):
        return Site("folder", url=exports.site_url)
    if found is None:  # `mkdocs` without an mkdocs.yml to read: MkDocs' default, directory URLs
        return Site("mkdocs", True, exports.site_url)
    if not found.directory_urls and {"md", "html"} <= set(exports.formats):
        log.warning(
            "%s has use_directory_urls: false, so MkDocs makes catalog.md into catalog.html and leaves "
            "the html format's catalog.html out of the site (mkdocs build --strict fails): drop html from "
            "exports.formats, or use directory URLs",
            found.config,
        )
    return Site("mkdocs", found.directory_urls, exports.site_url or found.url)


def find_mkdocs(folder: Path) -> MkDocsSite | None:
    """The nearest mkdocs.yml in `folder` or a folder above it, if its docs folder holds `folder`; None
    when there is none, it cannot be read, or it publishes another folder."""
    folder = folder.absolute().resolve()
    for parent in (folder, *folder.parents):
        config = next((parent / name for name in NAMES if (parent / name).is_file()), None)
        if config is None:
            continue
        settings = read_settings(config)
        docs_dir = settings.get("docs_dir")
        docs = (parent / (docs_dir if isinstance(docs_dir, str) else "docs")).resolve()
        if not folder.is_relative_to(docs):
            return None
        url = settings.get("site_url")
        inside = folder.relative_to(docs).as_posix()
        if isinstance(url, str) and url.lower().startswith(("https://", "http://")):
            url = posixpath.join(url.rstrip("/"), "" if inside == "." else inside) + "/"
        else:
            url = ""
        return MkDocsSite(config, settings.get("use_directory_urls") is not False, url)
    return None


def read_settings(path: Path) -> dict[str, Any]:
    """An mkdocs.yml's settings (`mkdocs_settings`); a file that cannot be read as none."""
    from ..schedule.github import mkdocs_settings  # yaml: read only when there is an mkdocs.yml

    try:
        return mkdocs_settings(path)
    except ConfigError:
        return {}
