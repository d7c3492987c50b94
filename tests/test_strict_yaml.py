"""The catalogue and config YAML are read strictly and literally, and malformed input says what to do."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from zotsync import yamlio
from zotsync.catalogue import parse_catalogue
from zotsync.catalogue_edit import pin
from zotsync.errors import ConfigError

KEY = "ABCD2345"


def catalogue(text: str) -> object:
    return parse_catalogue(yamlio.parse_yaml(text, "catalog.yaml"), Path("catalog.yaml"))


def problem(text: str) -> str:
    with pytest.raises(ConfigError) as info:
        catalogue(text)
    message = str(info.value)
    assert "\n" not in message
    return message


ENTRY = "categories:\n  - name: A\n    entries:\n      - title: T\n"


def test_a_duplicate_key_is_refused_with_the_line_of_the_second() -> None:
    text = ENTRY + "        status: read\n        why: x\n        status: unread\n"
    assert problem(text) == "catalog.yaml:7: duplicate key 'status' (first given on line 5)"


def test_duplicate_keys_anywhere_even_top_level_and_in_flow_mappings() -> None:
    assert problem("title: a\ntitle: b\n").startswith("catalog.yaml:2: duplicate key 'title'")
    flow = ENTRY + "        links: {Paper: https://a, Paper: https://b}\n"
    assert problem(flow).startswith("catalog.yaml:5: duplicate key 'Paper'")


def test_a_merge_key_may_be_overridden_as_yaml_says() -> None:
    text = ENTRY.replace(
        "      - title: T\n", "      - &t {title: T, venue: V}\n      - {<<: *t, venue: W}\n"
    )
    entries = catalogue(text).entries  # type: ignore[attr-defined]
    assert [(e.title, e.venue) for e in entries] == [("T", "V"), ("T", "W")]


@pytest.mark.parametrize(
    ("field", "typed"),
    [
        ("title", "010"),
        ("why", "1:30"),
        ("venue", "3.10"),
        ("title", ".NaN"),
        ("title", "1e3"),
        ("why", "yes"),
        ("venue", "2021-01-01"),
        ("year", "2021"),
        ("title", "0x1F"),
        ("title", "true"),
    ],
)
def test_text_fields_keep_exactly_the_text_typed(field: str, typed: str) -> None:
    text = ENTRY.replace("title: T", "title: Keep") + f"        {field}: {typed}\n"
    if field == "title":
        text = ENTRY.replace("title: T", f"title: {typed}")
    (entry,) = catalogue(text).entries  # type: ignore[attr-defined]
    assert getattr(entry, field) == typed


def test_link_labels_and_targets_keep_their_text() -> None:
    (entry,) = catalogue(ENTRY + "        links: {2021: 010, Paper: 'https://x'}\n").entries  # type: ignore[attr-defined]
    assert [(link.label, link.url) for link in entry.links] == [("2021", "010"), ("Paper", "https://x")]


def test_category_names_and_page_title_keep_their_text() -> None:
    parsed = catalogue("title: 2024\ncategories:\n  - name: 1.10\n    entries: [{title: 007}]\n")
    assert parsed.title == "2024"  # type: ignore[attr-defined]
    assert [c.name for c in parsed.categories] == ["1.10"]  # type: ignore[attr-defined]


def test_non_text_values_still_refused_naming_the_field() -> None:
    assert problem(ENTRY + "        why: [a, b]\n") == (
        "catalog.yaml:5: 'why' must be text, not a list or a mapping"
    )
    assert "noted must be true or false" in problem(ENTRY + "        noted: 'yes'\n")


@pytest.mark.parametrize("depth", [200, 5_000, 100_000])
def test_deeply_nested_yaml_is_malformed_input_not_a_crash(depth: int) -> None:
    # flow nesting, and block nesting (`- - - … x` opens one block list per dash)
    for text in ("categories: " + "[" * depth + "]" * depth, "categories:\n  " + "- " * depth + "x\n"):
        message = problem(text)  # a shallow one parses, then fails the schema: one line either way
        assert message.startswith("catalog.yaml")
        if depth > 1000:
            assert "malformed YAML" in message


def test_deep_nesting_on_the_pure_python_loader_too(monkeypatch: pytest.MonkeyPatch) -> None:
    class Pure(yaml.SafeLoader):
        pass

    Pure.construct_mapping = yamlio._StrictLoader.construct_mapping  # type: ignore[method-assign]
    monkeypatch.setattr(yamlio, "_StrictLoader", Pure)
    with pytest.raises(ConfigError, match="malformed YAML"):
        yamlio.parse_yaml("a: " + "[" * 50_000 + "]" * 50_000, "c.yaml")


def test_a_deep_catalogue_through_the_cli_exits_2_with_one_line(project: Path, run) -> None:
    (project / "seeds" / "catalog.yaml").write_text("categories: " + "[" * 20_000 + "]" * 20_000)
    result = run("--config", str(project / "config" / "zotsync.yaml"), "sync")
    assert result.code == 2 and result.err.count("\n") == 1
    assert "catalog.yaml:1: malformed YAML" in result.err and "unexpected" not in result.err


def test_the_loader_runs_on_libyaml_when_present() -> None:
    if not yaml.__with_libyaml__:
        pytest.skip("PyYAML without libyaml")
    assert issubclass(yamlio._StrictLoader, yaml.CSafeLoader)


# -- errors that say what to do -------------------------------------------------------------------------


def test_a_tab_in_the_indentation_says_yaml_indents_with_spaces() -> None:
    message = problem("categories:\n  - name: A\n\tentries: []\n")
    assert message == (
        "catalog.yaml:3: malformed YAML: a tab character at column 1; "
        "YAML indents with spaces, never tabs — replace it with spaces"
    )
    assert problem("categories:\n  -\tname: A\n").startswith(
        "catalog.yaml:2: malformed YAML: a tab character"
    )


def test_indentation_errors_are_explained_in_plain_words() -> None:
    misaligned = "categories:\n  - name: A\n    entries:\n      - title: x\n     - title: y\n"
    assert problem(misaligned) == (
        "catalog.yaml:5: malformed YAML: this line's indentation does not match the lines above it "
        "(the block that starts on line 2); the keys of one mapping, and the dashes of one list, "
        "must start in the same column"
    )
    over = "categories:\n  - name: A\n    entries: []\n      why: x\n"
    assert problem(over).startswith("catalog.yaml:4: malformed YAML: this line's indentation does not match")
    colon = ENTRY + "        why: read this: now\n"
    assert problem(colon) == (
        "catalog.yaml:5: malformed YAML: a ':' where no new key can start (column 23) — "
        "indent this line like the keys beside it, or quote a value that contains ': '"
    )


def test_did_you_mean_for_unknown_catalogue_keys() -> None:
    assert problem(ENTRY + "        stauts: read\n") == (
        "catalog.yaml:5: unknown entry key 'stauts' (did you mean 'status'?)"
    )
    assert problem("titel: x\n") == "catalog.yaml:1: unknown catalogue key 'titel' (did you mean 'title'?)"
    assert "expected one of title, venue" in problem(ENTRY + "        colour: red\n")


def test_the_config_file_is_read_strictly_too(tmp_path: Path) -> None:
    from zotsync.config import load_config

    path = tmp_path / "zotsync.yaml"
    path.write_text("catalog: a.yaml\nsource: {type: snapshot, path: x}\ncatalog: b.yaml\n")
    with pytest.raises(
        ConfigError, match=r"zotsync.yaml:3: duplicate key 'catalog' \(first given on line 1\)"
    ):
        load_config(path)


# -- pin through an anchor and alias ------------------------------------------------------------------


def test_pin_on_an_aliased_entry_writes_the_key_once_where_it_is_defined() -> None:
    text = (
        "categories:\n"
        "  - name: A\n"
        "    entries:\n"
        "      - &rammer\n"
        "        title: Rammer\n"
        "        venue: OSDI'20\n"
        "  - name: B\n"
        "    entries:\n"
        "      - *rammer\n"
    )
    result = pin(text, "Rammer", KEY)
    assert result.text == text.replace(
        "        venue: OSDI'20\n", f'        venue: OSDI\'20\n        zotero_key: "{KEY}"\n'
    )
    assert result.categories == ("A", "B")
    entries = catalogue(result.text).entries  # type: ignore[attr-defined]
    assert [(e.category, e.zotero_key) for e in entries] == [("A", KEY), ("B", KEY)]


def test_pin_on_an_aliased_flow_entry() -> None:
    text = "categories:\n  - name: A\n    entries: [&r {title: R}]\n  - name: B\n    entries: [*r]\n"
    result = pin(text, "R", KEY)
    assert result.text.count("zotero_key") == 1
    assert [e.zotero_key for e in catalogue(result.text).entries] == [KEY, KEY]  # type: ignore[attr-defined]


def test_pin_keeps_a_title_typed_as_a_number() -> None:
    text = ENTRY.replace("title: T", "title: 010")
    result = pin(text, "010", KEY)
    assert result.text == text + f'        zotero_key: "{KEY}"\n'


def test_adopt_a_near_miss_category_says_did_you_mean(project: Path, run) -> None:
    config = str(project / "config" / "zotsync.yaml")
    assert run("-q", "--config", config, "pull").code == 0
    catalog = project / "seeds" / "catalog.yaml"
    before = catalog.read_bytes()
    result = run("--config", config, "adopt", "57V8YMZM", "--category", "Deep Lerning Compiler")
    assert result.code == 2 and result.err.count("\n") == 1
    assert "no category 'Deep Lerning Compiler' in the catalogue (did you mean 'Deep Learning Compiler'" in (
        result.err
    )
    assert catalog.read_bytes() == before


def test_an_unclosed_quote_is_reported_on_its_own_line_not_as_indentation(project: Path, run) -> None:
    # The seed catalogue with the closing quote of line 16 (a DOI) deleted: YAML reads on to the next
    # quote, on line 17, and fails there as a block that does not line up.
    catalog = project / "seeds" / "catalog.yaml"
    lines = catalog.read_text(encoding="utf-8").splitlines(keepends=True)
    assert lines[15] == '        doi: "10.1109/TPDS.2020.3030548"\n'
    lines[15] = '        doi: "10.1109/TPDS.2020.3030548\n'
    catalog.write_text("".join(lines), encoding="utf-8")
    result = run("--config", str(project / "config" / "zotsync.yaml"), "sync")
    assert result.code == 2
    assert result.err.splitlines() == [
        f'zotsync: error: {catalog}:16: malformed YAML: the " at column 14 is not closed on this line, '
        "so YAML read the lines after it as part of the text (on to line 17); close the quote"
    ]


@pytest.mark.parametrize("quote", ['"', "'"])
def test_a_quote_left_open_to_the_end_of_the_file_names_its_line(quote: str) -> None:
    text = ENTRY + f"        venue: {quote}OSDI'20\n        status: read\n"
    if quote == "'":  # the ' in OSDI'20 would close it: the quote must stay open to the end
        text = ENTRY + "        venue: 'OSDI\n        status: read\n"
    assert problem(text) == (
        f"catalog.yaml:5: malformed YAML: the {quote} at column 16 is not closed on this line, so YAML "
        "read the lines after it as part of the text (to the end of the file); close the quote"
    )


def test_a_multi_line_quote_closed_before_a_misaligned_line_still_blames_the_indentation() -> None:
    text = ENTRY + '        why: "two\n          lines"\n       status: read\n'
    assert problem(text).startswith(
        "catalog.yaml:7: malformed YAML: this line's indentation does not match the lines above it"
    )


# -- aliases that expand without bound ------------------------------------------------------------------


def laughs(categories: int, entries: int) -> str:
    """A catalogue of `categories` categories whose entries are all one list of `entries` aliases of one
    entry: a few KB of text for categories × entries page rows."""
    many = ", ".join(["&e {title: Laugh}"] + ["*e"] * (entries - 1))
    others = "".join(f"  - name: C{n}\n    entries: *many\n" for n in range(1, categories))
    return f"categories:\n  - name: C0\n    entries: &many [{many}]\n{others}"


def test_aliases_that_would_repeat_past_the_budget_are_refused_naming_the_anchor(project: Path, run) -> None:
    """34 KB of aliases made 1,000,066 page rows before; now one line naming the file and the anchor."""
    text = laughs(1000, 1000)
    assert len(text) < 40_000
    with pytest.raises(ConfigError) as info:
        yamlio.parse_yaml(text, "catalog.yaml")
    assert str(info.value) == (
        "catalog.yaml:3: aliases (*name) repeat the part anchored here 999 times, past the 100,000 nodes "
        "zotsync lets aliases repeat in one file; write the repeated parts out"
    )
    catalogue_file = project / "seeds" / "catalog.yaml"
    catalogue_file.write_text(text, encoding="utf-8")
    result = run("-q", "--config", str(project / "config" / "zotsync.yaml"), "sync")
    assert result.code == 2
    assert result.err == f"zotsync: error: {catalogue_file}:3: {str(info.value).split(': ', 1)[1]}\n"
    assert not list((project / "exports").iterdir())


def test_merges_of_merges_count_as_what_they_repeat() -> None:
    """`<<` merges copy the pairs of what they name; merges of merges double them at each level."""
    levels = ["a0: &a0 {" + ", ".join(f"k{n}: v" for n in range(50)) + "}"]
    levels += [f"a{n}: &a{n} {{<<: [*a{n - 1}, *a{n - 1}]}}" for n in range(1, 20)]
    with pytest.raises(ConfigError, match=r"aliases \(\*name\) repeat the part anchored here"):
        yamlio.parse_yaml("\n".join(levels) + "\n", "zotsync.yaml")


def test_aliases_within_the_budget_still_share_entries() -> None:
    """Anchors and merges a curator uses stay as they were, up to the budget itself."""
    text = laughs(20, 1000)  # 20,000 repeated entries of two nodes each: 40,000 nodes, inside the budget
    entries = catalogue(text).entries  # type: ignore[attr-defined]
    assert len(entries) == 20_000 and {e.title for e in entries} == {"Laugh"}
