"""citations.html: a picture of which papers on the page cite which (the scholarly graph's references,
`enrich.citations`), one self-contained page: an inline SVG, no script, nothing from another host.

The papers sit on a circle in arcs, one arc per category in the page's order with a gap between arcs and
the category's name outside its arc, so that 300 papers stay apart and their groups stay legible. A
filled dot is a read paper, a hollow one unread, coloured by its category; a citation is a faint curve
bent towards the centre (edges bundled there read better than straight chords), and each dot carries its
title as an SVG `<title>` (shown on hover). Every text is escaped: Zotero's text is shown as text.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from ..labels import Labels
from ..model import Library, Placement
from ..text import flatten

PAGE = "citations.html"
GRAPH = "citations"  # the processor whose references these are (zotsync/processing/citations)
# Colours that stay apart from one another on white and on dark (Tableau's 10, then 10 more).
PALETTE = (
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f",
    "#bab0ac", "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf",
)  # fmt: skip
GAP = 2  # empty slots between two categories' arcs
SLOT = 11.0  # pixels of circumference per paper: dots of radius 4 never touch
MIN_RADIUS = 220.0
LABEL_ROOM = 190.0
BEND = 0.35  # pixels around the circle for the categories' names


def _text(value: str) -> str:
    return escape(flatten(value), quote=True)


def has_graph(library: Library) -> bool:
    return bool(library.derived.get(GRAPH))


def edges(papers: Sequence[str], graph: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(citing, cited) between the page's papers, each once, in page order."""
    by_work = {}
    for key in papers:
        value = graph.get(key)
        if isinstance(value, dict) and value.get("id"):
            by_work[str(value["id"])] = key
    found = []
    for key in papers:
        value = graph.get(key)
        if not isinstance(value, dict):
            continue
        for work in dict.fromkeys(value.get("references") or ()):
            cited = by_work.get(work)
            if cited is not None and cited != key:
                found.append((key, cited))
    return found


def _text_width(text: str) -> float:
    """About how wide `text` is at the labels' 12 px: a wide (CJK) character 12 px, any other 7.5 px, so
    that the picture makes room for a long category name instead of cutting it at its edge."""
    return sum(12.0 if unicodedata.east_asian_width(c) in "WF" else 7.5 for c in text) + 4


def render(rows: Sequence[Placement], library: Library, labels: Labels, title: str) -> str:
    first: dict[str, Placement] = {}
    for row in rows:
        if row.zotero_key and row.zotero_key not in first:
            first[row.zotero_key] = row  # a paper in several categories sits in its first one
    categories = list(dict.fromkeys(row.category for row in first.values()))
    ordered = [row for category in categories for row in first.values() if row.category == category]
    papers = [row.zotero_key for row in ordered]
    links = edges(papers, library.derived.get(GRAPH, {}))
    slots = len(ordered) + GAP * len(categories)
    radius = max(MIN_RADIUS, slots * SLOT / (2 * math.pi))
    size = 2 * (radius + LABEL_ROOM)
    centre = size / 2
    where: dict[str, tuple[float, float]] = {}
    colour = {category: PALETTE[n % len(PALETTE)] for n, category in enumerate(categories)}
    dots, names = [], []
    slot = 0
    left, right = 0.0, size  # the picture's extent across: the circle, and the labels beside it
    for category in categories:
        members = [row for row in ordered if row.category == category]
        start = slot
        for row in members:
            angle = 2 * math.pi * slot / max(slots, 1) - math.pi / 2
            x, y = centre + radius * math.cos(angle), centre + radius * math.sin(angle)
            where[row.zotero_key] = (x, y)
            read = row.status == "read"
            fill = colour[category] if read else "var(--bg)"
            mark = labels.status_read if read else labels.status_unread
            shown = _text(f"{row.title} ({mark})" + (f" {labels.retracted}" if row.retracted else ""))
            dots.append(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" fill="{fill}" stroke="{colour[category]}"'
                f' stroke-width="1.6" data-key="{_text(row.zotero_key)}"><title>{shown}</title></circle>'
            )
            slot += 1
        middle = 2 * math.pi * (start + slot - 1) / 2 / max(slots, 1) - math.pi / 2
        lx, ly = centre + (radius + 14) * math.cos(middle), centre + (radius + 14) * math.sin(middle)
        anchor = "start" if math.cos(middle) >= 0 else "end"
        shown_name = f"■ {flatten(category)} ({len(members)})"
        width = _text_width(shown_name)
        left = min(left, lx if anchor == "start" else lx - width)
        right = max(right, lx + width if anchor == "start" else lx)
        # The name in the page's own colour (some of the palette's are too light to read as text on white,
        # others too dark on black); a square in the category's colour ties it to its arc.
        names.append(
            f'<text x="{lx:.1f}" y="{ly:.1f}" text-anchor="{anchor}" dominant-baseline="middle">'
            f'<tspan fill="{colour[category]}">■</tspan> {_text(category)} ({len(members)})</text>'
        )
        slot += GAP
    curves = []
    for citing, cited in links:
        (x1, y1), (x2, y2) = where[citing], where[cited]
        # bent a third of the way from the centre to the chord's middle: neighbours' curves hug the rim
        qx, qy = centre + BEND * ((x1 + x2) / 2 - centre), centre + BEND * ((y1 + y2) / 2 - centre)
        curves.append(
            f'<path d="M{x1:.1f} {y1:.1f} Q{qx:.1f} {qy:.1f} {x2:.1f} {y2:.1f}"'
            f' stroke="{colour[first[citing].category]}"/>'
        )
    summary = labels.graph_summary.format(papers=len(ordered), links=len(links))
    heading = _text(labels.graph_title)
    legend = (
        f'<circle cx="10" cy="10" r="5" fill="#666"/><text x="20" y="10" dominant-baseline="middle">'
        f"{_text(labels.status_read)}</text>"
        f'<circle cx="10" cy="30" r="5" fill="none" stroke="#666" stroke-width="1.6"/>'
        f'<text x="20" y="30" dominant-baseline="middle">{_text(labels.status_unread)}</text>'
    )
    # what the legend's two dots say, for those who do not see them
    legend_words = f"● {_text(labels.status_read)}, ○ {_text(labels.status_unread)}"
    return "\n".join(
        [
            "<!DOCTYPE html>",
            f'<html lang="{_text(labels.html_lang) or "en"}">',
            "<head>",
            '<meta charset="utf-8">',
            '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
            "style-src 'unsafe-inline'; img-src 'none'; base-uri 'none'; form-action 'none'\">",
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{heading} · {_text(title)}</title>",
            "<style>:root{--bg:#fff;--fg:#222;--link:#0645ad}"
            "@media (prefers-color-scheme: dark){:root{--bg:#111;--fg:#ddd;--link:#8ab4f8}}"
            "body{margin:1rem;font:14px system-ui,sans-serif;background:var(--bg);color:var(--fg)}"
            "a{color:var(--link)}"
            "svg{max-width:100%;height:auto}svg text{font-size:12px}svg text:not([fill]){fill:currentColor}"
            ".edges path{fill:none;stroke-opacity:.28;stroke-width:1}"
            "</style>",
            "</head>",
            "<body>",
            "<main>",
            f"<h1>{heading}</h1>",
            f'<p><a href="catalog.html">{_text(title)}</a> · {_text(summary)}</p>',
            f'<svg xmlns="http://www.w3.org/2000/svg" width="70" height="40" role="img"'
            f' aria-label="{legend_words}">{legend}</svg>',
            f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="{left:.0f} 0 {right - left:.0f} {size:.0f}"'
            f' width="{right - left:.0f}" height="{size:.0f}" role="img" aria-label="{heading}">',
            f'<g class="edges">{"".join(curves)}</g>',
            f'<g class="papers">{"".join(dots)}</g>',
            f'<g class="categories">{"".join(names)}</g>',
            "</svg>",
            "</main>",
            "</body>",
            "</html>",
            "",
        ]
    )
