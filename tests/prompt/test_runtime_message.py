"""The runtime user message: only the sections a request carries, in template order, escaped
attributes, verbatim bodies, a timestamp in the user's zone."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

import msgspec
import pytest

from prompt import (
    Environment,
    GitRepo,
    OpenFiles,
    RecentFile,
    RuntimeContext,
    RuntimeContextError,
    SelectedCode,
    SelectedContext,
    SelectedFile,
    Skill,
    TerminalSelection,
    VisibleFile,
    load_prompt_assets,
    render_runtime_message,
)
from prompt.runtime_message import (
    DebugSession,
    ExternalLink,
    McpServer,
    SelectedCommand,
    SelectedRule,
    SelectedSkill,
    Subagent,
    Terminal,
    runtime_values,
)

# Every section and nothing else, in the order each mode's template holds them: the renderer's
# own rules are tested on it; the shipped templates (which add their mode's reminders) below.
SECTIONS_TEMPLATE = (
    "{{REQUEST_CONTEXT}}{{OPEN_FILES}}{{SELECTED_CONTEXT}}{{ACTION_CONTEXT}}"
    "{{TIMESTAMP}}{{USER_QUERY}}"
)
TEMPLATE = SECTIONS_TEMPLATE
NOW = datetime(2026, 2, 3, 8, 5, tzinfo=UTC)  # Tuesday

ALL_TAGS = (
    "user_info",
    "git_status",
    "rules",
    "agent_skills",
    "subagents",
    "mcp_meta_tools",
    "open_and_recently_viewed_files",
    "selected_context",
    "timestamp",
    "user_query",
)

ENV = Environment(
    os_version="linux 6.8.0",
    shell="/bin/zsh",
    workspace_paths=("/home/ada/project",),
    git_repos=(GitRepo(path="/home/ada/project", status="On branch main\n M app.py"),),
    terminals_folder="/home/ada/.cursor/terminals",
    time_zone="Europe/Paris",
)
OPEN = OpenFiles(
    recently_viewed=(RecentFile(path="/home/ada/project/old.py", total_lines=12),),
    visible=(
        VisibleFile(path="/home/ada/project/app.py", total_lines=80, cursor_line=41),
        VisibleFile(path="/home/ada/project/util.py"),
    ),
)
SELECTED = SelectedContext(
    files=(SelectedFile(path="/home/ada/project/README.md", content="# Project\n"),),
    code=(
        SelectedCode(
            path="/home/ada/project/app.py",
            content="if a < b:\n    run()",
            start_line=3,
            end_line=4,
        ),
    ),
    terminal_selections=(TerminalSelection(title="zsh", content="$ pytest\n1 failed"),),
)
FULL = RuntimeContext(
    user_query="Fix the failing test.",
    environment=ENV,
    rules=("Always use type hints.", "Answer in English."),
    skills=(
        Skill(name="release", path="/home/ada/skills/release.md", description="Cut a release"),
    ),
    subagents=(Subagent(name="reviewer", description="Reviews a diff for bugs."),),
    mcp_servers=(
        McpServer(name="user-github", tools=("create_issue", "search"), use_instructions="Ask"),
    ),
    open_files=OPEN,
    selected=SELECTED,
    action_context="<background_task_completion>\nTitle: lint\n</background_task_completion>",
    now=NOW,
)


def render(context: RuntimeContext) -> str:
    return render_runtime_message(TEMPLATE, context)


def tags_in(text: str) -> list[str]:
    return [tag for tag in ALL_TAGS if f"<{tag}>" in text or f"<{tag} " in text]


def assert_tidy(text: str) -> None:
    assert text == text.strip()
    assert "\n\n\n" not in text


def test_only_a_user_query_renders_only_the_query() -> None:
    assert render(RuntimeContext(user_query="hello")) == "<user_query>\nhello\n</user_query>"


def test_absent_sections_in_between_leave_exactly_one_blank_line() -> None:
    text = render(RuntimeContext(rules=("Be brief.",), user_query="hi"))
    assert text == (
        "<rules>\n<user_rule>Be brief.</user_rule>\n</rules>\n\n<user_query>\nhi\n</user_query>"
    )


def test_nothing_renders_nothing() -> None:
    assert render(RuntimeContext()) == ""


# Each mode's reminders exactly as the model reads them (Debug's with DEBUG's values filled in).
MODE_REMINDERS: dict[str, str] = {
    "agent": (
        "<system_reminder>\n"
        "You are in Agent mode: read, search, edit files and run commands as the "
        "request needs, and keep going until it is done.\n"
        "</system_reminder>"
    ),
    "ask": (
        "<system_reminder>\n"
        "You are in Ask mode, which is read-only. Do not edit, create or delete files "
        "and do not run commands; call only the read-only tools you have. Explore the "
        "code as far as the question needs, then answer it. If the user wants "
        "something changed, describe the change and suggest they switch to Agent mode "
        "to have it made.\n"
        "</system_reminder>"
    ),
    "plan": (
        "<system_reminder>\n"
        "You are in Plan mode, which is read-only: do not edit, create or delete "
        "files, and run only commands that change nothing.\n"
        "</system_reminder>\n"
        "\n"
        "<system_reminder>\n"
        "Research the code the request touches. When an important point is unclear, "
        "ask the user a few focused questions with AskQuestion before settling the plan. "
        "End the turn by calling CreatePlan with a concrete plan: goal, files and changes, "
        "order of steps, how to verify.\n"
        "</system_reminder>"
    ),
    "debug": (
        "<system_reminder>\n"
        "You are in Debug mode. Find the cause from runtime evidence, and fix only "
        "what the evidence proves.\n"
        "</system_reminder>\n"
        "\n"
        "<system_reminder>\n"
        "1. Hypotheses: name a few specific, testable causes of the bug.\n"
        "2. Instrument: add a few temporary log statements that tell the hypotheses "
        "apart, each marked with a `debug-session` comment. Each entry is one JSON "
        'object per line (NDJSON) with "sessionId": "dbg-42", "location" (file:line), '
        '"message", "data" and "timestamp" (milliseconds). Send it with an HTTP POST '
        "to http://127.0.0.1:7242/ingest/5f1c with Content-Type: application/json, for "
        "example in JavaScript or TypeScript:\n"
        '   fetch("http://127.0.0.1:7242/ingest/5f1c", {method: "POST", headers: '
        '{"Content-Type": "application/json"}, body: JSON.stringify({sessionId: '
        '"dbg-42", location: "app.ts:42", message: "before save", data: {id}, '
        "timestamp: Date.now()})}).catch(() => {});\n"
        "   Where an HTTP call is awkward, append the same line to "
        "/home/ada/project/.cursor/debug.log instead.\n"
        "3. Reproduce: unless you can trigger the bug yourself (a test, a script), end "
        "your turn and give the user the steps inside "
        "<reproduction_steps>...</reproduction_steps>.\n"
        "4. Analyse: read /home/ada/project/.cursor/debug.log and mark each hypothesis "
        "confirmed, ruled out or undecided, citing the entries. With nothing "
        "confirmed, refine the hypotheses and the logging and ask for another run.\n"
        "5. Fix what the logs proved, keep the logging, and have the bug reproduced "
        "once more. Once the logs show the fix works, remove every `debug-session` line.\n"
        "</system_reminder>"
    ),
    "multitask": (
        "<system_reminder>\n"
        "You are in Multitask mode: you coordinate, background subagents do the work.\n"
        "</system_reminder>\n"
        "\n"
        "<system_reminder>\n"
        "Split the request into a few independent pieces (one is fine when it does not "
        "split) and start a subagent for each with the Task tool and run_in_background "
        "set to true, each with a self-contained description: goal, relevant files, "
        "what done means. Do quick things yourself. After delegating, tell the user "
        "briefly what is running and end your turn: do not wait for or poll the "
        "subagents, their results come back as new messages. If the Task tool is not "
        "among your tools, do the work yourself.\n"
        "</system_reminder>"
    ),
}
DEBUG = DebugSession(
    server_endpoint="http://127.0.0.1:7242/ingest/5f1c",
    log_path="/home/ada/project/.cursor/debug.log",
    session_id="dbg-42",
)
CONTEXT_SECTIONS = ("REQUEST_CONTEXT", "OPEN_FILES", "SELECTED_CONTEXT", "ACTION_CONTEXT")
# Each context input, taken away one at a time; "none" keeps them all.
WITHOUT: dict[str, dict[str, object]] = {
    "none": {},
    "environment": {"environment": None},
    "rules and skills": {"rules": (), "skills": ()},
    "subagents and mcp": {"subagents": (), "mcp_servers": ()},
    "open files": {"open_files": None},
    "selected": {"selected": None},
    "action context": {"action_context": None},
    "timestamp": {"now": None},
    "query": {"user_query": None},
    "everything": {
        "environment": None,
        "rules": (),
        "skills": (),
        "subagents": (),
        "mcp_servers": (),
        "open_files": None,
        "selected": None,
        "action_context": None,
        "now": None,
        "user_query": None,
    },
}


@pytest.mark.parametrize("without", sorted(WITHOUT))
@pytest.mark.parametrize("mode", sorted(MODE_REMINDERS))
def test_each_shipped_mode_renders_its_reminders_between_the_context_and_the_query(
    mode: str, without: str
) -> None:
    """The context sections first, then the mode's reminders, then timestamp and query, one
    blank line between blocks, whichever sections the request lacks."""
    context = msgspec.structs.replace(FULL, debug=DEBUG, **WITHOUT[without])
    values = runtime_values(context)
    head = "".join(values[name] for name in CONTEXT_SECTIONS)
    tail = values["TIMESTAMP"] + values["USER_QUERY"]
    expected = (head + MODE_REMINDERS[mode] + "\n\n" + tail).strip()
    assert load_prompt_assets().mode(mode).runtime_message(context) == expected
    assert_tidy(expected)


def test_the_agent_message_in_full_byte_for_byte() -> None:
    text = (
        load_prompt_assets()
        .mode("agent")
        .runtime_message(
            RuntimeContext(user_query="Fix the failing test.", now=NOW, rules=("Be brief.",))
        )
    )
    assert text == (
        "<rules>\n<user_rule>Be brief.</user_rule>\n</rules>\n\n"
        "<system_reminder>\nYou are in Agent mode: read, search, edit files and run commands as "
        "the request needs, and keep going until it is done.\n</system_reminder>\n\n"
        "<timestamp>Tuesday, Feb 3, 2026, 8:05 AM (UTC+0)</timestamp>\n\n"
        "<user_query>\nFix the failing test.\n</user_query>"
    )


def test_debug_values_appear_wherever_the_debug_template_names_them() -> None:
    text = (
        load_prompt_assets()
        .mode("debug")
        .runtime_message(RuntimeContext(user_query="it crashes", debug=DEBUG))
    )
    assert text.count("http://127.0.0.1:7242/ingest/5f1c") == 2
    assert text.count("/home/ada/project/.cursor/debug.log") == 2
    assert text.count('"dbg-42"') == 2
    assert "{{" not in text
    # No other mode names them.
    for mode in ("agent", "ask", "plan", "multitask"):
        assert "dbg-42" not in load_prompt_assets().mode(mode).runtime_message(
            RuntimeContext(user_query="q", debug=DEBUG)
        )


def test_a_debug_value_that_looks_like_a_placeholder_is_not_expanded() -> None:
    sneaky = DebugSession(server_endpoint="{{USER_QUERY}}", session_id="{{DEBUG_LOG_PATH}}")
    text = (
        load_prompt_assets()
        .mode("debug")
        .runtime_message(RuntimeContext(user_query="q", debug=sneaky))
    )
    assert text.count("{{USER_QUERY}}") == 2 and text.count("{{DEBUG_LOG_PATH}}") == 2


# One field set at a time -> exactly the tags of that section.
SINGLE_SECTIONS: dict[str, tuple[RuntimeContext, list[str]]] = {
    "environment": (RuntimeContext(environment=ENV), ["user_info", "git_status"]),
    "rules": (RuntimeContext(rules=("Be brief.",)), ["rules"]),
    "skills": (RuntimeContext(skills=FULL.skills), ["agent_skills"]),
    "subagents": (RuntimeContext(subagents=FULL.subagents), ["subagents"]),
    "mcp servers": (RuntimeContext(mcp_servers=FULL.mcp_servers), ["mcp_meta_tools"]),
    "open files": (RuntimeContext(open_files=OPEN), ["open_and_recently_viewed_files"]),
    "selected": (RuntimeContext(selected=SELECTED), ["selected_context"]),
    "now": (RuntimeContext(now=NOW), ["timestamp"]),
    "query": (RuntimeContext(user_query="hi"), ["user_query"]),
}


@pytest.mark.parametrize("field", sorted(SINGLE_SECTIONS))
def test_each_section_appears_only_when_its_input_is_present(field: str) -> None:
    context, tags = SINGLE_SECTIONS[field]
    text = render(context)
    assert tags_in(text) == tags
    assert_tidy(text)


def test_action_context_is_rendered_verbatim_and_alone() -> None:
    text = render(RuntimeContext(action_context="  <done>task 1</done>\n"))
    assert text == "<done>task 1</done>"


EMPTY_INPUTS: dict[str, RuntimeContext] = {
    "empty environment": RuntimeContext(environment=Environment()),
    "blank rules": RuntimeContext(rules=("", "  \n")),
    "no open files": RuntimeContext(open_files=OpenFiles()),
    "no selection": RuntimeContext(selected=SelectedContext()),
    "blank terminal selection": RuntimeContext(
        selected=SelectedContext(terminal_selections=(TerminalSelection(title="t", content=" "),))
    ),
    "blank action context": RuntimeContext(action_context=" \n "),
    "blank query": RuntimeContext(user_query="  \n"),
    "repo without status": RuntimeContext(
        environment=Environment(git_repos=(GitRepo(path="/r", status=""),))
    ),
}


@pytest.mark.parametrize("case", sorted(EMPTY_INPUTS))
def test_an_empty_input_leaves_no_tag_and_no_blank_line(case: str) -> None:
    context = EMPTY_INPUTS[case]
    assert render(context) == ""
    if context.user_query is None:
        with_query = msgspec.structs.replace(context, user_query="q")
        assert render(with_query) == "<user_query>\nq\n</user_query>"


def test_full_context_keeps_template_order_with_one_blank_line_between_sections() -> None:
    text = render(FULL)
    assert tags_in(text) == list(ALL_TAGS)
    positions = [text.index(f"<{tag}") for tag in ALL_TAGS]
    assert positions == sorted(positions)
    action = text.index("<background_task_completion>")
    assert text.index("</selected_context>") < action < text.index("<timestamp>")
    assert_tidy(text)
    for closing in (
        "</user_info>",
        "</git_status>",
        "</rules>",
        "</agent_skills>",
        "</subagents>",
        "</mcp_meta_tools>",
        "</selected_context>",
    ):
        assert f"{closing}\n\n<" in text


def test_user_info_lines() -> None:
    text = render(RuntimeContext(environment=ENV, now=NOW))
    info = text[text.index("<user_info>") : text.index("</user_info>")]
    assert "linux 6.8.0" in info
    assert "/bin/zsh" in info
    assert "Workspace path: /home/ada/project (git repository at /home/ada/project)" in info
    assert "/home/ada/.cursor/terminals" in info
    assert "Today's date: Tuesday, Feb 3, 2026" in info
    assert "Europe/Paris" in info


@pytest.mark.parametrize(
    ("workspace", "repo", "expected"),
    [
        ("/w/app", "/w/app", "(git repository at /w/app)"),
        ("/w/app/sub", "/w/app", "(git repository at /w/app)"),
        ("/w/application", "/w/app", "(not in a git repository)"),
        ("/w/app", "/w/app/sub", "(not in a git repository)"),
    ],
)
def test_workspace_git_repository(workspace: str, repo: str, expected: str) -> None:
    env = Environment(workspace_paths=(workspace,), git_repos=(GitRepo(path=repo),))
    assert f"Workspace path: {workspace} {expected}" in render(RuntimeContext(environment=env))


def test_rules_skills_open_files_and_selection_bodies() -> None:
    text = render(FULL)
    assert "<user_rule>Always use type hints.</user_rule>\n<user_rule>Answer in English." in text
    assert (
        '<agent_skill name="release" fullPath="/home/ada/skills/release.md">'
        "Cut a release</agent_skill>"
    ) in text
    assert "- /home/ada/project/old.py (total lines: 12)" in text
    assert "- /home/ada/project/app.py (focused, cursor on line 41, total lines: 80)" in text
    assert "- /home/ada/project/util.py\n" in text
    assert '<file path="/home/ada/project/README.md">\n# Project\n</file>' in text
    assert (
        '<code path="/home/ada/project/app.py" lines="3-4">\nif a < b:\n    run()\n</code>' in text
    )
    assert '<terminal_selection title="zsh">\n$ pytest\n1 failed\n</terminal_selection>' in text


def test_subagents_and_mcp_servers_after_the_skills_in_full() -> None:
    text = runtime_values(FULL)["REQUEST_CONTEXT"]
    skills_end = text.index("</agent_skills>")
    subagents = text[text.index("<subagents>") : text.index("</subagents>") + len("</subagents>")]
    mcp = text[text.index("<mcp_meta_tools>") :].strip()
    assert skills_end < text.index("<subagents>") < text.index("<mcp_meta_tools>")
    lines = subagents.splitlines()
    assert lines[0] == "<subagents>" and lines[-1] == "</subagents>"
    assert lines[2:] == [
        '<subagent name="reviewer">Reviews a diff for bugs.</subagent>',
        "</subagents>",
    ]
    lines = mcp.splitlines()
    assert (lines[0], lines[2:]) == (
        "<mcp_meta_tools>",
        [
            "<mcp_meta_tool_servers>",
            '<mcp_meta_tool_server name="user-github" tools="create_issue, search" '
            'serverUseInstructions="Ask" />',
            "</mcp_meta_tool_servers>",
            "</mcp_meta_tools>",
        ],
    )


def test_an_mcp_server_without_instructions_or_tools_leaves_those_attributes_out() -> None:
    text = render(
        RuntimeContext(mcp_servers=(McpServer(name="s1"), McpServer(name="s2", tools=("t",))))
    )
    assert (
        '<mcp_meta_tool_server name="s1" />\n<mcp_meta_tool_server name="s2" tools="t" />' in text
    )
    assert "serverUseInstructions" not in text


def test_attribute_values_are_escaped_and_bodies_are_not() -> None:
    nasty = 'a&b "c" <d>'
    escaped = "a&amp;b &quot;c&quot; &lt;d&gt;"
    context = RuntimeContext(
        skills=(Skill(name=nasty, path=nasty, description="x < y && z"),),
        subagents=(Subagent(name=nasty, description="a <b> & c"),),
        mcp_servers=(McpServer(name=nasty, tools=(nasty, "t"), use_instructions=nasty),),
        selected=SelectedContext(
            files=(SelectedFile(path=nasty),),
            code=(SelectedCode(path=nasty, content="a < b && c"),),
            terminal_selections=(TerminalSelection(title=nasty, content="<tag> & more"),),
        ),
        user_query="what does <T> & co mean?",
    )
    text = render(context)
    assert f'<agent_skill name="{escaped}" fullPath="{escaped}">x < y && z</agent_skill>' in text
    assert f'<subagent name="{escaped}">a <b> & c</subagent>' in text
    assert (
        f'<mcp_meta_tool_server name="{escaped}" tools="{escaped}, t" '
        f'serverUseInstructions="{escaped}" />'
    ) in text
    assert f'<file path="{escaped}" />' in text
    assert f'<code path="{escaped}">\na < b && c\n</code>' in text
    assert f'<terminal_selection title="{escaped}">\n<tag> & more\n' in text
    assert "<user_query>\nwhat does <T> & co mean?\n</user_query>" in text
    assert nasty not in text


def test_user_text_is_not_expanded_as_a_placeholder() -> None:
    text = render(RuntimeContext(user_query="print {{TIMESTAMP}} and {{USER_QUERY}}", now=NOW))
    assert text.endswith("<user_query>\nprint {{TIMESTAMP}} and {{USER_QUERY}}\n</user_query>")
    assert text.count("<timestamp>") == 1


def test_query_keeps_its_indentation_but_not_surrounding_blank_lines() -> None:
    text = render(RuntimeContext(user_query="\n\n    def f():\n        pass\n\n"))
    assert text == "<user_query>\n    def f():\n        pass\n</user_query>"


def test_git_status_with_backticks_gets_a_longer_fence() -> None:
    env = Environment(git_repos=(GitRepo(path="/r", status="M ```weird```.md"),))
    text = render(RuntimeContext(environment=env))
    assert "\n````\nM ```weird```.md\n````\n" in text


@pytest.mark.parametrize(
    ("zone", "now", "expected"),
    [
        ("Asia/Shanghai", NOW, "Tuesday, Feb 3, 2026, 4:05 PM (UTC+8)"),
        ("Asia/Kolkata", NOW, "Tuesday, Feb 3, 2026, 1:35 PM (UTC+5:30)"),
        ("America/St_Johns", NOW, "Tuesday, Feb 3, 2026, 4:35 AM (UTC-3:30)"),
        (
            "America/New_York",
            datetime(2026, 7, 4, 16, 0, tzinfo=UTC),
            "Saturday, Jul 4, 2026, 12:00 PM (UTC-4)",
        ),
        ("America/New_York", NOW, "Tuesday, Feb 3, 2026, 3:05 AM (UTC-5)"),
        (
            "Pacific/Kiritimati",
            datetime(2026, 2, 3, 10, 0, tzinfo=UTC),
            "Wednesday, Feb 4, 2026, 12:00 AM (UTC+14)",
        ),
        (
            "",
            datetime(2026, 12, 31, 23, 59, tzinfo=UTC),
            "Thursday, Dec 31, 2026, 11:59 PM (UTC+0)",
        ),
        (
            "",
            datetime(2026, 1, 1, 5, 0, tzinfo=timezone(timedelta(hours=5))),
            "Thursday, Jan 1, 2026, 12:00 AM (UTC+0)",
        ),
    ],
)
def test_timestamp_in_the_given_zone(zone: str, now: datetime, expected: str) -> None:
    context = RuntimeContext(environment=Environment(time_zone=zone), now=now)
    match = re.search(r"<timestamp>(.*)</timestamp>", render(context))
    assert match is not None
    assert match.group(1) == expected


@pytest.mark.parametrize("zone", ["Mars/Olympus_Mons", "Asia", "/etc/localtime", "../UTC"])
def test_bad_time_zone_is_an_error_naming_it(zone: str) -> None:
    context = RuntimeContext(environment=Environment(time_zone=zone), user_query="hi")
    with pytest.raises(RuntimeContextError, match=re.escape(repr(zone))):
        render(context)


def test_naive_time_is_refused() -> None:
    with pytest.raises(RuntimeContextError, match="UTC offset"):
        render(RuntimeContext(now=datetime(2026, 2, 3, 8, 5)))


def test_every_kind_of_attachment_in_order() -> None:
    selected = SelectedContext(
        extra=("  From a hook.\n", " "),
        files=(SelectedFile(path="/p/a.md", content="A"),),
        code=(SelectedCode(path="/p/b.py", content="b()", start_line=7),),
        terminals=(Terminal(content="$ make"), Terminal(title="t", content="\n")),
        terminal_selections=(TerminalSelection(title="", content="$ ls"),),
        rules=(SelectedRule(path="/p/.cursor/rules/r.mdc", content="Rule."),),
        commands=(SelectedCommand(name="review", content=""),),
        skills=(SelectedSkill(path="/p/s/SKILL.md", description="Desc", content="\nBody\n"),),
        links=(
            ExternalLink(url="https://x.org/a?b=1&c=2", pdf_content="PDF"),
            ExternalLink(url=""),
        ),
    )
    assert render(RuntimeContext(selected=selected)) == "\n".join(
        [
            "<selected_context>",
            "From a hook.",
            "",
            '<file path="/p/a.md">',
            "A",
            "</file>",
            "",
            '<code path="/p/b.py" lines="7">',
            "b()",
            "</code>",
            "",
            "<terminal>",
            "$ make",
            "</terminal>",
            "",
            "<terminal_selection>",
            "$ ls",
            "</terminal_selection>",
            "",
            '<rule path="/p/.cursor/rules/r.mdc">',
            "Rule.",
            "</rule>",
            "",
            '<command name="review" />',
            "",
            '<skill path="/p/s/SKILL.md">',
            "Desc",
            "",
            "Body",
            "</skill>",
            "",
            '<external_link url="https://x.org/a?b=1&amp;c=2">',
            "PDF",
            "</external_link>",
            "</selected_context>",
        ]
    )


def test_a_skill_without_a_name_has_no_name_attribute() -> None:
    text = render(RuntimeContext(skills=(Skill(path="/s/SKILL.md", description="Do it"),)))
    assert '<agent_skill fullPath="/s/SKILL.md">Do it</agent_skill>' in text


def test_blank_new_attachments_leave_no_section() -> None:
    selected = SelectedContext(
        extra=("", " \n"),
        terminals=(Terminal(title="t", content=" "),),
        links=(ExternalLink(url=" ", pdf_content="x"),),
    )
    assert render(RuntimeContext(selected=selected)) == ""
