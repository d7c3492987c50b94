"""The bundled default reproduces the published reading list, and its exports are byte-stable.

Regenerate the golden files after an intended change (then review the diff):
    zotsync sync && cp exports/catalog.md exports/catalog.csv tests/golden/
    zotsync export --format html --output tests/golden/catalog.html
    zotsync export --format bib --output tests/golden/catalog.bib
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

GOLDEN = Path(__file__).parent / "golden"
ROW = re.compile(r"^(✅|⬜)")


def seed_rows() -> list[tuple[str, str]]:
    """(category, row text) from the published page, whose table cells arrive glued together."""
    lines = (GOLDEN / "seed_page.txt").read_text(encoding="utf-8").splitlines()
    rows, category, heading = [], "", ""
    for line in lines:
        if line.startswith("StatusPaperVenue"):
            category = heading
        elif ROW.match(line):
            rows.append((category, line))
        elif line.strip():
            heading = line.strip()
    return rows


def exported_rows(markdown: str) -> list[tuple[str, str]]:
    """(category, the row's cells glued the way the page shows them: link labels without their URLs)."""
    rows, category = [], ""
    for line in markdown.splitlines():
        if line.startswith("## "):
            category = line[3:]
        elif ROW.match(line.removeprefix("| ")):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
            cells[-1] = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", cells[-1])
            rows.append((category, "".join(html.unescape(c.replace("\\|", "|")) for c in cells)))
    return rows


def synced_demo(folder: Path, formats: str = "[md, csv]") -> Path:
    """The bundled demo copied into `folder` and synced with `exports.formats: formats`; its exports."""
    import shutil

    from zotsync.cli import main

    root = Path(__file__).resolve().parent.parent
    for name in ("config", "seeds"):
        shutil.copytree(root / name, folder / name)
    config = folder / "config" / "zotsync.yaml"
    text = config.read_text(encoding="utf-8")
    config.write_text(text.replace("formats: [md, csv]", f"formats: {formats}"), encoding="utf-8")
    assert main(["-q", "--config", str(config), "sync"]) == 0
    return folder / "exports"


@pytest.fixture(scope="module")
def synced(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return synced_demo(tmp_path_factory.mktemp("demo"))


def test_every_seed_row_is_reproduced_cell_for_cell(synced: Path) -> None:
    assert exported_rows((synced / "catalog.md").read_text(encoding="utf-8")) == seed_rows()


def test_summary_line_counts_64_entries_29_read_35_unread(synced: Path) -> None:
    assert (
        "共 64 个清单条目；已读 29，待读 35。"
        in (synced / "catalog.md").read_text(encoding="utf-8").splitlines()
    )
    assert len(seed_rows()) == 64


@pytest.mark.parametrize("name", ["catalog.md", "catalog.csv"])
def test_exports_match_golden_files_byte_for_byte(synced: Path, name: str) -> None:
    assert (synced / name).read_bytes() == (GOLDEN / name).read_bytes()


@pytest.fixture(scope="module")
def all_five(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo with every format: `exports.formats: [md, csv, html, bib, atom]`."""
    return synced_demo(tmp_path_factory.mktemp("all"), "[md, csv, html, bib, atom]")


@pytest.mark.parametrize("name", ["catalog.md", "catalog.csv", "catalog.html", "catalog.bib"])
def test_all_five_formats_match_golden_files_byte_for_byte(all_five: Path, name: str) -> None:
    assert (all_five / name).read_bytes() == (GOLDEN / name).read_bytes()


def test_all_five_formats_are_byte_stable(all_five: Path, run) -> None:
    before = files_in(all_five)
    assert {name for name in before if "/" not in name} == {
        "catalog.md",
        "catalog.csv",
        "catalog.html",
        "catalog.bib",
        "feed.xml",
        "CHANGES.md",  # the first sync's baseline
        ".zotsync-manifest.json",  # what a lost store goes on from
    }
    assert len([name for name in before if name.startswith("notes/")]) == 3  # the demo's note pages
    config = all_five.parent / "config" / "zotsync.yaml"
    second = run("--config", str(config), "sync", "--exit-code")
    assert second.code == 0  # 3 would mean an export changed
    for fmt, name in (("html", "catalog.html"), ("bib", "catalog.bib"), ("atom", "feed.xml")):
        assert (
            run("--config", str(config), "export", "--format", fmt, "--output", "-").out.encode()
            == before[name][0]
        )
    assert files_in(all_five) == before


def files_in(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under `folder` (its path relative to it) with its bytes and modification time."""
    return {
        path.relative_to(folder).as_posix(): (path.read_bytes(), path.stat().st_mtime_ns)
        for path in folder.rglob("*")
        if path.is_file()
    }
