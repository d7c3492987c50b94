"""Edit the curated catalogue as text: add a pin or an entry and leave every other byte alone.

The catalogue is the curator's file — comments, blank lines, quoting, key order and flow mappings are
theirs. So nothing here re-dumps YAML: `yaml.compose` gives each node's position, and an edit is a few
lines inserted (or one scalar replaced) at those positions, in the file's own indentation and line
endings. Every edit is then proven: the new text is parsed again and must equal the old catalogue plus
exactly the intended change, or the edit is refused. Pure functions, text in and text out; no I/O.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from rapidfuzz import fuzz, process

from . import normalize
from .catalogue import parse_catalogue
from .errors import CatalogueError, ConfigError
from .model import ZOTERO_KEY, Catalogue, CatalogueEntry, Category, category_name
from .yamlio import parse_with_nodes, parse_yaml, text_of

_NULL = "tag:yaml.org,2002:null"
_BREAK = re.compile(r"\r\n|\r|\n")
# What PyYAML accepts unescaped in a stream; anything else must be written as an escape.
_PRINTABLE = re.compile("[\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\t": "\\t", "\n": "\\n", "\r": "\\r", "\x85": "\\N"}
_ESCAPES |= {"\u2028": "\\L", "\u2029": "\\P", "\ufeff": "\\ufeff"}


class CatalogueEditError(CatalogueError):
    """The edit was refused; the catalogue is left as it was (exit code 2)."""


@dataclass(frozen=True, slots=True)
class EditResult:
    text: str  # the new file content (the old one when nothing needed to change)
    title: str  # the curated title pinned or added
    categories: tuple[str, ...]  # where: every placement pinned, or the one category added to
    replaced: tuple[str, ...] = ()  # keys --force replaced
    created_category: bool = False

    def changed(self, old: str) -> bool:
        return self.text != old


@dataclass(frozen=True, slots=True)
class _Edit:
    """Replace text[start:end] with `new` (an insertion when start == end)."""

    start: int
    end: int
    new: str


@dataclass(frozen=True, slots=True)
class _Style:
    """How the file lays out block lists, measured from its own lines (defaults: two spaces)."""

    eol: str = "\n"
    category_dash: int = 2  # column of a category's `-`, relative to the `categories:` key
    category_gap: int = 2  # from a category's `-` to its keys
    entry_dash: int = 2  # column of an entry's `-`, relative to the category's keys
    entry_gap: int = 2  # from an entry's `-` to its keys


@dataclass(frozen=True, slots=True)
class _EntryNode:
    category: str
    node: yaml.MappingNode
    title: str


class Document:
    """The catalogue's node tree, with what the edits need to find their place, and the catalogue it
    parses to: one parse serves the caller (matching), the edit and the edit's proof. `for_adopt`: an
    empty catalogue (nothing, or only comments) gains a `categories:` key to adopt into."""

    def __init__(self, text: str, name: str, *, for_adopt: bool = False) -> None:
        try:
            root, self.raw = parse_with_nodes(text, name)  # the proof of the edit compares with raw
            if root is None and for_adopt:
                text += ("" if not text or text.endswith(("\n", "\r")) else "\n") + "categories:\n"
                root, self.raw = parse_with_nodes(text, name)
        except ConfigError as exc:
            raise CatalogueEditError(f"{exc}; not edited") from None
        self.text = text
        self.name = name
        self.catalogue = parse_catalogue(self.raw, Path(name))  # also proves the node shapes below
        if not isinstance(root, yaml.MappingNode):
            raise CatalogueEditError(f"{name}: the catalogue is empty; add a 'categories:' list first")
        self.root = root
        self.categories: list[tuple[str, yaml.MappingNode]] = []
        self.entries: list[_EntryNode] = []
        categories = _value(root, "categories")
        for node in categories.value if isinstance(categories, yaml.SequenceNode) else ():
            name_node = _value(node, "name")
            category = (
                category_name(str(name_node.value).strip()) if isinstance(name_node, yaml.ScalarNode) else ""
            )
            self.categories.append((category, node))
            entries = _value(node, "entries")
            for entry in entries.value if isinstance(entries, yaml.SequenceNode) else ():
                title = _value(entry, "title")
                self.entries.append(_EntryNode(category, entry, str(title.value).strip() if title else ""))
        self.style = self._measure()

    def _measure(self) -> _Style:
        crlf, lf = self.text.count("\r\n"), self.text.count("\n")
        eol = "\r\n" if crlf * 2 > lf else "\r" if not lf and "\r" in self.text else "\n"
        style = _Style(eol=eol)
        categories_key = _key(self.root, "categories")
        categories = _value(self.root, "categories")
        if categories_key and isinstance(categories, yaml.SequenceNode) and _is_block(categories):
            dash = categories.start_mark.column
            style = dataclasses.replace(style, category_dash=dash - categories_key.start_mark.column)
            first = categories.value[0] if categories.value else None
            if isinstance(first, yaml.MappingNode) and _is_block(first):
                style = dataclasses.replace(style, category_gap=max(first.start_mark.column - dash, 2))
        for _, category in self.categories:
            entries = _value(category, "entries")
            if not (isinstance(entries, yaml.SequenceNode) and _is_block(entries) and entries.value):
                continue
            dash = entries.start_mark.column
            style = dataclasses.replace(style, entry_dash=dash - _key_column(category))
            first = entries.value[0]
            if isinstance(first, yaml.MappingNode) and _is_block(first):
                style = dataclasses.replace(style, entry_gap=max(first.start_mark.column - dash, 2))
            break
        return style

    def apply(self, edits: Sequence[_Edit]) -> str:
        text = self.text
        for edit in sorted(edits, key=lambda e: (e.start, e.end), reverse=True):
            text = text[: edit.start] + edit.new + text[edit.end :]
        return text


# -- the two edits ------------------------------------------------------------------------------------


def pin(
    text: str | Document, target: str, key: str, *, force: bool = False, name: str = "catalog.yaml"
) -> EditResult:
    """Add `zotero_key: "KEY"` to every curated entry titled `target` (normalised), or already pinned
    to the key `target`. A different existing key is refused unless `force`, which replaces it in place.
    """
    key = check_key(key)
    doc = text if isinstance(text, Document) else Document(text, name)
    chosen = _select(doc, target)
    title = chosen[0].title
    edits: list[_Edit] = []
    replaced: list[str] = []
    # An entry listed again through a YAML alias is one mapping in the text: edit it where it is defined.
    for entry in list({id(e.node): e for e in chosen}.values()):
        key_node = _key(entry.node, "zotero_key")
        value = _value(entry.node, "zotero_key")
        if key_node is None or value is None:
            edits.append(_add_key(doc, entry.node, "zotero_key", key))
            continue
        current = _scalar_text(value)
        if current == key:
            continue
        if current and not force:
            raise CatalogueEditError(
                f"'{title}' is already pinned to {current} ({name}:{value.start_mark.line + 1}); "
                f"pass --force to replace it with {key}"
            )
        if current:
            replaced.append(current)
        edits.append(_replace_scalar(doc, value, key))
    result = EditResult(doc.apply(edits), title, tuple(dict.fromkeys(e.category for e in chosen)))
    result = dataclasses.replace(result, replaced=tuple(dict.fromkeys(replaced)))

    def expect(catalogue: Catalogue) -> Catalogue:
        wanted = normalize.title(title)
        return _map_entries(
            catalogue,
            lambda e: dataclasses.replace(e, zotero_key=key) if normalize.title(e.title) == wanted else e,
        )

    _verify(doc, result.text, expect, lambda raw: _expect_raw_pin(raw, title, key))
    return result


def adopt(
    text: str | Document,
    category: str,
    title: str,
    key: str,
    *,
    create_category: bool = False,
    name: str = "catalog.yaml",
) -> EditResult:
    """Append `- title: "<title>"` + `zotero_key: "KEY"` to the end of `category`'s entries; an unknown
    category is refused unless `create_category`, which appends it to the end of `categories:`."""
    key = check_key(key)
    title, category = title.strip(), category_name(category.strip())
    if not title:
        raise CatalogueEditError(f"the Zotero item {key} has no title; add one in Zotero first")
    doc = text if isinstance(text, Document) else Document(text, name, for_adopt=True)
    for entry in doc.entries:
        if _scalar_text(_value(entry.node, "zotero_key")) == key:
            raise CatalogueEditError(f"{key} is already in the catalogue under '{entry.category}'")
    same = [e for e in doc.entries if normalize.title(e.title) == normalize.title(title)]
    if same:
        raise CatalogueEditError(
            f"'{same[0].title}' is already in the catalogue under "
            f"{_names(e.category for e in same)}; use `zotsync pin` to record its key"
        )
    entry_lines = [f"title: {yaml_quote(title)}", f"zotero_key: {yaml_quote(key)}"]
    flow_entry = "{" + ", ".join(entry_lines) + "}"
    owner = next((node for found, node in doc.categories if found == category), None)
    style = doc.style
    if owner is not None:
        lines = [(0, line) for line in entry_lines]
        edits = _append(doc, owner, "entries", lines, flow_entry, style.entry_dash, style.entry_gap)
    elif create_category:
        nested = _dashed([(0, line) for line in entry_lines], style.entry_gap)
        lines = [(0, f"name: {yaml_quote(category)}"), (0, "entries:")]
        lines += [(style.entry_dash + indent, line) for indent, line in nested]
        flow = "{" + f"name: {yaml_quote(category)}, entries: [{flow_entry}]" + "}"
        edits = _append(doc, doc.root, "categories", lines, flow, style.category_dash, style.category_gap)
    else:
        check_category([found for found, _ in doc.categories], category, create_category)
    result = EditResult(doc.apply(edits), title, (category,), created_category=owner is None)

    def expect(catalogue: Catalogue) -> Catalogue:
        new = CatalogueEntry(category=category, title=title, zotero_key=key)
        if owner is None:
            return dataclasses.replace(
                catalogue, categories=(*catalogue.categories, Category(category, (new,)))
            )
        return dataclasses.replace(
            catalogue,
            categories=tuple(
                Category(c.name, (*c.entries, new)) if c.name == category else c for c in catalogue.categories
            ),
        )

    _verify(doc, result.text, expect, lambda raw: _expect_raw_adopt(raw, category, title, key))
    return result


def check_category(names: Sequence[str], category: str, create: bool = False) -> None:
    """Refuse a category the catalogue lacks (unless it is to be created), with the names it may mean."""
    if create or category_name(category.strip()) in names:
        return
    near = nearest(category, names)
    hint = f" (did you mean {' or '.join(repr(n) for n in near)}?)" if near else ""
    raise CatalogueEditError(
        f"no category '{category.strip()}' in the catalogue{hint}; pass --new-category to add it at the end"
    )


def nearest(query: str, choices: Sequence[str], limit: int = 3) -> list[str]:
    """The closest few of `choices` to `query` (normalised titles, fuzzy), for a "did you mean"."""
    unique = list(dict.fromkeys(c for c in choices if c))
    found = process.extract(
        normalize.title(query), [normalize.title(c) for c in unique], scorer=_similarity, limit=limit
    )
    return [unique[index] for _, score, index in found if score >= 40]


def _similarity(a: str, b: str, **_: Any) -> float:
    """A typo'd, shortened or reordered title should still find its entry: no single rapidfuzz scorer
    ranks all three well (WRatio favours any shared word), their mean does."""
    scorers = (fuzz.WRatio, fuzz.token_set_ratio, fuzz.token_sort_ratio, fuzz.partial_ratio)
    return sum(scorer(a, b) for scorer in scorers) / len(scorers)


def curated_titles(text: str, name: str = "catalog.yaml") -> list[str]:
    return [entry.title for entry in _parse(text, name).entries]


def yaml_quote(value: str) -> str:
    """A YAML double-quoted scalar that reads back as exactly `value`, on one line."""
    out = []
    for char in value:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif _PRINTABLE.fullmatch(char):
            out.append(char)
        elif ord(char) <= 0xFF:
            out.append(f"\\x{ord(char):02x}")
        elif ord(char) <= 0xFFFF:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(f"\\U{ord(char):08x}")
    return '"' + "".join(out) + '"'


# -- finding ------------------------------------------------------------------------------------------


def _select(doc: Document, target: str) -> list[_EntryNode]:
    """The entries a `pin` target names: by normalised title, else by the key they are pinned to."""
    wanted = normalize.title(target)
    chosen = [e for e in doc.entries if wanted and normalize.title(e.title) == wanted]
    if not chosen and ZOTERO_KEY.match(target.strip().upper()):
        pinned = {normalize.title(e.title) for e in doc.entries if _pin_of(e) == target.strip().upper()}
        chosen = [e for e in doc.entries if normalize.title(e.title) in pinned]
    if not chosen:
        near = nearest(target, [e.title for e in doc.entries])
        hint = f" (nearest: {_names(near)})" if near else ""
        raise CatalogueEditError(f"no curated entry titled '{target}'{hint}")
    titles = list(dict.fromkeys(normalize.title(e.title) for e in chosen))
    if len(titles) > 1:  # two different papers pinned to one key: the curator must say which
        raise CatalogueEditError(
            f"{target.strip().upper()} is pinned by several entries ({_names(e.title for e in chosen)}); "
            "name the entry by its title"
        )
    return chosen


def _pin_of(entry: _EntryNode) -> str:
    return _scalar_text(_value(entry.node, "zotero_key"))


def _key(mapping: yaml.Node, name: str) -> yaml.ScalarNode | None:
    if isinstance(mapping, yaml.MappingNode):
        for key, _ in mapping.value:
            if isinstance(key, yaml.ScalarNode) and key.value == name:
                return key
    return None


def _value(mapping: yaml.Node | None, name: str) -> Any:
    if isinstance(mapping, yaml.MappingNode):
        for key, value in mapping.value:
            if isinstance(key, yaml.ScalarNode) and key.value == name:
                return value
    return None


def _scalar_text(node: yaml.Node | None) -> str:
    if not isinstance(node, yaml.ScalarNode) or node.tag == _NULL:
        return ""
    return str(node.value).strip()


def _is_block(node: yaml.Node) -> bool:
    return not getattr(node, "flow_style", False)


def _key_column(mapping: yaml.MappingNode) -> int:
    return mapping.value[0][0].start_mark.column if mapping.value else mapping.start_mark.column


# -- positions ----------------------------------------------------------------------------------------


def _content_end(text: str, node: yaml.Node) -> int:
    """Just after the last character that belongs to `node` — not its trailing comments or blank lines,
    which the node's own end mark may cover (a block mapping ends where the next item starts)."""
    if isinstance(node, yaml.MappingNode) and _is_block(node) and node.value:
        return _content_end(text, node.value[-1][1])
    if isinstance(node, yaml.SequenceNode) and _is_block(node) and node.value:
        return _content_end(text, node.value[-1])
    start, end = node.start_mark.index, node.end_mark.index
    if isinstance(node, yaml.ScalarNode) and node.style in ("|", ">") and "+" in _header(text, start):
        return end  # `|+` keeps its trailing blank lines: they are part of the value
    return start + len(text[start:end].rstrip())


def _header(text: str, start: int) -> str:
    """A block scalar's indicators: `|+2` → `|+2`."""
    match = re.match(r"[|>][-+0-9]*", text[start:])
    return match.group(0) if match else ""


def _line_after(text: str, position: int) -> int:
    """The start of the line after the one holding `position` (a line start stays; EOF is EOF)."""
    if position == 0 or text[position - 1] in "\r\n":
        return position
    match = _BREAK.search(text, position)
    return match.end() if match else len(text)


def _insert_lines(doc: Document, position: int, lines: Sequence[str]) -> _Edit:
    eol = doc.style.eol
    if position == len(doc.text) and doc.text and doc.text[-1] not in "\r\n":
        return _Edit(position, position, eol + eol.join(lines))  # the file had no final newline; keep it so
    return _Edit(position, position, "".join(line + eol for line in lines))


# -- edits --------------------------------------------------------------------------------------------


def _add_key(doc: Document, mapping: yaml.MappingNode, name: str, key: str) -> _Edit:
    pair = f"{name}: {yaml_quote(key)}"
    if not _is_block(mapping):  # `- {title: X}`: one more pair inside the braces
        end = mapping.value[-1][1].end_mark.index if mapping.value else mapping.start_mark.index + 1
        return _Edit(end, end, (", " if mapping.value else "") + pair)
    position = _line_after(doc.text, _content_end(doc.text, mapping))
    return _insert_lines(doc, position, [" " * _key_column(mapping) + pair])


def _replace_scalar(doc: Document, node: yaml.ScalarNode, key: str) -> _Edit:
    start, end = node.start_mark.index, node.end_mark.index
    if node.style in ("|", ">"):
        raise CatalogueEditError(f"{doc.name}:{node.start_mark.line + 1}: zotero_key is a block scalar")
    if node.style == "'":
        return _Edit(start, end, f"'{key}'")
    if node.style in (None, "") and _scalar_text(node):  # plain: None from PyYAML, "" from libyaml
        return _Edit(start, end, key)  # the curator wrote it plain; keep it plain
    new = yaml_quote(key)
    if start == end:  # `zotero_key:` with no value: the mark sits right after the colon
        new = (" " if doc.text[start - 1 : start] == ":" else "") + new
        new += " " if doc.text[end : end + 1] == "#" else ""
    return _Edit(start, end, new)


def _dashed(lines: Sequence[tuple[int, str]], gap: int) -> list[tuple[int, str]]:
    """A block list item from its lines (indent from the item's keys, text), as (indent from the `-`,
    text): `-` and the gap before the first key."""
    (_, first), *rest = lines
    return [(0, "-" + " " * (gap - 1) + first), *((gap + indent, line) for indent, line in rest)]


def _append(
    doc: Document,
    owner: yaml.MappingNode,
    name: str,
    item: Sequence[tuple[int, str]],
    flow_item: str,
    dash_offset: int,
    gap: int,
) -> list[_Edit]:
    """Append a list item to `owner[name]`, whatever shape the list has now: missing, empty (`[]` or
    no value), a flow list, or a block list (whose own layout wins over the file's usual one)."""
    text = doc.text
    key = _key(owner, name)
    value = _value(owner, name)
    key_column = _key_column(owner)
    if isinstance(value, yaml.SequenceNode) and _is_block(value) and value.value:
        first = value.value[0]
        if isinstance(first, yaml.MappingNode) and _is_block(first):
            gap = max(first.start_mark.column - value.start_mark.column, 2)

    def block(dash: int) -> list[str]:
        return [" " * (dash + indent) + line for indent, line in _dashed(item, gap)]

    if not _is_block(owner):
        if value is None:
            end = owner.value[-1][1].end_mark.index if owner.value else owner.start_mark.index + 1
            return [_Edit(end, end, (", " if owner.value else "") + f"{name}: [{flow_item}]")]
        if isinstance(value, yaml.SequenceNode) and not value.value:
            return [_Edit(value.start_mark.index, value.end_mark.index, f"[{flow_item}]")]
    if isinstance(value, yaml.SequenceNode) and value.value:
        if not _is_block(value):
            end = value.value[-1].end_mark.index
            return [_Edit(end, end, ", " + flow_item)]
        last = value.value[-1]
        position = _line_after(text, _content_end(text, last))
        return [_insert_lines(doc, position, block(value.start_mark.column))]
    if not _is_block(owner):
        raise CatalogueEditError(f"{doc.name}:{owner.start_mark.line + 1}: cannot add to '{name}' here")
    lines = block(key_column + dash_offset)
    if key is None:  # no such key yet: add it as the mapping's last key
        position = _line_after(text, _content_end(text, owner))
        return [_insert_lines(doc, position, [" " * key_column + f"{name}:", *lines])]
    edits = []
    if value is not None and value.end_mark.index > value.start_mark.index:
        # `entries: []` or `entries: ~`: drop the value (and the spaces before it), keep a trailing comment
        start = value.start_mark.index
        while start > key.end_mark.index + 1 and text[start - 1] in " \t":
            start -= 1
        edits.append(_Edit(start, value.end_mark.index, ""))
        after = value.end_mark.index
    else:
        after = key.end_mark.index
    edits.append(_insert_lines(doc, _line_after(text, after), lines))
    return edits


# -- proof --------------------------------------------------------------------------------------------


def _parse(text: str, name: str) -> Catalogue:
    return parse_catalogue(_parse_raw(text, name), Path(name))


def _parse_raw(text: str, name: str) -> Any:
    try:
        return parse_yaml(text, name)
    except ConfigError as exc:
        raise CatalogueEditError(f"{exc}; not edited") from None


def _verify(
    doc: Document,
    new_text: str,
    expect: Callable[[Catalogue], Catalogue],
    expect_raw: Callable[[Any], Any],
) -> None:
    """The new text must parse to the old catalogue plus exactly the intended change — as model objects
    and as raw YAML data (so nothing outside the entries moved either) — or nothing is written."""
    try:
        raw_new = parse_yaml(new_text, doc.name)
        parsed = parse_catalogue(raw_new, Path(doc.name))
    except ConfigError as exc:  # CatalogueError included
        raise CatalogueEditError(f"the edit would break the catalogue ({exc}); not written") from None
    if _strip_lines(parsed) != _strip_lines(expect(doc.catalogue)) or raw_new != expect_raw(doc.raw):
        raise CatalogueEditError(
            f"{doc.name}: cannot edit this layout safely (the result would differ by more than the "
            "intended lines); not written — please edit by hand"
        )


def _strip_lines(catalogue: Catalogue) -> Catalogue:
    return _map_entries(catalogue, lambda e: dataclasses.replace(e, line=0))


def _map_entries(catalogue: Catalogue, change: Callable[[CatalogueEntry], CatalogueEntry]) -> Catalogue:
    categories = tuple(Category(c.name, tuple(map(change, c.entries))) for c in catalogue.categories)
    return dataclasses.replace(catalogue, categories=categories)


# The expected raw data after an edit: new dicts and lists along the changed path only, so the parsed
# original stays as it is without a deep copy of 10,000 entries (equality ignores LineDict's marks).
def _expect_raw_pin(raw: Any, title: str, key: str) -> Any:
    wanted = normalize.title(title)

    def after(entry: Any) -> Any:
        if normalize.title(text_of(entry, "title") or "") == wanted:
            return {**entry, "zotero_key": key}
        return entry

    categories = raw.get("categories")
    if not categories:
        return raw
    return {
        **raw,
        "categories": [
            {**c, "entries": [after(e) for e in c["entries"]]} if c.get("entries") else c for c in categories
        ],
    }


def _expect_raw_adopt(raw: Any, category: str, title: str, key: str) -> Any:
    new = {"title": title, "zotero_key": key}
    categories = list(raw.get("categories") or ())
    for position, found in enumerate(categories):
        if category_name((text_of(found, "name") or "").strip()) == category:
            categories[position] = {**found, "entries": [*(found.get("entries") or ()), new]}
            return {**raw, "categories": categories}
    return {**raw, "categories": [*categories, {"name": category, "entries": [new]}]}


def check_key(key: str) -> str:
    key = key.strip().upper()  # Zotero keys are upper case; accept a pasted lower-case one
    if not ZOTERO_KEY.match(key):
        raise CatalogueEditError(f"'{key}' is not a Zotero item key (8 characters, e.g. ABCD2345)")
    return key


def _names(names: Any) -> str:
    return ", ".join(f"'{n}'" for n in dict.fromkeys(names))
