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
from pathlib import Path

from ..errors import ExportError
from ..formats import Output
from ..outputs import FileRecord, read_regular, write_atomically, write_together

log = logging.getLogger("zotsync")


@dataclass(slots=True)
class WriteResult:
    written: list[tuple[Path, bool]] = field(default_factory=list)  # each file written, and if it changed
    records: dict[str, FileRecord] = field(default_factory=dict)  # path → record, of every file now ours
    made_from: dict[str, str] = field(default_factory=dict)  # path → what it was made from, where known
    removed: list[Path] = field(default_factory=list)


def write_exports(
    folder: Path, pages: Iterable[Output], others: Iterable[Output], known: Mapping[str, FileRecord]
) -> WriteResult:
    """Write `pages` together and `others` one by one into `folder`; `known`: the record of what zotsync
    wrote before (absolute path → record)."""
    result = WriteResult()
    page_files = [(folder / output.path, output.data) for output in pages]
    for path, changed in write_together(page_files):
        result.written.append((path, changed))
        _remember(result, path, dict(page_files)[path])
    for output in others:
        path = folder / output.path
        if output.made_from is not None:
            result.made_from[str(path)] = output.made_from
        if output.kept and str(path) in known:  # as the last export left it (its exporter checked)
            result.records[str(path)] = known[str(path)]
            continue
        data = output.data
        if str(path) not in known and not _absent_or_holding(path, data):
            log.warning("%s was not written by zotsync: left as it is", path)
            result.made_from.pop(str(path), None)
            continue
        if write_atomically(path, data):  # only a file that changed is named (there may be many)
            result.written.append((path, True))
        _remember(result, path, data)
    for name, record in known.items():
        path = Path(name)
        if name in result.records or not path.is_relative_to(folder):
            continue
        if record.holds(path):
            path.unlink()
            result.removed.append(path)
        elif path.exists():
            log.warning("%s changed since zotsync wrote it: left as it is, no longer updated", path)
    return result


def _remember(result: WriteResult, path: Path, data: bytes) -> None:
    record = FileRecord.of(path, data)
    if record is not None:  # a device or FIFO keeps nothing to compare
        result.records[str(path)] = record


def _absent_or_holding(path: Path, data: bytes) -> bool:
    try:
        held = read_regular(path)
    except ExportError:
        return False  # a link, a folder, …: not ours to replace
    return held is None or held == data
