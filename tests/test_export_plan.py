"""The export plan (`export/writer.py: plan_writes`), row by row of its table in docs/development.md ("A
sync is plan → apply"), on real files: it decides, reads, writes nothing; applying it does what it says,
and its preview (what a dry run reports) names the same files."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path, PurePosixPath

from zotsync.export.writer import apply_writes, plan_writes, preview
from zotsync.formats import Output
from zotsync.outputs import FileRecord
from zotsync.plan import Step


def out(path: str, text: str, kept: bool = False) -> Output:
    return Output(
        PurePosixPath(path), text, made_from="head" if path.startswith("notes/") else None, kept=kept
    )


def recorded(path: Path) -> FileRecord:
    record = FileRecord.of(path)
    assert record is not None
    return record


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_every_row_of_the_decision_table(tmp_path: Path) -> None:
    folder = tmp_path / "exports"
    (folder / "notes").mkdir(parents=True)
    files = {
        "catalog.md": "same page\n",  # a page file that already holds its bytes: unchanged
        "catalog.csv": "old,csv\n",  # a page file with other bytes: make
        "notes/KEPTKEPT.md": "kept as it was\n",  # its exporter kept it: keep
        "notes/SAMESAME.md": "same note\n",  # recorded, as recorded, same digest: unchanged
        "notes/EDITEDZT.md": "old note\n",  # recorded, other bytes to write: make
        "notes/USERSOWN.md": "a user's page\n",  # not recorded, other bytes: leave
        "notes/GONEGONE.md": "no longer made\n",  # recorded, made no more, as recorded: remove
        "notes/TOUCHEDX.md": "was zotsync's\n",  # recorded, made no more, changed since: leave
    }
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    ours = set(files) - {"notes/USERSOWN.md"}  # what the last export wrote
    known = {str(folder / name): recorded(folder / name) for name in sorted(ours)}
    (folder / "notes/TOUCHEDX.md").write_text("edited by hand since\n", encoding="utf-8")
    pages = [out("catalog.md", "same page\n"), out("catalog.csv", "new,csv\n")]
    others = [
        out("notes/KEPTKEPT.md", "", kept=True),
        out("notes/SAMESAME.md", "same note\n"),
        out("notes/EDITEDZT.md", "new note\n"),
        out("notes/USERSOWN.md", "zotsync's words\n"),
        out("notes/BRANDNEW.md", "a new page\n"),  # not recorded, absent: make
    ]
    before = snapshot(folder)
    plan = plan_writes(folder, pages, others, known)
    assert snapshot(folder) == before  # deciding writes nothing
    steps = {str(step.path.relative_to(folder)): step.step for step in plan.steps}
    assert steps == {
        "catalog.md": Step.UNCHANGED,
        "catalog.csv": Step.MAKE,
        "notes/KEPTKEPT.md": Step.KEEP,
        "notes/SAMESAME.md": Step.UNCHANGED,
        "notes/EDITEDZT.md": Step.MAKE,
        "notes/USERSOWN.md": Step.LEAVE,
        "notes/BRANDNEW.md": Step.MAKE,
        "notes/GONEGONE.md": Step.REMOVE,
        "notes/TOUCHEDX.md": Step.LEAVE,
    }
    made = next(step for step in plan.steps if step.path == folder / "notes/EDITEDZT.md")
    assert made.digest == hashlib.sha256(b"new note\n").hexdigest()

    shown = preview(plan)
    done = apply_writes(plan, known, folder)
    assert [(str(p), w) for p, w in shown.written] == [(str(p), w) for p, w in done.written]
    assert shown.removed == done.removed == [folder / "notes/GONEGONE.md"]
    assert set(shown.records) == set(done.records)
    after = snapshot(folder)
    assert after["catalog.csv"] == b"new,csv\n" and after["notes/EDITEDZT.md"] == b"new note\n"
    assert after["notes/BRANDNEW.md"] == b"a new page\n"
    assert after["notes/USERSOWN.md"] == b"a user's page\n"
    assert after["notes/TOUCHEDX.md"] == b"edited by hand since\n"
    assert after["notes/KEPTKEPT.md"] == b"kept as it was\n"
    assert "notes/GONEGONE.md" not in after


def test_an_unchanged_recorded_file_is_not_read(tmp_path: Path) -> None:
    """A file still as its record says (size and modification time) is told by the digests alone: a
    file the plan would have to read, made unreadable, is not read."""
    folder = tmp_path / "exports"
    (folder / "notes").mkdir(parents=True)
    page = folder / "notes" / "SAMESAME.md"
    page.write_text("same note\n", encoding="utf-8")
    known = {str(page): recorded(page)}
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        # root reads whatever the mode says: replace the bytes by a stand-in of the same size and time
        info = page.stat()
        page.write_text("XXXX note\n", encoding="utf-8")
        os.utime(page, ns=(info.st_atime_ns, info.st_mtime_ns))
        plan = plan_writes(folder, [], [out("notes/SAMESAME.md", "same note\n")], known)
        assert [step.step for step in plan.steps] == [Step.UNCHANGED]
        return
    page.chmod(0)
    try:
        plan = plan_writes(folder, [], [out("notes/SAMESAME.md", "same note\n")], known)
    finally:
        page.chmod(0o644)
    assert [step.step for step in plan.steps] == [Step.UNCHANGED]
