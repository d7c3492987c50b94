"""A file or folder zotsync makes that cannot be made or opened — a `--log-file`, the folder
`schedule install` logs to, what `init` writes, `schedule github --output` — is a run-time failure
(exit 1, like an export that cannot be written), not a usage error: one line naming the path and the
reason, and nothing written or left behind."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from conftest import READ_ONLY_REASON
from factories import config_of


def tree(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def one_error_line(err: str) -> str:
    assert err.startswith("zotsync: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    return err.strip()


@pytest.fixture(params=["a folder", "under a file", "under a read-only folder"])
def unopenable(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, str]:
    """A log path that cannot be opened, and the reason the line must give."""
    if request.param == "a folder":
        folder = tmp_path / "logs"
        folder.mkdir()
        return folder, "it is a folder"
    if request.param == "under a file":
        blocker = tmp_path / "not-a-folder"
        blocker.write_text("", encoding="utf-8")
        return blocker / "sub" / "zotsync.log", f"{blocker} is a file, not a folder"
    folder = request.getfixturevalue("read_only")
    return folder / "logs" / "zotsync.log", READ_ONLY_REASON


def test_an_unopenable_log_file_is_exit_1_one_line_and_nothing_runs(project: Path, run, unopenable) -> None:
    path, reason = unopenable
    before = tree(project)
    result = run("--log-file", str(path), "--config", config_of(project), "sync")
    assert result.code == 1
    line = one_error_line(result.err)
    assert line.startswith(f"zotsync: error: cannot open the log file {path}: ") and reason in line, line
    assert tree(project) == before  # no store, no export, no folder (the project is the temp folder)


def test_a_missing_log_folder_is_made_but_a_folder_is_no_log_file(project: Path, run, tmp_path: Path) -> None:
    made = tmp_path / "new" / "logs" / "zotsync.log"
    made.mkdir(parents=True)  # the log path is a folder: the folders above it were not made by zotsync
    result = run("--log-file", str(made), "--config", config_of(project), "sync")
    assert result.code == 1 and made.is_dir()
    fresh = tmp_path / "fresh" / "deeper" / "zotsync.log"
    assert run("-q", "--log-file", str(fresh), "--config", config_of(project), "sync").code == 0
    assert fresh.is_file()  # a missing folder is made, as documented


def test_log_file_after_the_command_fails_the_same_way(project: Path, run, tmp_path: Path) -> None:
    result = run("sync", "--config", config_of(project), "--log-file", str(tmp_path))
    assert result.code == 1
    assert (
        one_error_line(result.err) == f"zotsync: error: cannot open the log file {tmp_path}: it is a folder"
    )


@pytest.mark.parametrize("demo", [False, True])
def test_init_into_a_read_only_folder_is_exit_1_and_writes_nothing(read_only: Path, run, demo: bool) -> None:
    for folder in (read_only, read_only / "list"):
        result = run("init", str(folder), *(["--demo"] if demo else []))
        assert result.code == 1
        line = one_error_line(result.err)
        assert line.startswith(f"zotsync: error: cannot write {folder}") and line.endswith(
            "; init wrote nothing"
        )
        assert READ_ONLY_REASON in line
        assert result.out == ""  # no "next steps" after a failure
        assert tree(read_only) == []


def test_init_under_a_file_is_exit_1_naming_the_file(tmp_path: Path, run) -> None:
    blocker = tmp_path / "notes.txt"
    blocker.write_text("mine", encoding="utf-8")
    result = run("init", str(blocker / "list"))
    assert result.code == 1
    reason = f"{blocker} is a file, not a folder"
    assert one_error_line(result.err) == (
        f"zotsync: error: cannot write {blocker / 'list'}: {reason}; init wrote nothing"
    )
    assert blocker.read_text(encoding="utf-8") == "mine"


def test_init_failing_half_way_takes_back_what_it_wrote(
    tmp_path: Path, run, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "new" / "list"
    open_file = Path.open

    def full_disk_at_the_catalogue(self: Path, mode: str = "r", *args, **kwargs):
        if self.name == "catalog.yaml" and "x" in mode:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self))
        return open_file(self, mode, *args, **kwargs)

    monkeypatch.setattr(Path, "open", full_disk_at_the_catalogue)
    result = run("init", str(folder))
    assert result.code == 1
    reason = os.strerror(errno.ENOSPC)
    assert one_error_line(result.err) == (
        f"zotsync: error: cannot write {folder / 'catalog.yaml'}: {reason}; init wrote nothing"
    )
    assert tree(tmp_path) == []  # zotsync.yaml, list/ and new/ are gone again


def test_schedule_github_into_a_folder_is_exit_1_like_export(project: Path, run, monkeypatch) -> None:
    monkeypatch.chdir(project)
    folder = project / "workflows"
    folder.mkdir()
    for force in ([], ["--force"]):
        args = ("schedule", "github", "--install", ".", "--output", str(folder), *force)
        result = run("--config", config_of(project), *args)
        assert result.code == 1
        assert one_error_line(result.err) == (
            f"zotsync: error: cannot write {folder}: it is a folder; zotsync replaces only regular files"
        )
    exported = run("--config", config_of(project), "export", "--format", "md", "--output", str(folder))
    assert exported.code == 1  # the same rule for every file zotsync writes
    assert tree(folder) == []


# -- the files zotsync reads: the user's configuration, so exit 2 — with the reason in plain words -----


@pytest.mark.parametrize("command", ["sync", "status"])
def test_an_unreadable_config_or_catalogue_is_exit_2_saying_why_plainly(
    project: Path, run, command: str
) -> None:
    folder = project / "a-folder"
    folder.mkdir()
    result = run("--config", str(folder), command)
    assert result.code == 2
    assert one_error_line(result.err) == f"zotsync: error: cannot read config file {folder}: it is a folder"
    catalogue = project / "seeds" / "catalog.yaml"
    catalogue.write_bytes("title: Lektüre\n".encode("latin-1"))  # saved in the wrong encoding
    result = run("--config", config_of(project), command)
    assert result.code == 2
    assert one_error_line(result.err) == (
        f"zotsync: error: cannot read catalogue {catalogue}: it is not UTF-8 text (byte 0xfc at offset 11)"
    )
    catalogue.unlink()
    catalogue.mkdir()
    result = run("--config", config_of(project), command)
    assert result.code == 2
    assert one_error_line(result.err) == f"zotsync: error: cannot read catalogue {catalogue}: it is a folder"


@pytest.mark.parametrize("edit", [["pin", "Rammer", "ABCD2345"], ["adopt", "ABCD2345", "--category", "X"]])
def test_pin_and_adopt_on_an_unreadable_catalogue_say_why_plainly(
    project: Path, run, edit: list[str]
) -> None:
    assert run("-q", "--config", config_of(project), "sync").code == 0
    catalogue = project / "seeds" / "catalog.yaml"
    catalogue.write_bytes("title: Lektüre\n".encode("latin-1"))
    result = run("--config", config_of(project), *edit)
    assert result.code == 2
    why = "it is not UTF-8 text (byte 0xfc at offset 11)"
    assert one_error_line(result.err) == f"zotsync: error: cannot read the catalogue {catalogue}: {why}"
    assert catalogue.read_bytes() == "title: Lektüre\n".encode("latin-1")
