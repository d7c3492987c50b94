"""`zotsync init`: start a reading list in a folder — a commented config, an empty catalogue, exports/ —
or write the bundled demo there. It never writes over a file: when any target exists it writes nothing."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from .. import sources
from ..config import CONFIG_NAME
from ..errors import ConfigError, FileError
from ..folders import cause, make_folders, remove_folders

log = logging.getLogger("zotsync")

CATALOG_NAME = "catalog.yaml"
SNAPSHOT_NAME = "zotero-library.json"
KEYS_PAGE = "https://www.zotero.org/settings/keys"


@dataclass(frozen=True, slots=True)
class Started:
    """What `init` wrote (files and folders, in order) and the user's next steps, one line each, to run
    in `folder` (config discovery finds ./zotsync.yaml there)."""

    folder: Path
    written: tuple[Path, ...]
    next_steps: tuple[str, ...]


def init(
    folder: Path,
    source: str = "web",
    library_type: str = "user",
    library_id: str = "",
    path: str | None = None,
) -> Started:
    """A config for `source`, an empty catalogue and exports/ in `folder`."""
    known = sources.names()
    if source not in known:
        raise ConfigError(f"--source must be {', '.join(known[:-1])} or {known[-1]}")
    if library_id and not library_id.isdigit():
        raise ConfigError(
            f"--library-id must be a number (your userID or the group's id), not '{library_id}'"
        )
    if source == "snapshot" and not path:
        raise ConfigError("--source snapshot needs --path FILE (a snapshot, e.g. from `zotsync snapshot`)")
    source_path = Path(path).expanduser() if path else default_zotero_dir()
    config = config_text(source, library_type, library_id, source_path.absolute())
    written = _write(folder, {CONFIG_NAME: config, CATALOG_NAME: CATALOG_TEMPLATE})
    if source != "web" and not source_path.exists():  # written anyway: it may be mounted or copied later
        log.warning(
            "%s does not exist: the first sync fails until source.path in %s names %s",
            source_path.absolute(),
            CONFIG_NAME,
            "a snapshot file" if source == "snapshot" else "Zotero's data folder or its zotero.sqlite",
        )
    return Started(folder, written, tuple(next_steps(source, library_id)))


def init_demo(folder: Path) -> Started:
    """The bundled demo (its catalogue, its library snapshot, a config that reproduces the seed page)."""
    demo = demo_folder()
    files: dict[str, str | bytes] = {
        CONFIG_NAME: DEMO_CONFIG,
        CATALOG_NAME: (demo / CATALOG_NAME).read_bytes(),
        SNAPSHOT_NAME: (demo / SNAPSHOT_NAME).read_bytes(),
    }
    return Started(
        folder,
        _write(folder, files),
        (
            "1. zotsync sync     → exports/catalog.md: 64 entries in 14 categories, 29 read",
            "2. zotsync status   → counts, and what a curator should look at",
            "3. zotsync list --uncurated   → the items no curated entry claims yet",
        ),
    )


def demo_folder() -> Traversable:
    """The demo inside the installed package; in a source checkout (an editable install), seeds/."""
    packaged = resources.files("zotsync") / "demo"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "seeds"


def default_zotero_dir() -> Path:
    """Where Zotero keeps its data unless told otherwise: ~/Zotero on every OS."""
    return Path.home() / "Zotero"


def _write(folder: Path, files: Mapping[str, str | bytes]) -> tuple[Path, ...]:
    targets = [folder / name for name in files]
    existing = [str(t) for t in targets if t.exists()]
    exports = folder / "exports"
    if exports.exists() and not exports.is_dir():
        existing.append(str(exports))
    if existing:
        raise ConfigError(
            f"{' and '.join(existing)} already {'exists' if len(existing) == 1 else 'exist'}; "
            "init writes nothing over a file (move it away, or init another folder)"
        )
    written: list[Path] = []
    made: list[Path] = []  # folders this init made
    try:
        made += make_folders(folder)
        for target, content in zip(targets, files.values(), strict=True):
            data = content.encode("utf-8") if isinstance(content, str) else content
            with target.open("xb") as stream:  # "x": never over a file that appeared meanwhile
                written.append(target)  # ours from here on, even if the write fails
                stream.write(data)
        if not exports.is_dir():
            made += make_folders(exports)
            written.append(exports)
    except OSError as exc:  # a read-only folder, a full disk: a run-time failure (exit 1), all undone
        for path in written:
            if path.is_file():
                path.unlink(missing_ok=True)
        remove_folders(made)
        failed = Path(exc.filename) if exc.filename else folder
        raise FileError(f"cannot write {failed}: {cause(exc, failed)}; init wrote nothing") from None
    return tuple(written)


def next_steps(source: str, library_id: str) -> Sequence[str]:
    if source == "web":
        key = (
            f"a key: create a read-only one at {KEYS_PAGE}/new, then export ZOTERO_API_KEY=… "
            "(a public library needs none)"
        )
        if not library_id:
            key += f"; and set source.library_id in {CONFIG_NAME} (your userID, shown on {KEYS_PAGE})"
    else:
        key = f"no key: zotsync reads the {source} source read-only (check source.path in {CONFIG_NAME})"
    return (
        f"1. {key}",
        "2. the first sync: zotsync sync   → exports/catalog.md",
        "3. the first adoption: zotsync list --uncurated, then "
        "zotsync adopt KEY --category NAME --new-category",
    )


def config_text(source: str, library_type: str, library_id: str, path: Path) -> str:
    """The config `init` writes: every line commented, what the user must fill in marked."""
    if source == "web":
        source_lines = [
            "  type: web                     # web: the Zotero Web API | local: zotero.sqlite | snapshot",
            f"  library_type: {library_type:<15} # user | group",
            f"  library_id: {json.dumps(library_id):<17} # your userID ({KEYS_PAGE}) or the group's id"
            + ("" if library_id else "  ← fill in"),
            '  # api_key: ""                 # better: export ZOTERO_API_KEY=… (a public library needs none)',
        ]
    else:
        what = {"local": "a Zotero data directory or its zotero.sqlite", "snapshot": "a snapshot file"}.get(
            source,
            f"where the {source} source reads the library",  # a plugin's type
        )
        source_lines = [
            f"  type: {source:<22} # web | local | snapshot",
            f"  path: {json.dumps(path.as_posix(), ensure_ascii=False)}   # {what}",
        ]
        if source == "local":
            source_lines.append(
                f"  library_type: {library_type:<15} # user | group (then library_id: the group's id)"
            )
            if library_id:
                source_lines.append(f"  library_id: {json.dumps(library_id)}")
    return "\n".join(
        [
            "# zotsync's configuration for this reading list. Relative paths resolve against this file's",
            "# folder; every key is described in docs/configuration.md.",
            "source:",
            *source_lines,
            "catalog: catalog.yaml           # your curated catalogue: categories, status, why it counts",
            "store: .zotsync/zotsync.sqlite  # zotsync's local copy of the library (safe to delete)",
            "exports:",
            "  dir: exports                  # where catalog.md, catalog.csv and CHANGES.md go",
            "  formats: [md, csv]",
            "  language: en                  # en | zh: the page's own words; exports.labels overrides one",
            *PAGE_LINES,
            "# Fill in missing venues, years and DOIs from DBLP, Crossref, OpenAlex and arXiv (off unless",
            "# you turn it on: each paper's title and first author then leave this machine; see",
            "# docs/enrichment.md):",
            "# enrich:",
            "#   enabled: true",
            "#   mailto: you@example.org     # for Crossref's and OpenAlex's polite pools",
            "#   citations: true             # also citation counts, references, retractions (OpenAlex)",
            "# Search the PDFs' text (docs/sources.md) and search by meaning with a model that ships in the",
            "# `semantic` extra (docs/meaning.md); neither sends anything anywhere new:",
            "# fulltext:",
            "#   enabled: true",
            "# search:",
            "#   semantic: true",
            "",
        ]
    )


# What reaches the published page and how it links: each key with its choice explained
# (docs/configuration.md#exports, docs/publishing.md).
PAGE_LINES = (
    "  # What the page shows. library: every item, placed by its collection (a start, while the",
    "  # catalogue is empty); curated: only the categories catalog.yaml names, with their entries and the",
    "  # items of the collections they name — the list you mean to publish, once you have curated some.",
    "  scope: library",
    "  # Kept off the page in either scope (a curated entry always stays): an inbox, papers to sort out.",
    "  # Unfiled names the items in no collection.",
    "  # exclude_collections: [Inbox, Unfiled]",
    "  # exclude_tags: [to-curate]",
    "  # hide_tags: [to-curate]       # tags never shown (the read/unread status tags never are)",
    "  # Zotero links: local opens your Zotero desktop (zotero://, dead for anyone else); web links the",
    "  # item's zotero.org page (a public library); none: for a page others read.",
    "  zotero_links: local",
    "  # For a site (MkDocs): the tags page an archive link can point at, a page per category, sortable",
    "  # tables, the columns (also authors, year, added) and long venues cut short.",
    "  # tags_page: true",
    '  # archive_link: "tags.md#{key}"',
    "  # split: category",
    "  # sortable: true",
    "  # columns: [status, paper, venue, why, links]",
    "  # venue_length: 40",
    "reconcile:",
    "  # Zotero tags that set a paper's status (never shown as topic tags); the curator's status wins.",
    "  read_tags: [read, status/read, _read, ✅]",
    "  unread_tags: [unread, status/unread, _unread]",
    "  # inbox_collections: [Inbox]   # what `zotsync status` lists for curation",
)


CATALOG_TEMPLATE = """\
# Your curated reading list: categories of papers, in page order, with what you know about each.
# zotsync never rewrites this file wholesale: `zotsync adopt` and `zotsync pin` add lines and keep your
# comments. Every key is described in docs/catalogue.md.
title: My reading list
# description: A line under the title.
categories: []
# An example category: uncomment it to add it (after `categories: []`, drop that `[]`), or let
# `zotsync adopt KEY --category NAME --new-category` start one:
#  - name: Compilers
#    entries:
#      - title: "Attention Is All You Need"   # matched to a Zotero item by title, DOI or zotero_key
#        status: read                          # read | unread
#        why: The paper the others build on.   # optional; else the Zotero tags
"""

# The demo's config: the published reading list, proceedings titles spelt out as the seed page has them.
DEMO_CONFIG = f"""\
# The zotsync demo: a made-up Zotero library (zotero-library.json, not real metadata) and the curated
# catalogue that reproduces the published reading list. Every key is described in docs/configuration.md.
source:
  type: snapshot
  path: {SNAPSHOT_NAME}
catalog: {CATALOG_NAME}
store: .zotsync/zotsync.sqlite
exports:
  dir: exports
  formats: [md, csv]
  archive_link: "archive/zotero.md#{{key}}"
  language: zh               # the page's own words in Chinese, as the published list has them
reconcile:
  abbreviate_venues: false   # the published page spells proceedings out
"""
