"""`zotsync pin` / `adopt`: the catalogue is edited as text, and only the intended lines change."""

from __future__ import annotations

import difflib
import json
import os
import stat
import textwrap
from pathlib import Path

import pytest
import yaml
from factories import config_of
from hypothesis import given
from hypothesis import strategies as st

from zotsync.catalogue import parse_catalogue
from zotsync.catalogue_edit import CatalogueEditError, adopt, pin, yaml_quote

KEY = "ABCD2345"

# Everything a curator might write: comments everywhere, blank lines, every quoting style, flow
# mappings, block scalars (clip, keep, folded), a duplicated entry, a flow-style entry, `entries: []`.
COMMENTED = textwrap.dedent(
    """\
    # My reading list — hand-kept; zotsync may add pins.
    title: 'Reading list'   # page title

    description: >-
      Papers I read,
      and papers I mean to.
    categories:
      # --- compilers ---------------------------------------------------------
      - name: Compilers   # first
        entries:
          - title: "Rammer: Enabling Holistic Deep Learning Compiler Optimizations with rTasks"
            venue: OSDI'20
            status: read    # finally
            why: |
              Two lines
              of why.

            # a comment after a block scalar, before the next entry
          - title: 'Welder: Scheduling Deep Learning Memory Access via Tile-graph'
            links: {Paper: "https://example.org/welder", Note: notes/welder.md}   # trailing
          - title: Ansor
            why: |+
              Kept trailing lines.


          - {title: "Flow Style Entry", venue: X}
          # between entries

          - title: TVM
            why: >
              folded
              text
      - name: "Empty"
        entries: []   # nothing yet
      - name: Twice
        entries:
          - title: "WELDER — scheduling deep learning memory access via tile-graph"
            status: unread
    # the end
    """
)


def only_added(old: str, new: str) -> list[str]:
    """The lines the edit added; fails if any line was removed or changed."""
    diff = list(difflib.ndiff(old.splitlines(keepends=True), new.splitlines(keepends=True)))
    assert not [line for line in diff if line.startswith("- ")], "".join(diff)
    return [line[2:] for line in diff if line.startswith("+ ")]


def catalogue(text: str):
    return parse_catalogue(yaml.safe_load(text), Path("catalog.yaml"))


def entry(text: str, title: str):
    return next(e for e in catalogue(text).entries if e.title == title)


# -- pin ----------------------------------------------------------------------------------------------


def test_pin_adds_one_line_after_a_block_scalar_and_nothing_else_moves() -> None:
    result = pin(COMMENTED, "rammer: enabling holistic deep learning compiler optimizations with RTASKS", KEY)
    assert only_added(COMMENTED, result.text) == ['        zotero_key: "ABCD2345"\n']
    lines = result.text.splitlines()
    # right after the scalar's last line: the blank line and the comment stay where they were, below it
    assert lines[lines.index("          of why.") + 1] == '        zotero_key: "ABCD2345"'
    assert entry(
        result.text, "Rammer: Enabling Holistic Deep Learning Compiler Optimizations with rTasks"
    ).why == ("Two lines\nof why.")


def test_pin_after_a_flow_mapping_with_a_trailing_comment() -> None:
    result = pin(COMMENTED, "Welder: Scheduling Deep Learning Memory Access via Tile-graph", KEY)
    added = only_added(COMMENTED, result.text)
    # the entry sits in two categories (one normalised title): both placements are pinned
    assert added == ['        zotero_key: "ABCD2345"\n', '        zotero_key: "ABCD2345"\n']
    assert result.categories == ("Compilers", "Twice")
    assert "}   # trailing\n        zotero_key:" in result.text
    assert [e.zotero_key for e in catalogue(result.text).entries if "elder" in e.title.casefold()] == [
        KEY,
        KEY,
    ]


def test_pin_after_a_keep_block_scalar_keeps_its_trailing_lines() -> None:
    result = pin(COMMENTED, "Ansor", KEY)
    assert only_added(COMMENTED, result.text) == ['        zotero_key: "ABCD2345"\n']
    assert yaml.safe_load(result.text)["categories"][0]["entries"][2]["why"] == "Kept trailing lines.\n\n\n"


def test_pin_after_a_folded_scalar() -> None:
    result = pin(COMMENTED, "TVM", KEY)
    assert only_added(COMMENTED, result.text) == ['        zotero_key: "ABCD2345"\n']
    assert entry(result.text, "TVM").why == "folded text"


def test_pin_a_flow_style_entry_adds_the_pair_inside_the_braces() -> None:
    result = pin(COMMENTED, "Flow Style Entry", KEY)
    old, new = COMMENTED.splitlines(), result.text.splitlines()
    changed = [(a, b) for a, b in zip(old, new, strict=True) if a != b]
    assert changed == [
        (
            '      - {title: "Flow Style Entry", venue: X}',
            '      - {title: "Flow Style Entry", venue: X, zotero_key: "ABCD2345"}',
        )
    ]


def test_pin_keeps_crlf_line_endings() -> None:
    crlf = COMMENTED.replace("\n", "\r\n")
    result = pin(crlf, "TVM", KEY)
    assert result.text.count("\r\n") == crlf.count("\r\n") + 1
    assert "\n" not in result.text.replace("\r\n", "")
    assert only_added(crlf, result.text) == ['        zotero_key: "ABCD2345"\r\n']


def test_pin_in_a_file_without_a_final_newline() -> None:
    text = "categories:\n  - name: A\n    entries:\n      - title: X\n        status: read  # last"
    result = pin(text, "X", KEY)
    assert result.text == text + '\n        zotero_key: "ABCD2345"'
    assert only_added(text + "\n", result.text + "\n") == ['        zotero_key: "ABCD2345"\n']


def test_pin_keeps_a_byte_order_mark() -> None:
    text = "\ufeffcategories:\n  - name: A\n    entries:\n      - title: X\n"
    assert pin(text, "X", KEY).text == text + '        zotero_key: "ABCD2345"\n'


def test_pin_fills_an_empty_zotero_key_in_place() -> None:
    text = "categories:\n  - name: A\n    entries:\n      - title: X\n        zotero_key:   # todo\n"
    assert pin(text, "X", KEY).text == text.replace("zotero_key:   # todo", 'zotero_key: "ABCD2345"   # todo')


def test_pin_with_the_same_key_changes_nothing() -> None:
    once = pin(COMMENTED, "TVM", KEY).text
    again = pin(once, "TVM", KEY.lower())  # keys are upper case; a pasted lower-case one is the same key
    assert again.text == once and not again.changed(once)


def test_pin_refuses_another_key_unless_forced_which_replaces_it_in_place() -> None:
    text = "categories:\n  - name: A\n    entries:\n      - title: X\n        zotero_key: 'ZNJI4X9Q'  # old\n"
    with pytest.raises(
        CatalogueEditError, match=r"already pinned to ZNJI4X9Q \(catalog.yaml:5\); pass --force"
    ):
        pin(text, "X", KEY)
    result = pin(text, "X", KEY, force=True)
    assert result.text == text.replace("'ZNJI4X9Q'", f"'{KEY}'")  # the curator's quoting kept
    assert result.replaced == ("ZNJI4X9Q",)
    plain = text.replace("'ZNJI4X9Q'", "ZNJI4X9Q")
    assert pin(plain, "X", KEY, force=True).text == plain.replace("ZNJI4X9Q", KEY)


def test_pin_by_the_key_the_entry_has_now() -> None:
    text = "categories:\n  - name: A\n    entries:\n      - title: X\n        zotero_key: ZNJI4X9Q\n"
    assert pin(text, "znji4x9q", KEY, force=True).text == text.replace("ZNJI4X9Q", KEY)


def test_pin_an_unknown_title_names_the_nearest() -> None:
    with pytest.raises(CatalogueEditError) as info:
        pin(COMMENTED, "Rammer enabling holistic compiler", KEY)
    message = str(info.value)
    assert message.startswith(
        "no curated entry titled 'Rammer enabling holistic compiler' (nearest: 'Rammer:"
    )
    assert "\n" not in message


def test_pin_refuses_a_malformed_key() -> None:
    with pytest.raises(CatalogueEditError, match="'ABC' is not a Zotero item key"):
        pin(COMMENTED, "TVM", "abc")


def test_a_layout_the_editor_cannot_handle_is_refused_not_written() -> None:
    # a keep-chomped block scalar at the very end, without a final newline: any line added after it
    # would become part of its value — the proof by re-parsing catches it
    text = "categories:\n  - name: A\n    entries:\n      - title: X\n        why: |+\n          text"
    with pytest.raises(CatalogueEditError, match="cannot edit this layout safely"):
        pin(text, "X", KEY)


def test_malformed_or_multi_document_yaml_is_one_line() -> None:
    for text in ("categories: [\n", "categories: []\n---\nmore: 1\n"):
        with pytest.raises(CatalogueEditError) as info:
            pin(text, "X", KEY)
        assert "\n" not in str(info.value) and "malformed YAML" in str(info.value)


# -- adopt --------------------------------------------------------------------------------------------


def test_adopt_appends_after_the_last_entry_in_its_indentation() -> None:
    result = adopt(COMMENTED, "Compilers", "A New Paper", KEY)
    assert only_added(COMMENTED, result.text) == [
        '      - title: "A New Paper"\n',
        '        zotero_key: "ABCD2345"\n',
    ]
    assert [e.title for e in catalogue(result.text).categories[0].entries][-2:] == ["TVM", "A New Paper"]


def test_adopt_into_an_empty_flow_list_turns_it_into_a_block_list() -> None:
    result = adopt(COMMENTED, "Empty", "A New Paper", KEY)
    diff = [d for d in difflib.ndiff(COMMENTED.splitlines(), result.text.splitlines()) if d[0] in "+-"]
    assert diff == [
        "-     entries: []   # nothing yet",
        "+     entries:   # nothing yet",
        '+       - title: "A New Paper"',
        '+         zotero_key: "ABCD2345"',
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (  # `entries:` with no value
            "categories:\n  - name: A\n    entries:\n  - name: B\n",
            'categories:\n  - name: A\n    entries:\n      - title: "T"\n        zotero_key: "ABCD2345"\n'
            "  - name: B\n",
        ),
        (  # no `entries` key at all
            "categories:\n  - name: A   # a\n",
            "categories:\n  - name: A   # a\n    entries:\n"
            '      - title: "T"\n        zotero_key: "ABCD2345"\n',
        ),
        (  # a flow list of flow entries
            "categories:\n  - name: A\n    entries: [{title: X}]  # c\n",
            "categories:\n  - name: A\n"
            '    entries: [{title: X}, {title: "T", zotero_key: "ABCD2345"}]  # c\n',
        ),
        (  # a flow-style category
            "categories:\n  - {name: A, entries: []}\n",
            'categories:\n  - {name: A, entries: [{title: "T", zotero_key: "ABCD2345"}]}\n',
        ),
        (  # indentless lists, wide gaps: the file's own layout is followed
            "categories:\n- name: A\n  entries:\n  -   title: X\n",
            "categories:\n- name: A\n  entries:\n  -   title: X\n"
            '  -   title: "T"\n      zotero_key: "ABCD2345"\n',
        ),
    ],
)
def test_adopt_into_every_list_shape(text: str, expected: str) -> None:
    assert adopt(text, "A", "T", KEY).text == expected


def test_adopt_quotes_and_escapes_the_zotero_title() -> None:
    title = 'Say "no": a #hashtag, a \\ backslash, - dash,\ttab, 中文标题 🚀 and\na line break'
    result = adopt(COMMENTED, "Compilers", title, KEY)
    assert len(only_added(COMMENTED, result.text)) == 2
    assert catalogue(result.text).categories[0].entries[-1].title == title


def test_adopt_an_unknown_category_is_refused_with_the_nearest_unless_asked_to_create_it() -> None:
    with pytest.raises(
        CatalogueEditError, match=r"no category 'Compiler' in the catalogue \(did you mean 'Compilers'"
    ):
        adopt(COMMENTED, "Compiler", "T", KEY)
    result = adopt(COMMENTED, "GPU / Kernels", "T", KEY, create_category=True)
    assert result.created_category
    assert only_added(COMMENTED, result.text) == [
        '  - name: "GPU / Kernels"\n',
        "    entries:\n",
        '      - title: "T"\n',
        '        zotero_key: "ABCD2345"\n',
    ]
    assert [c.name for c in catalogue(result.text).categories][-1] == "GPU / Kernels"
    # the new category follows the last entry, before the file's closing comment
    assert result.text.endswith('zotero_key: "ABCD2345"\n# the end\n')


def test_adopt_refuses_a_key_or_a_title_already_in_the_catalogue() -> None:
    pinned = pin(COMMENTED, "TVM", KEY).text
    with pytest.raises(CatalogueEditError, match="ABCD2345 is already in the catalogue under 'Compilers'"):
        adopt(pinned, "Empty", "Anything", KEY)
    with pytest.raises(CatalogueEditError, match="under 'Compilers', 'Twice'; use `zotsync pin`"):
        adopt(COMMENTED, "Empty", "welder: scheduling deep learning memory access via tile graph", KEY)


def test_adopt_keeps_crlf_and_a_missing_final_newline() -> None:
    text = "categories:\r\n  - name: A\r\n    entries:\r\n      - title: X"
    assert (
        adopt(text, "A", "T", KEY).text == text + '\r\n      - title: "T"\r\n        zotero_key: "ABCD2345"'
    )


@given(st.text())
def test_yaml_quote_reads_back_as_the_same_text(value: str) -> None:
    assert yaml.safe_load(f"k: {yaml_quote(value)}\n") == {"k": value}
    assert "\n" not in yaml_quote(value) and "\r" not in yaml_quote(value)


# -- the commands -------------------------------------------------------------------------------------


@pytest.fixture
def synced(project: Path, run) -> Path:
    assert run("-q", "--config", config_of(project), "pull").code == 0
    return project


UNCURATED = "57V8YMZM"  # "Automatic Horizontal Fusion for GPU Kernels": in Zotero, not in the catalogue
TRASHED = "ZCSRWIWC"


def test_pin_command_then_status_shows_the_match_by_zotero_key(synced: Path, run) -> None:
    catalog = synced / "seeds" / "catalog.yaml"
    # a curated entry Zotero cannot match on its own: its title is the curator's shorthand
    text = catalog.read_text(encoding="utf-8").replace(
        "  - name: Compiler\n    entries:\n",
        "  - name: Compiler\n    entries:\n"
        "      - title: Horizontal fusion (the CGO one)\n        status: read\n",
    )
    catalog.write_text(text, encoding="utf-8")
    before = json.loads(run("--config", config_of(synced), "status", "--format", "json").out)
    assert [u["title"] for u in before["unmatched"]] == ["Horizontal fusion (the CGO one)"]

    result = run("--config", config_of(synced), "pin", "horizontal fusion (the CGO one)", UNCURATED.lower())
    assert result.code == 0, result.err
    assert result.err == (
        f"pinned 'Horizontal fusion (the CGO one)' under 'Compiler' to {UNCURATED} "
        f"('Automatic Horizontal Fusion for GPU Kernels'); wrote {catalog}\n"
    )
    assert only_added(text, catalog.read_text(encoding="utf-8")) == [f'        zotero_key: "{UNCURATED}"\n']

    after = json.loads(run("--config", config_of(synced), "status", "--format", "json").out)
    assert after["unmatched"] == []
    assert {
        "title": "Horizontal fusion (the CGO one)",
        "zotero_key": UNCURATED,
        "rule": "zotero_key",
    } in after["matches"]
    assert after["catalogue"]["matched"] == before["catalogue"]["matched"] + 1


def test_pin_command_on_the_seed_catalogue_adds_one_line(synced: Path, run) -> None:
    catalog = synced / "seeds" / "catalog.yaml"
    catalog.chmod(0o640)
    old = catalog.read_text(encoding="utf-8")
    result = run("--config", config_of(synced), "pin", "The tensor algebra compiler", "ACQ3YSAF")
    assert result.code == 0, result.err
    assert only_added(old, catalog.read_text(encoding="utf-8")) == ['        zotero_key: "ACQ3YSAF"\n']
    assert stat.S_IMODE(catalog.stat().st_mode) == 0o640  # the curator's file keeps its permissions
    again = run("--config", config_of(synced), "pin", "The tensor algebra compiler", "ACQ3YSAF")
    assert again.code == 0 and "already pinned to ACQ3YSAF" in again.err and "unchanged" in again.err


def test_pin_force_replaces_the_key(synced: Path, run) -> None:
    catalog = synced / "seeds" / "catalog.yaml"
    old = catalog.read_text(encoding="utf-8")
    title = "Welder: Scheduling Deep Learning Memory Access via Tile-graph"
    refused = run("--config", config_of(synced), "pin", title, UNCURATED)
    assert refused.code == 2 and "already pinned to 73KSMM92" in refused.err and "--force" in refused.err
    assert catalog.read_text(encoding="utf-8") == old
    forced = run("--config", config_of(synced), "pin", "--force", "73KSMM92", UNCURATED)
    assert forced.code == 0, forced.err
    assert "replacing 73KSMM92" in forced.err
    assert catalog.read_text(encoding="utf-8") == old.replace('"73KSMM92"', f'"{UNCURATED}"')


def test_adopt_command_adds_the_zotero_title(synced: Path, run) -> None:
    catalog = synced / "seeds" / "catalog.yaml"
    old = catalog.read_text(encoding="utf-8")
    result = run("--config", config_of(synced), "adopt", UNCURATED, "--category", "Compiler")
    assert result.code == 0, result.err
    assert only_added(old, catalog.read_text(encoding="utf-8")) == [
        '      - title: "Automatic Horizontal Fusion for GPU Kernels"\n',
        f'        zotero_key: "{UNCURATED}"\n',
    ]
    assert run("-q", "--config", config_of(synced), "sync").code == 0
    csv = (synced / "exports" / "catalog.csv").read_text(encoding="utf-8")
    assert "Compiler,unread,Automatic Horizontal Fusion for GPU Kernels," in csv
    again = run("--config", config_of(synced), "adopt", UNCURATED, "--category", "Math Foundations")
    assert again.code == 2
    assert again.err == (
        f"zotsync: error: {UNCURATED} is already in the catalogue under 'Compiler' as "
        "'Automatic Horizontal Fusion for GPU Kernels'\n"
    )


def test_adopt_command_new_category(synced: Path, run) -> None:
    catalog = synced / "seeds" / "catalog.yaml"
    refused = run("--config", config_of(synced), "adopt", UNCURATED, "--category", "Kernel Fusion")
    assert refused.code == 2
    assert (
        "no category 'Kernel Fusion' in the catalogue (did you mean 'GPU 编译与性能优化 / Kernel Fusion'"
        in refused.err
    )
    created = run(
        "--config", config_of(synced), "adopt", UNCURATED, "--category", "Kernel Fusion", "--new-category"
    )
    assert created.code == 0, created.err
    assert "added the category 'Kernel Fusion' at the end of the catalogue" in created.err
    assert catalog.read_text(encoding="utf-8").endswith(
        '  - name: "Kernel Fusion"\n    entries:\n'
        '      - title: "Automatic Horizontal Fusion for GPU Kernels"\n'
        f'        zotero_key: "{UNCURATED}"\n'
    )


ERRORS = [
    # (command line after --config, exit code, a fragment of the one-line message)
    (["pin", "No Such Paper At All", UNCURATED], 2, "no curated entry titled 'No Such Paper At All'"),
    (["pin", "The tensor algebra compiler", "NOPE"], 2, "'NOPE' is not a Zotero item key"),
    (["pin", "The tensor algebra compiler", "ABCD2345"], 2, "no Zotero item ABCD2345 in the store"),
    (["pin", "The tensor algebra compiler", TRASHED], 2, f"the Zotero item {TRASHED} is in the trash"),
    (["pin", "The tensor algebra compiler", "ZNJI4X9Q"], 2, "ZNJI4X9Q is already pinned to 'Rammer:"),
    (["adopt", TRASHED, "--category", "Compiler"], 2, "is in the trash"),
    (
        ["adopt", "ZNJI4X9Q", "--category", "Compiler"],
        2,
        "already in the catalogue under 'Deep Learning Compiler'",
    ),
    (
        ["adopt", "P2URGA3T", "--category", "Compiler"],
        2,
        "already in the catalogue under 'Deep Learning Compiler'",
    ),
    (["adopt", UNCURATED], 2, "missing option --category NAME (see `zotsync adopt --help`)"),
    (["pin", "only-one-argument"], 2, "missing argument ZOTERO_KEY"),
]


@pytest.mark.parametrize(("args", "code", "message"), ERRORS)
def test_edit_errors_are_one_line_and_leave_the_catalogue(synced: Path, run, args, code, message) -> None:
    catalog = synced / "seeds" / "catalog.yaml"
    old = catalog.read_bytes()
    result = run("--config", config_of(synced), *args)
    assert result.code == code, result.err
    assert result.err.count("\n") == 1 and result.err.startswith("zotsync: error: "), result.err
    assert message in result.err
    assert catalog.read_bytes() == old


def test_an_edit_is_child_item_refused(synced: Path, run) -> None:
    child = next(
        o["key"]
        for o in json.loads((synced / "seeds" / "zotero-library.json").read_text(encoding="utf-8"))
        if o["data"].get("parentItem")
    )
    result = run("--config", config_of(synced), "pin", "The tensor algebra compiler", child)
    assert result.code == 2 and "not a top-level item" in result.err


def test_edits_need_a_store_and_the_lock(project: Path, run) -> None:
    no_store = run("--config", config_of(project), "pin", "The tensor algebra compiler", "ACQ3YSAF")
    assert no_store.code == 1 and "run `zotsync pull` first" in no_store.err
    assert run("-q", "--config", config_of(project), "pull").code == 0
    from zotsync.store import exclusive_lock

    with exclusive_lock(project / ".zotsync" / "zotsync.sqlite"):
        locked = run("--config", config_of(project), "pin", "The tensor algebra compiler", "ACQ3YSAF")
    assert locked.code == 1 and "another zotsync run holds the lock" in locked.err


def test_a_broken_catalogue_is_reported_with_its_line(synced: Path, run) -> None:
    catalog = synced / "seeds" / "catalog.yaml"
    catalog.write_text("categories:\n  - name: A\n    entries:\n      - title: T\n        staus: read\n")
    result = run("--config", config_of(synced), "adopt", UNCURATED, "--category", "A")
    assert result.code == 2 and "catalog.yaml:5: unknown entry key 'staus'" in result.err


def test_crlf_catalogue_stays_crlf_through_the_command(synced: Path, run) -> None:
    catalog = synced / "seeds" / "catalog.yaml"
    crlf = catalog.read_bytes().replace(b"\n", b"\r\n")
    catalog.write_bytes(crlf)
    assert run("-q", "--config", config_of(synced), "adopt", UNCURATED, "--category", "Compiler").code == 0
    new = catalog.read_bytes()
    assert new.count(b"\r\n") == crlf.count(b"\r\n") + 2 and b"\n" not in new.replace(b"\r\n", b"")
    assert os.path.getsize(catalog) == len(crlf) + len(
        '      - title: "Automatic Horizontal Fusion for GPU Kernels"\r\n'
        f'        zotero_key: "{UNCURATED}"\r\n'
    )


@pytest.mark.parametrize(
    "args",
    [("pin", "The tensor algebra compiler", "ACQ3YSAF"), ("adopt", UNCURATED, "--category", "Compiler")],
)
def test_an_edit_parses_the_catalogue_at_most_twice(synced: Path, run, monkeypatch, args) -> None:
    """Once for matching and the edit, once for the proof of the edit: a 10,000-entry catalogue costs
    about a second per parse."""
    import yaml

    catalog = synced / "seeds" / "catalog.yaml"
    parses: list[str] = []
    for name in ("compose", "load"):
        real = getattr(yaml, name)

        def counted(stream, *rest, real=real, **kwargs):
            if isinstance(stream, str) and "categories" in stream:  # the catalogue, not the config
                parses.append(real.__name__)
            return real(stream, *rest, **kwargs)

        monkeypatch.setattr(yaml, name, counted)
    old = catalog.read_text(encoding="utf-8")
    result = run("--config", config_of(synced), *args)
    assert result.code == 0, result.err
    assert catalog.read_text(encoding="utf-8") != old
    assert len(parses) <= 2, parses
