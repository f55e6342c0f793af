"""The names dynamic MCP tools are offered under (``wire.tools.mcp_names``): properties over
any names Cursor may send, and the rules at their edges."""

from __future__ import annotations

import random

import pytest

pytest.importorskip("hypothesis")

from hypothesis import given, settings
from hypothesis import strategies as st

from wire.tools.mcp_catalog import McpTool
from wire.tools.mcp_names import NAME_PATTERN, dynamic_tools, offered_names
from wire.tools.registry import REGISTRY, normalize_tool_name

BUILTINS = tuple(REGISTRY)

# Names as Cursor may send them: any text, and the characters that need care made likely.
_part = st.one_of(
    st.text(min_size=1, max_size=120),
    st.text(alphabet="ab_-./ :Zé1", min_size=1, max_size=80),
)
_keys = st.lists(st.tuples(_part, _part), max_size=12, unique=True)


@settings(max_examples=300)
@given(_keys)
def test_every_name_matches_the_providers_pattern_and_no_two_tools_share_one(
    keys: list[tuple[str, str]],
) -> None:
    names = offered_names(keys, BUILTINS)
    assert set(names) == set(keys)
    assert all(NAME_PATTERN.match(name) for name in names.values())
    assert len(set(names.values())) == len(keys)
    builtins = {normalize_tool_name(name) for name in BUILTINS}
    assert not any(normalize_tool_name(name) in builtins for name in names.values())


@settings(max_examples=200)
@given(_keys, st.randoms(use_true_random=False))
def test_names_do_not_depend_on_the_order_the_tools_come_in(
    keys: list[tuple[str, str]], shuffler: random.Random
) -> None:
    shuffled = list(keys)
    shuffler.shuffle(shuffled)
    assert offered_names(shuffled, BUILTINS) == offered_names(keys, BUILTINS)


@settings(max_examples=200)
@given(_keys, st.tuples(_part, _part))
def test_adding_a_tool_renames_no_other(keys: list[tuple[str, str]], new: tuple[str, str]) -> None:
    before = offered_names(keys, BUILTINS)
    after = offered_names([*keys, new], BUILTINS)
    assert {key: after[key] for key in before} == before


def test_a_plain_name_reads_as_server_and_tool() -> None:
    names = offered_names([("github", "search_issues"), ("my-db", "query")], BUILTINS)
    assert names == {
        ("github", "search_issues"): "mcp_github_search_issues",
        ("my-db", "query"): "mcp_my-db_query",
    }


def test_dots_slashes_spaces_and_long_names_are_cleaned_and_hashed() -> None:
    long_tool = "t" * 100
    keys = [("docs.v2", "a/b c"), ("docs", long_tool), ("my_server", "x")]
    names = offered_names(keys, BUILTINS)
    assert names[("docs.v2", "a/b c")].startswith("mcp_docs_v2_a_b_c__")
    assert names[("docs", long_tool)].startswith("mcp_docs_ttt")
    assert len(names[("docs", long_tool)]) == 64
    # An underscore in the server would make the name ambiguous: hashed too.
    assert names[("my_server", "x")].startswith("mcp_my_server_x__")
    assert all(len(name.rsplit("__", 1)[1]) == 8 for name in names.values())


def test_names_that_clean_to_the_same_text_stay_apart() -> None:
    keys = [("a", "b.c"), ("a", "b/c"), ("a", "b_c")]
    names = offered_names(keys, BUILTINS)
    assert names[("a", "b_c")] == "mcp_a_b_c"  # the exact one keeps the plain name
    assert names[("a", "b.c")] != names[("a", "b/c")]
    assert {names[("a", "b.c")][:-8], names[("a", "b/c")][:-8]} == {"mcp_a_b_c__"}


def test_a_clash_with_a_built_in_name_is_hashed() -> None:
    names = offered_names([("x", "read"), ("x", "grep")], ("McpXRead", *BUILTINS))
    assert names[("x", "read")].startswith("mcp_x_read__")
    assert names[("x", "grep")] == "mcp_x_grep"


def test_a_hash_collision_moves_only_the_tools_that_collide() -> None:
    """Two hashed names can meet only when their cut spelling and hash agree; forcing that by
    a built-in of the same name shows a name that is taken moves to the next salt."""
    first = offered_names([("s.", "t")], BUILTINS)[("s.", "t")]
    names = offered_names([("s.", "t"), ("a", "b")], (first, *BUILTINS))
    assert names[("s.", "t")] != first and names[("s.", "t")].startswith("mcp_s__t__")
    assert names[("a", "b")] == "mcp_a_b"


def test_the_table_maps_each_name_back_to_its_exact_definition() -> None:
    tools = [
        McpTool("srv b", "z", "full-z", "prov-b"),
        McpTool("srv a", "y/1", "full-y", "prov-a"),
        McpTool("alpha", "q", "full-q", "alpha"),
    ]
    table = dynamic_tools(tools, BUILTINS)
    assert table.names() == tuple(sorted(table.names()))
    assert table.names()[0] == "mcp_alpha_q"
    for tool in tools:
        (name,) = [entry.name for entry in table.tools if entry.tool == tool]
        assert table.find(name) == tool
    assert table.find("mcp_alpha_Q") is None  # exact names only
