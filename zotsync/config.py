"""Typed configuration: the YAML file, then environment overrides, validated into one clear message."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .labels import DEFAULT_LANGUAGE, LANGUAGES, LabelError, Labels, labels_for
from .secrets import register
from .yamlio import load_yaml, text_of, where

# Where a config is looked for when neither --config nor $ZOTSYNC_CONFIG names one, in order; the
# user's config folder (platformdirs) comes last.
SEARCH_PATHS = (Path("zotsync.yaml"), Path("config/zotsync.yaml"))
CONFIG_NAME = "zotsync.yaml"
SOURCE_TYPES = ("snapshot", "web", "local")
FORMATS = ("md", "csv")
DEFAULT_BASE_URL = "https://api.zotero.org"
DEFAULT_READ_TAGS = ("status/read", "_read", "✅")
DEFAULT_DEADLINE = 600.0  # seconds a pull may take before it gives up: an unattended run always ends
MAX_DEADLINE = 86400.0
DEFAULT_MAX_REMOVAL = 0.3  # the safety valve: the share of the page a pull may remove unasked

ENV_OVERRIDES = {
    "ZOTERO_API_KEY": "api_key",
    "ZOTERO_LIBRARY_ID": "library_id",
    "ZOTERO_LIBRARY_TYPE": "library_type",
    "ZOTERO_API_BASE": "base_url",
}

# Every key the file may hold; anything else is a typo the user should hear about.
SCHEMA: dict[str, Any] = {
    "source": {
        "type": None,
        "path": None,
        "library_type": None,
        "library_id": None,
        "api_key": None,
        "base_url": None,
    },
    "catalog": None,
    "store": None,
    "exports": {"dir": None, "formats": None, "archive_link": None, "language": None, "labels": None},
    "reconcile": {
        "read_tags": None,
        "abbreviate_venues": None,
        "venues": None,
        "inbox_collections": None,
        "inbox_tags": None,
    },
    "sync": {"deadline": None, "max_removal": None},
}


@dataclass(frozen=True, slots=True)
class SourceConfig:
    type: str = "snapshot"
    path: Path | None = None
    library_type: str = "user"
    library_id: str = ""
    api_key: str = field(default="", repr=False)  # never shown, not even in a repr
    base_url: str = DEFAULT_BASE_URL

    @property
    def local_api(self) -> bool:
        """`type: local` with a `base_url`: the Zotero desktop's local API instead of zotero.sqlite."""
        return self.type == "local" and self.path is None


@dataclass(frozen=True, slots=True)
class ExportsConfig:
    dir: Path
    formats: tuple[str, ...] = FORMATS
    archive_link: str = ""  # template for the 归档标签 link of rows without curated links; {key} = item key
    language: str = DEFAULT_LANGUAGE  # the built-in words of the Markdown page
    labels: Labels = field(default_factory=labels_for)  # those words, with exports.labels applied


@dataclass(frozen=True, slots=True)
class ReconcileConfig:
    read_tags: tuple[str, ...] = DEFAULT_READ_TAGS
    abbreviate_venues: bool = True  # PLDI'21 instead of the full proceedings title
    venues: Path | None = None  # the user's venue abbreviations, on top of the shipped table
    inbox_collections: tuple[str, ...] = ()  # collection paths whose uncurated items `status` lists
    inbox_tags: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SyncConfig:
    deadline: float = DEFAULT_DEADLINE  # seconds; a pull still running then fails, the store untouched
    max_removal: float = DEFAULT_MAX_REMOVAL  # a pull removing more of the page is refused (--force)


@dataclass(frozen=True, slots=True)
class Config:
    path: Path
    source: SourceConfig
    catalog: Path
    store: Path
    exports: ExportsConfig
    reconcile: ReconcileConfig = ReconcileConfig()
    sync: SyncConfig = SyncConfig()


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
    _check_keys(path, raw, SCHEMA, "")
    return _build(path, raw, os.environ if environ is None else environ)


def config_keys(schema: Mapping[str, Any] = SCHEMA, prefix: str = "") -> list[str]:
    """Every key the config file accepts, dotted (`source.type`), in SCHEMA's order: what
    docs/configuration.md must document."""
    keys = []
    for key, sub in schema.items():
        keys.append(prefix + key)
        if isinstance(sub, dict):
            keys += config_keys(sub, f"{prefix}{key}.")
    return keys


def _did_you_mean(name: str) -> str:
    """` (did you mean 'source.library_id'?)` for a typo, or for a key put in the wrong section."""
    import difflib

    parent, _, leaf = name.rpartition(".")
    known = [key.rpartition(".") for key in config_keys()]
    siblings = {k_leaf: k_parent for k_parent, _, k_leaf in known if k_parent == parent}
    near = difflib.get_close_matches(leaf, list(siblings), n=1, cutoff=0.6)
    if near:
        return f" (did you mean '{f'{parent}.' if parent else ''}{near[0]}'?)"
    moved = [
        f"{k_parent}.{k_leaf}" if k_parent else k_leaf for k_parent, _, k_leaf in known if k_leaf == leaf
    ]
    return f" (did you mean '{moved[0]}'?)" if moved else ""


def _check_keys(path: Path, raw: Mapping[str, Any], schema: Mapping[str, Any], prefix: str) -> None:
    for key, value in raw.items():
        name = f"{prefix}{key}"
        if key not in schema:
            raise ConfigError(f"{where(path, raw, key)}: unknown config key '{name}'{_did_you_mean(name)}")
        if isinstance(schema[key], dict):
            if value is None:
                continue
            if not isinstance(value, dict):
                raise ConfigError(f"{where(path, raw, key)}: config key '{name}' must be a mapping")
            _check_keys(path, value, schema[key], name + ".")


def _build(path: Path, raw: Mapping[str, Any], environ: Mapping[str, str]) -> Config:
    base = path.parent

    def text(section: Mapping[str, Any], key: str, name: str, default: str = "") -> str:
        value = section.get(key, default)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise ConfigError(f"{where(path, section, key)}: config key '{name}' must be a string")
        return str(value)

    def local(value: str) -> Path:
        return (base / Path(value).expanduser()).resolve() if value else base

    src = raw.get("source") or {}
    values = {key: text(src, key, f"source.{key}") for key in SCHEMA["source"]}
    from_env: dict[str, str] = {}  # source key → the environment variable that set it
    for variable, key in ENV_OVERRIDES.items():
        if environ.get(variable):
            values[key] = environ[variable]
            from_env[key] = variable

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
    kind = values["type"] or "snapshot"
    if kind not in SOURCE_TYPES:
        raise ConfigError(
            f"{where(path, src, 'type')}: config key 'source.type' must be one of "
            f"{', '.join(SOURCE_TYPES)}, not '{kind}'"
        )
    library_type = values["library_type"] or "user"
    if library_type not in ("user", "group"):
        raise ConfigError(f"{named('library_type')} must be user or group, not '{library_type}'")
    api_key = _api_key(path, src, values["api_key"])
    local_api = kind == "local" and bool(values["base_url"])
    if local_api and values["path"]:
        base_url = from_env.get("base_url", "source.base_url")
        raise ConfigError(
            f"{path}: source.type local reads either zotero.sqlite ('source.path') or the Zotero desktop's "
            f"local API ('{base_url}', e.g. http://localhost:23119), not both"
            + (" (unset ZOTERO_API_BASE, or drop source.path)" if "base_url" in from_env else "")
        )
    if kind == "snapshot" and not values["path"]:
        raise ConfigError(f"{path}: source.type snapshot needs config key 'source.path'")
    if kind == "local" and not values["path"] and not local_api:
        raise ConfigError(
            f"{path}: source.type local needs config key 'source.path' (zotero.sqlite) or "
            "'source.base_url' (the Zotero desktop's local API, http://localhost:23119)"
        )
    if values["base_url"] and not values["base_url"].startswith(("http://", "https://")):
        raise ConfigError(
            f"{where(path, src, 'base_url')}: config key 'source.base_url' (or ZOTERO_API_BASE) must be an "
            "http:// or https:// URL"
        )
    if kind == "web" and not values["library_id"].isdigit():
        at = path if "library_id" in from_env else where(path, src, "library_id")
        raise ConfigError(f"{at}: source.type web needs a numeric 'source.library_id' (or ZOTERO_LIBRARY_ID)")
    source = SourceConfig(
        type=kind,
        path=local(values["path"]) if values["path"] else None,
        library_type=library_type,
        library_id=values["library_id"],
        api_key=api_key,
        base_url=(values["base_url"] or DEFAULT_BASE_URL).rstrip("/"),
    )

    catalog = text(raw, "catalog", "catalog")
    if not catalog:
        raise ConfigError(f"{path}: missing config key 'catalog' (the curated catalogue YAML)")

    exports_raw = raw.get("exports") or {}
    formats = exports_raw.get("formats", list(FORMATS))
    if isinstance(formats, str):
        formats = [formats]
    if not isinstance(formats, list) or any(f not in FORMATS for f in formats):
        raise ConfigError(
            f"{where(path, exports_raw, 'formats')}: config key 'exports.formats' must list some of "
            f"{', '.join(FORMATS)}"
        )
    language = text(exports_raw, "language", "exports.language", DEFAULT_LANGUAGE)
    if language not in LANGUAGES:
        raise ConfigError(
            f"{where(path, exports_raw, 'language')}: config key 'exports.language' must be one of "
            f"{', '.join(LANGUAGES)}, not '{language}'"
        )
    labels_raw = exports_raw.get("labels") or {}
    if not isinstance(labels_raw, dict):
        raise ConfigError(
            f"{where(path, exports_raw, 'labels')}: config key 'exports.labels' must map label names to text"
        )
    try:
        labels = labels_for(language, {name: text_of(labels_raw, name) for name in labels_raw})
    except LabelError as exc:
        raise ConfigError(
            f"{where(path, labels_raw, exc.name)}: config key 'exports.labels': {exc}"
        ) from None
    exports = ExportsConfig(
        dir=local(text(exports_raw, "dir", "exports.dir", "exports")),
        formats=tuple(dict.fromkeys(formats)),
        archive_link=text(exports_raw, "archive_link", "exports.archive_link"),
        language=language,
        labels=labels,
    )

    reconcile_raw = raw.get("reconcile") or {}

    def names(key: str, default: tuple[str, ...] = ()) -> tuple[str, ...]:
        value = reconcile_raw.get(key, list(default))
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(
                f"{where(path, reconcile_raw, key)}: config key 'reconcile.{key}' must be a list of names"
            )
        return tuple(value)

    abbreviate = reconcile_raw.get("abbreviate_venues", True)
    if not isinstance(abbreviate, bool):
        raise ConfigError(
            f"{where(path, reconcile_raw, 'abbreviate_venues')}: config key 'reconcile.abbreviate_venues' "
            "must be true or false"
        )
    venues = text(reconcile_raw, "venues", "reconcile.venues")

    return Config(
        path=path,
        source=source,
        catalog=local(catalog),
        store=local(text(raw, "store", "store", ".zotsync/zotsync.sqlite")),
        exports=exports,
        reconcile=ReconcileConfig(
            read_tags=names("read_tags", DEFAULT_READ_TAGS),
            abbreviate_venues=abbreviate,
            venues=local(venues) if venues else None,
            inbox_collections=names("inbox_collections"),
            inbox_tags=names("inbox_tags"),
        ),
        sync=SyncConfig(
            deadline=_deadline(path, raw.get("sync") or {}),
            max_removal=_max_removal(path, raw.get("sync") or {}),
        ),
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


def _deadline(path: Path, section: Mapping[str, Any]) -> float:
    value = section.get("deadline", DEFAULT_DEADLINE)
    if value is None:
        return DEFAULT_DEADLINE
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= MAX_DEADLINE:
        raise ConfigError(
            f"{where(path, section, 'deadline')}: config key 'sync.deadline' must be a number of seconds "
            f"above 0 and at most {MAX_DEADLINE:.0f}"
        )
    return float(value)


def _max_removal(path: Path, section: Mapping[str, Any]) -> float:
    value = section.get("max_removal", DEFAULT_MAX_REMOVAL)
    if value is None:
        return DEFAULT_MAX_REMOVAL
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise ConfigError(
            f"{where(path, section, 'max_removal')}: config key 'sync.max_removal' must be a share "
            "from 0 to 1 (0.3 lets a pull remove up to 30% of the page's Zotero items)"
        )
    return float(value)
