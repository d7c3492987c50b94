"""The pure core: matching rules, per-field merge, fallbacks and page order."""

from __future__ import annotations

import pytest
from factories import api_child, api_collection, api_item, api_pdf

from zotsync.model import Catalogue, CatalogueEntry, Category, Collection, Item, Library, Link
from zotsync.reconcile import Options, match, reconcile


def items(*objects: dict) -> list[Item]:
    return [Item.from_api(o) for o in objects]


def entry(title: str, category: str = "Papers", **fields: object) -> CatalogueEntry:
    return CatalogueEntry(category=category, title=title, **fields)  # type: ignore[arg-type]


def library(*objects: dict) -> Library:
    collections = tuple(Collection.from_api(o) for o in objects if "name" in o["data"])
    return Library(tuple(Item.from_api(o) for o in objects if "name" not in o["data"]), collections, 10)


RULES = [
    # (rule, curated entry, Zotero item that must match it)
    ("zotero_key", entry("Anything at all", zotero_key="ABCD2345"), api_item("ABCD2345", "Real Title")),
    ("doi", entry("Other words", doi="10.1145/ABC.123"), api_item("DQI22222", "T", DOI="10.1145/abc.123")),
    (
        "doi",
        entry("Other words", doi="https://doi.org/10.1145/x"),
        api_item("DQI33333", "T", DOI="10.1145/X"),
    ),
    (
        "doi",
        entry("Other words", links=(Link("Paper", "https://doi.org/10.1/z"),)),
        api_item("DQI44444", "T", extra="DOI: 10.1/Z"),
    ),
    (
        "arxiv",
        entry("Other", arxiv="2501.01234v2"),
        api_item("ARX22222", "T", "preprint", archiveID="arXiv:2501.01234"),
    ),
    (
        "arxiv",
        entry("Other", arxiv="arXiv:2501.01234"),
        api_item("ARX33333", "T", "preprint", url="https://arxiv.org/abs/2501.01234v3"),
    ),
    (
        "arxiv",
        entry("Other", links=(Link("Paper", "https://arxiv.org/pdf/2501.01234"),)),
        api_item("ARX44444", "T", "preprint", DOI="10.48550/arXiv.2501.01234"),
    ),
    (
        "url",
        entry("Other", url="http://www.example.org/paper/"),
        api_item("URL22222", "T", url="https://example.org/paper"),
    ),
    (
        "title",
        entry("welder: scheduling  deep-learning memory access"),
        api_item("TTL22222", "Welder: Scheduling Deep Learning Memory Access"),
    ),
    ("title", entry("Open-CAKE-IR: 跨硬件优化"), api_item("TTL33333", "Open‑CAKE‑IR：跨硬件优化")),
    ("title", entry("ＦＵＬＬ Width Title"), api_item("TTL44444", "Full width title")),
]


@pytest.mark.parametrize(("rule", "curated", "obj"), RULES, ids=[f"{r[0]}-{i}" for i, r in enumerate(RULES)])
def test_each_rule_matches(rule: str, curated: CatalogueEntry, obj: dict) -> None:
    noise = api_item("NQ2222ZZ", "An unrelated paper", DOI="10.9/other")
    result = match([curated], items(obj, noise))
    item = result.item_for(curated)
    assert item is not None and item.key == obj["key"]
    assert result.rule[next(iter(result.by_title))] == rule


def test_stronger_evidence_wins_over_title() -> None:
    by_title = api_item("TITLE222", "Shared Title")
    by_doi = api_item("DQI22222", "Renamed in Zotero", DOI="10.1/x")
    result = match([entry("Shared Title", doi="10.1/x")], items(by_title, by_doi))
    assert result.item_for(entry("Shared Title")).key == "DQI22222"


def test_pin_never_falls_back_to_guessing() -> None:
    result = match([entry("Exact Title", zotero_key="ZZZZ9999")], items(api_item("AAAA2222", "Exact Title")))
    assert result.by_title == {}
    assert [u.reason for u in result.unmatched] == ["pinned key not in library"]


def test_a_pin_to_a_trashed_attachment_is_not_in_the_library_whether_attachments_are_loaded() -> None:
    """`status` and a CSV export load no attachments: the reason must not depend on that."""
    paper, pdf = api_item("PAPR2222", "Paper"), api_pdf("PDFF2222", "PAPR2222", deleted=1)
    pinned = [entry("Paper", zotero_key="PDFF2222")]
    reasons = [
        [u.reason for u in match(pinned, library).unmatched] for library in (items(paper, pdf), items(paper))
    ]
    assert reasons == [["pinned key not in library"]] * 2


def test_trashed_item_leaves_entry_unmatched_and_says_why() -> None:
    result = match([entry("Gone Paper")], items(api_item("GQNE2222", "Gone Paper", deleted=1)))
    assert result.by_title == {}
    assert [(u.title, u.reason) for u in result.unmatched] == [("Gone Paper", "item is in the trash")]


def test_two_items_for_one_entry_is_ambiguous() -> None:
    result = match([entry("Twin")], items(api_item("TWIN2222", "Twin"), api_item("TWIN3333", "twin")))
    assert result.by_title == {}
    assert [(a.rule, a.item_keys) for a in result.ambiguities] == [("title", ("TWIN2222", "TWIN3333"))]


def test_one_item_claimed_by_two_entries_is_ambiguous_and_matches_neither() -> None:
    entries = [entry("First name", doi="10.1/same"), entry("Second name", doi="10.1/same")]
    result = match(entries, items(api_item("SAME2222", "Zotero title", DOI="10.1/same")))
    assert result.by_title == {}
    assert result.ambiguities[0].titles == ("First name", "Second name")
    assert {u.reason for u in result.unmatched} == {"ambiguous (doi)"}


def test_same_title_in_two_categories_is_one_claim() -> None:
    entries = [entry("Paper A", "One"), entry("Paper A", "Two")]
    result = reconcile(
        Catalogue("t", "", (Category("One", entries[:1]), Category("Two", entries[1:]))),
        library(api_item("PAPA2222", "Paper A")),
    )
    assert [(p.category, p.zotero_key) for p in result.placements] == [
        ("One", "PAPA2222"),
        ("Two", "PAPA2222"),
    ]
    assert result.matches.ambiguities == []


def test_notes_attachments_and_trashed_items_are_not_entries() -> None:
    lib = library(
        api_item("REGU2222", "Regular"),
        api_pdf("PDFA2222", "REGU2222"),
        api_child("NQTE2222", "REGU2222", "note", note="<p>hi</p>"),
        api_item("TRSH2222", "Trashed", deleted=1),
    )
    rows = reconcile(Catalogue(), lib).placements
    assert [(r.title, r.category) for r in rows] == [("Regular", "Unfiled")]


def test_merge_takes_curated_fields_and_fills_the_rest_from_zotero() -> None:
    obj = api_item(
        "MERG2222",
        "Zotero Title",
        "conferencePaper",
        proceedingsTitle="Proc. of Something",
        date="2021-06-01",
        DOI="10.5/m",
        url="https://example.org/m",
        tags=["x", "y"],
        creators=[
            {"creatorType": "author", "firstName": "Grace", "lastName": "Hopper"},
            {"creatorType": "author", "name": "ACME Lab"},
        ],
    )
    curated = entry("zotero title", venue="PLDI'21", status="read", why="Because.", noted=True)
    (row,) = reconcile(Catalogue("t", "", (Category("Papers", (curated,)),)), library(obj)).placements
    assert (row.title, row.venue, row.status, row.why, row.noted) == (
        "Zotero Title",
        "PLDI'21",
        "read",
        "Because.",
        True,
    )
    assert (row.year, row.doi, row.url, row.tags) == ("2021", "10.5/m", "https://example.org/m", ("x", "y"))
    assert row.authors == ("Hopper, Grace", "ACME Lab")
    assert [link.label for link in row.links] == ["Paper", "Zotero"]


def test_fallbacks_derive_venue_and_links_from_zotero() -> None:
    lib = library(
        api_item("VENU2222", "With venue", publicationTitle="Journal of Tests", date="2017"),
        api_item("YEAR2222", "Year only", date="2023-05-01"),
        api_item("NQNE2222", "Nothing known"),
        api_pdf("PDF72222", "NQNE2222", dateAdded="2024-01-02T00:00:00Z"),
        api_pdf("PDF82222", "NQNE2222", dateAdded="2024-01-01T00:00:00Z"),
    )
    rows = {r.title: r for r in reconcile(Catalogue(), lib, Options(archive_link="a.md#{key}")).placements}
    assert rows["With venue"].venue == "Journal of Tests · 2017"
    assert (rows["Year only"].venue, rows["Year only"].year) == ("", "2023")
    assert rows["Nothing known"].links == (
        Link("PDF", "zotero://open-pdf/library/items/PDF82222", kind="pdf"),
        Link("PDF2", "zotero://open-pdf/library/items/PDF72222", kind="pdf"),
        Link("Zotero", "zotero://select/library/items/NQNE2222", kind="zotero"),
        Link("归档标签", "a.md#NQNE2222", kind="archive"),
    )


def test_read_status_from_zotero_tags_and_reading_list_extra() -> None:
    lib = library(
        api_item("TAGR2222", "Tagged", tags=["_read", "topic"]),
        api_item("XTRA2222", "Extra", extra="Read_Status: Read\nRead_Status_Date: 2024-01-01"),
        api_item("UNRD2222", "Unread", extra="Read_Status: To Read"),
    )
    rows = {r.title: r for r in reconcile(Catalogue(), lib, Options(read_tags=("_read",))).placements}
    assert {t: r.status for t, r in rows.items()} == {"Tagged": "read", "Extra": "read", "Unread": "unread"}
    assert rows["Tagged"].tags == ("topic",)  # the status tag is shown as the status, not as a tag


def test_curated_status_wins_and_disagreement_is_reported() -> None:
    curated = entry("Tagged", status="unread")
    result = reconcile(
        Catalogue("t", "", (Category("Papers", (curated,)),)),
        library(api_item("TAGR2222", "Tagged", tags=["_read"])),
        Options(read_tags=("_read",)),
    )
    assert result.placements[0].status == "unread"
    assert result.status_conflicts == (("Tagged", "unread", "read"),)


def test_page_order_catalogue_first_then_collection_paths_sorted() -> None:
    lib = library(
        api_collection("TQPC2222", "Top"),
        api_collection("SUBB2222", "B child", "TQPC2222"),
        api_collection("SUBA2222", "A child", "TQPC2222"),
        api_item("ZETA2222", "zeta", collections=["SUBB2222"]),
        api_item("ALFA2222", "Alpha", collections=["SUBB2222", "SUBA2222"]),
        api_item("BETA2222", "beta", collections=["SUBB2222"]),
        api_item("CURA2222", "Curated one", collections=["SUBA2222"]),
        api_item("LQQS2222", "Loose"),
    )
    catalogue = Catalogue(
        "t",
        "",
        (
            Category("Hand", (entry("Curated one", "Hand"), entry("Not in Zotero", "Hand"))),
            Category("Top / B child", (entry("zeta", "Top / B child"),)),
        ),
    )
    rows = [(r.category, r.title) for r in reconcile(catalogue, lib).placements]
    assert rows == [
        ("Hand", "Curated one"),
        ("Hand", "Not in Zotero"),
        ("Top / B child", "zeta"),  # curated first, in catalogue order
        ("Top / B child", "Alpha"),  # then the rest by title, case folded
        ("Top / B child", "beta"),
        ("Top / A child", "Alpha"),  # an item in two collections: one row per collection
        ("Unfiled", "Loose"),
    ]


def test_curated_links_win_and_zotero_adds_its_pdfs_unless_the_curator_has_one() -> None:
    lib = library(
        api_item("LINK2222", "Linked", url="https://zotero.example/p"), api_pdf("PDFL2222", "LINK2222")
    )
    own_pdf = entry("Linked", "Mine", links=(Link("Paper", "https://p"), Link("PDF", "my.pdf")))
    plain = entry("Linked", "Plain", links=(Link("Note", "notes/l.md"), Link("Paper", "https://p")))
    catalogue = Catalogue("t", "", (Category("Mine", (own_pdf,)), Category("Plain", (plain,))))
    rows = {r.category: r.links for r in reconcile(catalogue, lib).placements}
    assert rows["Mine"] == own_pdf.links
    assert rows["Plain"] == (
        *plain.links,
        Link("PDF", "zotero://open-pdf/library/items/PDFL2222", kind="pdf"),
    )


def test_rows_without_zotero_links_differ_from_the_page_only_in_their_links() -> None:
    """`status` reconciles without Zotero's links (it shows none): every other field is the page's."""
    lib = library(
        api_item("LINK2222", "Linked", url="https://example.org/a", DOI="10.1/a"),
        api_pdf("LPDF2222", "LINK2222"),
        api_item("LINK3333", "Curated one"),
    )
    catalogue = Catalogue(
        categories=(
            Category(
                "Papers",
                (entry("Curated one", links=(Link("Note", "notes/x.md"),)),),
            ),
        )
    )
    full = reconcile(catalogue, lib, Options(archive_link="a/{key}")).placements
    lean = reconcile(catalogue, lib, Options(archive_link="a/{key}", zotero_links=False)).placements
    assert [p._replace(links=()) for p in full] == [p._replace(links=()) for p in lean]
    assert [p.links for p in lean] == [(Link("Note", "notes/x.md"),), ()]  # the curator's stay
    assert any(link.kind == "pdf" for p in full for link in p.links)
