"""Enrichment on the real responses of DBLP, Crossref, OpenAlex and arXiv in
../shared/fixtures/metadata-apis/ (bodies from public test suites, MIT and Apache-2.0; their README and
licences are there), replayed from the fake services on 127.0.0.1. Skipped when that folder is absent.

Each test is one Zotero item and one service: what the item shows (its CSV row: venue, venue_source,
DOI) and what enrichment kept (filled, ambiguous with the candidates, not found)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from factories import FakeClock, api_item, with_enrichment, write_json
from metadata_server import MetadataServer

from zotsync.store import Store

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT.parent / "shared" / "fixtures" / "metadata-apis"
pytestmark = pytest.mark.skipif(not FIXTURES.is_dir(), reason="../shared/fixtures/metadata-apis is absent")

VASWANI = [{"creatorType": "author", "firstName": "Ashish", "lastName": "Vaswani"}]


def recorded(name: str) -> dict[str, Any]:
    """A recorded response: its body and, from its sidecar, its status and content type."""
    path = FIXTURES / name
    meta = json.loads(path.parent.joinpath(path.stem + ".meta.json").read_text(encoding="utf-8"))
    headers = {k.casefold(): v for k, v in ((meta["response"] or {}).get("headers") or {}).items()}
    kind = headers.get("content-type", [""])
    return {
        "body": path.read_bytes(),
        "status": meta["response"]["status"],
        "content_type": kind[0] if isinstance(kind, list) else kind,
    }


@pytest.fixture
def server(metadata_api, fake_time: FakeClock, monkeypatch: pytest.MonkeyPatch) -> MetadataServer:
    monkeypatch.setattr(MetadataServer, "clock", fake_time)
    return metadata_api()


@pytest.fixture
def ask(tmp_path: Path, run, server: MetadataServer):
    """`ask(service, fixture, title, creators, date, **fields)`: one item pulled, `zotsync enrich` with
    that one service replaying the fixture; its answer, CSV row and the command's result."""

    def go(
        service: str,
        fixture: str,
        title: str,
        creators: list[dict[str, str]],
        date: str = "",
        enrich: dict[str, Any] | None = None,
        **fields: Any,
    ) -> dict[str, Any]:
        server.replay(service, **recorded(fixture))
        write_json(
            tmp_path / "lib.json",
            [
                api_item(
                    "ITEMAAAA",
                    title,
                    fields.pop("item_type", "conferencePaper"),
                    creators=creators,
                    date=date,
                    **fields,
                )
            ],
        )
        (tmp_path / "catalog.yaml").write_text("title: T\ncategories: []\n", encoding="utf-8")
        config = tmp_path / "zotsync.yaml"
        config.write_text(
            "source: {type: snapshot, path: lib.json}\ncatalog: catalog.yaml\nstore: store.sqlite\n"
            "exports: {dir: out, formats: [csv]}\n",
            encoding="utf-8",
        )
        with_enrichment(config, server.endpoints(), services=[service], enabled=False, **(enrich or {}))
        assert run("-q", "--config", str(config), "pull").code == 0
        result = run("--config", str(config), "enrich")
        assert run("-q", "--config", str(config), "sync").code == 0
        with Store(tmp_path / "store.sqlite") as store:
            answer = store.derived("enrich").get("ITEMAAAA")
        (row,) = csv.DictReader(io.StringIO((tmp_path / "out" / "catalog.csv").read_text(encoding="utf-8")))
        status = json.loads(run("--config", str(config), "status", "--format", "json").out)
        return {"answer": answer.value if answer else None, "row": row, "result": result, "status": status}

    return go


# -- DBLP -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fixture",
    [
        "dblp/publ_search_attention_is_all_you_need_h1_wrong_first_hit.json",
        "dblp/publ_search_attention_h3_dac_corr_access.json",
    ],
)
def test_dblps_near_title_first_hit_leaves_the_venue_unknown_and_is_listed_with_its_candidates(
    ask, fixture: str
) -> None:
    got = ask("dblp", fixture, "Attention Is All You Need", VASWANI, "2017")
    assert got["answer"]["outcome"] == "ambiguous"
    first = got["answer"]["candidates"][0]
    assert first["title"].startswith("Attentional Transfer is All You Need")
    assert (first["venue"], first["year"]) == ("DAC", "2021")
    assert (got["row"]["venue"], got["row"]["venue_source"]) == ("", "")
    (listed,) = got["status"]["enrichment"]["ambiguous"]
    assert listed["zotero_key"] == "ITEMAAAA" and listed["candidates"][0]["title"] == first["title"]
    assert "ambiguous ITEMAAAA Attention Is All You Need: venue left unknown" in got["result"].out


def test_a_single_author_given_as_an_object_is_read_and_a_letter_is_not_the_paper(ask) -> None:
    got = ask(
        "dblp",
        "dblp/publ_search_goto_harmful_single_author_cacm1968.json",
        "Go To Statement Considered Harmful",
        [{"creatorType": "author", "firstName": "Edsger W.", "lastName": "Dijkstra"}],
        "1968",
        item_type="journalArticle",
    )
    # The first hit is the letters column of nearly that title, the second the 2022 reprint: neither is
    # the 1968 paper by title and year.
    assert got["answer"]["outcome"] == "ambiguous"
    (letters,) = got["answer"]["candidates"]
    assert letters["authors"] == ["Edsger W. Dijkstra"] and letters["venue"] == "Commun. ACM"
    assert got["row"]["venue"] == ""


# -- Crossref ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fixture", "title", "family", "year"),
    [
        (
            "crossref/works_query_deep_residual_learning_wrong_first_hits.json",
            "Deep Residual Learning for Image Recognition",
            "He",
            "2016",
        ),
        (
            "crossref/works_query_title_attention_wrong_hit.json",
            "Attention Is All You Need",
            "Vaswani",
            "2017",
        ),
        (
            "crossref/works_query_title_paperqa_wrong_hit.json",
            "PaperQA: Retrieval-Augmented Generative Agent for Scientific Research",
            "Lála",
            "2023",
        ),
    ],
)
def test_crossrefs_wrong_first_hits_fill_nothing(
    ask, fixture: str, title: str, family: str, year: str
) -> None:
    got = ask(
        "crossref", fixture, title, [{"creatorType": "author", "firstName": "A", "lastName": family}], year
    )
    assert got["answer"]["outcome"] != "filled"
    assert (got["row"]["venue"], got["row"]["doi"]) == ("", "")


@pytest.mark.parametrize(
    ("prefer", "shown"),
    [
        (True, ("Ecology and Evolution · 2016", "crossref", "10.1002/ece3.2314")),
        (False, ("bioRxiv · 2015", "zotero", "")),
    ],
)
def test_a_preprint_shows_its_published_venue_when_a_service_knows_it_and_prefer_published_says_so(
    ask, prefer: bool, shown: tuple[str, str, str]
) -> None:
    # Crossref lists the journal article and its bioRxiv preprint side by side (Perkins et al.).
    got = ask(
        "crossref",
        "crossref/works_query_ecology_author_boettiger_20hits.json",
        "After the games are over: life-history trade-offs drive dispersal attenuation following range "
        "expansion",
        [{"creatorType": "author", "firstName": "T. Alex", "lastName": "Perkins"}],
        "2015",
        enrich={"prefer_published": prefer},
        item_type="preprint",
        repository="bioRxiv",
    )
    assert (got["row"]["venue"], got["row"]["venue_source"], got["row"]["doi"]) == shown
    assert got["answer"]["published"] is True and got["answer"]["venue"] == "Ecology and Evolution"


# -- OpenAlex ---------------------------------------------------------------------------------------------


def test_the_preprint_whose_search_leads_with_the_published_title_is_ambiguous(ask) -> None:
    got = ask(
        "openalex",
        "openalex/works_titlesearch_chemistry_tools_2hits.json",
        "ChemCrow: Augmenting large-language models with chemistry tools",
        [{"creatorType": "author", "firstName": "Andres M.", "lastName": "Bran"}],
        "2023",
        item_type="preprint",
        repository="arXiv",
    )
    assert got["answer"]["outcome"] == "ambiguous"
    assert got["answer"]["candidates"][0]["venue"] == "Nature Machine Intelligence"
    assert (got["row"]["venue"], got["row"]["venue_source"]) == ("arXiv · 2023", "zotero")


# -- each service's confident answer, and its answer without the paper --------------------------------


def author(first: str, last: str) -> list[dict[str, str]]:
    return [{"creatorType": "author", "firstName": first, "lastName": last}]


# (service, recorded answer, title, creators, date, the item's other fields) → the row's venue, its source
# and DOI (None: not checked), and whether the answer is a published venue (None: not checked)
FILLED = [
    pytest.param(
        "dblp",
        "dblp/publ_search_attention_h3_dac_corr_access.json",
        "Attention Is All You Need But You Don't Need All Of It For Inference of Large Language Models",
        author("Georgy", "Tyukin"),
        "2024",
        {},
        ("arXiv · 2024", "dblp", ""),  # a preprint's DOI is not a conference paper's
        False,
        id="dblp: a preprint record with an HTML entity in its title gives the arXiv venue",
    ),
    pytest.param(
        "dblp",
        "dblp/publ_search_transformer_h2_journal_and_isscc.json",
        "C-Transformer: An Energy-Efficient Homogeneous DNN-Transformer/SNN-Transformer Processor for "
        "Large Language Models",
        author("Sangyeob", "Kim"),
        "2025",
        {},
        ("IEEE J. Solid State Circuits · 2025", "dblp", None),
        None,
        id="dblp: a journal hit fills the venue and a symbol-laden title finds its own",
    ),
    pytest.param(
        "dblp",
        "dblp/publ_search_transformer_h2_journal_and_isscc.json",
        "20.5 C-Transformer: A 2.6-18.1μJ/Token Homogeneous DNN-Transformer/Spiking-Transformer Processor "
        "with Big-Little Network and Implicit Weight Generation for Large Language Models",
        author("Sangyeob", "Kim"),
        "2024",
        {},
        ("ISSCC · 2024", "dblp", None),
        None,
        id="dblp: the ISSCC paper with units in its title is told from the journal one",
    ),
    pytest.param(
        "crossref",
        "crossref/works_query_renear_ontologies_20hits.json",
        "XML semantics and digital libraries",
        author("Allen", "Renear"),
        "2003",
        {},
        (
            "2003 Joint Conference on Digital Libraries, 2003. Proceedings. · 2003",
            "crossref",
            "10.1109/jcdl.2003.1204879",
        ),
        None,
        id="crossref: the seventh hit is taken when it is the paper and the first is unrelated",
    ),
    pytest.param(
        "crossref",
        "crossref/works_query_title_chemcrow_match.json",
        "Augmenting large language models with chemistry tools",
        author("Andres M.", "Bran"),
        "2024",
        {"item_type": "journalArticle"},
        ("Nature Machine Intelligence · 2024", "crossref", "10.1038/s42256-024-00832-8"),
        None,
        id="crossref: the right first hit fills the journal and the DOI",
    ),
    pytest.param(
        "openalex",
        "openalex/works_titlesearch_chemistry_tools_2hits.json",
        "Augmenting large language models with chemistry tools",
        author("Andres M.", "Bran"),
        "2024",
        {"item_type": "journalArticle"},
        ("Nature Machine Intelligence · 2024", "openalex", None),
        None,
        id="openalex: the journal article whose preprint is listed after it",
    ),
    pytest.param(
        "arxiv",
        "arxiv/id_1706.03762_attention_is_all_you_need.xml",
        "Attention Is All You Need",
        VASWANI,
        "2017",
        {"extra": "arXiv: 1706.03762"},
        ("arXiv · 2017", "arxiv", None),
        False,
        id="arxiv: by id, a preprint gets its venue",
    ),
    pytest.param(
        "arxiv",
        "arxiv/id_astro-ph_0601001_with_journal_ref.xml",
        "Frequency of Hot Jupiters and Very Hot Jupiters from the OGLE-III Transit Surveys Toward the "
        "Galactic Bulge and Carina",
        author("Andrew", "Gould"),
        "2006",
        {"item_type": "preprint", "repository": "arXiv", "archiveID": "arXiv:astro-ph/0601001"},
        ("ActaAstron. · 2006", "arxiv", None),
        None,
        id="arxiv: the journal ref is the published venue of a preprint",
    ),
]


@pytest.mark.parametrize(
    ("service", "fixture", "title", "creators", "date", "fields", "row", "published"), FILLED
)
def test_a_service_s_confident_answer_fills_the_row(
    ask,
    service: str,
    fixture: str,
    title: str,
    creators: list[dict[str, str]],
    date: str,
    fields: dict[str, str],
    row: tuple[str, str, str | None],
    published: bool | None,
) -> None:
    got = ask(service, fixture, title, creators, date, **fields)
    venue, source, doi = row
    assert (got["row"]["venue"], got["row"]["venue_source"]) == (venue, source)
    if doi is not None:
        assert got["row"]["doi"] == doi
    if published is not None:
        assert got["answer"]["outcome"] == "filled" and got["answer"]["published"] is published


@pytest.mark.parametrize(
    ("service", "fixture", "title", "date", "fields"),
    [
        pytest.param(
            "dblp", "dblp/publ_search_zero_hits.json", "Zzzqqqxx Nonexistent", "2017", {}, id="dblp: no hits"
        ),
        pytest.param(
            "openalex",
            "openalex/works_doi_notfound_404.html",
            "A paper OpenAlex does not have",
            "2003",
            {"DOI": "10.1046/j.1365-2699.2003.00795"},
            id="openalex: its 404 HTML page is an answer, not a failure",
        ),
        pytest.param(
            "arxiv",
            "arxiv/id_0000.0000_no_hits.xml",
            "Nothing",
            "2017",
            {"extra": "arXiv: 0000.0000"},
            id="arxiv: an id without a paper",
        ),
    ],
)
def test_a_service_s_answer_without_the_paper_is_not_found(
    ask, service: str, fixture: str, title: str, date: str, fields: dict[str, str]
) -> None:
    got = ask(service, fixture, title, VASWANI, date, **fields)
    assert got["answer"]["outcome"] == "not_found" and got["answer"]["asked"] == {service: "not_found"}
    assert "zotsync: enrichment" not in got["result"].err  # no warning


# -- failures, as the services really sent them -------------------------------------------------------


@pytest.mark.parametrize(
    ("service", "fixture", "said"),
    [
        ("dblp", "semanticscholar/paper_search_turing_429.json", "HTTP 429"),  # no Retry-After: backoff
        ("crossref", "crossref/error_500_bad_cursor.json", "HTTP 500"),
    ],
)
def test_a_real_throttle_or_server_error_leaves_the_service_out_and_the_item_waits(
    ask, server: MetadataServer, service: str, fixture: str, said: str
) -> None:
    got = ask(service, fixture, "Attention Is All You Need", VASWANI, "2017")
    assert got["result"].code == 0
    (warning,) = [line for line in got["result"].err.splitlines() if line.startswith("zotsync: enrichment")]
    assert f"{service}: {said}" in warning and "after 3 attempts" in warning
    assert got["answer"] is None  # nothing kept: the item is asked again next run
    assert len(server.asked(service)) == 3
