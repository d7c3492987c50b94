"""Match curated entries to Zotero items, strongest evidence first, never guessing between equals.

Entries with one normalised title (one paper listed under several categories) form one *claim*. Each
stage indexes the still-available items by one identifier and gives a claim its item only when exactly
one candidate exists and no other claim wants the same item; anything else is reported as an ambiguity
and left for the curator. The result depends only on the sets, never on input order.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from ..model import CatalogueEntry, Item, extra_field
from . import normalize


@dataclass(frozen=True, slots=True)
class Ambiguity:
    """Several items for one claim, or several claims for one item, at one stage."""

    rule: str
    titles: tuple[str, ...]  # the curated titles involved
    item_keys: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Unmatched:
    title: str
    reason: str  # "no candidate", "pinned key not in library", "item is in the trash", "ambiguous"


@dataclass(slots=True)
class MatchResult:
    by_title: dict[str, Item] = field(default_factory=dict)  # normalised curated title → item
    rule: dict[str, str] = field(default_factory=dict)  # normalised curated title → matching rule
    unmatched: list[Unmatched] = field(default_factory=list)
    ambiguities: list[Ambiguity] = field(default_factory=list)

    def item_for(self, entry: CatalogueEntry) -> Item | None:
        return self.by_title.get(normalize.title(entry.title))


@dataclass(slots=True)
class _Claim:
    """All curated entries that name one paper."""

    title_key: str
    entries: list[CatalogueEntry]

    @property
    def title(self) -> str:
        return self.entries[0].title

    def hints(self, attribute: str) -> set[str]:
        return {getattr(e, attribute) for e in self.entries if getattr(e, attribute)}

    def link_urls(self) -> set[str]:
        return {link.url for e in self.entries for link in e.links if link.label == "Paper"} | self.hints(
            "url"
        )


def item_dois(item: Item) -> set[str]:
    return {normalize.doi(item.doi)} - {""}


def item_arxiv_ids(item: Item) -> set[str]:
    sources = (item.get("archiveID"), item.url, item.doi, extra_field(item, "arXiv"))
    return {normalize.arxiv(s) for s in sources} - {""}


def item_isbns(item: Item) -> set[str]:
    return {normalize.isbn(part) for part in item.get("ISBN").split()} - {""}


def item_urls(item: Item) -> set[str]:
    return {normalize.url(item.url)} - {""}


def claim_dois(claim: _Claim) -> set[str]:
    return {normalize.doi(v) for v in claim.hints("doi") | claim.link_urls()} - {""}


def claim_arxiv_ids(claim: _Claim) -> set[str]:
    return {normalize.arxiv(v) for v in claim.hints("arxiv") | claim.hints("doi") | claim.link_urls()} - {""}


def claim_urls(claim: _Claim) -> set[str]:
    return {normalize.url(v) for v in claim.hints("url")} - {""}


# (rule, keys of an item, keys of a claim) — strongest evidence first.
Stage = tuple[str, Callable[[Item], set[str]], Callable[[_Claim], set[str]]]
STAGES: tuple[Stage, ...] = (
    ("doi", item_dois, claim_dois),
    ("arxiv", item_arxiv_ids, claim_arxiv_ids),
    ("url", item_urls, claim_urls),
    ("title", lambda item: {normalize.title(item.title)} - {""}, lambda claim: {claim.title_key}),
)


def match(entries: Sequence[CatalogueEntry], items: Iterable[Item]) -> MatchResult:
    """`items` are every item of the library; only regular, untrashed ones can be matched."""
    result = MatchResult()
    by_key = {item.key: item for item in items}
    candidates = {key: item for key, item in by_key.items() if item.is_regular and not item.deleted}

    claims: dict[str, _Claim] = {}
    for entry in entries:
        title_key = normalize.title(entry.title)
        claims.setdefault(title_key, _Claim(title_key, [])).entries.append(entry)
    open_claims = dict(sorted(claims.items()))

    def settle(wanted: dict[str, set[str]], rule: str) -> None:
        """Assign items to claims where the choice is unique both ways; report the rest."""
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
                    candidates.pop(key, None)
                del open_claims[title_key]
                continue
            (key,) = keys
            result.by_title[title_key] = candidates.pop(key)
            result.rule[title_key] = rule
            del open_claims[title_key]

    # A pin is the curator's word: it matches or it is reported, it never falls through to guessing.
    pinned: dict[str, set[str]] = {}
    for title_key, claim in list(open_claims.items()):
        pins = claim.hints("zotero_key")
        if not pins:
            continue
        found = {k for k in pins if k in candidates}
        if not found:
            pin = sorted(pins)[0]
            reason = (
                "item is in the trash"
                if pin in by_key and by_key[pin].deleted
                else "pinned key not in library"
            )
            result.unmatched.append(Unmatched(claim.title, reason))
            del open_claims[title_key]
            continue
        pinned[title_key] = found
    settle(pinned, "zotero_key")

    for rule, item_keys, claim_keys in STAGES:
        index: dict[str, set[str]] = defaultdict(set)
        for key, item in candidates.items():
            for value in item_keys(item):
                index[value].add(key)
        wanted = {}
        for title_key, claim in open_claims.items():
            found = {key for value in claim_keys(claim) for key in index.get(value, ())}
            if found:
                wanted[title_key] = found
        settle(wanted, rule)

    trashed = {normalize.title(i.title) for i in by_key.values() if i.deleted and i.is_regular}
    for claim in open_claims.values():
        reason = "item is in the trash" if claim.title_key in trashed else "no candidate"
        result.unmatched.append(Unmatched(claim.title, reason))
    result.unmatched.sort(key=lambda u: normalize.title(u.title))
    return result
