"""Load the curated catalogue (YAML) into model objects; every complaint names the file and line.

zotsync never rewrites this file wholesale: it is the curator's, comments and all.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import CatalogueError, ConfigError, ZotsyncError
from .inputs import MAX_YAML, read_input, why_unreadable
from .model import ZOTERO_KEY, Catalogue, CatalogueEntry, Category, Link, category_name
from .text import closest, did_you_mean
from .yamlio import line_of, load_yaml, parse_yaml, text_of, where

TOP_KEYS = ("title", "description", "categories")
CATEGORY_KEYS = ("name", "entries")
ENTRY_KEYS = (
    "title",
    "venue",
    "status",
    "why",
    "noted",
    "links",
    "zotero_key",
    "doi",
    "arxiv",
    "url",
    "isbn",
    "year",
)


def _near_file(path: Path, config: Path) -> str:
    """` (did you mean 'catalog.yaml'?)` for a typo in the name, else how to get a catalogue at all. The
    names are compared without their extension, which every candidate shares, and never with the config
    file itself."""
    found = sorted(path.parent.glob("*.y*ml")) if path.parent.is_dir() else []
    names = {p.stem: p.name for p in found if p.resolve() != config.resolve()}
    near = closest(path.stem, names)
    return f" (did you mean '{names[near]}'?)" if near else " (`zotsync init` writes an empty one)"


def load_catalogue(path: Path, config: Path | None = None) -> Catalogue:
    """`config`: the config file whose `catalog:` names `path`; a missing catalogue is its line's fault."""
    if config is not None and not path.exists() and not path.is_symlink():  # a link loop: load_yaml says so
        raise CatalogueError(f"{_named_at(config)}catalogue not found: {path}{_near_file(path, config)}")
    try:
        raw = load_yaml(path, "catalogue")
    except ConfigError as exc:
        raise CatalogueError(str(exc)) from None
    return parse_catalogue(raw, path)


def _named_at(config: Path | None) -> str:
    """`file:line: ` of the config's `catalog:` key, read only for this message; nothing for a config
    built in code, which has no file to point into."""
    if config is None or not config.is_file():
        return ""
    try:
        return f"{where(config, load_yaml(config, 'config file'), 'catalog')}: "
    except ZotsyncError:  # the file changed since it was loaded: the message names the catalogue alone
        return ""


@dataclass(frozen=True, slots=True)
class CatalogueFile:
    """The catalogue's bytes, read once: a sync digests them and renders the page from them, so the
    page always shows the catalogue its digest names, even when the file is saved mid-sync."""

    path: Path
    config: Path | None
    data: bytes | None  # None: unreadable now; `load` then fails the way `load_catalogue` does

    @classmethod
    def read(cls, path: Path, config: Path | None = None) -> CatalogueFile:
        try:
            return cls(path, config, read_input(path, "catalogue", MAX_YAML, CatalogueError))
        except (OSError, ZotsyncError):  # `load` says why, as `load_catalogue` does
            return cls(path, config, None)

    @property
    def digest(self) -> str | None:
        return None if self.data is None else hashlib.sha256(self.data).hexdigest()

    def load(self) -> Catalogue:
        if self.data is None:
            return load_catalogue(self.path, self.config)  # the usual error, naming the config's line
        try:
            # universal newlines, as load_yaml's read_text would give
            text = self.data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
        except UnicodeDecodeError as exc:
            raise CatalogueError(
                f"cannot read catalogue {self.path}: {why_unreadable(self.path, exc)}"
            ) from None
        try:
            raw = parse_yaml(text, str(self.path))
        except ConfigError as exc:
            raise CatalogueError(str(exc)) from None
        return parse_catalogue(raw, self.path)


def parse_catalogue(raw: Any, path: Path) -> Catalogue:
    if raw is None:
        return Catalogue()
    if not isinstance(raw, dict):
        raise CatalogueError(f"{path}: the catalogue must be a mapping with 'title' and 'categories'")
    _only(raw, TOP_KEYS, path, "catalogue")
    categories_raw = raw.get("categories") or []
    if not isinstance(categories_raw, list):
        raise CatalogueError(f"{where(path, raw, 'categories')}: 'categories' must be a list")
    categories: list[Category] = []
    seen: set[str] = set()
    for category_raw in categories_raw:
        if not isinstance(category_raw, dict):
            raise CatalogueError(f"{where(path, raw, 'categories')}: each category must be a mapping")
        _only(category_raw, CATEGORY_KEYS, path, "category")
        name = category_name(_text(category_raw, "name", path).strip())
        if not name:
            raise CatalogueError(f"{where(path, category_raw)}: category without a name")
        if name in seen:
            raise CatalogueError(f"{where(path, category_raw, 'name')}: category '{name}' appears twice")
        seen.add(name)
        entries_raw = category_raw.get("entries") or []
        if not isinstance(entries_raw, list):
            raise CatalogueError(f"{where(path, category_raw, 'entries')}: 'entries' must be a list")
        entries = tuple(_entry(e, name, path, category_raw) for e in entries_raw)
        categories.append(Category(name, entries))
    return Catalogue(
        title=_text(raw, "title", path),
        description=_text(raw, "description", path),
        categories=tuple(categories),
    )


def _entry(raw: Any, category: str, path: Path, parent: Any) -> CatalogueEntry:
    if not isinstance(raw, dict):
        raise CatalogueError(
            f"{where(path, parent, 'entries')}: each entry must be a mapping, got {raw!r:.40}"
        )
    _only(raw, ENTRY_KEYS, path, "entry")
    title = _text(raw, "title", path).strip()
    if not title:
        raise CatalogueError(f"{where(path, raw)}: entry without a title in category '{category}'")
    status = raw.get("status")
    if status not in (None, "read", "unread"):
        raise CatalogueError(f"{where(path, raw, 'status')}: status must be read or unread, not {status!r}")
    noted = raw.get("noted")
    if noted is not None and not isinstance(noted, bool):
        raise CatalogueError(f"{where(path, raw, 'noted')}: noted must be true or false")
    links_raw = raw.get("links") or {}
    links = {label: text_of(links_raw, label) for label in links_raw} if isinstance(links_raw, dict) else {}
    if not isinstance(links_raw, dict) or any(url is None for url in links.values()):
        raise CatalogueError(f"{where(path, raw, 'links')}: links must map labels to URLs")
    key = _text(raw, "zotero_key", path).strip()
    if key and not ZOTERO_KEY.match(key):
        raise CatalogueError(f"{where(path, raw, 'zotero_key')}: '{key}' is not a Zotero item key")
    return CatalogueEntry(
        category=category,
        title=title,
        venue=_text(raw, "venue", path).strip(),
        status=status,
        why=_text(raw, "why", path).strip(),
        noted=noted,
        links=tuple(Link(label, url or "") for label, url in links.items()),
        zotero_key=key,
        doi=_text(raw, "doi", path).strip(),
        arxiv=_text(raw, "arxiv", path).strip(),
        url=_text(raw, "url", path).strip(),
        isbn=_text(raw, "isbn", path).strip(),
        year=_text(raw, "year", path).strip(),
        line=line_of(raw),
    )


def _only(raw: dict[str, Any], allowed: tuple[str, ...], path: Path, what: str) -> None:
    for key in raw:
        if key not in allowed:
            hint = did_you_mean(key, allowed) or f" (expected one of {', '.join(allowed)})"
            raise CatalogueError(f"{where(path, raw, key)}: unknown {what} key '{key}'{hint}")


def _text(raw: dict[str, Any], key: str, path: Path) -> str:
    """A text field exactly as the curator typed it: `010` stays `010`, not the number 8."""
    value = text_of(raw, key)
    if value is None:
        raise CatalogueError(f"{where(path, raw, key)}: '{key}' must be text, not a list or a mapping")
    return value
