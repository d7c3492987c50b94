"""The README's quick start as a new user meets it: two one-line commands that work on a system Python
that refuses `pip install` (PEP 668), and a built wheel that reproduces the demo outside the checkout.

The two install tests take ~30 s each on this machine: they make real virtual environments."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest
from conftest import clean_copy

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"
SYSTEM_PYTHON = Path("/usr/bin/python3")  # Debian's, with its EXTERNALLY-MANAGED marker


def quick_start() -> list[str]:
    """The commands of the README's quick-start block, comments dropped."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block, "the quick start has no ```sh block"
    return [line for line in block.group(1).splitlines() if line.strip() and not line.startswith("#")]


def test_the_quick_start_is_two_one_line_commands_that_need_no_pip_outside_a_venv() -> None:
    commands = quick_start()
    assert len(commands) == 2
    for command in commands:
        assert command.startswith("python3 -m venv .venv && .venv/bin/pip install ")
        assert "\n" not in command and " pip install" not in command.replace(".venv/bin/pip install", "")
    assert commands[0].endswith(" && .venv/bin/zotsync sync")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert commands[1] in ci.splitlines(), ".ci/run must call the README's second command as written"


def system_like_python() -> str:
    """Debian's own python3 when it can make a venv (the PEP 668 case), else the one on PATH."""
    if SYSTEM_PYTHON.exists():
        probe = subprocess.run([str(SYSTEM_PYTHON), "-c", "import ensurepip, venv"], capture_output=True)
        if probe.returncode == 0:
            return str(SYSTEM_PYTHON)
    found = shutil.which("python3")
    if found is None:
        pytest.skip("no python3 to make a virtual environment with")
    return found


@pytest.mark.slow
def test_the_first_quick_start_command_works_in_a_clean_copy(tmp_path: Path) -> None:
    clone = clean_copy(tmp_path / "clone")
    python = system_like_python()
    shim = tmp_path / "bin"  # `python3` in the command is that Python
    shim.mkdir()
    (shim / "python3").symlink_to(python)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHON", "ZOTSYNC"))}
    env["PATH"] = f"{shim}{os.pathsep}{env.get('PATH', '')}"
    done = subprocess.run(
        ["bash", "-c", quick_start()[0]], cwd=clone, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    for name in ("catalog.md", "catalog.csv"):
        assert (clone / "exports" / name).read_bytes() == (GOLDEN / name).read_bytes(), name
    assert "wrote " in done.stderr and "exports/catalog.md" in done.stderr


# A download of the repository (no .git), and what quick-start command 1 and a test run leave in it.
DOWNLOADED = [
    ".ci/run",
    ".gitignore",
    "README.md",
    "exports/.gitkeep",
    "seeds/catalog.yaml",
    "zotsync/cli.py",
]
DOWNLOADED += ["tests/fixtures/zotero-sqlite/zotero-5.0.60.sqlite"]
LEFT_BEHIND = [
    ".venv/pyvenv.cfg",
    ".venv/bin/zotsync",
    ".zotsync/zotsync.sqlite",
    ".zotsync/zotsync.sqlite-wal",
]
LEFT_BEHIND += ["exports/catalog.md", "exports/catalog.csv", "exports/CHANGES.md", "build/lib/zotsync/cli.py"]
LEFT_BEHIND += ["zotsync.egg-info/PKG-INFO", "zotsync/__pycache__/cli.cpython-313.pyc", "site/index.html"]
LEFT_BEHIND += [".pytest_cache/v/cache/lastfailed", ".hypothesis/examples/0/1", "tests/scratch.sqlite"]


@pytest.mark.slow
def test_a_copy_made_without_git_leaves_out_what_the_quick_start_wrote(tmp_path: Path) -> None:
    """Outside git the clean copy reads `.gitignore`: after command 1 ran in a download, the exports it
    wrote were copied, and the quick-start test found them "unchanged" instead of written. The copy
    holds what a clone would, and git, where there is one, agrees file for file."""
    download = tmp_path / "download"
    for name in DOWNLOADED + LEFT_BEHIND:
        (download / name).parent.mkdir(parents=True, exist_ok=True)
        (download / name).write_text(name, encoding="utf-8")
    shutil.copyfile(ROOT / ".gitignore", download / ".gitignore")
    copy = clean_copy(tmp_path / "copy", root=download)
    copied = sorted(p.relative_to(copy).as_posix() for p in copy.rglob("*") if p.is_file())
    assert copied == sorted(DOWNLOADED)
    if shutil.which("git") is not None:  # git's own reading of the same rules
        checkout = shutil.copytree(download, tmp_path / "checkout")
        git = ["git", "-C", str(checkout), "-c", "core.excludesFile=/dev/null"]
        subprocess.run(["git", "init", "-q", str(checkout)], check=True, timeout=60)
        subprocess.run([*git, "add", "-A"], check=True, timeout=60)
        listed = subprocess.run([*git, "ls-files"], check=True, capture_output=True, text=True, timeout=60)
        assert sorted(listed.stdout.splitlines()) == copied


@pytest.mark.slow
def test_the_built_wheel_reproduces_the_demo_outside_the_checkout(tmp_path: Path, built_wheel: Path) -> None:
    wheel = built_wheel
    pip = [sys.executable, "-m", "pip"]
    env_dir = tmp_path / "fresh"
    venv.create(env_dir, with_pip=False)
    python = env_dir / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    installed = subprocess.run(
        [*pip, "--python", str(python), "install", "-q", "--no-deps", str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert installed.returncode == 0, installed.stderr
    # The dependencies come from this environment's site-packages, appended after the fresh one's, so
    # the zotsync that runs is the wheel's (a .pth line adds a folder without running its .pth files).
    fresh_site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout.strip()
    Path(fresh_site, "zotsync-test-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "ZOTSYNC"))}

    def zotsync(*args: str) -> subprocess.CompletedProcess[str]:
        command = [str(python), "-m", "zotsync", *args]
        return subprocess.run(command, cwd=elsewhere, env=env, capture_output=True, text=True, timeout=300)

    where = subprocess.run(
        [str(python), "-c", "import zotsync; print(zotsync.__file__)"],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    assert Path(where.strip()).is_relative_to(env_dir), where
    assert zotsync("init", "--demo", "demo").returncode == 0
    done = zotsync("--config", str(elsewhere / "demo" / "zotsync.yaml"), "sync")
    assert done.returncode == 0, done.stderr
    page = (elsewhere / "demo" / "exports" / "catalog.md").read_text(encoding="utf-8")
    rows = [line for line in page.splitlines() if line.startswith(("| ✅", "| ⬜"))]
    golden = (GOLDEN / "catalog.md").read_text(encoding="utf-8")
    assert rows == [line for line in golden.splitlines() if line.startswith(("| ✅", "| ⬜"))]
    assert len(rows) == 64 and page == golden
