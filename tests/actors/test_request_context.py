"""Cursor's UserMessage/RequestContext mapped onto the runtime message: every section the
request carries is rendered, none it does not, the time zone is honoured, and attached images
become image parts only when their bytes are inline and sound.
"""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime
from typing import Any

import pytest

from actors.codecs.request_context import (
    context_parts,
    image_blob_ids,
    merged_context,
    runtime_context,
    runtime_images,
    shell_command_context,
)
from actors.conversation.model import ImagePart
from prompt import (
    DebugSession,
    Environment,
    GitRepo,
    RuntimeContextError,
)
from prompt.runtime_message import (
    ExternalLink,
    McpServer,
    OpenFiles,
    RecentFile,
    RuntimeContext,
    SelectedCode,
    SelectedCommand,
    SelectedContext,
    SelectedFile,
    SelectedRule,
    SelectedSkill,
    Skill,
    Subagent,
    Terminal,
    TerminalSelection,
    VisibleFile,
    render_runtime_message,
)
from tests.prompt.test_runtime_message import SECTIONS_TEMPLATE
from wire.proto import agent_v1_pb2 as agent


def render(context: RuntimeContext) -> str:
    """The context's sections alone (the shipped templates' reminders are tested elsewhere)."""
    return render_runtime_message(SECTIONS_TEMPLATE, context)


NOW = datetime(2026, 2, 3, 8, 5, tzinfo=UTC)  # Tuesday


def _request_context() -> agent.RequestContext:
    return agent.RequestContext(
        env=agent.RequestContextEnv(
            os_version="darwin 24.6.0",
            shell="zsh",
            workspace_paths=["/Users/ada/project"],
            terminals_folder="/Users/ada/.cursor/terminals",
            time_zone="Asia/Shanghai",
        ),
        git_repos=[agent.GitRepoInfo(path="/Users/ada/project", status="M  src/main.py")],
        rules=[agent.CursorRule(full_path="/Users/ada/.cursor/rules/a.mdc", content="Use tabs.")],
        non_file_rules=[agent.CursorRule(content="Answer in French.")],
        cloud_rule="Never push to main.",
    )


def test_env_git_repo_and_rules_are_rendered() -> None:
    message = agent.UserMessage(text="fix the bug", message_id="m1")
    context = runtime_context(message, _request_context(), NOW)
    assert context.environment == Environment(
        os_version="darwin 24.6.0",
        shell="zsh",
        workspace_paths=("/Users/ada/project",),
        git_repos=(GitRepo(path="/Users/ada/project", status="M  src/main.py"),),
        terminals_folder="/Users/ada/.cursor/terminals",
        time_zone="Asia/Shanghai",
    )
    assert context.rules == ("Use tabs.", "Answer in French.", "Never push to main.")

    text = render(context)
    assert "<user_info>" in text
    assert "Workspace path: /Users/ada/project (git repository at /Users/ada/project)" in text
    assert "Shell: zsh" in text
    assert "Terminals folder: /Users/ada/.cursor/terminals" in text
    assert "<git_status>" in text
    assert "M  src/main.py" in text
    assert "<user_rule>Use tabs.</user_rule>" in text
    assert "<user_rule>Answer in French.</user_rule>" in text
    assert "<user_rule>Never push to main.</user_rule>" in text
    assert text.endswith("<user_query>\nfix the bug\n</user_query>")


def test_time_zone_is_honoured() -> None:
    message = agent.UserMessage(text="hi", message_id="m1")
    text = render(runtime_context(message, _request_context(), NOW))
    assert "<timestamp>Tuesday, Feb 3, 2026, 4:05 PM (UTC+8)</timestamp>" in text
    assert "Time zone: Asia/Shanghai" in text


def test_only_a_user_message_renders_only_the_query() -> None:
    message = agent.UserMessage(text="hello", message_id="m1")
    for request_context in (None, agent.RequestContext(), agent.RequestContext(env={})):
        context = runtime_context(message, request_context, None)
        assert context.environment is None
        assert context.rules == ()
        assert context.selected is None
        assert render(context) == "<user_query>\nhello\n</user_query>"


def test_empty_parts_leave_sections_out() -> None:
    request_context = agent.RequestContext(
        env=agent.RequestContextEnv(workspace_paths=[""]),
        git_repos=[agent.GitRepoInfo(path="/repo", status="")],
        rules=[agent.CursorRule(full_path="/r.mdc", content="  ")],
        cloud_rule="",
    )
    message = agent.UserMessage(text="q", message_id="m1")
    context = runtime_context(message, request_context, NOW)
    assert context.rules == ()
    text = render(context)
    assert "<git_status>" not in text
    assert "<rules>" not in text


def test_unknown_time_zone_is_an_error() -> None:
    request_context = agent.RequestContext(env=agent.RequestContextEnv(time_zone="Mars/Olympus"))
    message = agent.UserMessage(text="q", message_id="m1")
    with pytest.raises(RuntimeContextError):
        render(runtime_context(message, request_context, NOW))


# ---- open files, attachments and skills ----

File = agent.InvocationContext.IdeState.File
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


def tags_in(text: str) -> list[str]:
    return [tag for tag in ALL_TAGS if f"<{tag}>" in text or f"<{tag} " in text]


def _ide_state(**fields: Any) -> agent.InvocationContext:
    return agent.InvocationContext(ide_state=agent.InvocationContext.IdeState(**fields))


def _open_files() -> agent.InvocationContext:
    return _ide_state(
        recently_viewed_files=[File(path="/Users/ada/project/old.py", total_lines=12)],
        visible_files=[
            File(
                path="/Users/ada/project/app.py",
                total_lines=80,
                cursor_position=File.CursorPosition(line=41),
            ),
            File(path="/Users/ada/project/util.py"),
        ],
    )


def _selected() -> agent.SelectedContext:
    return agent.SelectedContext(
        extra_context=["The user is on the release branch."],
        files=[agent.SelectedFile(path="/Users/ada/project/README.md", content="# Project\n")],
        code_selections=[
            agent.SelectedCodeSelection(
                path="/Users/ada/project/app.py",
                content="if a < b:\n    run()",
                range=agent.Range(start=agent.Position(line=3), end=agent.Position(line=4)),
            )
        ],
        terminals=[agent.SelectedTerminal(title="zsh", content="$ make\nok")],
        terminal_selections=[
            agent.SelectedTerminalSelection(title="bash", content="$ pytest\n1 failed")
        ],
        cursor_rules=[
            agent.SelectedCursorRule(
                rule=agent.CursorRule(full_path="/Users/ada/.cursor/rules/py.mdc", content="PEP 8.")
            )
        ],
        cursor_commands=[agent.SelectedCursorCommand(name="review", content="Review the diff.")],
        selected_skills=[
            agent.AgentSkill(
                full_path="/Users/ada/skills/release/SKILL.md",
                description="Cut a release",
                content="1. Bump the version.",
            )
        ],
        external_links=[
            agent.SelectedExternalLink(url="https://example.com/a.pdf", pdf_content="Abstract"),
            agent.SelectedExternalLink(url="https://example.com/page"),
        ],
    )


def _skills_context() -> agent.RequestContext:
    return agent.RequestContext(
        agent_skills=[
            agent.AgentSkill(
                full_path="/Users/ada/skills/release/SKILL.md", description="Cut a release"
            ),
            agent.AgentSkill(
                full_path="/Users/ada/skills/secret/SKILL.md",
                description="Only when asked by name",
                disable_model_invocation=True,
            ),
        ]
    )


def _subagents_context() -> agent.RequestContext:
    return agent.RequestContext(
        custom_subagents=[
            agent.CustomSubagent(
                full_path="/Users/ada/.cursor/agents/reviewer.md",
                name="reviewer",
                description="Reviews a diff for bugs.",
            ),
            agent.CustomSubagent(full_path="/nameless.md", description="no name"),
        ]
    )


def _mcp_context() -> agent.RequestContext:
    return agent.RequestContext(
        mcp_meta_tool_options=agent.McpMetaToolOptions(
            enabled=True,
            mcp_descriptors=[
                agent.McpDescriptor(
                    server_name="GitHub",
                    server_identifier="user-github",
                    server_use_instructions="Prefer search before create.",
                    tools=[
                        agent.McpToolDescriptor(tool_name="create_issue"),
                        agent.McpToolDescriptor(tool_name="search"),
                    ],
                ),
                agent.McpDescriptor(server_name="no id"),
            ],
        )
    )


def test_custom_subagents_are_listed_by_name() -> None:
    context = runtime_context(agent.UserMessage(text="q"), _subagents_context(), None)
    assert context.subagents == (Subagent(name="reviewer", description="Reviews a diff for bugs."),)
    text = render(context)
    assert tags_in(text) == ["subagents", "user_query"]
    assert '<subagent name="reviewer">Reviews a diff for bugs.</subagent>' in text
    assert "no name" not in text


def test_mcp_servers_are_listed_by_id_with_their_tools_and_instructions() -> None:
    context = runtime_context(agent.UserMessage(text="q"), _mcp_context(), None)
    assert context.mcp_servers == (
        McpServer(
            name="user-github",
            tools=("create_issue", "search"),
            use_instructions="Prefer search before create.",
        ),
    )
    text = render(context)
    assert tags_in(text) == ["mcp_meta_tools", "user_query"]
    assert (
        '<mcp_meta_tool_server name="user-github" tools="create_issue, search" '
        'serverUseInstructions="Prefer search before create." />'
    ) in text
    assert "no id" not in text


def test_no_subagents_and_no_mcp_servers_leave_no_section() -> None:
    for request_context in (
        agent.RequestContext(mcp_meta_tool_options=agent.McpMetaToolOptions(enabled=True)),
        agent.RequestContext(custom_subagents=[agent.CustomSubagent(description="x")]),
    ):
        context = runtime_context(agent.UserMessage(text="q"), request_context, None)
        assert (context.subagents, context.mcp_servers) == ((), ())
        assert render(context) == "<user_query>\nq\n</user_query>"


# ---- request context parts given by blob id ----


def _refs(**parts: bytes) -> agent.RequestContextPartReferences:
    """References to each part's blob (its SHA-256 and length), over a dynamic context."""
    refs = agent.RequestContextPartReferences(
        dynamic_context=agent.RequestContext(
            rules=[agent.CursorRule(content="Dynamic rule.")],
            custom_subagents=[agent.CustomSubagent(name="old")],
            admin_command_denylist=["rm"],
        )
    )
    for name, data in parts.items():
        setattr(refs, f"{name}_blob_id", hashlib.sha256(data).digest())
        setattr(refs, f"{name}_byte_length", len(data))
    return refs


def _blobs(*datas: bytes) -> dict[bytes, bytes]:
    return {hashlib.sha256(data).digest(): data for data in datas}


RULES_PART = agent.RequestContextRulesPart(
    rules=[agent.CursorRule(content="Blob rule.")], cloud_rule="Cloud rule."
).SerializeToString()
SKILLS_PART = agent.RequestContextSkillsPart(
    agent_skills=[agent.AgentSkill(full_path="/s/SKILL.md", description="A skill")]
).SerializeToString()
SUBAGENTS_PART = agent.RequestContextSubagentsPart(
    custom_subagents=list(_subagents_context().custom_subagents)
).SerializeToString()
MCPS_PART = agent.RequestContextMcpsPart(
    mcp_meta_tool_options=_mcp_context().mcp_meta_tool_options
).SerializeToString()


def test_each_part_replaces_its_fields_of_the_dynamic_context() -> None:
    parts = {
        "rules": RULES_PART,
        "skills": SKILLS_PART,
        "subagents": SUBAGENTS_PART,
        "mcps": MCPS_PART,
    }
    refs = _refs(**parts)
    assert context_parts(refs) == tuple(
        (name, hashlib.sha256(data).digest()) for name, data in parts.items()
    )
    merged = merged_context(refs.dynamic_context, refs, _blobs(*parts.values()))
    assert merged is not None
    assert [rule.content for rule in merged.rules] == ["Blob rule."]
    assert merged.cloud_rule == "Cloud rule."
    assert [skill.full_path for skill in merged.agent_skills] == ["/s/SKILL.md"]
    assert [agent.name for agent in merged.custom_subagents] == ["reviewer", ""]
    assert merged.mcp_meta_tool_options == _mcp_context().mcp_meta_tool_options
    assert list(merged.admin_command_denylist) == ["rm"]  # from the dynamic context
    text = render(runtime_context(agent.UserMessage(text="q"), merged, None))
    assert tags_in(text) == ["rules", "agent_skills", "subagents", "mcp_meta_tools", "user_query"]


def test_without_parts_the_context_is_the_base_and_a_part_leaves_the_others_alone() -> None:
    base = _request_context()
    assert merged_context(base, None, {}) is base
    assert merged_context(base, agent.RequestContextPartReferences(), {}) is base
    merged = merged_context(base, _refs(subagents=SUBAGENTS_PART), _blobs(SUBAGENTS_PART))
    assert merged is not None
    assert [rule.content for rule in merged.rules] == ["Use tabs."]  # base kept
    assert merged.cloud_rule == "Never push to main."
    assert [agent.name for agent in merged.custom_subagents] == ["reviewer", ""]


def test_a_part_with_a_length_but_no_blob_id_is_refused() -> None:
    refs = agent.RequestContextPartReferences(mcps_byte_length=12)
    with pytest.raises(RuntimeContextError, match="the mcps part has 12 bytes but no blob id"):
        context_parts(refs)


def test_a_part_of_another_length_than_declared_is_refused_naming_it() -> None:
    refs = _refs(rules=RULES_PART)
    refs.rules_byte_length += 1
    blob = hashlib.sha256(RULES_PART).hexdigest()
    with pytest.raises(RuntimeContextError, match=f"rules part \\(blob {blob}\\) is"):
        merged_context(None, refs, _blobs(RULES_PART))


def test_a_part_that_does_not_decode_is_refused_naming_it() -> None:
    junk = b"\xff\xff\xff"
    blob = hashlib.sha256(junk).hexdigest()
    with pytest.raises(RuntimeContextError, match=f"skills part \\(blob {blob}\\) does not"):
        merged_context(None, _refs(skills=junk), _blobs(junk))


def test_open_files_are_mapped_and_rendered() -> None:
    message = agent.UserMessage(
        text="q", selected_context=agent.SelectedContext(invocation_context=_open_files())
    )
    context = runtime_context(message, None, None)
    assert context.open_files == OpenFiles(
        recently_viewed=(RecentFile(path="/Users/ada/project/old.py", total_lines=12),),
        visible=(
            VisibleFile(path="/Users/ada/project/app.py", total_lines=80, cursor_line=41),
            VisibleFile(path="/Users/ada/project/util.py"),
        ),
    )
    assert context.selected is None
    text = render(context)
    assert tags_in(text) == ["open_and_recently_viewed_files", "user_query"]
    assert "- /Users/ada/project/old.py (total lines: 12)" in text
    assert "- /Users/ada/project/app.py (focused, cursor on line 41, total lines: 80)" in text
    assert "- /Users/ada/project/util.py\n" in text


def test_selected_context_is_mapped_and_rendered_in_order() -> None:
    message = agent.UserMessage(text="q", selected_context=_selected())
    context = runtime_context(message, None, None)
    assert context.open_files is None
    assert context.selected == SelectedContext(
        extra=("The user is on the release branch.",),
        files=(SelectedFile(path="/Users/ada/project/README.md", content="# Project\n"),),
        code=(
            SelectedCode(
                path="/Users/ada/project/app.py",
                content="if a < b:\n    run()",
                start_line=3,
                end_line=4,
            ),
        ),
        terminals=(Terminal(title="zsh", content="$ make\nok"),),
        terminal_selections=(TerminalSelection(title="bash", content="$ pytest\n1 failed"),),
        rules=(SelectedRule(path="/Users/ada/.cursor/rules/py.mdc", content="PEP 8."),),
        commands=(SelectedCommand(name="review", content="Review the diff."),),
        skills=(
            SelectedSkill(
                path="/Users/ada/skills/release/SKILL.md",
                description="Cut a release",
                content="1. Bump the version.",
            ),
        ),
        links=(
            ExternalLink(url="https://example.com/a.pdf", pdf_content="Abstract"),
            ExternalLink(url="https://example.com/page"),
        ),
    )
    text = render(context)
    assert tags_in(text) == ["selected_context", "user_query"]
    pieces = [
        "<selected_context>\nThe user is on the release branch.\n\n<file ",
        '<file path="/Users/ada/project/README.md">\n# Project\n</file>',
        '<code path="/Users/ada/project/app.py" lines="3-4">\nif a < b:\n    run()\n</code>',
        '<terminal title="zsh">\n$ make\nok\n</terminal>',
        '<terminal_selection title="bash">\n$ pytest\n1 failed\n</terminal_selection>',
        '<rule path="/Users/ada/.cursor/rules/py.mdc">\nPEP 8.\n</rule>',
        '<command name="review">\nReview the diff.\n</command>',
        '<skill path="/Users/ada/skills/release/SKILL.md">\nCut a release\n\n'
        "1. Bump the version.\n</skill>",
        '<external_link url="https://example.com/a.pdf">\nAbstract\n</external_link>',
        '<external_link url="https://example.com/page" />\n</selected_context>',
    ]
    positions = [text.index(piece) for piece in pieces]
    assert positions == sorted(positions)


def test_skills_are_listed_except_those_the_model_may_not_invoke() -> None:
    message = agent.UserMessage(text="q")
    context = runtime_context(message, _skills_context(), None)
    assert context.skills == (
        Skill(path="/Users/ada/skills/release/SKILL.md", description="Cut a release"),
    )
    text = render(context)
    assert tags_in(text) == ["agent_skills", "user_query"]
    assert (
        '<agent_skill fullPath="/Users/ada/skills/release/SKILL.md">Cut a release</agent_skill>'
    ) in text
    assert "secret" not in text


def test_every_section_together_keeps_template_order() -> None:
    request_context = agent.RequestContext()
    request_context.MergeFrom(_skills_context())
    request_context.MergeFrom(_subagents_context())
    request_context.MergeFrom(_mcp_context())
    request_context.MergeFromString(_request_context().SerializeToString())
    selected = agent.SelectedContext(invocation_context=_open_files())
    selected.MergeFrom(_selected())
    message = agent.UserMessage(text="fix it", selected_context=selected)
    text = render(runtime_context(message, request_context, NOW))
    assert tags_in(text) == list(ALL_TAGS)
    positions = [text.index(f"<{tag}") for tag in ALL_TAGS]
    assert positions == sorted(positions)
    assert "\n\n\n" not in text


SINGLE_SECTIONS: dict[
    str, tuple[agent.SelectedContext | None, agent.RequestContext | None, str]
] = {
    "open files": (
        agent.SelectedContext(invocation_context=_open_files()),
        None,
        "open_and_recently_viewed_files",
    ),
    "extra context": (
        agent.SelectedContext(extra_context=["Context from a hook."]),
        None,
        "selected_context",
    ),
    "file": (
        agent.SelectedContext(files=[agent.SelectedFile(path="/a.py")]),
        None,
        "selected_context",
    ),
    "terminal": (
        agent.SelectedContext(terminals=[agent.SelectedTerminal(content="$ ls")]),
        None,
        "selected_context",
    ),
    "external link": (
        agent.SelectedContext(external_links=[agent.SelectedExternalLink(url="https://x.org")]),
        None,
        "selected_context",
    ),
    "skills": (None, _skills_context(), "agent_skills"),
    "subagents": (None, _subagents_context(), "subagents"),
    "mcp servers": (None, _mcp_context(), "mcp_meta_tools"),
}


@pytest.mark.parametrize("case", sorted(SINGLE_SECTIONS))
def test_each_section_alone_renders_only_its_tag(case: str) -> None:
    selected, request_context, tag = SINGLE_SECTIONS[case]
    message = agent.UserMessage(text="q", selected_context=selected)
    text = render(runtime_context(message, request_context, None))
    assert tags_in(text) == [tag, "user_query"]
    assert "\n\n\n" not in text


EMPTY_PARTS: dict[str, agent.SelectedContext] = {
    "empty selected context": agent.SelectedContext(),
    "empty ide state": agent.SelectedContext(invocation_context=_ide_state()),
    "files without paths": agent.SelectedContext(
        invocation_context=_ide_state(
            visible_files=[File(total_lines=3)], recently_viewed_files=[File()]
        )
    ),
    "invocation context by blob id": agent.SelectedContext(
        invocation_context=agent.InvocationContext(blob_id=b"\x01" * 32)
    ),
    "blank attachments": agent.SelectedContext(
        extra_context=["", "  \n"],
        files=[agent.SelectedFile(content="orphan text")],
        code_selections=[agent.SelectedCodeSelection(content="x = 1")],
        terminals=[agent.SelectedTerminal(title="zsh", content=" \n")],
        terminal_selections=[agent.SelectedTerminalSelection(title="zsh")],
        cursor_rules=[agent.SelectedCursorRule(), agent.SelectedCursorRule(rule={})],
        cursor_commands=[agent.SelectedCursorCommand()],
        selected_skills=[agent.AgentSkill()],
        external_links=[agent.SelectedExternalLink(url=" ", pdf_content="text")],
    ),
}


@pytest.mark.parametrize("case", sorted(EMPTY_PARTS))
def test_empty_attachments_leave_no_section(case: str) -> None:
    message = agent.UserMessage(text="q", selected_context=EMPTY_PARTS[case])
    context = runtime_context(message, None, None)
    assert context.open_files is None
    assert context.selected is None
    assert render(context) == "<user_query>\nq\n</user_query>"


def test_only_disabled_or_pathless_skills_leave_no_section() -> None:
    request_context = agent.RequestContext(
        agent_skills=[
            agent.AgentSkill(full_path="/s/SKILL.md", disable_model_invocation=True),
            agent.AgentSkill(description="no path"),
        ]
    )
    context = runtime_context(agent.UserMessage(text="q"), request_context, None)
    assert context.skills == ()
    assert render(context) == "<user_query>\nq\n</user_query>"


def test_code_without_a_range_has_no_lines() -> None:
    selected = agent.SelectedContext(
        code_selections=[agent.SelectedCodeSelection(path="/a.py", content="pass")]
    )
    context = runtime_context(agent.UserMessage(text="q", selected_context=selected), None, None)
    assert context.selected is not None
    assert context.selected.code == (SelectedCode(path="/a.py", content="pass"),)
    assert '<code path="/a.py">\npass\n</code>' in render(context)


# ---- images ----

PNG = b"\x89PNG\r\n\x1a\n-not-really-a-png"


def _with_images(*images: agent.SelectedImage) -> agent.UserMessage:
    return agent.UserMessage(
        text="look", selected_context=agent.SelectedContext(selected_images=images)
    )


def _blob(data: bytes, blob_id: bytes | None = None) -> agent.SelectedImage.BlobIdWithData:
    return agent.SelectedImage.BlobIdWithData(
        blob_id=hashlib.sha256(data).digest() if blob_id is None else blob_id, data=data
    )


def test_inline_images_become_image_parts_in_order() -> None:
    message = _with_images(
        agent.SelectedImage(mime_type="image/png", data=PNG),
        agent.SelectedImage(mime_type="image/jpeg", blob_id_with_data=_blob(b"jpeg bytes")),
    )
    assert runtime_images(message) == (
        ImagePart(mime_type="image/png", data=PNG),
        ImagePart(mime_type="image/jpeg", data=b"jpeg bytes"),
    )
    # Images are parts of their own, never text in the rendered message.
    assert render(runtime_context(message, None, None)) == ("<user_query>\nlook\n</user_query>")


def test_no_images_is_no_parts() -> None:
    assert runtime_images(agent.UserMessage(text="q")) == ()
    assert runtime_images(_with_images()) == ()


@pytest.mark.parametrize("mime_type", ["", "image/", "image", "text/plain", "IMAGE/PNG"])
def test_a_non_image_mime_type_is_refused(mime_type: str) -> None:
    message = _with_images(agent.SelectedImage(mime_type=mime_type, data=PNG))
    with pytest.raises(RuntimeContextError, match=re.escape(f"mime type {mime_type!r}")):
        runtime_images(message)


def test_data_that_does_not_hash_to_its_blob_id_is_refused() -> None:
    message = _with_images(
        agent.SelectedImage(mime_type="image/png", data=PNG),
        agent.SelectedImage(mime_type="image/png", blob_id_with_data=_blob(PNG, b"\x00" * 32)),
    )
    with pytest.raises(RuntimeContextError, match="image 2: the SHA-256 of its data does not"):
        runtime_images(message)


@pytest.mark.parametrize(
    "image",
    [
        agent.SelectedImage(mime_type="image/png", blob_id=hashlib.sha256(PNG).digest()),
        agent.SelectedImage(
            mime_type="image/png",
            blob_id_with_data=agent.SelectedImage.BlobIdWithData(
                blob_id=hashlib.sha256(PNG).digest()
            ),
        ),
    ],
    ids=["blob_id", "blob_id_with_data without data"],
)
def test_an_image_given_only_by_blob_id_takes_the_fetched_bytes(
    image: agent.SelectedImage,
) -> None:
    message = _with_images(image)
    assert image_blob_ids(message) == (hashlib.sha256(PNG).digest(),)
    fetched = {hashlib.sha256(PNG).digest(): PNG}
    assert runtime_images(message, fetched) == (ImagePart(mime_type="image/png", data=PNG),)
    with pytest.raises(RuntimeContextError, match=r"image 1 is given by blob id .* not fetched"):
        runtime_images(message)


def test_images_with_their_bytes_need_no_fetch() -> None:
    message = _with_images(
        agent.SelectedImage(mime_type="image/png", data=PNG),
        agent.SelectedImage(
            mime_type="image/png", blob_id_with_data=_blob(PNG, hashlib.sha256(PNG).digest())
        ),
    )
    assert image_blob_ids(message) == ()


@pytest.mark.parametrize(
    ("image", "reason"),
    [
        (agent.SelectedImage(mime_type="image/png"), "carries no image data"),
        (agent.SelectedImage(mime_type="image/png", data=b""), "has empty data"),
        (
            agent.SelectedImage(
                mime_type="image/png", blob_id_with_data=agent.SelectedImage.BlobIdWithData()
            ),
            "has empty data",
        ),
        (
            agent.SelectedImage(
                mime_type="image/png", prompt_upload_ref=agent.PromptUploadRef(upload_id="u")
            ),
            "prompt_upload_ref, not supported",
        ),
    ],
    ids=["no source", "empty data", "empty blob_id_with_data", "upload reference"],
)
def test_an_image_without_usable_bytes_is_refused(image: agent.SelectedImage, reason: str) -> None:
    with pytest.raises(RuntimeContextError, match=f"selected image 1 .*{reason}"):
        runtime_images(_with_images(image))


def test_the_debug_mode_config_fills_the_debug_values_and_nothing_else() -> None:
    message = agent.UserMessage(text="why does it crash", message_id="m1")
    request_context = agent.RequestContext(
        debug_mode_config=agent.DebugModeConfig(
            server_endpoint="http://127.0.0.1:7242/ingest/abc",
            log_path="/w/.cursor/debug.log",
            session_id="dbg-7",
        )
    )
    context = runtime_context(message, request_context, None)
    assert context.debug == DebugSession(
        server_endpoint="http://127.0.0.1:7242/ingest/abc",
        log_path="/w/.cursor/debug.log",
        session_id="dbg-7",
    )
    assert context.environment is None and context.rules == ()
    template = "{{DEBUG_SERVER_ENDPOINT}}|{{DEBUG_LOG_PATH}}|{{DEBUG_SESSION_ID}}|" + (
        "{{DEBUG_LOG_PATH}}"
    )
    assert render_runtime_message(template, context) == (
        "http://127.0.0.1:7242/ingest/abc|/w/.cursor/debug.log|dbg-7|/w/.cursor/debug.log"
    )
    # Without the config the values are empty, and a template without them ignores them.
    assert runtime_context(message, None, None).debug is None
    assert render_runtime_message(template, runtime_context(message, None, None)) == "|||"
    assert render(context) == "<user_query>\nwhy does it crash\n</user_query>"


def test_a_command_the_user_ran_is_rendered_with_its_output_as_action_context() -> None:
    action = agent.ShellCommandAction(
        shell_command=agent.ShellCommand(command="ls <dir> && false"), exec_id="e1"
    )
    output = agent.ShellOutput(stdout="a.txt\nb.txt\n", stderr="oops\n", exit_code=1)
    context = RuntimeContext(action_context=shell_command_context(action, output), now=NOW)
    text = render(context)
    assert text.startswith(
        "<user_ran_command>\n"
        "The user ran this command from the chat; it and its output are context for their "
        "next message, not a task.\n"
        "<command>ls <dir> && false</command>\n"
        "<exit_code>1</exit_code>\n"
        "<stdout>\na.txt\nb.txt\n</stdout>\n"
        "<stderr>\noops\n</stderr>\n"
        "</user_ran_command>\n\n<timestamp>"
    )
    quiet = shell_command_context(action, agent.ShellOutput(exit_code=0))
    assert "<stdout>" not in quiet and "<stderr>" not in quiet
