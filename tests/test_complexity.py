"""No function of the package is above cyclomatic complexity 25 (radon's measure): past that, a function
does several things, and a reader cannot hold its branches in mind. Split it into steps that each say
what they do (`reconcile/match.py: match` is one method per stage; `Landing` plans, then applies)."""

from __future__ import annotations

from pathlib import Path

from radon.complexity import cc_visit

PACKAGE = Path(__file__).resolve().parent.parent / "zotsync"
LIMIT = 25


def over_the_limit() -> dict[str, int]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for block in cc_visit(path.read_text(encoding="utf-8")):
            for each in (block, *getattr(block, "methods", ())):
                if each.complexity > LIMIT:
                    found[f"{path.relative_to(PACKAGE).as_posix()}:{each.fullname}"] = each.complexity
    return found


def test_no_function_is_above_complexity_25() -> None:
    assert over_the_limit() == {}


def test_the_measure_sees_a_complex_function() -> None:
    branches = "\n".join(f"    if x == {n}:\n        return {n}" for n in range(LIMIT + 1))
    (block,) = cc_visit(f"def many(x):\n{branches}\n    return -1\n")
    assert block.complexity == LIMIT + 2
