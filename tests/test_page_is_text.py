"""Data is text: whatever Zotero or the catalogue holds, the published pages hold no markup made from it.

The exports of real syncs are rendered as a site would render them — python-markdown with the extension
set MkDocs Material sites use, and markdown-it (CommonMark) — and the HTML is read back. What may be in
it follows from the page's own template, never from the output under test:

- catalog.md: h1 (title), p (description, summary), then per category h2 and a table
  (thead/tbody/tr/th/td); `a` only in a row's Links cell, one per safe link the row has; python-markdown's
  toc adds one `a.headerlink` to each heading. CHANGES.md: h2 (the sync), h3 (a group), ul/li.
- no attribute the template did not make: no `on*` handler, no class, style or id from data; every
  href/src is http(s), mailto, zotero, doi or a relative path;
- the visible text of each cell, heading and line is the data, on one line.

The one piece of typography left to a site is smartsymbols' ordinal (`48th` → `48<sup>th</sup>`): the
demo page's venues hold ordinals, and that `sup` carries neither a link nor an attribute.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

from conftest import write_config
from factories import api_collection, api_item, markdown_it, python_markdown, write_json
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from zotsync.export import mdtext

SECRET = "SECRET-7f3a9c"  # in a file beside the page: a snippet include would publish it

# -- the renderers -------------------------------------------------------------------------------------

RENDERERS: dict[str, Callable[[str, Path], str]] = {
    "python-markdown": python_markdown,
    "markdown-it": markdown_it,
}

# -- the HTML, read back -------------------------------------------------------------------------------


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    children: list[Element | str] = field(default_factory=list)

    @property
    def elements(self) -> list[Element]:
        return [c for c in self.children if isinstance(c, Element)]

    @property
    def is_headerlink(self) -> bool:
        return self.tag == "a" and self.attrs.get("class") == "headerlink"

    def text(self) -> str:
        """The visible text, on one line (a heading's permalink mark left out)."""
        parts = [c if isinstance(c, str) else "" if c.is_headerlink else c.text() for c in self.children]
        return " ".join("".join(parts).split())

    def __str__(self) -> str:
        attrs = "".join(f" {k}={v!r}" for k, v in self.attrs.items())
        return f"<{self.tag}{attrs}>{''.join(map(str, self.children))}</{self.tag}>"


class _TreeBuilder(HTMLParser):
    VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("root", {})
        self.open = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, {name: value or "" for name, value in attrs})
        self.open[-1].children.append(element)
        if tag not in self.VOID:
            self.open.append(element)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.open[-1].children.append(Element(tag, {name: value or "" for name, value in attrs}))

    def handle_endtag(self, tag: str) -> None:
        for depth in range(len(self.open) - 1, 0, -1):
            if self.open[depth].tag == tag:
                del self.open[depth:]
                return

    def handle_data(self, data: str) -> None:
        self.open[-1].children.append(data)


def parse(html: str) -> Element:
    builder = _TreeBuilder()
    builder.feed(html)
    builder.close()
    return builder.root


def allowed_target(href: str) -> bool:
    """Whether a browser would open `href` as a web, mail, Zotero or DOI link or a relative path: it
    drops tabs and line breaks and leading controls and spaces, then reads the scheme (WHATWG URL)."""
    href = re.sub("[\t\n\r]", "", href).lstrip("".join(map(chr, range(0x21))))
    scheme = re.match(r"([A-Za-z][A-Za-z0-9+.-]*):", href)
    return scheme is None or scheme.group(1).lower() in {"http", "https", "mailto", "zotero", "doi"}


def flat(text: str) -> str:
    """Text on one line, as data is shown on a page."""
    return " ".join(text.split())


# -- what the template makes ---------------------------------------------------------------------------

URL_ATTRIBUTES = frozenset({"href", "src", "action", "formaction", "xlink:href", "data", "poster"})
ORDINAL = re.compile(r"\d(st|nd|rd|th)$")


def in_heading(text: str) -> str:
    """What a heading shows of `text` (docs/exports.md): a site's <title> decodes it once more, so `<`,
    `>` and an `&` that starts a character reference show as their fullwidth forms."""
    text = re.sub(
        r"&[#A-Za-z][^\s&<;]*;?",
        lambda m: m.group(0) if html.unescape(m.group(0)) == m.group(0) else "＆" + m.group(0)[1:],
        text,
    )
    return text.replace("<", "＜").replace(">", "＞")


@dataclass
class Checker:
    """Reads one rendered page against what its template makes, collecting every violation."""

    renderer: str
    violations: list[str] = field(default_factory=list)

    def fail(self, message: str) -> None:
        self.violations.append(f"{self.renderer}: {message}")

    def attributes(self, root: Element) -> None:
        """No handler and no target outside the allowed schemes, anywhere."""
        stack = [root]
        while stack:
            element = stack.pop()
            stack += element.elements
            for name, value in element.attrs.items():
                if name.lower().startswith("on"):
                    self.fail(f"handler {name}={value!r} on <{element.tag}>")
                if name.lower() in URL_ATTRIBUTES and not allowed_target(value):
                    self.fail(f"{name}={value!r} on <{element.tag}>")

    def heading(self, element: Element, tag: str, expected: str | re.Pattern[str]) -> None:
        if element.tag != tag:
            self.fail(f"<{element.tag}> where the template has <{tag}>: {element}")
            return
        allowed = {"id"} if self.renderer == "python-markdown" else set()
        if set(element.attrs) - allowed:
            self.fail(f"attributes {element.attrs} on <{tag}>")
        # toc's permalink: the last child of each heading, with python-markdown only
        permalinks = [child for child in element.elements if child.is_headerlink]
        if permalinks != element.elements[-1:] * (self.renderer == "python-markdown"):
            self.fail(f"<{tag}> without its one permalink at the end: {element}")
        self.text_only(element, f"<{tag}>", skip_headerlink=True)
        self.same_text(element, in_heading(expected) if isinstance(expected, str) else expected, f"<{tag}>")

    def text_only(self, element: Element, where: str, skip_headerlink: bool = False) -> None:
        """Text and nothing else (an ordinal's `sup` after its digits is the site's typography)."""
        before = ""
        for child in element.children:
            if isinstance(child, str):
                before += child
            elif child.tag == "sup" and not child.attrs and ORDINAL.search(before[-1:] + child.text()):
                before += child.text()
            elif not (skip_headerlink and child.is_headerlink):
                self.fail(f"<{child.tag}> in {where}: {child}")

    def same_text(self, element: Element, expected: str | re.Pattern[str], where: str) -> None:
        shown = element.text()
        if isinstance(expected, re.Pattern):
            if not expected.fullmatch(shown):
                self.fail(f"{where} shows {shown!r}, not the template's {expected.pattern!r}")
        elif shown != flat(expected):
            self.fail(f"{where} shows {shown!r} for {flat(expected)!r}")

    def paragraph(self, element: Element, expected: str) -> None:
        if element.tag != "p" or element.attrs:
            self.fail(f"{element} where the template has a plain <p>")
            return
        self.text_only(element, "<p>")
        self.same_text(element, expected, "<p>")


# -- catalog.md ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One table row as the data says it must read; `links` are (label, target) of its safe links."""

    category: str
    status: str
    paper: str
    venue: str
    why: str
    links: tuple[tuple[str, str], ...]
    links_text: str


@dataclass(frozen=True)
class CatalogPage:
    title: str
    description: str
    summary: str
    header: tuple[str, ...]
    rows: dict[str, Row]  # by the target that tells the row apart (its Zotero or Note link)


def catalog_violations(html: str, page: CatalogPage, renderer: str) -> list[str]:
    check = Checker(renderer)
    root = parse(html)
    check.attributes(root)
    top = root.elements
    if not top:
        return [*check.violations, f"{renderer}: an empty page"]
    check.heading(top[0], "h1", page.title)
    rest = top[1:]
    for expected in [t for t in (page.description, page.summary) if flat(t)]:
        if not rest:
            check.fail(f"the page ends before the paragraph {expected!r}")
            return check.violations
        check.paragraph(rest.pop(0), expected)
    seen: set[str] = set()
    while rest:
        heading, table = rest.pop(0), rest.pop(0) if rest else Element("missing", {})
        if table.tag != "table" or table.attrs:
            check.fail(f"{table} where the template has a <table>")
            continue
        rows = table_rows(table, check, page.header)
        identities = [row_identity(row, page) for row in rows]
        categories = {page.rows[i].category for i in identities if i}
        check.heading(heading, "h2", next(iter(categories)) if len(categories) == 1 else "?")
        for cells, identity in zip(rows, identities, strict=True):
            if identity is None or identity in seen:
                check.fail(f"a row that is no placement's: {[str(c) for c in cells]}")
                continue
            seen.add(identity)
            body_row(cells, page.rows[identity], check)
    for identity in set(page.rows) - seen:
        check.fail(f"no row for {identity}")
    return check.violations


def table_rows(table: Element, check: Checker, header: tuple[str, ...]) -> list[list[Element]]:
    parts = table.elements
    if [p.tag for p in parts] != ["thead", "tbody"] or any(p.attrs for p in parts):
        check.fail(f"a table that is not thead + tbody: {[p.tag for p in parts]}")
        return []
    head_rows = parts[0].elements
    heads = head_rows[0].elements if len(head_rows) == 1 and not head_rows[0].attrs else []
    if [h.tag for h in heads] != ["th"] * len(header) or any(h.attrs for h in heads):
        check.fail(f"a header that is not the template's: {parts[0]}")
    for th, name in zip(heads, header, strict=False):
        check.text_only(th, "<th>")
        check.same_text(th, name, "<th>")
    rows = []
    for tr in parts[1].elements:
        cells = tr.elements
        if tr.tag != "tr" or tr.attrs or [c.tag for c in cells] != ["td"] * len(header):
            check.fail(f"a body row of {[c.tag for c in cells]}: {tr}")
            continue
        for cell in cells:
            if cell.attrs:
                check.fail(f"attributes {cell.attrs} on a cell: {cell}")
        rows.append(cells)
    return rows


def row_identity(cells: list[Element], page: CatalogPage) -> str | None:
    targets = [a.attrs.get("href", "") for a in cells[4].elements if a.tag == "a"]
    return next((t for t in targets if t in page.rows), None)


def body_row(cells: list[Element], row: Row, check: Checker) -> None:
    names = ("Status", "Paper", "Venue", "Why It Matters")
    for cell, name, expected in zip(cells, names, (row.status, row.paper, row.venue, row.why), strict=False):
        check.text_only(cell, f"the {name} cell")
        check.same_text(cell, expected, f"the {name} cell")
    links = cells[4]
    anchors = [child for child in links.children if isinstance(child, Element)]
    shown = [
        (a.text(), a.attrs.get("href", "")) for a in anchors if a.tag == "a" and set(a.attrs) == {"href"}
    ]
    if len(anchors) != len(row.links) or shown != [(flat(label), target) for label, target in row.links]:
        check.fail(f"the Links cell holds {[str(a) for a in anchors]}, the row's links are {row.links}")
    for anchor in anchors:
        check.text_only(anchor, "a link's label")
    check.same_text(links, row.links_text, "the Links cell")


# -- CHANGES.md ----------------------------------------------------------------------------------------

SYNC_HEADING = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC")


def changes_violations(html: str, groups: dict[str, list[str]], renderer: str) -> list[str]:
    """The newest section: its heading, then each group's heading and one item per change."""
    check = Checker(renderer)
    root = parse(html)
    check.attributes(root)
    top = root.elements
    check.heading(top[0], "h2", SYNC_HEADING)
    rest = top[1:]
    for group, lines in groups.items():
        if len(rest) < 2:
            check.fail(f"the digest ends before {group}")
            return check.violations
        heading, listing = rest.pop(0), rest.pop(0)
        check.heading(heading, "h3", re.compile(re.escape(group)))
        items = listing.elements
        if listing.tag != "ul" or listing.attrs or [i.tag for i in items] != ["li"] * len(lines):
            check.fail(f"{listing} where the template lists {len(lines)} items")
            continue
        for item, expected in zip(items, lines, strict=True):
            if item.attrs:
                check.fail(f"attributes {item.attrs} on <li>")
            check.text_only(item, "<li>")
            check.same_text(item, expected, "<li>")
    if rest:
        check.fail(f"more than the template makes: {[str(e) for e in rest]}")
    return check.violations


# -- a library holding the hostile strings, synced twice -----------------------------------------------


@dataclass(frozen=True)
class Hostile:
    """The strings one library is made of: `texts[i]` is the i-th item's, entry's and category's."""

    texts: tuple[str, ...]  # at least five
    page_title: str
    description: str
    retitle: str  # item 0's title in the second sync


KEY_ALPHABET = "23456789ABCDEFGHIJKLMNPQRSTUVWXYZ"  # Zotero's item keys are 8 of these


def item_key(number: int, prefix: str = "ITEM") -> str:
    digits = ""
    for _ in range(4):
        number, digit = divmod(number, len(KEY_ALPHABET))
        digits = KEY_ALPHABET[digit] + digits
    return prefix + digits


def build(folder: Path, hostile: Hostile, second: bool = False) -> Path:
    """A snapshot, a catalogue and a config made of `hostile`. Item i carries texts[i] as its title,
    venue, tag (`t…`) and creator, in its collection `C<i> …`; entry i has it in its why (`W …`), venue
    (`V …`), link label (`L …`) and category (`K<i> …`). An odd entry is pinned to its item (the row shows
    the item's title); an even one to a key the library lacks (its own title `Entry <i> …` shows), so
    even items are listed by collection. The second sync retitles item 0, moves item 2 into item 0's
    collection, marks item 1 read, deletes item 4 and adds an item: one change of each kind."""
    texts = hostile.texts
    objects = [api_collection(item_key(i, "CQLL"), f"C{i} {text}") for i, text in enumerate(texts)]
    for i, text in enumerate(texts):
        if second and i == 4:
            continue
        fields: dict[str, object] = {"extra": "Read_Status: read"} if second and i == 1 else {}
        objects.append(
            api_item(
                item_key(i),
                hostile.retitle if second and i == 0 else text,
                publicationTitle=text,
                url=f"https://example.org/{i}",
                tags=[f"t{text}"],
                creators=[{"creatorType": "author", "firstName": text, "lastName": f"L{text}"}],
                collections=[item_key(0 if second and i == 2 else i, "CQLL")],
                **fields,
            )
        )
    if second:
        objects.append(api_item(item_key(9999), f"New {texts[0]}", url="https://example.org/new"))
    objects.append(api_item("UNTITLED", "", url="https://example.org/untitled"))
    write_json(folder / "library.json", objects)
    categories = [
        {
            "name": f"K{i} {text}",
            "entries": [
                {
                    "title": f"Entry {i} {text}",
                    "why": f"W {text}",
                    "venue": f"V {text}",
                    "zotero_key": item_key(i) if i % 2 else item_key(i, "MISS"),
                    "links": {f"L {text}": f"notes/e{i}.md", "Evil": "javascript:alert(1)"},
                }
            ],
        }
        for i, text in enumerate(texts)
    ]
    catalogue = {"title": hostile.page_title, "description": hostile.description, "categories": categories}
    (folder / "catalog.yaml").write_text(
        json.dumps(catalogue, ensure_ascii=False, indent=1), encoding="utf-8"
    )
    (folder / "out").mkdir(exist_ok=True)
    (folder / "out" / "secret.txt").write_text(SECRET + "\n", encoding="utf-8")
    return write_config(
        folder,
        "source: {type: snapshot, path: library.json}\ncatalog: catalog.yaml\nstore: store.sqlite\n"
        "exports: {dir: out, language: en}\n"
        "reconcile: {read_tags: [], abbreviate_venues: false}\n",
    )


def zotero_row(key: str, category: str, title: str, venue: str, tags: str, url: str) -> tuple[str, Row]:
    target = f"zotero://select/library/items/{key}"
    links = (("Paper", url), ("Zotero", target))
    why = f"Tags: {tags}" if tags else ""
    return target, Row(category, "⬜", flat(title) or "(untitled)", venue, why, links, "Paper / Zotero")


def expected_page(hostile: Hostile) -> CatalogPage:
    """The page the data describes after the second sync, in the words of the `en` set."""
    texts = hostile.texts
    rows: dict[str, Row] = {}
    for i, text in enumerate(texts):
        note = f"notes/e{i}.md"
        pinned = i % 2 == 1
        rows[note] = Row(
            f"K{i} {text}",
            "✅" if i == 1 else "⬜",
            (flat(text) or "(untitled)") if pinned else f"Entry {i} {text}",
            f"V {text}",
            f"W {text}",
            ((f"L {text}", note),),
            f"L {text} / Evil (javascript:alert(1))",
        )
        if not pinned and i != 4:
            collection = 0 if i == 2 else i
            title = hostile.retitle if i == 0 else text
            venue = flat(text) or "venue unknown"
            url = f"https://example.org/{i}"
            target, row = zotero_row(
                item_key(i), f"C{collection} {texts[collection]}", title, venue, f"t{text}", url
            )
            rows[target] = row
    for key, title, url in ((item_key(9999), f"New {texts[0]}", "new"), ("UNTITLED", "", "untitled")):
        target, row = zotero_row(key, "Unfiled", title, "venue unknown", "", f"https://example.org/{url}")
        rows[target] = row
    return CatalogPage(
        title=flat(hostile.page_title) or "Reading list",
        description=hostile.description,
        summary=f"{len(rows)} entries; 1 read, {len(rows) - 1} to read.",
        header=("Status", "Paper", "Venue", "Why It Matters", "Links"),
        rows=rows,
    )


def expected_changes(hostile: Hostile) -> dict[str, list[str]]:
    """The second sync's digest: one change of each kind, as the data words it."""
    t = hostile.texts
    groups = {
        "Added": [f"New {t[0]}"],
        "Removed": [t[4]],
        "Recategorised": [f"{t[2]}: C2 {t[2]} → C0 {t[0]}"],
        "Newly read": [t[1]],
        "Retitled": [f"{t[0]} → {hostile.retitle}"],
    }
    return {group: lines for group, lines in groups.items() if group != "Retitled" or t[0] != hostile.retitle}


def violations(folder: Path, run: Callable[..., object], hostile: Hostile) -> list[str]:
    """Sync the library twice (the second with one change of each kind) and render both pages with
    each renderer: every way they break the rule, with the Markdown that did it."""
    for second in (False, True):
        config = build(folder, hostile, second)
        result = run("-q", "--config", str(config), "sync")
        assert result.code == 0, result.err
    found = []
    page = (folder / "out" / "catalog.md").read_text(encoding="utf-8")
    changes = (folder / "out" / "CHANGES.md").read_text(encoding="utf-8")
    for name, render in RENDERERS.items():
        html_page, html_changes = render(page, folder / "out"), render(changes, folder / "out")
        found += catalog_violations(html_page, expected_page(hostile), name)
        found += changes_violations(html_changes, expected_changes(hostile), name)
        found += [f"{name}: a file included into the page" for h in (html_page, html_changes) if SECRET in h]
    return found


# -- the tests -----------------------------------------------------------------------------------------

# Each a way text could become markup with the renderers above (a line break in one becomes a space).
CONSTRUCTS = (
    "[x](javascript:alert(document.cookie))",
    '![x](https://evil.example/p.png){: onerror="alert(1)" }',
    'Evil {: onclick="alert(1)" }',
    '{#forged .md-button style="position:fixed"}',
    "[x][1] [1]: javascript:alert(1)",
    "[x]: javascript:alert(1)",
    "<https://evil.example/>",
    "<img src=x onerror=alert(1)>",
    '<a href="javascript:alert(1)">x</a>',
    '<div markdown="1" onmouseover="alert(1)">x</div>',
    "&colon; &lt;script&gt; &#106;",
    "*em* **strong** _em_ __strong__",
    "`code` ``co`de``",
    "`#!js alert(1)`",
    "^^ins^^ H^2^O",
    "==mark==",
    "~~del~~ H~2~O",
    "{++ins++} {--del--} {~~a~>b~~} {==mark==} {>>comment<<}",
    "++ctrl+alt+del++",
    ":smile: :material-github:",
    "https://evil.example/x www.evil.example",
    "mail@evil.example",
    "@user @user/repo user/repo#1 #123 !123 ?123",
    "0123456789abcdef0123456789abcdef01234567",
    "$x^2$ $$y$$ \\(z\\) \\[w\\]",
    "(c) (r) (tm) +/- =/= --> <-- 1/2 c/o",
    "*[HTML]: Hyper Text",
    "[^1] [^1]: a footnote",
    ": a definition",
    "[ ] task [x] done",
    '--8<-- "secret.txt"',
    "--8<--",
    "- a list",
    "1. a list",
    "# a heading",
    "> a quote",
    '!!! note "x"',
    '??? note "x"',
    '=== "Tab"',
    "```js",
    "~~~",
    "---",
    "| a | b |",
    "[TOC]",
    "C# and F#",
    "Back\\slash \\",
)


def test_constructs_in_every_field_render_as_text(tmp_path: Path, run) -> None:
    hostile = Hostile(
        CONSTRUCTS, '# {: onclick="x" } [t](javascript:x)', '--8<-- "secret.txt"', "[r](data:x)"
    )
    found = violations(tmp_path, run, hostile)
    assert not found, "\n".join(found)


# Markdown's punctuation, the characters next to it that change what it means, and whole payloads.
PUNCTUATION = "\\`*_{}[]()#+-.!|<>&:;~^=$@?/\"'%,  \n\t"
ALPHABET = PUNCTUATION + "abcostmwhxABC0123456789é中١\u00a0"
FRAGMENTS = (
    *CONSTRUCTS,
    "javascript:",
    "data:text/html,",
    "vbscript:",
    " onclick=",
    " onerror=",
    "www.",
    "https://",
    "1st",
    "22nd",
    "--8<--",
    ":smile:",
    "&colon;",
    "&#106;",
    "{:",
    "{: #x }",
    "```",
    "$$",
    "\\(",
    "\\[",
    "++",
    "==",
    "^^",
    "~~",
    "!!!",
    "???",
    "[^",
    "*[",
    "[ ]",
    "0123456789abcdef" * 2 + "01234567",
)
HOSTILE_TEXT = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(ALPHABET, max_size=5)), max_size=6).map(
    "".join
)


def snippet_violations(text: str) -> list[str]:
    """`text` as a heading, a paragraph, a list item and a table cell, rendered by each renderer."""
    page = (
        f"# {mdtext.heading(text)}\n\n{mdtext.line(text)}\n\n- {mdtext.line(text)}\n\n"
        f"| h |\n| --- |\n| {mdtext.cell(text)} |\n"
    )
    found = []
    for name, render in RENDERERS.items():
        check = Checker(name)
        root = parse(render(page, Path(".")))
        check.attributes(root)
        top = root.elements
        if [e.tag for e in top] != ["h1", "p", "ul", "table"]:
            found.append(f"{name}: {[str(e) for e in top]} from {page!r}")
            continue
        check.heading(top[0], "h1", text)
        check.paragraph(top[1], text)
        items = top[2].elements
        if len(items) != 1 or items[0].tag != "li" or items[0].attrs:
            check.fail(f"{top[2]} where the template has one item")
        else:
            check.text_only(items[0], "<li>")
            check.same_text(items[0], text, "<li>")
        rows = table_rows(top[3], check, ("h",))
        for (cell,) in rows:
            check.text_only(cell, "<td>")
            check.same_text(cell, text, "<td>")
        found += [f"{v} (from {page!r})" for v in check.violations]
    return found


@given(HOSTILE_TEXT)
@settings(max_examples=400, deadline=None)
def test_any_text_renders_as_itself_in_a_heading_a_line_a_list_item_and_a_cell(text: str) -> None:
    if flat(text):  # an empty text shows the page's placeholder (tested with the pages)
        found = snippet_violations(text)
        assert not found, "\n".join(found)


def test_link_labels_are_text_and_unsafe_targets_are_not_links() -> None:
    for label in CONSTRUCTS:
        page = f"{mdtext.link(label, 'notes/a b.md')} / {mdtext.link(label, 'javascript:alert(1)')}\n"
        for name, render in RENDERERS.items():
            (paragraph,) = parse(render(page, Path("."))).elements
            anchors = paragraph.elements
            assert [(a.tag, a.attrs, a.text()) for a in anchors] == [
                ("a", {"href": "notes/a%20b.md"}, flat(label))
            ], (name, page)
            assert paragraph.text() == flat(f"{label} / {label} (javascript:alert(1))"), (name, page)


@given(st.tuples(*[HOSTILE_TEXT] * 8))
@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_generated_text_in_every_field_renders_as_text(tmp_path_factory, run, texts: tuple[str, ...]) -> None:
    hostile = Hostile(texts[:5], texts[5], texts[6], texts[7])
    found = violations(tmp_path_factory.mktemp("library"), run, hostile)
    assert not found, "\n".join(found)


# -- note pages: Zotero's note HTML and annotation text, converted -------------------------------------

# What a note page's template and the conversion of a note make; python-markdown's highlight extension
# wraps code blocks in div/span with pygments' classes, and toc adds ids and permalinks to headings.
NOTE_PAGE_ELEMENTS = frozenset(
    {"h1", "h2", "h3", "h4", "h5", "h6", "p", "ul", "ol", "li", "blockquote", "hr", "br", "a", "strong", "em"}
    | {"code", "pre", "div", "span", "table", "thead", "tbody", "tr", "th", "td", "del", "sup"}
)
# (the highlight extension's code-line anchors carry an id and a name of its own)
NOTE_PAGE_ATTRIBUTES = {
    "a": {"href", "class", "title", "id", "name"},
    "div": {"class"},
    "span": {"class"},
    "code": {"class"},
}
HEADING = re.compile(r"h[1-6]")

HTML_FRAGMENTS = (
    "<p>",
    "</p>",
    "<h1>",
    "</h1>",
    "<ul><li>",
    "</li></ul>",
    "<ol><li>",
    "<blockquote>",
    "</blockquote>",
    "<pre>",
    "</pre>",
    "<code>",
    "</code>",
    "<strong>",
    "</strong>",
    "<br>",
    "<table><tr><td>",
    "</td><td>",
    "</td></tr></table>",
    '<span class="highlight" data-annotation="%7B%7D">',
    '<span class="citation" data-citation="%7B%7D">',
    "</span>",
    '<a href="javascript:alert(1)">',
    '<a href="https://ok.example/a b">',
    '<a href="data:text/html,x">',
    "</a>",
    '<img src="x" onerror="alert(1)">',
    '<img data-attachment-key="ABCD2345" src="data:image/png;base64,AAAA">',
    "<script>alert(1)</script>",
    "<style>p { color: red }</style>",
    '<iframe src="javascript:alert(1)"></iframe>',
    '<svg onload="alert(1)"><text>x</text></svg>',
    '<div onclick="alert(1)" style="x">',
    "</div>",
    "<!-- a comment -->",
    "&lt;script&gt;",
    "&amp;colon;",
    '--8<-- "secret.txt"',
    "{++ins++}",
    "\n",
)
HOSTILE_HTML = st.lists(
    st.one_of(st.sampled_from(HTML_FRAGMENTS), st.sampled_from(FRAGMENTS), st.text(ALPHABET, max_size=5)),
    max_size=12,
).map("".join)


def note_page_violations(markdown: str, folder: Path) -> list[str]:
    found = []
    for name, render in RENDERERS.items():
        html = render(markdown, folder)
        check = Checker(name)
        root = parse(html)
        check.attributes(root)
        stack = list(root.elements)
        while stack:
            element = stack.pop()
            stack += element.elements
            allowed = NOTE_PAGE_ATTRIBUTES.get(element.tag, set()) | (
                {"id"} if HEADING.fullmatch(element.tag) else set()
            )
            if element.tag not in NOTE_PAGE_ELEMENTS:
                check.fail(f"<{element.tag}> on a note page: {element}")
            if set(element.attrs) - allowed:
                check.fail(f"attributes {element.attrs} on <{element.tag}>")
        if SECRET in html:
            check.fail("a file included into the page")
        found += [f"{v} (from {markdown!r})" for v in check.violations]
    return found


@given(HOSTILE_HTML, HOSTILE_TEXT, HOSTILE_TEXT)
@example("<pre>" + "\n".join(CONSTRUCTS) + "</pre><p><code>" + " ".join(CONSTRUCTS) + "</code></p>", "", "")
@example("".join(HTML_FRAGMENTS) + " ".join(CONSTRUCTS), " ".join(CONSTRUCTS), "\n".join(CONSTRUCTS))
# A text's last `!` before a link the converter writes would make it an image.
@example(
    '!!!<img data-attachment-key="ABCD2345" src="data:image/png;base64,AAAA"><p>go!<a href="https://a.example">x</a>',
    "",
    "",
)
# Code in a list item, a quote, a link or emphasis: a fence is read only at the left margin.
@example(
    "<ul><li><pre>&lt;script&gt;</pre></li></ul><blockquote><pre>&lt;img src=x onerror=alert(1)&gt;</pre>",
    "",
    "",
)
@example(
    '<a href="https://ok.example/"><pre>[x](javascript:alert(1))</pre></a><em><pre>[y](javascript:z)</pre></em>',
    "",
    "",
)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_a_note_page_holds_no_markup_from_the_notes_html_or_the_annotations_text(
    tmp_path: Path, html: str, text: str, comment: str
) -> None:
    from zotsync.export import notes
    from zotsync.labels import labels_for
    from zotsync.model import Item, PaperNotes

    (tmp_path / "secret.txt").write_text(SECRET + "\n", encoding="utf-8")
    note = Item("NQTEAAAA", 1, "note", parent_key="PAPERAAA", fields={"note": html})
    pdf = Item("PDFAAAAA", 1, "attachment", title=text, parent_key="PAPERAAA")
    highlight = Item(
        "ANNQAAAA",
        1,
        "annotation",
        parent_key="PDFAAAAA",
        fields={
            "annotationType": "highlight",
            "annotationText": text,
            "annotationComment": comment,
            "annotationPageLabel": comment,
            "annotationColor": text,
        },
    )
    page = notes.page_text("# Title\n", PaperNotes((note,), ((pdf, (highlight,)),)), labels_for("en"))
    found = note_page_violations(page, tmp_path)
    assert not found, "\n".join(found)


def test_a_synced_note_page_shows_hostile_notes_and_annotations_as_text(tmp_path: Path, run) -> None:
    hostile = " ".join(CONSTRUCTS)
    objects = [
        api_item("PAPERAAA", hostile, url="https://example.org/a", tags=[hostile]),
        {**api_item("NQTEAAAA", "", "note", note="".join(HTML_FRAGMENTS) + hostile, parentItem="PAPERAAA")},
        {**api_item("PDFAAAAA", hostile, "attachment", parentItem="PAPERAAA", contentType="application/pdf")},
        {
            **api_item(
                "ANNQAAAA",
                "",
                "annotation",
                parentItem="PDFAAAAA",
                annotationType="highlight",
                annotationText=hostile,
                annotationComment=hostile,
                annotationPageLabel=hostile,
                annotationSortIndex="00000|000001|00000",
                annotationColor="#ffd400",
            )
        },
    ]
    write_json(tmp_path / "library.json", objects)
    (tmp_path / "catalog.yaml").write_text("title: t\ncategories: []\n", encoding="utf-8")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "notes").mkdir()
    (tmp_path / "out" / "notes" / "secret.txt").write_text(SECRET + "\n", encoding="utf-8")
    config = write_config(
        tmp_path,
        "source: {type: snapshot, path: library.json}\ncatalog: catalog.yaml\nstore: store.sqlite\n"
        "exports: {dir: out, language: en}\n",
    )
    assert run("-q", "--config", str(config), "sync").code == 0
    page = (tmp_path / "out" / "notes" / "PAPERAAA.md").read_text(encoding="utf-8")
    found = note_page_violations(page, tmp_path / "out" / "notes")
    assert not found, "\n".join(found)
    assert "javascript:" in page  # the unsafe link's target is there, as text
