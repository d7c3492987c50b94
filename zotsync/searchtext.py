"""What full-text search reads and finds, as pure functions: the text of a note (Zotero's HTML), the
searchable text of a paper, the words of a query, and where a hit matched, with a snippet.

Two FTS5 indexes in the store answer a query (store/search.py). The `trigram` tokenizer finds any
substring of three or more characters in any script, case-insensitively: `tensor` in "TensorIR",
`编译器` in "张量编译器". It cannot find shorter ones (a two-character Chinese word such as `张量`, or
`IR`), so a second, small index holds what such terms match: each run of a script written without
spaces (Chinese, Japanese, Korean, Thai, …) as its character bigrams plus its last character, and each
word of one or two characters of the other scripts. A one- or two-character term then matches a bigram
(or, for one character, the start of one): anywhere in an unspaced script, a whole word in a spaced
one (`IR` finds "IR" and "ir", not "their").

A query's words are split at spaces and punctuation (`tile-lang` is `tile` and `lang`) and must all
occur in the paper, in any of its fields.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from html.parser import HTMLParser

from .text import flatten

# The searchable fields of a paper, in the indexes' column order, and what `where` calls each.
COLUMNS = ("title", "authors", "tags", "abstract", "why", "notes", "annotations")
WHERE = ("title", "authors", "tags", "abstract", "why", "note", "annotation")
# bm25 weights: a word in the title says more about a paper than one in a long note.
WEIGHTS = (10.0, 4.0, 4.0, 2.0, 10.0, 1.0, 1.0)
# Between the pieces of a field (the notes of a paper, its annotations): a newline, which a piece never
# holds (each is flattened), so that a snippet stays within one note.
PIECES = "\n"

# Scripts written without spaces between words, whose runs the short index splits into bigrams: Thai,
# Lao, Myanmar, Khmer, Hiragana, Katakana, Bopomofo, Hangul, CJK ideographs (and their extensions),
# halfwidth Katakana.
_UNSPACED = (
    "\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3100-\u312f\u31a0-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f"
)
UNSPACED = _UNSPACED  # as a regular expression's character class, for the PDFs' text index
_UNSPACED_RUN = re.compile(f"[{_UNSPACED}]+")
UNSPACED_RUN = _UNSPACED_RUN
# A word character of the spaced scripts (letters and digits; `_` separates, as for the tokenizer).
_LETTER = f"[^\\W_{_UNSPACED}]"
_SPACED_WORD = re.compile(f"{_LETTER}+")
# What the short index holds of a text: unspaced runs, and words of one or two characters.
_SHORT = re.compile(f"[{_UNSPACED}]+|(?<!{_LETTER}){_LETTER}{{1,2}}(?!{_LETTER})")
# The same in a text without unspaced runs, where a letter is any word character but `_`: a smaller class,
# twice as fast.
_SHORT_WORDS = re.compile(r"(?<![^\W_])[^\W_]{1,2}(?![^\W_])")
# A query's words: what is left between spaces and punctuation.
_QUERY_WORD = re.compile(r"[^\W_]+")

SNIPPET = 160  # characters of a snippet, about


def clean(text: str) -> str:
    """`text` as the indexes hold it: one line (runs of whitespace as one space, controls and bidi
    overrides dropped) in Unicode NFC, so that "é" typed either way is the same character."""
    text = flatten(text)
    return text if unicodedata.is_normalized("NFC", text) else unicodedata.normalize("NFC", text)


# Between a field's text and its accent-folded copy in the index (`with_folded`): a control character,
# which `clean` never leaves in a text.
FOLDED = "\x1e"


def fold_char(char: str) -> str:
    """`char` without its diacritics, as the HTML page's filter folds (NFKD, marks dropped), when that
    leaves one character (`ü` → `u`, `ğ` → `g`); else `char` itself, so that folding keeps every place."""
    parts = "".join(c for c in unicodedata.normalize("NFKD", char) if not unicodedata.combining(c))
    return parts if len(parts) == 1 else char


_FOLDS: dict[str, str] = {}
_ASCII = frozenset(map(chr, range(128)))


def fold(text: str) -> str:
    """`text` with each letter's diacritics taken off, one character for one (a match's place in the
    folded text is its place in `text`)."""
    if text.isascii():
        return text
    table: dict[int, str] = {}
    for char in set(text) - _ASCII:  # the distinct characters, found in C however long the text
        folded = _FOLDS.get(char)
        if folded is None:
            folded = _FOLDS[char] = fold_char(char)
        if folded != char:
            table[ord(char)] = folded
    return text.translate(table) if table else text


def with_folded(text: str) -> str:
    """A field as the index holds it: its text, then, when folding changes it, its folded copy, so that
    `muller` finds "Müller" (the trigram tokenizer of this SQLite cannot fold)."""
    folded = fold(text)
    return text if folded == text else text + FOLDED + folded


def join(pieces: Iterable[str]) -> str:
    """The pieces of one field (each note, each annotation), cleaned, empty ones left out."""
    return PIECES.join(piece for piece in map(clean, pieces) if piece)


# -- notes -------------------------------------------------------------------------------------------

_BLOCKS = frozenset(
    {"address", "article", "aside", "blockquote", "br", "dd", "div", "dl", "dt", "figcaption", "figure"}
    | {"footer", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr", "li", "main", "nav", "ol", "p", "pre"}
    | {"section", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "ul"}
)
_HIDDEN = frozenset({"script", "style", "template", "title", "head"})


class _NoteText(HTMLParser):
    def __init__(self, between: str = " ") -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._hidden = 0
        self._between = between

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _HIDDEN:
            self._hidden += 1
        elif tag in _BLOCKS:
            self.parts.append(self._between)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _BLOCKS:
            self.parts.append(self._between)

    def handle_endtag(self, tag: str) -> None:
        if tag in _HIDDEN:
            self._hidden = max(0, self._hidden - 1)
        elif tag in _BLOCKS:
            self.parts.append(self._between)

    def handle_data(self, data: str) -> None:
        if not self._hidden:
            self.parts.append(data)


def note_text(html: str, between: str = " ") -> str:
    """The text a reader sees of a note's HTML: its words, no markup; blocks (paragraphs, list items,
    cells) apart (`between` them), scripts and styles left out, entities decoded. Read as a stream,
    without recursion, however deep the note nests."""
    if "<" not in html and "&" not in html:
        return html
    parser = _NoteText(between)
    parser.feed(html)
    parser.close()
    return "".join(parser.parts)


# A character a reader sees, outside tags: after the start or a `>`, past whitespace and entities (which
# may be `&nbsp;`), a character that is neither. Most notes have one in their first words.
_WORD = re.compile(r"(?:^|>)(?:\s|&#?\w+;)*[^\s<&]")
_MEDIA = re.compile(r"<(?:img|video)\b", re.IGNORECASE)  # what a page shows of a note without words


def blank_note(html: str) -> bool:
    """Whether a note shows nothing: no words and no image (`<div class="zotero-note znv1"></div>`,
    empty paragraphs, `&nbsp;`). A note that is blank gives no note page, 📝 or Note link. Quick for
    the notes that have words (this runs over every note of the library): only a note without a word
    outside its tags is read in full."""
    if _WORD.search(html) or _MEDIA.search(html):
        return False
    return not note_text(html).strip()


# -- the short index -----------------------------------------------------------------------------------


def _bigrams(run: str) -> list[str]:
    """An unspaced run as the short index holds it: its bigrams, then its last character (so that every
    character starts a token, and a one-character query finds the last one too)."""
    return [run[i : i + 2] for i in range(len(run) - 1)] + [run[-1]]


bigrams = _bigrams


def short_terms(text: str) -> str:
    """What the short index holds of `text` (cleaned), as space-separated tokens."""
    if not _UNSPACED_RUN.search(text):  # most text: only its short words, found in C
        return " ".join(_SHORT_WORDS.findall(text))
    tokens: list[str] = []
    for found in _SHORT.findall(text):
        if _UNSPACED_RUN.match(found):
            tokens += _bigrams(found)
        else:
            tokens.append(found)
    return " ".join(tokens)


# -- queries -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Query:
    """A query's words: `long` (three characters or more) for the trigram index, `short` for the other.
    Each is an FTS5 MATCH expression (the words ANDed), or "" when the query has no such word."""

    words: tuple[str, ...]
    long: str
    short: str

    @property
    def pattern(self) -> re.Pattern[str]:
        """Where each word occurs in a text, as the indexes match it (for `where` and the snippet)."""
        return _pattern(self.words)


def parse_query(text: str) -> Query:
    """The words of a query; none (only spaces or punctuation) is an empty query."""
    words = tuple(dict.fromkeys(_QUERY_WORD.findall(clean(text))))
    long = [w for w in words if len(w) >= 3]
    short: list[str] = []
    for word in words:
        if len(word) < 3:
            short += [_short_match(part) for part in _script_parts(word)]
    return Query(words, " AND ".join(f'"{w}"' for w in long), " AND ".join(dict.fromkeys(short)))


def _script_parts(word: str) -> list[str]:
    """A short word split where an unspaced script meets another (`A张` is `A` and `张`), as the short
    index splits its text."""
    return [found for found in _SHORT.findall(word) or [word] if found]


def _short_match(part: str) -> str:
    if _UNSPACED_RUN.fullmatch(part) and len(part) == 1:
        return f'"{part}" *'  # the start of a bigram, or a run's last character
    return f'"{part}"'


def _pattern(words: Sequence[str]) -> re.Pattern[str]:
    alternatives = []
    for word in sorted(words, key=len, reverse=True):
        if len(word) >= 3 or _UNSPACED_RUN.match(word):
            alternatives.append(re.escape(word))  # a substring, as the trigram index (or a bigram) finds it
        else:
            for part in _script_parts(word):
                escaped = re.escape(part)
                alternatives.append(
                    escaped if _UNSPACED_RUN.match(part) else f"(?<!{_LETTER}){escaped}(?!{_LETTER})"
                )
    return re.compile("|".join(alternatives) or "(?!)", re.IGNORECASE)


# -- where it matched ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Found:
    where: str  # the field of the snippet (WHERE)
    snippet: str  # one line of that field around the first match
    fields: tuple[str, ...]  # every field that matched, in WHERE order


def locate(query: Query, columns: Sequence[str]) -> Found:
    """Where `query` matched a paper whose fields (in COLUMNS order) are `columns`: the field where most
    of its words occur (the earlier field on a tie), and a snippet there."""
    pattern = query.pattern
    best: tuple[int, int, re.Match[str]] | None = None
    fields = []
    parts = [text.partition(FOLDED) for text in columns]  # a match in the folded copy is shown unfolded
    for number, (text, _, folded) in enumerate(parts):
        hits = list(pattern.finditer(text)) if text else []
        hits = hits or (list(pattern.finditer(folded)) if folded else [])
        if not hits:
            continue
        fields.append(WHERE[number])
        distinct = len({hit.group(0).casefold() for hit in hits})
        if best is None or distinct > best[0]:
            best = (distinct, number, hits[0])
    if best is None:  # the index matched where the pattern cannot tell (a rare case fold): the title
        first = next((n for n, (text, _, _) in enumerate(parts) if text), 0)
        return Found(WHERE[first], _excerpt(parts[first][0] if parts else "", 0, 0), ())
    _, number, hit = best
    return Found(WHERE[number], _excerpt(parts[number][0], hit.start(), hit.end()), tuple(fields))


def _excerpt(text: str, start: int, end: int) -> str:
    """The piece of `text` (one note, one annotation, a title) holding the match at [start, end): whole
    when it is short, else about SNIPPET characters from a little before the match (at a word's start
    where one is near), with `…` where it was cut."""
    piece_start = text.rfind(PIECES, 0, start) + 1
    piece_end = text.find(PIECES, end)
    piece_end = len(text) if piece_end < 0 else piece_end
    if piece_end - piece_start <= SNIPPET:
        return text[piece_start:piece_end]
    lead = max(piece_start, min(start - SNIPPET // 4, piece_end - SNIPPET))
    if lead > piece_start:
        space = text.find(" ", lead, start)
        if 0 <= space < lead + 15:
            lead = space + 1
    stop = min(piece_end, max(end, lead + SNIPPET))
    if stop < piece_end:
        space = text.rfind(" ", max(end, stop - 15), stop)
        if space > 0:
            stop = space
    return ("…" if lead > piece_start else "") + text[lead:stop] + ("…" if stop < piece_end else "")
