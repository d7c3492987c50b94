"""The pure rules of enrichment: when a service's hit is the item's paper, and which venue a row shows
(curated > Zotero's own > a service's, but a preprint's published venue with `enrich.prefer_published`)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zotsync.facts import item_facts
from zotsync.model import Catalogue, CatalogueEntry, Category, FoundMetadata, Item, Library
from zotsync.processing.enrich.matching import Hit, family_agrees, judge, query_of, same_title, years_agree
from zotsync.processing.enrich.services import dblp_hits
from zotsync.reconcile import Options, reconcile
from zotsync.reconcile.venue import load_venue_table


def hit(
    title: str, author: str = "Lianmin Zheng", year: str = "2020", venue: str = "OSDI", **more: object
) -> Hit:
    fields: dict[str, object] = dict(
        service="dblp",
        title=title,
        authors=(author,),
        first_family="",
        year=year,
        venue=venue,
        venue_key=venue.casefold(),
        published=True,
        doi="",
    )
    return Hit(**{**fields, **more})  # type: ignore[arg-type]


def item(
    title: str = "Ansor: Generating High-Performance Tensor Programs for Deep Learning", **data: object
) -> Item:
    body: dict[str, object] = {
        "key": "ANS2AAAA",
        "version": 1,
        "itemType": data.pop("itemType", "conferencePaper"),
        "title": title,
        "creators": [{"creatorType": "author", "firstName": "Lianmin", "lastName": "Zheng"}],
        **data,
    }
    return Item.from_api(body)


def query(**data: object):
    paper = item(**data)
    found = query_of(paper, item_facts(paper), prefer_published=True)
    assert found is not None
    return found


# -- the title, the first author, the year ----------------------------------------------------------


@pytest.mark.parametrize(
    ("ours", "theirs", "same"),
    [
        (
            "Ansor: Generating High-Performance Tensor Programs",
            "ansor — generating high performance tensor programs.",
            True,
        ),
        (
            "Attention Is All You Need But You Don't Need All Of It",
            "Attention Is All You Need But You Don&apos;t Need All Of It.",
            True,
        ),
        ("Optimizing Tensor Programs", "Optimizing Tensor Program", True),  # a letter
        ("Compiling C++ Templates", "Compiling C Templates", False),  # a symbol that says something
        ("Why P ≠ NP", "Why P = NP", False),
        ("Llama 2: Open Foundation Models", "Llama 3: Open Foundation Models", False),  # a number
        ("Attention Is All You Need", "Attentional Transfer is All You Need", False),
    ],
)
def test_titles_match_after_normalisation_but_never_across_a_number_or_a_symbol(
    ours: str, theirs: str, same: bool
) -> None:
    assert same_title(ours, theirs) is same


@given(
    words=st.lists(
        st.sampled_from(["tensor", "graph", "compiler", "sparse", "kernel", "fusion"]), min_size=3, max_size=8
    ),
    number=st.integers(min_value=1, max_value=10**6),
    delta=st.integers(min_value=1, max_value=9),
)
def test_a_title_with_another_number_is_never_the_same_title(
    words: list[str], number: int, delta: int
) -> None:
    title = " ".join(words)
    assert same_title(f"{title} {number}", f"{title.title()} {number}.")
    assert not same_title(f"{title} {number}", f"{title} {number + delta}")


def test_the_first_authors_family_name_agrees_across_accents_homonym_numbers_and_full_names() -> None:
    assert family_agrees("Quintana-Ortí", hit("x", "Enrique S. Quintana-Orti"))
    assert family_agrees("Bran", hit("x", "Andres M. Bran"))
    (dblp,) = dblp_hits(
        {
            "result": {
                "hits": {
                    "hit": [{"info": {"title": "x.", "authors": {"author": {"text": "Xiaopeng Zhang 0009"}}}}]
                }
            }
        }
    )
    assert dblp.authors == ("Xiaopeng Zhang",) and family_agrees("Zhang", dblp)
    assert not family_agrees("Wang", hit("x", "Lei Wangler"))
    assert not family_agrees("", hit("x", "Lei Wang"))  # an item without an author is never confident
    assert family_agrees("Perkins", hit("x", "T. Alex Perkins", first_family="Perkins"))


def test_the_year_agrees_within_one_and_an_item_without_a_year_is_judged_on_the_rest() -> None:
    assert years_agree("2020", "2021") and years_agree("2021", "2020") and years_agree("", "2020")
    assert not years_agree("2020", "2022")


# -- judging a service's hits -----------------------------------------------------------------------

ANSOR = "Ansor: Generating High-Performance Tensor Programs for Deep Learning"


def test_a_near_title_first_hit_makes_the_item_ambiguous_even_when_a_later_hit_agrees() -> None:
    verdict = judge(query(), [hit("Ansor: Generating Tensor Programs for Deep Learning Fast"), hit(ANSOR)])
    assert verdict.outcome == "ambiguous"
    assert [c.title for c in verdict.candidates] == [
        "Ansor: Generating Tensor Programs for Deep Learning Fast",
        ANSOR,
    ]


def test_an_unrelated_first_hit_does_not_hide_the_paper_further_down() -> None:
    verdict = judge(query(), [hit("Strategic Reading and Ontologies"), hit(ANSOR)])
    assert verdict.outcome == "filled" and verdict.hit == hit(ANSOR)


def test_two_published_venues_for_one_paper_are_ambiguous_and_one_venue_twice_is_not() -> None:
    assert judge(query(), [hit(ANSOR), hit(ANSOR, venue="TOCS", year="2021")]).outcome == "ambiguous"
    assert judge(query(), [hit(ANSOR), hit(ANSOR)]).outcome == "filled"


def test_the_published_version_wins_over_the_preprint_in_one_answer() -> None:
    preprint = hit(ANSOR, venue="arXiv", venue_key="", published=False)
    verdict = judge(query(), [preprint, hit(ANSOR)])
    assert verdict.outcome == "filled" and verdict.hit is not None and verdict.hit.venue == "OSDI"


def test_another_author_or_a_distant_year_is_another_paper() -> None:
    assert judge(query(), [hit(ANSOR, author="Ada Lovelace")]).outcome == "ambiguous"
    assert judge(query(date="2020"), [hit(ANSOR, year="2023")]).outcome == "ambiguous"
    assert judge(query(), [hit("A Survey of Kernel Fusion")]).outcome == "not_found"


def test_only_a_syntactically_valid_doi_is_asked_about() -> None:
    assert query(DOI="see the PDF").doi == "" and "doi" in query(DOI="see the PDF").needs
    assert query(DOI="https://doi.org/10.1145/3600006.3613139").doi == "10.1145/3600006.3613139"
    assert query(DOI="10.1145/3600006.3613139").needs == ("venue", "year")


def test_an_item_lacking_nothing_is_never_asked_and_a_preprint_is_asked_for_its_published_version() -> None:
    complete = item(proceedingsTitle="OSDI", date="2020", DOI="10.5555/1")
    assert query_of(complete, item_facts(complete), prefer_published=True) is None
    preprint = item(itemType="preprint", repository="arXiv", date="2020", DOI="10.48550/arXiv.2006.06762")
    assert query_of(preprint, item_facts(preprint), prefer_published=True).needs == ("published",)  # type: ignore[union-attr]
    assert query_of(preprint, item_facts(preprint), prefer_published=False) is None


# -- which venue a row shows ------------------------------------------------------------------------

SOSP = FoundMetadata("dblp", "SOSP", "sosp", "2023", True, "", "10.1145/3600006.3613139")


def rows(
    *items: Item, found: FoundMetadata = SOSP, entries: tuple[CatalogueEntry, ...] = (), prefer: bool = True
):
    library = Library(items=items, found={i.key: found for i in items})
    catalogue = Catalogue("T", categories=(Category("C", entries),))
    options = Options(enriched_venues=load_venue_table(), prefer_published=prefer)
    return {p.zotero_key: p for p in reconcile(catalogue, library, options).placements}


def test_a_services_venue_fills_only_where_zotero_has_none_and_never_over_the_curator() -> None:
    bare = item(date="2023")
    own = replace(
        item(
            proceedingsTitle="Proceedings of the 29th Symposium on Operating Systems Principles", date="2023"
        ),
        key="OWN2AAAA",
    )
    curated = replace(item("PIT: Optimization of Dynamic Sparse Models"), key="CUR2AAAA")
    entry = CatalogueEntry("C", "PIT: Optimization of Dynamic Sparse Models", venue="SOSP 2023 (best paper)")
    shown = rows(bare, own, curated, entries=(entry,))
    assert (shown["ANS2AAAA"].venue, shown["ANS2AAAA"].venue_source) == ("SOSP'23", "dblp")
    assert shown["ANS2AAAA"].doi == "10.1145/3600006.3613139"
    assert (shown["OWN2AAAA"].venue, shown["OWN2AAAA"].venue_source) == (
        "Proceedings of the 29th Symposium on Operating Systems Principles · 2023",
        "zotero",
    )
    assert (shown["CUR2AAAA"].venue, shown["CUR2AAAA"].venue_source) == ("SOSP 2023 (best paper)", "curated")


@pytest.mark.parametrize(
    ("prefer", "venue"), [(True, ("SOSP'23", "dblp")), (False, ("arXiv · 2023", "zotero"))]
)
def test_a_preprints_published_venue_replaces_zoteros_only_with_prefer_published(
    prefer: bool, venue: tuple[str, str]
) -> None:
    preprint = item(itemType="preprint", repository="arXiv", date="2023")
    shown = rows(preprint, prefer=prefer)["ANS2AAAA"]
    assert (shown.venue, shown.venue_source) == venue


def test_a_year_is_filled_where_zotero_has_none() -> None:
    found = SOSP._replace(year="2023")
    shown = rows(item(), found=found)["ANS2AAAA"]
    assert (shown.year, shown.venue) == ("2023", "SOSP'23")
