"""The reading-list page: title, summary line, then one table per category."""

from __future__ import annotations

import html
from collections.abc import Sequence
from itertools import groupby

from ..model import Placement

NO_VENUE = "来源待补全"
TAGS_PREFIX = "标签："
HEADER = "| Status | Paper | Venue | Why It Matters | Links |\n| --- | --- | --- | --- | --- |"


def render_markdown(title: str, description: str, rows: Sequence[Placement]) -> str:
    read = sum(row.status == "read" for row in rows)
    parts = [f"# {cell(title or 'Reading list')}"]
    if description:
        parts.append(cell(description))
    parts.append(f"共 {len(rows)} 个清单条目；已读 {read}，待读 {len(rows) - read}。")
    for category, group in groupby(rows, key=lambda row: row.category):
        parts.append(f"## {cell(category)}\n\n{HEADER}\n" + "\n".join(map(table_row, group)))
    return "\n\n".join(parts) + "\n"


def table_row(row: Placement) -> str:
    status = ("✅" if row.status == "read" else "⬜") + (" 📝" if row.noted else "")
    venue = row.venue or (f"{NO_VENUE} · {row.year}" if row.year else NO_VENUE)
    why = row.why or (TAGS_PREFIX + " / ".join(row.tags) if row.tags else "")
    links = " / ".join(f"[{cell(link.label)}]({link_target(link.url)})" for link in row.links)
    return f"| {status} | {cell(row.title)} | {cell(venue)} | {cell(why)} | {links} |"


def cell(text: str) -> str:
    """Keep a table cell one cell: no line breaks, no raw HTML, no bare pipes."""
    text = " ".join(text.split())
    return html.escape(text, quote=False).replace("\\", "\\\\").replace("|", "\\|")


def link_target(url: str) -> str:
    """Percent-encode what would end a Markdown link or break the table around it."""
    for char, code in ((" ", "%20"), ("(", "%28"), (")", "%29"), ("|", "%7C"), ("<", "%3C"), (">", "%3E")):
        url = url.replace(char, code)
    return url
