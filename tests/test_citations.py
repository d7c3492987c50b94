"""The scholarly graph end to end: the demo synced against a fake OpenAlex on 127.0.0.1
(tests/metadata_server.py, built from the shapes of ../shared/fixtures/metadata-apis/openalex/), checked
against what the fake was told (factories.GRAPH_PAPERS), never against zotsync's own output."""

from __future__ import annotations

import json
import re
import subprocess
import time
from dataclasses import replace as dc_replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from factories import (
    GRAPH_PAPERS,
    HALIDE,
    TVM,
    FakeClock,
    axe_violations,
    demo_csv_rows,
    sync_reading_no_library,
    with_citations,
)
from metadata_server import Fault, MetadataServer

from zotsync import processing
from zotsync.app.page import merge
from zotsync.app.sync import run_sync
from zotsync.catalogue import load_catalogue
from zotsync.config import load_config
from zotsync.digest import News
from zotsync.export import LinkPlan
from zotsync.export.atom import render_atom
from zotsync.processing.citations import run as citations_run
from zotsync.store import Store

SURVEY, MLIR, TIRAMISU, RAMMER, ROLLER_TRAP = GRAPH_PAPERS[:5]


@pytest.fixture
def openalex(metadata_api, fake_time: FakeClock, monkeypatch: pytest.MonkeyPatch) -> MetadataServer:
    monkeypatch.setattr(MetadataServer, "clock", fake_time)
    return metadata_api(*GRAPH_PAPERS)


def rows_by_title(project: Path) -> dict[str, dict[str, str]]:
    return {row["title"]: row for row in demo_csv_rows(project)}


def stored(project: Path) -> dict[str, dict]:
    with Store(project / ".zotsync" / "zotsync.sqlite") as store:
        return {key: r.value for key, r in store.derived("citations").items()}


def test_counts_retraction_and_open_copies_reach_the_csv_as_the_fake_knows_them(
    project: Path, run, openalex: MetadataServer
) -> None:
    config = with_citations(project, openalex)
    result = run("--config", config, "sync", "--json")
    assert result.code == 0, result.err
    rows = rows_by_title(project)
    # Zotero's DOI 10.1109/TPDS… is OpenAlex's https://doi.org/10.1109/tpds…: the same paper
    survey = rows[SURVEY.title]
    assert (survey["cited_by"], survey["retracted"], survey["open_access_url"]) == ("412", "", SURVEY.oa_url)
    assert (rows[MLIR.title]["cited_by"], rows[MLIR.title]["retracted"]) == ("97", "true")
    assert rows[TIRAMISU.title]["cited_by"] == "250"  # a work with no references
    assert rows[RAMMER.title]["cited_by"] == "120"  # no DOI in Zotero: found by its title
    # the trap: OpenAlex's nearest title is another paper; its 7777 citations never reach ROLLER's row
    roller = next(row for title, row in rows.items() if title.startswith("ROLLER"))
    assert roller["cited_by"] == ""
    assert all(row["cited_by"] in ("", "412", "97", "250", "120") for row in rows.values())
    values = stored(project)
    assert values[next(k for k, v in values.items() if v.get("id") == "W2903")]["references"] == []
    assert next(v for v in values.values() if v.get("id") == "W3040")["references"] == [
        "W9001",
        "W9002",
        "W3092",
    ]
    assert [v["outcome"] for v in values.values()].count("ambiguous") == 1
    # the DOI'd papers went in one batch: 35 DOIs, one request; the others one title search each
    batches = [r for r in openalex.requests if "filter" in r.params]
    assert len(batches) == 1 and batches[0].params["filter"].count("|") == 34
    searches = [r for r in openalex.requests if "search" in r.params]
    assert len(searches) == len(openalex.requests) - 1
    # the retracted paper says so on the Markdown page
    page = (project / "exports" / "catalog.md").read_text(encoding="utf-8")
    (mlir_line,) = [line for line in page.splitlines() if MLIR.title in line]
    assert "已撤稿" in mlir_line
    assert sum("已撤稿" in line for line in page.splitlines()) == 1
    assert json.loads(result.out)["processed"]["citations"]["found"] == 4


def test_an_unchanged_library_asks_nothing_and_reads_nothing(
    project: Path, run, openalex: MetadataServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = with_citations(project, openalex)
    assert run("-q", "--config", config, "sync").code == 0
    openalex.reset()

    processed = sync_reading_no_library(run, config, monkeypatch)["processed"]
    assert openalex.requests == []
    assert processed["citations"]["requests"] == 0


def test_counts_are_asked_again_after_their_age_by_id_batches_and_references_are_kept(
    project: Path, openalex: MetadataServer
) -> None:
    config = load_config(Path(with_citations(project, openalex, citations_max_age_days=30)))
    start = datetime(2026, 3, 1, tzinfo=UTC)
    first = run_sync(config, clock=lambda: start).processed[0].counts
    assert first["found"] == 4
    openalex.reset()
    assert run_sync(config, clock=lambda: start + timedelta(days=29)).processed[0].counts["requests"] == 0
    assert openalex.requests == []
    openalex.papers[0] = dc_replace(SURVEY, cited_by=500, references=())  # OpenAlex counts more now
    later = run_sync(config, clock=lambda: start + timedelta(days=31)).processed[0].counts
    assert later["refreshed"] == 4
    by_id = [r for r in openalex.requests if r.params.get("filter", "").startswith("openalex:")]
    assert len(by_id) == 1 and "referenced_works" not in by_id[0].params["select"]
    assert sorted(by_id[0].params["filter"].removeprefix("openalex:").split("|")) == sorted(
        ["W3092", "W3101", "W2903", "W3040"]
    )
    assert rows_by_title(project)[SURVEY.title]["cited_by"] == "500"
    survey = next(v for v in stored(project).values() if v.get("id") == "W3092")
    assert survey["references"] == list(SURVEY.references)  # kept: the item did not change


@pytest.mark.parametrize(
    "fault", [Fault.status_code(500, body=b"Internal Server Error"), Fault.html()], ids=["500", "html-200"]
)
def test_a_failing_service_is_one_warning_and_the_items_wait(
    project: Path, run, openalex: MetadataServer, fault: Fault
) -> None:
    openalex.inject("openalex", *[fault] * 10)
    config = with_citations(project, openalex)
    result = run("--config", config, "sync", "--json")
    assert result.code == 0
    warnings = [line for line in result.err.splitlines() if "citations: openalex" in line]
    assert len(warnings) == 1, result.err
    assert "<" not in warnings[0]
    assert all(row["cited_by"] == "" for row in demo_csv_rows(project))
    counts = json.loads(result.out)["processed"]["citations"]
    assert counts["waiting"] == counts["due"] > 0
    # suggest names the service, not the setting the user has already made
    said = run("--config", config, "suggest")
    assert said.code == 1 and "OpenAlex has answered for no paper" in said.err
    assert "set enrich.citations" not in said.err
    # the next run, with the service back, asks for them
    openalex.heal("openalex")
    assert run("-q", "--config", config, "sync").code == 0
    assert rows_by_title(project)[SURVEY.title]["cited_by"] == "412"


def test_a_hanging_service_is_given_up_after_its_timeout(
    project: Path, run, metadata_api, monkeypatch: pytest.MonkeyPatch
) -> None:
    limits_for = citations_run.limits_for

    def short(service: str, polite: bool):
        return dc_replace(limits_for(service, polite), timeout=0.2, min_interval=0.0, retry_wait=0.01)

    monkeypatch.setattr(citations_run, "limits_for", short)
    server = metadata_api(*GRAPH_PAPERS)
    server.inject("openalex", *[Fault.hang(3.0)] * 3)
    config = with_citations(project, server)
    started = time.monotonic()
    result = run("--config", config, "sync")
    assert result.code == 0
    assert "citations: openalex: the request timed out" in result.err
    assert time.monotonic() - started < 30


def test_requests_carry_mailto_and_off_asks_nothing(project: Path, run, openalex: MetadataServer) -> None:
    config = with_citations(project, openalex, citations=False)
    assert run("-q", "--config", config, "sync").code == 0
    assert openalex.requests == []
    assert all(row["cited_by"] == "" for row in demo_csv_rows(project))
    with open(config, "a", encoding="utf-8") as stream:
        stream.write("")
    text = Path(config).read_text(encoding="utf-8").replace("citations: false", "citations: true")
    Path(config).write_text(text + '  mailto: "curator@example.org"\n', encoding="utf-8")
    assert run("-q", "--config", config, "sync").code == 0
    assert openalex.requests and all(
        r.params.get("mailto") == "curator@example.org" for r in openalex.requests
    )
    assert all("mailto:curator@example.org" in r.headers.get("User-Agent", "") for r in openalex.requests)


def test_a_retracted_paper_is_marked_in_every_format_and_status_lists_it(
    project: Path, run, openalex: MetadataServer
) -> None:
    config = with_citations(project, openalex)
    text = Path(config).read_text(encoding="utf-8")
    wider = "formats: [md, csv, html, bib, atom]\n  open_access_link: true"
    Path(config).write_text(text.replace("formats: [md, csv]", wider), encoding="utf-8")
    assert run("-q", "--config", config, "sync").code == 0
    exports = project / "exports"
    html_page = (exports / "catalog.html").read_text(encoding="utf-8")
    (row,) = [line for line in html_page.split("<tr") if "MLIR: Scaling" in line]
    assert "已撤稿" in row and html_page.count("已撤稿") == 1
    # the open copy, under its own label, on the page and in its Markdown
    (survey,) = [line for line in html_page.split("<tr") if "The Deep Learning Compiler:" in line]
    assert f'href="{SURVEY.oa_url}"' in survey and "开放获取" in survey
    assert f"[开放获取]({SURVEY.oa_url})" in (exports / "catalog.md").read_text(encoding="utf-8")
    bib = (exports / "catalog.bib").read_text(encoding="utf-8")
    (mlir,) = [entry for entry in bib.split("\n@") if "{MLIR}: Scaling" in entry]
    assert "note = {Retracted}" in mlir and bib.count("Retracted") == 1
    # the feed starts empty (the first sync is its baseline): an entry about the paper, as a later sync
    # would make it, says so in its title
    loaded = load_config(Path(config))
    with Store(project / ".zotsync" / "zotsync.sqlite") as store:
        merged = merge(loaded, load_catalogue(loaded.catalog, loaded.path), store)
    (row,) = [r for r in merged.page.rows if r.title == MLIR.title][:1]
    news = News(
        "read", "key:" + row.zotero_key, "2026-12-02T09:30:00Z", row.title, "", "", "", (), "", row.zotero_key
    )
    feed = render_atom(merged.page, merged.library, [news], LinkPlan())
    titles = [line for line in feed.splitlines() if "<title>" in line and "已撤稿" in line]
    assert len(titles) == 1 and "MLIR" in titles[0]
    result = run("--config", config, "status", "--format", "json")
    (listed,) = json.loads(result.out)["retracted"]
    assert listed["title"] == MLIR.title
    assert "retracted papers on the page" in run("--config", config, "status").out


def test_suggest_names_the_works_several_papers_cite_that_the_library_lacks(
    project: Path, run, openalex: MetadataServer
) -> None:
    config = with_citations(project, openalex)
    assert run("-q", "--config", config, "suggest").code == 1  # no graph in the store yet
    assert run("-q", "--config", config, "sync").code == 0
    openalex.reset()
    result = run("--config", config, "suggest", "--min", "2", "--format", "json")
    assert result.code == 0, result.err
    found = json.loads(result.out)
    # the truth, from the fake's papers: who on the page cites what
    page = {row["zotero_key"] for row in demo_csv_rows(project)}
    keys = {v["id"]: k for k, v in stored(project).items() if not k.startswith("work:") and v.get("id")}
    citing: dict[str, set[str]] = {}
    for paper in GRAPH_PAPERS:
        if keys.get(paper.openalex) in page:
            for work in paper.references:
                citing.setdefault(work, set()).add(keys[paper.openalex])
    expected = {w for w, by in citing.items() if len(by) >= 2 and w not in keys}
    assert {s["openalex"] for s in found} == expected == {"W9001", "W9002"}
    assert [s["title"] for s in found] == [TVM.title, HALIDE.title]  # TVM is cited more widely
    assert found[0]["doi"] == TVM.doi and found[0]["year"] == "2018"
    assert all(s["cited_by_list"] == len(citing[s["openalex"]]) == len(s["citing"]) for s in found)
    assert set(found[0]["citing"]) == citing["W9001"]
    # titles by one batch of ids, then kept: the next run asks nothing
    (asked,) = openalex.requests
    assert sorted(asked.params["filter"].removeprefix("openalex:").split("|")) == ["W9001", "W9002"]
    openalex.reset()
    assert run("-q", "--config", config, "suggest", "--min", "2").code == 0
    assert openalex.requests == []
    assert json.loads(run("--config", config, "suggest", "--min", "4", "--format", "json").out) == []
    page_md = run("--config", config, "suggest", "--min", "2", "--format", "md").out
    assert f"[{TVM.title}](https://doi.org/{TVM.doi})" in page_md


def test_the_suggestions_page_is_written_with_the_exports(
    project: Path, run, openalex: MetadataServer
) -> None:
    config = with_citations(project, openalex)
    text = Path(config).read_text(encoding="utf-8")
    Path(config).write_text(
        text.replace("formats: [md, csv]", "formats: [md, csv]\n  suggestions_page: true")
    )
    assert run("-q", "--config", config, "sync").code == 0
    page = (project / "exports" / "suggestions.md").read_text(encoding="utf-8")
    assert TVM.title in page and HALIDE.title in page and "CUTLASS" not in page  # cited by three, one


def test_the_html_export_writes_the_citation_picture_and_links_it(
    project: Path, run, openalex: MetadataServer
) -> None:
    config = with_citations(project, openalex)
    text = Path(config).read_text(encoding="utf-8")
    Path(config).write_text(text.replace("formats: [md, csv]", "formats: [md, csv, html]"), encoding="utf-8")
    assert run("-q", "--config", config, "sync").code == 0
    picture = (project / "exports" / "citations.html").read_text(encoding="utf-8")
    assert 'href="citations.html"' in (project / "exports" / "catalog.html").read_text(encoding="utf-8")
    # the fake's truth: the survey cites MLIR, Rammer cites the survey; nothing else on the page
    assert picture.count("<path ") == 2
    assert picture.count("<circle ") - 2 == len({row["zotero_key"] for row in demo_csv_rows(project)})
    assert "http://" not in picture.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in picture and "<script" not in picture


def picture_of_300_papers(names: list[str] | None = None) -> str:
    """citations.html for 300 made-up papers in 9 categories (or those `names`), each citing up to four
    others."""
    import random

    from zotsync.export import graphpage
    from zotsync.labels import labels_for
    from zotsync.model import Library, Placement

    chance = random.Random(31)
    rows, graph = [], {}
    for n in range(300):
        category = names[n % len(names)] if names else f"Category {n % 9} <b>&</b>"  # shown as text
        key = f"K{n:07d}"
        rows.append(
            Placement(
                category,
                "read" if n % 3 else "unread",
                f"Paper {n} <i>x</i>",
                "",
                "",
                "",
                (),
                "",
                "",
                False,
                (),
                key,
                (),
                (),
            )
        )
        graph[key] = {
            "id": f"W{n}",
            "references": [f"W{chance.randrange(300)}" for _ in range(chance.randrange(5))],
        }
    rows.sort(key=lambda row: row.category)
    return graphpage.render(rows, Library(derived={"citations": graph}), labels_for("en"), "List")


@pytest.mark.slow
def test_the_picture_is_readable_at_300_papers_in_chromium_and_asks_no_other_host(
    browser, tmp_path: Path
) -> None:
    page_file = tmp_path / "citations.html"
    page_file.write_text(picture_of_300_papers(), encoding="utf-8")
    page = browser.new_page(viewport={"width": 1400, "height": 1400})
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url))
    try:
        page.goto(page_file.as_uri())
        assert asked == [page_file.as_uri()]  # nothing from another host, nothing at all but itself
        dots = page.locator("circle[data-key]")
        assert dots.count() == 300
        boxes = page.evaluate(
            "() => [...document.querySelectorAll('circle[data-key]')].map(c => {"
            "const b = c.getBoundingClientRect(); return [b.x + b.width / 2, b.y + b.height / 2, b.width]})"
        )
        closest = min(
            ((a[0] - b[0]) ** 2 + (a[1] - b[1]) ** 2) ** 0.5
            for i, a in enumerate(boxes)
            for b in boxes[i + 1 :]
        )
        assert closest >= boxes[0][2]  # no two dots overlap
        labels = page.evaluate(
            "() => [...document.querySelectorAll('.categories text')].map(t => {"
            "const b = t.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom, t.textContent]})"
        )
        assert len(labels) == 9 and all("<b>&</b>" in label[4] for label in labels)
        for i, a in enumerate(labels):
            for b in labels[i + 1 :]:
                assert a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1], (a, b)  # apart
        assert page.locator("i").count() == 0  # the titles' markup stayed text
        page.screenshot(path=str(tmp_path / "citations.png"))
        assert (tmp_path / "citations.png").stat().st_size > 20_000
    finally:
        page.close()


def test_the_markdown_page_may_show_the_cited_by_column(project: Path, run, openalex: MetadataServer) -> None:
    config = with_citations(project, openalex)
    text = Path(config).read_text(encoding="utf-8")
    Path(config).write_text(
        text.replace("formats: [md, csv]", "formats: [md, csv]\n  columns: [paper, cited_by]")
    )
    assert run("-q", "--config", config, "sync").code == 0
    page = (project / "exports" / "catalog.md").read_text(encoding="utf-8")
    assert "| Paper | 被引 |" in page or "| Paper | Cited by |" in page
    assert f"| {TIRAMISU.title} | 250 |" in page
    assert f"| {RAMMER.title} | 120 |" in page


def test_the_run_ends_by_its_deadline_and_the_next_one_goes_on(
    project: Path, openalex: MetadataServer
) -> None:
    """On the fake clock: OpenAlex's pace (a request each 0.105 s) lets about five requests into 0.5 s."""
    config = load_config(Path(with_citations(project, openalex, deadline=0.5)))
    first = run_sync(config).processed[0].counts
    assert 0 < first["requests"] <= 6 and first["waiting"] > 0
    assert first["found"] + first["not_found"] + first["ambiguous"] + first["waiting"] == first["due"]
    runs = 1
    while run_sync(config).processed[0].counts["waiting"] and runs < 30:
        runs += 1
    assert runs > 1
    assert rows_by_title(project)[RAMMER.title]["cited_by"] == "120"
    assert rows_by_title(project)[SURVEY.title]["cited_by"] == "412"


def test_suggest_without_openalex_lists_the_works_by_their_ids(
    project: Path, run, openalex: MetadataServer
) -> None:
    config = with_citations(project, openalex)
    assert run("-q", "--config", config, "sync").code == 0
    openalex.inject("openalex", Fault.html())
    result = run("--config", config, "suggest", "--min", "2", "--format", "json")
    assert result.code == 0
    assert [line for line in result.err.splitlines() if "suggest: openalex" in line] != []
    assert {(s["openalex"], s["title"]) for s in json.loads(result.out)} == {("W9001", ""), ("W9002", "")}
    # asked again next time, and then named
    assert [
        s["title"]
        for s in json.loads(run("--config", config, "suggest", "--min", "2", "--format", "json").out)
    ] == [
        TVM.title,
        HALIDE.title,
    ]


def test_suggest_says_so_when_the_graph_is_off(project: Path, run, openalex: MetadataServer) -> None:
    config = with_citations(project, openalex, citations=False)
    assert run("-q", "--config", config, "sync").code == 0
    result = run("--config", config, "suggest")
    assert result.code == 1 and "enrich.citations: true" in result.err


def test_after_a_refresh_the_next_syncs_ask_nothing_again(
    project: Path, openalex: MetadataServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = load_config(Path(with_citations(project, openalex)))
    text = config.path.read_text(encoding="utf-8")
    config.path.write_text(text.replace("formats: [md, csv]", "formats: [md, csv]\n  suggestions_page: true"))
    config = load_config(config.path)
    start = datetime(2026, 3, 1, tzinfo=UTC)
    run_sync(config, clock=lambda: start)
    assert run_sync(config, clock=lambda: start + timedelta(days=31)).processed[0].counts["refreshed"] == 4
    openalex.reset()
    run_sync(config, clock=lambda: start + timedelta(days=32))  # reads the library once: the page changed

    def unread(job: processing.Job) -> None:
        raise AssertionError("the library was read although nothing was due")

    monkeypatch.setattr(processing.Job, "library", unread)
    for days in (33, 34):  # the cited works' titles, kept 33 days ago, never come due
        when = start + timedelta(days=days)
        assert run_sync(config, clock=lambda when=when: when).processed[0].counts["due"] == 0
    assert openalex.requests == []


@pytest.mark.slow
def test_long_category_names_stay_whole_inside_the_picture(browser, tmp_path: Path) -> None:
    names = [
        "GPU 编译与性能优化 / 分布式编译",
        "LLM Inference / MegaKernel",
        "A category whose name a curator wrote out at great length, as some do",
        "深度学习编译器 / 自动调度与代价模型 / 张量程序优化",
        "Short",
    ]
    page_file = tmp_path / "citations.html"
    page_file.write_text(picture_of_300_papers(names), encoding="utf-8")
    page = browser.new_page(viewport={"width": 1400, "height": 1400})
    try:
        page.goto(page_file.as_uri())
        picture, labels = page.evaluate(
            "() => { const svg = document.querySelectorAll('svg')[1].getBoundingClientRect();"
            " return [[svg.left, svg.right], [...document.querySelectorAll('.categories text')].map(t => {"
            " const b = t.getBoundingClientRect(); return [b.left, b.right, t.textContent]})] }"
        )
        assert len(labels) == len(names)
        for left, right, text in labels:  # every label drawn whole: none runs past the picture's edge
            assert picture[0] <= left and right <= picture[1], (text, left, right, picture)
    finally:
        page.close()


@pytest.mark.slow
def test_the_nu_html_checker_finds_no_error_in_the_picture(vnu, tmp_path: Path) -> None:
    page_file = tmp_path / "citations.html"
    page_file.write_text(picture_of_300_papers(), encoding="utf-8")
    done = subprocess.run([*vnu, "--format", "json", str(page_file)], capture_output=True, timeout=300)
    assert done.returncode in (0, 1), done.stderr[-500:]
    messages = json.loads(done.stderr or b'{"messages": []}')["messages"]
    # The checker cannot compute the Content-Security-Policy's hashes, so it warns that the inline style
    # is blocked; Chromium applies it (the test above sees the laid-out picture): that warning is noise.
    noise = re.compile(r"^Inline (style|script) violates Content Security Policy")
    assert [m for m in messages if not noise.match(m.get("message", ""))] == []


@pytest.mark.slow
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_axe_core_finds_no_accessibility_violation_in_the_picture(
    browser, axe_source: str, tmp_path: Path, scheme: str
) -> None:
    page_file = tmp_path / "citations.html"
    page_file.write_text(picture_of_300_papers(), encoding="utf-8")
    context = browser.new_context(bypass_csp=True, color_scheme=scheme)
    try:
        page = context.new_page()
        page.goto(page_file.as_uri())
        assert axe_violations(page, axe_source) == []
    finally:
        context.close()
