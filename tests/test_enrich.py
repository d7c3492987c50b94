"""Enrichment end to end: the demo's rows without a source get their venues from fake metadata services
on 127.0.0.1 (tests/metadata_server.py), nothing is asked twice, and no service fault fails or stalls a
sync. The real responses of ../shared/fixtures/metadata-apis/ are in tests/test_enrich_real.py."""

from __future__ import annotations

import csv
import io
import itertools
import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from factories import (
    ANSOR,
    DEMO_PAPERS,
    GOLDEN,
    FakeClock,
    answers,
    closed_port,
    demo_csv_rows,
    enriched,
    one_warning,
    sync_reading_no_library,
    venue_of,
    with_enrichment,
)
from metadata_server import Fault, MetadataServer, Paper

from zotsync.app.sync import run_sync
from zotsync.config import load_config
from zotsync.processing.enrich import run as enrich_module
from zotsync.processing.enrich import services as enrich_services
from zotsync.store import Store

# title → (venue, venue_source) each row shows after enrichment, written out by hand
DEMO_VENUES = {
    "Ansor: Generating High-Performance Tensor Programs for Deep Learning": ("OSDI'20", "dblp"),
    "PET: Optimizing Tensor Programs with Partially Equivalent Transformations and Automated Corrections": (
        "OSDI'21",
        "dblp",
    ),
    "EINNET: Optimizing Tensor Programs with Derivation-Based Transformations": ("OSDI'23", "dblp"),
    "PIT: Optimization of Dynamic Sparse Deep Learning Models via Permutation Invariant Transformation": (
        "SOSP'23",
        "dblp",
    ),
    "LADDER: Enabling Efficient Low-Precision Deep Learning Computing through Hardware-aware Tensor "
    "Transformation": ("OSDI'24", "dblp"),
    "Graphiler: A Compiler for Graph Neural Networks": ("MLSys'22", "dblp"),
    "AffineGraph: A Dataflow Graph Representation for Effective DNN Hardware-Aware Algorithms": (
        "ASPLOS'25",
        "crossref",
    ),
}


@pytest.fixture
def services(metadata_api, fake_time: FakeClock, monkeypatch: pytest.MonkeyPatch) -> MetadataServer:
    """The fake services knowing the demo's seven papers; every pause zotsync takes (a rate limit, a
    Retry-After, a backoff) on the fake clock, which also stamps the requests."""
    monkeypatch.setattr(MetadataServer, "clock", fake_time)
    return metadata_api(*DEMO_PAPERS)


def golden_rows() -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO((GOLDEN / "catalog.csv").read_text(encoding="utf-8"))))


# -- the demo ----------------------------------------------------------------------------------------


def test_the_seven_rows_without_a_source_show_the_venues_the_services_know(
    project: Path, run, services: MetadataServer
) -> None:
    config = enriched(project, services)
    result = run("--config", config, "sync", "--json")
    assert result.code == 0, result.err
    assert "来源待补全" not in (project / "exports" / "catalog.md").read_text(encoding="utf-8")
    rows, golden = demo_csv_rows(project), golden_rows()
    shown = {r["title"]: (r["venue"], r["venue_source"]) for r in rows if r["title"] in DEMO_VENUES}
    assert shown == DEMO_VENUES
    # every other row is the golden one, and no curated or Zotero venue changed
    assert [r for r in rows if r["title"] not in DEMO_VENUES] == [
        r for r in golden if r["title"] not in DEMO_VENUES
    ]
    pit = next(r for r in rows if r["title"].startswith("PIT:"))
    assert (pit["year"], pit["doi"]) == ("2023", "10.1145/3600006.3613139")  # Zotero had the year; DOI filled
    assert json.loads(result.out)["processed"]["enrich"]["filled"] == 7


def test_with_enrichment_off_no_request_is_made_and_the_exports_are_the_golden_ones(
    project: Path, run, services: MetadataServer
) -> None:
    config = enriched(project, services, enabled=False)
    assert run("-q", "--config", config, "sync").code == 0
    assert services.requests == []
    assert (project / "exports" / "catalog.md").read_bytes() == (GOLDEN / "catalog.md").read_bytes()
    assert (project / "exports" / "catalog.csv").read_bytes() == (GOLDEN / "catalog.csv").read_bytes()


def test_an_unchanged_library_asks_nothing_and_reads_nothing_on_the_next_sync(
    project: Path, run, services: MetadataServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = enriched(project, services)
    assert run("-q", "--config", config, "sync").code == 0
    services.reset()

    processed = sync_reading_no_library(run, config, monkeypatch)["processed"]
    assert services.requests == []
    assert processed["enrich"]["requests"] == 0
    # an item edited in Zotero is asked about again, and only that one
    snapshot = project / "seeds" / "zotero-library.json"
    objects = json.loads(snapshot.read_text(encoding="utf-8"))
    ansor = next(o for o in objects if o["data"].get("title") == ANSOR)
    ansor["data"]["title"] = ansor["data"]["title"] + " (extended)"
    ansor["version"] = ansor["data"]["version"] = 9999
    snapshot.write_text(json.dumps(objects, ensure_ascii=False), encoding="utf-8")
    assert run("-q", "--config", config, "sync").code == 0
    asked = [
        r.params.get("q") or r.params.get("query.bibliographic") or r.params.get("search")
        for r in services.requests
    ]
    assert asked and all("extended" in str(query) for query in asked)


def test_not_found_is_asked_again_after_thirty_days_and_a_published_venue_never(
    project: Path, run, services: MetadataServer
) -> None:
    config = load_config(Path(enriched(project, services)))
    start = datetime(2026, 3, 1, tzinfo=UTC)
    first = run_sync(config, clock=lambda: start)
    counts = first.processed[0].counts
    assert counts["filled"] == 7 and counts["not_found"] > 0
    services.reset()
    assert run_sync(config, clock=lambda: start + timedelta(days=29)).processed[0].counts["requests"] == 0
    assert services.requests == []
    later = run_sync(config, clock=lambda: start + timedelta(days=31)).processed[0].counts
    assert later["due"] == counts["not_found"]  # the seven found ones are not asked again
    asked = {r.params["q"] for r in services.asked("dblp")}
    assert len(asked) == counts["not_found"]
    assert not any(query.startswith(("Ansor", "PET", "Graphiler")) for query in asked)


# -- faults: a sync never fails or stalls for them ---------------------------------------------------


def test_an_html_page_with_status_200_leaves_dblp_out_with_one_warning_and_the_items_wait(
    project: Path, run, services: MetadataServer
) -> None:
    config = enriched(project, services, services=["dblp"])
    services.inject("dblp", Fault.html())
    result = run("--config", config, "sync")
    assert result.code == 0
    assert "dblp: dblp answered with an HTML page, not JSON" in one_warning(result.err)
    assert len(services.asked("dblp")) == 1  # not retried, not asked again for the next items
    assert answers(project) == {}  # nothing kept: every item waits
    assert (project / "exports" / "catalog.md").read_bytes() == (GOLDEN / "catalog.md").read_bytes()
    result = run("--config", config, "sync")  # the bot check is gone
    assert result.code == 0 and "enrichment" not in result.err
    assert venue_of(project, ANSOR) == ("OSDI'20", "dblp")


@pytest.mark.parametrize("status", [429, 503])
def test_a_rate_limit_with_retry_after_is_waited_out_and_answered(
    project: Path, run, services: MetadataServer, fake_time: FakeClock, status: int
) -> None:
    config = enriched(project, services, services=["dblp"])
    services.inject("dblp", Fault.status_code(status, retry_after=7))
    result = run("--config", config, "sync")
    assert result.code == 0 and "enrichment" not in result.err
    assert 7.0 in fake_time.waits
    first, second = services.asked("dblp")[:2]
    assert first.params == second.params and second.at - first.at >= 7.0
    assert venue_of(project, ANSOR) == ("OSDI'20", "dblp")


@pytest.mark.parametrize("status", [429, 503])
def test_a_rate_limit_without_retry_after_backs_off_then_leaves_the_service_out(
    project: Path, run, services: MetadataServer, status: int
) -> None:
    config = enriched(project, services, services=["dblp", "crossref"])
    services.inject("dblp", *[Fault.status_code(status)] * 3)
    result = run("--config", config, "sync", "--json")
    assert result.code == 0
    assert f"dblp: HTTP {status}" in one_warning(result.err) and "after 3 attempts" in result.err
    waiting = json.loads(result.out)["processed"]["enrich"]["waiting"]
    assert len(services.asked("dblp")) == 3
    assert venue_of(project, ANSOR) == ("OSDI'20", "crossref")  # the other service still answers
    kept = answers(project)
    assert {v["outcome"] for v in kept.values()} == {"filled"}  # no "not found" without DBLP's word
    services.reset()
    assert run("-q", "--config", config, "sync").code == 0
    assert len(services.asked("dblp")) == waiting > 0  # the items that waited, and only those


def test_a_wait_longer_than_zotsync_takes_leaves_the_service_out_at_once(
    project: Path, run, services: MetadataServer
) -> None:
    config = enriched(project, services, services=["dblp"])
    services.inject("dblp", Fault.status_code(503, retry_after=3600))
    result = run("--config", config, "sync")
    assert result.code == 0
    warning = one_warning(result.err)
    assert "dblp: the server asks to wait 3600 s (Retry-After), longer than zotsync waits (60 s);" in warning
    assert len(services.asked("dblp")) == 1


def test_a_hanging_service_is_given_up_after_its_timeout_and_the_sync_goes_on(
    project: Path, run, metadata_api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On real time: each attempt waits for the read timeout (0.2 s here), three attempts, then DBLP is
    left out and the other services answer."""
    limits_for = enrich_services.limits_for

    def short(service: str, polite: bool):
        from dataclasses import replace

        return replace(limits_for(service, polite), timeout=0.2, min_interval=0.0, retry_wait=0.01)

    monkeypatch.setattr(enrich_module, "limits_for", short)
    server = metadata_api(*DEMO_PAPERS)
    server.inject("dblp", *[Fault.hang(3.0)] * 3)
    config = enriched(project, server, services=["dblp", "crossref"])
    started = time.monotonic()
    result = run("--config", config, "sync")
    assert result.code == 0
    assert "dblp: the request timed out" in one_warning(result.err)
    assert time.monotonic() - started < 30  # three timeouts, not three hangs
    assert venue_of(project, DEMO_PAPERS[-1].title) == ("ASPLOS'25", "crossref")


def test_a_service_that_is_down_is_left_out_and_the_others_answer(
    project: Path, run, services: MetadataServer
) -> None:
    endpoints = {**services.endpoints(), "dblp": f"http://127.0.0.1:{closed_port()}"}
    config = str(with_enrichment(project / "config" / "zotsync.yaml", endpoints, deadline=600))
    result = run("--config", config, "sync")
    assert result.code == 0
    assert "dblp: cannot be reached (no connection could be made, after 2 attempts)" in one_warning(
        result.err
    )
    assert venue_of(project, DEMO_PAPERS[-1].title) == ("ASPLOS'25", "crossref")
    assert venue_of(project, ANSOR) == ("OSDI'20", "crossref")


def test_the_run_ends_by_its_deadline_and_the_next_one_goes_on_where_it_stopped(
    project: Path, run, services: MetadataServer, fake_time: FakeClock
) -> None:
    config = enriched(project, services, services=["dblp"], deadline=10)
    started = fake_time.monotonic()
    result = run("--config", config, "sync", "--json")
    assert result.code == 0
    first = json.loads(result.out)["processed"]["enrich"]
    # running out of time is no fault: a line of information (which -q silences), no warning
    assert (
        result.err
        == f"zotsync: enrichment: enrich.deadline reached; {first['waiting']} items wait for the next run\n"
    )
    assert fake_time.monotonic() - started <= 10 + 1  # DBLP's pace: one request a second
    assert first["waiting"] > 0 and first["filled"] + first["not_found"] + first["waiting"] == first["due"]
    asked_first = {r.params["q"] for r in services.asked("dblp")}
    services.reset()
    second = json.loads(run("--config", config, "sync", "--json").out)["processed"]["enrich"]
    assert second["due"] == first["waiting"]
    assert not asked_first & {r.params["q"] for r in services.asked("dblp")}


def test_what_was_filled_stays_when_a_later_run_finds_the_services_down(
    project: Path, run, services: MetadataServer
) -> None:
    config = enriched(project, services)
    assert run("-q", "--config", config, "sync").code == 0
    assert venue_of(project, ANSOR) == ("OSDI'20", "dblp")
    services.inject("dblp", *[Fault.drop()] * 3)
    services.inject("crossref", *[Fault.drop()] * 3)
    services.inject("openalex", *[Fault.drop()] * 3)
    result = run("--config", config, "enrich", "--refresh")
    assert result.code == 0 and "enrichment:" in result.err
    assert run("-q", "--config", config, "sync").code == 0
    assert venue_of(project, ANSOR) == ("OSDI'20", "dblp")


# -- the command ---------------------------------------------------------------------------------------


def test_a_dry_run_prints_what_it_would_fill_and_from_where_and_writes_nothing(
    project: Path, run, services: MetadataServer
) -> None:
    config = enriched(project, services, enabled=False)  # `zotsync enrich` runs whatever `enabled` says
    assert run("-q", "--config", config, "pull").code == 0
    store_path = project / ".zotsync" / "zotsync.sqlite"
    with Store(store_path) as store:
        generation, marks = store.generation, store.sync_state.processor_marks
    result = run("--config", config, "enrich", "--dry-run")
    assert result.code == 0
    assert f"would fill P2URGA3T {ANSOR}: venue OSDI'20, year 2020 (from dblp)" in result.out.splitlines()
    assert sum(line.startswith("would fill") for line in result.out.splitlines()) == 7
    assert "dry run: nothing written" in result.err
    with Store(store_path) as store:
        assert store.derived("enrich") == {}
        assert (store.generation, store.sync_state.processor_marks) == (generation, marks)


def test_enrich_fills_for_the_next_sync_and_refresh_asks_again(
    project: Path, run, services: MetadataServer
) -> None:
    config = enriched(project, services, enabled=False)
    assert run("-q", "--config", config, "pull").code == 0
    result = run("--config", config, "enrich")
    assert result.code == 0 and f"filled P2URGA3T {ANSOR}" in result.out
    assert run("-q", "--config", config, "sync").code == 0  # enrichment off: the sync only shows it
    assert venue_of(project, ANSOR) == ("OSDI'20", "dblp")
    services.reset()
    assert run("-q", "--config", config, "enrich").code == 0
    assert services.requests == []  # nothing due
    assert run("-q", "--config", config, "enrich", "--refresh").code == 0
    assert {r.params["q"] for r in services.asked("dblp")} >= {
        "Ansor Generating High Performance Tensor Programs for Deep Learning"
    }


def test_enrich_needs_a_pulled_store(project: Path, run, services: MetadataServer) -> None:
    result = run("--config", enriched(project, services), "enrich")
    assert result.code == 1 and "run `zotsync pull` first" in result.err


def test_status_counts_each_services_answers_and_lists_the_ambiguous_items(
    project: Path, run, services: MetadataServer
) -> None:
    # Two published versions of Graphiler with different venues: the venue stays unknown.
    services.add(
        Paper(
            "Graphiler: A Compiler for Graph Neural Networks",
            ("Zhiqiang Xie", "Minjie Wang"),
            "2022",
            "GNNSys",
            dblp="conf/gnnsys/XieWYZW22",
        )
    )
    config = enriched(project, services, services=["dblp", "arxiv"])
    assert run("-q", "--config", config, "sync").code == 0
    report = json.loads(run("--config", config, "status", "--format", "json").out)["enrichment"]
    arxiv = report["services"]["arxiv"]  # asked only about the items with an arXiv id
    assert arxiv["not_asked"] > 0 and sum(arxiv.values()) - arxiv["not_asked"] == len(services.asked("arxiv"))
    assert report["services"]["dblp"]["filled"] == 5
    assert report["services"]["dblp"]["ambiguous"] == 1
    assert report["items"]["filled"] == 5 and report["items"]["ambiguous"] == 1
    (graphiler,) = report["ambiguous"]
    assert graphiler["zotero_key"] == "7A83DFWU"
    assert {(c["venue"], c["year"]) for c in graphiler["candidates"]} == {
        ("MLSys", "2022"),
        ("GNNSys", "2022"),
    }
    text = run("--config", config, "status").out
    assert "  - dblp: 5 filled, 1 ambiguous" in text
    assert "Graphiler: A Compiler for Graph Neural Networks [7A83DFWU] — dblp:" in text
    assert venue_of(project, "Graphiler: A Compiler for Graph Neural Networks") == ("", "")


def test_requests_name_zotsync_carry_mailto_to_the_polite_pools_and_keep_each_services_pace(
    project: Path, run, services: MetadataServer
) -> None:
    config = enriched(project, services, mailto="curator@example.org")
    assert run("-q", "--config", config, "sync").code == 0
    for request in services.requests:
        assert request.headers["User-Agent"].startswith("zotsync/")
        assert "mailto:curator@example.org" in request.headers["User-Agent"]
        assert ("mailto" in request.params) == (request.service in ("crossref", "openalex"))
    for service, pace in (("dblp", 1.0), ("crossref", 0.1), ("openalex", 0.1), ("arxiv", 3.0)):
        times = [r.at for r in services.asked(service)]
        assert len(times) > 1 and min(b - a for a, b in itertools.pairwise(times)) >= pace - 1e-9


@pytest.mark.parametrize(
    ("section", "said"),
    [
        ("services: [dblp, scholar]", "config key 'enrich.services' names an unknown service 'scholar'"),
        (
            "endpoints: {dblp: dblp.org}",
            "config key 'enrich.endpoints' must give dblp an http:// or https://",
        ),
        ("endpoints: {s2: 'https://x'}", "config key 'enrich.endpoints' names an unknown service 's2'"),
        ("mailto: nobody", "config key 'enrich.mailto' must be an e-mail address"),
        ("deadline: 0", "config key 'enrich.deadline' must be a number of seconds above 0"),
        ("enable: true", "unknown config key 'enrich.enable' (did you mean 'enrich.enabled'?)"),
    ],
)
def test_a_wrong_enrich_key_is_one_line_and_exit_2(project: Path, run, section: str, said: str) -> None:
    config = project / "config" / "zotsync.yaml"
    config.write_text(config.read_text(encoding="utf-8") + f"enrich:\n  {section}\n", encoding="utf-8")
    result = run("--config", str(config), "sync")
    assert result.code == 2
    assert said in result.err and len(result.err.splitlines()) == 1


def test_a_doi_is_looked_up_only_when_it_is_a_doi(project: Path, run, services: MetadataServer) -> None:
    snapshot = project / "seeds" / "zotero-library.json"
    objects = json.loads(snapshot.read_text(encoding="utf-8"))
    dois = {ANSOR: "see the PDF", DEMO_PAPERS[1].title: "10.1145/3600006.0000001"}
    for obj in objects:
        if obj["data"].get("title") in dois:
            obj["data"]["DOI"] = dois[obj["data"]["title"]]
    snapshot.write_text(json.dumps(objects, ensure_ascii=False), encoding="utf-8")
    config = enriched(project, services, services=["crossref"])
    assert run("-q", "--config", config, "sync").code == 0
    by_doi = [r.path for r in services.asked("crossref") if r.path.startswith("/works/")]
    assert by_doi == ["/works/10.1145/3600006.0000001"]  # never /works/see the PDF
    assert venue_of(project, ANSOR) == ("OSDI'20", "crossref")  # found by its title instead


def test_a_services_endless_venue_never_becomes_a_page_of_its_own(
    project: Path, run, metadata_api, fake_time: FakeClock
) -> None:
    server = metadata_api(Paper(ANSOR, ("Lianmin Zheng",), "2020", "Proceedings " * 1000, dblp="conf/x/Z20"))
    config = enriched(project, server, services=["dblp"])
    assert run("-q", "--config", config, "sync").code == 0
    venue, source = venue_of(project, ANSOR)
    assert (
        source == "dblp"
        and venue.startswith("Proceedings Proceedings")
        and len(venue) <= 500 + len(" · 2020")
    )
