"""Matching traps, the fuzzy stage, duplicates, venue short forms and order independence."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from factories import api_item
from hypothesis import given, settings
from hypothesis import strategies as st

from zotsync import normalize
from zotsync.model import CatalogueEntry, Item
from zotsync.reconcile import match
from zotsync.reconcile.match import FUZZY_THRESHOLD
from zotsync.reconcile.venue import VenueTable, derive_venue, load_venue_table


def entry(title: str, **fields: object) -> CatalogueEntry:
    return CatalogueEntry(category="C", title=title, **fields)  # type: ignore[arg-type]


def matched(entries: list[CatalogueEntry], *objects: dict) -> dict[str, str]:
    result = match(entries, [Item.from_api(o) for o in objects])
    return {e.title: item.key for e in entries if (item := result.item_for(e))}


TRAPS = [
    pytest.param(
        [entry("Ansor", venue="OSDI'20")],
        [api_item("ANS28222", "Ansor", date="2020-11-04"), api_item("ANS79222", "Ansor", date="2019")],
        {"Ansor": "ANS28222"},
        id="same title, the venue year picks the item",
    ),
    pytest.param(
        [entry("Ansor", year="2019")],
        [api_item("ANS28222", "Ansor", date="2020"), api_item("ANS79222", "Ansor", date="2019")],
        {"Ansor": "ANS79222"},
        id="same title, an explicit year picks the item",
    ),
    pytest.param(
        [entry("Old working title", zotero_key="PINN2222")],
        [api_item("PINN2222", "The title Zotero has now")],
        {"Old working title": "PINN2222"},
        id="title changed in Zotero after pinning",
    ),
    pytest.param(
        [entry("X", doi="10.1145/3453483.3454083")],
        [api_item("DQIC2222", "Y", DOI="10.1145/3453483.3454083".upper())],
        {"X": "DQIC2222"},
        id="DOI in different case",
    ),
    pytest.param(
        [entry("X", arxiv="2301.00001v2")],
        [api_item("ARXV2222", "Y", "preprint", archiveID="arXiv:2301.00001")],
        {"X": "ARXV2222"},
        id="arXiv version suffix",
    ),
    pytest.param(
        [entry("Twin")],
        [api_item("TWIN2222", "Twin"), api_item("TWIN3333", "Twin")],
        {},
        id="two items with the same title and no year: ambiguous",
    ),
    pytest.param(
        [entry("张量编译器：一个综述")],
        [api_item("CJKK2222", "张量编译器:一个综述"), api_item("CJKK3333", "张量编译器的另一个综述")],
        {"张量编译器：一个综述": "CJKK2222"},
        id="CJK title with a full-width colon",
    ),
    pytest.param(
        [entry("Trashed paper")],
        [api_item("TRSH2222", "Trashed paper", deleted=1)],
        {},
        id="a trashed item does not match",
    ),
    pytest.param(
        [entry("A book", isbn="0-7503-0321-2")],
        [api_item("BQQK2222", "Another title", "book", ISBN="978-0-7503-0321-7 0750303212")],
        {"A book": "BQQK2222"},
        id="ISBN-10 against ISBN-13",
    ),
    pytest.param(
        [entry("TVM: An Automated End-to-End Optimizing Compiler for Deep Learnin")],
        [api_item("TVMM2222", "TVM: An Automated End-to-End Optimizing Compiler for Deep Learning")],
        {"TVM: An Automated End-to-End Optimizing Compiler for Deep Learnin": "TVMM2222"},
        id="fuzzy: a small edit",
    ),
    pytest.param(
        [entry("Tiles for GPUs: a programming model")],
        [
            api_item("GPUS2222", "Tiles for GPUs: a programming model!"[:-1] + " v1"),
            api_item("TPUS2222", "Tiles for TPUs: a programming model"),
        ],
        {},
        id="fuzzy: two close candidates and no clear best",
    ),
    pytest.param(
        [entry("Completely different words here")],
        [api_item("DIFF2222", "Completely other text over there")],
        {},
        id="fuzzy: below the threshold",
    ),
]


@pytest.mark.parametrize(("entries", "objects", "expected"), TRAPS)
def test_matching_traps(entries: list[CatalogueEntry], objects: list[dict], expected: dict[str, str]) -> None:
    assert matched(entries, *objects) == expected


def test_a_trashed_items_entry_is_reported_with_the_reason() -> None:
    result = match(
        [entry("Trashed paper")], [Item.from_api(api_item("TRSH2222", "Trashed paper", deleted=1))]
    )
    assert [(u.title, u.reason) for u in result.unmatched] == [("Trashed paper", "item is in the trash")]


def test_fuzzy_only_considers_items_no_exact_rule_took() -> None:
    entries = [entry("Exact Paper Title About Tensors"), entry("Exact Paper Title About Tensor")]
    objects = [api_item("EXAC2222", "Exact Paper Title About Tensors")]
    # The exact title wins its item; the near-duplicate entry must not fuzzily take it as well.
    assert matched(entries, *objects) == {"Exact Paper Title About Tensors": "EXAC2222"}


def test_unmatched_entries_list_their_nearest_candidates_with_scores() -> None:
    result = match(
        [entry("Graph substitutions for deep learning")],
        [
            Item.from_api(
                api_item("TASQ2222", "TASO: optimizing deep learning computation with graph substitutions")
            )
        ],
    )
    (unmatched,) = result.unmatched
    nearest = result.nearest(unmatched.title)
    assert nearest and nearest[0].key == "TASQ2222"
    assert 0 < nearest[0].score < FUZZY_THRESHOLD


def test_zotero_duplicates_are_flagged() -> None:
    objects = [
        api_item("DUPA2222", "One Paper", DOI="10.1/x", date="2020"),
        api_item("DUPB2222", "One paper (preprint)", DOI="10.1/X"),
        api_item("DUPC2222", "Same Title", date="2021"),
        api_item("DUPD2222", "same title", date="2021"),
        api_item("DUPE2222", "Same Title", date="2022"),  # a later version: flagged all the same
    ]
    result = match([], [Item.from_api(o) for o in objects])
    assert [(d.reason, d.item_keys) for d in result.duplicates] == [
        ("same DOI", ("DUPA2222", "DUPB2222")),
        ("same title", ("DUPC2222", "DUPD2222", "DUPE2222")),
    ]


TITLES = st.sampled_from(
    ["Alpha Compiler", "Beta Runtime", "Gamma Kernels", "Delta IR", "alpha compiler", "Epsilon: A Study"]
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(TITLES, st.sampled_from(["", "10.1/a", "10.1/b"])), max_size=6),
    st.lists(
        st.tuples(TITLES, st.sampled_from(["", "10.1/a", "10.1/b"]), st.sampled_from(["", "2020"])),
        max_size=6,
    ),
    st.randoms(use_true_random=False),
)
def test_matching_is_order_independent_and_never_assigns_an_item_twice(curated, zotero, rnd) -> None:
    entries = [entry(title, doi=doi) for title, doi in curated]
    items = [
        Item.from_api(
            api_item(f"K{n:03d}2222"[:8].replace("0", "A").replace("1", "B"), t, DOI=d, date=y, version=1)
        )
        for n, (t, d, y) in enumerate(zotero)
    ]
    first = match(entries, items)
    shuffled_entries, shuffled_items = entries[:], items[:]
    rnd.shuffle(shuffled_entries)
    rnd.shuffle(shuffled_items)
    second = match(shuffled_entries, shuffled_items)
    assert {t: i.key for t, i in first.by_title.items()} == {t: i.key for t, i in second.by_title.items()}
    assert first.unmatched == second.unmatched and first.ambiguities == second.ambiguities
    keys = [item.key for item in first.by_title.values()]
    assert len(keys) == len(set(keys))


VENUES = [
    (
        "conferencePaper",
        {
            "proceedingsTitle": "Proceedings of the 42nd ACM SIGPLAN International Conference on "
            "Programming Language Design and Implementation",
            "date": "2021-06-18",
        },
        "PLDI'21",
    ),
    (
        "conferencePaper",
        {
            "proceedingsTitle": "2021 ACM/IEEE 48th Annual International Symposium on Computer "
            "Architecture (ISCA)",
            "date": "2021",
        },
        "ISCA'21",
    ),
    (
        "conferencePaper",
        {
            "proceedingsTitle": "2023 IEEE International Symposium on High-Performance Computer "
            "Architecture (HPCA)",
            "date": "2023",
        },
        "HPCA'23",
    ),
    (
        "conferencePaper",
        {
            "proceedingsTitle": "Proceedings of the 27th ACM Symposium on Operating Systems Principles",
            "date": "2019",
        },
        "SOSP'19",
    ),
    (
        "conferencePaper",
        {
            "conferenceName": "OSDI '20",
            "proceedingsTitle": "Proceedings of the 14th USENIX "
            "Symposium on Operating Systems Design and Implementation",
            "date": "2020",
        },
        "OSDI'20",
    ),
    (
        "conferencePaper",
        {"proceedingsTitle": "Workshop on Something Unknown", "date": "2022"},
        "Workshop on Something Unknown · 2022",
    ),
    (
        "journalArticle",
        {"publicationTitle": "Proceedings of the ACM on Programming Languages", "date": "2017"},
        "Proceedings of the ACM on Programming Languages · 2017",
    ),
    ("preprint", {"repository": "arXiv", "date": "2025-03-01"}, "arXiv · 2025"),
    ("journalArticle", {"date": "2023"}, ""),
]


@pytest.mark.parametrize(("item_type", "fields", "expected"), VENUES)
def test_derived_venue(item_type: str, fields: dict, expected: str) -> None:
    table = load_venue_table()
    assert derive_venue(Item.from_api(api_item("VENU2222", "T", item_type, **fields)), table) == expected


def test_the_user_venue_table_extends_and_overrides(tmp_path: Path) -> None:
    extra = tmp_path / "venues.yaml"
    extra.write_text("WOSU: [workshop on something unknown]\nPLDI: [programming language design]\n")
    table = load_venue_table(extra)
    item = Item.from_api(
        api_item(
            "VENU2222", "T", "conferencePaper", proceedingsTitle="Workshop on Something Unknown", date="2022"
        )
    )
    assert derive_venue(item, table) == "WOSU'22"
    assert table.abbreviation("Conference on Programming Language Design") == "PLDI"
    assert VenueTable().abbreviation("anything") == ""


def test_status_reports_inbox_and_abbreviated_venues(project: Path, run) -> None:
    config = project / "config" / "zotsync.yaml"
    text = config.read_text(encoding="utf-8").replace("abbreviate_venues: false", "abbreviate_venues: true")
    config.write_text(text + "  inbox_collections: [GPU 编译与性能优化 / 计算图优化]\n", encoding="utf-8")
    assert run("-q", "--config", str(config), "sync").code == 0
    report = json.loads(run("--config", str(config), "status", "--format", "json").out)
    assert sorted(i["title"].split(":")[0] for i in report["inbox"]) == ["DNNFusion", "EINNET", "PET", "TASO"]
    csv_text = (project / "exports" / "catalog.csv").read_text(encoding="utf-8")
    assert ",PLDI'21,2021," in csv_text and ",ISCA'21,2021," in csv_text


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=40))
def test_an_ascii_title_folds_as_the_general_rule_folds_it(title: str) -> None:
    """The ASCII fast path (one translation table) is the general rule — case folded, every run of
    non-letters and non-digits one space, trimmed — written independently here with a regex."""
    expected = " ".join(re.sub(r"[\W_]+", " ", title.casefold()).split())
    assert normalize.title(title) == expected
    assert normalize.title(title + "é") == normalize.title(title.upper() + "É")  # the Unicode path agrees
