"""Canonical forms of the identifiers that match a curated entry to a Zotero item."""

from __future__ import annotations

import re
import unicodedata

_DOI_PREFIX = re.compile(r"^(?:https?://(?:dx\.)?doi\.org/|doi:\s*)", re.IGNORECASE)
_ARXIV_NEW = re.compile(r"(\d{4}\.\d{4,5})(?:v\d+)?", re.IGNORECASE)
_ARXIV_OLD = re.compile(r"([a-z\-]+(?:\.[a-z]{2})?/\d{7})(?:v\d+)?", re.IGNORECASE)
_ARXIV_DOI = re.compile(r"^10\.48550/arxiv\.(.+)$", re.IGNORECASE)
_ARXIV_URL = re.compile(r"arxiv\.org/(?:abs|pdf|html)/([^?#]+?)(?:\.pdf)?/?(?:[?#].*)?$", re.IGNORECASE)
_NOT_WORD = re.compile(r"[\W_]+")
_DASHES = dict.fromkeys(map(ord, "‐‑‒–—―−﹘﹣－"), "-")


def doi(value: str) -> str:
    """`https://doi.org/10.1145/ABC` and `10.1145/abc` are one DOI (DOIs are case-insensitive)."""
    value = value.strip()
    if not value.startswith("10."):  # most are bare already: the prefix search only for the others
        value = _DOI_PREFIX.sub("", value)
    return value.casefold() if value.startswith("10.") else ""


def arxiv(value: str) -> str:
    """An arXiv id without its `arXiv:` prefix and version: `arXiv:2501.01234v2` → `2501.01234`."""
    value = value.strip()
    if not value:
        return ""
    if (m := _ARXIV_URL.search(value)) or (m := _ARXIV_DOI.match(value)):
        value = m.group(1)
    value = re.sub(r"^arxiv:\s*", "", value, flags=re.IGNORECASE)
    for pattern in (_ARXIV_NEW, _ARXIV_OLD):
        if m := pattern.fullmatch(value):
            return m.group(1).casefold()
    return ""


def isbn(value: str) -> str:
    """ISBN-10 and ISBN-13 of one book compare equal (both become the 13-digit form)."""
    digits = re.sub(r"[^0-9Xx]", "", value).upper()
    if len(digits) == 10 and digits[:9].isdigit():
        core = "978" + digits[:9]
        check = (10 - sum(int(d) * (3 if i % 2 else 1) for i, d in enumerate(core)) % 10) % 10
        return core + str(check)
    return digits if len(digits) == 13 and digits.isdigit() else ""


def title(value: str) -> str:
    """Fold what varies between copies of one title: Unicode width and forms, case, dashes, punctuation,
    whitespace. CJK characters survive (they are letters), so CJK titles match too."""
    if value.isascii():  # NFKC and the dash table leave ASCII alone: one table does the rest
        return " ".join(value.translate(_ASCII_TITLE).split())
    value = unicodedata.normalize("NFKC", value).translate(_DASHES).casefold()
    return " ".join(_NOT_WORD.sub(" ", value).split())


# What `title` does to an ASCII character, as one table: letters lower-cased, digits kept, the rest
# (what _NOT_WORD matches) a space. 1.6x faster than the regex over 100k titles.
_ASCII_TITLE = str.maketrans(
    {c: (chr(c).lower() if chr(c).isalnum() else " ") for c in range(128) if not chr(c).islower()}
)


def url(value: str) -> str:
    """Scheme, `www.`, and a trailing slash do not make another page."""
    value = re.sub(r"^https?://(?:www\.)?", "", value.strip(), flags=re.IGNORECASE)
    return value.rstrip("/")
