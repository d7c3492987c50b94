"""The published page as a reader's browser shows it: the demo's catalog.md, rendered by python-markdown
as a static site would, opened in headless Chromium."""

from __future__ import annotations

from pathlib import Path

import markdown
from factories import config_of


def test_the_demo_page_shows_every_row_and_its_status_marks(
    project: Path, run, browser, tmp_path: Path
) -> None:
    assert run("-q", "--config", config_of(project), "sync").code == 0
    text = (project / "exports" / "catalog.md").read_text(encoding="utf-8")
    body = markdown.markdown(text, extensions=["tables"])
    html = tmp_path / "catalog.html"
    html.write_text(f"<!doctype html><meta charset=utf-8><title>t</title>{body}", encoding="utf-8")
    page = browser.new_page()
    try:
        page.goto(html.as_uri())
        rows = page.locator("tbody tr")
        assert rows.count() == 64
        statuses = page.locator("tbody tr td:first-child").all_inner_texts()
        assert sum("✅" in s for s in statuses) == 29 and sum("⬜" in s for s in statuses) == 35
        assert page.locator("tbody tr td:first-child").first.is_visible()
        page.screenshot(path=str(tmp_path / "catalog.png"))
        assert (tmp_path / "catalog.png").stat().st_size > 10_000
    finally:
        page.close()
