"""Exact output of the renderers: escaping, formula guard, determinism."""

from __future__ import annotations

import csv
import io
import re

from factories import placement
from hypothesis import given
from hypothesis import strategies as st

from zotsync.export.csv import COLUMNS, render_csv
from zotsync.export.markdown import cell, render_markdown
from zotsync.labels import labels_for
from zotsync.model import Link

# What a data cell drops: controls other than tab and line breaks, and bidi overrides.
UNSAFE_IN_DATA = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def test_csv_header_and_columns_follow_the_contract() -> None:
    row = placement(
        status="read",
        title='A, "quoted" title',
        authors=("Hopper, Grace", "ACME"),
        noted=True,
        links=(Link("Paper", "https://p"), Link("Note", "notes/a.md")),
        tags=("x", "y"),
        collections=("Top / Sub", "Other"),
        zotero_key="ABCD2345",
        year="2021",
    )
    text = render_csv([row])
    assert text.splitlines()[0] == ",".join(COLUMNS)
    assert "\r" not in text and text.endswith("\n")
    (parsed,) = list(csv.DictReader(io.StringIO(text)))
    assert parsed == {
        "category": "Cat",
        "status": "read",
        "title": 'A, "quoted" title',
        "venue": "",
        "year": "2021",
        "why": "",
        "authors": "Hopper, Grace; ACME",
        "doi": "",
        "url": "",
        "note": "notes/a.md",
        "noted": "true",
        "zotero_key": "ABCD2345",
        "tags": "x; y",
        "collections": "Top / Sub; Other",
    }


def test_csv_guards_formula_injection_and_keeps_newlines_and_pipes() -> None:
    rows = [
        placement(title='=HYPERLINK("http://evil")'),
        placement(title="+1", why="-2", venue="@SUM(A1)", doi="\tx"),
        placement(title="line one\nline two | piped"),
    ]
    parsed = list(csv.DictReader(io.StringIO(render_csv(rows))))
    assert parsed[0]["title"] == '\'=HYPERLINK("http://evil")'
    assert (parsed[1]["title"], parsed[1]["why"], parsed[1]["venue"], parsed[1]["doi"]) == (
        "'+1",
        "'-2",
        "'@SUM(A1)",
        "'\tx",
    )
    assert parsed[2]["title"] == "line one\nline two | piped"


def test_markdown_shape_counts_and_fallbacks() -> None:
    rows = [
        placement(
            status="read",
            noted=True,
            title="One",
            venue="OSDI'20",
            why="Because.",
            links=(Link("Paper", "https://a"), Link("Note", "notes/one.md")),
        ),
        placement(title="Two", year="2023", tags=("GPU", "IR")),
        placement(category="Other", title="Three"),
    ]
    assert render_markdown("My list", "About it.", rows, labels_for("zh")) == (
        "# My list\n\nAbout it.\n\n共 3 个清单条目；已读 1，待读 2。\n\n"
        "## Cat\n\n| Status | Paper | Venue | Why It Matters | Links |\n| --- | --- | --- | --- | --- |\n"
        "| ✅ 📝 | One | OSDI'20 | Because. | [Paper](https://a) / [Note](notes/one.md) |\n"
        "| ⬜ | Two | 来源待补全 · 2023 | 标签：GPU / IR |  |\n\n"
        "## Other\n\n| Status | Paper | Venue | Why It Matters | Links |\n| --- | --- | --- | --- | --- |\n"
        "| ⬜ | Three | 来源待补全 |  |  |\n"
    )


def test_markdown_cells_cannot_break_the_table() -> None:
    row = placement(title="a | b\nc <script>x</script>", links=(Link("Paper", "https://x/a b)|c"),))
    line = render_markdown("t", "", [row], labels_for("zh")).splitlines()[-1]
    assert line == (
        "| ⬜ | a \\| b c &lt;script&gt;x&lt;/script&gt; | 来源待补全 |  | [Paper](https://x/a%20b%29%7Cc) |"
    )


@given(st.text())
def test_any_cell_text_stays_in_one_cell(text: str) -> None:
    escaped = cell(text)
    assert "\n" not in escaped and "\r" not in escaped and "<" not in escaped
    assert escaped.replace("\\\\", "").count("|") == escaped.replace("\\\\", "").count("\\|")


@given(st.lists(st.text(), min_size=1, max_size=5))
def test_csv_round_trips_any_text(titles: list[str]) -> None:
    rows = [placement(title=t) for t in titles]
    parsed = [r["title"] for r in csv.DictReader(io.StringIO(render_csv(rows), newline=""))]
    guarded = ["'" + t if t.startswith(("=", "+", "-", "@", "\t", "\r")) else t for t in titles]
    expected = [UNSAFE_IN_DATA.sub("", t.replace("\r\n", "\n").replace("\r", "\n")) for t in guarded]
    assert parsed == expected


def test_atomic_writes_keep_a_files_mode_and_give_new_files_the_usual_one(tmp_path) -> None:
    import os
    import stat

    from zotsync.outputs import write_atomically

    old_mask = os.umask(0o022)
    try:
        fresh = tmp_path / "catalog.md"
        assert write_atomically(fresh, "one\n")
        assert stat.S_IMODE(fresh.stat().st_mode) == 0o644  # readable by a web server, as the page must be
        fresh.chmod(0o640)
        assert write_atomically(fresh, "two\n") and not write_atomically(fresh, "two\n")
        assert stat.S_IMODE(fresh.stat().st_mode) == 0o640
    finally:
        os.umask(old_mask)
