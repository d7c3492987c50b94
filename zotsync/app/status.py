"""`zotsync status`: counts, the last sync, and what the curator should look at."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from .. import normalize
from ..catalogue import CatalogueFile
from ..config import Config
from ..digest import GONE
from ..export.record import export_inputs
from ..gcpause import bulk_phase
from ..model import Catalogue, Library, Placement, collection_path, in_collections
from ..processing import Derived
from ..processing.enrich.settings import NAME as ENRICH  # its answers make the report's enrichment summary
from ..reconcile import MatchResult
from ..reconcile.categories import near_duplicates
from ..store import Store, SyncState
from ..text import blank, counted
from .edit import curated_titles
from .page import Merged, catalogue_first, merge
from .stores import open_store


@dataclass(frozen=True, slots=True)
class LibrarySummary:
    type: str
    id: str
    kind: str  # the source id's type: web, local-api, local, snapshot (or a plugin's)
    name: str
    source: str  # the file, or the Web API's URL
    version: int | None
    last_sync_at: str | None
    items: int  # the regular items not in the trash
    trashed: int
    collections: int
    uncurated: int  # items no curated entry claims, inbox or not: what `zotsync list --uncurated` shows


@dataclass(frozen=True, slots=True)
class CatalogueSummary:
    entries: int  # rows of the page
    read: int
    unread: int
    curated: int
    matched: int  # curated papers matched to a Zotero item
    categories: int


@dataclass(frozen=True, slots=True)
class EnrichmentSummary:
    """What the metadata services answered (`zotsync enrich`, or `sync` with `enrich.enabled`)."""

    items: dict[str, int]  # items by their answer: filled, ambiguous, not_found
    # service → what it answered: filled, ambiguous, not_found, preprint (it knew only the preprint),
    # not_asked (it had no question: arXiv, for an item without an arXiv id)
    services: dict[str, dict[str, int]]
    ambiguous: list[dict[str, Any]]  # each item left ambiguous: zotero_key, title, candidates


@dataclass(frozen=True, slots=True)
class StatusReport:
    """What `zotsync status` reports; `to_dict` is what `status --format json` prints. Each list holds
    one JSON-shaped record per finding (docs/commands.md names their fields)."""

    library: LibrarySummary
    catalogue: CatalogueSummary
    matches: list[dict[str, str]]
    fuzzy_matches: list[dict[str, Any]]
    unmatched: list[dict[str, Any]]
    ambiguous: list[dict[str, Any]]
    duplicates: list[dict[str, Any]]
    near_duplicate_categories: list[dict[str, Any]]
    inbox: list[dict[str, str]]
    untitled: list[dict[str, Any]]
    status_conflicts: list[dict[str, str]]
    enrichment: EnrichmentSummary = dataclasses.field(
        default_factory=lambda: EnrichmentSummary({"filled": 0, "ambiguous": 0, "not_found": 0}, {}, [])
    )
    # papers on the page that OpenAlex says were retracted (enrich.citations): zotero_key, title, categories
    retracted: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    # The attachments' full text (`fulltext.enabled`): with_text, without_text (Zotero lists the attachment
    # but holds no text: a missing cache file), partial (Zotero indexed only some pages), chars; None: off.
    fulltext: dict[str, int] | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> StatusReport:
        """The report `to_dict` gave (as JSON gives it back)."""
        nested = {
            "library": LibrarySummary(**raw["library"]),
            "catalogue": CatalogueSummary(**raw["catalogue"]),
            "enrichment": EnrichmentSummary(**raw["enrichment"]),
        }
        return cls(**(raw | nested))

    to_json = to_dict  # the name of zotsync 0.2 and earlier

    def summary(self) -> str:
        """One line: the page's papers and the catalogue's matches."""
        page = self.catalogue
        return (
            f"{counted(page.entries, 'paper')} in {counted(page.categories, 'category', 'categories')} "
            f"({page.read} read, {page.unread} unread); {page.matched} of "
            f"{counted(page.curated, 'curated paper')} matched, {len(self.unmatched)} unmatched; "
            f"{counted(self.library.items, 'item')} in the library"
        )


STATUS = "status"  # the name of the report a sync keeps in the store (`Store.keep_report`)


def status(config: Config) -> StatusReport:
    """The report; the one the last sync kept when nothing it was made of has changed since (a 100k
    library is not reconciled again for it)."""
    catalogue_file = CatalogueFile.read(config.catalog, config.path)
    with catalogue_first(catalogue_file), open_store(config, readonly=True) as store:
        kept = kept_status(config, store, catalogue_file.digest)
        # the texts change without the page: counted as they are now, never kept
        texts = store.fulltext_counts()._asdict() if config.fulltext.enabled else None
    if kept is not None:
        return dataclasses.replace(kept, fulltext=texts)
    catalogue = catalogue_file.load()
    # The report walks the whole page and library again: keep the collector paused for it too (resumed
    # earlier, it would scan the objects of the whole page, still alive, again and again).
    with bulk_phase():
        with open_store(config, readonly=True) as store:
            merged = merge(config, catalogue, store, creators=False, links=False)  # it shows no links
            state = store.sync_state
            last_page = store.catalogue_rows() or []
        return dataclasses.replace(report_of(config, catalogue, merged, state, last_page), fulltext=texts)


def made_from(config: Config, catalogue_digest: str | None, generation: int) -> str:
    """What a kept report was made from: every input of the page (code, settings, catalogue, venue
    table) and the store's content generation, which every change of the library, or of what a
    processor derived, bumps."""
    inputs = [export_inputs(config, catalogue_digest), generation]
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()


def kept_status(config: Config, store: Store, catalogue_digest: str | None) -> StatusReport | None:
    """The report the last sync kept, if it was made from what the report would be made of now, with
    the library's sync state (its version, the last sync) as it is now; None: make it anew."""
    state = store.sync_state
    body = store.kept_report(STATUS, made_from(config, catalogue_digest, state.content_generation))
    if body is None:
        return None
    try:
        kept = StatusReport.from_dict(json.loads(body))
    except (ValueError, TypeError, KeyError):  # not what this zotsync keeps: make it anew
        return None
    return dataclasses.replace(kept, library=library_summary(state, kept.library))


def keep_status(
    config: Config, store: Store, catalogue: Catalogue, merged: Merged, digest: str | None
) -> None:
    """Keep the report of the page a sync just exported (`merged`), for the `status` runs until the
    next change: made now, it costs a sync a second where it saves every `status` several."""
    state = store.sync_state
    report = report_of(config, catalogue, merged, state, store.catalogue_rows() or [])
    body = json.dumps(report.to_dict(), ensure_ascii=False)
    store.keep_report(STATUS, made_from(config, digest, state.content_generation), body)


def library_summary(state: SyncState, counts: LibrarySummary) -> LibrarySummary:
    """The library as `state` describes it now, with the `counts` of its content."""
    return dataclasses.replace(
        counts,
        type=state.library_type,
        id=state.library_id,
        kind=(state.source or "").partition(":")[0],
        name=state.library_name,
        source=origin(state.source or ""),
        version=state.library_version,
        last_sync_at=state.last_sync_at,
    )


def report_of(
    config: Config,
    catalogue: Catalogue,
    merged: Merged,
    state: SyncState,
    last_page: Sequence[tuple[str, str, str, str, str]],
) -> StatusReport:
    answers = merged.derived.get(ENRICH, {})
    # The counts are the page's (`exports.scope` and `exclude_*` may keep rows off it); what a curator
    # looks at (the inbox, untitled and uncurated items) is every row reconcile placed.
    rows, every, library = merged.page.rows, merged.reconciliation.placements, merged.library
    matches = merged.reconciliation.matches
    # Each count in one pass, most of them in C: a 100k-item page has as many rows.
    curated = [r for r in every if r.curated]
    claimed = {r.zotero_key for r in curated}
    statuses = Counter(map(attrgetter("status"), rows))
    headings = dict.fromkeys(map(attrgetter("category"), rows))
    return StatusReport(
        library=library_summary(
            state,
            LibrarySummary(
                type="",
                id="",
                kind="",
                name="",
                source="",
                version=None,
                last_sync_at=None,
                items=len(matches.candidates),
                trashed=sum(1 for i in library.items if i.deleted and i.is_regular),
                collections=len(library.collections),
                uncurated=len(set(map(attrgetter("zotero_key"), every)) - claimed - {""}),
            ),
        ),
        catalogue=CatalogueSummary(
            entries=len(rows),
            read=statuses["read"],
            unread=statuses["unread"],
            curated=len(curated),
            matched=len(matches.by_title),
            categories=len(headings),
        ),
        matches=matched_entries(catalogue, matches),
        fuzzy_matches=fuzzy_matches(catalogue, matches),
        unmatched=unmatched_entries(matches, last_page),
        ambiguous=[
            {"rule": a.rule, "titles": list(a.titles), "zotero_keys": list(a.item_keys)}
            for a in matches.ambiguities
        ],
        duplicates=[
            {"reason": d.reason, "title": d.title, "zotero_keys": list(d.item_keys)}
            for d in matches.duplicates
        ],
        # A heading one typo from another is a section nobody meant (a collection named `LLM inferance`)
        near_duplicate_categories=[{"names": list(pair)} for pair in near_duplicates(headings)],
        inbox=inbox(config, every),
        untitled=untitled(every),
        status_conflicts=[
            {"title": t, "curated": c, "zotero": z} for t, c, z in merged.reconciliation.status_conflicts
        ],
        enrichment=enrichment_summary(answers, library, config.enrich.services),
        retracted=retracted(rows),
    )


def retracted(rows: Sequence[Placement]) -> list[dict[str, Any]]:
    """The page's retracted papers, once each, with the categories they sit in."""
    found: dict[str, dict[str, Any]] = {}
    for row in rows:
        if row.retracted:
            paper = found.setdefault(row.zotero_key, {"zotero_key": row.zotero_key, "title": row.title})
            paper.setdefault("categories", []).append(row.category)
    return list(found.values())


def unmatched_entries(
    matches: MatchResult, last_page: Sequence[tuple[str, str, str, str, str]]
) -> list[dict[str, Any]]:
    """Each curated entry no Zotero item matches, why, and the nearest titles. One the last synced page
    showed matched (`last_page`: the store's catalogue rows) lost its item since: deleted in Zotero,
    and with it the venue and links Zotero gave the row (`was_zotero_key`)."""
    was_matched = {
        alias: identity.removeprefix("key:")
        for identity, alias, *_ in last_page
        if alias and identity.startswith("key:")
    }
    found = []
    for entry in matches.unmatched:
        reason, was = entry.reason, was_matched.get(normalize.title(entry.title), "")
        if was and reason in ("no candidate", "pinned key not in library"):
            reason = f"its Zotero item {was} was deleted in Zotero since the last sync: {GONE}"
        nearest = matches.nearest(entry.title)
        found.append(
            {
                "title": entry.title,
                "reason": reason,
                "nearest": [{"zotero_key": c.key, "title": c.title, "score": c.score} for c in nearest],
                "was_zotero_key": was,
            }
        )
    return found


def enrichment_summary(
    answers: Mapping[str, Derived], library: Library, order: Sequence[str] = ()
) -> EnrichmentSummary:
    """Items counted by their answer, each service by what it answered (in `order`, the services' own,
    then any other that answered before), and the ambiguous items with their candidates (in title
    order), for the items still in the library."""
    titles = {item.key: item.title for item in library.items if item.is_regular and not item.deleted}
    items: Counter[str] = Counter({"filled": 0, "ambiguous": 0, "not_found": 0})
    services: dict[str, Counter[str]] = {}
    ambiguous = []
    for key, answer in answers.items():
        value = answer.value if isinstance(answer.value, dict) else {}
        outcome = str(value.get("outcome", ""))
        if key not in titles or outcome not in items:
            continue
        items[outcome] += 1
        for service, said in (value.get("asked") or {}).items():
            known = Counter({"filled": 0, "ambiguous": 0, "not_found": 0, "preprint": 0, "not_asked": 0})
            services.setdefault(service, known)[said] += 1
        if outcome == "ambiguous":
            candidates = value.get("candidates", [])
            ambiguous.append({"zotero_key": key, "title": titles[key], "candidates": candidates})
    ambiguous.sort(key=lambda a: (a["title"].casefold(), a["zotero_key"]))
    ranked = sorted(services, key=lambda s: (list(order).index(s) if s in order else len(order), s))
    return EnrichmentSummary(dict(items), {s: dict(services[s]) for s in ranked}, ambiguous)


def origin(source_id: str) -> str:
    """Where a source id (`<type>:<where>`) says the library came from: the Web API's URL, or the file
    without the library a `#` names in it; whichever type of source wrote it."""
    _, _, where = source_id.partition(":")
    return where if where.startswith(("http://", "https://")) else where.partition("#")[0]


def untitled(rows: Sequence[Placement]) -> list[dict[str, Any]]:
    """Zotero items whose title is empty (or only spaces and controls), with the categories they are
    in: the page shows the `no_title` placeholder for them until the curator gives them a title."""
    found: dict[str, dict[str, Any]] = {}
    for row in rows:
        if row.zotero_key and blank(row.title):
            found.setdefault(row.zotero_key, {"zotero_key": row.zotero_key, "categories": []})[
                "categories"
            ].append(row.category)
    return list(found.values())


def inbox(config: Config, rows: Sequence[Placement]) -> list[dict[str, str]]:
    """Uncurated items in an inbox collection (or below it) or carrying an inbox tag: candidates for
    the curator's next `zotsync adopt`."""
    paths = [collection_path(path) for path in config.reconcile.inbox_collections]
    tags = set(config.reconcile.inbox_tags)
    found: dict[str, dict[str, str]] = {}
    if not paths and not tags:
        return []  # no inbox configured: nothing to walk 100k rows for
    for row in rows:
        if not row.curated and (
            (paths and in_collections(row.collections, paths)) or not tags.isdisjoint(row.tags)
        ):
            found.setdefault(row.zotero_key, {"zotero_key": row.zotero_key, "title": row.title})
    return list(found.values())


def matched_entries(catalogue: Catalogue, matches: MatchResult) -> list[dict[str, str]]:
    """Each matched curated paper with its item and the rule that matched it, in catalogue order."""
    titles = curated_titles(catalogue.entries)
    return [
        {"title": title, "zotero_key": matches.by_title[key].key, "rule": matches.rule.get(key, "")}
        for key, title in titles.items()
        if key in matches.by_title
    ]


def fuzzy_matches(catalogue: Catalogue, matches: MatchResult) -> list[dict[str, Any]]:
    """Each curated paper matched by a fuzzy title, a guess for the curator to check, in catalogue
    order: its title beside the item's, so that a wrong guess shows."""
    fuzzy = matches.fuzzy
    return [
        {"title": title, "zotero_key": c.key, "zotero_title": c.title, "score": c.score}
        for key, title in curated_titles(catalogue.entries).items()
        if (c := fuzzy.get(key)) is not None
    ]


# -- as text ---------------------------------------------------------------------------------------------


def format_text(report: dict[str, Any]) -> str:
    lib, cat = report["library"], report["catalogue"]
    name = f' "{lib["name"]}"' if lib["name"] else ""
    ident = lib["id"] or f"({lib['kind']})"  # a local database has no library id
    lines = [
        f"library: {lib['type']} {ident}{name} from {lib['source']}, "
        f"version {lib['version']}, last sync {lib['last_sync_at'] or 'never'}; "
        f"{counted(lib['items'], 'item')} ({lib['trashed']} in the trash), "
        f"{counted(lib['collections'], 'collection')}",
        f"catalogue: {counted(cat['entries'], 'entry', 'entries')} in "
        f"{counted(cat['categories'], 'category', 'categories')}; read {cat['read']}, "
        f"unread {cat['unread']}; {cat['matched']} of the curated papers matched in Zotero",
    ]
    sections = (
        ("unmatched curated entries", report["unmatched"], _unmatched),
        (
            "fuzzy matches to review",
            report["fuzzy_matches"],
            lambda f: f"{f['title']} ↔ {f['zotero_title']} [{f['zotero_key']}] {f['score']}",
        ),
        (
            "ambiguous matches",
            report["ambiguous"],
            lambda a: f"{' | '.join(a['titles'])} ↔ {', '.join(a['zotero_keys'])} (by {a['rule']})",
        ),
        (
            "duplicates in Zotero",
            report["duplicates"],
            lambda d: f"{d['title']}: {', '.join(d['zotero_keys'])} ({d['reason']})",
        ),
        (
            "near-duplicate category names",
            report["near_duplicate_categories"],
            lambda n: " ≈ ".join(n["names"]),
        ),
        (
            "status disagreements",
            report["status_conflicts"],
            lambda s: f"{s['title']}: curated {s['curated']}, Zotero {s['zotero']}",
        ),
        (
            "items without a title (the page shows a placeholder; give them one in Zotero)",
            report["untitled"],
            lambda u: f"{u['zotero_key']} in {', '.join(u['categories'])}",
        ),
        ("inbox items not yet curated", report["inbox"], lambda i: f"{i['title']} [{i['zotero_key']}]"),
        (
            "retracted papers on the page (OpenAlex says so: take them off, or say why in their why)",
            report.get("retracted") or [],
            lambda r: f"{r['title']} [{r['zotero_key']}] in {', '.join(r['categories'])}",
        ),
    )
    for heading, rows, show in sections:
        lines.append(f"{heading}: {len(rows)}")
        lines += [f"  - {show(row)}" for row in rows]
    lines.append(f"items no curated entry claims: {lib['uncurated']} (`zotsync list --uncurated` lists them)")
    lines += _enrichment_lines(report.get("enrichment") or {})
    texts = report.get("fulltext")
    if texts:
        lines.append(
            f"full text: {texts['with_text']} attachments with text ({texts['partial']} partly indexed), "
            f"{texts['without_text']} without (no text in Zotero's index, or its cache file is missing)"
        )
    return "\n".join(lines)


def _where(candidate: dict[str, Any]) -> str:
    return " ".join(str(v) for v in (candidate.get("venue"), candidate.get("year")) if v) or "?"


def _enrichment_lines(summary: dict[str, Any]) -> list[str]:
    """What the metadata services answered; nothing when they were never asked."""
    if not summary.get("services"):
        return []
    items = summary["items"]
    lines = [
        f"enrichment: {items['filled']} items filled, {items['ambiguous']} ambiguous, "
        f"{items['not_found']} not found",
        *(
            f"  - {service}: {counts['filled']} filled, {counts['ambiguous']} ambiguous, "
            f"{counts['not_found']} not found, {counts['preprint']} known only as a preprint"
            for service, counts in summary["services"].items()
        ),
        f"ambiguous enrichment (venue left unknown; check the candidates): {len(summary['ambiguous'])}",
    ]
    for item in summary["ambiguous"]:
        candidates = "; ".join(
            f"{c.get('service')}: {c.get('title')} ({_where(c)})" for c in item["candidates"]
        )
        lines.append(f"  - {item['title']} [{item['zotero_key']}] — {candidates or 'no candidate'}")
    return lines


def _unmatched(entry: dict[str, Any]) -> str:
    nearest = "; ".join(f"{c['title']} [{c['zotero_key']}] {c['score']}" for c in entry["nearest"])
    return f"{entry['title']} ({entry['reason']})" + (f" — nearest: {nearest}" if nearest else "")
