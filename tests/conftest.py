"""Shared fixtures: a project folder (config, catalogue, snapshot) in a temp dir, and the CLI runner."""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from zotsync.cli import main

ROOT = Path(__file__).resolve().parent.parent
SEEDS = ROOT / "seeds"


@dataclass
class Run:
    code: int
    out: str
    err: str


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str]) -> Callable[..., Run]:
    """Run the real `zotsync` entry point in-process and capture what a user would see."""

    def invoke(*args: str) -> Run:
        code = main(list(args))
        captured = capsys.readouterr()
        return Run(code, captured.out, captured.err)

    return invoke


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of the bundled default: config/, seeds/, exports/ in a temp folder."""
    shutil.copytree(ROOT / "config", tmp_path / "config")
    shutil.copytree(SEEDS, tmp_path / "seeds")
    (tmp_path / "exports").mkdir()
    return tmp_path


def write_config(folder: Path, body: str) -> Path:
    path = folder / "zotsync.yaml"
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path
