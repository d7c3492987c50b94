"""catalog.html: the page's rows as one self-contained HTML file that a reader can filter.

The same rows, order, words and links as the Markdown page, one table per category, with its style and
script inside the file: it works from disk, a plain web server or GitHub Pages, and asks no other host
for anything (its Content-Security-Policy allows no request at all, and only its own style and script,
by their hashes). Without the script the whole table shows; with it, a form filters the rows by status,
category, year range, venue and text, keeps the state in the URL fragment, and hides a row with its
`hidden` attribute (assets/catalog.js: hand-written, as no small library filters rows in place).

Data is text: every title, venue, tag, name and link label is HTML-escaped, and a link whose target is
not one of `mdtext.LINK_SCHEMES` (or a relative path) is written as text.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Iterator, Sequence
from functools import cache
from html import escape
from importlib import resources
from itertools import groupby
from pathlib import PurePosixPath

from ..formats import Exporter, Needs, Output
from ..labels import Labels
from ..model import Placement
from ..text import flatten
from . import graphpage
from .base import ExportInput, LinkPlan, Page, link_labels
from .mdtext import safe_target


@cache
def asset(name: str) -> str:
    """A file of zotsync/export/assets (the page's style and script), as text."""
    return resources.files(__package__).joinpath("assets", name).read_text(encoding="utf-8")


def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode() + "'"


def text(value: str) -> str:
    """Data as HTML text on one line: no control character, nothing that forms markup."""
    return escape(flatten(value), quote=True)


# What a URL may not hold as it is in an `href` (the validator's rules): percent-encoded.
_URL_UNSAFE = re.compile(r"[\s\"<>\\^`{|}]")


def href(url: str) -> str | None:
    """The attribute value of a link to `url`, or None when it may not be a link (its scheme)."""
    target = flatten(url).strip()
    if not safe_target(target):
        return None
    target = _URL_UNSAFE.sub(lambda m: "".join(f"%{b:02X}" for b in m.group(0).encode("utf-8")), target)
    return escape(target, quote=True)


PAGE = "catalog.html"


def render_html(page: Page, plan: LinkPlan | None = None, graph: bool = False) -> str:
    """`plan`: where the other files are, and the site that serves this one as it is (a row's link to a
    note page or the tags page goes to the address the site gives it)."""
    plan = plan or LinkPlan()
    labels = page.labels
    rows = page.rows
    read = sum(row.status == "read" for row in rows)
    title = text(page.title) or text(labels.title)
    style, script = asset("catalog.css"), asset("catalog.js")
    policy = (
        f"default-src 'none'; style-src {_hash(style)}; script-src {_hash(script)}; "
        "img-src 'none'; base-uri 'none'; form-action 'none'"
    )
    categories = [category for category, _ in groupby(rows, key=lambda row: row.category)]
    parts = [
        "<!DOCTYPE html>",
        f'<html lang="{escape(flatten(labels.html_lang) or "en", quote=True)}">',
        "<head>",
        '<meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{policy}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="color-scheme" content="light dark">',
        f"<title>{title}</title>",
        f"<style>{style}</style>",
        "</head>",
        "<body>",
        "<header>",
        f"<h1>{title}</h1>",
    ]
    if description := text(page.description):
        parts.append(f"<p>{description}</p>")
    summary = labels.summary.format(entries=len(rows), read=read, unread=len(rows) - read)
    parts.append(f'<p class="muted">{text(summary)}</p>')
    if graph:  # the picture of the page's citations beside it (enrich.citations)
        parts.append(f'<p><a href="{graphpage.PAGE}">{text(labels.graph_title)}</a></p>')
    parts.append("</header>")
    parts += _form(labels, rows, categories)
    parts.append("<main>")
    head = "".join(
        f'<th scope="col">{text(name)}</th>'
        for name in (labels.status, labels.paper, labels.venue, labels.why, labels.links)
    )
    marks = {True: labels.read, False: labels.unread}
    for number, (category, group) in enumerate(groupby(rows, key=lambda row: row.category), start=1):
        members = list(group)
        parts += [
            f'<section id="category-{number}" data-category="{text(category)}">',
            f'<h2>{text(category)} <span class="count">({len(members)})</span></h2>',
            f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>',
        ]
        parts += (_row(row, labels, marks, plan) for row in members)
        parts.append("</tbody></table></div></section>")
    parts += [
        f'<p id="no-match" hidden>{text(labels.no_match)}</p>',
        "</main>",
        f"<script>{script}</script>",
        "</body>",
        "</html>",
    ]
    return "\n".join(parts) + "\n"


def _form(labels: Labels, rows: Sequence[Placement], categories: list[str]) -> list[str]:
    """The filters: hidden until the script shows them (without it they could do nothing)."""
    every = f'<option value="">{text(labels.filter_all)}</option>'
    options = "".join(f'<option value="{text(name)}">{text(name)}</option>' for name in categories)
    venues = sorted({shown for row in rows if (shown := text(row.venue))}, key=str.casefold)
    template = text(labels.shown)
    return [
        f'<form id="filters" role="search" aria-label="{text(labels.filters)}" hidden>',
        f'<label>{text(labels.search)} <input type="search" name="q" autocomplete="off"></label>',
        f'<label>{text(labels.status)} <select name="status">{every}'
        f'<option value="read">{text(labels.status_read)}</option>'
        f'<option value="unread">{text(labels.status_unread)}</option></select></label>',
        f'<label>{text(labels.category)} <select name="category">{every}{options}</select></label>',
        f"<fieldset><legend>{text(labels.year)}</legend>"
        f'<label>{text(labels.year_from)} <input name="from" {_YEAR}></label>'
        f'<label>{text(labels.year_to)} <input name="to" {_YEAR}></label>'
        "</fieldset>",
        f'<label>{text(labels.venue)} <input name="venue" list="venues" autocomplete="off"></label>',
        '<datalist id="venues">' + "".join(f'<option value="{v}"></option>' for v in venues) + "</datalist>",
        f'<button type="reset">{text(labels.clear)}</button>',
        f'<p id="shown" role="status" data-template="{template}"></p>',
        "</form>",
    ]


_YEAR = 'inputmode="numeric" maxlength="4" size="4" autocomplete="off"'


def _row(row: Placement, labels: Labels, marks: dict[bool, str], plan: LinkPlan) -> str:
    status = marks[row.status == "read"] + (f" {labels.noted}" if row.noted else "")
    title = text(row.title) or text(labels.no_title)
    if row.retracted:
        title += f' <strong class="retracted">{text(labels.retracted)}</strong>'
    venue = text(row.venue) or text(labels.no_venue + (f" · {row.year}" if row.year else ""))
    why = text(row.why) or (text(labels.tags + " / ".join(row.tags)) if row.tags else "")
    links = " / ".join(
        _link(label, each.url, plan.served(PAGE, each.url)) for label, each in link_labels(row.links, labels)
    )
    return (
        f'<tr data-key="{text(row.zotero_key)}" data-status="{row.status}" data-year="{text(row.year)}"'
        f' data-authors="{text("; ".join(row.authors))}" data-tags="{text("; ".join(row.tags))}">'
        f"<td>{text(status)}</td><td>{title}</td><td>{venue}</td><td>{why}</td><td>{links}</td></tr>"
    )


def _link(label: str, url: str, served: str) -> str:
    target = href(served)
    if target is None:
        return text(f"{label} ({url})" if url.strip() else label)
    return f'<a href="{target}">{text(label)}</a>'


def _outputs(given: ExportInput) -> Iterator[Output]:
    graph = graphpage.has_graph(given.library)
    yield Output(PurePosixPath(PAGE), render_html(given.page, given.plan, graph))
    if graph:
        page = given.page
        yield Output(
            PurePosixPath(graphpage.PAGE), graphpage.render(page.rows, given.library, page.labels, page.title)
        )


EXPORTER = Exporter(
    name="html",
    summary="the reading list as one self-contained HTML page with filters and a search",
    page=PAGE,
    render=_outputs,
    needs=Needs.ZOTERO_LINKS,
)
