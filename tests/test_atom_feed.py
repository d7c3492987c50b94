"""feed.xml: the papers syncs added to the page or saw read, as valid Atom with stable ids, the same facts
as CHANGES.md, and the same bytes when nothing changed."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from pathlib import Path

import feedparser
from conftest import write_config
from factories import api_item, write_json
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zotsync import digest
from zotsync.app.sync import run_sync
from zotsync.config import load_config
from zotsync.export import Page
from zotsync.export.atom import render_atom
from zotsync.export.base import LinkPlan
from zotsync.model import Library
from zotsync.text import flatten

ATOM = "{http://www.w3.org/2005/Atom}"


def project(folder: Path, titles: list[str], read: tuple[str, ...] = ()) -> Path:
    write_json(
        folder / "library.json",
        [
            api_item(
                f"PPR{n}2222"[:8],
                title,
                date="2024",
                publicationTitle=f"Venue {n}",
                url=f"https://example.org/{n}",
                tags=["status/read"] if title in read else [],
            )
            for n, title in zip("23456789ABCDEF", titles, strict=False)
        ],
    )
    (folder / "catalog.yaml").write_text(
        "title: My list\ncategories:\n  - name: Mine\n    entries:\n"
        "      - {title: Curated One, why: it matters, venue: OSDI'20}\n",
        encoding="utf-8",
    )
    return write_config(
        folder,
        "source: {type: snapshot, path: library.json}\ncatalog: catalog.yaml\nstore: store.sqlite\n"
        "exports:\n  dir: out\n  formats: [md, atom]\n",
    )


def sync_at(config: Path, when: datetime):
    return run_sync(load_config(config), clock=lambda: when)


def feed(folder: Path) -> feedparser.FeedParserDict:
    parsed = feedparser.parse((folder / "out" / "feed.xml").read_bytes())
    assert not parsed.bozo, parsed.get("bozo_exception")
    assert parsed.version == "atom10"
    return parsed


def test_the_feed_reports_what_changes_md_reports_with_stable_ids(tmp_path: Path) -> None:
    config = project(tmp_path, ["Alpha Paper", "Beta Paper"])
    sync_at(config, datetime(2026, 1, 1, 9, 0, tzinfo=UTC))
    first = feed(tmp_path)
    assert first.entries == []  # the first sync is the baseline, as in CHANGES.md
    assert first.feed.title == "My list"

    # a paper added, one newly read, the curated entry's why and venue in its entry
    config = project(tmp_path, ["Alpha Paper", "Beta Paper", "Gamma Paper"], read=("Alpha Paper",))
    (tmp_path / "catalog.yaml").write_text(
        (tmp_path / "catalog.yaml").read_text(encoding="utf-8")
        + "      - {title: Curated Two, why: also matters, venue: SOSP'21}\n",
        encoding="utf-8",
    )
    sync_at(config, datetime(2026, 1, 2, 9, 30, tzinfo=UTC))
    second = feed(tmp_path)
    changes = (tmp_path / "out" / "CHANGES.md").read_text(encoding="utf-8")
    assert [e.title for e in second.entries] == [
        "Added: Curated Two",
        "Added: Gamma Paper",
        "Read: Alpha Paper",
    ]
    for entry in second.entries:  # the same papers as the digest's Added and Newly read
        assert entry.title.split(": ", 1)[1] in changes
    curated = second.entries[0]
    assert curated.content[0].value == "SOSP'21 — also matters — Mine"
    assert second.entries[1].link == "https://example.org/4"
    assert second.entries[1].tags[0].term == "Unfiled"
    assert curated.updated == "2026-01-02T09:30:00+00:00"
    assert second.feed.updated == "2026-01-02T09:30:00+00:00"
    ids = [e.id for e in second.entries]
    assert len(set(ids)) == 3 and all(i.startswith("urn:uuid:") for i in ids)

    # nothing changed: the same bytes, not written again
    before = (tmp_path / "out" / "feed.xml").read_bytes()
    result = sync_at(config, datetime(2026, 1, 3, tzinfo=UTC))
    assert not result.changed and (tmp_path / "out" / "feed.xml").read_bytes() == before

    # the next change goes on top; the earlier entries keep their ids
    config = project(
        tmp_path, ["Alpha Paper", "Beta Paper", "Gamma Paper"], read=("Alpha Paper", "Beta Paper")
    )
    sync_at(config, datetime(2026, 1, 4, tzinfo=UTC))
    third = feed(tmp_path)
    assert [e.title for e in third.entries] == ["Read: Beta Paper", *(e.title for e in second.entries)]
    assert [e.id for e in third.entries[1:]] == ids


def test_export_writes_the_feed_the_last_sync_wrote(tmp_path: Path, run) -> None:
    config = project(tmp_path, ["Alpha Paper"])
    sync_at(config, datetime(2026, 1, 1, tzinfo=UTC))
    config = project(tmp_path, ["Alpha Paper", "Beta Paper"])
    sync_at(config, datetime(2026, 1, 2, tzinfo=UTC))
    exported = run("--config", str(config), "export", "--format", "atom", "--output", "-")
    assert exported.code == 0
    assert exported.out == (tmp_path / "out" / "feed.xml").read_text(encoding="utf-8")


def test_the_feed_keeps_its_latest_entries(tmp_path: Path) -> None:
    config = project(tmp_path, ["Paper Zero"])
    sync_at(config, datetime(2026, 1, 1, tzinfo=UTC))
    many = [f"Paper {n:02}" for n in range(digest.FEED_SIZE + 10)]
    write_json(
        tmp_path / "library.json",
        [api_item(f"M{n:02}22222"[:8].replace("0", "Z").replace("1", "Y"), t) for n, t in enumerate(many)],
    )
    sync_at(config, datetime(2026, 1, 2, tzinfo=UTC))
    assert len(feed(tmp_path).entries) == digest.FEED_SIZE


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    title=st.text(st.characters(codec="utf-8"), max_size=60),
    why=st.text(st.characters(codec="utf-8"), max_size=60),
    category=st.text(st.characters(codec="utf-8"), max_size=20),
)
def test_any_text_makes_well_formed_atom(title: str, why: str, category: str) -> None:
    news = digest.News(
        "added", "key:AAAA2222", "2026-01-01T00:00:00Z", title, "", "", why, (category,), "", ""
    )
    text = render_atom(Page(title, why, ()), Library(), [news], LinkPlan())
    root = ET.fromstring(text.encode("utf-8"))  # well-formed XML, whatever the data held
    entry = root.find(f"{ATOM}entry")
    assert entry is not None
    shown = entry.findtext(f"{ATOM}title")
    assert shown.startswith("Added: ")
    clean = flatten(title).replace("\ufffe", "").replace("\uffff", "")
    assert shown == "Added: " + (clean or "(untitled)")


def test_the_feed_links_where_the_site_serves_its_pages_and_names_the_authors() -> None:
    """Each entry names the paper's authors (from its row) and links its note page; the page and the note
    page at the addresses the site serves them; absolute, with `rel="self"`, when the site's URL is
    known, else relative to the feed and no self link (a relative one would name nothing)."""
    from zotsync.export.base import Site
    from zotsync.model import Placement

    news = digest.News(
        "added",
        "key:NOTE2222",
        "2026-01-01T00:00:00Z",
        "Paper",
        "OSDI",
        "2021",
        "",
        ("Systems",),
        "",
        "NOTE2222",
    )
    authors = ("Lovelace, Ada", "Zhang, Wei")
    row = Placement(
        "Systems", "unread", "Paper", "OSDI", "2021", "", authors, "", "", True, (), "NOTE2222", (), ()
    )
    page = Page("A list", "", (row,))
    for site, self_link, note, alternate in [
        (Site(), None, "notes/NOTE2222.md", "catalog.html"),
        (Site("mkdocs", True), None, "notes/NOTE2222/", "catalog.html"),
        (
            Site("mkdocs", False, "https://lab.example.org/list/"),
            "https://lab.example.org/list/feed.xml",
            "https://lab.example.org/list/notes/NOTE2222.html",
            "https://lab.example.org/list/catalog.html",
        ),
    ]:
        pages = {"md": "catalog.md", "html": "catalog.html"}
        plan = LinkPlan(pages, {"NOTE2222": "notes/NOTE2222.md"}, site=site)
        parsed = feedparser.parse(render_atom(page, Library(), [news], plan))
        links = {link["rel"]: link["href"] for link in parsed.feed.links}
        assert links.get("self") == self_link and links["alternate"] == alternate
        entry = parsed.entries[0]
        assert [author["name"] for author in entry.authors] == list(authors)
        assert [link["href"] for link in entry.links if link["rel"] == "related"] == [note]
