"""Fingerprints of everything an export is made from, so a sync can tell that nothing can have changed.

A sync whose pull changed nothing would render the same bytes again if the catalogue, the config, the
venue table, zotsync's own code and the store's content are what the last export saw — and the export
files on disk are still the ones it wrote. `ExportRecord` remembers all of that; anything that differs,
or cannot be read, means "render again", never "skip".
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from . import __version__
from .config import Config
from .errors import ZotsyncError
from .inputs import open_input

_PACKAGE = Path(__file__).resolve().parent


def file_digest(path: Path) -> str | None:
    """SHA-256 of a regular file's bytes, streamed; None when it cannot be read (missing, a folder, a
    pipe or a device, which would never end: what reads it next says why)."""
    try:
        with open_input(path, str(path)) as stream:
            return hashlib.file_digest(stream, "sha256").hexdigest()
    except (OSError, ZotsyncError):
        return None


@cache
def code_digest() -> str:
    """zotsync's version and source (a changed renderer must re-render even at the same version)."""
    digest = hashlib.sha256(f"{__version__} {sys.version_info[:3]}".encode())
    for path in sorted(_PACKAGE.rglob("*")):
        if path.suffix in (".py", ".yaml") and "__pycache__" not in path.parts:
            digest.update(path.relative_to(_PACKAGE).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def config_digest(config: Config) -> str:
    """Every setting, the API key left out (it changes what may be read, not what is written)."""
    public = dataclasses.replace(config, source=dataclasses.replace(config.source, api_key=""))
    return hashlib.sha256(repr(public).encode()).hexdigest()


def export_inputs(config: Config, catalogue_digest: str | None) -> dict[str, str]:
    """The fingerprints of what the page is made of, apart from the store."""
    venues = config.reconcile.venues if config.reconcile.abbreviate_venues else None
    return {
        "code": code_digest(),
        "config": config_digest(config),
        "catalogue": catalogue_digest or "unreadable",
        "venues": (file_digest(venues) or "unreadable") if venues else "",
    }


@dataclass(frozen=True, slots=True)
class ExportRecord:
    """What the last complete sync exported: from which inputs, at which store generation, and the
    SHA-256 and size of each file it left."""

    inputs: Mapping[str, str]
    generation: int
    files: Mapping[str, tuple[int, str]]  # path → (size, SHA-256)

    @classmethod
    def of(cls, inputs: Mapping[str, str], generation: int, paths: Iterable[Path]) -> ExportRecord | None:
        """None unless every path is a regular file: a device or FIFO keeps nothing to compare (and
        reading a FIFO back would wait for a writer forever), so the next sync renders again."""
        files = {}
        for path in paths:
            if path.is_symlink() or not path.is_file():
                return None
            digest = file_digest(path)
            if digest is None:
                return None
            files[str(path)] = (path.stat().st_size, digest)
        return cls(dict(inputs), generation, files)

    def dumps(self) -> str:
        return json.dumps(
            {"inputs": self.inputs, "generation": self.generation, "files": self.files}, sort_keys=True
        )

    @classmethod
    def loads(cls, text: str | None) -> ExportRecord | None:
        """None for a missing or unreadable record: the next sync renders."""
        if not text:
            return None
        try:
            raw = json.loads(text)
            files = {str(path): (int(size), str(digest)) for path, (size, digest) in raw["files"].items()}
            return cls(dict(raw["inputs"]), int(raw["generation"]), files)
        except (ValueError, KeyError, TypeError, AttributeError):
            return None

    def still_holds(self, inputs: Mapping[str, str], generation: int, paths: Iterable[Path]) -> bool:
        """Whether exporting now would write exactly these files again: the same inputs, the same store
        content, and each file still on disk as it was written."""
        wanted = [str(path) for path in paths]
        if (
            dict(inputs) != dict(self.inputs)
            or generation != self.generation
            or sorted(wanted) != sorted(self.files)
        ):
            return False
        for path in wanted:
            size, digest = self.files[path]
            try:
                if Path(path).stat().st_size != size:
                    return False
            except OSError:
                return False
            if file_digest(Path(path)) != digest:
                return False
        return True
