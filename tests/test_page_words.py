"""The page's own words come from a label set: exports.language picks one, exports.labels overrides words."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import write_config
from factories import api_collection, api_item, api_pdf, write_json

from zotsync.labels import BUILT_IN, NAMES

CJK = re.compile("[\u3000-\u9fff\uff00-\uffef]")


def own_project(folder: Path, exports: str) -> Path:
    """An English library and catalogue: rows without venue or why, a PDF, an archive link."""
    write_json(
        folder / "library.json",
        [
            api_collection("CQLL2222", "Systems"),
            api_item("ITEM2222", "A paper with tags", tags=["gpu", "ir"], collections=["CQLL2222"]),
            api_item("YEAR2222", "A paper with a year", date="2023", url="https://example.org/y"),
            api_pdf("PDFA2222", "YEAR2222"),
            api_pdf("PDFB2222", "YEAR2222", dateAdded="2024-02-01T00:00:00Z"),
        ],
    )
    (folder / "catalog.yaml").write_text(
        "title: Mine\ncategories:\n  - name: Systems\n    entries:\n"
        "      - {title: A paper with tags, status: read}\n      - title: Not in Zotero\n",
        encoding="utf-8",
    )
    return write_config(
        folder,
        "source: {type: snapshot, path: library.json}\ncatalog: catalog.yaml\nstore: store.sqlite\n"
        "exports:\n  dir: out\n  formats: [md]\n  archive_link: 'archive.md#{key}'\n" + exports + "\n",
    )


def test_the_default_page_is_english_with_no_chinese_word(tmp_path: Path, run) -> None:
    config = own_project(tmp_path, "")
    assert run("-q", "--config", str(config), "sync").code == 0
    page = (tmp_path / "out" / "catalog.md").read_text(encoding="utf-8")
    assert not CJK.search(page), CJK.findall(page)
    assert "3 entries; 1 read, 2 to read." in page
    assert "| ✅ | A paper with tags | venue unknown | Tags: gpu / ir |" in page
    assert "venue unknown · 2023" in page
    assert "[PDF](zotero://open-pdf/library/items/PDFA2222) / [PDF2](" in page
    assert "[Archive](archive.md#ITEM2222)" in page


def test_chinese_words_with_exports_language_zh(tmp_path: Path, run) -> None:
    config = own_project(tmp_path, "  language: zh")
    assert run("-q", "--config", str(config), "sync").code == 0
    page = (tmp_path / "out" / "catalog.md").read_text(encoding="utf-8")
    assert "共 3 个清单条目；已读 1，待读 2。" in page
    assert "| 来源待补全 | 标签：gpu / ir |" in page
    assert "[归档标签](archive.md#ITEM2222)" in page


def test_labels_override_single_words_of_the_chosen_set(tmp_path: Path, run) -> None:
    config = own_project(
        tmp_path,
        '  language: zh\n  labels: {no_venue: "n/a", summary: "{entries} papers ({read} read)", '
        'link_pdf: 全文, why: "Why | it"}',
    )
    assert run("-q", "--config", str(config), "sync").code == 0
    page = (tmp_path / "out" / "catalog.md").read_text(encoding="utf-8")
    assert "\n3 papers (1 read)\n" in page
    assert "| n/a | 标签：gpu / ir |" in page  # the rest of the zh set stays
    assert "[全文](zotero://open-pdf/library/items/PDFA2222) / [全文2](" in page
    assert "| Status | Paper | Venue | Why \\| it | Links |" in page  # a label cannot break the table


@pytest.mark.parametrize(
    ("exports", "message"),
    [
        ("  language: fr", "zotsync.yaml:8: config key 'exports.language' must be one of en, zh, not 'fr'"),
        (
            "  labels:\n    no_venu: x",
            "zotsync.yaml:9: config key 'exports.labels': unknown label 'no_venu' (did you mean 'no_venue'?)",
        ),
        (
            "  labels:\n    summary: '{count} papers'",
            "zotsync.yaml:9: config key 'exports.labels': label 'summary' may use only {entries}, {read}",
        ),
        ("  labels: [a, b]", "config key 'exports.labels' must map label names to text"),
        ("  labels: {tags: [a]}", "config key 'exports.labels': label 'tags' must be text"),
    ],
)
def test_a_bad_label_setting_is_a_config_error_naming_it(
    tmp_path: Path, run, exports: str, message: str
) -> None:
    config = own_project(tmp_path, exports)
    result = run("--config", str(config), "sync")
    assert result.code == 2
    assert result.err.count("\n") == 1 and message in result.err, result.err
    assert not (tmp_path / "out").exists()


def test_both_built_in_sets_name_every_label_and_differ_only_in_words() -> None:
    assert set(BUILT_IN) == {"en", "zh"}
    for labels in BUILT_IN.values():
        assert all(getattr(labels, name) for name in NAMES)
        assert labels.summary.format(entries=1, read=1, unread=0)


def test_the_exports_page_lists_both_built_in_sets_in_full() -> None:
    page = (Path(__file__).resolve().parent.parent / "docs" / "exports.md").read_text(encoding="utf-8")
    for name in NAMES:
        row = f"| `{name}` |"
        assert row in page, name
        line = next(line for line in page.splitlines() if line.startswith(row))
        assert line.endswith(f"| `{getattr(BUILT_IN['en'], name)}` | `{getattr(BUILT_IN['zh'], name)}` |"), (
            line
        )


def untitled_project(folder: Path, exports: str = "") -> Path:
    """Two items whose titles show nothing (empty; spaces, a line break and an escape sequence) beside a
    titled one."""
    write_json(
        folder / "library.json",
        [
            api_collection("CQLL2222", "Systems"),
            api_item("NTTL2222", "", collections=["CQLL2222"]),
            api_item("SPCE2222", " \n\x1b \u202e", tags=["gpu"]),
            api_item("ITEM2222", "A titled paper", collections=["CQLL2222"]),
        ],
    )
    (folder / "catalog.yaml").write_text("title: Mine\ncategories: []\n", encoding="utf-8")
    return write_config(
        folder,
        "source: {type: snapshot, path: library.json}\ncatalog: catalog.yaml\nstore: store.sqlite\n"
        "exports:\n  dir: out\n  formats: [md]\n" + exports + "\n",
    )


def test_an_item_without_a_title_shows_the_placeholder_in_the_pages_words(tmp_path: Path, run) -> None:
    config = untitled_project(tmp_path)
    assert run("-q", "--config", str(config), "sync").code == 0
    page = (tmp_path / "out" / "catalog.md").read_text(encoding="utf-8")
    assert "| ⬜ | (untitled) | venue unknown |  |" in page  # in Systems
    assert "| ⬜ | (untitled) | venue unknown | Tags: gpu |" in page  # in Unfiled
    assert "|  |" not in page.replace("venue unknown |  |", "")  # no other empty cell

    (tmp_path / "zh").mkdir()
    zh = untitled_project(tmp_path / "zh", "  language: zh")
    assert run("-q", "--config", str(zh), "sync").code == 0
    assert page_of(tmp_path / "zh").count("| ⬜ | （无标题） |") == 2

    (tmp_path / "own").mkdir()
    own = untitled_project(tmp_path / "own", "  labels: {no_title: '[no title] *'}")
    assert run("-q", "--config", str(own), "sync").code == 0
    # the page's words are text too
    assert page_of(tmp_path / "own").count("| ⬜ | \\[no title\\] \\* |") == 2


def page_of(folder: Path) -> str:
    return (folder / "out" / "catalog.md").read_text(encoding="utf-8")


def test_status_lists_the_items_without_a_title(tmp_path: Path, run) -> None:
    config = str(untitled_project(tmp_path))
    assert run("-q", "--config", config, "sync").code == 0
    text = run("--config", config, "status")
    assert text.code == 0
    lines = text.out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("items without a title"))
    assert lines[at].endswith(": 2")
    assert sorted(lines[at + 1 : at + 3]) == ["  - NTTL2222 in Systems", "  - SPCE2222 in Unfiled"]
    report = json.loads(run("--config", config, "status", "--format", "json").out)
    assert sorted(report["untitled"], key=lambda u: u["zotero_key"]) == [
        {"zotero_key": "NTTL2222", "categories": ["Systems"]},
        {"zotero_key": "SPCE2222", "categories": ["Unfiled"]},
    ]
