"""YAML reading that is strict and literal, and remembers line numbers for `file:line` complaints.

Strict: a key given twice in one mapping is an error (PyYAML would keep the last one silently).
Literal: keys are the text the user typed, and every scalar value remembers its text, so a text field
reads `010`, `1:30` or `3.10` exactly as written rather than as 8, 90 or 3.1 (see `text_of`).
Parsing runs on libyaml (PyYAML's C loader, several times faster) when it is installed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from .errors import ConfigError
from .inputs import MAX_YAML, read_text_input

try:
    from yaml import CSafeLoader as _BaseLoader
except ImportError:  # PyYAML built without libyaml: the same rules, in Python
    from yaml import SafeLoader as _BaseLoader  # type: ignore[assignment]

_STR = "tag:yaml.org,2002:str"
_NULL = "tag:yaml.org,2002:null"
_MERGE = "tag:yaml.org,2002:merge"


class LineDict(dict[str, Any]):
    """A mapping that knows the 1-based line of itself and of each of its keys, and the source text of
    each scalar value that YAML would otherwise have turned into a number, a date or a boolean."""

    line: int = 0
    key_lines: dict[str, int]
    scalar_text: dict[str, str]


# What aliases (`*name`) may repeat of a document, in nodes (each scalar, list or mapping is one). An
# alias costs a few bytes and stands for all of what it names, so aliases of aliases grow exponentially: a
# 34 KB catalogue made 1,000,066 page rows. Sharing an entry between categories repeats ~20 nodes each
# time; 100,000 is thousands of such placements, and at most a fraction of a second of parsing.
ALIAS_BUDGET = 100_000


class _StrictLoader(_BaseLoader):  # a SafeLoader: no arbitrary objects
    merged = False  # whether a `<<` merge key was flattened into the node tree
    may_alias = True  # False: the text holds no `*`, so no alias to weigh

    def construct_document(self, node: yaml.Node) -> Any:
        if self.may_alias:
            _weigh_aliases(node)
        return super().construct_document(node)

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> LineDict:  # type: ignore[override]
        if not isinstance(node, yaml.MappingNode):
            raise yaml.constructor.ConstructorError(
                None, None, f"expected a mapping, found {node.id}", node.start_mark
            )
        first: dict[str, yaml.Node] = {}
        for key_node, _ in node.value:
            if key_node.tag == _MERGE:
                self.merged = True
                continue
            key = _key_text(key_node)
            if key in first:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"duplicate key '{key}' (first given on line {first[key].start_mark.line + 1})",
                    key_node.start_mark,
                )
            first[key] = key_node
        self.flatten_mapping(node)  # `<<: *anchor` merges; explicit keys win, as YAML says
        mapping = LineDict()
        mapping.line = node.start_mark.line + 1
        mapping.key_lines, mapping.scalar_text = {}, {}
        for key_node, value_node in node.value:
            key = _key_text(key_node)
            mapping[key] = self.construct_object(value_node, deep=deep)
            mapping.key_lines.setdefault(key, key_node.start_mark.line + 1)
            if isinstance(value_node, yaml.ScalarNode) and value_node.tag not in (_STR, _NULL):
                mapping.scalar_text[key] = value_node.value
        return mapping


def _key_text(node: yaml.Node) -> str:
    if not isinstance(node, yaml.ScalarNode):
        raise yaml.constructor.ConstructorError(
            None, None, "a mapping key must be plain text, not a list or a mapping", node.start_mark
        )
    return str(node.value)


_StrictLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
    lambda loader, node: loader.construct_mapping(node, deep=True),  # type: ignore[arg-type]
)


@contextlib.contextmanager
def _one_line_errors(text: str, name: str) -> Iterator[None]:
    try:
        yield
    except yaml.MarkedYAMLError as exc:
        raise ConfigError(yaml_problem(name, text, exc)) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{name}: malformed YAML: {' '.join(str(exc).split())}") from None
    except RecursionError:  # the pure-Python parser on absurdly deep nesting
        raise ConfigError(f"{name}: malformed YAML: nested too deeply") from None


def _weigh_aliases(root: yaml.Node) -> None:
    """Refuse a document whose aliases repeat more than ALIAS_BUDGET nodes, before anything is built
    from it (or a `<<` merge flattened): the nodes as the text expands them, less the nodes it holds."""
    sizes: dict[int, int] = {}  # id(list or mapping) → the nodes it stands for, aliases expanded (capped)
    named: dict[int, tuple[yaml.Node, int]] = {}  # id(list or mapping) → it, and how often it is named
    ancestors: set[int] = set()
    written = 0  # the nodes the text holds: each list and mapping once, with its scalars
    cap = 2 * ALIAS_BUDGET + 2  # past it a size no longer matters: keeps the numbers small
    # Depth first without recursion (a document may nest deeply), scalars counted in place: ~3 % of the
    # time the parser itself takes.
    stack: list[tuple[yaml.Node, list[yaml.Node] | None]] = [(root, None)]
    while stack:
        node, children = stack[-1]
        if children is None:  # first visit: its lists and mappings go first
            if id(node) in sizes:
                stack.pop()
                continue
            if id(node) in ancestors:  # an alias inside what it names: construction refuses it, saying so
                return
            ancestors.add(id(node))
            children = _children(node)
            stack[-1] = (node, children)
            stack.extend((c, None) for c in children if type(c) is not yaml.ScalarNode and id(c) not in sizes)
            continue
        stack.pop()
        ancestors.discard(id(node))
        total = 1
        for child in children:
            if type(child) is yaml.ScalarNode:
                total += 1
                written += 1
                continue
            total += sizes[id(child)]
            seen = named.get(id(child))
            named[id(child)] = (child, seen[1] + 1 if seen else 1)
        sizes[id(node)] = min(total, cap)
        written += 1
    if sizes.get(id(root), 1) - written > ALIAS_BUDGET:
        node, count = max(named.values(), key=lambda ref: (ref[1] - 1) * sizes[id(ref[0])])
        raise yaml.constructor.ConstructorError(
            None,
            None,
            f"aliases (*name) repeat the part anchored here {count - 1} times, past the {ALIAS_BUDGET:,} "
            "nodes zotsync lets aliases repeat in one file; write the repeated parts out",
            node.start_mark,
        )


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def parse_yaml(text: str, name: str) -> Any:
    """Parse YAML text strictly; malformed input becomes one ConfigError `name:line: …` saying what to do."""
    with _one_line_errors(text, name):
        loader = _StrictLoader(text)
        loader.may_alias = "*" in text
        try:
            return loader.get_single_data()
        finally:
            loader.dispose()


def parse_with_nodes(text: str, name: str) -> tuple[yaml.Node | None, Any]:
    """`compose(text)` and `parse_yaml(text, name)` from one parse: the node tree, and the data built
    from it with the same strict rules and the same errors."""
    with _one_line_errors(text, name):
        root = compose(text)
        if root is None:
            return None, None
        loader = _StrictLoader("")
        loader.may_alias = "*" in text
        try:
            data = loader.construct_document(root)
        finally:
            loader.dispose()
        if loader.merged:  # constructing flattened the `<<` merges in the tree: edits need it as written
            root = compose(text)
        return root, data


def compose(text: str) -> yaml.Node | None:
    """The node tree of `text`, with marks that index into `text` itself."""
    # libyaml's marks skip a byte-order mark, the Python parser's count it; edits need the latter.
    loader = yaml.SafeLoader if text.startswith("\ufeff") else _BaseLoader
    return yaml.compose(text, Loader=loader)


def load_yaml(path: Path, what: str, error: type[ConfigError] = ConfigError) -> Any:
    """Parse `path` (a regular file of at most MAX_YAML); a missing file or malformed YAML becomes one
    `error` naming file and line."""
    try:
        text = read_text_input(path, what, MAX_YAML, error, _HINTS.get(what, ""))
    except FileNotFoundError:
        raise error(f"{what} not found: {path}") from None
    return parse_yaml(text, str(path))


# A config's relative paths start from its folder: a pipe (`--config <(…)`) has none to offer.
_HINTS = {"config file": " (zotsync reads its config from a file: the paths in it start from its folder)"}


def yaml_problem(name: str, text: str, exc: yaml.MarkedYAMLError) -> str:
    """PyYAML's messages span lines and speak of tokens; a zotsync error is one line that says what is
    wrong in the user's terms: `file:line: malformed YAML: …`."""
    mark = exc.problem_mark or exc.context_mark
    if mark is None:
        return f"{name}: malformed YAML: {' '.join(str(exc.problem or exc.context).split())}"
    where = f"{name}:{mark.line + 1}"
    lines = text.lstrip("\ufeff").splitlines()
    line = lines[mark.line] if mark.line < len(lines) else ""
    problem = " ".join(str(exc.problem or exc.context).split())
    if "\t" in line[: len(line) - len(line.lstrip())] or line[mark.column : mark.column + 1] == "\t":
        column = line.index("\t") + 1
        return (
            f"{where}: malformed YAML: a tab character at column {column}; "
            "YAML indents with spaces, never tabs — replace it with spaces"
        )
    if isinstance(exc, yaml.constructor.ConstructorError):
        return f"{where}: {problem}"
    quote = _unclosed_quote(text, exc)
    if quote is not None:
        opened, column, char, until = quote
        ran_on = f"on to line {until}" if until else "to the end of the file"
        return (
            f"{name}:{opened}: malformed YAML: the {char} at column {column} is not closed on this line, "
            f"so YAML read the lines after it as part of the text ({ran_on}); close the quote"
        )
    context_line = exc.context_mark.line + 1 if exc.context_mark else None
    if "mapping values are not allowed" in problem:
        return (
            f"{where}: malformed YAML: a ':' where no new key can start (column {mark.column + 1}) — "
            "indent this line like the keys beside it, or quote a value that contains ': '"
        )
    if any(p in problem for p in ("expected key", "expected <block end>", "expected '-' indicator")):
        since = f" (the block that starts on line {context_line})" if context_line else ""
        return (
            f"{where}: malformed YAML: this line's indentation does not match the lines above it{since}; "
            "the keys of one mapping, and the dashes of one list, must start in the same column"
        )
    return f"{where}: malformed YAML: {problem}"


def _unclosed_quote(text: str, exc: yaml.MarkedYAMLError) -> tuple[int, int, str, int | None] | None:
    """(line, column, quote character, line it ran on to or None for the end of the file), 1-based, of
    a quote left open that the error follows from.

    A quoted scalar may run over line breaks, so an open quote swallows the lines below it up to the
    next quote character, and the parser stumbles only there: on what follows that quote, and as an
    "indentation" problem. Blamed: the last scalar before the error if it is quoted, spans lines, and
    ends on the error's line (or the scanner reached the end of the file inside it)."""
    mark = exc.problem_mark
    if isinstance(exc, yaml.scanner.ScannerError) and exc.context == "while scanning a quoted scalar":
        start = exc.context_mark
        problem = str(exc.problem)
        if start is None or mark is None or not ("end of stream" in problem or "document" in problem):
            return None  # a bad escape inside quotes that are closed, say
        lines = text.lstrip("\ufeff").splitlines()
        line = lines[start.line] if start.line < len(lines) else ""
        until = None if "end of stream" in problem else mark.line + 1  # a `---` line stopped it
        return start.line + 1, start.column + 1, line[start.column : start.column + 1] or '"', until
    if mark is None:
        return None
    last: yaml.ScalarToken | None = None
    try:
        # The same loader as the parse (libyaml's marks differ from the Python scanner's on a BOM).
        for token in yaml.scan(text, Loader=_BaseLoader):
            if (token.start_mark.line, token.start_mark.column) >= (mark.line, mark.column):
                break
            if isinstance(token, yaml.ScalarToken):
                last = token
    except yaml.YAMLError:
        pass  # the scanner failed beyond the parser's error: the tokens before it are what counts
    if last is None or last.style not in ('"', "'"):
        return None
    if last.start_mark.line == last.end_mark.line or last.end_mark.line != mark.line:
        return None
    return last.start_mark.line + 1, last.start_mark.column + 1, last.style, mark.line + 1


def text_of(mapping: Any, key: str) -> str | None:
    """The text a scalar field holds exactly as the user typed it ("" when absent or null), or None
    when the value is not a scalar (a list, a mapping)."""
    value = mapping.get(key) if isinstance(mapping, dict) else None
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(mapping, LineDict) and key in mapping.scalar_text:
        return mapping.scalar_text[key]
    return None if isinstance(value, list | dict) else str(value)


def line_of(mapping: Any, key: str | None = None) -> int:
    if not isinstance(mapping, LineDict):
        return 0
    return mapping.key_lines.get(key, mapping.line) if key else mapping.line


def where(path: Path | str, mapping: Any, key: str | None = None) -> str:
    """`file:line` for a key of a parsed mapping, or just `file` when the line is unknown."""
    line = line_of(mapping, key)
    return f"{path}:{line}" if line else str(path)
