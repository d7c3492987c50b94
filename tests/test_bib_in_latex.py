"""catalog.bib in a LaTeX document, as a thesis would cite from it: BibTeX with natbib, and biber with
biblatex, then pdflatex. TeX reads `^^5c` as a backslash and `^^7b`/`^^7d` as braces wherever it reads
its input, so a URL, DOI, arXiv id or key holding `^^5cinput^^7b<file>^^7d` could read a file into the
PDF. Nothing from Zotero may: the .log would name the file, and its message would show there."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import CHECKERS_REQUIRED, write_config
from factories import api_item, config_of, write_json

# The file a hostile field would read: a message in the .log and a word in the PDF if it is read.
SECRET = "zotsyncsecret"
READ = "ZOTSYNC-SECRET-WAS-READ"
PAYLOAD = f"^^5cinput^^7b{SECRET}^^7d"

# The documents: natbib's own fallbacks for `\url` and `\doi` (plain arguments: the route by which TeX
# read the file), natbib with the url package (read verbatim), and biblatex with biber.
DOCUMENTS = {
    "natbib": (
        "bibtex",
        "natbib.sty",
        r"\usepackage[numbers]{natbib}",
        r"\bibliographystyle{plainnat}\bibliography{catalog}",
    ),
    "natbib+url": (
        "bibtex",
        "url.sty",
        r"\usepackage[numbers]{natbib}\usepackage{url}",
        r"\bibliographystyle{plainnat}\bibliography{catalog}",
    ),
    "biblatex": (
        "biber",
        "biblatex.sty",
        r"\usepackage[backend=biber]{biblatex}\addbibresource{catalog.bib}",
        r"\printbibliography",
    ),
}


def document(name: str, key: str) -> str:
    _, _, preamble, bibliography = DOCUMENTS[name]
    body = f"\\begin{{document}}\n\\nocite{{{key}}}\n{bibliography}\n\\end{{document}}\n"
    return f"\\documentclass{{article}}\n{preamble}\n{body}"


def tex_tools(name: str) -> str:
    """The document `name`'s bibliography program, once pdflatex, it and the package are found: else the
    test skips (or fails, where .ci/run installed them)."""
    backend, package, _, _ = DOCUMENTS[name]
    missing = [tool for tool in ("pdflatex", "kpsewhich", backend) if shutil.which(tool) is None]
    if not missing and not subprocess.run(["kpsewhich", package], capture_output=True, text=True).stdout:
        missing.append(package)
    if missing and CHECKERS_REQUIRED:
        pytest.fail(f"{', '.join(missing)} missing, and ZOTSYNC_CHECKERS=required")
    if missing:
        pytest.skip(f"{', '.join(missing)} missing (.ci/run installs them)")
    return backend


def hostile_bib(folder: Path, run) -> Path:
    """catalog.bib of papers carrying the payload in their URL, DOI, arXiv id and Better BibTeX key."""
    objects = [
        api_item("URLX2345", "Hostile Link", date="2020", url=f"https://example.org/{PAYLOAD}"),
        api_item("DIXX2345", "Hostile Identifier", date="2021", DOI=f"10.1234/{PAYLOAD}"),
        api_item(
            "ARXV2345",
            "Hostile Preprint",
            "preprint",
            date="2022",
            archiveID=f"arXiv:2201.00001{PAYLOAD}",
            extra=f"arXiv: 2201.00001{PAYLOAD}",
        ),
        api_item("KEYX2345", "Hostile Key", date="2023", extra=f"Citation Key: key{PAYLOAD}"),
        api_item("CKEY2345", "Native Hostile Key", date="2024", citationKey=f"native{PAYLOAD}"),
    ]
    folder.mkdir()
    write_json(folder / "library.json", objects)
    (folder / "catalog.yaml").write_text("categories: []\n", encoding="utf-8")
    config = write_config(
        folder,
        "source: {type: snapshot, path: library.json}\ncatalog: catalog.yaml\nstore: store.sqlite\n"
        "exports:\n  dir: out\n  formats: [bib]\n",
    )
    result = run("-q", "--config", str(config), "sync")
    assert result.code == 0, result.err
    return folder / "out" / "catalog.bib"


@pytest.mark.parametrize("name", list(DOCUMENTS))
def test_no_field_or_key_reads_a_file_into_the_pdf(tmp_path: Path, run, name: str) -> None:
    """One document per paper, citing it alone: TeX stops reading a bibliography at its first error, and
    each paper's payload must be read for the test to mean anything."""
    backend = tex_tools(name)
    bib = hostile_bib(tmp_path / "project", run)
    keys = re.findall(r"^@\w+\{(.*),$", bib.read_text(encoding="utf-8"), re.MULTILINE)
    assert len(keys) == 5
    for n, key in enumerate(keys):
        work = tmp_path / f"paper{n}"
        work.mkdir()
        shutil.copy(bib, work / "catalog.bib")
        (work / f"{SECRET}.tex").write_text(f"\\message{{{READ}}}{READ}\n", encoding="utf-8")
        (work / "paper.tex").write_text(document(name, key), encoding="utf-8")
        latex = ["pdflatex", "-interaction=nonstopmode", "-no-shell-escape", "paper.tex"]
        for command in (latex, [backend, "paper"], latex):
            subprocess.run(command, cwd=work, capture_output=True, timeout=300, check=False)
        log = (work / "paper.log").read_text(encoding="latin-1")
        bbl = (work / "paper.bbl").read_text(encoding="utf-8")
        assert READ not in log and f"{SECRET}.tex" not in log, (key, log[-3000:])
        assert (work / "paper.pdf").exists(), log[-3000:]
        assert bbl.count("\\bibitem[" if backend == "bibtex" else "\\entry{") == 1, bbl
        if name != "natbib":  # without the url package, natbib's `\\url{…}` cannot typeset a `%`
            assert not re.search(r"^! ", log, re.MULTILINE), (key, log[-3000:])


def test_bibtex_finds_every_venue_the_demos_entries_need(tmp_path: Path, project: Path, run) -> None:
    """Before, six conference papers and a journal article of the demo had no venue in Zotero nor on the
    page: BibTeX warned `empty booktitle` and `empty journal`. Each is a @misc now, which needs none."""
    backend = tex_tools("natbib+url")
    assert run("-q", "--config", config_of(project), "pull").code == 0
    bib = run("--config", config_of(project), "export", "--format", "bib", "--output", "-")
    assert bib.code == 0, bib.err
    work = tmp_path / "latex"
    work.mkdir()
    (work / "catalog.bib").write_text(bib.out, encoding="utf-8")
    (work / "paper.tex").write_text(document("natbib+url", "*"), encoding="utf-8")
    subprocess.run(["pdflatex", "-interaction=nonstopmode", "paper.tex"], cwd=work, capture_output=True)
    done = subprocess.run([backend, "paper"], cwd=work, capture_output=True, text=True)
    assert (work / "paper.bbl").read_text(encoding="utf-8").count("\\bibitem[") == 64
    assert not re.findall(r"Warning--empty (?:booktitle|journal) in \S+", done.stdout), done.stdout
