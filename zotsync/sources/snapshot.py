"""A library saved as one JSON file in the Web API's own format (the bundled demo is one)."""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import ConfigError, SourceError
from ..fingerprint import file_digest
from ..model import InvalidObject
from ..store import Changes
from .base import split_objects


class SnapshotSource:
    def __init__(self, path: Path) -> None:
        self.path = path

    requests = 0  # reads a local file: no HTTP

    @property
    def id(self) -> str:
        return f"snapshot:{self.path}"

    def fingerprint(self) -> str | None:
        """The file's SHA-256, taken before any parsing: the same bytes are the same library. None when
        unreadable (`changes` then reports why)."""
        return file_digest(self.path)

    def changes(self, since: int | None) -> Changes | None:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ConfigError(f"snapshot not found: {self.path}") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise SourceError(f"cannot read snapshot {self.path}: {exc}") from None
        try:
            objects = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SourceError(f"{self.path}:{exc.lineno}: snapshot is not valid JSON: {exc.msg}") from None
        if not isinstance(objects, list) or not all(isinstance(o, dict) for o in objects):
            raise SourceError(f"{self.path}: a snapshot is a JSON array of Zotero API objects")
        try:
            items, collections = split_objects(objects)
        except InvalidObject as exc:
            raise SourceError(f"{self.path}: {exc}") from None
        except (KeyError, TypeError, ValueError) as exc:
            raise SourceError(f"{self.path}: an object lacks a valid {exc} field") from None
        library = next((o["library"] for o in objects if isinstance(o.get("library"), dict)), {})
        version = max((o.version for o in (*items, *collections)), default=0)
        # A snapshot is the whole library, so it also tells what was deleted: whatever it lacks. It is
        # read whole every time because a hand-edited file need not bump any version.
        return Changes(
            library_version=version,
            items=tuple(items),
            collections=tuple(collections),
            complete=True,
            trust_versions=False,
            library_type=str(library.get("type", "user")),
            library_id=str(library.get("id", "")),
            library_name=str(library.get("name", "")),
        )
