"""catalog.bib: one entry per paper, types and fields from Zotero, keys as Better BibTeX gives them or
generated and unique, text that BibTeX, biber and bibtexparser all read as the data it is."""

from __future__ import annotations

import csv
import re
import subprocess
from pathlib import Path

from conftest import write_config
from factories import api_item, as_text, config_of, parse, write_json
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from zotsync.export import Page, render_page
from zotsync.model import Item, Library
from zotsync.text import flatten


def project_with(folder: Path, objects: list[dict], catalogue: str = "categories: []\n") -> Path:
    write_json(folder / "library.json", objects)
    (folder / "catalog.yaml").write_text(catalogue, encoding="utf-8")
    return write_config(
        folder,
        "source: {type: snapshot, path: library.json}\ncatalog: catalog.yaml\nstore: store.sqlite\n"
        "exports:\n  dir: out\n  formats: [md, bib]\n",
    )


def synced_bib(run, config: Path) -> dict[str, dict[str, str]]:
    assert run("-q", "--config", str(config), "sync").code == 0
    text = (config.parent / "out" / "catalog.bib").read_text(encoding="utf-8")
    return {entry["ID"]: entry for entry in parse(text).entries}


def test_the_demo_has_one_entry_per_paper_with_unique_keys(project: Path, run) -> None:
    assert run("-q", "--config", config_of(project), "sync").code == 0
    bib = run("--config", config_of(project), "export", "--format", "bib", "--output", "-")
    assert bib.code == 0
    entries = parse(bib.out).entries
    with (project / "exports" / "catalog.csv").open(encoding="utf-8") as file:
        papers = {row["zotero_key"] or row["title"] for row in csv.DictReader(file)}
    assert len(entries) == len(papers) == 64
    keys = [entry["ID"] for entry in entries]
    assert len(set(keys)) == len(keys) and keys == sorted(keys)
    assert all(re.fullmatch(r"[a-z][A-Za-z0-9-]*", key) for key in keys)  # generated: BBT's default
    # every entry has a title; those Zotero dates have a year
    assert all(entry.get("title") for entry in entries)
    by_key = {entry["ID"]: entry for entry in entries}
    tiramisu = by_key["baghdadiTIRAMISUPolyhedralCompiler2019"]
    assert tiramisu["ENTRYTYPE"] == "inproceedings"
    assert tiramisu["author"].startswith("Baghdadi, Riyadh and Ray, Jessica")
    assert tiramisu["booktitle"].startswith("2019 IEEE/ACM International Symposium on Code Generation")
    assert tiramisu["doi"] == "10.1109/CGO.2019.8661197"


def test_a_paper_in_two_categories_is_one_entry(tmp_path: Path, run) -> None:
    config = project_with(
        tmp_path,
        [api_item("TWCE2222", "Twice Placed", date="2024", collections=[])],
        "categories:\n"
        "  - name: A\n    entries: [{title: Twice Placed}]\n"
        "  - name: B\n    entries: [{title: Twice Placed}]\n",
    )
    entries = synced_bib(run, config)
    assert list(entries) == ["lovelaceTwicePlaced2024"]
    assert (tmp_path / "out" / "catalog.md").read_text(encoding="utf-8").count("Twice Placed") == 2


def test_a_url_is_written_only_where_the_page_would_link_it(tmp_path: Path, run) -> None:
    config = project_with(
        tmp_path,
        [
            api_item("WEBL2222", "Linked", date="2024", url="https://example.org/p", collections=[]),
            api_item("JSCR2222", "Scripted", date="2024", url="javascript:alert(5)", collections=[]),
        ],
    )
    entries = synced_bib(run, config)
    urls = {entry["title"]: entry.get("url") for entry in entries.values()}
    assert urls == {"Linked": "https://example.org/p", "Scripted": None}


def test_entry_types_and_venues_follow_the_item_type(tmp_path: Path, run) -> None:
    conf = dict(proceedingsTitle="Proceedings of OSDI", date="2020-11-04")
    config = project_with(
        tmp_path,
        [
            api_item("CNFR2222", "Conference Paper", "conferencePaper", **conf),
            api_item("JRNL2222", "Journal Article", publicationTitle="TOPLAS", date="2019"),
            api_item(
                "PRPR2222",
                "Preprint Paper",
                "preprint",
                repository="arXiv",
                archiveID="arXiv:2401.01234",
                date="2024",
            ),
            api_item("THSS2222", "Thesis Work", "thesis", university="MIT", thesisType="PhD", date="2018"),
            api_item(
                "MSTR2222", "Master Work", "thesis", university="ETH", thesisType="Master's", date="2017"
            ),
            api_item("RPRT2222", "Report Work", "report", institution="NVIDIA", date="2022"),
            api_item("BKBK2222", "Book Work", "book", date="2015"),
            api_item("BLGG2222", "Blog Post", "blogPost", blogTitle="Some Blog", date="2021"),
        ],
    )
    entries = synced_bib(run, config)
    kinds = {
        key: (e["ENTRYTYPE"], e.get("booktitle") or e.get("journal") or e.get("school") or "")
        for key, e in entries.items()
    }
    assert kinds["lovelaceConferencePaper2020"] == ("inproceedings", "Proceedings of OSDI")
    assert kinds["lovelaceJournalArticle2019"] == ("article", "TOPLAS")
    assert kinds["lovelaceThesisWork2018"] == ("phdthesis", "MIT")
    assert kinds["lovelaceMasterWork2017"] == ("mastersthesis", "ETH")
    assert entries["lovelaceReportWork2022"]["ENTRYTYPE"] == "techreport"
    assert entries["lovelaceReportWork2022"]["institution"] == "NVIDIA"
    assert entries["lovelaceBookWork2015"]["ENTRYTYPE"] == "book"
    assert entries["lovelaceBlogPost2021"]["ENTRYTYPE"] == "misc"
    assert entries["lovelaceBlogPost2021"]["howpublished"] == "Some Blog"
    preprint = entries["lovelacePreprintPaper2024"]
    assert preprint["ENTRYTYPE"] == "misc"
    assert (preprint["eprint"], preprint["archiveprefix"]) == ("2401.01234", "arXiv")
    assert all(e["year"] for e in entries.values())


def test_better_bibtex_keys_win_and_every_key_is_unique(tmp_path: Path, run) -> None:
    """Citation Key from `extra` as it is; generated keys that collide take a, b, … by date added, so a
    paper added later never takes an older one's key."""
    same = dict(date="2020", creators=[{"creatorType": "author", "firstName": "Lin", "lastName": "Ma"}])
    objects = [
        api_item("BBTK2222", "Has A Key", extra="Citation Key: smith2020keyed\nother: x", **same),
        api_item("BBTX2222", "Broken Key", extra="Citation Key: has space, comma", **same),
        api_item("LDRR2222", "Rammer Compiler Design", **{**same, "dateAdded": "2020-01-01T00:00:00Z"}),
        api_item(
            "NEWR2222", "Rammer Compiler Design Revisited", **{**same, "dateAdded": "2023-01-01T00:00:00Z"}
        ),
        api_item("DUPK2222", "Also Keyed", extra="Citation Key: smith2020keyed", **same),
    ]
    entries = synced_bib(run, project_with(tmp_path, objects))
    titles = {key: as_text(entry["title"]) for key, entry in entries.items()}
    assert titles["smith2020keyed"] in {"Has A Key", "Also Keyed"}
    assert {titles["smith2020keyed"], titles["smith2020keyeda"]} == {"Has A Key", "Also Keyed"}
    assert titles["maBrokenKey2020"] == "Broken Key"
    assert titles["maRammerCompilerDesign2020"] == "Rammer Compiler Design"
    assert titles["maRammerCompilerDesign2020a"] == "Rammer Compiler Design Revisited"

    # a newer paper with the same author, year and first word: the older ones keep their keys
    objects.append(
        api_item("NEWS2222", "Rammer Compiler Design Again", **{**same, "dateAdded": "2025-01-01T00:00:00Z"})
    )
    write_json(tmp_path / "library.json", objects)
    again = synced_bib(run, tmp_path / "zotsync.yaml")
    assert {k: as_text(e["title"]) for k, e in again.items()} == {
        **titles,
        "maRammerCompilerDesign2020b": "Rammer Compiler Design Again",
    }


def test_a_papers_own_key_never_goes_to_another_paper(tmp_path: Path, run) -> None:
    """A and B both carry `dup`, C carries `dupa`: before, B took `dupa` as its suffixed key and C got
    `dupaa`, so `\\cite{dupa}` cited B. Every paper's own key is reserved before any suffix is given."""
    objects = [
        api_item(
            "AAAA2222", "Paper A", date="2020", extra="Citation Key: dup", dateAdded="2020-01-01T00:00:00Z"
        ),
        api_item(
            "BBBB2222", "Paper B", date="2020", extra="Citation Key: dup", dateAdded="2021-01-01T00:00:00Z"
        ),
        api_item(
            "CCCC2222", "Paper C", date="2020", extra="Citation Key: dupa", dateAdded="2022-01-01T00:00:00Z"
        ),
        # generated keys too: two papers wanting `lovelaceSame2020`, a third whose own is `lovelaceSame2020a`
        api_item("DDDD2222", "Same", date="2020", dateAdded="2020-01-01T00:00:00Z"),
        api_item("EEEE2222", "Same", date="2020", dateAdded="2021-01-01T00:00:00Z"),
        api_item("FFFF2222", "Other", date="2020", extra="Citation Key: lovelaceSame2020a"),
    ]
    entries = synced_bib(run, project_with(tmp_path, objects))
    titles = {key: as_text(entry["title"]) for key, entry in entries.items()}
    assert titles == {
        "dup": "Paper A",
        "dupa": "Paper C",
        "dupb": "Paper B",
        "lovelaceSame2020": "Same",
        "lovelaceSame2020a": "Other",
        "lovelaceSame2020b": "Same",
    }


def test_a_published_venue_enrichment_found_reaches_the_entry(
    tmp_path: Path, run, metadata_api, fake_time, monkeypatch
) -> None:
    """The page shows FlashAttention at NeurIPS'22 (DBLP knows its published version); the entry said
    `@misc … howpublished = {arXiv}`. It cites the venue the page shows, and keeps the arXiv id."""
    from factories import with_enrichment
    from metadata_server import MetadataServer, Paper

    monkeypatch.setattr(MetadataServer, "clock", fake_time)
    title = "FlashAttention: Fast and Memory-Efficient Exact Attention with IO-Awareness"
    server = metadata_api(
        Paper(
            title,
            ("Tri Dao", "Daniel Y. Fu"),
            "2022",
            "NeurIPS",
            dblp="conf/nips/DaoFERR22",
            arxiv="2205.14135",
        )
    )
    creators = [
        {"creatorType": "author", "firstName": "Tri", "lastName": "Dao"},
        {"creatorType": "author", "firstName": "Daniel Y.", "lastName": "Fu"},
    ]
    preprint = api_item(
        "FLSH2345",
        title,
        "preprint",
        creators=creators,
        date="2022-05-27",
        repository="arXiv",
        archiveID="arXiv:2205.14135",
        url="https://arxiv.org/abs/2205.14135",
    )
    config = with_enrichment(project_with(tmp_path, [preprint]), server.endpoints(), deadline=600)
    entries = synced_bib(run, config)
    assert "| NeurIPS'22 |" in (tmp_path / "out" / "catalog.md").read_text(encoding="utf-8")
    (entry,) = entries.values()
    assert entry["ENTRYTYPE"] == "inproceedings"
    assert entry["booktitle"] == "NeurIPS'22" and "howpublished" not in entry
    assert (entry["eprint"], entry["archiveprefix"]) == ("2205.14135", "arXiv")


def test_an_entry_whose_type_needs_a_venue_the_page_lacks_is_a_misc(tmp_path: Path, run) -> None:
    """A conference paper or journal article without a venue in Zotero or on the page: BibTeX warned of an
    empty booktitle or journal. It is a @misc, which needs none; with a venue it keeps its type."""
    config = project_with(
        tmp_path,
        [
            api_item("NVNC2345", "No Venue Conference", "conferencePaper", date="2020"),
            api_item("NVNJ2345", "No Venue Journal", date="2020"),
            api_item("VNCF2345", "Venue Conference", "conferencePaper", date="2020", conferenceName="OSDI"),
        ],
    )
    kinds = {key: entry["ENTRYTYPE"] for key, entry in synced_bib(run, config).items()}
    assert kinds == {
        "lovelaceVenueConference2020": "inproceedings",
        "lovelaceNoVenueConference2020": "misc",
        "lovelaceNoVenueJournal2020": "misc",
    }


def test_bib_scope_library_is_the_whole_library_under_the_pages_exclusions(tmp_path: Path, run) -> None:
    """`exports.bib_scope: library` (for a thesis): every paper of the library, not only the curated
    page's, and never one an excluded collection or tag keeps off the page. The page stays as it is."""
    from factories import api_collection

    objects = [
        api_collection("TPCX2345", "Topic"),
        api_collection("THRX2345", "Other"),
        api_collection("PRVX2345", "Private"),
        api_collection("RVWX2345", "Reviewing", parent="PRVX2345"),
        api_item("TPCP2345", "On The Page", date="2020", collections=["TPCX2345"]),
        api_item("THRP2345", "Elsewhere In The Library", date="2021", collections=["THRX2345"]),
        api_item("NFLP2345", "Filed Nowhere", date="2022"),
        api_item("PRVP2345", "Confidential Manuscript", date="2023", collections=["RVWX2345"]),
        api_item("TGDP2345", "Still To Curate", date="2024", collections=["THRX2345"], tags=["to-curate"]),
    ]
    config = project_with(tmp_path, objects, "categories:\n  - name: Topic\n    entries: []\n")
    settings = "  scope: curated\n  exclude_collections: [Private]\n  exclude_tags: [to-curate]\n"
    config.write_text(config.read_text(encoding="utf-8") + settings, encoding="utf-8")
    assert {as_text(e["title"]) for e in synced_bib(run, config).values()} == {"On The Page"}
    page = (tmp_path / "out" / "catalog.md").read_text(encoding="utf-8")
    assert "On The Page" in page and "Elsewhere In The Library" not in page

    config.write_text(config.read_text(encoding="utf-8") + "  bib_scope: library\n", encoding="utf-8")
    titles = {as_text(e["title"]) for e in synced_bib(run, config).values()}
    assert titles == {"On The Page", "Elsewhere In The Library", "Filed Nowhere"}
    assert (tmp_path / "out" / "catalog.md").read_text(encoding="utf-8") == page


def test_a_curated_entry_without_an_item_gets_a_key_from_its_own_fields(tmp_path: Path, run) -> None:
    config = project_with(
        tmp_path,
        [],
        "categories:\n  - name: Mine\n    entries:\n"
        "      - {title: 'The Unmatched Paper', venue: OSDI'20, year: '2020', url: 'https://example.org/p'}\n",
    )
    entries = synced_bib(run, config)
    assert list(entries) == ["UnmatchedPaper2020"]
    entry = entries["UnmatchedPaper2020"]
    assert (
        entry["ENTRYTYPE"] == "misc" and entry["year"] == "2020" and entry["url"] == "https://example.org/p"
    )
    assert entry["howpublished"] == "OSDI'20"


HOSTILE = [
    "Gómez & Ñandú: 100% {braces} } unbalanced { $x$ #1 a_b ^~ <> | \\ back",
    "Łukasz Dvořák ß ø — “quoted” 中文 😀 Ελληνικά",
    "@misc{evil, title={x}} \\input{/etc/passwd} %comment",
    "Line\nbreak\tand\x1b[31m escape\u202e",
    "GPU TensorIR A100 and, or",
]


def hostile_library() -> tuple[Page, Library]:
    items, rows = [], []
    from factories import placement

    for n, title in enumerate(HOSTILE):
        key = f"HSTL{n + 2}{n + 2}{n + 2}{n + 2}"
        creators = [
            {"creatorType": "author", "firstName": "Émile {x}", "lastName": f"Zoë-{n} and Co, Jr"},
            {"creatorType": "author", "name": "Research & Development {Group}"},
        ]
        items.append(
            Item.from_api(api_item(key, title, creators=creators, date="2020", DOI="10.1000/a_b{c}%"))
        )
        rows.append(placement(title=title, zotero_key=key, year="2020", doi="10.1000/a_b{c}%"))
    return Page("t", "", rows), Library(tuple(items))


def test_biber_reads_every_entry_as_the_data_it_is(tmp_path: Path, biber: Path) -> None:
    page, library = hostile_library()
    bib = tmp_path / "catalog.bib"
    bib.write_text(render_page("bib", page, library), encoding="utf-8")
    done = subprocess.run(
        [str(biber), "--tool", "--quiet", f"--output-file={tmp_path / 'out.bib'}", str(bib)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ERROR" not in done.stdout + done.stderr and "WARN" not in done.stdout + done.stderr
    read = {e["ID"]: e for e in parse((tmp_path / "out.bib").read_text(encoding="utf-8")).entries}
    assert len(read) == len(HOSTILE)
    # biber gives letters back as Unicode and keeps LaTeX's specials as commands: decode those, and
    # every title is the data, on one line
    got = sorted(as_text(entry["title"]) for entry in read.values())
    assert got == sorted(flatten(title) for title in HOSTILE)
    for entry in read.values():  # two authors, whatever their names hold
        names = top_level_names(entry["author"])
        assert len(names) == 2 and names[1].startswith("{Research")


def top_level_names(value: str) -> list[str]:
    """The names of a name list: split at ` and ` outside braces, as BibTeX splits them."""
    names, depth, start = [], 0, 0
    for n, char in enumerate(value):
        depth += {"{": 1, "}": -1}.get(char, 0)
        if depth == 0 and value[n : n + 5].lower() == " and ":
            names.append(value[start:n])
            start = n + 5
    return [*names, value[start:]]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    titles=st.lists(st.text(st.characters(codec="utf-8"), max_size=40), min_size=1, max_size=5),
    last=st.text(st.characters(codec="utf-8"), max_size=15),
)
@example(titles=["_A", "x_TPU"], last="")  # an escape before a capital: once braced into `\{_A}`
def test_bibtexparser_reads_back_every_entry_whatever_the_text(titles: list[str], last: str) -> None:
    from factories import placement

    items, rows = [], []
    for n, title in enumerate(titles):
        key = f"PRPT{n + 2}{n + 2}{n + 2}{n + 2}"
        creators = [{"creatorType": "author", "firstName": "A", "lastName": last}]
        data = dict(creators=creators, url=f"https://x.org/{title}", publicationTitle="J")
        items.append(Item.from_api(api_item(key, title, **data)))
        rows.append(placement(title=title, zotero_key=key, url=f"https://x.org/{title}"))
    text = render_page("bib", Page("t", "", rows), Library(tuple(items)))
    entries = parse(text).entries
    assert len(entries) == len(titles)
    assert len({e["ID"] for e in entries}) == len(titles)
    for entry in entries:
        assert entry["ENTRYTYPE"] == "article"
        assert "\n" not in entry.get("title", "") and " " not in entry["url"]
    # ASCII text typesets as written, LaTeX's specials included
    shown = [as_text(entry.get("title", "")) for entry in entries]
    for title in titles:
        if title.isascii() and flatten(title):
            assert flatten(title) in shown
