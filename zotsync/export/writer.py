"""Writing what the exporters of one sync made, in `exports.dir`.

- The page files (each format's `Exporter.page`: catalog.md, catalog.csv, …) change together: all of
  them are staged before any is renamed into place (`outputs.write_together`). They are zotsync's by
  name, as the config names the folder they go to.
- Every other file (a note page, the tags page) is replaced on its own, atomically, and only if zotsync
  wrote it before (it is in the store's record), is not there, or already holds these bytes: a file of
  that name zotsync did not write is left alone, and said so. An output `kept` by its exporter stays as
  the last export left it, with its record. Only those that changed are reported (there may be 30,000).
- A file zotsync wrote before and no longer writes goes, unless it was changed since (then it stays,
  and is said so). Only files in `exports.dir` go; the record forgets the others.

Unchanged bytes are never rewritten, so an unchanged file keeps its modification time.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from hashlib import sha256
from pathlib import Path

from ..errors import ExportError
from ..formats import Output
from ..outputs import FileRecord, read_regular, write_atomically, write_together
from ..plan import ExportPlan, FileStep, Step

log = logging.getLogger("zotsync")


@dataclass(slots=True)
class WriteResult:
    written: list[tuple[Path, bool]] = field(default_factory=list)  # each file written, and if it changed
    records: dict[str, FileRecord] = field(default_factory=dict)  # path → record, of every file now ours
    made_from: dict[str, str] = field(default_factory=dict)  # path → what it was made from, where known
    removed: list[Path] = field(default_factory=list)


def write_exports(
    folder: Path,
    pages: Iterable[Output],
    others: Iterable[Output],
    known: Mapping[str, FileRecord],
    dry_run: bool = False,
) -> WriteResult:
    """Write `pages` together and `others` one by one into `folder`; `known`: the record of what zotsync
    wrote before (absolute path → record). `dry_run`: the result says what would be written and
    removed, and nothing is."""
    decided = plan_writes(folder, pages, others, known)
    return preview(decided) if dry_run else apply_writes(decided, known)


def plan_writes(
    folder: Path, pages: Iterable[Output], others: Iterable[Output], known: Mapping[str, FileRecord]
) -> ExportPlan:
    """What writing these outputs does to each file (the module's rules), decided before any is
    written. Reads the files; writes none."""
    plan = ExportPlan()
    made: set[str] = set()
    for output in pages:
        path, data = folder / output.path, output.data
        made.add(str(path))
        digest = sha256(data).hexdigest()
        step = _step(path, data, digest, known.get(str(path)))
        plan.add(FileStep(path, step, digest, page=True, data=data))
    for output in others:
        path = folder / output.path
        made.add(str(path))
        record = known.get(str(path))
        if output.kept and record is not None:  # as the last export left it (its exporter checked)
            plan.add(FileStep(path, Step.KEEP, record.sha256, made_from=output.made_from))
            continue
        data = output.data
        digest = sha256(data).hexdigest()
        if record is None and not _absent_or_holding(path, data):
            plan.add(FileStep(path, Step.LEAVE, why=f"{path} was not written by zotsync: left as it is"))
            continue
        step = _step(path, data, digest, record)
        plan.add(FileStep(path, step, digest, made_from=output.made_from, data=data))
    for name, record in known.items():
        path = Path(name)
        if name in made or not path.is_relative_to(folder):
            continue
        if record.holds(path):
            plan.add(FileStep(path, Step.REMOVE))
        elif path.exists():
            why = f"{path} changed since zotsync wrote it: left as it is, no longer updated"
            plan.add(FileStep(path, Step.LEAVE, why=why))
    return plan


def apply_writes(plan: ExportPlan, known: Mapping[str, FileRecord]) -> WriteResult:
    """Do what `plan` says: the page files together, then each other file."""
    result = WriteResult()
    pages = {each.path: each.data for each in plan.steps if each.page}
    for path, changed in write_together(list(pages.items())):
        result.written.append((path, changed))
        _remember(result, path, pages[path])
    for each in plan.steps:
        if each.page:
            continue
        path = each.path
        if each.made_from is not None and each.step is not Step.LEAVE:
            result.made_from[str(path)] = each.made_from
        if each.step is Step.KEEP:
            result.records[str(path)] = known[str(path)]
        elif each.step is Step.LEAVE:
            log.warning("%s", each.why)
        elif each.step is Step.REMOVE:
            path.unlink()
            result.removed.append(path)
        else:
            if write_atomically(path, each.data):  # only a file that changed is named (there may be many)
                result.written.append((path, True))
            _remember(result, path, each.data)
    return result


def preview(plan: ExportPlan) -> WriteResult:
    """What `apply_writes` would report for `plan`, with nothing written: the records are those of the
    bytes it would write (a dry run keeps them in a scratch store only)."""
    result = WriteResult()
    for each in plan.steps:
        path = each.path
        if each.step is Step.LEAVE:
            log.warning("%s", each.why)
            continue
        if each.made_from is not None:
            result.made_from[str(path)] = each.made_from
        if each.step is Step.REMOVE:
            result.removed.append(path)
            continue
        if each.page or each.step is Step.MAKE:
            result.written.append((path, each.step is Step.MAKE))
        result.records[str(path)] = FileRecord(len(each.data), 0, each.digest)
    return result


def _remember(result: WriteResult, path: Path, data: bytes) -> None:
    record = FileRecord.of(path, data)
    if record is not None:  # a device or FIFO keeps nothing to compare
        result.records[str(path)] = record


def _step(path: Path, data: bytes, digest: str, record: FileRecord | None) -> Step:
    """MAKE or UNCHANGED: a file still as its record says is told by the digests, without a read."""
    if record is not None and record.holds(path):
        return Step.UNCHANGED if record.sha256 == digest else Step.MAKE
    return Step.UNCHANGED if _holding(path, data) else Step.MAKE


def _holding(path: Path, data: bytes) -> bool:
    """Whether `path` is a regular file holding `data` (anything else is written, or refused, as the
    write decides)."""
    try:
        return read_regular(path) == data
    except ExportError:
        return False


def _absent_or_holding(path: Path, data: bytes) -> bool:
    try:
        held = read_regular(path)
    except ExportError:
        return False  # a link, a folder, …: not ours to replace
    return held is None or held == data
