"""catalog.bib: the papers on the page as BibTeX, one entry per paper, for BibTeX and biber alike.

The writer is bibtexparser 1.x's (`BibTexWriter`), which pyzotero already brings and pins below 2, and
its table of Unicode characters in LaTeX (`latexenc`); what makes a value safe is done here, because no
writer does it: every LaTeX special character is written as a command, a brace in the data as
`\\textbraceleft{}` (BibTeX counts `\\{` as a brace too), a non-ASCII letter with a LaTeX form as a
braced special character (`{\\'e}`: what BibTeX sorts, purifies and abbreviates right), any other
non-ASCII text (CJK) as UTF-8, which biber reads and BibTeX passes through. Data is text: nothing in a
title becomes a LaTeX command.

Keys: the item's Better BibTeX citation key (`Citation Key: …` in `extra`) when it is one BibTeX can
read, else `authorYearWord` (`ma2020rammer`) made from the first author's family name, the year and the
first word of the title that is not a stop word. Keys are unique in the file: a key taken twice gets
`a`, `b`, … in the order the papers came into Zotero (`dateAdded`, then the item key), so a new paper
never changes the key of one already listed.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from bibtexparser.bibdatabase import BibDatabase
from bibtexparser.bwriter import BibTexWriter
from bibtexparser.latexenc import unicode_to_latex_map

from .. import normalize
from ..formats import Exporter, Needs, Output
from ..model import Creator, Item, Placement, venue_year
from ..text import flatten
from .base import ExportInput

# Zotero item type → BibTeX entry type; any other type is @misc.
ENTRY_TYPES = {
    "journalArticle": "article",
    "magazineArticle": "article",
    "newspaperArticle": "article",
    "conferencePaper": "inproceedings",
    "book": "book",
    "bookSection": "incollection",
    "encyclopediaArticle": "incollection",
    "dictionaryEntry": "incollection",
    "thesis": "phdthesis",
    "report": "techreport",
    "manuscript": "unpublished",
    "preprint": "misc",
}
# Where each entry type names the venue, and the Zotero fields that hold it, strongest first.
VENUE_FIELD = {
    "article": ("journal", ("publicationTitle",)),
    "inproceedings": ("booktitle", ("proceedingsTitle", "publicationTitle", "conferenceName")),
    "incollection": ("booktitle", ("bookTitle", "publicationTitle", "encyclopediaTitle", "dictionaryTitle")),
    "phdthesis": ("school", ("university", "publisher")),
    "mastersthesis": ("school", ("university", "publisher")),
    "techreport": ("institution", ("institution", "publisher")),
    "misc": ("howpublished", ("repository", "websiteTitle", "blogTitle", "publicationTitle")),
    "book": ("publisher", ("publisher",)),
    "unpublished": ("note", ()),
}
FIELD_ORDER = ["author", "editor", "title", "journal", "booktitle", "school", "institution", "publisher"]
FIELD_ORDER += ["howpublished", "year", "doi", "url", "eprint", "archiveprefix", "note"]

# -- values ------------------------------------------------------------------------------------------

# LaTeX's special characters (and those OT1 prints as other glyphs), as text commands. A brace becomes a
# command: BibTeX balances braces even behind a backslash, so `\{` in a value would unbalance it.
_ASCII_SPECIAL = {
    "\\": "\\textbackslash{}",
    "{": "\\textbraceleft{}",
    "}": "\\textbraceright{}",
    "$": "\\$",
    "&": "\\&",
    "%": "\\%",
    "#": "\\#",
    "_": "\\_",
    "^": "\\^{}",
    "~": "\\~{}",
    "<": "\\textless{}",
    ">": "\\textgreater{}",
    "|": "\\textbar{}",
}
_NEEDS_WORK = re.compile(r"[\\{}$&%#_^~<>|]|[^\x00-\x7f]")


def latex(text: str) -> str:
    """`text` as the text of a BibTeX value: one line, every special character a command, a non-ASCII
    letter as braced LaTeX where LaTeX has a special character for it (`{\\'e}`), the rest as UTF-8."""
    text = flatten(text)
    if not _NEEDS_WORK.search(text):
        return text
    return "".join(_char(char) for char in unicodedata.normalize("NFC", text))


def _char(char: str) -> str:
    if char < "\x80":
        return _ASCII_SPECIAL.get(char, char)
    return _LETTERS.get(char, char)


# A letter as a BibTeX special character: an accent and a letter, or a letter's own command, braced
# (`{\'e}`, `{\v r}`, `{\ss}`, `{\L}`): bibtexparser's table for Latin letters, less the forms in
# math or in a font encoding of their own. Every other character (CJK, Greek, symbols) stays UTF-8.
_SPECIAL_FORM = re.compile(r"\{\\(?:[`'^\"~=.] ?|[uvHckrdb] )\\?[A-Za-z]\}|\{\\[A-Za-z]{1,2}\}")
_LETTERS = {
    char: form
    for char, form in unicode_to_latex_map.items()
    if len(char) == 1 and unicodedata.name(char, "").startswith("LATIN ") and _SPECIAL_FORM.fullmatch(form)
}


# A word to keep as it is written when a style changes the title's case: one with a capital past its
# first letter (GPU, TensorIR, MegaKernel) or a digit next to letters (A100, H100).
_PROTECT = re.compile(r"\b(?=\w*[A-Z])\w+[A-Z0-9]\w*\b|\b[A-Z]\w*\d\w*\b")


def title_value(title: str) -> str:
    """A title with its acronyms and inner capitals braced, so a style's sentence case keeps them."""
    escaped = latex(title)
    if "{" in escaped or "\\" in escaped:  # commands: protect words in the plain stretches only (a brace
        # put inside a command, `\{_A}` for `\_A`, would turn it into a literal brace)
        parts = re.split(r"(\{[^{}]*\}|\\[A-Za-z]+\{\}|\\.)", escaped)
        return "".join(part if i % 2 else _protect(part) for i, part in enumerate(parts))
    return _protect(escaped)


def _protect(text: str) -> str:
    return _PROTECT.sub(lambda m: "{" + m.group(0) + "}", text)


def verbatim(text: str) -> str:
    """A URL or DOI: written as it is (biblatex and the url package read it verbatim), with what would
    break the value — braces, a backslash, spaces, `%` — percent-encoded."""
    text = flatten(text).strip()
    return re.sub(r"[{}\\ %]", lambda m: f"%{ord(m.group(0)):02X}", text)


def names(creators: Sequence[Creator]) -> str:
    """`Last, First and Last, First`; a one-field name (an organisation) braced, so it stays one name."""
    return " and ".join(_name(c) for c in creators)


def _name(creator: Creator) -> str:
    if creator.name or not creator.first_name:
        return "{" + latex(creator.name or creator.last_name) + "}"
    last, first = latex(creator.last_name), latex(creator.first_name)
    # A comma or an `and` inside a part would split the name: brace that part.
    last = "{" + last + "}" if _SPLITS.search(last) else last
    first = "{" + first + "}" if _SPLITS.search(first) else first
    return f"{last}, {first}"


_SPLITS = re.compile(r",|\band\b", re.IGNORECASE)

# -- keys --------------------------------------------------------------------------------------------

# A Better BibTeX key BibTeX and biber both read: printable ASCII without what ends or splits a key.
_VALID_KEY = re.compile(r"[!-~]+")
_KEY_BREAKERS = re.compile(r"[,{}()=#%\"'\\~]")
_STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "on",
        "in",
        "at",
        "to",
        "for",
        "and",
        "or",
        "with",
        "by",
        "from",
        "via",
        "into",
        "towards",
        "toward",
        "is",
        "are",
        "be",
        "as",
        "its",
    ]
)


def citation_key(item: Item | None) -> str:
    """The item's Better BibTeX key from `extra`, or "" when it has none BibTeX can read."""
    key = item.extra_field("Citation Key") if item is not None else ""
    return key if _VALID_KEY.fullmatch(key) and not _KEY_BREAKERS.search(key) else ""


def generated_key(family_name: str, year: str, title: str) -> str:
    """`authorYearWord`, in ASCII letters and digits: `ma2020rammer`; `paper` when all three are empty."""
    word = next((w for w in _words(title) if w not in _STOP_WORDS), "")
    return (_ascii(family_name) + _ascii(year) + word) or "paper"


def _ascii(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text.translate(_LIGATURES))
    return re.sub(r"[^a-z0-9]", "", decomposed.casefold())


_LIGATURES = str.maketrans({"ß": "ss", "æ": "ae", "Æ": "AE", "ø": "o", "Ø": "O", "ł": "l", "Ł": "L"})


def _words(title: str) -> list[str]:
    return [w for w in (_ascii(part) for part in re.split(r"[\s\-–—:/]+", title)) if w]


def _suffix(n: int) -> str:
    """0 → a, 25 → z, 26 → aa: the letters a second, third, … holder of a key gets."""
    letters = ""
    n += 1
    while n:
        n, rest = divmod(n - 1, 26)
        letters = chr(ord("a") + rest) + letters
    return letters


# -- entries -----------------------------------------------------------------------------------------


@dataclass(slots=True)
class Paper:
    """One paper of the page: its first row, the Zotero item when it has one, and where it sorts among
    papers wanting the same key."""

    row: Placement
    item: Item | None

    @property
    def seniority(self) -> tuple[int, str, str]:
        """Older papers keep the plain key: Zotero's date added, then its key; curated-only ones last."""
        if self.item is None:
            return (1, "", self.row.title)
        return (0, self.item.get("dateAdded"), self.item.key)


def papers(rows: Sequence[Placement], items: dict[str, Item]) -> list[Paper]:
    """The page's papers, each once, in page order: a paper is its Zotero item, else its title."""
    seen: dict[str, Paper] = {}
    for row in rows:
        identity = f"key:{row.zotero_key}" if row.zotero_key else "title:" + normalize.title(row.title)
        if identity not in seen:
            seen[identity] = Paper(row, items.get(row.zotero_key) if row.zotero_key else None)
    return list(seen.values())


def assign_keys(found: Sequence[Paper]) -> list[str]:
    """A unique key per paper: Better BibTeX's keys first, then the generated ones, each group in order
    of seniority; a key already taken gets the first free suffix (`a`, `b`, …)."""
    wanted = [citation_key(p.item) for p in found]
    generated = [not key for key in wanted]
    for n, paper in enumerate(found):
        if generated[n]:
            wanted[n] = generated_key(_first_author(paper), _year(paper), paper.row.title)
    taken: set[str] = set()
    keys = [""] * len(found)
    for n in sorted(range(len(found)), key=lambda n: (generated[n], found[n].seniority)):
        key, count = wanted[n], 0
        while key in taken:
            key, count = wanted[n] + _suffix(count), count + 1
        keys[n] = key
        taken.add(key)
    return keys


def _year(paper: Paper) -> str:
    """The row's year; for a curated entry without an item, the one its venue names (`OSDI'20`)."""
    return paper.row.year or (venue_year(paper.row.venue) if paper.item is None else "")


def _first_author(paper: Paper) -> str:
    if paper.item is not None and paper.item.creators:
        return paper.item.first_family
    return paper.row.authors[0].split(",")[0] if paper.row.authors else ""


def entry(paper: Paper) -> dict[str, str]:
    """The BibTeX fields of one paper (bibtexparser's form: `ENTRYTYPE` and the fields)."""
    item, row = paper.item, paper.row
    kind = ENTRY_TYPES.get(item.item_type, "misc") if item is not None else "misc"
    if kind == "phdthesis" and item is not None and "master" in item.get("thesisType").casefold():
        kind = "mastersthesis"
    fields: dict[str, str] = {"ENTRYTYPE": kind}
    if item is not None:
        authors = [c for c in item.creators if c.creator_type == "author"]
        editors = [c for c in item.creators if c.creator_type == "editor"]
        if authors:
            fields["author"] = names(authors)
        if editors:
            fields["editor"] = names(editors)
    elif row.authors:
        fields["author"] = " and ".join(_shown_name(name) for name in row.authors)
    if row.title.strip():
        fields["title"] = title_value(row.title)
    venue_field, sources = VENUE_FIELD.get(kind, ("howpublished", ()))
    venue = next((v for s in sources if item is not None and (v := item.get(s).strip())), "") or row.venue
    if venue.strip():
        fields[venue_field] = latex(venue)
    if year := _year(paper):
        fields["year"] = latex(year)
    doi = normalize.doi_name(row.doi)
    if doi:
        fields["doi"] = verbatim(doi)
    if row.url.strip():
        fields["url"] = verbatim(row.url)
    arxiv = _arxiv(item, row)
    if arxiv:
        fields["eprint"] = verbatim(arxiv)
        fields["archiveprefix"] = "arXiv"
    if kind == "unpublished" and "note" not in fields:
        fields["note"] = "Unpublished"  # @unpublished requires a note
    return fields


def _shown_name(display: str) -> str:
    last, _, first = display.partition(", ")
    if not first:
        return "{" + latex(last) + "}"
    return f"{latex(last)}, {latex(first)}"


def _arxiv(item: Item | None, row: Placement) -> str:
    sources = [row.url, row.doi]
    if item is not None:
        sources = [item.get("archiveID"), item.extra_field("arXiv"), *sources]
    for source in sources:
        if source and ("arxiv" in source.casefold() or source[:1].isdigit()):
            found = normalize.arxiv(source)
            if found and not found.startswith("10."):
                return found
    return ""


def render_bibtex(rows: Sequence[Placement], items: Sequence[Item]) -> str:
    """The BibTeX file of the page's papers, sorted by key."""
    by_key = {item.key: item for item in items}
    found = papers(rows, by_key)
    keys = assign_keys(found)
    database = BibDatabase()
    database.entries = sorted(
        ({"ID": key, **entry(paper)} for key, paper in zip(keys, found, strict=True)),
        key=lambda e: e["ID"],
    )
    writer = BibTexWriter()
    writer.indent = "  "
    writer.order_entries_by = None  # sorted above: BibTexWriter would sort by type first
    writer.display_order = FIELD_ORDER
    writer.add_trailing_comma = True
    return writer.write(database)


def _outputs(given: ExportInput) -> Iterator[Output]:
    yield Output(PurePosixPath(EXPORTER.page), render_bibtex(given.page.rows, given.library.items))


EXPORTER = Exporter(
    name="bib",
    summary="the papers on the page as BibTeX: one entry per paper, Better BibTeX's keys where set",
    page="catalog.bib",
    render=_outputs,
    needs=Needs.CREATORS,
)
