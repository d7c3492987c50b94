"""YAML reading that remembers line numbers, so every complaint can point at `file:line`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from .errors import ConfigError


class LineDict(dict[str, Any]):
    """A mapping that knows the 1-based line of itself and of each of its keys."""

    line: int = 0
    key_lines: dict[str, int]


class _LineLoader(yaml.SafeLoader):
    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> LineDict:  # type: ignore[override]
        mapping = LineDict(super().construct_mapping(node, deep=deep))
        mapping.line = node.start_mark.line + 1
        mapping.key_lines = {str(k.value): k.start_mark.line + 1 for k, _ in node.value}
        return mapping


_LineLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
    lambda loader, node: loader.construct_mapping(node, deep=True),
)


def load_yaml(path: Path, what: str) -> Any:
    """Parse `path`; a missing file or malformed YAML becomes one ConfigError naming file and line."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{what} not found: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {what} {path}: {exc}") from None
    try:
        return yaml.load(text, Loader=_LineLoader)  # a SafeLoader subclass: no arbitrary objects
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise ConfigError(f"{where}: malformed YAML: {exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: malformed YAML: {exc}") from None


def line_of(mapping: Any, key: str | None = None) -> int:
    if not isinstance(mapping, LineDict):
        return 0
    return mapping.key_lines.get(key, mapping.line) if key else mapping.line


def where(path: Path, mapping: Any, key: str | None = None) -> str:
    """`file:line` for a key of a parsed mapping, or just `file` when the line is unknown."""
    line = line_of(mapping, key)
    return f"{path}:{line}" if line else str(path)
