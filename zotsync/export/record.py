"""What a sync exported, so that the next one can tell that nothing can have changed.

A sync whose pull changed nothing would render the same bytes again if the catalogue, the config, the
venue table, zotsync's own code and the store's content are what the last export saw — and the files
on disk are still the ones it wrote. `ExportRecord` remembers the first (the export's inputs and the
store's content generation); the store's `export_files` table remembers the second (each file's size,
modification time and SHA-256). Anything that differs, or cannot be read, means "render again", never
"skip".
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .. import fingerprints
from ..inputs import file_digest
from ..outputs import FileRecord

if TYPE_CHECKING:
    from ..config import Config


def export_inputs(config: Config, catalogue_digest: str | None) -> dict[str, str]:
    """The digests of what the page is made of, apart from the store."""
    venues = config.reconcile.venues if config.reconcile.abbreviate_venues else None
    return {
        "code": fingerprints.code_digest(),
        "config": fingerprints.config_digest(config),
        "catalogue": catalogue_digest or "unreadable",
        "venues": (file_digest(venues) or "unreadable") if venues else "",
    }


@dataclass(frozen=True, slots=True)
class ExportRecord:
    """What the last complete sync exported from: its inputs and the store's content and notes
    generations."""

    inputs: Mapping[str, str]
    generation: int
    notes_generation: int = -1  # -1: a record from before note pages, whose notes count as changed

    def dumps(self) -> str:
        return json.dumps(
            {"inputs": self.inputs, "generation": self.generation, "notes_generation": self.notes_generation},
            sort_keys=True,
        )

    @classmethod
    def loads(cls, text: str | None) -> ExportRecord | None:
        """None for a missing or unreadable record: the next sync renders."""
        if not text:
            return None
        try:
            raw = json.loads(text)
            return cls(dict(raw["inputs"]), int(raw["generation"]), int(raw.get("notes_generation", -1)))
        except (ValueError, KeyError, TypeError, AttributeError):
            return None

    def still_holds(
        self,
        inputs: Mapping[str, str],
        generation: int,
        files: Mapping[str, FileRecord | None],
    ) -> bool:
        """Whether exporting now would write these files again, as far as the page goes: the same inputs,
        the same store content (`generation`, the content generation; the notes generation is the
        caller's to compare), and each of the `files` still on disk as it was written."""
        if dict(inputs) != dict(self.inputs) or generation != self.generation:
            return False
        return all(record is not None and record.holds(path) for path, record in files.items())
