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

# C0 and C1 controls, DEL, the bidi embeddings/overrides/isolates, and the Unicode line and paragraph
# separators (one line must stay one line wherever it is shown).
UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match.group(0)
    return _SHORT.get(char) or (f"\\x{ord(char):02x}" if ord(char) <= 0xFF else f"\\u{ord(char):04x}")


def one_line(text: str) -> str:
    """`text` as one printable line: every control, line break and bidi override as a visible escape
    (`\\n`, `\\x1b`, `\\u202e`), so it can neither forge a second line nor drive the terminal."""
    return UNSAFE.sub(_escape, text)


def printable(text: str) -> str:
    """Like `one_line` but keeps the line breaks of output that is meant to span lines."""
    return "\n".join(one_line(line) for line in text.split("\n"))


# The unsafe characters that str.split() takes for whitespace: they separate words.
_SPACES = "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f\x85\u2028\u2029"


def flatten(text: str) -> str:
    """`text` on one line for a page: each run of whitespace (line breaks too) as one space, other
    controls and bidi overrides dropped."""
    return " ".join(strip_unsafe(text, keep=_SPACES).split())


def strip_unsafe(text: str, keep: str = "") -> str:
    """`text` without controls and bidi overrides (for the exports), except the characters in `keep`."""
    return UNSAFE.sub(lambda m: m.group(0) if m.group(0) in keep else "", text)


def json_safe(text: str) -> str:
    """JSON text (as `json.dumps(..., ensure_ascii=False)` writes it) with the unsafe characters that
    JSON leaves raw written as `\\uXXXX` escapes: the same data, harmless on a terminal. Those
    characters can only occur inside JSON strings, where the escape means exactly the character."""
    return UNSAFE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """` (did you mean 'status'?)` for the nearest of `choices`, or "" when none is close."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""
