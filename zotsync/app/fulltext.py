"""The attachments' full text (`fulltext.enabled`): pulled after the items, kept in the store, read back.

A pull asks the source for the texts only when the library moved since the texts were last listed (the
Web API: `GET /fulltext?since=` at the library version they were listed at), so a sync with nothing new
sends no request for them. It fetches only the texts whose stamp the store does not hold, writes each
as it arrives (committed every few MB: memory holds a few texts, whatever the library's size), and
remembers the listing's version last: a run stopped half-way fetches only what it had not written yet.
A text whose attachment left the store, or went to the trash, leaves with it. A failure to pull the
texts is one warning line: the items are stored already, and the sync goes on.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .. import searchtext
from ..config import Config
from ..errors import ConfigError, SourceError
from ..sources.base import NoTextAccess, TextListing
from ..store import Store
from ..text import MAX_QUERY
from .stores import open_store

log = logging.getLogger("zotsync")

DEFAULT_MAX_CHARS = 20_000


@dataclass(frozen=True, slots=True)
class TextReport:
    listed: int = 0  # texts the source named as changed (or all, for a complete listing)
    fetched: int = 0  # texts read that hold words
    without_text: int = 0  # read, but no words: Zotero lists the attachment and holds no text for it
    removed: int = 0
    refused: str = ""  # why the texts were not pulled (no access, a failed request): the line it said


def pull_texts(source: object, store: Store, full: bool = False) -> TextReport | None:
    """The texts of the attachments brought up to the source's; None when the source has none to give
    (a snapshot file) or nothing moved since they were last listed."""
    lister: Callable[[int | None], TextListing] | None = getattr(source, "text_listing", None)
    fetcher = getattr(source, "fetch_texts", None)
    if lister is None or fetcher is None:
        return None
    state = store.sync_state
    source_id = str(getattr(source, "id", ""))
    since = None if full else _cursor(state.fulltext_cursor, source_id)
    if since is not None and since == state.library_version:
        return None
    try:
        listing = lister(since)
    except SourceError as failure:
        return _not_pulled(failure)
    held = store.fulltext_stamps()
    attachments = store.attachment_keys()
    wanted = {k: s for k, s in listing.stamps.items() if k in attachments and held.get(k) != s}
    gone = [key for key in held if key not in listing.stamps] if listing.complete else []
    try:
        with store.fulltext_writer() as writer:
            fetcher(wanted, writer.add)
    except SourceError as failure:
        return _not_pulled(failure, len(listing.stamps))
    with_text = writer.with_text
    version = listing.version if listing.version is not None else state.library_version
    cursor = json.dumps({"source": source_id, "version": version}) if listing.version is not None else ""
    store.save_fulltext((), remove=gone, cursor=cursor)
    removed = store.prune_fulltext() + len(gone)
    return TextReport(len(listing.stamps), with_text, len(wanted) - with_text, removed)


def _not_pulled(failure: SourceError, listed: int = 0) -> TextReport:
    """The texts could not be pulled: one warning line, and the sync goes on with the items it has
    stored. What was written stays; the listing is not remembered, so the next sync asks again."""
    if isinstance(failure, NoTextAccess):
        log.warning("%s", failure)
    else:
        log.warning("the PDFs' text was not brought up to date (the next sync tries again): %s", failure)
    return TextReport(listed, refused=str(failure))


def _cursor(stored: str | None, source_id: str) -> int | None:
    """The library version the texts were last listed at, if by this source."""
    try:
        cursor = json.loads(stored or "")
    except ValueError:
        return None
    if not isinstance(cursor, dict) or cursor.get("source") != source_id:
        return None
    version = cursor.get("version")
    return version if isinstance(version, int) else None


# -- reading it back ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PaperText:
    """A paper's PDF text as `zotsync.fulltext` gives it."""

    zotero_key: str
    text: str  # the text (or, with a query, its passages that match), at most max_chars
    attachments: list[str]  # the keys of the attachments it comes from
    truncated: bool  # there was more than max_chars

    def to_dict(self) -> dict[str, object]:
        return {
            "zotero_key": self.zotero_key,
            "text": self.text,
            "attachments": self.attachments,
            "truncated": self.truncated,
        }


def fulltext(
    config: Config, key: str, query: str | None = None, max_chars: int = DEFAULT_MAX_CHARS
) -> PaperText:
    """The PDF text of paper `key` (its attachments' texts, one after the other; `key` may name an
    attachment too), or with `query` the passages of it that hold the query's words, at most
    `max_chars` characters. An unknown key, or a paper without text, is a ConfigError naming it."""
    if max_chars < 1:
        raise ConfigError(f"max_chars must be 1 or more, not {max_chars}")
    with open_store(config, readonly=True, must_exist=True) as store:
        texts = store.paper_fulltext(key)
    if not texts:
        raise ConfigError(
            f"no full text in the store for {key!r} (is fulltext.enabled on, and was it synced?)"
        )
    whole = "\n\n".join(text for _, text in texts)
    keys = [attachment for attachment, _ in texts]
    if query:
        whole = passages(whole, query)
    return PaperText(key, whole[:max_chars], keys, len(whole) > max_chars)


def passages(text: str, query: str, around: int = 300) -> str:
    """The pieces of `text` around each occurrence of the query's words, joined by `…`."""
    parsed = searchtext.parse_query(query[:MAX_QUERY])
    spans: list[tuple[int, int]] = []
    for hit in parsed.pattern.finditer(text):
        start, end = max(0, hit.start() - around), min(len(text), hit.end() + around)
        if spans and start <= spans[-1][1]:
            spans[-1] = (spans[-1][0], end)
        else:
            spans.append((start, end))
    return "\n…\n".join(text[start:end] for start, end in spans)


def snippet(text: str, query: searchtext.Query) -> str:
    """One line of `text` around the first place the query's words occur (accents folded), about
    searchtext.SNIPPET characters."""
    if len(text) <= searchtext.SNIPPET:
        return searchtext.clean(text)
    hit = None
    # As the index matched: whole words first (`tile` at "tile", not inside "tiles"), then anywhere.
    for pattern in (_whole_words(query.words), query.pattern):
        hit = pattern.search(text) or pattern.search(searchtext.fold(text))
        if hit is not None:
            break
    start, end = (hit.start(), hit.end()) if hit else (0, 0)
    lead = max(0, start - searchtext.SNIPPET // 4)
    space = text.find(" ", lead, start)
    if lead and 0 <= space < lead + 15:
        lead = space + 1
    stop = min(len(text), max(end, lead + searchtext.SNIPPET))
    piece = searchtext.clean(text[lead:stop])
    return ("…" if lead else "") + piece + ("…" if stop < len(text) else "")


_WORD_CHAR = r"[^\W_]"


def _whole_words(words: Sequence[str]) -> re.Pattern[str]:
    """Where a query's words occur as whole words (a run of an unspaced script: anywhere)."""
    alternatives = []
    for word in sorted(words, key=len, reverse=True):
        escaped = re.escape(word)
        if searchtext.UNSPACED_RUN.search(word):
            alternatives.append(escaped)
        else:
            alternatives.append(f"(?<!{_WORD_CHAR}){escaped}(?!{_WORD_CHAR})")
    return re.compile("|".join(alternatives) or "(?!)", re.IGNORECASE)
