"""Match curated entries to Zotero items, strongest evidence first, never guessing between equals.

Entries with one normalised title (one paper listed under several categories) form one *claim*. Each
stage indexes the still-available items by one identifier and gives a claim its item only when exactly
one candidate exists and no other claim wants the same item; anything else is reported as an ambiguity
and left for the curator. The result depends only on the sets, never on input order.

Exact identifiers block first; the fuzzy title stage only sees what they left, and even then compares a
claim only with items that share two of its three rarest title words — never every claim with every item.
A fuzzy match tolerates typos, never another symbol (≠ for =, C++ for C) or a lookalike letter from
another script (a Cyrillic а for a Latin a); each one it makes is listed for review (`MatchResult.fuzzy`).
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from rapidfuzz import fuzz, process

from .. import normalize
from ..facts import item_facts
from ..model import CatalogueEntry, Item, ItemFacts, venue_year

# rapidfuzz's fuzz.ratio (0–100) on normalised titles. A fuzzy match needs this score and a lead of
# FUZZY_MARGIN over the runner-up; bench/bench_reconcile.py prints the evidence for both numbers.
FUZZY_THRESHOLD = 90.0
FUZZY_MARGIN = 5.0
_RARE_WORDS = 3  # how many of a title's rarest words pick its fuzzy candidates
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
# Scripts whose letters pass for one another (a Cyrillic а for a Latin a): a fuzzy match keeps them.
_LOOKALIKE_SCRIPTS = frozenset({"LATIN", "GREEK", "COPTIC", "CYRILLIC", "ARMENIAN", "CHEROKEE"})


@dataclass(frozen=True, slots=True)
class Ambiguity:
    """Several items for one claim, or several claims for one item, at one stage."""

    rule: str
    titles: tuple[str, ...]  # the curated titles involved
    item_keys: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Candidate:
    key: str
    title: str
    score: float


@dataclass(frozen=True, slots=True)
class Unmatched:
    title: str
    reason: str  # "no candidate", "pinned key not in library", "item is in the trash", "ambiguous (…)"


@dataclass(frozen=True, slots=True)
class Duplicate:
    """Zotero items that look like one work: the same DOI, or the same normalised title (a preprint
    and its published version often differ only in year; the curator decides)."""

    reason: str
    title: str
    item_keys: tuple[str, ...]


@dataclass(slots=True)
class MatchResult:
    by_title: dict[str, Item] = field(default_factory=dict)  # normalised curated title → item
    rule: dict[str, str] = field(default_factory=dict)  # normalised curated title → matching rule
    scores: dict[str, float] = field(default_factory=dict)  # normalised curated title → its fuzzy score
    unmatched: list[Unmatched] = field(default_factory=list)
    ambiguities: list[Ambiguity] = field(default_factory=list)
    titles: TitleIndex | None = None
    candidates: dict[str, Item] = field(default_factory=dict)  # regular, untrashed items by key
    facts: Mapping[str, ItemFacts] = field(default_factory=dict)  # of (at least) the candidates, by key
    _duplicates: list[Duplicate] | None = None
    _unmatched_indexed: bool = False

    @property
    def fuzzy(self) -> dict[str, Candidate]:
        """The claims matched by a fuzzy title (normalised curated title → its item and score): guesses,
        however good, which `status` lists for the curator to check."""
        return {
            title_key: Candidate(item.key, item.title, self.scores[title_key])
            for title_key, item in sorted(self.by_title.items())
            if self.rule[title_key] == "fuzzy title"
        }

    @property
    def duplicates(self) -> list[Duplicate]:
        """Zotero items that look like one work (for `status`; found on first use, as exports never ask)."""
        if self._duplicates is None:
            self._duplicates = find_duplicates(self.candidates.values(), self.facts)
        return self._duplicates

    def item_for(self, entry: CatalogueEntry) -> Item | None:
        return self.by_title.get(normalize.title(entry.title))

    def nearest(self, title: str, limit: int = 3) -> list[Candidate]:
        """The library items whose titles come closest (for reports; computed on demand)."""
        if not self.titles:
            return []
        if not self._unmatched_indexed:  # a report asks about each unmatched title: index them at once
            self.titles.index(normalize.title(u.title) for u in self.unmatched)
            self._unmatched_indexed = True
        return self.titles.nearest(normalize.title(title), limit=limit)


@dataclass(slots=True)
class _Claim:
    """All curated entries that name one paper."""

    title_key: str
    entries: list[CatalogueEntry]

    @property
    def title(self) -> str:
        return min(e.title for e in self.entries)  # not the first: the result must not depend on order

    def hints(self, attribute: str) -> set[str]:
        return {getattr(e, attribute) for e in self.entries if getattr(e, attribute)}

    def paper_links(self) -> set[str]:
        return {link.url for e in self.entries for link in e.links if link.label == "Paper"}

    @property
    def year(self) -> str:
        return next(iter(sorted({y for e in self.entries if (y := entry_year(e))})), "")


def entry_year(entry: CatalogueEntry) -> str:
    """The curator's year: `year:` if given, else the one a venue like OSDI'20 or arXiv 2025 names."""
    return entry.year or venue_year(entry.venue)


def _values(normalizer: Callable[[str], str], values: Iterable[str]) -> set[str]:
    return {n for v in values if (n := normalizer(v))}


def item_arxiv_ids(item: Item) -> set[str]:
    sources = (item.get("archiveID"), item.url, item.doi, item.extra_field("arXiv"))
    return _values(normalize.arxiv, (s for s in sources if "arxiv" in s.casefold() or s[:1].isdigit()))


# (rule, identifiers of an item given its facts, identifiers of a claim) — strongest evidence first.
Stage = tuple[str, Callable[[Item, ItemFacts], set[str]], Callable[[_Claim], set[str]]]
STAGES: tuple[Stage, ...] = (
    (
        "doi",
        lambda i, f: {f.doi_key} if f.doi_key else set(),
        lambda c: _values(normalize.doi, c.hints("doi") | c.paper_links()),
    ),
    (
        "arxiv",
        lambda i, f: item_arxiv_ids(i),
        lambda c: _values(
            normalize.arxiv, c.hints("arxiv") | c.hints("doi") | c.hints("url") | c.paper_links()
        ),
    ),
    (
        "isbn",
        lambda i, f: _values(normalize.isbn, i.get("ISBN").split()),
        lambda c: _values(normalize.isbn, c.hints("isbn")),
    ),
    ("url", lambda i, f: _values(normalize.url, [f.url]), lambda c: _values(normalize.url, c.hints("url"))),
    ("title", lambda i, f: set(), lambda c: {c.title_key}),  # items' titles come normalised once, below
)


class TitleIndex:
    """Normalised titles of items, blocked by word for fuzzy look-ups."""

    def __init__(self, titles: dict[str, str], shown: Mapping[str, str] | None = None) -> None:
        self.titles = titles  # item key → normalised title
        self.shown = shown if shown is not None else titles  # item key → the title as Zotero has it
        # word → keys of the titles that contain it, only for the words of titles looked up so far: a
        # run asks about a few thousand curated titles, not about every word of 100,000 items.
        self._postings: dict[str, set[str]] = {}
        # (blocking words, among) → the candidates' keys and titles, in key order. Many titles block on
        # the same words (often one common word), so each candidate list is built once, not per title.
        self._blocks: dict[tuple[tuple[str, ...], frozenset[str] | None], tuple[list[str], list[str]]] = {}

    def index(self, titles: Iterable[str]) -> None:
        """Index the words of these (normalised) titles, in one pass over the library for all of them."""
        postings = self._postings
        vocabulary = {w for title in titles for w in title_words(title) if w not in postings}
        if not vocabulary:
            return
        for word in vocabulary:
            postings[word] = set()
        for key, title in self.titles.items():
            # An ASCII title's blocking words are its words of 3+ letters, and the vocabulary has no
            # shorter ones: intersecting with its split words is title_words without the Python loop.
            if title.isascii():
                found = vocabulary.intersection(title.split())
            else:
                found = vocabulary & title_words(title)
            for word in found:
                postings[word].add(key)

    def nearest(
        self, title: str, among: frozenset[str] | None = None, limit: int = 3, cutoff: float = 0
    ) -> list[Candidate]:
        """The best-scoring items that share two of the title's three rarest words, best first (one word
        when the title has only one): a single edit — a typo, a word swapped, dropped or added — spoils at
        most one of them, while unrelated titles rarely share two rare words."""
        self.index([title])
        postings = self._postings
        words = sorted((w for w in title_words(title) if postings[w]), key=lambda w: (len(postings[w]), w))
        keys, choices = self._block(tuple(words[:_RARE_WORDS]), among)
        # Only the best `limit` matter, ties at the limit-th score included. A few spare places usually
        # hold every tie: when the last of them scores below that bound, nothing outside them can reach
        # it; else a second pass takes all at or above it. 0.01 below the bound: rapidfuzz turns a cutoff
        # into a distance bound, and float rounding there could drop a candidate right at the bound.
        found = process.extract(title, choices, scorer=fuzz.ratio, limit=limit + 8, score_cutoff=cutoff)
        if len(found) > limit:
            bound = max(cutoff, found[limit - 1][1] - 0.01)
            if found[-1][1] >= bound:
                found = process.extract(title, choices, scorer=fuzz.ratio, limit=None, score_cutoff=bound)
        ranked = sorted(((score, keys[i]) for _, score, i in found), key=lambda s: (-s[0], s[1]))
        return [Candidate(key, self.shown[key], round(score, 1)) for score, key in ranked[:limit]]

    def _block(self, words: tuple[str, ...], among: frozenset[str] | None) -> tuple[list[str], list[str]]:
        """Keys in two of the (up to three) words' postings — set operations, which run in C — and
        their titles."""
        if (block := self._blocks.get((words, among))) is None:
            sets = [self._postings[w] for w in words]
            if len(sets) < 2:
                found = set(sets[0]) if sets else set()
            else:
                found = sets[0] & sets[1]
                if len(sets) == 3:
                    found |= (sets[0] | sets[1]) & sets[2]
            if among is not None:
                found &= among
            keys = sorted(found)
            block = self._blocks[(words, among)] = (keys, [self.titles[k] for k in keys])
        return block


def title_words(title: str) -> set[str]:
    """Words for blocking: Latin words of 3+ letters; CJK runs as character pairs (no spaces there)."""
    words = set()
    for word in title.split():
        if word.isascii():
            if len(word) >= 3:
                words.add(word)
        elif _CJK.search(word):
            words.update(word[i : i + 2] for i in range(max(1, len(word) - 1)))
        else:
            words.add(word)
    return words


def match(
    entries: Sequence[CatalogueEntry], items: Iterable[Item], facts: Mapping[str, ItemFacts] | None = None
) -> MatchResult:
    """`items` are every item of the library; only regular, untrashed ones can be matched. `facts` are
    the items' facts as the store has them (`Library.facts`); the others' are computed here. The stages
    run in order, each on the claims the ones before left open: pins, each identifier of `STAGES`, then
    a fuzzy title."""
    matcher = _Matcher(entries, items, facts or {})
    matcher.pins()
    for stage in STAGES:
        matcher.identifier(stage)
    matcher.fuzzy()
    return matcher.finish()


class _Matcher:
    """One run of `match`: the library read once, the claims still open, and the result so far."""

    def __init__(
        self, entries: Sequence[CatalogueEntry], items: Iterable[Item], stored: Mapping[str, ItemFacts]
    ) -> None:
        self.result = MatchResult()
        missing: dict[str, ItemFacts] = {}  # the facts `stored` lacks, computed here
        self.by_key: dict[str, Item] = {}
        self.library: dict[str, Item] = {}
        self.titles: dict[str, str] = {}  # key → normalised title, of the same
        self.shown: dict[str, str] = {}  # key → the title as Zotero has it
        self.trashed_titles: set[str] = set()
        for item in items:  # one pass builds them all (100k items at scale)
            key = item.key
            self.by_key[key] = item
            if item.is_regular:
                item_fact = stored.get(key)
                if item_fact is None:
                    item_fact = missing[key] = item_facts(item)
                if item.deleted:
                    self.trashed_titles.add(item_fact.title_key)
                    continue
                self.library[key] = item
                self.titles[key] = item_fact.title_key
                self.shown[key] = item.title
        # key → facts of every regular item; the stored mapping itself when it has them all (a store's page)
        self.known: Mapping[str, ItemFacts] = {**stored, **missing} if missing else stored
        self.candidates = dict(self.library)
        self.claims: dict[str, _Claim] = {}
        for entry in entries:
            title_key = normalize.title(entry.title)
            self.claims.setdefault(title_key, _Claim(title_key, [])).entries.append(entry)
        self.open_claims = dict(sorted(self.claims.items()))
        self.passed_over: dict[str, str] = {}  # claim → why the close title it would have taken is not it

    def settle(self, wanted: dict[str, set[str]], rule: str) -> None:
        """Assign items to claims where the choice is unique both ways; report the rest."""
        result, claims = self.result, self.claims
        wanted_by: dict[str, set[str]] = defaultdict(set)
        for title_key, keys in wanted.items():
            for key in keys:
                wanted_by[key].add(title_key)
        for title_key, keys in sorted(wanted.items()):
            contested = sorted(k for k in keys if len(wanted_by[k]) > 1)
            if len(keys) > 1 or contested:
                rivals = sorted({t for k in keys for t in wanted_by[k]})
                if len(keys) > 1 or rivals[0] == title_key:  # report a contest once, from its first claim
                    result.ambiguities.append(
                        Ambiguity(rule, tuple(claims[t].title for t in rivals), tuple(sorted(keys)))
                    )
                result.unmatched.append(Unmatched(claims[title_key].title, f"ambiguous ({rule})"))
                for key in contested:  # disputed items wait for the curator, too
                    self.candidates.pop(key, None)
                del self.open_claims[title_key]
                continue
            (key,) = keys
            result.by_title[title_key] = self.candidates.pop(key)
            result.rule[title_key] = rule
            del self.open_claims[title_key]

    def pins(self) -> None:
        """A pin is the curator's word: it matches or it is reported, it never falls through to guessing."""
        pinned: dict[str, set[str]] = {}
        for title_key, claim in list(self.open_claims.items()):
            pins = claim.hints("zotero_key")
            if not pins:
                continue
            found = {k for k in pins if k in self.candidates}
            if not found:
                pin = sorted(pins)[0]
                # Only a pin to a regular item is "in the trash": one to an attachment or a note names no
                # paper, trashed or not, and the page's library may not even hold those.
                item = self.by_key.get(pin)
                trashed = item is not None and item.is_regular and item.deleted
                self.result.unmatched.append(
                    Unmatched(claim.title, "item is in the trash" if trashed else "pinned key not in library")
                )
                del self.open_claims[title_key]
                continue
            pinned[title_key] = found
        self.settle(pinned, "zotero_key")

    def identifier(self, stage: Stage) -> None:
        """The claims that name an identifier of this stage (a DOI, an arXiv id, …, the exact title) take
        the items that have it."""
        rule, item_keys, claim_keys = stage
        sought = {title_key: claim_keys(claim) for title_key, claim in self.open_claims.items()}
        if not any(sought.values()):
            return  # no claim carries this identifier: skip indexing the library for it
        # Only values some claim seeks are indexed: a few thousand, not one per item of the library.
        sought_values = set().union(*sought.values())
        index: dict[str, set[str]] = defaultdict(set)
        if rule == "title":
            for key in self.candidates:
                if (title := self.titles[key]) in sought_values:
                    index[title].add(key)
        else:
            for key, item in self.candidates.items():
                for value in item_keys(item, self.known[key]) & sought_values:
                    index[value].add(key)
        wanted = {}
        for title_key, claim in self.open_claims.items():
            found = {key for value in sought[title_key] for key in index.get(value, ())}
            if rule == "title" and len(found) > 1 and claim.year:
                # Same title, several items: the year tells them apart (a reprint, a journal version).
                same_year = {k for k in found if self.known[k].year == claim.year}
                found = same_year or found
            if found:
                wanted[title_key] = found
        self.settle(wanted, rule)

    def fuzzy(self) -> None:
        """The claims left take the item with a close enough title, clearly ahead of the next one."""
        index_of_titles = TitleIndex(self.titles, self.shown)
        self.result.titles = index_of_titles
        if not (self.open_claims and self.candidates):
            return
        wanted = {}
        remaining = frozenset(self.candidates)
        index_of_titles.index(self.open_claims)
        for title_key in self.open_claims:
            best, passed = _fuzzy_candidates(index_of_titles, title_key, remaining)
            if (
                best
                and best[0].score >= FUZZY_THRESHOLD
                and (len(best) == 1 or best[0].score - best[1].score >= FUZZY_MARGIN)
            ):
                wanted[title_key] = {best[0].key}
                self.result.scores[title_key] = best[0].score
            elif passed is not None and passed.score >= FUZZY_THRESHOLD:
                self.passed_over[title_key] = _difference(title_key, index_of_titles.titles[passed.key])
        self.settle(wanted, "fuzzy title")

    def finish(self) -> MatchResult:
        """Every claim still open is reported unmatched, with the reason."""
        result = self.result
        for title_key, claim in self.open_claims.items():
            reason = "item is in the trash" if title_key in self.trashed_titles else "no candidate"
            if title_key in self.passed_over and title_key not in self.trashed_titles:
                reason = self.passed_over[title_key]
            result.unmatched.append(Unmatched(claim.title, reason))
        result.unmatched.sort(key=lambda u: normalize.title(u.title))
        result.candidates = self.library
        result.facts = self.known
        return result


def _fuzzy_candidates(
    index: TitleIndex, title_key: str, among: frozenset[str]
) -> tuple[list[Candidate], Candidate | None]:
    """The best two items a fuzzy match may choose from — those whose titles keep the claim's symbols
    and scripts (`traits`) — and the closest item of all when it is not one of them."""
    wanted, limit = traits(title_key), 4
    while True:
        # A runner-up below threshold − margin cannot spoil the lead, so it need not be scored.
        found = index.nearest(title_key, among=among, limit=limit, cutoff=FUZZY_THRESHOLD - FUZZY_MARGIN)
        fitting = [c for c in found if traits(index.titles[c.key]) == wanted]
        if len(fitting) >= 2 or len(found) < limit:  # else better fitting ones may lie beyond the limit
            return fitting[:2], found[0] if found and found[0] not in fitting else None
        limit *= 4


def traits(title_key: str) -> tuple[tuple[str, ...], frozenset[str], frozenset[str]]:
    """What a fuzzy match may not change in a normalised title, however close the rest: its symbols, in
    order ("P ≠ NP" is not "P = NP", "C++" not "C", 🔥 not 🚀), and the scripts of its letters among those
    that look alike, with the words that mix them (a Cyrillic а in "аttention" passes for a Latin a)."""
    if title_key.isascii():
        symbols = tuple(w for w in title_key.split() if not w.isalnum())
        latin = frozenset({"LATIN"}) if any(c.isalpha() for c in title_key) else frozenset()
        return symbols, latin, frozenset()
    scripts: set[str] = set()
    mixed: set[str] = set()
    symbols_list = []
    for word in title_key.split():
        if not word.isalnum():
            symbols_list.append(word)
            continue
        in_word = {script for char in word if (script := _script(char)) in _LOOKALIKE_SCRIPTS}
        scripts |= in_word
        if len(in_word) > 1:
            mixed.add(word)
    return tuple(symbols_list), frozenset(scripts), frozenset(mixed)


def _script(char: str) -> str:
    """A letter's script, from its Unicode name ("CYRILLIC SMALL LETTER A"); "" for the rest."""
    if char.isascii():
        return "LATIN" if char.isalpha() else ""
    return unicodedata.name(char, "").partition(" ")[0] if char.isalpha() else ""


def _difference(title_key: str, other: str) -> str:
    """Why the close title `other` is not a fuzzy match for `title_key`, as an unmatched entry's reason."""
    (symbols, scripts, mixed), (other_symbols, other_scripts, other_mixed) = traits(title_key), traits(other)
    if symbols != other_symbols:
        return "not matched by guess: the nearest title differs in its symbols"
    differing = (scripts ^ other_scripts) or {_script(c) for w in mixed ^ other_mixed for c in w} - {""}
    names = ", ".join(sorted(s.title() for s in differing))
    return f"not matched by guess: the nearest title is written in other scripts ({names})"


def find_duplicates(items: Iterable[Item], facts: Mapping[str, ItemFacts]) -> list[Duplicate]:
    """Items sharing a DOI or a normalised title: likely one work entered twice."""
    pairs = [(item, facts[item.key]) for item in items]
    # Nearly every DOI and title is unique: count them in C first, and group only those that repeat.
    dois = Counter([f.doi_key for _, f in pairs])
    titles = Counter([f.title_key for _, f in pairs])
    groups: dict[tuple[str, str], list[Item]] = defaultdict(list)
    for item, item_fact in pairs:
        if (doi := item_fact.doi_key) and dois[doi] > 1:
            groups[("same DOI", doi)].append(item)
        if (title := item_fact.title_key) and titles[title] > 1:
            groups[("same title", title)].append(item)
    found = {
        tuple(sorted(i.key for i in group)): Duplicate(reason, min(group, key=lambda i: i.key).title, ())
        for (reason, _), group in groups.items()
        if len(group) > 1
    }
    return sorted(
        (Duplicate(d.reason, d.title, keys) for keys, d in found.items()),
        key=lambda d: (d.item_keys, d.reason),
    )
