"""Nothing private leaves: what excluded collections or tags hold never reaches a metadata service or a
published file, and an excluded collection's name or a hidden tag appears in no file a sync writes.
The services are the fake ones of tests/metadata_server.py, which record every request."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from factories import FakeClock, api_child, api_collection, api_item, snapshot_project, with_enrichment
from metadata_server import MetadataServer, Paper, Recorded

from zotsync.processing.enrich.services import words
from zotsync.store import Store

ROOT = Path(__file__).resolve().parent.parent

# The library: a curated page of one category, an Inbox, and a private collection holding unpublished
# manuscripts; one paper the curator put on the page is also under review in the private collection.
COLLECTIONS = [
    api_collection("CLLCMP22", "Compilers"),
    api_collection("CLLINB22", "Inbox"),
    api_collection("CLLPRV22", "Private"),
    api_collection("CLLRVW22", "Reviewing (confidential)", parent="CLLPRV22"),
    api_collection("CLLTHR22", "Elsewhere"),
]
AUTHOR = [{"creatorType": "author", "firstName": "Ada", "lastName": "Lovelace"}]
PUBLIC = "Tiling Loops for Tensor Cores"
CURATED = "Fusing Kernels Across Layers"
ELSEWHERE = "Scheduling Warps Without Stalls"
SECRET = "Unpublished Manuscript About Quantum Widgets"
SECRET_DOI = "10.5555/secret.4242"
INBOX = "Inbox Preprint On Sparse Gizmos"
DRAFT = "Draft Paper About Hidden Gadgets"
HIDDEN_TAG = "to-curate"
EXCLUDED_TAG = "embargoed-draft"
PRIVATE_WORDS = ("Private", "Reviewing (confidential)", "Inbox", HIDDEN_TAG, EXCLUDED_TAG)


def library() -> list[dict]:
    preprint = {"itemType": "preprint", "date": "2024", "creators": AUTHOR}
    return [
        *COLLECTIONS,
        api_item("PUBLICAA", PUBLIC, collections=["CLLCMP22"], tags=["gpu"], **preprint),
        api_item(
            "CURATEDA",
            CURATED,
            collections=["CLLCMP22", "CLLRVW22"],
            tags=["gpu", HIDDEN_TAG, EXCLUDED_TAG],
            **preprint,
        ),
        api_child("CVRNTEAA", "CURATEDA", "note", note="<p>Fusion saves a round trip to memory.</p>"),
        api_item("ELSEWHRA", ELSEWHERE, collections=["CLLTHR22"], **preprint),
        api_item("SECRETAA", SECRET, collections=["CLLRVW22"], DOI=SECRET_DOI, **preprint),
        api_child("SECNTEAA", "SECRETAA", "note", note="<p>Reviewer two is wrong.</p>"),
        api_item("INBXAAAA", INBOX, collections=["CLLINB22"], **preprint),
        api_item("DRAFTAAA", DRAFT, collections=["CLLCMP22"], tags=[EXCLUDED_TAG], **preprint),
    ]


CATALOGUE = f"""\
title: The lab's reading list
categories:
  - name: Compilers
    entries:
      - title: "{CURATED}"
        zotero_key: CURATEDA
        why: Fusion, done right.
"""
SETTINGS = f"""\
  formats: [md, csv, html, bib, atom]
  scope: curated
  exclude_collections: [Inbox, Private]
  exclude_tags: [{EXCLUDED_TAG}]
  hide_tags: [{HIDDEN_TAG}]
  tags_page: true
  notes: true
"""
# Every paper is known to the services, so that a question about a private one would be answered.
PAPERS = [
    Paper(title, ("Ada Lovelace",), "2024", "OSDI", dblp=f"conf/osdi/{n}", doi=doi)
    for n, (title, doi) in enumerate(
        [(PUBLIC, ""), (CURATED, ""), (ELSEWHERE, ""), (SECRET, SECRET_DOI), (INBOX, ""), (DRAFT, "")]
    )
]


@pytest.fixture
def services(metadata_api, fake_time: FakeClock, monkeypatch: pytest.MonkeyPatch) -> MetadataServer:
    monkeypatch.setattr(MetadataServer, "clock", fake_time)
    return metadata_api(*PAPERS)


def lab(folder: Path, server: MetadataServer, split: str = "none", **enrich: object) -> str:
    config = snapshot_project(folder, library(), CATALOGUE, settings=SETTINGS + f"  split: {split}\n")
    enrich.setdefault("services", ["dblp", "crossref", "openalex", "arxiv"])
    return str(with_enrichment(config, server.endpoints(), deadline=600, **enrich))


def said(request: Recorded) -> str:
    """Everything a request told the service: its path and its parameters."""
    return " ".join([request.path, *request.params.values()])


def assert_nothing_private_asked(server: MetadataServer) -> None:
    assert server.requests, "the services were never asked"
    for request in server.requests:
        text = said(request)
        for private in (SECRET, INBOX, DRAFT):
            assert words(private) not in text and private not in text, text
        assert SECRET_DOI not in text and "secret.4242" not in text, text


def dblp_titles(server: MetadataServer) -> list[str]:
    by_words = {words(paper.title): paper.title for paper in PAPERS}
    return [by_words[r.params["q"]] for r in server.asked("dblp")]


@pytest.mark.parametrize("command", ["sync", "enrich"])
def test_no_title_or_doi_only_excluded_collections_or_tags_hold_reaches_a_service(
    tmp_path: Path, run, services: MetadataServer, command: str
) -> None:
    config = lab(tmp_path, services, services=["dblp", "crossref", "openalex"])
    if command == "enrich":
        assert run("-q", "--config", config, "pull").code == 0
    result = run("--config", config, command)
    assert result.code == 0, result.err
    assert_nothing_private_asked(services)
    # The page's papers are asked about first; a paper merely off a curated page after them.
    assert dblp_titles(services) == [CURATED, PUBLIC, ELSEWHERE]
    services.reset()
    assert run("-q", "--config", config, "enrich", "--refresh").code == 0
    assert_nothing_private_asked(services)


def test_a_curated_paper_puts_its_item_back_in_the_audience(
    tmp_path: Path, run, services: MetadataServer
) -> None:
    config = lab(tmp_path, services, services=["dblp"])
    assert run("-q", "--config", config, "sync").code == 0
    assert SECRET not in dblp_titles(services)
    services.reset()
    catalogue = tmp_path / "catalog.yaml"
    catalogue.write_text(
        catalogue.read_text() + f'      - title: "{SECRET}"\n        zotero_key: SECRETAA\n', encoding="utf-8"
    )
    assert run("-q", "--config", config, "sync").code == 0  # the catalogue changed: asked at once
    assert dblp_titles(services) == [SECRET]


def published(folder: Path) -> dict[str, str]:
    return {
        str(path.relative_to(folder)): path.read_text(encoding="utf-8")
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


@pytest.mark.parametrize("split", ["none", "category"])
def test_no_published_file_names_an_excluded_collection_or_a_hidden_tag(
    tmp_path: Path, run, services: MetadataServer, split: str
) -> None:
    config = lab(tmp_path, services, split, enabled=True)
    assert run("-q", "--config", config, "sync").code == 0
    # A second sync with changes, so that CHANGES.md and the feed have something to say.
    objects = json.loads((tmp_path / "library.json").read_text(encoding="utf-8"))
    objects.append(
        api_item(
            "PUBLICBB",
            "Vectorising Reductions",
            collections=["CLLCMP22", "CLLPRV22"],
            tags=[HIDDEN_TAG, "gpu"],
            creators=AUTHOR,
        )
    )
    objects.append(api_item("PUBLICCC", "Register Allocation", collections=["CLLCMP22"], tags=["gpu"]))
    (tmp_path / "library.json").write_text(json.dumps(objects), encoding="utf-8")
    assert run("-q", "--config", config, "sync").code == 0
    files = published(tmp_path / "exports")
    assert {"catalog.md", "catalog.csv", "catalog.html", "catalog.bib", "feed.xml", "tags.md"} <= set(files)
    assert any(name.startswith("notes/") for name in files) and "CHANGES.md" in files
    assert any("Register Allocation" in text for name, text in files.items() if name != "catalog.md")
    for name, text in files.items():
        for private in (*PRIVATE_WORDS, SECRET, INBOX, DRAFT, "Reviewer two"):
            assert private not in text, f"{name} names {private!r}"
    # The curated paper keeps its public collection and tags.
    assert "Compilers" in files["catalog.csv"] and "gpu" in files["tags.md"]


def test_a_change_of_the_exclusions_is_said_without_the_names_it_holds(
    tmp_path: Path, run, services: MetadataServer
) -> None:
    """CHANGES.md says under Settings that `exclude_collections` changed and what that did to the page,
    but not which collections it names; the manifest beside the exports leaves the exclusions out."""
    config = Path(lab(tmp_path, services))
    text = config.read_text(encoding="utf-8")
    config.write_text(text.replace("exclude_collections: [Inbox, Private]", "exclude_collections: [Inbox]"))
    assert run("-q", "--config", str(config), "sync").code == 0
    config.write_text(text, encoding="utf-8")  # Private joins the exclusions
    assert run("-q", "--config", str(config), "sync").code == 0
    changes = (tmp_path / "exports" / "CHANGES.md").read_text(encoding="utf-8")
    assert "`exports.exclude_collections`: 1 name (not shown) → 2 names (not shown)" in changes
    for name, published_text in published(tmp_path / "exports").items():
        for private in (*PRIVATE_WORDS, SECRET, INBOX, DRAFT):
            assert private not in published_text, f"{name} names {private!r}"


# -- answers are kept as they arrive ------------------------------------------------------------------


def test_a_run_killed_mid_way_keeps_every_answer_it_had(tmp_path: Path, metadata_api) -> None:
    """A real SIGKILL of `zotsync enrich` while it asks: the answers before the one it was waiting for
    are in the store."""
    titles = [f"Paper number {n} on compilers" for n in range(12)]
    server = metadata_api(
        *[Paper(t, ("Ada Lovelace",), "2024", "OSDI", dblp=f"conf/osdi/P{n}") for n, t in enumerate(titles)]
    )
    objects = [
        COLLECTIONS[0],
        *[
            api_item(
                f"PAPERXY{'ABCDEFGHIJKL'[n]}",
                t,
                "preprint",
                collections=["CLLCMP22"],
                date="2024",
                creators=AUTHOR,
            )
            for n, t in enumerate(titles)
        ],
    ]
    config = snapshot_project(tmp_path, objects, "categories: []\n")
    with_enrichment(config, server.endpoints(), services=["dblp"], enabled=False)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "zotsync", "-q", "--config", str(config)]
    assert subprocess.run([*command, "pull"], env=env, check=False).returncode == 0
    process = subprocess.Popen([*command, "enrich"], env=env)
    try:
        ends = time.monotonic() + 60
        while len(server.asked("dblp")) < 4 and time.monotonic() < ends and process.poll() is None:
            time.sleep(0.02)
        process.send_signal(signal.SIGKILL)
    finally:
        process.wait()
    assert process.returncode == -signal.SIGKILL
    asked = [r.params["q"] for r in server.asked("dblp")]
    assert 4 <= len(asked) < len(titles)
    with Store(tmp_path / "store.sqlite") as store:
        kept = store.derived("enrich")
    by_words = {words(t): f"PAPERXY{'ABCDEFGHIJKL'[n]}" for n, t in enumerate(titles)}
    answered = {by_words[q] for q in asked[:-1]}  # the last one may have been cut off mid-answer
    assert answered <= set(kept)
    assert all(kept[key].value["outcome"] == "filled" for key in answered)
