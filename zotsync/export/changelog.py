"""CHANGES.md: each sync that changed the page prepends a dated section saying what (`digest.Digest`),
newest first. The first sync writes the file too, with a line saying so, so that a site linking it
builds from the first run on."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from ..digest import GONE, Digest, utc
from .mdtext import line

# What CHANGES.md holds after the first sync (the baseline), until a sync changes the page: the first
# dated section then takes its place.
GROUPS = ("Settings", "Added", "Removed", "Recategorised", "Newly read", "Retitled", "No longer in Zotero")
BASELINE = "No changes yet: each sync that changes the list adds a dated section here, newest first.\n"


def render(digest: Digest, when: datetime) -> str:
    """One section: `## YYYY-MM-DD HH:MM UTC`, then a `###` list per non-empty group. Each item is text
    (titles and category names render as written, like on the page)."""
    when = utc(when)
    settings = tuple(f"`{name}`: {line(old)} → {line(new)}" for name, old, new in digest.settings)
    show: dict[str, tuple[str, ...]] = {
        "Settings": (*settings, line(digest.settings_effect)) if settings else (),
        "Added": digest.added,
        "Removed": digest.removed,
        "Recategorised": tuple(
            f"{title}: {_categories(old)} → {_categories(new)}" for title, old, new in digest.recategorised
        ),
        "Newly read": digest.newly_read,
        "Retitled": tuple(f"{old} → {new}" for old, new in digest.retitled),
        "No longer in Zotero": tuple(f"{title} ({GONE})" for title in digest.unmatched),
    }
    parts = [f"## {when:%Y-%m-%d %H:%M} UTC"]
    for group in GROUPS:
        if show[group]:
            items = show[group] if group == "Settings" else tuple(map(line, show[group]))  # already text
            parts.append(f"### {group}\n\n" + "\n".join(f"- {item}" for item in items))
    return "\n\n".join(parts) + "\n"


def prepend(section: str, existing: str) -> str:
    """Newest first: the new section, a blank line, then the file as it was (the baseline's line gives
    way to the first section)."""
    return section + ("\n" + existing if existing.strip() and existing != BASELINE else "")


def _categories(names: Sequence[str]) -> str:
    return ", ".join(names) or "—"


def first_text(existing: str) -> str:
    """CHANGES.md after a first sync: the file as it is, when there is one (a list published before its
    store was lost), else `BASELINE`."""
    return existing if existing.strip() else BASELINE
