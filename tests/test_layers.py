"""The package's layers, read from its imports: no import cycle, and none of the arrows the architecture
rules out (docs/development.md, "Layout"). Run alone: `python -m pytest tests/test_layers.py -q`.

Imports inside functions count. Imports under `if TYPE_CHECKING:` never run, so they make no cycle; but a
type-only import still names a layer, so the ruled-out arrows are checked with them too.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "zotsync"

# (importer prefix, imported prefix, why not)
FORBIDDEN = (
    ("zotsync.sources", "zotsync.store", "a source reports changes; the pull writes them into the store"),
    ("zotsync.store", "zotsync.reconcile", "the store keeps data; reconciling is the pure core above it"),
    ("zotsync.config", "zotsync.export", "the config is read before any exporter exists"),
    ("zotsync.model", "zotsync.", "the model is the bottom layer: value objects only"),
    ("zotsync.reconcile", "zotsync.store", "reconcile is pure: it is given a library, never reads one"),
    ("zotsync.reconcile", "zotsync.sources", "reconcile is pure"),
    ("zotsync.export", "zotsync.store", "an exporter renders what it is given; the use case reads the store"),
    ("zotsync.export", "zotsync.sources", "an exporter renders what it is given"),
    ("zotsync.reconcile", "zotsync.processing", "reconcile reads what processors found (Library.found)"),
    (
        "zotsync.digest",
        "zotsync.export",
        "the change digest is a pure diff; CHANGES.md is rendered in export/",
    ),
    ("zotsync.export", "zotsync.reconcile", "an exporter renders the page it is given, reconciled already"),
    ("zotsync.facts", "zotsync.store", "facts are derived from one item alone"),
    ("zotsync.plan", "zotsync.store", "a plan is a value: the landing reads it, the plan reads nothing"),
    ("zotsync.plan", "zotsync.export", "a plan is a value: the writer decides it"),
    ("zotsync.plan", "zotsync.app", "a plan is a value"),
)
# The model may import these small leaf modules of its own layer (and nothing that imports it back).
MODEL_MAY_IMPORT = ("zotsync.text", "zotsync.normalize")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in PACKAGE.rglob("*.py")}


def _runtime_nodes(tree: ast.AST, type_only: bool = False) -> list[ast.AST]:
    """Every node but those under `if TYPE_CHECKING:` (with `type_only`, those too)."""
    kept, stack = [], [tree]
    while stack:
        node = stack.pop()
        if not type_only and isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            stack.extend(node.orelse)
            continue
        kept.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return kept


def imports(name: str, path: Path, known: dict[str, Path], type_only: bool = False) -> set[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8")), type_only):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("zotsync")}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            if not base.startswith("zotsync"):
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in known else base)
    return {module for module in found if module in known and module != name}


def graph(type_only: bool = False) -> dict[str, set[str]]:
    """Each module → the modules it imports; with `type_only`, those under `if TYPE_CHECKING:` too."""
    known = modules()
    return {name: imports(name, path, known, type_only) for name, path in known.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in edges.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_the_package_has_no_import_cycle() -> None:
    assert cycles(graph()) == []


def test_no_layer_imports_what_the_architecture_rules_out() -> None:
    wrong = []
    for importer, targets in graph(type_only=True).items():
        for target in targets:
            for source, forbidden, why in FORBIDDEN:
                if source == "zotsync.model" and target in MODEL_MAY_IMPORT:
                    continue
                if (importer == source or importer.startswith(source + ".")) and (
                    target == forbidden
                    or target.startswith(forbidden if forbidden.endswith(".") else forbidden + ".")
                ):
                    wrong.append(f"{importer} → {target}: {why}")
    assert wrong == []


def test_the_model_has_no_type_only_back_reference() -> None:
    """`ItemFacts` lives in model.py: the model names no module above it, not even for a type."""
    assert graph(type_only=True)["zotsync.model"] <= set(MODEL_MAY_IMPORT)


def test_the_graph_sees_type_only_imports_when_asked() -> None:
    assert "zotsync.config" not in graph()["zotsync.export.record"]
    assert "zotsync.config" in graph(type_only=True)["zotsync.export.record"]


def test_the_graph_sees_the_imports_it_checks() -> None:
    """The reading itself: a relative import, a module-level one and one inside a function are found."""
    edges = graph()
    assert "zotsync.model" in edges["zotsync.store.codec"]  # from ..model import …
    assert "zotsync.app.pull" in edges["zotsync.cli"]  # inside the pull command
    assert "zotsync.export.base" in edges["zotsync.export.markdown"]
