"""Text from Zotero or a catalogue made safe to show: on a terminal, in a one-line message, in an export.

A title may hold anything a Zotero client or the API accepted: ESC sequences that retitle a terminal
window or clear the screen, BEL, bidi overrides that make `evil.exe` read as `exe.live`, line breaks that
turn one message into two. zotsync shows such characters as visible escapes on a terminal, and drops them
from the pages it publishes.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from typing import Any

MAX_QUERY = 1000  # characters of a search's query (kept here: a search by meaning needs no more)

# The character sets below are built from these pieces, so each kind of control is listed once.
_DEL_C1_BIDI = "\x7f-\x9f\u202a-\u202e\u2066-\u2069"  # DEL, C1, bidi embeddings/overrides/isolates
_LINE_SEPARATORS = "\u2028\u2029"
# C0 and C1 controls, DEL, the bidi embeddings/overrides/isolates, and the Unicode line and paragraph
# separators (one line must stay one line wherever it is shown).
UNSAFE = re.compile(f"[\x00-\x1f{_DEL_C1_BIDI}{_LINE_SEPARATORS}]")
# What json.dumps leaves raw: it escapes C0 itself, and the layout's own line breaks must stay.
_JSON_RAW = re.compile(f"[{_DEL_C1_BIDI}{_LINE_SEPARATORS}]")
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match.group(0)
    return _SHORT.get(char) or (f"\\x{ord(char):02x}" if ord(char) <= 0xFF else f"\\u{ord(char):04x}")


def one_line(text: str) -> str:
    """`text` as one printable line: every control, line break and bidi override as a visible escape
    (`\\n`, `\\x1b`, `\\u202e`), so it can neither forge a second line nor drive the terminal."""
    return UNSAFE.sub(_escape, text)


def one_line_each(data: Any) -> Any:
    """`data` (a report of dicts, lists and strings) with every string made `one_line`, so a report
    formatted line by line keeps one line per row whatever a title holds."""
    if isinstance(data, str):
        return one_line(data)
    if isinstance(data, dict):
        return {key: one_line_each(value) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [one_line_each(value) for value in data]
    return data


def printable(text: str) -> str:
    """Like `one_line` but keeps the line breaks of output that is meant to span lines."""
    return "\n".join(one_line(line) for line in text.split("\n"))


# The unsafe characters that str.split() takes for whitespace: they separate words.
_SPACES = "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f\x85\u2028\u2029"


# Every character `flatten` may change, beyond a space that is doubled, leading or trailing: the unsafe
# ones and what str.split() takes for whitespace. A regex character class, for a caller's quick check
# that a text needs no flattening.
FLATTEN_CHANGES = f"\x00-\x1f{_DEL_C1_BIDI}{_LINE_SEPARATORS}\xa0\u1680\u2000-\u200a\u202f\u205f\u3000"


def flatten(text: str) -> str:
    """`text` on one line for a page: each run of whitespace (line breaks too) as one space, other
    controls and bidi overrides dropped."""
    return " ".join(strip_unsafe(text, keep=_SPACES).split())


def blank(text: str) -> bool:
    """Whether `text` shows nothing on a page: empty, or only whitespace, controls and bidi overrides."""
    return not text or (not text[0].isalnum() and not flatten(text))  # most text starts with a letter


def strip_unsafe(text: str, keep: str = "") -> str:
    """`text` without controls and bidi overrides (for the exports), except the characters in `keep`."""
    return UNSAFE.sub(lambda m: m.group(0) if m.group(0) in keep else "", text)


# The same, less tab and the line breaks a multi-line data cell keeps (CR is a line break there too):
# a regex character class, for a caller that looks for these and more in one search.
DATA_CONTROLS = f"\x00-\x08\x0b\x0c\x0e-\x1f{_DEL_C1_BIDI}"
_DATA_UNSAFE = re.compile(f"[{DATA_CONTROLS}]")


def strip_controls(text: str) -> str:
    """`text` without controls and bidi overrides, keeping its tabs and line breaks: for data cells."""
    return _DATA_UNSAFE.sub("", text)


def json_safe(text: str) -> str:
    """JSON text (as `json.dumps(..., ensure_ascii=False)` writes it) with the unsafe characters it
    leaves raw written as `\\uXXXX` escapes: the same data, harmless on a terminal. Those characters
    can only occur inside JSON strings, where the escape means exactly the character."""
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


def counted(count: int, noun: str, plural: str = "") -> str:
    """`1 item`, `2 items`: a count and its noun, singular for one (`plural` when not noun + s)."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


def closest(word: str, choices: Iterable[str]) -> str | None:
    """The nearest of `choices` to `word`, or None when none is close."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return close[0] if close else None


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """` (did you mean 'status'?)` for the nearest of `choices`, or "" when none is close."""
    near = closest(word, choices)
    return f" (did you mean '{near}'?)" if near else ""
