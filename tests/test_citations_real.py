"""The scholarly graph reads OpenAlex's real answers (../shared/fixtures/metadata-apis/openalex/), served
as a DOI batch by the fake OpenAlex, and checked against the recorded JSON read here on its own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from zotsync.processing.citations.run import open_copy, openalex_id, work_value

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT.parent / "shared" / "fixtures" / "metadata-apis" / "openalex"
pytestmark = pytest.mark.skipif(not FIXTURES.is_dir(), reason="../shared/fixtures/metadata-apis is absent")

WORKS = (
    "works_doi_journal_pnas2014.json",
    "works_doi_journal_mcb2001.json",
    "works_doi_journal_cellgenomics2025.json",
    "works_doi_reactionsweekly2023.json",
    "works_doi_review_addr2015.json",
)


@pytest.mark.parametrize("name", WORKS)
def test_a_real_work_is_kept_as_openalex_recorded_it(name: str) -> None:
    work = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    kept = work_value(work)
    assert kept["outcome"] == "found"
    assert kept["id"] == work["id"].removeprefix("https://openalex.org/")
    assert kept["doi"] == work["doi"].removeprefix("https://doi.org/").casefold()
    assert kept["cited_by"] == work["cited_by_count"]
    assert kept["retracted"] is work["is_retracted"]
    assert kept["references"] == [w.removeprefix("https://openalex.org/") for w in work["referenced_works"]]
    assert kept["counts_by_year"] == {str(e["year"]): e["cited_by_count"] for e in work["counts_by_year"]}
    best = work.get("best_oa_location") or {}
    if work["open_access"]["is_oa"]:
        assert kept["open_access_url"] in {
            best.get("pdf_url"),
            best.get("landing_page_url"),
            work["open_access"]["oa_url"],
        }
        assert kept["open_access_url"].startswith("http")
    else:
        assert kept["open_access_url"] == ""


def test_the_pnas_paper_as_its_record_says() -> None:
    work = json.loads((FIXTURES / "works_doi_journal_pnas2014.json").read_text(encoding="utf-8"))
    kept = work_value(work)
    assert (kept["id"], kept["cited_by"], len(kept["references"])) == ("W2109415576", 138, 73)
    assert kept["doi"] == "10.1073/pnas.1414271111"
    assert (
        kept["open_access_url"] == "https://doi.org/10.1073/pnas.1414271111"
    )  # bronze: the publisher's page


def test_a_select_answer_without_the_best_location_falls_back_to_open_access() -> None:
    work = json.loads((FIXTURES / "works_doi_select_open_access.json").read_text(encoding="utf-8"))
    assert open_copy(work) == "https://www.osti.gov/biblio/1329576"


def test_ids_other_than_works_are_not_taken() -> None:
    assert openalex_id("https://openalex.org/W2109415576") == "W2109415576"
    assert openalex_id("https://openalex.org/A5023888391") == ""
    assert openalex_id("javascript:alert(1)") == ""


def test_a_link_that_is_not_the_web_is_never_kept() -> None:
    hostile = {"is_oa": True, "pdf_url": "javascript:alert(1)", "landing_page_url": "data:text/html,x"}
    assert open_copy({"best_oa_location": hostile, "open_access": {"is_oa": True, "oa_url": "ftp://x"}}) == ""
