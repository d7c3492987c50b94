"""Every link of every format resolves where the page is read.

- On a built MkDocs Material site (with and without directory URLs): every `<a href>` of every HTML file
  in it — the pages MkDocs made from the Markdown (the page or its category pages, the tags page, the
  note pages, CHANGES.md) and catalog.html, which it copies as it is — and every link of feed.xml is
  followed to a file of the site and an id on it.
- On GitHub (a plain folder): every link of every Markdown file, parsed as CommonMark, and of
  catalog.html and feed.xml, leads to a file in the repository's tree, and its anchor to a heading as
  GitHub slugs it or an element's id.
"""

from __future__ import annotations

import copy
import json
import posixpath
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urldefrag, urljoin, urlsplit

import feedparser
import pytest
from factories import (
    PUBLISHED_SETTINGS,
    SITE_CONFIG,
    mkdocs_build,
    realistic_library,
    write_realistic_project,
    write_site,
)
from markdown_it import MarkdownIt

SITE_URL = "https://lab.example.org/papers/"  # where the test's site says it is published
FORMATS = "  formats: [md, csv, html, atom]\n"
PAPERS = 250


class Links(HTMLParser):
    """The `<a href>` targets and the ids (and `<a name>`s) of one HTML file."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.hrefs: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "a" and values.get("href") is not None:
            self.hrefs.append(str(values["href"]))
        for name in ("id", "name") if tag == "a" else ("id",):
            if values.get(name):
                self.ids.add(str(values[name]))


def links_of(path: Path) -> Links:
    parser = Links()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def add_a_paper_with_a_note(project: Path) -> str:
    """The snapshot with one more paper in a collection the page shows, with a note: the next sync adds
    it to the page (CHANGES.md, the feed) and gives it a note page. Its key."""
    snapshot = project / "library.json"
    objects = json.loads(snapshot.read_text(encoding="utf-8"))
    accelerators = next(o["key"] for o in objects if o["data"].get("name") == "Accelerators")
    template = next(o for o in objects if o["data"].get("itemType") == "conferencePaper")
    paper = copy.deepcopy(template)
    paper["key"] = paper["data"]["key"] = "ADDEDKEY"
    paper["data"] |= {"title": "A paper added later", "collections": [accelerators], "tags": []}
    paper["data"]["url"] = "https://example.org/papers/added"
    note = copy.deepcopy(template)
    note["key"] = "NTADDEDK"
    note["data"] = {
        "key": "NTADDEDK",
        "version": 1,
        "itemType": "note",
        "parentItem": "ADDEDKEY",
        "note": "<h1>Reading notes</h1><p>What it adds.</p>",
        "tags": [],
        "relations": {},
        "dateAdded": "2026-01-02T08:00:00Z",
        "dateModified": "2026-01-02T08:00:00Z",
    }
    snapshot.write_text(json.dumps([*objects, paper, note]), encoding="utf-8")
    return "ADDEDKEY"


def sync(run, config: Path) -> None:
    result = run("-q", "--config", str(config), "sync")
    assert result.code in (0, 3), result.err


# -- an MkDocs Material site ------------------------------------------------------------------------------


def resolve_in_site(site: Path, page: str, href: str) -> tuple[Path | None, str]:
    """The file of `site` a link on the page at `page` (its path in the site) leads to, and its anchor;
    None when the link leaves the site."""
    target, anchor = urldefrag(urljoin(SITE_URL + page, href))  # the site is at SITE_URL
    if not target.startswith(SITE_URL):
        return None, ""
    path = unquote(urlsplit(target).path[len(urlsplit(SITE_URL).path) :])
    file = site / path
    if path == "" or path.endswith("/") or file.is_dir():
        file = file / "index.html"
    return file, unquote(anchor)


def broken_in_site(site: Path) -> tuple[list[str], int]:
    """Each link of the site that leads to no file or no anchor (`page -> href`), and how many links
    within the site were followed."""
    pages = {path: links_of(path) for path in site.rglob("*.html")}
    broken, followed = [], 0

    def check(source: str, href: str) -> None:
        nonlocal followed
        file, anchor = resolve_in_site(site, source, href)
        if file is None:
            return
        followed += 1
        if not file.is_file():
            broken.append(f"{source} -> {href}")
        elif anchor and (file.suffix != ".html" or anchor not in pages[file].ids):
            broken.append(f"{source} -> {href} (no anchor)")

    for path, parsed in pages.items():
        for href in parsed.hrefs:
            check(path.relative_to(site).as_posix(), href)
    for feed in site.rglob("feed.xml"):
        source = feed.relative_to(site).as_posix()
        parsed = feedparser.parse(feed.read_bytes())
        for link in [*parsed.feed.links, *(each for entry in parsed.entries for each in entry.links)]:
            check(source, link["href"])
    return broken, followed


def built_site(run, folder: Path, directory_urls: bool, split: str) -> Path:
    # Without directory URLs MkDocs makes catalog.md into catalog.html, and drops zotsync's own.
    formats = FORMATS if directory_urls else "  formats: [md, csv, atom]\n"
    settings = PUBLISHED_SETTINGS + formats + f"  split: {split}\n"
    config = write_site(folder, realistic_library(papers=PAPERS), settings)
    mkdocs = SITE_CONFIG + f"site_url: {SITE_URL}\nuse_directory_urls: {str(directory_urls).lower()}\n"
    (folder / "mkdocs.yml").write_text(mkdocs, encoding="utf-8")
    phone = " · [on a phone](reading-list/catalog.html)" if directory_urls else ""
    (folder / "docs" / "index.md").write_text(
        "# A real reading list\n\n[The list](reading-list/catalog.md) · [by tag](reading-list/tags.md) · "
        f"[changes](reading-list/CHANGES.md) · [feed](reading-list/feed.xml){phone}\n",
        encoding="utf-8",
    )
    sync(run, config)
    add_a_paper_with_a_note(folder)
    sync(run, config)
    mkdocs_build(folder, folder / "site")
    return folder / "site"


@pytest.mark.parametrize(("directory_urls", "split"), [(True, "category"), (False, "none")])
def test_every_link_of_every_format_resolves_on_a_built_mkdocs_site(
    run, tmp_path: Path, directory_urls: bool, split: str
) -> None:
    site = built_site(run, tmp_path / "repo", directory_urls, split)
    if directory_urls:  # zotsync's catalog.html, copied as it is: the site's addresses, not the sources'
        hrefs = links_of(site / "reading-list" / "catalog.html").hrefs
        notes = [href for href in hrefs if "notes/" in href]
        assert notes and all(href.endswith("/") and href.startswith("notes/") for href in notes)
        assert any(href.startswith("tags/#") for href in hrefs)
    if split == "category":
        assert any((site / "reading-list" / "categories").rglob("*.html"))
    assert (site / "reading-list" / "notes").is_dir()
    feed = feedparser.parse((site / "reading-list" / "feed.xml").read_bytes())
    assert {"rel": "self", "href": f"{SITE_URL}reading-list/feed.xml"}.items() <= next(
        link for link in feed.feed.links if link["rel"] == "self"
    ).items()
    added = next(entry for entry in feed.entries if "A paper added later" in entry.title)
    related = [link["href"] for link in added.links if link["rel"] == "related"]
    note = "notes/ADDEDKEY/" if directory_urls else "notes/ADDEDKEY.html"
    assert related == [f"{SITE_URL}reading-list/{note}"]
    assert added.authors and all(author["name"] for author in added.authors)
    broken, followed = broken_in_site(site)
    assert broken == [], broken[:20]
    assert followed > 500  # the page's rows, the tags page's anchors, the note pages, the nav


# -- GitHub: the Markdown files as they are in the repository's tree ------------------------------------


def github_slug(text: str, taken: dict[str, int]) -> str:
    """A heading's anchor as GitHub makes it (github-slugger): lower case, punctuation dropped, spaces
    to hyphens, `-1`, `-2` after a slug taken."""
    slug = re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")
    if slug in taken:
        taken[slug] += 1
        return f"{slug}-{taken[slug]}"
    taken[slug] = 0
    return slug


def markdown_links(path: Path) -> tuple[list[str], set[str]]:
    """A Markdown file's link targets and its anchors (headings as GitHub slugs them, and the ids of
    the HTML in it), parsed as CommonMark with GitHub's tables."""
    tokens = MarkdownIt("commonmark").enable("table").parse(path.read_text(encoding="utf-8"))
    hrefs: list[str] = []
    anchors: set[str] = set()
    taken: dict[str, int] = {}
    for at, token in enumerate(tokens):
        if token.type == "heading_open":
            inline = tokens[at + 1]
            words = "".join(
                child.content for child in inline.children or [] if child.type in ("text", "code_inline")
            )
            anchors.add(github_slug(words, taken))
        for child in [token, *(token.children or [])]:
            if child.type == "link_open":
                hrefs.append(str(child.attrs["href"]))
            if child.type in ("html_inline", "html_block"):
                parsed = Links()
                parsed.feed(child.content)
                anchors |= parsed.ids
                hrefs += parsed.hrefs
    return hrefs, anchors


def broken_in_tree(tree: Path) -> tuple[list[str], int]:
    markdown = {path: markdown_links(path) for path in tree.rglob("*.md")}
    broken, followed = [], 0
    links = [(path, href) for path, (hrefs, _) in markdown.items() for href in hrefs]
    for html in tree.rglob("*.html"):
        links += [(html, href) for href in links_of(html).hrefs]
    for feed in tree.rglob("feed.xml"):
        parsed = feedparser.parse(feed.read_bytes())
        links += [(feed, link["href"]) for link in parsed.feed.links]
        links += [(feed, each["href"]) for entry in parsed.entries for each in entry.links]
    for source, href in links:
        if urlsplit(href).scheme or href.startswith("/"):
            continue
        followed += 1
        target, anchor = urldefrag(href)
        file = (source.parent / unquote(target)).resolve() if target else source
        if not file.is_file() or not file.is_relative_to(tree.resolve()):
            broken.append(f"{source.relative_to(tree)} -> {href}")
        elif anchor and file.suffix == ".md" and unquote(anchor) not in markdown[file][1]:
            broken.append(f"{source.relative_to(tree)} -> {href} (no anchor)")
    return broken, followed


@pytest.mark.parametrize("split", ["none", "category"])
def test_every_link_resolves_in_the_repository_tree_as_github_shows_it(run, tmp_path: Path, split) -> None:
    repo = tmp_path / "repo"
    settings = PUBLISHED_SETTINGS + FORMATS + f"  split: {split}\n"
    config = write_realistic_project(repo, realistic_library(papers=PAPERS), settings=settings)
    (repo / "README.md").write_text(
        "# A reading list\n\n[The list](exports/catalog.md) · [by tag](exports/tags.md)\n",
        encoding="utf-8",
    )
    sync(run, config)
    add_a_paper_with_a_note(repo)
    sync(run, config)
    exports = repo / "exports"
    assert (exports / "notes" / "ADDEDKEY.md").is_file() and (exports / "CHANGES.md").is_file()
    notes = [href for href in links_of(exports / "catalog.html").hrefs if "notes/" in href]
    assert notes and all(posixpath.splitext(href)[1] == ".md" for href in notes)
    broken, followed = broken_in_tree(repo)
    assert broken == [], broken[:20]
    assert followed > 300


def test_the_html_page_on_a_site_without_directory_urls_is_one_warning(run, tmp_path: Path) -> None:
    """Without directory URLs MkDocs makes catalog.md into catalog.html and drops zotsync's own (a
    warning that fails `--strict`): the sync says so, once, naming the mkdocs.yml."""
    repo = tmp_path / "repo"
    config = write_site(repo, realistic_library(papers=40), PUBLISHED_SETTINGS + FORMATS)
    (repo / "mkdocs.yml").write_text(SITE_CONFIG + "use_directory_urls: false\n", encoding="utf-8")
    result = run("--config", str(config), "sync")
    assert result.code == 0, result.err
    warned = [line for line in result.err.splitlines() if "use_directory_urls: false" in line]
    assert len(warned) == 1 and str(repo / "mkdocs.yml") in warned[0] and "exports.formats" in warned[0]
