"""The reading list as a published MkDocs Material site: built with `mkdocs build --strict` from the
exports of a realistic library (hundreds of papers, notes, long venues, hostile titles), served on
127.0.0.1 and opened in headless Chromium: the status marks are visible, every link within the site
resolves (page and anchor), the tables sort with the vendored script, and no script from the data runs.

`ZOTSYNC_SCREENSHOTS=DIR` keeps the before/after screenshots the docs show (docs/img/site-before.png,
site-after.png; docs/development.md says how they are made)."""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urldefrag, urljoin, urlsplit

import pytest
from factories import PUBLISHED_SETTINGS, RealisticLibrary, mkdocs_build, realistic_library, write_site

# The page before: the defaults (the whole library, zotero:// links, venues whole), in the same site.
BEFORE_SETTINGS = "  sortable: false\n"
AFTER_SETTINGS = PUBLISHED_SETTINGS


@pytest.fixture(scope="module")
def library() -> RealisticLibrary:
    return realistic_library(papers=600)


def build(run, folder: Path, library: RealisticLibrary, settings: str) -> Path:
    config = write_site(folder, library, settings)
    result = run("-q", "--config", str(config), "sync")
    assert result.code == 0, result.err
    mkdocs_build(folder, folder / "site")
    return folder / "site"


@pytest.fixture
def serve() -> Iterator[object]:
    servers: list[ThreadingHTTPServer] = []

    def start(folder: Path) -> str:
        handler = functools.partial(_QuietHandler, directory=str(folder))
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_port}/"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.mark.slow
def test_the_published_site_shows_the_list_and_every_link_in_it_resolves(
    run, browser, serve, tmp_path: Path, library: RealisticLibrary
) -> None:
    site = build(run, tmp_path / "after", library, AFTER_SETTINGS)
    base = serve(site)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    try:
        page.goto(base + "reading-list/catalog/")
        rows = page.locator("article table tbody tr")
        assert rows.count() > 50
        marks = page.locator("article table tbody tr td:first-child")
        statuses = marks.all_inner_texts()
        assert {"✅", "⬜"} <= {s.split()[0] for s in statuses}
        assert marks.first.is_visible() and marks.first.bounding_box()["width"] > 10
        # no script the data holds ran: hostile titles are text
        assert page.evaluate("typeof window.__pwned") == "undefined" and dialogs == []
        shown = page.locator("article").inner_text()
        assert "<script>window.__pwned=1</script>Scripted Kernels" in shown
        assert '<img src=x onerror="window.__pwned=1"> Image Tricks for GPUs' in shown
        assert page.locator("article img, article script, article [onclick], article [onerror]").count() == 0
        page.screenshot(path=str(tmp_path / "after.png"))
        # the vendored tablesort sorts: a click on Paper orders the first table by title
        first = page.locator("article table").first
        first.locator("th", has_text="Paper").click()
        titles = first.locator("tbody tr td:nth-child(2)").all_inner_texts()
        assert titles == sorted(titles, key=str.lower) and len(titles) > 2
        broken = broken_links(page, base)
        assert broken == [], broken[:10]
        assert page.evaluate("typeof window.__pwned") == "undefined" and dialogs == []
    finally:
        page.close()
    keep_screenshot(tmp_path / "after.png", "site-after.png")


def broken_links(page, base: str) -> list[str]:
    """Every link within the site, from every page of it reachable from the home page: the page it names
    must be served and the anchor must be an id on it."""
    seen: set[str] = set()
    queue, broken = [base], []
    ids: dict[str, set[str]] = {}
    while queue:
        url = queue.pop()
        if url in seen:
            continue
        seen.add(url)
        response = page.goto(url)
        if response is None or response.status != 200:
            broken.append(url)
            continue
        ids[url] = set(page.evaluate("[...document.querySelectorAll('[id]')].map(e => e.id)"))
        for href in page.evaluate(
            "[...document.querySelectorAll('article a[href], nav a[href]')].map(a => a.href)"
        ):
            target, anchor = urldefrag(href)
            if not target.startswith(base) or urlsplit(target).path.endswith((".csv", ".js", ".txt")):
                continue
            queue.append(target)
            if anchor:
                ids.setdefault(f"{target}#", set()).add(unquote(anchor))
    for key, wanted in ids.items():
        if key.endswith("#"):
            target = key[:-1]
            missing = wanted - ids.get(target, set())
            broken += [f"{target}#{anchor}" for anchor in sorted(missing)]
    return broken


@pytest.mark.slow
def test_before_and_after_in_a_material_site(run, browser, serve, tmp_path: Path, library) -> None:
    """The page with the defaults (the whole library, zotero:// links, long venues, every tag) against
    the published settings, in the same site: the screenshots the docs show, and the numbers behind them."""
    before = build(run, tmp_path / "before", library, BEFORE_SETTINGS)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    try:
        page.goto(serve(before) + "reading-list/catalog/")
        rows = page.locator("article table tbody tr").count()
        assert page.locator("article a[href^='zotero:']").count() > rows  # PDF and Zotero links per row
        heights = page.locator("article table tbody tr").evaluate_all(
            "rows => rows.slice(0, 40).map(r => r.getBoundingClientRect().height)"
        )
        page.screenshot(path=str(tmp_path / "before.png"))
    finally:
        page.close()
    after = build(run, tmp_path / "after", library, AFTER_SETTINGS)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    try:
        page.goto(serve(after) + "reading-list/catalog/")
        assert page.locator("article table tbody tr").count() < rows / 5
        assert page.locator("article a[href^='zotero:']").count() == 0
        after_heights = page.locator("article table tbody tr").evaluate_all(
            "rows => rows.slice(0, 40).map(r => r.getBoundingClientRect().height)"
        )
    finally:
        page.close()
    # rows are shorter: fewer links, short venues, at most three tags
    assert sum(after_heights) / len(after_heights) < sum(heights) / len(heights)
    keep_screenshot(tmp_path / "before.png", "site-before.png")


def keep_screenshot(shot: Path, name: str) -> None:
    assert shot.stat().st_size > 10_000
    folder = os.environ.get("ZOTSYNC_SCREENSHOTS")
    if folder:
        Path(folder, name).write_bytes(shot.read_bytes())


def test_every_link_helper_finds_a_missing_anchor(browser, serve, tmp_path: Path) -> None:
    """The link check itself: a link to a missing page and one to a missing anchor are both found."""
    (tmp_path / "index.html").write_text(
        '<nav><a href="a.html#here">ok</a> <a href="a.html#gone">gone</a> <a href="missing.html">x</a></nav>',
        encoding="utf-8",
    )
    (tmp_path / "a.html").write_text('<p id="here">a</p>', encoding="utf-8")
    base = serve(tmp_path)
    page = browser.new_page()
    try:
        found = broken_links(page, base)
    finally:
        page.close()
    assert sorted(found) == [urljoin(base, "a.html#gone"), urljoin(base, "missing.html")]
