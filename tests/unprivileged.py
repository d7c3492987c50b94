"""Run zotsync as a user whom file permissions bind, for the tests whose point is a permission.

Root may write any file, so the tests of what a user who may not write gets (and CI runs as root) run
their command as `nobody`, through `setpriv` (util-linux) or `runuser`. Run by any other user, the
command runs directly: that user is bound by permissions already. Such a user needs folders it can
reach — pytest's own `tmp_path` lies under a folder only its owner may enter — so `reachable_folder`
makes one under the system's temporary folder.
"""

from __future__ import annotations

import functools
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


@functools.cache
def _prefix() -> tuple[str, ...] | None:
    """The command that drops root's privileges, or () when there are none to drop."""
    if not IS_ROOT:
        return ()
    import pwd  # Unix only, as is being root

    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        return None
    # Numeric ids: the group is `nogroup` on Debian, `nobody` elsewhere.
    if setpriv := shutil.which("setpriv"):
        return (setpriv, f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}", "--clear-groups")
    if runuser := shutil.which("runuser"):
        return (runuser, "-u", "nobody", "--")
    return None


def give_away(folder: Path) -> None:
    """Make `folder` and everything in it the unprivileged user's, so that its commands may write there
    (nothing to do when that user runs the tests)."""
    if not IS_ROOT:
        return
    import pwd

    nobody = pwd.getpwnam("nobody")
    for path in [folder, *folder.rglob("*")]:
        os.chown(path, nobody.pw_uid, nobody.pw_gid, follow_symlinks=False)


def _environment(home: Path) -> dict[str, str]:
    return {**os.environ, "HOME": str(home), "PYTHONDONTWRITEBYTECODE": "1"}


def zotsync(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`zotsync ARGS` in `folder`, as an unprivileged user (skips the test where that is impossible)."""
    if sys.platform == "win32":
        pytest.skip("Unix file permissions")
    prefix = _prefix()
    if prefix is None:
        pytest.skip("running as root, with neither setpriv nor runuser (nor a user nobody) to drop it")
    if prefix and not _runs_python(prefix):
        pytest.skip(f"the unprivileged user cannot run {sys.executable} and import zotsync")
    return subprocess.run(
        [*prefix, sys.executable, "-m", "zotsync", *args],
        cwd=folder,
        env=_environment(folder),
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
    )


@functools.cache
def _runs_python(prefix: tuple[str, ...]) -> bool:
    """Whether the unprivileged user can start this interpreter and import zotsync (a virtual
    environment under a private home folder, say, it could not)."""
    probe = subprocess.run(
        [*prefix, sys.executable, "-c", "import zotsync.cli"],
        cwd="/",
        env=_environment(Path("/")),
        capture_output=True,
        timeout=60,
    )
    return probe.returncode == 0


@pytest.fixture
def reachable_folder() -> Iterator[Path]:
    """A fresh folder every user may enter and read (mode 755), removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="zotsync-test-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        for path in [folder, *folder.rglob("*")]:  # a test may have taken write access away
            if path.is_dir() and not path.is_symlink():
                path.chmod(stat.S_IMODE(path.stat().st_mode) | stat.S_IRWXU)
        shutil.rmtree(folder, ignore_errors=True)
