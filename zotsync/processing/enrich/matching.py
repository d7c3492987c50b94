"""Whether what a metadata service answered is the item's paper: pure rules, no I/O.

A hit is taken only when all three agree: the title (after `normalize.title`, which keeps the symbols
that carry meaning: "C++", "P ≠ NP", digits), the first author's family name, and the year within one.
Search engines answer a title with the nearest papers they have, and the nearest is often another paper
whose title shares most of the words ("Attentional Transfer is All You Need" for "Attention Is All You
Need"): such a first hit, or several published versions that disagree on the venue, leave the item
ambiguous, with the candidates for the curator to judge.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from rapidfuzz import fuzz

from ... import normalize
from ...model import Item, ItemFacts, is_preprint

Outcome = Literal["filled", "ambiguous", "not_found"]

# Item types that carry a DOI of their own: one missing is worth looking up.
DOI_TYPES = frozenset({"journalArticle", "conferencePaper", "preprint", "bookSection"})
TITLE_RATIO = 95  # rapidfuzz's ratio of two normalised titles that differ by a letter or two
NEAR_SHARE = 0.6  # of the item's title words in another paper's title: a near title, worth showing
CANDIDATES = 5  # shown per ambiguous item


@dataclass(frozen=True, slots=True)
class Query:
    """What is asked about one item, and what it lacks (`needs`: venue, year, doi, published)."""

    key: str
    item_type: str
    title: str
    family: str  # the first author's family name; empty when the item names no author
    year: str
    doi: str  # a syntactically valid DOI (normalize.doi_name), or empty: only those are looked up
    arxiv: str  # the arXiv id, or empty
    preprint: bool  # Zotero has it as a preprint (model.is_preprint)
    needs: tuple[str, ...]

    @property
    def digest(self) -> str:
        """What an answer about this item was asked from: an item whose digest is unchanged is not asked
        again (within the rules of `enrich.due`)."""
        fields = [self.item_type, self.title, self.family, self.year, self.doi, self.arxiv, self.preprint]
        fields.append(self.needs)
        return hashlib.sha256(json.dumps(fields, ensure_ascii=False).encode()).hexdigest()[:32]


def query_of(item: Item, facts: ItemFacts, prefer_published: bool) -> Query | None:
    """The question about `item`, or None when it lacks nothing enrichment fills (or has no title)."""
    if not item.is_regular or item.deleted or not item.title.strip():
        return None
    doi = normalize.doi_name(facts.doi)
    needs = []
    if not facts.venue_source:
        needs.append("venue")
    if not facts.year:
        needs.append("year")
    if not doi and item.item_type in DOI_TYPES:
        needs.append("doi")
    preprint = is_preprint(item.item_type, facts.venue_source)
    if prefer_published and preprint:
        needs.append("published")
    if not needs:
        return None
    return Query(
        key=item.key,
        item_type=item.item_type,
        title=item.title.strip(),
        family=item.first_family,
        year=facts.year,
        doi=doi,
        arxiv=arxiv_id(item, facts.doi),
        preprint=preprint,
        needs=tuple(needs),
    )


def arxiv_id(item: Item, doi: str) -> str:
    """The arXiv id an item names: its archive id (`arXiv:2006.06762`), an arXiv DOI or URL, or an
    `arXiv:` line in `extra`."""
    for value in (item.get("archiveID"), doi, item.url, item.extra_field("arXiv")):
        if value and (found := normalize.arxiv(value)):
            return found
    return ""


@dataclass(frozen=True, slots=True)
class Hit:
    """One paper a service answered, in the terms the rules compare."""

    service: str
    title: str
    authors: tuple[str, ...]  # full names, the first author first
    first_family: str  # the first author's family name, when the service gives it apart
    year: str
    venue: str  # as the service names it ("OSDI", "Proceedings of …", "arXiv")
    venue_key: str  # DBLP's stream key ("osdi"), else empty
    published: bool  # a published venue, not a preprint server
    doi: str

    def candidate(self) -> dict[str, Any]:
        """The hit as `status` lists a candidate."""
        return {
            "service": self.service,
            "title": self.title,
            "authors": list(self.authors[:3]),
            "venue": self.venue,
            "year": self.year,
            "doi": self.doi,
        }


@dataclass(frozen=True, slots=True)
class Verdict:
    outcome: Outcome
    hit: Hit | None = None  # the paper, when filled
    candidates: tuple[Hit, ...] = ()  # when ambiguous


NOT_FOUND = Verdict("not_found")


def judge(query: Query, hits: Sequence[Hit]) -> Verdict:
    """The item's paper among a service's `hits` (in the service's order), or why there is none."""
    matching = [hit for hit in hits if confident(query, hit)]
    if hits and hits[0] not in matching and near_title(query.title, hits[0].title):
        # The service's best guess is another paper with nearly this title: a later hit that agrees
        # may be right, but the curator should see both before a venue reaches the page.
        return Verdict("ambiguous", candidates=tuple([hits[0], *matching][:CANDIDATES]))
    if matching:
        published = [hit for hit in matching if hit.published]
        if len({(venue_name(hit), hit.year) for hit in published}) > 1:
            return Verdict("ambiguous", candidates=tuple(published[:CANDIDATES]))
        return Verdict("filled", hit=(published or matching)[0])
    near = [hit for hit in hits if near_title(query.title, hit.title)]
    if near:
        return Verdict("ambiguous", candidates=tuple(near[:CANDIDATES]))
    return NOT_FOUND


def confident(query: Query, hit: Hit) -> bool:
    return (
        same_title(query.title, hit.title)
        and family_agrees(query.family, hit)
        and years_agree(query.year, hit.year)
    )


def venue_name(hit: Hit) -> str:
    return hit.venue_key or fold(hit.venue)


def title_key(title: str) -> str:
    """A title as the rules compare it: HTML entities a service left in (DBLP's `&apos;`) read, then
    `normalize.title` (case, dashes, punctuation and the trailing `.` folded; meaningful symbols kept)."""
    return normalize.title(html.unescape(title))


_MEANINGFUL = re.compile(r"\d|[^\w\s]")  # a word holding a digit or a kept symbol: "2", "c++"'s "+"


def same_title(ours: str, theirs: str) -> bool:
    a, b = title_key(ours), title_key(theirs)
    if a == b:
        return True
    if fuzz.ratio(a, b) < TITLE_RATIO:
        return False
    # A letter or two may differ ("program" and "programs"), never a number or a symbol: "Llama 2" is not
    # "Llama 3", and "P ≠ NP" is not "P = NP".
    return _meaningful(a) == _meaningful(b)


def _meaningful(key: str) -> list[str]:
    return sorted(word for word in key.split() if _MEANINGFUL.search(word))


def near_title(ours: str, theirs: str) -> bool:
    """Whether `theirs` shares most of the words of `ours`: a title a careless matcher would take."""
    words = set(title_key(ours).split())
    if not words:
        return False
    shared = words & set(title_key(theirs).split())
    return len(shared) >= NEAR_SHARE * len(words)


def fold(name: str) -> str:
    """A name as names compare: accents, case and punctuation away ("Quintana-Ortí" → "quintana orti")."""
    decomposed = unicodedata.normalize("NFKD", html.unescape(name))
    plain = "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()
    return " ".join(re.sub(r"[\W_]+", " ", plain).split())


def family_agrees(family: str, hit: Hit) -> bool:
    """The item's first author's family name is the hit's first author's (as a whole word or words of
    the full name a service gives: DBLP's "Xiaopeng Zhang 0009", OpenAlex's "Andres M. Bran")."""
    ours = fold(family)
    if not ours:
        return False
    if hit.first_family and fold(hit.first_family) == ours:
        return True
    theirs = fold(hit.first_family or (hit.authors[0] if hit.authors else ""))
    return f" {ours} " in f" {theirs} "


def years_agree(ours: str, theirs: str) -> bool:
    """Within one year (a paper posted in December and published in January); an item without a year
    (enrichment may be what gives it one) is compared on its title and author alone."""
    if not ours or not theirs or not (ours.isdigit() and theirs.isdigit()):
        return True
    return abs(int(ours) - int(theirs)) <= 1


def year_of(value: object) -> str:
    """A four-digit year from what a service gives (`2020`, `"2020"`, `"2020-06-11T…"`), else empty."""
    match = re.match(r"\s*(\d{4})", str(value)) if value is not None else None
    return match.group(1) if match else ""


def first_text(value: object) -> str:
    """Crossref gives titles as lists; the first one, or the text itself ("" for none). Any other type
    is a malformed answer: TypeError."""
    if isinstance(value, list):
        value = value[0] if value else ""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise TypeError(f"text expected, not {type(value).__name__}")
    return value.strip()


def as_mapping(value: object) -> Mapping[str, Any]:
    """An object of an answer ({} for none). Any other type is a malformed answer: TypeError."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise TypeError(f"an object expected, not {type(value).__name__}")
    return value
