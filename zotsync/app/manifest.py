"""The manifest beside the exports (`exports/.zotsync-manifest.json`): what the published exports need to
go on from a store that was lost.

The store keeps which files zotsync wrote (and their digests), the page's last rows (what CHANGES.md and
the feed compare with) and the feed's entries. A runner whose store was lost (a CI cache evicted) would
otherwise start over: rewrite the feed with every entry gone, and leave every note page alone as a file
it did not write. So each sync that exports also writes this manifest, committed with the exports; a
store that has never exported takes it over before its first export. A file listed there is zotsync's
only while its bytes match the listed digest: a user's file, or one edited since, is still never
touched.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from ..errors import ExportError
from ..outputs import FileRecord, read_regular, write_atomically
from ..store import Store

log = logging.getLogger("zotsync")

NAME = ".zotsync-manifest.json"
FORMAT = 1  # the manifest's own version: a manifest of another is not read


def write_manifest(folder: Path, store: Store, dry_run: bool = False) -> None:
    """The manifest of what the store holds after an export into `folder` (exports.dir); nothing is
    written in a dry run."""
    if dry_run:
        return
    from .changes import public_settings  # what renders the page: an unchanged sync never loads it

    files = {}
    for name, record in store.export_files().items():
        path = Path(name)
        if path.is_relative_to(folder):
            files[path.relative_to(folder).as_posix()] = record.sha256
    state = store.sync_state
    manifest = {
        "zotsync": FORMAT,
        "files": dict(sorted(files.items())),
        "settings": public_settings(state.page_settings),  # never the names of private collections
        "rows": store.catalogue_rows(),
        "feed": store.feed_entries(),
    }
    write_atomically(folder / NAME, _dumps(manifest))


def ensure_manifest(folder: Path, store: Store, dry_run: bool = False) -> None:
    """Write the manifest if it is not there (a sync that renders nothing, after an upgrade)."""
    if not dry_run and not (folder / NAME).exists():
        write_manifest(folder, store)


def adopt_manifest(folder: Path, store: Store) -> None:
    """Before the first export of a store: take over the manifest's page rows, feed and files (those
    whose bytes still match), so that this sync goes on where the last one that wrote them left off. A
    store that has exported keeps its own record; a missing manifest leaves the store as it is, and an
    unreadable one is said in one line."""
    if store.sync_state.catalogue_rows_at is not None or store.export_files():
        return
    path = folder / NAME
    try:
        raw = read_regular(path)
        manifest = json.loads(raw) if raw is not None else None
    except (ExportError, ValueError) as exc:
        log.warning("%s cannot be read (%s): the exports start over", path, exc)
        return
    if manifest is None:
        return
    if not isinstance(manifest, dict) or manifest.get("zotsync") != FORMAT:
        log.warning("%s is not a manifest this zotsync reads: the exports start over", path)
        return
    try:
        files = _held(folder, manifest.get("files") or {})
        rows = manifest.get("rows")
        feed = [(*entry[:7], tuple(entry[7]), *entry[8:]) for entry in manifest.get("feed") or []]
        if files:
            store.update_export_files(files, {}, ())
        if rows is not None:
            store.replace_catalogue_rows((tuple(row) for row in rows), feed, manifest.get("settings"))
    except (TypeError, IndexError, ValueError) as exc:
        log.warning("%s is damaged (%s): the exports start over", path, exc)
        store.record_export(None, {})


def _held(folder: Path, files: Mapping[str, str]) -> dict[str, FileRecord]:
    """The files of the manifest that are still as it lists them (path in `folder` → record)."""
    held = {}
    for name, digest in files.items():
        relative = PurePosixPath(name)
        if relative.is_absolute() or ".." in relative.parts:
            continue  # never a file outside the exports
        path = folder.joinpath(*relative.parts)
        record = FileRecord.of(path)
        if record is not None and record.sha256 == digest:
            held[str(path)] = record
    return held


def _dumps(manifest: Mapping[str, Any]) -> str:
    """JSON with one file, row or feed entry a line, so that a commit's diff shows what changed."""
    parts = []
    for key, value in manifest.items():
        if isinstance(value, dict) and value:
            inner = ",\n".join(f"  {_json(k)}: {_json(v)}" for k, v in value.items())
            parts.append(f"{_json(key)}: {{\n{inner}\n}}")
        elif isinstance(value, list) and value:
            inner = ",\n".join(f"  {_json(v)}" for v in value)
            parts.append(f"{_json(key)}: [\n{inner}\n]")
        else:
            parts.append(f"{_json(key)}: {_json(value)}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)
