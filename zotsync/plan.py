"""What a sync would do, decided before anything is done (octodns' Plan, vdirsyncer's actions).

A sync is *plan → apply*. The pull plan is read from the landing inside its open transaction: what the
pull adds, updates and removes, and which of the page's items leave with it; `raise_if_unsafe` is the
safety valve, and the landing then commits or rolls back. The export plan has one row per file: make,
keep, unchanged, remove — or leave, for a file zotsync may not touch — and the digest it is made from.
It is the one place that decides whether a file is written. `sync --dry-run` prints both and changes
nothing.

Pure: values in, values out; the store and the files are read and written by the callers.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Set
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from .errors import TooMuchRemoval
from .model import Changes

log = logging.getLogger("zotsync")

# The safety valve refuses only a removal of at least this many items, so a tiny library can still lose
# one or two (half of a library of two is not a mass deletion).
MIN_REFUSED_REMOVAL = 3


@dataclass(frozen=True, slots=True)
class PullPlan:
    """What landing one pull does once its items are written: the counts it reports, the items and
    collections it removes, and the page's items that leave with them."""

    items_added: int
    items_updated: int
    removed: tuple[str, ...]  # the item keys the store drops
    collections_removed: tuple[str, ...]
    collections_written: tuple[tuple[str, int, str, str | None], ...]  # (key, version, name, parent)
    on_page: frozenset[str] = frozenset()  # the page's items before the pull (read only for the valve)
    leaving: frozenset[str] = frozenset()  # those of them this pull takes off the page

    def raise_if_unsafe(self, max_removal: float | None) -> None:
        """octodns' TooMuchChange: the library emptied, another library behind the same id, a permission
        change hiding most items — refuse rather than publish an empty page. None: `--force`."""
        gone, of = len(self.leaving), len(self.on_page)
        if max_removal is not None and gone >= MIN_REFUSED_REMOVAL and gone > max_removal * of:
            raise TooMuchRemoval(
                f"this pull would remove {gone} of the {of} Zotero items on the page "
                f"({gone / of:.0%}; sync.max_removal allows {max_removal:.0%}); the store and "
                "the exports are left as they were. If the library really lost them, run the command "
                "again with --force"
            )
        if gone:
            log.debug("this pull removes %d of the %d Zotero items on the page", gone, of)


def leaving(on_page: Set[str], arrived: Mapping[str, bool], changes: Changes, switching: bool) -> set[str]:
    """The keys in `on_page` (regular, top-level, not trashed) that the pull would take off the page:
    arrived deleted, trashed or turned into a child item (`arrived` maps them to False); deleted; missing
    from a complete read; or missing from the library that replaces the store's when the source is
    another one (`switching`)."""
    wholesale = changes.complete or switching
    gone = set()
    for key in on_page:
        stays = arrived.get(key)
        if stays is not None:
            if not stays:
                gone.add(key)
        elif wholesale or key in changes.deleted_items:
            gone.add(key)
    return gone


class Step(Enum):
    """What a sync does with one file of the exports."""

    MAKE = "make"  # written: new, or its bytes change
    UNCHANGED = "unchanged"  # made again, and the file already holds those bytes
    KEEP = "keep"  # not made again: it stays as the last export left it
    REMOVE = "remove"  # zotsync's, no longer made, and as zotsync left it: it goes
    LEAVE = "leave"  # not zotsync's (or changed since): left as it is, and said so


@dataclass(frozen=True, slots=True)
class FileStep:
    path: Path
    step: Step
    digest: str = ""  # the SHA-256 of the bytes it is made of ("" for a file it removes or leaves)
    why: str = ""  # for LEAVE: the line that says so
    page: bool = False  # one of the page files, which change together
    made_from: str | None = None  # what the record keeps beside it (a note page's head)
    data: bytes = field(default=b"", repr=False, compare=False)  # the bytes MAKE or UNCHANGED write


@dataclass(slots=True)
class ExportPlan:
    """One row per file an export touches or decides not to touch, in the order it decided them."""

    steps: list[FileStep] = field(default_factory=list)

    def add(self, step: FileStep) -> None:
        self.steps.append(step)

    def paths(self, *steps: Step) -> list[Path]:
        return [each.path for each in self.steps if each.step in steps]
