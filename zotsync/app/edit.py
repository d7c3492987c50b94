"""`zotsync pin` and `zotsync adopt`: edits of the curator's catalogue, made from the library's matches."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .. import catalogue_edit, normalize
from ..catalogue import load_catalogue
from ..config import Config
from ..gcpause import bulk_phase
from ..inputs import MAX_YAML, FileVersion, read_input_version, why_unreadable
from ..model import CatalogueEntry, Item
from ..outputs import write_atomically
from ..store import exclusive_lock
from .page import merge
from .stores import open_store


@dataclass(frozen=True, slots=True)
class CatalogueEdit:
    path: Path
    written: bool
    messages: tuple[str, ...]  # what happened, one line each, for the user


def pin(config: Config, target: str, zotero_key: str, force: bool = False) -> CatalogueEdit:
    """Record the curator's match: `zotero_key` on every placement of the entry titled `target` (or
    pinned to the key `target`). Holds the run lock, so a concurrent sync never reads half an edit."""
    with exclusive_lock(config.store), open_store(config, must_exist=True) as store, bulk_phase():
        doc, version = _read_catalogue(config)
        catalogue = doc.catalogue
        merged = merge(config, catalogue, store)
        item = _regular_item(merged.library.items, zotero_key)
        result = catalogue_edit.pin(doc, target, item.key, force=force)
        wanted = normalize.title(result.title)
        entries = catalogue.entries  # a tuple built per call: once here
        others = [e for e in entries if e.zotero_key == item.key and normalize.title(e.title) != wanted]
        if others:
            raise catalogue_edit.CatalogueEditError(
                f"{item.key} is already pinned to '{others[0].title}' under '{others[0].category}'; "
                "remove that pin first"
            )
        matches = merged.reconciliation.matches
        titles = curated_titles(entries)
        messages = [
            f"note: {item.key} was matched to '{titles.get(key, key)}' (by {matches.rule.get(key, '?')}); "
            "that entry loses its match"
            for key, matched in matches.by_title.items()
            if matched.key == item.key and key != wanted
        ]
        written = write_atomically(config.catalog, result.text, edit_of=version)
    where = ", ".join(f"'{c}'" for c in result.categories)
    if not written:
        messages.append(f"'{result.title}' is already pinned to {item.key}; {config.catalog} unchanged")
    else:
        replaced = f", replacing {', '.join(result.replaced)}" if result.replaced else ""
        messages.append(
            f"pinned '{result.title}' under {where} to {item.key} ('{item.title}'){replaced}; "
            f"wrote {config.catalog}"
        )
    return CatalogueEdit(config.catalog, written, tuple(messages))


def adopt(config: Config, zotero_key: str, category: str, new_category: bool = False) -> CatalogueEdit:
    """Add a Zotero item to the catalogue as a new curated entry at the end of `category`."""
    with exclusive_lock(config.store), open_store(config, must_exist=True) as store, bulk_phase():
        doc, version = _read_catalogue(config, for_adopt=True)
        catalogue = doc.catalogue
        # a mistyped category fails before the library is loaded, with the names it may have meant
        catalogue_edit.check_category([c.name for c in catalogue.categories], category, new_category)
        merged = merge(config, catalogue, store)
        item = _regular_item(merged.library.items, zotero_key)
        matches = merged.reconciliation.matches
        for key, matched in matches.by_title.items():
            if matched.key == item.key:
                entries = [e for e in catalogue.entries if normalize.title(e.title) == key]
                places = ", ".join(dict.fromkeys(f"'{e.category}'" for e in entries))
                raise catalogue_edit.CatalogueEditError(
                    f"{item.key} is already in the catalogue under {places} as '{entries[0].title}'"
                )
        result = catalogue_edit.adopt(doc, category, item.title, item.key, create_category=new_category)
        written = write_atomically(config.catalog, result.text, edit_of=version)
    messages = []
    if result.created_category:
        messages.append(f"added the category '{result.categories[0]}' at the end of the catalogue")
    messages.append(
        f"added '{result.title}' ({item.key}) to '{result.categories[0]}'; "
        f"{'wrote' if written else 'unchanged'} {config.catalog}"
    )
    return CatalogueEdit(config.catalog, written, tuple(messages))


def curated_titles(entries: Sequence[CatalogueEntry]) -> dict[str, str]:
    """Normalised curated title → the first curated spelling of it, in one pass."""
    titles: dict[str, str] = {}
    for entry in entries:
        titles.setdefault(normalize.title(entry.title), entry.title)
    return titles


def _read_catalogue(config: Config, for_adopt: bool = False) -> tuple[catalogue_edit.Document, FileVersion]:
    """The catalogue file parsed once, for matching and for the edit (its exact text, line endings kept,
    so an edit keeps them), and the version of the file it was read from: reconciling takes seconds on
    a large library, and the write must not replace what the curator saves meanwhile."""
    try:
        version = read_input_version(
            config.catalog, "the catalogue", MAX_YAML, catalogue_edit.CatalogueEditError
        )
    except FileNotFoundError:
        load_catalogue(config.catalog, config.path)  # the usual error, naming the config's line
        raise
    try:
        text = version.data.decode("utf-8")
    except UnicodeDecodeError as exc:
        problem = why_unreadable(config.catalog, exc)
        raise catalogue_edit.CatalogueEditError(
            f"cannot read the catalogue {config.catalog}: {problem}"
        ) from exc
    return catalogue_edit.Document(text, str(config.catalog), for_adopt=for_adopt), version


def _regular_item(items: Sequence[Item], key: str) -> Item:
    """The item a pin or an adoption names: it must be in the store, top-level, and not in the trash."""
    key = key.strip().upper()
    catalogue_edit.check_key(key)
    item = next((i for i in items if i.key == key), None)
    if item is None:
        raise catalogue_edit.CatalogueEditError(
            f"no Zotero item {key} in the store (run `zotsync pull` if it was added since the last sync)"
        )
    if item.deleted:
        raise catalogue_edit.CatalogueEditError(f"the Zotero item {key} is in the trash")
    if not item.is_regular:
        kind = "a child item" if item.parent_key else f"a standalone {item.item_type}"
        raise catalogue_edit.CatalogueEditError(f"{key} is {kind}, not a top-level item")
    return item
