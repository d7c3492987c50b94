"""Data written as Markdown text: whatever Zotero or the catalogue holds renders as that very text.

Every page zotsync writes builds its Markdown from these functions: a title, a venue, a tag or a category
name becomes text on one line that no Markdown renderer turns into a link, an image, an attribute list,
raw HTML, emphasis or an include. The renderers in view are CommonMark (markdown-it, GitHub) and
python-markdown with the extensions MkDocs Material sites use (attr_list, md_in_html, footnotes, abbr,
def_list, admonition, and pymdownx's arithmatex, caret, critic, details, emoji, keys, magiclink, mark,
smartsymbols, snippets, superfences, tabbed, tasklist, tilde).

Only what could form markup is escaped, so ordinary text stays as it was written ("No Bubbles!",
"MLIR: Scaling", "ACM/IEEE"). Where a backslash escape works in every renderer (python-markdown accepts
it for \\ ` * _ [ ] # + - . ! ( ) only) it is used; elsewhere a numeric character reference, which every
renderer shows as the character and none reads as syntax. Typography a site's smartsymbols extension
applies to ordinals (48th → 48<sup>th</sup>) is left to the site: it adds no link or attribute, and
escaping it would change ordinary venue names.

A curator's links are links (`link`), with targets that could run code written as text.
"""

from __future__ import annotations

import functools
import html
import re
from collections.abc import Callable

from ..text import FLATTEN_CHANGES, flatten

# Always escaped: they open constructs on their own.
#   \ ` * _ [ ]  escapes, code spans, emphasis, links, images, footnotes, task lists
#   #            headings (python-markdown drops a heading's trailing #) and magiclink's #123
#   < > &        raw HTML, autolinks, entities (&colon;) and snippets (--8<--)
#   {            attribute lists ({: onclick=… }) and CriticMarkup ({++ ++}), read before any escape
#   ~ ^ $ @      tilde and caret (~sub~, ^sup^, single ones too), arithmatex ($x$), mentions and mail
_ALWAYS = {
    "\\": "\\\\",
    "`": "\\`",
    "*": "\\*",
    "_": "\\_",
    "[": "\\[",
    "]": "\\]",
    "#": "\\#",
    "<": "&lt;",
    ">": "&gt;",
    "&": "&amp;",
    "{": "&#123;",
    "~": "&#126;",
    "^": "&#94;",
    "$": "&#36;",
    "@": "&#64;",
}
# Escaped where they would form something. Each alternative starts with the character to escape (so
# the scan skips to the next candidate in C) and looks around it; a run of `+` or `=` is escaped whole.
_IN_CONTEXT = (
    r"\+\++|\+(?=/-)",  # keys (++ctrl++), CriticMarkup closers, smartsymbols (+/-)
    r"==+|=(?=/=)",  # mark (==x==), tabs (===), smartsymbols (=/=)
    r":(?=[\w+-]+(?::|\Z))",  # emoji (:smile:), also when a template's `:` follows the text
    # magiclink's bare links (http://, https://, ftp://, ftps://, www.)
    r":(?=//)(?:(?<=[hH][tT][tT][pP]:)|(?<=[hH][tT][tT][pP][sS]:)|(?<=[fF][tT][pP]:)|(?<=[fF][tT][pP][sS]:))",
    r"\.(?<=[wW][wW][wW]\.)",
    r"!(?=[1-9])|\?(?=[1-9])",  # magiclink's pull requests (!12) and discussions (?12)
    r"\((?=(?:c|r|tm)\))",  # smartsymbols (c) (r) (tm)
    r"/(?<=c/)(?=o)",  # smartsymbols c/o (an escaped `_` beside it would end the word)
    r"/(?<=[1-7]/)(?<![0-9][1-7]/)(?=[2-8](?![0-9]))",  # smartsymbols fractions (1/2 … 7/8)
)
# One alternative per character, not a class: when every alternative starts with a literal, the regex
# engine skips in C to the next character that may start one (most text has none: it comes back as is).
_MARKUP = re.compile("|".join((*map(re.escape, _ALWAYS), *_IN_CONTEXT)))
# In a table cell a `|` would end the cell, too.
_MARKUP_CELL = re.compile("|".join((*map(re.escape, _ALWAYS), r"\|", *_IN_CONTEXT)))
# Characters `flatten` changes (it also changes spaces that are doubled, leading or trailing).
_FLATTEN = re.compile(f"[{FLATTEN_CHANGES}]")
# magiclink's commits: a word of 40 hex digits, any Unicode digit counting as one (an escaped `_` beside
# it ends the word). Rare: looked for in a second pass, on text already escaped.
_HEX_RUN = re.compile(r"[a-fA-F\d]{40}")
_HEX_WORD = re.compile(r"(?<![^\W_])[a-fA-F\d](?=[a-fA-F\d]{39}(?![^\W_]))")
# A line's first character: lists (- + 1. 1)), definitions (:), admonitions (!!!), details (???),
# tabs (===); and `\[`, math when the line ends in `\]`.
_LINE_START = re.compile(r"[-+:!?=]|\d+(?=[.)](?:\s|\Z))")
_BACKSLASHED = frozenset("-+.!()|")
_LAST_BANG = re.compile(r"(?<!\\)(?:\\\\)*!\Z")  # a last `!` that no backslash escapes


def _escape(char: str) -> str:
    return _ALWAYS.get(char) or ("\\" + char if char in _BACKSLASHED else f"&#{ord(char)};")


def _replace(match: re.Match[str]) -> str:
    found = match.group(0)
    return _escape(found) if len(found) == 1 else "".join(map(_escape, found))


def inline(text: str) -> str:
    """`text` as Markdown text inside a line (a heading's words, a sentence): one line without controls
    or bidi overrides, forming no markup."""
    if _FLATTEN.search(text) or "  " in text or text[:1] == " " or text[-1:] == " ":
        text = flatten(text)
    text = _MARKUP.sub(_replace, text)
    return _HEX_WORD.sub(_replace, text) if len(text) >= 40 and _HEX_RUN.search(text) else text


# A heading may hold no `<` or `>` in any form. A site takes a page's title from its first heading, as
# HTML, and MkDocs Material writes `<title>{{ page.title | striptags }}`: markupsafe's `striptags` decodes
# every reference (named or numeric: it runs html.unescape) after it strips tags, so an escaped
# `&lt;/title&gt;&lt;script&gt;` became a live `</title><script>`. No escape survives that, so the brackets
# become their fullwidth forms, which read alike and are markup nowhere. An `&` that starts a reference
# (`&lt;` typed into Zotero) becomes `＆` too, else the title would show it decoded once too often (`<`);
# any other `&` stays `&amp;` (AT&T), which the title decodes to the `&` it was.
_HEADING_BRACKETS = str.maketrans({"<": "\uff1c", ">": "\uff1e"})
# html.unescape's own pattern of what it decodes; a match it leaves as it is (`&T`) is no reference.
_REFERENCE = re.compile(r"&(?:#[0-9]+;?|#[xX][0-9a-fA-F]+;?|[^\t\n\f <&#;]{1,32};?)")


def heading(text: str) -> str:
    """`text` as a heading's words (every heading of a page, the one its title comes from first):
    `inline`, with `<`, `>` and an `&` that starts a reference written as `＜`, `＞` and `＆`."""
    text = flatten(text)  # first: a control dropped from `&l\x00t;` would make a reference of it
    if "&" in text:
        text = _REFERENCE.sub(_lookalike_ampersand, text)
    return inline(text.translate(_HEADING_BRACKETS))


def _lookalike_ampersand(match: re.Match[str]) -> str:
    found = match.group(0)
    return found if html.unescape(found) == found else "\uff06" + found[1:]


def cell(text: str) -> str:
    """`text` as a table cell's text: `inline`, and a `|` escaped so the cell stays one cell."""
    # inline's body again, with the other pattern: a page calls this for each of its cells
    if _FLATTEN.search(text) or "  " in text or text[:1] == " " or text[-1:] == " ":
        text = flatten(text)
    text = _MARKUP_CELL.sub(_replace, text)
    return _HEX_WORD.sub(_replace, text) if len(text) >= 40 and _HEX_RUN.search(text) else text


def line(text: str) -> str:
    """`text` as a line of its own (a paragraph, a list item's words): `inline`, with a first character
    that would start a list, a definition or a block written as text."""
    return _line_start(inline(text))


def _line_start(text: str) -> str:
    """Escaped text with its first character written as text where it would start a block."""
    if text.startswith("\\["):  # arithmatex takes a block `\[…\]` for display math
        return "&#91;" + text[2:]
    start = _LINE_START.match(text)
    if start is None:
        return text
    if start.group(0)[0].isdigit():  # `1.` `1)`: the marker after the digits
        end = start.end()
        return text[:end] + _escape(text[end]) + text[end + 1 :]
    return _escape(text[0]) + text[1:]


def fragment(text: str) -> str:
    """A piece of a line whose neighbours are written by someone else (a text node of a note converted
    from HTML): `cell`'s escaping, a space kept at either end (the words around it need it), a first
    character that would start a list, a heading, a definition or a block escaped, as it may begin a line,
    and a last `!` escaped, as a link may follow it (`![…](…)` is an image)."""
    if not text:
        return ""
    core = cell(text)
    if not core:
        return " " if text.isspace() else ""
    core = _line_start(core)
    before = " " if text[:1].isspace() else ""
    after = " " if text[-1:].isspace() else ""
    if not after and _LAST_BANG.search(core):
        core = core[:-1] + _escape("!")
    return before + core + after


# -- links ---------------------------------------------------------------------------------------------

# Link targets written as links: the web, mail, Zotero's own, DOIs, and paths relative to the page.
LINK_SCHEMES = frozenset({"http", "https", "mailto", "zotero", "doi"})
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
# An entity in a link target (`&colon;`) is decoded by Markdown renderers: keep it literal text.
_ENTITY = re.compile(r"&(?=#?[A-Za-z0-9]+;)")
_TARGET_CODES = {" ": "%20", "(": "%28", ")": "%29", "|": "%7C", "<": "%3C", ">": "%3E", "\\": "%5C"}
_TARGET_CHARS = re.compile("[" + re.escape("".join(_TARGET_CODES)) + "]")
_TARGET_SPECIAL = re.compile("[" + FLATTEN_CHANGES + r" ()|<>\\&]")


def link(label: str, url: str, text: Callable[[str], str] = inline) -> str:
    """`[label](target)`, or the label and the target as text when the target is not a safe link.
    `text` writes the label (and a refused target): `cell` inside a table."""
    target = link_target(url)
    if not safe_target(target):
        return text(f"{label} ({flatten(url)})" if url.strip() else label)
    return f"[{_label(label, text)}]({target})"


@functools.lru_cache(maxsize=1024)  # a page repeats a handful of labels on every row
def _label(label: str, text: Callable[[str], str]) -> str:
    return text(label)


def safe_target(target: str) -> bool:
    scheme = _SCHEME.match(target)
    return bool(target) and (scheme is None or scheme.group(1).lower() in LINK_SCHEMES)


def link_target(url: str) -> str:
    """A link target on one line, like cell text, with what would end a Markdown link or break the table
    around it percent-encoded."""
    if not _TARGET_SPECIAL.search(url):
        return url
    url = flatten(url)
    return _ENTITY.sub("\\\\&", _TARGET_CHARS.sub(lambda m: _TARGET_CODES[m.group(0)], url))
