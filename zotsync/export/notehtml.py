"""A Zotero note (the HTML its note editor writes) as Markdown text for a note page.

markdownify does the conversion: its per-tag hooks (`convert_<tag>`) let each construct of Zotero's
HTML be written on purpose, it parses with BeautifulSoup on the standard library's `html.parser` (no C
parser to build), and its licence is MIT like zotsync's (html2text, the other candidate, is GPL-3.0, and
writes everything it does not know as text only through options, not hooks).

Whatever the note holds, the result follows the page's rule (`mdtext`): the structure (headings, lists,
tables, quotes, emphasis, code, links) is zotsync's, written by the hooks below; every text node is
escaped as `mdtext.fragment`, so no raw HTML, entity, attribute list, include or link forms from the
note's words; a link's target must be a safe one (`mdtext.safe_target`) or it is written as text; an
image is never embedded: an image of the note (`data-attachment-key`, a file Zotero keeps) becomes a
link to its Zotero item, any other a link to a web address or a placeholder. Code keeps its form where
no renderer reads anything in it (no `--8<--` include, CriticMarkup or highlighting shebang; a code
block only where its fence stands at the left margin: not in a list, a quote, a link or emphasis), and
is written as text otherwise. Spans (Zotero's
highlights, citations and colours) are unwrapped first, so that text split across them is escaped as one.

A link is a link only with a scheme the page may link to (`mdtext.LINK_SCHEMES`; `zotero:` only when
the page links into Zotero): a relative one (`figure1.png`, `#results`, `/\\evil.example/`) points at
nothing on the site, so it is written as text. A nested list is indented four spaces (at least its
marker's width), which python-markdown (MkDocs) and CommonMark (GitHub) both read as nesting.

A note nested deeper than MAX_DEPTH is refused (`TooDeep`): the conversion recurses once per element,
and no note the editor writes nests a tenth as deep. Attributes are read only where they hold plain
digits (an `<ol start>`, a cell's `colspan`), as markdownify would call int() on any other.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from typing import Any

from bs4 import BeautifulSoup, Tag
from markdownify import MarkdownConverter

from ..text import strip_controls
from .mdtext import LINK_SCHEMES, fragment, link_target, safe_target

# What a renderer reads even inside code: python-markdown's snippets (`--8<-- "file"` includes a file)
# and CriticMarkup ({++ ++} and its kin) run before code is recognised; pymdownx.inlinehilite reads a
# code span starting `#!lang` or `:::lang` as a language to highlight.
_READ_IN_CODE = re.compile(r"-+8<-+|\{(?:\+\+|--|~~|==|>>)")
_SHEBANG = re.compile(r"\s*(?:#!|:::)")
_BACKTICKS = re.compile(r"`+")
# The only elements a fenced code block may stand in. Any other (a list item, a quote, a link, emphasis)
# puts the fence off the left margin or inside its own markers (`- `, `> `, `[…](…)`, `**…**`), where
# python-markdown and markdown-it read what the block holds as Markdown and HTML (a `<script>` in the
# code of a list item became an element, a `[x](javascript:…)` in the code of a link a link).
_FENCE_MAY_STAND_IN = frozenset(
    {"[document]", "html", "body", "div", "p", "section", "article", "main", "header", "footer", "aside"}
)
_BLANK_LINES = re.compile(r"\n{3,}")

# Text of these never reaches the page (markdownify drops script and style itself).
_DROPPED = ("head", "title", "template", "noscript", "iframe", "object", "embed", "svg", "math", "audio")

# Elements within elements a note may nest: markdownify takes about three Python frames for each (a
# note nested 330 deep exhausted Python's recursion limit).
MAX_DEPTH = 40
# Lists and quotes within lists and quotes: a list is two levels of a renderer's block nesting (the
# list, its item), and markdown-it stops nesting at 20 (its maxNesting).
MAX_BLOCK_DEPTH = 8
_BLOCK_NESTING = frozenset({"ul", "ol", "blockquote"})
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")
# An `<ol start>` and a cell's `colspan` as markdownify may read them: ASCII digits, few enough that a
# row stays a row and an item's marker at most 7 wide ("99999. "), so that the lines nested in it are
# indented at most 3 spaces past python-markdown's 4 (more would make them code).
_START = re.compile(r"[0-9]{1,4}")
_COLSPAN = re.compile(r"[1-9][0-9]{0,2}")
_INDENT = 4  # python-markdown reads a line indented 4 spaces (its tab length) as nested in an item


class TooDeep(ValueError):
    """A note nested deeper than a page shows: its page shows it as plain text."""


class _NoteConverter(MarkdownConverter):
    def __init__(
        self,
        headings_below: int,
        image: Callable[[str, str], str],
        schemes: Collection[str] = LINK_SCHEMES,
        **options: Any,
    ) -> None:
        super().__init__(
            heading_style="atx",
            bullets="-",
            strong_em_symbol="*",
            escape_asterisks=False,  # `escape` below escapes every text node in full
            escape_underscores=False,
            escape_misc=False,
            autolinks=False,
            newline_style="spaces",
            **options,
        )
        self.headings_below = headings_below
        self.image = image
        self.schemes = schemes
        self.numbers: dict[int, int] = {}  # id() of each item of an ordered list → its number

    def escape(self, text: str, parent_tags: Any) -> str:
        return fragment(text)

    def convert_hN(self, n: int, el: Any, text: str, parent_tags: Any) -> str:
        heading = super().convert_hN  # type: ignore[misc]  # made for h1…h6 by markdownify's get_conv_fn
        return str(heading(min(6, n + self.headings_below), el, text, parent_tags))

    def convert_a(self, el: Any, text: str, parent_tags: Any) -> str:
        if "_noformat" in parent_tags:
            return text
        href = str(el.get("href") or "").strip()
        label = text.strip()
        if not href:
            return text
        target = link_target(href)
        scheme = _SCHEME.match(target)
        if scheme is not None and scheme.group(1).lower() == "zotero" and "zotero" not in self.schemes:
            return text if label else fragment(href)  # an address only Zotero opens: its words alone
        if scheme is None or scheme.group(1).lower() not in self.schemes or not safe_target(target):
            return f"{text} ({fragment(href)})" if label else fragment(href)
        return f"[{label or fragment(href)}]({target})"

    def convert_li(self, el: Any, text: str, parent_tags: Any) -> str:
        text = (text or "").strip()
        if not text:
            return "\n"
        number = self.numbers.get(id(el))
        bullet = "- " if number is None else f"{number}. "
        indent = " " * max(_INDENT, len(bullet))
        lines = text.split("\n")
        rest = [indent + each if each else "" for each in lines[1:]]
        # An item of paragraphs ends in a blank line, or python-markdown reads the next item into them.
        return "\n".join([bullet + lines[0], *rest]) + ("\n\n" if "\n\n" in text else "\n")

    def convert_blockquote(self, el: Any, text: str, parent_tags: Any) -> str:
        quote = str(super().convert_blockquote(el, text, parent_tags))  # type: ignore[misc]
        # python-markdown reads a quote in an item only after a blank line
        return "\n" + quote if "li" in parent_tags and quote.strip() else quote

    def convert_ol(self, el: Any, text: str, parent_tags: Any) -> str:
        converted = str(self.convert_list(el, text, parent_tags))  # type: ignore[attr-defined]
        first = next((self.numbers[id(item)] for item in el.find_all("li", recursive=False)), 1)
        if "li" in parent_tags and first != 1:
            return "\n" + converted  # CommonMark starts a list within a paragraph only at 1
        return converted

    def convert_img(self, el: Any, text: str, parent_tags: Any) -> str:
        return self.image(str(el.get("data-attachment-key") or ""), str(el.get("src") or ""))

    def convert_video(self, el: Any, text: str, parent_tags: Any) -> str:
        return self.image("", str(el.get("src") or ""))

    def convert_code(self, el: Any, text: str, parent_tags: Any) -> str:
        if "_noformat" in parent_tags:
            return text
        return code_span(text, in_cell="_inline" in parent_tags)

    convert_kbd = convert_code
    convert_samp = convert_code

    def convert_pre(self, el: Any, text: str, parent_tags: Any) -> str:
        code = strip_controls(text).strip("\n")
        if not code.strip():
            return ""
        if not parent_tags <= _FENCE_MAY_STAND_IN or _READ_IN_CODE.search(code):
            lines = [fragment(line).strip() for line in code.splitlines()]
            return "\n\n" + "  \n".join(line for line in lines if line) + "\n\n"
        fence = "`" * max(3, 1 + max(map(len, _BACKTICKS.findall(code)), default=0))
        return f"\n\n{fence}\n{code}\n{fence}\n\n"


def code_span(text: str, in_cell: bool = False) -> str:
    """Inline code: a code span where no renderer reads its content, else the text as text."""
    code = " ".join(strip_controls(text).split())
    if not code:
        return ""
    if _READ_IN_CODE.search(code) or _SHEBANG.match(code) or (in_cell and "|" in code):
        return fragment(code)
    fence = "`" * (1 + max(map(len, _BACKTICKS.findall(code)), default=0))
    padded = f" {code} " if code[:1] == "`" or code[-1:] == "`" else code
    return f"{fence}{padded}{fence}"


def _plain_colspans(soup: BeautifulSoup) -> None:
    """Drop each `colspan` that is no small number of ASCII digits: markdownify calls int() on whatever
    str.isdigit() accepts (`²` fails, and so do 5,000 digits)."""
    for cell in soup.find_all(["td", "th"], colspan=True):
        if not _COLSPAN.fullmatch(str(cell["colspan"])):
            del cell["colspan"]


def _check_depth(soup: BeautifulSoup) -> None:
    """Raise TooDeep when the note nests elements deeper than a page can show (walked without
    recursion: the note may nest 100,000 deep)."""
    stack: list[tuple[Tag, int, int]] = [(soup, 0, 0)]
    while stack:
        node, depth, blocks = stack.pop()
        for child in node.children:
            if isinstance(child, Tag):
                nested = blocks + (child.name in _BLOCK_NESTING)
                if depth + 1 > MAX_DEPTH or nested > MAX_BLOCK_DEPTH:
                    raise TooDeep(
                        f"it nests elements more than {MAX_DEPTH} deep, or lists and quotes more than "
                        f"{MAX_BLOCK_DEPTH}"
                    )
                stack.append((child, depth + 1, nested))


def _numbers(soup: BeautifulSoup) -> dict[int, int]:
    """Each item of an ordered list → its number: from the list's `start` when that is plain digits."""
    numbers: dict[int, int] = {}
    for ordered in soup.find_all("ol"):
        start = str(ordered.get("start") or "").strip()
        first = int(start) if _START.fullmatch(start) else 1
        items = ordered.find_all("li", recursive=False)
        numbers.update((id(item), first + n) for n, item in enumerate(items))
    return numbers


def note_markdown(
    html: str,
    headings_below: int,
    image: Callable[[str, str], str],
    schemes: Collection[str] = LINK_SCHEMES,
) -> str:
    """The note's HTML as Markdown, headings `headings_below` levels lower (a note's h1 under the page's
    own headings); `image(attachment_key, src)` writes an image (a link or a placeholder, never one
    embedded); a link is one only with a scheme of `schemes`. Raises TooDeep for a note nested deeper
    than a page shows."""
    soup = BeautifulSoup(html, "html.parser")
    _check_depth(soup)
    for tag in soup.find_all(_DROPPED):
        tag.decompose()
    for span in soup.find_all(["span", "font", "u", "mark", "abbr", "cite", "small", "big"]):
        span.unwrap()
    soup.smooth()  # text split by the spans above is one text node again
    _plain_colspans(soup)
    converter = _NoteConverter(headings_below, image, schemes)
    converter.numbers = _numbers(soup)
    text = converter.convert_soup(soup)
    return _BLANK_LINES.sub("\n\n", text).strip("\n")
