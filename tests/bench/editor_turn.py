"""An editor's turn for the load benchmark (``--turn editor``): the RunRequest Cursor's editor
sends for a message typed in a new conversation, with the context and the blobs it carries.

The light turn (``user_turn_message``) is a text, a model and a conversation id. An editor's
request also carries, by Cursor's ``agent.v1`` schema (the fields, their numbers and where each
goes; what the server does with them from the protocol notes on run preparation and KV sync):

- ``ConversationAction.request_context_parts``, the newer editor's RequestContext. The
  workspace's rules (its ``.cursor/rules`` files and the user's own rules) and its agent skills
  go as blobs named by SHA-256 and byte length (``RequestContextRulesPart``,
  ``RequestContextSkillsPart``): the server takes each from its CAS, else asks the client for
  it with a KV GET, which the client answers from its blob store (``EditorTurn.blobs``). The
  rest is ``dynamic_context``: the environment (OS, shell, workspace folder, terminals,
  transcripts and notes folders, time zone), the git repository (path, branch, remote,
  ``git status``), the project layout (``project_layouts``: the workspace's directory tree, a
  few hundred paths) and the flags saying which parts are complete.
- ``UserMessage.selected_context.invocation_context.ide_state``: the visible and recently
  viewed files, the focused one with its cursor line.
- ``AgentRunRequest.conversation_state``: a new conversation's state, its mode and start time,
  with no roots or turns (so no blob of it to fetch), and the request's capability flags.

Fields our ``.proto`` subset does not declare (the layout, a repository's branch, a rule's type
and front matter, the flags, ...) are encoded here by number and reach the server as unknown
fields, which it parses and carries as it does the editor's. The content (rules, skills, paths,
status) is our own, sized like a mid-sized repository's. Everything but the conversation, the
message id and the text is the same on every turn, as from one editor on one workspace:
``fresh_workspace`` makes the parts new to the server on every turn (each then costs a KV GET).
"""

from __future__ import annotations

import functools
import hashlib
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from wire.proto import agent_v1_pb2 as agent

# The layout's folders (name -> subfolders) and each subfolder's modules: 10 x 3 x 9 files.
PACKAGES = ("api", "billing", "catalog", "cli", "core", "jobs", "search", "store", "users", "web")
SUBFOLDERS = ("handlers", "models", "services")
MODULES = ("__init__", "base", "errors", "events", "limits", "queries", "schema", "util", "views")
ROOT_FILES = (
    ".gitignore",
    "Makefile",
    "README.md",
    "a.txt",
    "b.txt",
    "pyproject.toml",
    "requirements.txt",
)

RULE_TOPICS = (
    ("python-style", "Python modules", "*.py"),
    ("tests", "tests", "tests/**"),
    ("database", "database access", "src/store/**"),
    ("http-handlers", "HTTP handlers", "src/api/**"),
    ("commits", "commits and reviews", ""),
)
RULE_LINES = (
    "Keep functions short; a function that needs a comment to be followed is split.",
    "Name things by what they hold, not by their type; no abbreviations but the usual ones.",
    "Every public function has a docstring that says why it exists, not what it does.",
    "Errors are raised where they are found and handled where they can be acted on.",
    "No global mutable state; pass what a function needs as arguments.",
    "Prefer the standard library; a new dependency needs a reason in the pull request.",
    "Type hints on every signature; run the type checker before you push.",
    "Log with structured fields, never with string formatting of secrets.",
    "A change to behaviour comes with a test that failed before it.",
    "Keep imports at the top, sorted; no import inside a function without a reason.",
    "Time is UTC inside the program; convert at the edges only.",
    "Configuration comes from the environment, read once at start.",
)
USER_RULES = (
    "Answer in English, briefly; show code before explaining it.",
    "Do not run git push or anything that deploys.",
    "Ask before deleting files outside the workspace.",
)
SKILLS = (
    ("release-notes", "Drafts release notes from the commits since the last tag."),
    ("migrations", "Writes a database migration and its rollback for a model change."),
    ("profiling", "Profiles a slow endpoint and reports where the time goes."),
    ("api-client", "Generates a typed client for an endpoint from its schema."),
)
GIT_STATUS = "\n".join(
    (
        "## main...origin/main [ahead 2]",
        " M src/api/handlers/views.py",
        " M src/api/handlers/schema.py",
        " M src/core/services/limits.py",
        "M  src/store/models/queries.py",
        " D src/jobs/models/events.py",
        "?? src/search/services/ranking.py",
        "?? notes.md",
    )
)
VISIBLE = ("src/api/handlers/views.py", "src/core/services/limits.py")
RECENT = tuple(
    f"src/{package}/{folder}/{module}.py"
    for package, folder, module in (
        ("api", "handlers", "schema"),
        ("store", "models", "queries"),
        ("core", "models", "base"),
        ("jobs", "services", "events"),
        ("web", "handlers", "views"),
        ("users", "services", "util"),
        ("billing", "models", "errors"),
        ("search", "services", "queries"),
    )
)


@dataclass(frozen=True)
class EditorTurn:
    """The first message of the turn, and what the client's blob store holds before it starts
    (the parts the server may GET)."""

    message: agent.AgentClientMessage
    blobs: dict[bytes, bytes]


def editor_turn(
    text: str,
    model_id: str,
    *,
    conversation_id: str,
    workspace: Path,
    fresh_workspace: bool = False,
) -> EditorTurn:
    """A new conversation's first RunRequest as the editor sends it, in Agent mode; with
    ``fresh_workspace``, parts the server has not seen (a workspace of its own)."""
    label = conversation_id if fresh_workspace else ""
    parts = _parts(str(workspace), label)
    dynamic = _dynamic_context(str(workspace))
    refs = agent.RequestContextPartReferences(
        rules_blob_id=parts.rules_id,
        rules_byte_length=len(parts.rules),
        skills_blob_id=parts.skills_id,
        skills_byte_length=len(parts.skills),
    )
    refs.dynamic_context.MergeFromString(dynamic)
    user = agent.UserMessage(text=text, message_id=str(uuid.uuid4()), mode=agent.AGENT_MODE_AGENT)
    user.selected_context.invocation_context.ide_state.MergeFromString(_ide_state(str(workspace)))
    state = agent.ConversationStateStructure(mode=agent.AGENT_MODE_AGENT)
    started_ms = int(time.time() * 1000)
    state.MergeFromString(_varint_field(26, started_ms) + _text_field(27, "Europe/Berlin"))
    request = agent.AgentRunRequest(
        conversation_id=conversation_id,
        conversation_state=state,
        action=agent.ConversationAction(
            user_message_action=agent.UserMessageAction(user_message=user),
            request_context_parts=refs,
        ),
        requested_model=agent.RequestedModel(model_id=model_id),
        run_id=str(uuid.uuid4()),
    )
    request.MergeFromString(_request_flags())
    blobs = {parts.rules_id: parts.rules, parts.skills_id: parts.skills}
    return EditorTurn(agent.AgentClientMessage(run_request=request), blobs)


# ---- the workspace's parts, by blob ----


@dataclass(frozen=True)
class _Parts:
    rules: bytes
    rules_id: bytes
    skills: bytes
    skills_id: bytes


@functools.lru_cache(maxsize=4)
def _parts(workspace: str, label: str) -> _Parts:
    """The rules and skills parts of a workspace (``label`` makes them another workspace's)."""
    rules = agent.RequestContextRulesPart()
    for number, (name, about, glob) in enumerate(RULE_TOPICS):
        lines = [f"# Conventions for {about}", ""]
        lines += [f"- {RULE_LINES[(number + i) % len(RULE_LINES)]}" for i in range(9)]
        if label:
            lines.append(f"- Workspace {label}.")
        rule = agent.CursorRule(
            full_path=f"{workspace}/.cursor/rules/{name}.mdc", content="\n".join(lines)
        )
        front = f"---\ndescription: {about}\nglobs: {glob}\nalwaysApply: {not glob}\n---"
        # type 3: CursorRuleType, global (1, empty) or file_globbed (2: globs 1)
        kind = _message_field(2, _text_field(1, glob)) if glob else _message_field(1, b"")
        rule.MergeFromString(_message_field(3, kind) + _text_field(14, front))
        rules.rules.append(rule)
    rules.non_file_rules.extend(agent.CursorRule(content=text) for text in USER_RULES)
    skills = agent.RequestContextSkillsPart()
    for name, description in SKILLS:
        body = f"# {name}\n\n{description}\n\n" + "\n".join(RULE_LINES[:4]) + f"\n{label}"
        skills.agent_skills.append(
            agent.AgentSkill(
                full_path=f"{workspace}/.cursor/skills/{name}/SKILL.md",
                description=description,
                content=body,
            )
        )
    rules_bytes, skills_bytes = rules.SerializeToString(), skills.SerializeToString()
    return _Parts(rules_bytes, _sha(rules_bytes), skills_bytes, _sha(skills_bytes))


# ---- the dynamic context and the open files ----


@functools.lru_cache(maxsize=4)
def _dynamic_context(workspace: str) -> bytes:
    """The RequestContext the editor sends inline, serialized (unknown fields included)."""
    home = "/home/dev/.cursor/projects/bench"
    context = agent.RequestContext(
        env=agent.RequestContextEnv(
            os_version="linux 6.8.0-49-generic",
            workspace_paths=[workspace],
            shell="bash",
            terminals_folder=f"{home}/terminals",
            time_zone="Europe/Berlin",
        ),
    )
    env_extra = (
        _text_field(8, f"{home}/notes/shared")
        + _text_field(9, f"{home}/notes/conversation")
        + _text_field(11, workspace)
        + _text_field(12, f"{home}/agent-transcripts")
        + _varint_field(14, 1)
        + _varint_field(18, 1)
        + _text_field(21, workspace)
    )
    context.env.MergeFromString(env_extra)
    repo = agent.GitRepoInfo(path=workspace, status=GIT_STATUS)
    repo.MergeFromString(
        _text_field(3, "main")
        + _text_field(4, "git@example.com:team/bench.git")
        + _varint_field(6, 1)
    )
    context.git_repos.append(repo)
    flags = b"".join(_varint_field(number, 1) for number in (17, 24, 33, 35, 36, 39, 40, 41, 45))
    context.MergeFromString(_message_field(13, _layout(workspace)) + flags)
    return context.SerializeToString()


def _layout(workspace: str) -> bytes:
    """``LsDirectoryTreeNode`` of the workspace: root files, then package/folder/module.py."""
    packages = []
    for package in PACKAGES:
        folders = []
        for folder in SUBFOLDERS:
            path = f"{workspace}/src/{package}/{folder}"
            files = [f"{module}.py" for module in MODULES]
            folders.append(_tree_node(path, [], files, {".py": len(files)}))
        count = len(SUBFOLDERS) * len(MODULES)
        packages.append(_tree_node(f"{workspace}/src/{package}", folders, [], {".py": count}))
    total = len(PACKAGES) * len(SUBFOLDERS) * len(MODULES)
    src = _tree_node(f"{workspace}/src", packages, [], {".py": total})
    counts = {".py": total, ".md": 1, ".txt": 3, ".toml": 1}
    return _tree_node(workspace, [src], list(ROOT_FILES), counts)


def _tree_node(path: str, dirs: list[bytes], files: list[str], counts: dict[str, int]) -> bytes:
    """One ``LsDirectoryTreeNode``: abs_path 1, children_dirs 2, children_files 3 (name 1),
    children_were_processed 4, full_subtree_extension_counts 5, num_files 6."""
    body = _text_field(1, path)
    body += b"".join(_message_field(2, node) for node in dirs)
    body += b"".join(_message_field(3, _text_field(1, name)) for name in files)
    body += _varint_field(4, 1)
    for extension, count in counts.items():
        body += _message_field(5, _text_field(1, extension) + _varint_field(2, count))
    return body + _varint_field(6, sum(counts.values()))


@functools.lru_cache(maxsize=4)
def _ide_state(workspace: str) -> bytes:
    """The visible files (the first focused, its cursor at line 42) and the recently viewed."""
    ide = agent.InvocationContext.IdeState()
    for number, relative in enumerate(VISIBLE):
        file = ide.visible_files.add(path=f"{workspace}/{relative}", total_lines=180 + number)
        file.MergeFromString(_text_field(2, relative))
        if number == 0:
            file.cursor_position.line = 42
    for number, relative in enumerate(RECENT):
        file = ide.recently_viewed_files.add(
            path=f"{workspace}/{relative}", total_lines=60 + 25 * number
        )
        file.MergeFromString(_text_field(2, relative))
    return ide.SerializeToString()


@functools.lru_cache(maxsize=1)
def _request_flags() -> bytes:
    """The request's ``client_supports_*`` flags (19, 23, 27, 28, 31), suggest_next_prompt
    (10) and the agent session id (26)."""
    flags = b"".join(_varint_field(number, 1) for number in (10, 19, 23, 27, 28, 31))
    return flags + _text_field(26, str(uuid.uuid4()))


# ---- protobuf fields by number (those our subset lacks) ----


def _sha(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def _varint_field(number: int, value: int) -> bytes:
    return _varint(number << 3) + _varint(value)


def _message_field(number: int, body: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(body)) + body


def _text_field(number: int, text: str) -> bytes:
    return _message_field(number, text.encode())
