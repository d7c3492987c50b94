"""The words the Markdown page is written in: a built-in set per language, single strings overridable.

Every string the page writes that is not the curator's or Zotero's data comes from here, so a page can be
in the reader's language (`exports.language`) with any word changed (`exports.labels`).
"""

from __future__ import annotations

import dataclasses
import string
from collections.abc import Mapping
from dataclasses import dataclass

from .text import did_you_mean

LANGUAGES = ("en", "zh")
DEFAULT_LANGUAGE = "en"


class LabelError(ValueError):
    """An `exports.labels` entry the page cannot use; `name` is the label it is about."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(message)
        self.name = name


@dataclass(frozen=True, slots=True)
class Labels:
    title: str  # the page title when the catalogue has none
    summary: str  # after the title: {entries}, {read} and {unread} are the counts
    status: str  # the five column headers
    paper: str
    venue: str
    why: str
    links: str
    read: str  # the status marks
    unread: str
    noted: str
    no_venue: str  # the Venue cell when neither the curator nor Zotero names one (`· year` may follow)
    tags: str  # before the tags in the Why cell when the curator wrote no why
    no_title: str  # the Paper cell of an item whose title is empty
    link_paper: str  # the labels of the links zotsync adds (a curator's own links keep their labels)
    link_pdf: str  # a second PDF is `<link_pdf>2`, and so on
    link_zotero: str
    link_archive: str
    link_note: str  # the link to the paper's note page (a curator's own Note link wins)
    notes: str  # a note page's headings: the paper's Zotero notes, then its annotations
    annotations: str
    page_label: str  # where an annotation is in its PDF; {page} is the page label
    image: str  # what an image or ink annotation, or an image in a note, is called (not copied)
    ink: str


# The templates and the placeholders each may use; other labels are written as they are.
PLACEHOLDERS: dict[str, frozenset[str]] = {
    "summary": frozenset({"entries", "read", "unread"}),
    "page_label": frozenset({"page"}),
}

_SHARED = dict(status="Status", paper="Paper", venue="Venue", why="Why It Matters", links="Links")
_MARKS = dict(
    read="✅",
    unread="⬜",
    noted="📝",
    link_paper="Paper",
    link_pdf="PDF",
    link_zotero="Zotero",
    link_note="Note",
)

BUILT_IN: dict[str, Labels] = {
    "en": Labels(
        title="Reading list",
        summary="{entries} entries; {read} read, {unread} to read.",
        no_venue="venue unknown",
        tags="Tags: ",
        no_title="(untitled)",
        link_archive="Archive",
        notes="Notes",
        annotations="Annotations",
        page_label="p. {page}",
        image="Image",
        ink="Ink drawing",
        **_SHARED,
        **_MARKS,
    ),
    # The seed page's own words, byte for byte (its column headers were English there too).
    "zh": Labels(
        title="阅读清单",
        summary="共 {entries} 个清单条目；已读 {read}，待读 {unread}。",
        no_venue="来源待补全",
        tags="标签：",
        no_title="（无标题）",
        link_archive="归档标签",
        notes="笔记",
        annotations="标注",
        page_label="第 {page} 页",
        image="图片",
        ink="手绘",
        **_SHARED,
        **_MARKS,
    ),
}

NAMES: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(Labels))


def labels_for(language: str = DEFAULT_LANGUAGE, overrides: Mapping[str, str | None] | None = None) -> Labels:
    """The built-in set for `language` (one of LANGUAGES) with `overrides` applied; raises LabelError
    (for the config to report with its file and line) on an unknown label name or placeholder."""
    overrides = dict(overrides or {})
    for name, text in overrides.items():
        if name not in NAMES:
            raise LabelError(name, f"unknown label '{name}'{did_you_mean(name, NAMES)}")
        if not isinstance(text, str):
            raise LabelError(name, f"label '{name}' must be text")
        allowed = PLACEHOLDERS.get(name)
        if allowed is not None and not _placeholders(text) <= allowed:
            raise LabelError(
                name,
                f"label '{name}' may use only {', '.join(f'{{{p}}}' for p in sorted(allowed))} "
                "as placeholders (write {{ and }} for braces)",
            )
    checked: dict[str, str] = {name: text for name, text in overrides.items() if isinstance(text, str)}
    return dataclasses.replace(BUILT_IN[language], **checked)


def _placeholders(template: str) -> set[str]:
    try:
        return {field for _, field, _, _ in string.Formatter().parse(template) if field is not None}
    except ValueError:  # a lone `{`: not a template the page can fill
        return {"{"}
