"""The bundled default reproduces the published reading list, and its exports are byte-stable.

Regenerate the golden files after an intended change (then review the diff):
    zotsync sync && cp exports/catalog.md exports/catalog.csv tests/golden/
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


@pytest.fixture(scope="module")
def synced(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import shutil

    from zotsync.cli import main

    root = Path(__file__).resolve().parent.parent
    folder = tmp_path_factory.mktemp("demo")
    for name in ("config", "seeds"):
        shutil.copytree(root / name, folder / name)
    assert main(["-q", "--config", str(folder / "config" / "zotsync.yaml"), "sync"]) == 0
    return folder / "exports"


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
