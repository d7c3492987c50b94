"""Typed configuration: the YAML file, then environment overrides, validated into one clear message.

One model: each section is a frozen dataclass whose fields are its keys, declared with `setting(…)`:
the default, how a YAML value becomes the field's value (and the message when it cannot), and the line
the reference (docs/configuration.md) and the JSON Schema (`json_schema`) give it. The accepted keys,
"did you mean" for a typo, the defaults and the schema all come from those fields.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import formats as export_formats
from .errors import ConfigError
from .inputs import absolute
from .labels import COLUMN_LABELS, COLUMNS, DEFAULT_LANGUAGE, LANGUAGES, LabelError, Labels, labels_for
from .secrets import register, register_url
from .text import did_you_mean, one_line
from .yamlio import load_yaml, text_of, where

if TYPE_CHECKING:
    from .processing.enrich.settings import EnrichConfig

# Where a config is looked for when neither --config nor $ZOTSYNC_CONFIG names one, in order; the
# user's config folder (platformdirs) comes last.
SEARCH_PATHS = (Path("zotsync.yaml"), Path("config/zotsync.yaml"))
CONFIG_NAME = "zotsync.yaml"
SOURCE_TYPES = ("snapshot", "web", "local")  # zotsync.sources.BUILT_IN's names, for the JSON Schema
DEFAULT_BASE_URL = "https://api.zotero.org"
DEFAULT_DEADLINE = 600.0  # seconds a pull may take before it gives up: an unattended run always ends
MAX_DEADLINE = 86400.0

SCOPES = ("library", "curated")
ZOTERO_LINKS = ("local", "web", "none")
SPLITS = ("none", "category")
SITES = ("auto", "folder", "mkdocs")
BIB_SCOPES = ("page", "library")  # exports.bib_scope: the page's papers, or the whole library's
ALL_COLUMNS = tuple(COLUMN_LABELS)

ENV_OVERRIDES = {
    "ZOTERO_API_KEY": "api_key",
    "ZOTERO_LIBRARY_ID": "library_id",
    "ZOTERO_LIBRARY_TYPE": "library_type",
    "ZOTERO_API_BASE": "base_url",
}


# -- how a key is read ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Reading:
    """One value being read: where it is (for `file:line` messages) and what the section read so far."""

    path: Path  # the config file
    section: Mapping[str, Any]  # the YAML mapping the key is in
    key: str
    name: str  # dotted: `exports.formats`
    earlier: Mapping[str, Any]  # the section's fields read before this one

    def fail(self, problem: str) -> ConfigError:
        """`file:line: config key 'name' <problem>`."""
        return ConfigError(f"{where(self.path, self.section, self.key)}: config key '{self.name}' {problem}")

    def local(self, value: str) -> Path:
        """A path as written, relative to the config's folder."""
        return absolute(self.path.parent / Path(value).expanduser())


Parse = Callable[[Reading, Any], Any]


@dataclass(frozen=True, slots=True)
class Key:
    parse: Parse
    doc: str
    schema: Mapping[str, Any]  # its JSON Schema


def setting(default: Any, parse: Parse, doc: str, schema: Mapping[str, Any], factory: bool = False) -> Any:
    """A config key: a dataclass field with its default and how to read it."""
    metadata = {"key": Key(parse, doc, schema)}
    if factory:
        return field(default_factory=default, metadata=metadata)
    return field(default=default, metadata=metadata)


def _text(reading: Reading, value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise reading.fail("must be a string")
    text = text_of(reading.section, reading.key)  # as typed: `010` stays `010`
    return text if text is not None else str(value)


read_text = _text  # a key's text, as typed: for a section declared outside this module (a processor's)


def text(default: str, doc: str) -> Any:
    return setting(default, lambda r, v: _text(r, v) or default, doc, {"type": "string"})


def choice(default: str, choices: Sequence[str], doc: str) -> Any:
    def parse(reading: Reading, value: Any) -> str:
        chosen = _text(reading, value) or default
        if chosen not in choices:
            raise reading.fail(f"must be one of {', '.join(choices)}, not '{chosen}'")
        return chosen

    return setting(default, parse, doc, {"type": "string", "enum": list(choices)})


def local_path(default: str | None, doc: str) -> Any:
    """A path, relative to the config's folder (the default too)."""

    def parse(reading: Reading, value: Any) -> Path | None:
        written = _text(reading, value) or default
        return reading.local(written) if written else None

    return setting(Path(default) if default else None, parse, doc, {"type": "string"})


def flag(default: bool, doc: str) -> Any:
    def parse(reading: Reading, value: Any) -> bool:
        if value is None:
            return default
        if not isinstance(value, bool):
            raise reading.fail("must be true or false")
        return value

    return setting(default, parse, doc, {"type": "boolean"})


def names(default: tuple[str, ...], doc: str) -> Any:
    def parse(reading: Reading, value: Any) -> tuple[str, ...]:
        if value is None:
            return default
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise reading.fail("must be a list of names")
        return tuple(value)

    return setting(default, parse, doc, {"type": "array", "items": {"type": "string"}})


def _outsider(named: Any, choices: Sequence[str]) -> str:
    """`: 'pdf' is not one of them` for the first value of a list that `choices` lack, with a near one."""
    if not isinstance(named, list):
        return ""
    odd = next((v for v in named if v not in choices), None)
    if odd is None:
        return ""
    shown = one_line(str(odd))[:40]
    near = did_you_mean(odd, choices) if isinstance(odd, str) else ""
    return f": '{shown}' is not one of them{near}"


def some_of(default: tuple[str, ...], choices: Sequence[str], doc: str, required: str = "") -> Any:
    """A list of distinct values out of `choices`, in the order written (and holding `required`)."""

    def parse(reading: Reading, value: Any) -> tuple[str, ...]:
        if value is None:
            return default
        named = [value] if isinstance(value, str) else value
        if not isinstance(named, list) or not named or any(v not in choices for v in named):
            raise reading.fail(f"must list some of {', '.join(choices)}{_outsider(named, choices)}")
        if len(set(named)) != len(named):
            raise reading.fail("names a value twice")
        if required and required not in named:
            raise reading.fail(f"must hold {required}")
        return tuple(named)

    schema = {"type": "array", "items": {"type": "string", "enum": list(choices)}, "uniqueItems": True}
    return setting(default, parse, doc, schema)


def count(default: int, doc: str) -> Any:
    """A whole number from 0."""

    def parse(reading: Reading, value: Any) -> int:
        if value is None:
            return default
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise reading.fail("must be a whole number from 0")
        return value

    return setting(default, parse, doc, {"type": "integer", "minimum": 0})


def number(default: float, low: float, high: float, doc: str, problem: str, above_low: bool = False) -> Any:
    """A number from `low` to `high` (above `low`, not at it, with `above_low`); `problem` completes the
    message for any other value."""

    def parse(reading: Reading, value: Any) -> float:
        if value is None:
            return default
        numeric = isinstance(value, int | float) and not isinstance(value, bool)
        if not numeric or not (value > low if above_low else value >= low) or value > high:
            raise reading.fail(problem)
        return float(value)

    bound = "exclusiveMinimum" if above_low else "minimum"
    return setting(default, parse, doc, {"type": "number", bound: low, "maximum": high})


# -- the sections ---------------------------------------------------------------------------------------


def _source_types() -> Any:
    """The registry of source types (zotsync.sources), which imports this module: named, not imported."""
    return importlib.import_module("zotsync.sources")


def _source_type(reading: Reading, value: Any) -> str:
    kind = _text(reading, value) or "snapshot"
    known = _source_types().names()
    if kind not in known:
        raise reading.fail(f"must be one of {', '.join(known)}, not '{kind}'")
    return str(kind)


@dataclass(frozen=True, slots=True)
class SourceGiven:
    """The `source` section as the user gave it (the file's values with the environment's overrides),
    for a source type's `check`: its messages point at where the user wrote a value."""

    path: Path  # the config file
    section: Mapping[str, Any]
    values: Mapping[str, str]  # every key of SourceConfig, as text ("" when not given)
    from_env: Mapping[str, str]  # key → the environment variable that set it

    def line(self, key: str) -> str:
        """`file:line` of `key` in the section."""
        return where(self.path, self.section, key)


@dataclass(frozen=True, slots=True)
class SourceConfig:
    # the built-in types; a plugin's (docs/plugins.md) is valid too
    type: str = setting(
        "snapshot",
        _source_type,
        "where the library comes from: snapshot, web or local",
        {"type": "string", "enum": list(SOURCE_TYPES)},
    )
    path: Path | None = local_path(
        None, "snapshot: the JSON file; local: the Zotero data folder or zotero.sqlite"
    )
    library_type: str = choice("user", ("user", "group"), "web and local: user or group")
    library_id: str = text("", "web: the userID or the group's id; local: the group's id for a group")
    api_key: str = field(
        default="",
        repr=False,  # never shown, not even in a repr
        metadata={"key": Key(_text, "web: a Zotero API key (ZOTERO_API_KEY overrides)", {"type": "string"})},
    )
    base_url: str = text(DEFAULT_BASE_URL, "web: another base URL; local: the desktop's local API")
    # A source type's own keys in this section (its `SourceType.settings`, read by the same rules), for a
    # type that declares some (a plugin's); None for the built-in types, which use the keys above.
    options: Any = None

    @property
    def local_api(self) -> bool:
        """`type: local` with a `base_url`: the Zotero desktop's local API instead of zotero.sqlite."""
        return self.type == "local" and self.path is None


@dataclass(frozen=True, slots=True)
class ExportsConfig:
    dir: Path = local_path("exports", "the folder the exports are written to")
    formats: tuple[str, ...] = setting(
        export_formats.DEFAULT,
        lambda r, v: _formats(r, v),
        "the formats `sync` writes",
        {"type": "array", "items": {"type": "string", "enum": list(export_formats.BUILT_IN)}},
    )
    archive_link: str = text("", "a link every Zotero row gets; {key} is the item key")
    language: str = choice(DEFAULT_LANGUAGE, LANGUAGES, "the built-in words of the page: en or zh")
    labels: Labels = setting(
        labels_for,
        lambda r, v: _labels(r, v),
        "single words of the page, e.g. {no_venue: venue unknown}",
        {"type": "object", "additionalProperties": {"type": "string"}},
        factory=True,
    )
    # What reaches the page (the Markdown page, the CSV and every other format show the same rows).
    scope: str = choice(
        "library",
        SCOPES,
        "library: every item, placed by collection; curated: only the categories the catalogue names",
    )
    exclude_collections: tuple[str, ...] = names(
        (),
        "collection paths (with their subcollections; Unfiled too) whose items never reach the page, "
        "unless curated",
    )
    exclude_tags: tuple[str, ...] = names(
        (), "items carrying one of these tags never reach the page, unless curated"
    )
    hide_tags: tuple[str, ...] = names((), "tags never shown on the page (status tags never are)")
    zotero_links: str = choice(
        "local", ZOTERO_LINKS, "local: zotero:// links; web: the item's zotero.org page; none: no Zotero link"
    )
    # How the Markdown page shows them.
    tags_page: bool = flag(False, "also write tags.md: each tag with its papers, an anchor per paper")
    columns: tuple[str, ...] = some_of(
        COLUMNS, ALL_COLUMNS, "the Markdown page's columns, in order", required="paper"
    )
    split: str = choice("none", SPLITS, "none: one page; category: a page per category and an index page")
    venue_length: int = count(0, "the longest venue the Markdown page shows whole (0: no limit)")
    sortable: bool = flag(
        False, "also write the vendored tablesort script for a MkDocs site: sortable tables"
    )
    notes: bool = flag(True, "a Markdown page per paper from its Zotero notes and annotations, linked to")
    open_access_link: bool = flag(
        False, "a link to the paper's open-access copy, when the scholarly graph (enrich.citations) knows one"
    )
    suggestions_page: bool = flag(
        False, "also write suggestions.md: the works the page's papers cite that the library lacks"
    )
    # Where the exports are read: how catalog.html and feed.xml link to a Markdown page.
    site: str = choice(
        "auto",
        SITES,
        "where the exports are read: folder (a folder or GitHub: links to .md files), mkdocs (links to the "
        "addresses MkDocs gives the pages, after mkdocs.yml's use_directory_urls), auto (mkdocs when an "
        "mkdocs.yml above exports.dir holds it in its docs folder, else folder)",
    )
    site_url: str = setting(
        "",
        lambda r, v: _site_url(r, v),
        "the https URL exports.dir is published at: the feed's links become absolute, with a rel=self "
        "link (default: mkdocs.yml's site_url, with exports.dir's path in its docs folder)",
        {"type": "string"},
    )
    bib_scope: str = choice(
        "page",
        BIB_SCOPES,
        "page: catalog.bib holds the page's papers; library: every paper of the library (for a thesis), "
        "under the same exclusions",
    )


def _site_url(reading: Reading, value: Any) -> str:
    url = _text(reading, value).strip()
    if url and not url.lower().startswith(("https://", "http://")):
        raise reading.fail(f"must be an http(s) URL, not '{url}'")
    return url + ("" if not url or url.endswith("/") else "/")  # a folder's URL: relative links resolve


def _formats(reading: Reading, value: Any) -> tuple[str, ...]:
    named = list(export_formats.DEFAULT) if value is None else [value] if isinstance(value, str) else value
    known = export_formats.names()
    if not isinstance(named, list) or any(f not in known for f in named):
        raise reading.fail(f"must list some of {', '.join(known)}{_outsider(named, known)}")
    return tuple(dict.fromkeys(named))


def _labels(reading: Reading, value: Any) -> Labels:
    language = reading.earlier.get("language", DEFAULT_LANGUAGE)
    overrides = value or {}
    if not isinstance(overrides, dict):
        raise reading.fail("must map label names to text")
    try:
        return labels_for(language, {name: text_of(overrides, name) for name in overrides})
    except LabelError as exc:
        raise ConfigError(
            f"{where(reading.path, overrides, exc.name)}: config key 'exports.labels': {exc}"
        ) from None


DEFAULT_READ_TAGS = ("read", "status/read", "_read", "✅")
DEFAULT_UNREAD_TAGS = ("unread", "status/unread", "_unread")


@dataclass(frozen=True, slots=True)
class ReconcileConfig:
    read_tags: tuple[str, ...] = names(DEFAULT_READ_TAGS, "Zotero tags that mean read")
    unread_tags: tuple[str, ...] = names(DEFAULT_UNREAD_TAGS, "Zotero tags that mean unread")
    abbreviate_venues: bool = flag(True, "PLDI'21 instead of the full proceedings title")
    venues: Path | None = local_path(None, "your venue abbreviations, on top of the shipped table")
    inbox_collections: tuple[str, ...] = names((), "collection paths whose uncurated items `status` lists")
    inbox_tags: tuple[str, ...] = names((), "tags whose uncurated items `status` lists")


@dataclass(frozen=True, slots=True)
class SyncConfig:
    deadline: float = number(
        DEFAULT_DEADLINE,
        0,
        MAX_DEADLINE,
        "seconds a pull may take; a pull still running then fails, the store untouched",
        f"must be a number of seconds above 0 and at most {MAX_DEADLINE:.0f}",
        above_low=True,
    )
    max_removal: float = number(
        0.3,
        0,
        1,
        "the safety valve: the share of the page's items a pull may remove unasked (--force)",
        "must be a share from 0 to 1 (0.3 lets a pull remove up to 30% of the page's Zotero items)",
    )


@dataclass(frozen=True, slots=True)
class SearchConfig:
    semantic: bool = flag(
        False, "true: also rank by meaning with a model that ships inside an installed package (no download)"
    )


@dataclass(frozen=True, slots=True)
class FulltextConfig:
    enabled: bool = flag(
        False,
        "true: pull Zotero's full-text index of the attachments (the text Zotero extracted) and search it",
    )


@dataclass(frozen=True, slots=True)
class Config:
    path: Path  # the file itself, not a key
    source: SourceConfig
    catalog: Path = local_path(None, "the curated catalogue (YAML)")  # required: load_config checks
    store: Path = local_path(".zotsync/zotsync.sqlite", "the store (SQLite)")
    exports: ExportsConfig = field(default_factory=ExportsConfig)
    reconcile: ReconcileConfig = field(default_factory=ReconcileConfig)
    sync: SyncConfig = field(default_factory=SyncConfig)
    search: SearchConfig = field(default_factory=SearchConfig)
    fulltext: FulltextConfig = field(default_factory=FulltextConfig)
    # The processors' sections (`enrich`, a plugin's), by name, each read by the processor's own
    # `settings` model; a section not given here is its defaults (`section`).
    sections: Mapping[str, Any] = field(default_factory=dict)

    def section(self, name: str) -> Any:
        """The processor `name`'s settings: as read from the file, else its defaults."""
        if name in self.sections:
            return self.sections[name]
        return processor_sections()[name]()

    @property
    def enrich(self) -> EnrichConfig:
        """The `enrich` section (zotsync/processing/enrich/settings.py)."""
        settings: EnrichConfig = self.section("enrich")
        return settings


# The core's sections; each processor's follow (`processor_sections`).
SECTIONS: dict[str, type] = {
    "source": SourceConfig,
    "exports": ExportsConfig,
    "reconcile": ReconcileConfig,
    "sync": SyncConfig,
    "search": SearchConfig,
    "fulltext": FulltextConfig,
}
_TOP_LEVEL = ("catalog", "store")  # keys of Config itself


def processor_sections(plugins: bool = True) -> dict[str, type]:
    """Each processor's section, by the processor's name, in the order they run: the model of its
    settings (its `settings`, a dataclass of `setting` fields), read by the same rules as the core's;
    without `plugins`, the built-in processors' alone. The processors' registry imports this module,
    so it is named here, not imported."""
    sections: dict[str, type] = importlib.import_module("zotsync.processing").sections(plugins)
    return sections


def all_sections(plugins: bool = True) -> dict[str, type]:
    """The core's sections, then the processors'."""
    return {**SECTIONS, **processor_sections(plugins)}


def _key(cls: type, name: str) -> Key:
    key: Key = next(f.metadata["key"] for f in dataclasses.fields(cls) if f.name == name)
    return key


def _keys_of(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls) if "key" in f.metadata]


def config_keys(plugins: bool = False) -> list[str]:
    """Every key of zotsync's own the config file accepts, dotted (`source.type`), in the model's order:
    what docs/configuration.md must document; with `plugins`, the installed processors' too."""
    keys = []
    sections = all_sections(plugins)
    for name in [f.name for f in dataclasses.fields(Config) if f.name not in ("path", "sections")]:
        keys.append(name)
        if name in sections:
            keys += [f"{name}.{leaf}" for leaf in _keys_of(sections[name])]
    for name in [name for name in sections if name not in SECTIONS]:  # the processors'
        keys += [name, *(f"{name}.{leaf}" for leaf in _keys_of(sections[name]))]
    return keys


def json_schema() -> dict[str, Any]:
    """The config file's JSON Schema (draft 2020-12), from the same model: for an editor's completion
    and checks (docs/zotsync.schema.json)."""

    def properties(cls: type) -> dict[str, Any]:
        return {
            f.name: {**f.metadata["key"].schema, "description": f.metadata["key"].doc}
            for f in dataclasses.fields(cls)
            if "key" in f.metadata
        }

    top = {name: properties(Config)[name] for name in _TOP_LEVEL}
    sections = {
        name: {"type": "object", "additionalProperties": False, "properties": properties(cls)}
        for name, cls in all_sections(plugins=False).items()
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "zotsync configuration",
        "type": "object",
        "additionalProperties": False,
        "required": ["source", "catalog"],
        "properties": {"source": sections.pop("source"), **top, **sections},
    }


# -- finding and loading --------------------------------------------------------------------------------


def user_config_path() -> Path:
    """zotsync.yaml in the user's config folder: ~/.config/zotsync on Linux, ~/Library/Application
    Support/zotsync on macOS, %LOCALAPPDATA%\\zotsync on Windows."""
    from platformdirs import user_config_dir

    return Path(user_config_dir("zotsync", appauthor=False)) / CONFIG_NAME


def find_config(explicit: str | None = None, environ: Mapping[str, str] | None = None) -> Path:
    """The config file to use: --config, then $ZOTSYNC_CONFIG (either one must exist), then the first
    of ./zotsync.yaml, ./config/zotsync.yaml and the user's config folder that does."""
    environ = os.environ if environ is None else environ
    named = explicit or environ.get("ZOTSYNC_CONFIG")
    if named:
        # `~` too: no shell expands it in a quoted value, a crontab variable or a systemd Environment=
        return Path(named).expanduser()  # a missing file: load_config says "config file not found: <it>"
    candidates = [*SEARCH_PATHS, user_config_path()]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    looked = ", ".join(str(c) if c.is_absolute() else f"./{c.as_posix()}" for c in candidates)
    above = _config_above()
    advice = (
        f"found {above}: run from there or pass --config"
        if above
        else "run `zotsync init` to start a reading list here"
    )
    raise ConfigError(f"no config file: looked for --config, $ZOTSYNC_CONFIG, {looked}; {advice}")


def _config_above() -> str | None:
    """The nearest config in a folder above this one (`../zotsync.yaml`), to point at, never to use: the
    discovery order is the contract's."""
    here = Path.cwd()
    for up, folder in enumerate(here.parents, start=1):
        for candidate in SEARCH_PATHS:
            if (folder / candidate).is_file():
                return (Path(*[".."] * up) / candidate).as_posix()
    return None


def load_config(path: Path, environ: Mapping[str, str] | None = None) -> Config:
    raw = load_yaml(path, "config file")
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: the config must be a mapping of keys")
    _check_keys(path, raw)
    source = _source(path, raw, os.environ if environ is None else environ)
    catalog = _read(path, raw, "catalog", "catalog", _key(Config, "catalog"), {})
    if catalog is None:
        raise ConfigError(f"{path}: missing config key 'catalog' (the curated catalogue YAML)")
    core = {name: _section(path, raw, name, cls) for name, cls in SECTIONS.items() if name != "source"}
    processors = {name: _section(path, raw, name, cls) for name, cls in processor_sections().items()}
    store = _read(path, raw, "store", "store", _key(Config, "store"), {})
    return Config(path=path, source=source, catalog=catalog, store=store, sections=processors, **core)


def _check_keys(path: Path, raw: Mapping[str, Any]) -> None:
    """Unknown keys (typos, a key in the wrong section) and sections that are not mappings."""
    sections = all_sections()
    for key, value in raw.items():
        if key not in sections and key not in _TOP_LEVEL:
            raise ConfigError(f"{where(path, raw, key)}: unknown config key '{key}'{_did_you_mean(key)}")
        if key not in sections or value is None:
            continue
        if not isinstance(value, dict):
            raise ConfigError(f"{where(path, raw, key)}: config key '{key}' must be a mapping")
        known = _keys_of(sections[key]) + (_type_keys(value) if key == "source" else [])
        for leaf in value:
            if leaf not in known:
                name = f"{key}.{leaf}"
                raise ConfigError(
                    f"{where(path, value, leaf)}: unknown config key '{name}'{_did_you_mean(name)}"
                )


def _type_keys(section: Mapping[str, Any]) -> list[str]:
    """The keys a source type of its own adds to the `source` section (`SourceType.settings`); none for
    a type that adds none, or a type no registry knows (`source.type` says so)."""
    kind = section.get("type")
    registry = _source_types()
    if not isinstance(kind, str) or kind not in registry.names():
        return []
    settings = registry.get(kind).settings
    return _keys_of(settings) if settings else []


def _did_you_mean(name: str) -> str:
    """` (did you mean 'source.library_id'?)` for a typo, or for a key put in the wrong section."""
    parent, _, leaf = name.rpartition(".")
    known = [key.rpartition(".") for key in config_keys(plugins=True)]
    siblings = [k_leaf for k_parent, _, k_leaf in known if k_parent == parent]
    near = difflib.get_close_matches(leaf, siblings, n=1, cutoff=0.6)
    if near:
        return f" (did you mean '{f'{parent}.' if parent else ''}{near[0]}'?)"
    moved = [
        f"{k_parent}.{k_leaf}" if k_parent else k_leaf for k_parent, _, k_leaf in known if k_leaf == leaf
    ]
    return f" (did you mean '{moved[0]}'?)" if moved else ""


def _read(
    path: Path, section: Mapping[str, Any], key: str, name: str, spec: Key, earlier: dict[str, Any]
) -> Any:
    return spec.parse(Reading(path, section, key, name, earlier), section.get(key))


def _section(path: Path, raw: Mapping[str, Any], name: str, cls: type) -> Any:
    """A section's every key, read from the file or (absent) from its default, in the model's order."""
    section = raw.get(name) or {}
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        values[f.name] = _read(path, section, f.name, f"{name}.{f.name}", f.metadata["key"], values)
    return cls(**values)


def _source(path: Path, raw: Mapping[str, Any], environ: Mapping[str, str]) -> SourceConfig:
    """The source section with the environment's overrides, checked as a whole: what each source type
    needs, and the messages point at where the user wrote the value (a line, or a variable)."""
    src = raw.get("source") or {}
    values = {
        key: _text(Reading(path, src, key, f"source.{key}", {}), src.get(key))
        for key in _keys_of(SourceConfig)
    }
    from_env: dict[str, str] = {}  # source key → the environment variable that set it
    for variable, key in ENV_OVERRIDES.items():
        if environ.get(variable):
            values[key] = environ[variable]
            from_env[key] = variable
    register_url(values["base_url"])  # a password in it is masked like the API key, from the start

    def named(key: str) -> str:
        """`file:line: config key 'source.x'`, or the environment variable when the value came from one:
        an error must point at where the user wrote the value."""
        if key in from_env:
            return f"{path}: {from_env[key]} (for 'source.{key}')"
        return f"{where(path, src, key)}: config key 'source.{key}'"

    if not values["type"] and not values["path"] and not values["base_url"]:
        # an empty file, or a source without a type: say so, not "snapshot needs a path" (the default
        # type is for a config that names a snapshot file and nothing else)
        what = (
            f"{where(path, raw, 'source')}: config key 'source.type' is missing"
            if src
            else f"{path}: no source"
        )
        raise ConfigError(
            f"{what}: set source.type (web, local or snapshot) and where the library is "
            "(`zotsync init` writes a commented config; docs/configuration.md)"
        )
    kind = _source_type(Reading(path, src, "type", "source.type", {}), values["type"] or None)
    library_type = values["library_type"] or "user"
    if library_type not in ("user", "group"):
        raise ConfigError(f"{named('library_type')} must be user or group, not '{library_type}'")
    api_key = _api_key(path, src, values["api_key"])
    if values["base_url"] and not values["base_url"].startswith(("http://", "https://")):
        raise ConfigError(
            f"{where(path, src, 'base_url')}: config key 'source.base_url' (or ZOTERO_API_BASE) must be an "
            "http:// or https:// URL"
        )
    source_type = _source_types().get(kind)
    source_type.check(SourceGiven(path, src, values, from_env))  # what this type needs
    reading = Reading(path, src, "path", "source.path", {})
    settings = source_type.settings
    return SourceConfig(
        type=kind,
        path=reading.local(values["path"]) if values["path"] else None,
        library_type=library_type,
        library_id=values["library_id"],
        api_key=api_key,
        base_url=(values["base_url"] or DEFAULT_BASE_URL).rstrip("/"),
        options=_section(path, raw, "source", settings) if settings else None,
    )


def _api_key(path: Path, section: Mapping[str, Any], raw: str) -> str:
    """The key without the whitespace a secret file, a CRLF environment file or a YAML block scalar
    leaves around it; a key with whitespace or control characters inside is refused without showing it."""
    register(raw)
    key = raw.strip()
    if any(c.isspace() or not c.isprintable() for c in key):
        raise ConfigError(
            f"{where(path, section, 'api_key')}: the API key ('source.api_key' or ZOTERO_API_KEY) holds "
            "whitespace or control characters inside it; a Zotero API key is one word of letters and digits"
        )
    return key
