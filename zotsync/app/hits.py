"""A search's hits as `zotsync search` shows them, apart from how they are found: a search by meaning
shows its hits without importing the keyword search (the catalogue, the matcher and the index)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

from ..errors import ConfigError
from ..text import MAX_QUERY, one_line


def check_length(text: str) -> None:
    """A search's text, by words or by meaning, is at most MAX_QUERY characters."""
    if len(text) > MAX_QUERY:
        raise ConfigError(f"the search text is {len(text)} characters long; at most {MAX_QUERY}")


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One paper a search found."""

    zotero_key: str  # empty for a curated entry that matches no Zotero item
    title: str  # the curated title if the catalogue lists the paper, else Zotero's
    categories: list[str] = field(default_factory=list)  # where the page places it
    # the field the snippet comes from: title, authors, tags, abstract, why, note, annotation, fulltext
    where: str = ""
    snippet: str = ""  # one line of that field around the match
    fields: list[str] = field(default_factory=list)  # every field that matched, in that order

    def to_dict(self) -> dict[str, object]:
        """What `search --format json` prints for the hit."""
        return asdict(self)

    as_json = to_dict  # the name of zotsync 0.2 and earlier

    def summary(self) -> str:
        """One line: the key, the title and where it matched."""
        return f"{self.zotero_key or '(curated)'} {self.title} [{self.where}]"


def format_hit(hit: SearchHit) -> str:
    """Two lines: key, title and categories; then where it matched and the snippet. What Zotero or the
    catalogue holds is made one line each, harmless on a terminal."""
    key = hit.zotero_key or "-" * 8
    categories = f"  [{one_line('; '.join(hit.categories))}]" if hit.categories else ""
    return f"{key}  {one_line(hit.title)}{categories}\n          {hit.where}: {one_line(hit.snippet)}"


def summary(hits: Sequence[SearchHit], limit: int) -> str:
    more = " (the first; --limit shows more)" if len(hits) == limit else ""
    return f"{len(hits)} paper{'' if len(hits) == 1 else 's'}{more}"
