"""Hostile metadata services: one malformed answer (JSON nested 200,000 deep, `"author": 5`, any value of
any type in any field) never fails a sync. The service is left out of the run with one warning line, the
sync exits 0 with the page, and nothing is recorded as "not found" for it. Redirects never take a request
to another host. The services are the fake ones of tests/metadata_server.py, on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from factories import ANSOR, DEMO_PAPERS, GOLDEN, FakeClock, answers, enriched, one_warning, venue_of
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from metadata_server import Fault, MetadataServer, Paper

from zotsync.processing.enrich.matching import Query
from zotsync.processing.enrich.run import _Services
from zotsync.processing.enrich.settings import EnrichConfig

DEEP = b"[" * 200_000 + b"]" * 200_000


@pytest.fixture
def services(metadata_api, fake_time: FakeClock, monkeypatch: pytest.MonkeyPatch) -> MetadataServer:
    monkeypatch.setattr(MetadataServer, "clock", fake_time)
    return metadata_api(*DEMO_PAPERS)


@pytest.mark.parametrize(
    ("service", "body", "why"),
    [
        ("dblp", DEEP, "dblp answered with JSON nested too deep to read"),
        ("dblp", b'{"result": {"hits": {"hit": [{"info": {"title": 5}}]}}}', "dblp answered in a form"),
        ("dblp", b'{"result": {"hits": {"hit": [{"info": {"authors": {"author": 5}}}]}}}', "dblp answered"),
        ("dblp", b'{"result": 5}', "dblp answered in a form zotsync cannot read"),
        ("dblp", b"[]", "dblp answered with JSON that is not an object"),
        ("dblp", b"1" * 5000, "dblp answered with a body that is not JSON"),
        ("crossref", DEEP, "crossref answered with JSON nested too deep to read"),
        ("crossref", b'{"message": {"items": [{"title": ["X"], "author": 5}]}}', "crossref answered in a"),
        (
            "crossref",
            b'{"message": {"items": [{"title": ["X"], "institution": {"a": 1}, "type": "posted-content"}]}}',
            "crossref answered in a form",
        ),
        (
            "crossref",
            b'{"message": {"items": [{"title": ["X"], "published": 7}]}}',
            "crossref",
        ),
    ],
)
def test_a_malformed_answer_leaves_its_service_out_with_one_warning_and_the_sync_exits_0(
    project: Path, run, services: MetadataServer, service: str, body: bytes, why: str
) -> None:
    config = enriched(project, services, services=[service])
    services.replay(service, body, content_type="application/json")
    result = run("--config", config, "sync")
    assert result.code == 0, result.err
    assert why in one_warning(result.err)
    assert "Traceback" not in result.err and "unexpected" not in result.err
    assert len(services.asked(service)) == 1  # not asked again for the next items
    assert answers(project) == {}  # nothing recorded as not found: every item waits
    assert (project / "exports" / "catalog.md").read_bytes() == (GOLDEN / "catalog.md").read_bytes()
    services.forget(service)
    assert run("-q", "--config", config, "sync").code == 0  # the service mends: the items get their venues
    if service == "dblp":
        assert venue_of(project, ANSOR) == ("OSDI'20", "dblp")


def test_the_other_services_answer_while_a_malformed_one_is_left_out(
    project: Path, run, services: MetadataServer
) -> None:
    config = enriched(project, services, services=["crossref", "dblp"])
    services.replay("crossref", b'{"message": {"items": [{"title": ["X"], "author": 5}]}}')
    result = run("--config", config, "sync")
    assert result.code == 0 and "crossref answered in a form" in one_warning(result.err)
    assert venue_of(project, ANSOR) == ("OSDI'20", "dblp")


# -- any value of any type in any field of a real-shaped answer ---------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
PAPER = Paper(
    "Ansor: Generating High-Performance Tensor Programs for Deep Learning",
    ("Lianmin Zheng", "Chengfan Jia"),
    "2020",
    "OSDI",
    proceedings="14th USENIX Symposium on Operating Systems Design and Implementation",
    dblp="conf/osdi/ZhengJSWYHMYZSGY20",
    doi="10.5555/ansor",
    arxiv="2006.06762",
)
QUERY = Query(
    key="ANSORKEY",
    item_type="preprint",
    title=PAPER.title,
    family="Zheng",
    year="2020",
    doi="10.5555/ansor",
    arxiv="",
    preprint=True,
    needs=("venue", "published"),
)
REQUESTS = {  # the search each service is asked, as the fake server answers it for PAPER
    "dblp": ("/search/publ/api", {"q": "Ansor Generating High Performance Tensor Programs"}),
    "crossref": ("/works", {"query.bibliographic": "Ansor Generating Tensor Programs Zheng"}),
    "openalex": ("/works", {"search": "Ansor Generating High Performance Tensor Programs"}),
}


def paths(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON value: each key of each object and each index of each list."""
    found = [at]
    if isinstance(value, dict):
        for key, inner in value.items():
            found += paths(inner, (*at, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            found += paths(inner, (*at, index))
    return found


def replaced(value: Any, at: tuple[Any, ...], new: Any) -> Any:
    if not at:
        return new
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[at[0]] = replaced(value[at[0]], at[1:], new)
    return copy


@pytest.fixture(scope="module")
def one_paper() -> Any:
    server = MetadataServer([PAPER]).start()
    yield server
    server.stop()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), service=st.sampled_from(sorted(REQUESTS)), new=JSON)
def test_any_value_in_any_field_is_an_answer_or_the_service_left_out_never_a_crash(
    one_paper: MetadataServer, fake_time: FakeClock, data: st.DataObject, service: str, new: Any
) -> None:
    path, params = REQUESTS[service]
    one_paper.forget(service)
    real = json.loads(one_paper.answer(service, path, params).body)
    assert PAPER.title in json.dumps(real)  # an answer that names the paper
    where = data.draw(st.sampled_from(paths(real)), label="where")
    one_paper.replay(service, json.dumps(replaced(real, where, new)).encode())
    settings_ = EnrichConfig(services=(service,), endpoints=one_paper.endpoints())
    with _Services(settings_, 60.0) as asking:
        value = asking.ask(QUERY)
    if value is None:  # left out, with the reason its one warning gives
        assert list(asking.failures) == [service]
        assert asking.failures[service].startswith(service)
    else:
        assert value["outcome"] in ("filled", "ambiguous", "not_found") and not asking.failures


WRONG = (None, 5, -1.5, True, "", "text", [], [5], ["text"], {}, {"text": 5}, [[[]]])


@pytest.mark.parametrize("service", sorted(REQUESTS))
def test_every_field_of_a_real_answer_holding_every_wrong_type_never_crashes(
    one_paper: MetadataServer, fake_time: FakeClock, service: str
) -> None:
    """Every place of the answer naming the paper, each given each of a dozen values of the wrong type."""
    path, params = REQUESTS[service]
    one_paper.forget(service)
    real = json.loads(one_paper.answer(service, path, params).body)
    left_out = 0
    settings_ = EnrichConfig(services=(service,), endpoints=one_paper.endpoints())
    for where in paths(real):
        for new in WRONG:
            one_paper.replay(service, json.dumps(replaced(real, where, new)).encode())
            with _Services(settings_, 60.0) as asking:
                value = asking.ask(QUERY)
            if value is None:
                assert list(asking.failures) == [service], (where, new)
                left_out += 1
            else:
                assert value["outcome"] in ("filled", "ambiguous", "not_found"), (where, new)
    assert left_out  # some of them were malformed, and said so


# -- redirects ------------------------------------------------------------------------------------------


def redirect(location: str, status: int = 302) -> Fault:
    return Fault("status", status=status, headers={"Location": location}, body=b"moved")


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1"])
def test_a_redirect_to_another_host_is_never_followed(
    project: Path, run, services: MetadataServer, metadata_api, host: str
) -> None:
    """The title never reaches a host the config does not name: another host name, or another port."""
    elsewhere = metadata_api(*DEMO_PAPERS)
    moved = f"http://{host}:{elsewhere.url.rsplit(':', 1)[1]}/dblp/search/publ/api?q=Ansor&format=json"
    services.inject("dblp", redirect(moved))
    config = enriched(project, services, services=["dblp"])
    result = run("--config", config, "sync")
    assert result.code == 0
    warning = one_warning(result.err)
    assert f"redirected to another host ({host}), which zotsync does not follow" in warning
    assert elsewhere.requests == []
    assert len(services.asked("dblp")) == 1  # not retried, the service left out of the run


def test_a_redirect_loop_on_the_services_own_host_costs_six_requests(
    project: Path, run, services: MetadataServer
) -> None:
    services.replay("dblp", b"moved", status=301, Location="/dblp/search/publ/api?q=again")
    config = enriched(project, services, services=["dblp"])
    result = run("--config", config, "sync")
    assert result.code == 0
    assert "dblp: redirected more than 5 times" in one_warning(result.err)
    assert len(services.asked("dblp")) == 6


def test_a_redirect_on_the_services_own_host_is_followed(
    project: Path, run, services: MetadataServer
) -> None:
    moved = (
        f"{services.url}/dblp/search/publ/api?q=Ansor+Generating+High+Performance+Tensor+Programs&format=json"
    )
    services.inject("dblp", redirect(moved, 301))
    config = enriched(project, services, services=["dblp"])
    result = run("--config", config, "sync")
    assert result.code == 0 and "enrichment" not in result.err
    assert venue_of(project, ANSOR) == ("OSDI'20", "dblp")
    assert services.asked("dblp")[1].params["q"] == "Ansor Generating High Performance Tensor Programs"
