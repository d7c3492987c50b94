"""Titles from Zotero and the catalogue on a built MkDocs Material site: they stay text.

Material writes `<title>{{ page.title | striptags }}`, and markupsafe's `striptags` decodes entities after
it strips tags: a heading whose Markdown escaped `</title><script>` correctly (`&lt;/title&gt;…`) still
gave a live `<script>` in the page's `<title>`. python-markdown alone cannot show this: the site is built
with `mkdocs build --strict` and Material, and every page of it opened in Chromium.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from factories import api_child, api_collection, api_item, mkdocs_build, snapshot_project

from zotsync.export.mdtext import heading

# Each would run script, or end the <title>, if it reached a template as markup: raw, and as the
# entities a reader might have typed into Zotero (which striptags would decode once more).
HOSTILE = (
    "Paper </title><script>window.ran = 'title';</script>",
    "Entities &lt;/title&gt;&lt;script&gt;window.ran = 'entity';&lt;/script&gt;",
    "Image <img src=x onerror=\"window.ran = 'img'\"> & more",
)
COLLECTION = "Kernels </title><script>window.ran = 'collection';</script>"
PAGE_TITLE = "Reading </title><script>window.ran = 'page';</script> list"
CATEGORY = "Curated <svg onload=\"window.ran = 'category'\"> & co"
TAG = "tag </title><script>window.ran = 'tag';</script>"

SITE = """\
site_name: Titles
theme:
  name: material
markdown_extensions:
  - tables
  - toc:
      permalink: true
validation:
  omitted_files: warn
  absolute_links: warn
  unrecognized_links: warn
  anchors: warn
"""


def hostile_library() -> list[dict[str, object]]:
    objects: list[dict[str, object]] = [api_collection("CLLX2345", COLLECTION)]
    for n, title in enumerate(HOSTILE):
        key = f"PAPR234{n + 2}"
        objects.append(api_item(key, title, collections=["CLLX2345"], tags=[TAG], date="2024"))
        objects.append(api_child(f"NTE2345{n + 2}", key, "note", note=f"<p>A note on {n}.</p>"))
    return objects


def catalogue(titles: tuple[str, ...]) -> str:
    entries = "\n".join(
        f"      - title: {json.dumps(title)}\n        zotero_key: PAPR234{n + 2}"
        for n, title in enumerate(titles)
    )
    return (
        f"title: {json.dumps(PAGE_TITLE)}\ncategories:\n  - name: {json.dumps(CATEGORY)}\n"
        f"    entries:\n{entries}\n"
    )


def build_site(run, folder: Path) -> Path:
    """A site of every kind of page: the split list (index and a page per category), the note pages, the
    tags page and CHANGES.md (a second sync, after the catalogue curated a second paper), and the same
    library as one page (`whole/catalog.md`, its categories as headings)."""
    settings = "  split: category\n  tags_page: true\n"
    config = snapshot_project(folder, hostile_library(), catalogue(HOSTILE[:1]), "docs/list", settings)
    assert run("-q", "--config", str(config), "sync").code == 0
    (folder / "catalog.yaml").write_text(catalogue(HOSTILE[:2]), encoding="utf-8")
    result = run("-q", "--config", str(config), "sync")
    assert result.code == 0, result.err
    whole = snapshot_project(folder / "whole", hostile_library(), catalogue(HOSTILE), "../docs/whole")
    result = run("-q", "--config", str(whole), "sync")
    assert result.code == 0, result.err
    (folder / "mkdocs.yml").write_text(SITE, encoding="utf-8")
    (folder / "docs" / "index.md").write_text(
        "# Titles\n\n[The list](list/catalog.md) · [On one page](whole/catalog.md)\n", encoding="utf-8"
    )
    mkdocs_build(folder, folder / "site")
    return folder / "site"


KINDS = {
    "whole/catalog/index.html": "the list on one page",
    "list/catalog/index.html": "the index of the split list",
    "list/categories/": "a category's page",
    "list/notes/": "a note page",
    "list/tags/index.html": "the tags page",
    "list/CHANGES/index.html": "CHANGES.md",
}


def test_no_title_or_name_from_zotero_runs_on_a_material_site(run, browser, tmp_path: Path) -> None:
    site = build_site(run, tmp_path)
    pages = sorted(p.relative_to(site).as_posix() for p in site.rglob("index.html"))
    for prefix, kind in KINDS.items():
        assert any(page.startswith(prefix) for page in pages), f"no {kind} in {pages}"
    browser_page = browser.new_page()
    dialogs: list[str] = []
    browser_page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    try:
        for page in pages:
            browser_page.goto((site / page).as_uri())
            ran = browser_page.evaluate("window.ran")
            assert ran is None, f"{page}: script from {ran} ran"
            # The whole <title> is the page's title and the site's name: nothing ended it early.
            shown = browser_page.title()
            assert shown == "Titles" or shown.endswith(" - Titles"), (page, shown)
            assert "<" not in shown and ">" not in shown, (page, shown)
            planted = "[...document.scripts].filter(s => s.text.includes('window.ran')).length"
            assert browser_page.evaluate(planted) == 0, page
            assert browser_page.evaluate("document.querySelectorAll('[onerror], [onload]').length") == 0, page
    finally:
        browser_page.close()
    assert dialogs == []
    # The search index's titles: the words as written, the brackets in their fullwidth forms.
    index = json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))
    titles = {doc["title"] for doc in index["docs"]}
    assert heading(HOSTILE[0]).replace("\\", "") in titles
    assert not any("<" in title or ">" in title for title in titles), titles


@pytest.mark.parametrize("text", [*HOSTILE, COLLECTION, PAGE_TITLE, CATEGORY, TAG])
def test_a_heading_keeps_no_angle_bracket_striptags_could_restore(text: str) -> None:
    markupsafe = pytest.importorskip("markupsafe")
    import markdown

    html = markdown.markdown(f"# {heading(text)}")
    inner = html.removeprefix("<h1>").removesuffix("</h1>")
    assert "<" not in markupsafe.Markup(inner).striptags()
    assert ">" not in markupsafe.Markup(inner).striptags()
