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
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from bs4 import BeautifulSoup
from markdownify import MarkdownConverter

from ..text import strip_controls
from .mdtext import fragment, link_target, safe_target

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


class _NoteConverter(MarkdownConverter):
    def __init__(self, headings_below: int, image: Callable[[str, str], str], **options: Any) -> None:
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
        if not safe_target(target):
            return f"{text} ({fragment(href)})" if label else fragment(href)
        return f"[{label or fragment(href)}]({target})"

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


def note_markdown(html: str, headings_below: int, image: Callable[[str, str], str]) -> str:
    """The note's HTML as Markdown, headings `headings_below` levels lower (a note's h1 under the page's
    own headings); `image(attachment_key, src)` writes an image (a link or a placeholder, never one
    embedded)."""
    soup = BeautifulSoup(html, "html.parser")
    for tag in soup.find_all(_DROPPED):
        tag.decompose()
    for span in soup.find_all(["span", "font", "u", "mark", "abbr", "cite", "small", "big"]):
        span.unwrap()
    soup.smooth()  # text split by the spans above is one text node again
    text = _NoteConverter(headings_below, image).convert_soup(soup)
    return _BLANK_LINES.sub("\n\n", text).strip("\n")
