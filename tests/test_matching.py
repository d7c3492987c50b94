"""Matching traps, the fuzzy stage, duplicates, venue short forms and order independence."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
from conftest import write_config
from factories import api_item, write_json
from hypothesis import assume, given, settings
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
    pytest.param(
        [entry("P ≠ NP")],
        [api_item("PENP2222", "P = NP")],
        {},
        id="a math relation is part of the title",
    ),
    pytest.param(
        [entry("C++ Primer"), entry("C# in Depth")],
        [api_item("CPRI2222", "C Primer"), api_item("CDEP2222", "C in Depth")],
        {},
        id="C++ and C# are not C",
    ),
    pytest.param(
        [entry("C++ Primer"), entry("C Primer")],
        [api_item("CPRI2222", "C Primer"), api_item("CPPP2222", "C++ primer")],
        {"C++ Primer": "CPPP2222", "C Primer": "CPRI2222"},
        id="C++ and C side by side each find their own",
    ),
    pytest.param(
        [entry("🔥"), entry("🚀")],
        [api_item("FIRE2222", "🔥")],
        {"🔥": "FIRE2222"},
        id="two emoji titles are two papers",
    ),
    pytest.param(
        [entry("A proof that P ≠ NP holds for every practical purpose")],
        [api_item("PENP2222", "A proof that P = NP holds for every practical purpose")],
        {},
        id="fuzzy: a long title differing in one math symbol",
    ),
    pytest.param(
        [entry("Attention Is All You Need")],
        [api_item("HMGL2222", "Аttention Is All You Need")],  # a Cyrillic А
        {},
        id="fuzzy: a lookalike letter from another script",
    ),
    pytest.param(
        [entry("C++ Templates: The Complete Guid")],
        [api_item("CPPT2222", "C++ Templates: The Complete Guide")],
        {"C++ Templates: The Complete Guid": "CPPT2222"},
        id="fuzzy: a small edit beside a symbol",
    ),
    pytest.param(
        [entry("Применение модели BERT для анализа текстов на русском языке")],
        [api_item("RUSS2222", "Применение модели BERT для анализа текстов на русском языкe")],
        {},
        id="fuzzy: a Latin lookalike inside a Cyrillic word",
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


def test_a_lookalike_title_is_not_matched_and_the_entry_says_why() -> None:
    spoof = api_item("HMGL2222", "Аttention Is All You Need", url="https://evil.example/")  # Cyrillic А
    result = match([entry("Attention Is All You Need")], [Item.from_api(spoof)])
    assert result.by_title == {}
    (unmatched,) = result.unmatched
    assert (
        unmatched.reason == "not matched by guess: the nearest title is written in other scripts (Cyrillic)"
    )
    assert [c.key for c in result.nearest(unmatched.title)] == ["HMGL2222"]


def test_a_title_differing_in_a_symbol_is_not_matched_and_the_entry_says_why() -> None:
    title = "Tensor programs with {} loops: a scheduling language for accelerators"
    result = match([entry(title.format("≤"))], [Item.from_api(api_item("SYMB2222", title.format("≥")))])
    assert result.by_title == {}
    assert [u.reason for u in result.unmatched] == [
        "not matched by guess: the nearest title differs in its symbols"
    ]


def test_a_lookalike_does_not_hide_the_right_item_behind_it() -> None:
    good = api_item("GQQD2222", "A Study of Tensor Compilers for Deep Learning Workloads")
    spoof = api_item("SPUF2222", "A Study of Tensor Compilers for Deep Learning Workloаds")  # Cyrillic а
    result = match(
        [entry("A Study of Tensor Compiler for Deep Learning Workloads")],
        [Item.from_api(good), Item.from_api(spoof)],
    )
    assert {t: i.key for t, i in result.by_title.items()} == {
        "a study of tensor compiler for deep learning workloads": "GQQD2222"
    }


def test_every_fuzzy_match_is_listed_with_its_score() -> None:
    entries = [entry("TVM: An Automated End-to-End Optimizing Compiler for Deep Learnin"), entry("Ansor")]
    objects = [
        api_item("TVMM2222", "TVM: An Automated End-to-End Optimizing Compiler for Deep Learning"),
        api_item("ANSR2222", "Ansor"),
    ]
    result = match(entries, [Item.from_api(o) for o in objects])
    fuzzy = result.fuzzy
    assert list(fuzzy) == [normalize.title(entries[0].title)]  # the exact title is no guess
    (candidate,) = fuzzy.values()
    assert candidate.key == "TVMM2222" and candidate.title == objects[0]["data"]["title"]
    assert FUZZY_THRESHOLD <= candidate.score < 100


# Symbols that say something, and words (ASCII and not) to put them between.
MEANINGFUL_SYMBOLS = ["", "=", "≠", "<", ">", "≤", "≥", "≈", "+", "++", "#", "→", "∀", "×", "±", "€", "$"]
MEANINGFUL_SYMBOLS += ["©", "°", "🔥", "🚀", "❤", "✓"]
WORDS = ["tensor", "graph", "compiler", "kernel", "fusion", "scheduling", "memory", "sparse", "naïve"]
WORDS += ["learning", "deep", "quantized", "tiles", "张量", "Größe", "模型"]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=8),
    st.lists(st.sampled_from(WORDS), max_size=8),
    st.sampled_from(MEANINGFUL_SYMBOLS),
    st.sampled_from(MEANINGFUL_SYMBOLS),
    st.sampled_from(["", " "]),
    st.booleans(),
)
def test_titles_differing_only_in_a_meaningful_symbol_never_match(
    before: list[str], after: list[str], mine: str, theirs: str, gap: str, upper: bool
) -> None:
    """Symbols that say something — math, `+` and `#` after a letter (C++, C#), currency, emoji and the
    other symbols — are kept: two titles alike but for one of them are two papers, exactly or fuzzily."""
    assume(mine != theirs)
    gap = "" if "#" in mine + theirs else gap  # a `#` names a language only right after a letter: C#
    curated = f"{' '.join(before)}{gap}{mine} {' '.join(after)}"
    zotero = f"{' '.join(before)}{gap}{theirs} {' '.join(after)}"
    assert normalize.title(curated) != normalize.title(zotero)
    entries = [entry(curated.upper() if upper else curated)]
    assert match(entries, [Item.from_api(api_item("SYMB2222", zotero))]).by_title == {}


def symbol_project(folder: Path) -> Path:
    """A library with a lookalike (Cyrillic а) of an absent paper, an emoji-titled item, a small edit;
    a catalogue naming the absent paper, two emoji titles and the edited one."""
    objects = [
        api_item("HMGL2222", "Аttention Is All You Need", url="https://evil.example/spoof"),
        api_item("FIRE2222", "🔥"),
        api_item("TVMM2222", "TVM: An Automated End-to-End Optimizing Compiler for Deep Learning"),
    ]
    write_json(folder / "library.json", objects)
    (folder / "catalog.yaml").write_text(
        "categories:\n  - name: Papers\n    entries:\n"
        '      - title: "Attention Is All You Need"\n'
        '      - title: "🔥"\n'
        '      - title: "🚀"\n'
        '      - title: "TVM: An Automated End-to-End Optimizing Compiler for Deep Learnin"\n',
        encoding="utf-8",
    )
    return write_config(
        folder,
        "source: {type: snapshot, path: library.json}\ncatalog: catalog.yaml\nstore: store.sqlite\n"
        "exports: {dir: out, language: en}\n",
    )


def test_status_lists_every_fuzzy_match_and_why_a_lookalike_is_not_one(tmp_path: Path, run) -> None:
    config = str(symbol_project(tmp_path))
    assert run("-q", "--config", config, "sync").code == 0
    csv_text = (tmp_path / "out" / "catalog.csv").read_text(encoding="utf-8")
    rows = {row["title"]: row for row in csv.DictReader(io.StringIO(csv_text))}
    # The curated paper is not the lookalike: it stays unmatched, without the lookalike's link.
    assert rows["Attention Is All You Need"]["zotero_key"] == ""
    assert rows["Attention Is All You Need"]["url"] == ""
    assert rows["Аttention Is All You Need"]["zotero_key"] == "HMGL2222"  # the item itself, uncurated
    report = json.loads(run("--config", config, "status", "--format", "json").out)
    assert report["fuzzy_matches"] == [
        {
            "title": "TVM: An Automated End-to-End Optimizing Compiler for Deep Learnin",
            "zotero_key": "TVMM2222",
            "zotero_title": "TVM: An Automated End-to-End Optimizing Compiler for Deep Learning",
            "score": report["fuzzy_matches"][0]["score"],
        }
    ]
    assert FUZZY_THRESHOLD <= report["fuzzy_matches"][0]["score"] < 100
    assert {m["title"]: m["zotero_key"] for m in report["matches"]} == {
        "🔥": "FIRE2222",
        "TVM: An Automated End-to-End Optimizing Compiler for Deep Learnin": "TVMM2222",
    }
    reasons = {u["title"]: u["reason"] for u in report["unmatched"]}
    assert reasons == {
        "Attention Is All You Need": "not matched by guess: the nearest title is written in other scripts "
        "(Cyrillic)",
        "🚀": "no candidate",
    }
    text = run("--config", config, "status").out
    assert (
        "fuzzy matches to review: 1\n  - TVM: An Automated End-to-End Optimizing Compiler for Deep " in text
    )
    assert "↔ TVM: An Automated End-to-End Optimizing Compiler for Deep Learning [TVMM2222] " in text
    assert "Attention Is All You Need (not matched by guess: the nearest title is written in other" in text


def test_pin_finds_an_emoji_titled_entry(tmp_path: Path, run) -> None:
    config = str(symbol_project(tmp_path))
    assert run("-q", "--config", config, "pull").code == 0
    result = run("--config", config, "pin", "🔥", "FIRE2222")
    assert result.code == 0, result.err
    catalogue = (tmp_path / "catalog.yaml").read_text(encoding="utf-8")
    assert '      - title: "🔥"\n        zotero_key: "FIRE2222"\n' in catalogue
    assert catalogue.count("zotero_key") == 1


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
    """The ASCII fast path (one translation table) is the general rule — case folded; runs of letters
    and digits, ASCII's math and currency symbols (+ < = > $) and a `#` after a letter or digit are the
    words, each symbol one word; a title with none of them keeps its text — written independently here
    with a regex."""
    words = re.findall(r"[a-z0-9]+|[+<=>$]|(?<=[a-z0-9])#+", title.casefold())
    expected = " ".join(" ".join(w) if w[0] == "#" else w for w in words) or " ".join(title.lower().split())
    assert normalize.title(title) == expected
    assert normalize.title(title + "é") == normalize.title(title.upper() + "É")  # the Unicode path agrees
