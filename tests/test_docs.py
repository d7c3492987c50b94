"""The docs cover the code: every command, option, config key and environment variable is documented, every
test the guarantees page cites exists, every relative link resolves, and the MkDocs site builds strictly."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from zotsync import config as zconfig
from zotsync.cli import cli

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README = ROOT / "README.md"
PAGES = sorted(DOCS.glob("*.md"))
HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
OPTION = re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*")


def prose(text: str) -> str:
    """The text without fenced code blocks, so a `# comment` in a shell example is not a heading."""
    return re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)


def sections(text: str) -> dict[str, str]:
    """Each heading's title → its body and subsections (up to the next heading of its level or above)."""
    lines = text.splitlines()
    fenced, headings = False, []
    for number, line in enumerate(lines):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (match := HEADING.match(line)):
            headings.append((number, len(match.group(1)), match.group(2).strip("` ")))
    found = {}
    for index, (start, level, title) in enumerate(headings):
        end = next((n for n, lvl, _ in headings[index + 1 :] if lvl <= level), len(lines))
        found[title] = "\n".join(lines[start:end])
    return found


def mentions(text: str, name: str) -> bool:
    return re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", text) is not None


def commands(group: click.Group = cli, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    ctx = click.Context(group, info_name="zotsync")
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is None or command.hidden:
            continue
        yield (*path, name)
        if isinstance(command, click.Group):
            yield from commands(command, (*path, name))


def command_at(path: tuple[str, ...]) -> click.Command:
    command: click.Command = cli
    for name in path:
        assert isinstance(command, click.Group)
        command = command.get_command(click.Context(command), name)
    return command


def listed_options(command: click.Command, help_text: str) -> set[str]:
    """The option names the command's --help lists (its help records, each checked against the output)."""
    ctx = click.Context(command, info_name="zotsync")
    names = set()
    for param in command.get_params(ctx):
        record = param.get_help_record(ctx)
        if record is None:
            continue
        for name in OPTION.findall(record[0]):
            assert name in help_text, f"{name} is not in the --help output"
            names.add(name)
    return names - {"-h", "--help"}


COMMANDS_PAGE = (DOCS / "commands.md").read_text(encoding="utf-8")
COMMAND_SECTIONS = sections(COMMANDS_PAGE)
GLOBAL_SECTION = COMMAND_SECTIONS.get("Global options", "")


def test_the_docs_pages_the_project_promises_exist() -> None:
    names = {page.stem for page in PAGES}
    expected = {"index", "commands", "configuration", "catalogue", "sources", "exports", "guarantees"}
    assert expected | {"scheduling", "development"} <= names


def test_global_options_are_documented(run) -> None:
    result = run("--help")
    assert result.code == 0
    missing = [name for name in listed_options(cli, result.out) if not mentions(GLOBAL_SECTION, name)]
    assert not missing, f"global options missing under '## Global options' in docs/commands.md: {missing}"


@pytest.mark.parametrize("path", list(commands()), ids=" ".join)
def test_every_command_and_its_options_are_documented(path: tuple[str, ...], run) -> None:
    title = "zotsync " + " ".join(path)
    assert title in COMMAND_SECTIONS, f"docs/commands.md has no '## {title}' section"
    result = run(*path, "--help")
    assert result.code == 0, result.err
    section = COMMAND_SECTIONS[title]
    missing = [
        name
        for name in sorted(listed_options(command_at(path), result.out))
        if not mentions(section, name) and not mentions(GLOBAL_SECTION, name)
    ]
    assert not missing, f"options of `{title}` not named in its section of docs/commands.md: {missing}"


def config_keys() -> set[str]:
    """Every dotted key the config file accepts, as zotsync.config lists them (sections included)."""
    return set(zconfig.config_keys())


def test_every_config_key_is_documented() -> None:
    page = (DOCS / "configuration.md").read_text(encoding="utf-8")
    keys = config_keys()
    assert {"source.type", "catalog", "exports.formats"} <= keys  # the reader found the real keys
    headings = set(sections(page))
    sections_only = {key for key in keys if any(other.startswith(key + ".") for other in keys)}
    missing = sorted(
        key
        for key in keys
        if f"`{key}`" not in page
        and f"`{key}:" not in page
        and not (key in sections_only and key in headings)
    )
    assert not missing, f"config keys missing from docs/configuration.md: {missing}"


def test_every_environment_variable_is_documented() -> None:
    code = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "zotsync").rglob("*.py"))
    read = r"""(?:environ\.get\(|environ\[|getenv\()\s*["'](ZOT\w+)["']"""
    variables = set(re.findall(read, code)) | set(getattr(zconfig, "ENV_OVERRIDES", {}))
    assert {"ZOTERO_API_KEY", "ZOTSYNC_CONFIG"} <= variables
    page = (DOCS / "configuration.md").read_text(encoding="utf-8")
    missing = sorted(v for v in variables if f"`{v}`" not in page)
    assert not missing, f"environment variables missing from docs/configuration.md: {missing}"


def test_every_test_the_docs_cite_exists() -> None:
    cited = {
        (page.name, file, name)
        for page in [*PAGES, README]
        for file, name in re.findall(r"tests/(\w+\.py)::(\w+)", page.read_text(encoding="utf-8"))
    }
    assert cited, "the guarantees page cites no tests"
    missing = [
        f"{page}: tests/{file}::{name}"
        for page, file, name in sorted(cited)
        if not (ROOT / "tests" / file).exists()
        or not re.search(rf"^(?:async )?def {name}\(", (ROOT / "tests" / file).read_text(), re.M)
    ]
    assert not missing, f"cited tests that do not exist: {missing}"


def test_the_guarantees_table_has_a_test_in_every_row() -> None:
    table = sections((DOCS / "guarantees.md").read_text(encoding="utf-8"))["What zotsync guarantees"]
    rows = [line for line in table.splitlines() if line.startswith("| ") and not line.startswith("| fault")]
    assert len(rows) >= 10
    assert all(re.search(r"tests/\w+\.py::\w+", row) for row in rows), "a guarantee without its test"
    codes = sections((DOCS / "guarantees.md").read_text(encoding="utf-8"))["Exit codes"]
    assert all(f"| {code} |" in codes for code in (0, 1, 2, 3, 130))


def github_slug(title: str) -> str:
    title = re.sub(r"[^\w\- ]", "", title.strip().lower().replace("`", ""))
    return title.replace(" ", "-")


@pytest.mark.parametrize("page", [README, *PAGES], ids=lambda p: p.name)
def test_relative_links_resolve(page: Path) -> None:
    text = re.sub(r"`[^`\n]*`", "", prose(page.read_text(encoding="utf-8")))
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue
        file, _, anchor = target.partition("#")
        path = (page.parent / file).resolve()
        if not path.exists():
            broken.append(target)
        elif anchor and path.suffix == ".md":
            slugs = {github_slug(t) for t in sections(path.read_text(encoding="utf-8"))}
            if anchor not in slugs:
                broken.append(target)
    assert not broken, f"{page.name}: links to nothing: {broken}"


def test_the_readme_stays_a_short_guide() -> None:
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= 300, f"README.md has {lines} lines; the reference belongs in docs/"


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None, reason="mkdocs is not installed (.[test])")
def test_the_docs_site_builds_strictly(tmp_path: Path) -> None:
    command = ["build", "--strict", "-f", str(ROOT / "mkdocs.yml"), "-d", str(tmp_path)]
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", *command],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert built.returncode == 0, built.stderr
    assert (tmp_path / "commands" / "index.html").exists()
