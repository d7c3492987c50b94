"""catalog.bib: the papers on the page as BibTeX, one entry per paper, for BibTeX and biber alike.

The writer is bibtexparser 1.x's (`BibTexWriter`), which pyzotero already brings and pins below 2, and
its table of Unicode characters in LaTeX (`latexenc`); what makes a value safe is done here, because no
writer does it: every LaTeX special character is written as a command, a brace in the data as
`\\textbraceleft{}` (BibTeX counts `\\{` as a brace too), a non-ASCII letter with a LaTeX form as a
braced special character (`{\\'e}`: what BibTeX sorts, purifies and abbreviates right), any other
non-ASCII text (CJK) as UTF-8, which biber reads and BibTeX passes through. Data is text: nothing in a
title becomes a LaTeX command.

Keys: the item's Better BibTeX citation key (Zotero 7's `citationKey` field, else `Citation Key: …` in
`extra`) when it is one BibTeX can read and TeX cannot be tricked by, else the key Better BibTeX's
default formula gives (`auth.lower + shorttitle(3,3) + year`: `maRammerEnablingHolistic2020`). Keys are
unique in the file: every paper's own key is reserved first; a key taken twice gets `a`, `b`, … in the
order the papers came into Zotero (`dateAdded`, then the item key), so a new paper
never changes the key of one already listed.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from anyascii import anyascii
from bibtexparser.bibdatabase import BibDatabase
from bibtexparser.bwriter import BibTexWriter
from bibtexparser.latexenc import unicode_to_latex_map

from .. import normalize
from ..formats import Exporter, Needs, Output
from ..model import Creator, Item, Placement, is_preprint, venue_year
from ..secrets import excerpt
from ..text import flatten
from .base import ExportInput
from .mdtext import link_target, safe_target

log = logging.getLogger("zotsync")

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
    """A URL, DOI or arXiv id: written as it is (biblatex and the url package read it verbatim), with what
    would break the value or make TeX read a command percent-encoded: braces, a backslash, spaces, `%`,
    `^` (TeX reads `^^5c` as a backslash and `^^7b` as a brace wherever no verbatim reading is
    guaranteed: natbib's styles write `\\doi{…}` and `\\url{…}` as plain arguments without the url package)
    and `~` (active: a space there). Both encodings name the same URL; `#`, `&`, `$`, `_` stay, as
    encoding them would change a URL, and none can make a command."""
    text = flatten(text).strip()
    return _NOT_VERBATIM.sub(lambda m: f"%{ord(m.group(0)):02X}", text)


_NOT_VERBATIM = re.compile(r"[{}\\ %^~]")


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

# A Better BibTeX key BibTeX and biber both read: printable ASCII without what ends or splits a key,
# nor what makes TeX read something else (`^^5c` is a backslash in `\bibitem{…}` and biblatex's
# `\entry{…}`, `$` `&` switch modes).
_VALID_KEY = re.compile(r"[!-~]+")
_KEY_BREAKERS = re.compile(r"[,{}()=#%\"'\\~^$&]")
# Better BibTeX's skip words (its `skipWords` preference, as it ships): not taken into a generated key.
_BBT_SKIP_WORDS = (
    "a,ab,aboard,about,above,across,after,against,al,along,amid,among,an,and,anti,around,as,at,before,"
    "behind,below,beneath,beside,besides,between,beyond,but,by,d,da,das,de,del,dell,dello,dei,degli,della,"
    "dell,delle,dem,den,der,des,despite,die,do,down,du,during,ein,eine,einem,einen,einer,eines,el,en,et,"
    "except,for,from,gli,i,il,in,inside,into,is,l,la,las,le,les,like,lo,los,near,nor,of,off,on,onto,or,"
    "over,past,per,plus,round,save,since,so,some,sur,than,the,through,to,toward,towards,un,una,unas,under,"
    "underneath,une,unlike,uno,unos,until,up,upon,versus,via,von,while,with,within,without,yet,zu,zum"
)
_SKIP_WORDS = frozenset(_BBT_SKIP_WORDS.split(","))


def better_bibtex_key(item: Item | None) -> str:
    """The key Better BibTeX gave the item: Zotero 7's own `citationKey` field, else `Citation Key:` in
    `extra`; "" when it has neither."""
    return (item.get("citationKey").strip() or item.extra_field("Citation Key")) if item is not None else ""


def citation_key(item: Item | None) -> str:
    """The item's Better BibTeX key when it is one BibTeX can read and TeX cannot be tricked by, else ""."""
    key = better_bibtex_key(item)
    return key if _VALID_KEY.fullmatch(key) and not _KEY_BREAKERS.search(key) else ""


def generated_key(family_name: str, year: str, title: str) -> str:
    """Better BibTeX's default key, `auth.lower + shorttitle(3,3) + year`: the first author's family
    name in lower case, the title's first three words that are not skip words (nor one letter), each
    with a capital first letter, and the year, in ASCII (`maRammerEnablingHolistic2020`; 张 gives `zhang`,
    as BBT's transliteration does). A key never starts with a digit: `paper2020` when the name and the
    title give no letter."""
    author = anyascii(family_name).lower()
    short = "".join(word[:1].upper() + word[1:] for word in _title_words(title)[:3])
    key = _NOT_IN_KEY.sub("", author + short + year)
    return key if key[:1].isalpha() else "paper" + key


_NOT_IN_KEY = re.compile(r"[^A-Za-z0-9-]+")
# What Better BibTeX reads a title's words by: markup dropped, `/` and `:` split words, punctuation around
# and inside a word dropped (dashes too: `tile-graph` is one word, `tilegraph`).
_TITLE_MARKUP = re.compile(r"</?(?:i|b|sc|nc|code|span[^>]*)>|\"", re.IGNORECASE)
_PUNCTUATION = frozenset(("Pd", "Pe", "Pf", "Pi", "Po", "Ps"))


def _title_words(title: str) -> list[str]:
    words = []
    for term in _TITLE_MARKUP.sub("", title).replace("/", " ").replace(":", " ").split():
        word = "".join(c for c in term if unicodedata.category(c) not in _PUNCTUATION)
        if not word or word.casefold() in _SKIP_WORDS:
            continue
        if len(word) == 1 and not word.isdigit() and not _CJK.match(word):
            continue
        word = anyascii(word)
        if word and word.casefold() not in _SKIP_WORDS:
            words.append(word)
    return words


_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff]")


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
    """A unique key per paper. Every paper's own key is reserved first (Better BibTeX's, then the
    generated ones, each group in order of seniority): the most senior paper wanting a key holds it.
    Only then do the others get the first free suffix (`a`, `b`, …), among keys no paper holds, so a
    suffix never takes another paper's own key (`dup`, `dup` and `dupa` give `dup`, `dupb`, `dupa`)."""
    wanted = [citation_key(p.item) for p in found]
    generated = [not key for key in wanted]
    for n, paper in enumerate(found):
        if generated[n]:
            wanted[n] = generated_key(_first_author(paper), _year(paper), paper.row.title)
    order = sorted(range(len(found)), key=lambda n: (generated[n], found[n].seniority))
    keys = [""] * len(found)
    taken: set[str] = set()
    for n in order:
        if wanted[n] not in taken:
            keys[n] = wanted[n]
            taken.add(wanted[n])
    for n in order:
        if not keys[n]:
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
    kind, venue = kind_and_venue(paper)
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
    if venue.strip():
        fields[VENUE_FIELD.get(kind, ("howpublished", ()))[0]] = latex(venue)
    if year := _year(paper):
        fields["year"] = latex(year)
    doi = normalize.doi_name(row.doi)
    if doi:
        fields["doi"] = verbatim(doi)
    # a link only where the page would link it: a PDF made from the entry must not carry `javascript:`
    if row.url.strip() and safe_target(link_target(row.url)):
        fields["url"] = verbatim(row.url)
    arxiv = _arxiv(item, row)
    if arxiv:
        fields["eprint"] = verbatim(arxiv)
        fields["archiveprefix"] = "arXiv"
    if row.retracted:  # a reader citing it should know; plain words, which every style prints
        fields["note"] = "Retracted"
    if kind == "unpublished" and "note" not in fields:
        fields["note"] = "Unpublished"  # @unpublished requires a note
    return fields


# The types BibTeX's styles cannot print without their venue (they warn of an empty journal or booktitle).
_NEEDS_VENUE = frozenset({"article", "inproceedings", "incollection"})
# Where a row's venue came from when it was neither Zotero nor the catalogue: a metadata service.
_NOT_A_SERVICE = frozenset({"", "zotero", "curated"})
# A published venue that names a journal (the entry is then an @article, else an @inproceedings).
_JOURNAL = re.compile(r"\b(?:journal|transactions|letters|magazine|review)\b", re.IGNORECASE)


def kind_and_venue(paper: Paper) -> tuple[str, str]:
    """The entry type and its venue. The type is Zotero's item type's, the venue Zotero's own field for
    it, else what the page shows. Two exceptions, so the entry says what the page says: a preprint whose
    published venue a metadata service found cites that venue (`NeurIPS'22`, not `@misc … arXiv`), and
    a type that needs a venue (@article, @inproceedings, @incollection) for a paper the page shows none
    for is a @misc, which needs none."""
    item, row = paper.item, paper.row
    kind = ENTRY_TYPES.get(item.item_type, "misc") if item is not None else "misc"
    if kind == "phdthesis" and item is not None and "master" in item.get("thesisType").casefold():
        kind = "mastersthesis"
    if kind == "misc" and row.venue_source not in _NOT_A_SERVICE and not is_preprint("", row.venue):
        return ("article" if _JOURNAL.search(row.venue) else "inproceedings"), row.venue
    sources = VENUE_FIELD.get(kind, ("howpublished", ()))[1]
    venue = next((v for s in sources if item is not None and (v := item.get(s).strip())), "") or row.venue
    if kind in _NEEDS_VENUE and not venue.strip():
        return "misc", ""
    return kind, venue


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
    for paper, key in zip(found, keys, strict=True):  # a key Better BibTeX gave that could not be taken
        if (refused := better_bibtex_key(paper.item)) and not citation_key(paper.item):
            log.warning(
                "catalog.bib: item %s: the Better BibTeX key %s is not one BibTeX can read and TeX reads"
                " safely; cited as %s",
                paper.row.zotero_key,
                excerpt(repr(refused), 60),
                key,
            )
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
    page = given.page
    rows = page.rows if page.library_rows is None else page.library_rows  # exports.bib_scope
    yield Output(PurePosixPath(EXPORTER.page), render_bibtex(rows, given.library.items))


EXPORTER = Exporter(
    name="bib",
    summary="the papers on the page as BibTeX: one entry per paper, Better BibTeX's keys where set",
    page="catalog.bib",
    render=_outputs,
    needs=Needs.CREATORS,
)
