"""The wheel a user installs: its metadata says what zotsync is, where it lives and under which licence,
and it carries the licence text and the version from its one source."""

from __future__ import annotations

import email.parser
import re
import zipfile
from pathlib import Path

import pytest

import zotsync

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(built_wheel: Path) -> zipfile.ZipFile:
    return zipfile.ZipFile(built_wheel)


def metadata(wheel: zipfile.ZipFile) -> email.message.Message:
    (name,) = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
    return email.parser.Parser().parsestr(wheel.read(name).decode("utf-8"))


def test_the_version_has_one_source(wheel: zipfile.ZipFile) -> None:
    assert re.fullmatch(r"\d+\.\d+\.\d+", zotsync.__version__)
    assert metadata(wheel)["Version"] == zotsync.__version__
    assert "version =" not in (ROOT / "pyproject.toml").read_text().split("[project]")[1].split("\n[")[0]
    assert f"## [{zotsync.__version__}]" in (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")


def test_the_wheel_carries_the_licence(wheel: zipfile.ZipFile) -> None:
    meta = metadata(wheel)
    assert meta["License-Expression"] == "MIT"
    assert meta.get_all("License-File") == ["LICENSE"]
    (licence,) = [n for n in wheel.namelist() if n.endswith(".dist-info/licenses/LICENSE")]
    assert wheel.read(licence) == (ROOT / "LICENSE").read_bytes()
    assert b"Permission is hereby granted, free of charge" in wheel.read(licence)


def test_the_metadata_says_where_zotsync_lives_and_what_it_is(wheel: zipfile.ZipFile) -> None:
    meta = metadata(wheel)
    urls = dict(url.split(", ", 1) for url in meta.get_all("Project-URL"))
    assert {"Homepage", "Documentation", "Issues", "Changelog"} <= set(urls)
    assert all(url.startswith("https://") for url in urls.values())
    classifiers = set(meta.get_all("Classifier"))
    for expected in (
        "Environment :: Console",
        "Operating System :: OS Independent",
        "Programming Language :: Python :: 3.11",
        "Programming Language :: Python :: 3.13",
        "Topic :: Scientific/Engineering",
    ):
        assert expected in classifiers
    assert meta["Author"] or meta["Author-email"]
    assert "zotero" in meta["Keywords"]
    assert meta["Requires-Python"] == ">=3.11"
    assert meta["Summary"].startswith("Keep a curated research reading list")


def test_the_long_description_is_short_and_has_no_links_that_break_off_github(wheel: zipfile.ZipFile) -> None:
    meta = metadata(wheel)
    description = meta.get_payload()
    assert meta["Description-Content-Type"] == "text/markdown"
    assert 5 < description.count("\n") < 60  # a summary, not the whole guide
    targets = re.findall(r"\]\(([^)\s]+)\)", description)
    assert all(re.match(r"https?://", target) for target in targets), targets


def test_the_wheel_holds_the_package_its_data_and_the_demo(wheel: zipfile.ZipFile) -> None:
    names = wheel.namelist()
    assert "zotsync/cli.py" in names and "zotsync/data/venues.yaml" in names
    assert not [n for n in names if n.startswith(("tests/", "bench/", "seeds/", "docs/")) or ".sqlite" in n]
    for name in ("catalog.yaml", "zotero-library.json"):  # the demo `zotsync init --demo` writes
        assert wheel.read(f"zotsync/demo/{name}") == (ROOT / "seeds" / name).read_bytes()
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "zotsync = zotsync.cli:main" in wheel.read(entry_points).decode()
