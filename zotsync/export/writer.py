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

- A temporary file a killed run left beside a file zotsync writes (`.<name>.<8 letters>.tmp`, the
  name `outputs.stage` gives it) goes once it is `STALE_AFTER` old: every write of one is over in
  seconds, and this run holds the store's lock. No other file goes, whatever its name.

Unchanged bytes are never rewritten, so an unchanged file keeps its modification time.
"""

from __future__ import annotations

import logging
import os
import re
import stat
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from hashlib import sha256
from pathlib import Path

from ..errors import ExportError
from ..formats import Output
from ..outputs import FileRecord, read_regular, write_atomically, write_together
from ..plan import ExportPlan, FileStep, Step

log = logging.getLogger("zotsync")

# The temporary file `outputs.stage` writes beside `<name>` (tempfile.mkstemp: 8 of [a-z0-9_]).
_TEMPORARY = re.compile(r"\.(?P<name>.+)\.[a-z0-9_]{8}\.tmp")
# How old a temporary must be to be stale: a write stages, flushes and renames it within seconds, so one
# this old belongs to a run that was killed, not to one writing now (a concurrent `export`, say).
STALE_AFTER = 600.0


@dataclass(slots=True)
class WriteResult:
    written: list[tuple[Path, bool]] = field(default_factory=list)  # each file written, and if it changed
    records: dict[str, FileRecord] = field(default_factory=dict)  # path → record, of every file now ours
    made_from: dict[str, str] = field(default_factory=dict)  # path → what it was made from, where known
    removed: list[Path] = field(default_factory=list)
    swept: list[Path] = field(default_factory=list)  # stale temporaries of killed runs, removed


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
    return preview(decided) if dry_run else apply_writes(decided, known, folder)


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
        # A file without a record is read once: absent or holding these bytes, it becomes zotsync's.
        found = _step(path, data, digest, record) if record is not None else _on_disk(path, data)
        if found is None:
            plan.add(FileStep(path, Step.LEAVE, why=f"{path} was not written by zotsync: left as it is"))
            continue
        plan.add(FileStep(path, found, digest, made_from=output.made_from, data=data))
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


def apply_writes(plan: ExportPlan, known: Mapping[str, FileRecord], folder: Path) -> WriteResult:
    """Do what `plan` says: the page files together, then each other file; then the stale temporaries
    killed runs left beside zotsync's files in `folder` go."""
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
    # CHANGES.md: written beside the pages by the change digest (app.changes), with the same temporaries.
    result.swept = sweep_temporaries([*result.records, *known, folder / "CHANGES.md"], time.time())
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


def sweep_temporaries(files: Iterable[Path | str], now: float) -> list[Path]:
    """Remove the stale temporaries beside `files` (the files zotsync writes): a regular file named
    `.<name>.<8 letters>.tmp` where `<name>` is one of `files` in that folder, last written more than
    `STALE_AFTER` seconds before `now`. Anything else, a user's `.notes.tmp` included, is left alone."""
    names: dict[str, set[str]] = {}
    for each in files:
        folder, name = os.path.split(each)
        names.setdefault(folder, set()).add(name)
    swept = []
    for folder, owned in names.items():
        try:
            with os.scandir(folder) as entries:
                found = [
                    entry
                    for entry in entries
                    if entry.name.endswith(".tmp")
                    and (match := _TEMPORARY.fullmatch(entry.name)) is not None
                    and match["name"] in owned
                ]
        except OSError:
            continue  # the folder is gone or unreadable: nothing of ours to sweep there
        for entry in found:
            try:
                info = entry.stat(follow_symlinks=False)
                if stat.S_ISREG(info.st_mode) and now - info.st_mtime > STALE_AFTER:
                    os.unlink(entry.path)
                    swept.append(Path(entry.path))
            except OSError:
                continue  # gone meanwhile, or not ours to remove: left as it is
    for path in swept:
        log.info("removed %s, left behind by a run that was stopped", path)
    return swept


def _remember(result: WriteResult, path: Path, data: bytes) -> None:
    record = FileRecord.of(path, data)
    if record is not None:  # a device or FIFO keeps nothing to compare
        result.records[str(path)] = record


def _step(path: Path, data: bytes, digest: str, record: FileRecord | None) -> Step:
    """MAKE or UNCHANGED: a file still as its record says is told by the digests, without a read."""
    if record is not None and record.holds(path):
        return Step.UNCHANGED if record.sha256 == digest else Step.MAKE
    return _on_disk(path, data) or Step.MAKE


def _on_disk(path: Path, data: bytes) -> Step | None:
    """UNCHANGED when `path` is a regular file holding `data`, MAKE when there is none, None when
    something else is there (other bytes, a link, a folder, …: not zotsync's to replace unless it is
    on the record)."""
    try:
        held = read_regular(path)
    except ExportError:
        return None
    if held is None:
        return Step.MAKE
    return Step.UNCHANGED if held == data else None
