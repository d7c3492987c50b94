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
    # The HTML page's own words (catalog.html): its language tag, the filters, the line of counts.
    html_lang: str  # the page's language, as HTML's `lang` names it
    filters: str  # the name of the filter form
    search: str
    filter_all: str  # the choice that filters nothing
    category: str
    year: str
    year_from: str
    year_to: str
    status_read: str  # the status filter's choices
    status_unread: str
    clear: str
    shown: str  # {shown}, {entries}, {read} and {unread}: the counts of what the filters show
    no_match: str  # when the filters leave no entry
    # The feed's words (feed.xml): what an entry reports.
    feed_added: str
    feed_read: str
    # Added later, each with a default (a program building Labels itself keeps working):
    # the summary when papers sit in several categories: {papers} papers in {entries} entries
    summary_papers: str = "{papers} papers in {entries} entries; {read} read, {unread} to read."
    authors: str = "Authors"  # the optional columns' headers (exports.columns; `year` is above)
    added: str = "Added"
    et_al: str = "et al."  # after the last author the Authors cell names
    # the tags page (exports.tags_page) and the index page of a split page (exports.split)
    tags_title: str = "Tags"
    tags_summary: str = "{tags} tags on {papers} papers."
    tags_papers: str = "Papers"  # the heading of the list of papers, each with its tags
    no_tags: str = "no tags"
    index_entries: str = "{entries} entries, {read} read"  # a category's line on the index page
    # note pages (exports.notes)
    link_note: str = "Note"  # the link to the paper's note page (a curator's own Note link wins)
    notes: str = "Notes"  # a note page's headings: the paper's Zotero notes, then its annotations
    annotations: str = "Annotations"
    page_label: str = "p. {page}"  # where an annotation is in its PDF; {page} is the page label
    image: str = "Image"  # what an image or ink annotation, or an image in a note, is called (not copied)
    ink: str = "Ink drawing"
    # after a note longer than a page shows (notes.MAX_NOTE): {shown} and {size} count its HTML's characters
    note_cut: str = "The note goes on in Zotero: this page shows the first {shown} of its {size} characters."
    # the scholarly graph (enrich.citations)
    cited_by: str = "Cited by"  # the optional column's header: how many works cite the paper
    retracted: str = "⚠ Retracted"  # after a retracted paper's title, on every page and format
    link_open: str = "Open copy"  # the link to an open-access copy (exports.open_access_link)
    graph_title: str = "Citations among the papers"  # citations.html (the HTML export's picture)
    graph_summary: str = "{papers} papers, {links} citations between them."
    suggest_title: str = "Cited here, not on the list"  # suggestions.md
    related: str = "Related in this list"  # a note page's curated papers nearest in meaning (search.semantic)


# The templates and the placeholders each may use; other labels are written as they are.
PLACEHOLDERS: dict[str, frozenset[str]] = {
    "summary": frozenset({"entries", "read", "unread"}),
    "shown": frozenset({"shown", "entries", "read", "unread"}),
    "summary_papers": frozenset({"papers", "entries", "read", "unread"}),
    "tags_summary": frozenset({"tags", "papers"}),
    "index_entries": frozenset({"entries", "read", "unread"}),
    "page_label": frozenset({"page"}),
    "note_cut": frozenset({"shown", "size"}),
    "graph_summary": frozenset({"papers", "links"}),
}
# A column of the Markdown page (`exports.columns`) → the label of its header.
COLUMN_LABELS: dict[str, str] = {
    "status": "status",
    "paper": "paper",
    "venue": "venue",
    "why": "why",
    "links": "links",
    "authors": "authors",
    "year": "year",
    "added": "added",
    "cited_by": "cited_by",
}
COLUMNS = ("status", "paper", "venue", "why", "links")  # the seed page's, in its order

_SHARED = dict(status="Status", paper="Paper", venue="Venue", why="Why It Matters", links="Links")
_MARKS = dict(
    read="✅",
    unread="⬜",
    noted="📝",
    link_paper="Paper",
    link_pdf="PDF",
    link_zotero="Zotero",
)

BUILT_IN: dict[str, Labels] = {
    "en": Labels(
        title="Reading list",
        summary="{entries} entries; {read} read, {unread} to read.",
        no_venue="venue unknown",
        tags="Tags: ",
        no_title="(untitled)",
        link_archive="Archive",
        html_lang="en",
        filters="Filters",
        search="Search",
        filter_all="All",
        category="Category",
        year="Year",
        year_from="from",
        year_to="to",
        status_read="Read",
        status_unread="To read",
        clear="Clear",
        shown="{shown} of {entries} shown; {read} read, {unread} to read.",
        no_match="No entry matches these filters.",
        feed_added="Added",
        feed_read="Read",
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
        html_lang="zh",
        filters="筛选",
        search="搜索",
        filter_all="全部",
        category="分类",
        year="年份",
        year_from="从",
        year_to="至",
        status_read="已读",
        status_unread="待读",
        clear="清除",
        shown="显示 {shown} / {entries} 个条目；已读 {read}，待读 {unread}。",
        no_match="没有符合筛选条件的条目。",
        feed_added="新增",
        feed_read="已读",
        summary_papers="共 {papers} 篇论文（{entries} 个清单条目）；已读 {read}，待读 {unread}。",
        et_al="等",
        tags_title="标签",
        tags_summary="共 {tags} 个标签，{papers} 篇论文。",
        tags_papers="论文",
        no_tags="无标签",
        index_entries="{entries} 个条目，已读 {read}",
        notes="笔记",
        annotations="标注",
        page_label="第 {page} 页",
        image="图片",
        ink="手绘",
        note_cut="笔记在 Zotero 中还有后续：本页只显示其 {size} 个字符中的前 {shown} 个。",
        cited_by="被引",
        retracted="⚠ 已撤稿",
        link_open="开放获取",
        graph_title="清单论文之间的引用",
        graph_summary="{papers} 篇论文，其间 {links} 条引用。",
        suggest_title="被清单引用但不在清单中的文献",
        related="清单中的相关论文",
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
