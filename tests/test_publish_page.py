"""The page its owner publishes from a real-sized library: only the curated categories, no private
Inbox, status tags as status, links that work for a visitor, and the files of a site (tags page, a page
per category, the sortable-tables script) — on a made-up library of hundreds of papers with an Inbox,
workflow tags, long venues and hostile titles (`factories.realistic_library`)."""

from __future__ import annotations

import csv
import io
import re
from collections import defaultdict
from dataclasses import dataclass
from html import unescape
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import markdown
import pytest
from factories import (
    RealisticLibrary,
    api_collection,
    api_item,
    realistic_library,
    snapshot_project,
    write_realistic_project,
)

from zotsync import labels

CATEGORIES = ("Compilers I keep coming back to", "Kernels", "LLM serving")
NAMED_COLLECTIONS = ("GPU / Kernels / Attention", "Hardware / Accelerators")
PUBLISHED = """\
  scope: curated
  exclude_collections: [Inbox, Unfiled]
  exclude_tags: [to-curate]
  zotero_links: none
"""


@pytest.fixture(scope="module")
def library() -> RealisticLibrary:
    return realistic_library(papers=400)


@dataclass
class Paper:
    """A regular item of the library as its API objects say, read independently of zotsync."""

    key: str
    title: str
    paths: tuple[str, ...]
    tags: tuple[str, ...]
    data: dict[str, Any]


def papers_of(library: RealisticLibrary) -> dict[str, Paper]:
    collections = {o["key"]: o["data"] for o in library.objects if "name" in o["data"]}

    def path(key: str) -> str:
        parent = collections[key]["parentCollection"]
        return (path(parent) + " / " if parent else "") + collections[key]["name"]

    return {
        o["key"]: Paper(
            o["key"],
            o["data"]["title"],
            tuple(path(c) for c in o["data"]["collections"]),
            tuple(t["tag"] for t in o["data"]["tags"]),
            o["data"],
        )
        for o in library.objects
        if "itemType" in o["data"] and "parentItem" not in o["data"]
    }


def sync(run, config: Path) -> None:
    result = run("-q", "--config", str(config), "sync")
    assert result.code == 0, result.err


def page_rows(page: str) -> list[tuple[str, list[str]]]:
    """(section, cells) of every table row of a Markdown page."""
    rows, section = [], ""
    for text in page.splitlines():
        if text.startswith("## "):
            section = text[3:]
        elif text.startswith("| ") and not text.startswith(("| Status", "| ---")):
            rows.append((section, [c.strip() for c in re.split(r"(?<!\\)\|", text)[1:-1]]))
    return rows


def csv_rows(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"), newline="")))


def published(run, tmp_path: Path, library: RealisticLibrary, settings: str = PUBLISHED) -> Path:
    config = write_realistic_project(tmp_path / "list", library, settings=settings)
    sync(run, config)
    return config.parent / "exports"


# -- what reaches the page ----------------------------------------------------------------------------------


def test_scope_curated_holds_exactly_the_curated_categories_and_nothing_private(
    run, tmp_path, library
) -> None:
    exports = published(run, tmp_path, library)
    papers = papers_of(library)
    # What the page must hold, from the library's objects: the curated papers in their categories, and the
    # items of the two named collections, less the Inbox, the unfiled and the to-curate ones.
    expected = {
        (c, k)
        for c, keys in zip(CATEGORIES, (range(5), range(5, 9), range(9, 12)), strict=True)
        for k in (library.curated_keys[i] for i in keys)
    }
    curated = set(library.curated_keys)
    for paper in papers.values():
        if paper.key in curated or "to-curate" in paper.tags or not paper.paths:
            continue
        if any(p == "Inbox" or p.startswith("Inbox / ") for p in paper.paths):
            continue
        expected |= {(path, paper.key) for path in paper.paths if path in NAMED_COLLECTIONS}
    rows = csv_rows(exports / "catalog.csv")
    assert {(r["category"], r["zotero_key"]) for r in rows} == expected
    assert len(rows) == len(expected)
    page = (exports / "catalog.md").read_text(encoding="utf-8")
    sections = re.findall(r"^## (.*)$", page, re.M)
    assert sections == [*CATEGORIES, *NAMED_COLLECTIONS]
    assert len(page_rows(page)) == len(rows)  # the Markdown page and the CSV show the same rows
    for hidden in ("Inbox", "Unfiled", "to-curate"):
        assert hidden not in page
    assert "zotero://" not in page and "zotero://" not in (exports / "catalog.csv").read_text("utf-8")


def test_a_curated_entry_stays_whatever_excludes_its_item(run, tmp_path) -> None:
    objects = [
        api_collection("NBXC2222", "Inbox"),
        api_collection("TPCC2222", "Topic"),
        api_item("CRTD2222", "Curated but in the Inbox", collections=["NBXC2222"], tags=["to-curate"]),
        api_item("NBXD2222", "Only in the Inbox", collections=["NBXC2222"]),
        api_item("BTHC2222", "In the Inbox and filed", collections=["NBXC2222", "TPCC2222"]),
        api_item("TGGD2222", "Filed, still to curate", collections=["TPCC2222"], tags=["to-curate"]),
        api_item("FLDD2222", "Filed", collections=["TPCC2222"]),
        api_item("NFLD2222", "Unfiled"),
    ]
    config = snapshot_project(
        tmp_path / "list",
        objects,
        "title: Mine\ncategories:\n  - name: Picks\n    entries:\n      - title: Curated but in the Inbox\n",
        settings="  exclude_collections: [Inbox, Unfiled]\n  exclude_tags: [to-curate]\n",
    )
    sync(run, config)
    rows = csv_rows(config.parent / "exports" / "catalog.csv")
    assert [(r["category"], r["title"]) for r in rows] == [
        ("Picks", "Curated but in the Inbox"),
        ("Topic", "Filed"),
    ]
    # status still shows the whole library, and its inbox
    status = run("--config", str(config), "status", "--format", "json")
    assert '"entries": 2' in status.out and '"uncurated": 5' in status.out


# -- status tags --------------------------------------------------------------------------------------------


def test_read_and_unread_tags_set_the_status_and_are_never_shown_as_tags(run, tmp_path, library) -> None:
    exports = published(run, tmp_path, library, settings="  language: en\n")
    papers = papers_of(library)
    curated = set(library.curated_keys)
    rows = csv_rows(exports / "catalog.csv")
    for row in rows:
        paper = papers[row["zotero_key"]]
        shown = row["tags"].split("; ") if row["tags"] else []
        assert not {"read", "unread"} & set(shown), row["title"]
        if paper.key not in curated:
            assert row["status"] == ("read" if "read" in paper.tags else "unread")
    tagged_read = {k for k, p in papers.items() if "read" in p.tags and k not in curated}
    assert tagged_read and {r["zotero_key"] for r in rows if r["status"] == "read"} >= tagged_read
    page = (exports / "catalog.md").read_text(encoding="utf-8")
    for _, cells in page_rows(page):
        why = cells[3]
        if why.startswith("Tags: "):
            shown = why.removeprefix("Tags: ").split(" / ")
            assert "read" not in shown and "unread" not in shown
            # at most three tags, then how many more
            assert len(shown) <= 4 and (len(shown) < 4 or re.fullmatch(r"\+\d+", shown[3]))


def test_the_why_fallback_of_a_paper_with_17_tags_names_three_and_the_count() -> None:
    from factories import placement

    from zotsync.export.markdown import render_markdown

    tags = tuple(f"tag{n}" for n in range(17))
    page = render_markdown(
        "t", "", [placement(tags=tags, curated_title="")], labels.labels_for("en")
    ).decode()
    assert "| Tags: tag0 / tag1 / tag2 / +14 |" in page


def test_hidden_tags_leave_every_format(run, tmp_path, library) -> None:
    exports = published(
        run, tmp_path, library, settings="  hide_tags: [gpu, Computer Science - Machine Learning]\n"
    )
    text = (exports / "catalog.csv").read_text(encoding="utf-8")
    assert "; gpu" not in text and ",gpu" not in text and "Machine Learning" not in text
    for _, cells in page_rows((exports / "catalog.md").read_text(encoding="utf-8")):
        if "Tags" in cells[3]:
            assert "gpu" not in cells[3].split(": ", 1)[1].split(" / ")


# -- links for visitors -------------------------------------------------------------------------------------


def test_zotero_links_local_web_and_none(run, tmp_path, library) -> None:
    pages = {}
    for mode in ("local", "web", "none"):
        exports = published(run, tmp_path / mode, library, settings=f"  zotero_links: {mode}\n")
        pages[mode] = (exports / "catalog.md").read_text(encoding="utf-8")
    assert "zotero://select/library/items/" in pages["local"] and "zotero://open-pdf/" in pages["local"]
    assert "zotero://" not in pages["web"] and "zotero://" not in pages["none"]
    first = library.curated_keys[0]
    assert f"[Zotero](https://www.zotero.org/a-researcher/items/{first})" in pages["web"]
    assert "[Zotero]" not in pages["none"] and "[PDF]" not in pages["none"]


def test_a_paper_with_only_an_arxiv_id_links_its_arxiv_page(run, tmp_path, library) -> None:
    exports = published(run, tmp_path, library, settings="  zotero_links: none\n")
    papers = papers_of(library)
    arxiv_only = [
        p for p in papers.values() if p.data.get("archiveID") and not p.data["url"] and not p.data["DOI"]
    ]
    assert arxiv_only
    by_key = defaultdict(list)
    for row in csv_rows(exports / "catalog.csv"):
        by_key[row["zotero_key"]].append(row["title"])
    page = (exports / "catalog.md").read_text(encoding="utf-8")
    for paper in arxiv_only[:20]:
        number = paper.data["archiveID"].removeprefix("arXiv:")
        assert f"[Paper](https://arxiv.org/abs/{number})" in page


def test_the_web_link_survives_a_snapshot_round_trip(run, tmp_path, library) -> None:
    exports = published(run, tmp_path / "a", library, settings="  zotero_links: web\n")
    config = tmp_path / "a" / "list" / "zotsync.yaml"
    frozen = tmp_path / "frozen.json"
    assert run("--config", str(config), "snapshot", "--output", str(frozen)).code == 0
    replay = tmp_path / "b" / "list"
    replay.mkdir(parents=True)
    (replay / "library.json").write_bytes(frozen.read_bytes())
    (replay / "catalog.yaml").write_text(library.catalogue, encoding="utf-8")
    (replay / "zotsync.yaml").write_text(config.read_text(encoding="utf-8"), encoding="utf-8")
    sync(run, replay / "zotsync.yaml")
    assert (replay / "exports" / "catalog.md").read_bytes() == (exports / "catalog.md").read_bytes()


# -- the page in a site ------------------------------------------------------------------------------------


def test_the_tags_page_has_an_anchor_for_every_archive_link(run, tmp_path, library) -> None:
    exports = published(
        run, tmp_path, library, settings=PUBLISHED + "  tags_page: true\n  archive_link: 'tags.md#{key}'\n"
    )
    page = (exports / "catalog.md").read_text(encoding="utf-8")
    tags = (exports / "tags.md").read_text(encoding="utf-8")
    targets = set(re.findall(r"\]\(tags\.md#([A-Z0-9]+)\)", page))
    keys = {r["zotero_key"] for r in csv_rows(exports / "catalog.csv")}
    assert targets == keys
    anchors = set(re.findall(r'<a id="([^"]+)"></a>', tags))
    assert keys <= anchors
    # every link within the tags page lands on an anchor of it
    assert set(re.findall(r"\]\(#([^)]+)\)", tags)) <= anchors
    # and each tag lists exactly the papers carrying it
    papers = papers_of(library)
    section = tags.split('## <a id="tag-', 2)[1]
    listed = set(re.findall(r"\]\(#([A-Z0-9]{8})\)", section.split("\n## ")[0]))
    name = section.split("</a>", 1)[1].split("\n", 1)[0]
    assert listed == {k for k in keys if name in papers[k].tags}
    # only keys and the page's own anchors are HTML: a hostile tag or title never is
    html = markdown.markdown(tags, extensions=["tables"])
    assert not re.search(r"<(?!/?(a|h1|h2|p|ul|li)\b)", html)


def test_split_writes_an_index_and_a_page_per_category_whose_links_resolve(run, tmp_path, library) -> None:
    settings = PUBLISHED + "  split: category\n  tags_page: true\n  archive_link: 'tags.md#{key}'\n"
    exports = published(run, tmp_path, library, settings=settings)
    index = (exports / "catalog.md").read_text(encoding="utf-8")
    pages = sorted((exports / "categories").glob("*.md"))
    assert len(pages) == 5 and "| Status |" not in index
    assert set(re.findall(r"\]\((categories/[^)]+)\)", index)) == {f"categories/{p.name}" for p in pages}
    rows = [row for p in pages for row in page_rows(p.read_text(encoding="utf-8"))]
    assert len(rows) == len(csv_rows(exports / "catalog.csv"))
    for page in [exports / "catalog.md", exports / "tags.md", *pages]:
        html = markdown.markdown(page.read_text(encoding="utf-8"), extensions=["tables"])
        for target in map(unescape, re.findall(r'href="([^"]+)"', html)):
            if target.startswith(("https:", "http:")):
                continue
            path, _, anchor = unquote(target).partition("#")
            resolved = (page.parent / path).resolve() if path else page
            assert resolved.is_file(), (page.name, target)
            if anchor:
                assert f'<a id="{anchor}"></a>' in resolved.read_text(encoding="utf-8"), target
    # back to the single page: the category pages go
    config = tmp_path / "list" / "zotsync.yaml"
    config.write_text(config.read_text(encoding="utf-8").replace("  split: category\n", ""), encoding="utf-8")
    sync(run, config)
    assert not list((exports / "categories").glob("*.md"))
    assert "| Status |" in (exports / "catalog.md").read_text(encoding="utf-8")


def test_a_curated_relative_link_is_rewritten_for_a_category_page(run, tmp_path) -> None:
    config = snapshot_project(
        tmp_path / "list",
        [api_item("PPRR2222", "A paper")],
        "title: Mine\ncategories:\n  - name: Picks\n    entries:\n      - title: A paper\n"
        "        links: {Note: 'notes/a paper.md#part-2', Web: 'https://example.org/x'}\n",
        settings="  split: category\n",
    )
    sync(run, config)
    page = (config.parent / "exports" / "categories" / "picks.md").read_text(encoding="utf-8")
    assert "[Note](../notes/a%20paper.md#part-2) / [Web](https://example.org/x)" in page


def test_columns_authors_year_added_and_short_venues(run, tmp_path, library) -> None:
    settings = "  columns: [status, paper, authors, year, venue, added]\n  venue_length: 40\n  language: en\n"
    exports = published(run, tmp_path, library, settings=settings)
    page = (exports / "catalog.md").read_text(encoding="utf-8")
    assert (
        "| Status | Paper | Authors | Year | Venue | Added |\n| --- | --- | --- | --- | --- | --- |" in page
    )
    papers = papers_of(library)
    by_title = {p.title: p for p in papers.values()}
    seen = 0
    for _, cells in page_rows(page):
        assert len(cells) == 6
        paper = by_title.get(cells[1])
        if paper is None:
            continue
        seen += 1
        names = [c["lastName"] for c in paper.data["creators"]]
        expected = ", ".join(names[:2]) + (" et al." if len(names) > 2 else "")
        assert cells[2] == expected.replace("'", "'")
        assert cells[3] == paper.data["date"] and cells[5] == paper.data["dateAdded"][:10]
        venue = cells[4].split(" · ")[0]
        assert len(venue) <= 40 or venue == "venue unknown"
    assert seen > 100
    # the CSV keeps the whole venue
    assert any(len(r["venue"]) > 60 for r in csv_rows(exports / "catalog.csv"))


def test_a_bad_columns_value_is_one_config_error(run, tmp_path, library) -> None:
    config = write_realistic_project(tmp_path / "list", library, settings="  columns: [status, title]\n")
    result = run("--config", str(config), "sync")
    assert result.code == 2 and "exports.columns' must list some of status, paper" in result.err
    config.write_text(config.read_text("utf-8").replace("[status, title]", "[status, year]"), "utf-8")
    result = run("--config", str(config), "sync")
    assert result.code == 2 and "must hold paper" in result.err


def test_the_summary_says_papers_and_entries_when_they_differ(run, tmp_path, library) -> None:
    exports = published(run, tmp_path, library, settings="  language: en\n")
    rows = csv_rows(exports / "catalog.csv")
    keys = {r["zotero_key"] for r in rows}
    read = {r["zotero_key"] for r in rows if r["status"] == "read"}
    assert len(keys) < len(rows)  # some papers are filed in two collections
    summary = (exports / "catalog.md").read_text(encoding="utf-8").split("\n\n")[2]
    assert (
        summary
        == f"{len(keys)} papers in {len(rows)} entries; {len(read)} read, {len(keys) - len(read)} to read."
    )


def test_sortable_writes_the_vendored_script_its_licence_and_removes_them_when_off(
    run, tmp_path, library
) -> None:
    exports = published(run, tmp_path, library, settings="  sortable: true\n")
    assets = exports / "assets"
    names = sorted(p.name for p in assets.iterdir())
    assert names == [
        "tablesort-LICENCE.txt",
        "tablesort-init.js",
        "tablesort.min.js",
        "tablesort.number.min.js",
    ]
    assert "tablesort v5.7.1" in (assets / "tablesort.min.js").read_text(encoding="utf-8")
    assert "Permission is hereby granted" in (assets / "tablesort-LICENCE.txt").read_text(encoding="utf-8")
    assert "new Tablesort(table)" in (assets / "tablesort-init.js").read_text(encoding="utf-8")
    assert "http" not in (assets / "tablesort-init.js").read_text(encoding="utf-8")  # no other host
    config = tmp_path / "list" / "zotsync.yaml"
    config.write_text(config.read_text(encoding="utf-8").replace("  sortable: true\n", ""), encoding="utf-8")
    sync(run, config)
    assert not list(assets.glob("*"))


def test_hostile_titles_stay_text_on_every_page(run, tmp_path, library) -> None:
    settings = PUBLISHED + "  tags_page: true\n  split: category\n"
    exports = published(run, tmp_path, library, settings=settings)
    texts = [p.read_text(encoding="utf-8") for p in exports.rglob("*.md")]
    html = "\n".join(markdown.markdown(t, extensions=["tables"]) for t in texts)
    assert "<script" not in html and "<img" not in html and 'href="javascript:' not in html
    assert not re.search(r"<[^>]*\son\w+\s*=", html)  # no element with an event handler
    on_page = {r["zotero_key"] for r in csv_rows(exports / "catalog.csv")}
    assert set(library.hostile_keys) <= on_page and len(library.hostile_keys) >= 4


def test_web_links_are_the_item_pages_below_the_library_page_the_web_api_names(
    run, tmp_path, zotero_api
) -> None:
    from factories import small_library, write_web_config

    server = zotero_api(small_library())
    config = write_web_config(tmp_path, server.url)
    text = config.read_text(encoding="utf-8")
    config.write_text(text + "exports:\n  dir: out\n  zotero_links: web\n  formats: [md]\n", encoding="utf-8")
    sync(run, config)
    page = (tmp_path / "out" / "catalog.md").read_text(encoding="utf-8")
    # the library's page as the API names it (`links.alternate`), the item's below it
    assert "[Zotero](https://www.zotero.org/tester/items/TRMSAAAA)" in page
    # no zotero:// link at all: a curator's own (the demo catalogue has one) goes too
    assert "zotero://" not in page and "Categorical Foundations for CuTe Layouts" in page


def test_init_writes_every_publishing_key_with_its_choice_and_each_line_loads(run, tmp_path) -> None:
    from zotsync.config import load_config

    assert run("init", str(tmp_path / "list"), "--source", "web", "--library-id", "7").code == 0
    config = tmp_path / "list" / "zotsync.yaml"
    text = config.read_text(encoding="utf-8")
    for key in (
        "scope",
        "exclude_collections",
        "exclude_tags",
        "hide_tags",
        "zotero_links",
        "tags_page",
        "archive_link",
        "split",
        "sortable",
        "columns",
        "venue_length",
        "read_tags",
        "unread_tags",
    ):
        assert re.search(rf"^  (# )?{key}: ", text, re.M), key
    assert "library: every item" in text and "curated: only the categories" in text  # the choice explained
    loaded = load_config(config)
    assert (loaded.exports.scope, loaded.exports.zotero_links) == ("library", "local")
    # every commented key, uncommented, is a valid setting
    config.write_text(re.sub(r"^  # (\w+: )", r"  \1", text, flags=re.M), encoding="utf-8")
    loaded = load_config(config)
    assert loaded.exports.exclude_collections == ("Inbox", "Unfiled") and loaded.exports.split == "category"
