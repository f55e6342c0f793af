"""Render the runtime user message: the context the editor sent, then the user's query.

The model sees one user-role text per request, built from a mode's ``runtime.md`` template and
a plain ``RuntimeContext``. The template holds only ``{{NAME}}`` placeholders (see
``RUNTIME_PLACEHOLDERS``); each one is replaced by a rendered section, trimmed and followed by
one blank line, or by nothing at all when the request does not carry it, so a missing section
leaves no tag and no blank line behind. The sections, in template order:

- ``REQUEST_CONTEXT``: ``<user_info>`` (environment), one ``<git_status>`` per repository with a
  status, ``<rules>`` (``<user_rule>`` each), ``<agent_skills>``, ``<subagents>`` (the user's
  custom subagents) and ``<mcp_meta_tools>`` (the MCP servers and their tool names), joined by
  blank lines;
- ``OPEN_FILES``: ``<open_and_recently_viewed_files>`` (recently viewed, then visible files,
  the first visible one marked as focused);
- ``SELECTED_CONTEXT``: ``<selected_context>`` with, in this order, the extra context texts
  (verbatim), ``<file>``, ``<code>``, ``<terminal>``, ``<terminal_selection>``, ``<rule>``,
  ``<command>``, ``<skill>`` and ``<external_link>`` items, separated by blank lines;
- ``ACTION_CONTEXT``: text the run adds before the query (already formatted by its producer);
- ``TIMESTAMP``: ``<timestamp>Tuesday, Feb 3, 2026, 4:05 PM (UTC+8)</timestamp>`` in the
  environment's IANA time zone (UTC when none is given);
- ``USER_QUERY``: ``<user_query>`` with the text the user typed.

The ``DEBUG_*`` placeholders are values, not sections: the debug log collector's endpoint, log
file and session id exactly as the editor sent them (empty when it sent none), for the debug
template's instructions, which may name each of them several times.

Attribute values are XML-escaped; element bodies (code, rules, terminal output) are kept
verbatim, because escaping would change the code the model reads. Substitution is a single
pass: a ``{{…}}`` typed by the user is never expanded. This module knows no protobuf; the
mapping from Cursor's ``UserMessage``/``RequestContext`` onto ``RuntimeContext`` lives elsewhere.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime, tzinfo
from pathlib import PurePosixPath, PureWindowsPath
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import msgspec

RUNTIME_PLACEHOLDERS: tuple[str, ...] = (
    "REQUEST_CONTEXT",
    "OPEN_FILES",
    "SELECTED_CONTEXT",
    "ACTION_CONTEXT",
    "TIMESTAMP",
    "USER_QUERY",
)
"""The sections every runtime template must use, each exactly once."""

DEBUG_PLACEHOLDERS: tuple[str, ...] = (
    "DEBUG_SERVER_ENDPOINT",
    "DEBUG_LOG_PATH",
    "DEBUG_SESSION_ID",
)
"""Debug mode's log collector, as plain values (no blank line added); a template may use each
any number of times, or not at all."""

PLACEHOLDER = re.compile(r"\{\{([^{}]*)\}\}")
"""A ``{{…}}`` placeholder; the loader also uses it to find unknown names in templates."""

_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


class RuntimeContextError(ValueError):
    """The request's context cannot be rendered (for example an unknown time zone).

    It is the request's fault, so the run ends with ``invalid_argument``.
    """


class GitRepo(msgspec.Struct, frozen=True, kw_only=True):
    """A repository the editor reported, with its ``git status`` text (may be empty)."""

    path: str
    status: str = ""


class Environment(msgspec.Struct, frozen=True, kw_only=True):
    """The user's machine as the editor describes it; every field may be empty."""

    os_version: str = ""
    shell: str = ""
    workspace_paths: tuple[str, ...] = ()
    git_repos: tuple[GitRepo, ...] = ()
    terminals_folder: str = ""
    time_zone: str = ""
    """An IANA name such as ``Europe/Paris``; empty means UTC."""


class Skill(msgspec.Struct, frozen=True, kw_only=True):
    """A skill file the model may read when its description matches the task; an empty
    ``name`` is left out of the tag (Cursor's ``AgentSkill`` carries only a path)."""

    path: str
    name: str = ""
    description: str = ""


class Subagent(msgspec.Struct, frozen=True, kw_only=True):
    """A custom subagent the user defined, by name, with what it is for."""

    name: str
    description: str = ""


class McpServer(msgspec.Struct, frozen=True, kw_only=True):
    """An MCP server the editor has connected: its id, its tools' names and how to use it."""

    name: str
    tools: tuple[str, ...] = ()
    use_instructions: str = ""


class RecentFile(msgspec.Struct, frozen=True, kw_only=True):
    path: str
    total_lines: int | None = None


class VisibleFile(msgspec.Struct, frozen=True, kw_only=True):
    """A file shown in an editor tab; the first visible file is the focused one."""

    path: str
    total_lines: int | None = None
    cursor_line: int | None = None


class OpenFiles(msgspec.Struct, frozen=True, kw_only=True):
    recently_viewed: tuple[RecentFile, ...] = ()
    visible: tuple[VisibleFile, ...] = ()


class SelectedFile(msgspec.Struct, frozen=True, kw_only=True):
    """A whole file the user attached; ``content`` is empty when only the path came along."""

    path: str
    content: str = ""


class SelectedCode(msgspec.Struct, frozen=True, kw_only=True):
    """A code range the user attached; lines are 1-based and inclusive when known."""

    path: str
    content: str
    start_line: int | None = None
    end_line: int | None = None


class Terminal(msgspec.Struct, frozen=True, kw_only=True):
    """A whole terminal the user attached; an empty ``title`` is left out of the tag."""

    title: str = ""
    content: str


class TerminalSelection(msgspec.Struct, frozen=True, kw_only=True):
    """Terminal output the user selected and attached; an empty ``title`` is left out."""

    title: str
    content: str


class SelectedRule(msgspec.Struct, frozen=True, kw_only=True):
    """A rule file the user attached by hand (``@rule``)."""

    path: str
    content: str = ""


class SelectedCommand(msgspec.Struct, frozen=True, kw_only=True):
    """A saved command the user invoked (``/name``), with its text."""

    name: str
    content: str = ""


class SelectedSkill(msgspec.Struct, frozen=True, kw_only=True):
    """A skill the user attached by hand, with its description and full text."""

    path: str
    description: str = ""
    content: str = ""


class ExternalLink(msgspec.Struct, frozen=True, kw_only=True):
    """A URL the user attached; ``pdf_content`` is the text the editor extracted from a PDF."""

    url: str
    pdf_content: str = ""


class SelectedContext(msgspec.Struct, frozen=True, kw_only=True):
    extra: tuple[str, ...] = ()
    """Free-form context texts the editor added; rendered verbatim, first."""
    files: tuple[SelectedFile, ...] = ()
    code: tuple[SelectedCode, ...] = ()
    terminals: tuple[Terminal, ...] = ()
    terminal_selections: tuple[TerminalSelection, ...] = ()
    rules: tuple[SelectedRule, ...] = ()
    commands: tuple[SelectedCommand, ...] = ()
    skills: tuple[SelectedSkill, ...] = ()
    links: tuple[ExternalLink, ...] = ()


class DebugSession(msgspec.Struct, frozen=True, kw_only=True):
    """Where Debug mode's instrumented code sends its logs (Cursor's ``DebugModeConfig``)."""

    server_endpoint: str = ""
    log_path: str = ""
    session_id: str = ""


class RuntimeContext(msgspec.Struct, frozen=True, kw_only=True):
    """Everything one request contributes to its runtime user message; all of it optional."""

    user_query: str | None = None
    environment: Environment | None = None
    rules: tuple[str, ...] = ()
    skills: tuple[Skill, ...] = ()
    subagents: tuple[Subagent, ...] = ()
    mcp_servers: tuple[McpServer, ...] = ()
    open_files: OpenFiles | None = None
    selected: SelectedContext | None = None
    action_context: str | None = None
    now: datetime | None = None
    """When the user sent the message; must carry a UTC offset."""
    debug: DebugSession | None = None


def render_runtime_message(template: str, context: RuntimeContext) -> str:
    """Fill a validated runtime template from ``context``; raises ``RuntimeContextError``."""
    values = runtime_values(context)

    def substitute(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in values:
            raise RuntimeContextError(f"runtime template uses unknown placeholder {{{{{name}}}}}")
        return values[name]

    return PLACEHOLDER.sub(substitute, template).strip()


def runtime_values(context: RuntimeContext) -> Mapping[str, str]:
    """Each placeholder's text: the trimmed section plus a blank line, or ``""`` when absent;
    the debug values as they are."""
    zone = resolve_time_zone(context.environment.time_zone if context.environment else "")
    now = _local_now(context.now, zone)
    sections = {
        "REQUEST_CONTEXT": _join(
            _user_info(context.environment, now),
            *_git_statuses(context.environment),
            _rules(context.rules),
            _skills(context.skills),
            _subagents(context.subagents),
            _mcp_servers(context.mcp_servers),
        ),
        "OPEN_FILES": _open_files(context.open_files),
        "SELECTED_CONTEXT": _selected_context(context.selected),
        "ACTION_CONTEXT": context.action_context or "",
        "TIMESTAMP": f"<timestamp>{format_timestamp(now)}</timestamp>" if now else "",
        "USER_QUERY": _user_query(context.user_query),
    }
    debug = context.debug or DebugSession()
    return {
        **{name: _section(text) for name, text in sections.items()},
        "DEBUG_SERVER_ENDPOINT": debug.server_endpoint,
        "DEBUG_LOG_PATH": debug.log_path,
        "DEBUG_SESSION_ID": debug.session_id,
    }


def resolve_time_zone(name: str) -> tzinfo:
    """An IANA zone by name (empty means UTC); an unknown name is the request's error."""
    if not name:
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise RuntimeContextError(f"unknown time zone {name!r}") from None


def format_timestamp(local: datetime) -> str:
    """``Tuesday, Feb 3, 2026, 4:05 PM (UTC+8)``; English names whatever the process locale."""
    hour = local.hour % 12 or 12
    meridiem = "AM" if local.hour < 12 else "PM"
    return f"{_date(local)}, {hour}:{local.minute:02d} {meridiem} ({_utc_offset(local)})"


def xml_attr(value: str) -> str:
    """Escape a value for a double-quoted XML attribute."""
    return (
        value.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")
    )


def _local_now(now: datetime | None, zone: tzinfo) -> datetime | None:
    if now is None:
        return None
    if now.tzinfo is None or now.utcoffset() is None:
        raise RuntimeContextError("the message time must carry a UTC offset")
    return now.astimezone(zone)


def _date(local: datetime) -> str:
    return f"{_DAYS[local.weekday()]}, {_MONTHS[local.month - 1]} {local.day}, {local.year}"


def _utc_offset(local: datetime) -> str:
    offset = local.utcoffset()
    minutes = int(offset.total_seconds() // 60) if offset else 0
    sign = "-" if minutes < 0 else "+"
    hours, rest = divmod(abs(minutes), 60)
    return f"UTC{sign}{hours}" + (f":{rest:02d}" if rest else "")


def _section(text: str) -> str:
    text = text.strip()
    return f"{text}\n\n" if text else ""


def _join(*blocks: str) -> str:
    return "\n\n".join(block for block in blocks if block)


def _lines(*lines: str) -> str:
    return "\n".join(lines)


def _user_info(env: Environment | None, now: datetime | None) -> str:
    if env is None:
        return ""
    lines: list[str] = []
    if env.os_version:
        lines.append(f"Operating system: {env.os_version}")
    if env.shell:
        lines.append(f"Shell: {env.shell}")
    for workspace in env.workspace_paths:
        repo = _repo_containing(workspace, env.git_repos)
        where = f"git repository at {repo}" if repo else "not in a git repository"
        lines.append(f"Workspace path: {workspace} ({where})")
    if env.terminals_folder:
        lines.append(f"Terminals folder: {env.terminals_folder}")
    if now is not None:
        lines.append(f"Today's date: {_date(now)}")
    if env.time_zone:
        lines.append(f"Time zone: {env.time_zone}")
    if not lines:
        return ""
    if env.workspace_paths:
        lines.append("Paths in tool calls should be absolute; the workspace path is the root.")
    return _lines("<user_info>", *lines, "</user_info>")


def _repo_containing(workspace: str, repos: tuple[GitRepo, ...]) -> str | None:
    """The repository the workspace is in (itself or a parent folder), if the editor named one."""
    flavour = PureWindowsPath if ("\\" in workspace or workspace[1:3] == ":/") else PurePosixPath
    here = flavour(workspace)
    for repo in repos:
        root = flavour(repo.path)
        if repo.path and (here == root or root in here.parents):
            return repo.path
    return None


def _git_statuses(env: Environment | None) -> list[str]:
    if env is None:
        return []
    blocks = []
    for repo in env.git_repos:
        if not repo.status.strip():
            continue
        fence = _fence(repo.status)
        blocks.append(
            _lines(
                "<git_status>",
                "A snapshot taken when the conversation started; it is not updated as you work.",
                f"Repository: {repo.path}",
                "",
                fence,
                repo.status.strip("\n"),
                fence,
                "</git_status>",
            )
        )
    return blocks


def _fence(body: str) -> str:
    """A backtick fence longer than any backtick run inside ``body``."""
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    return "`" * max(3, longest + 1)


def _rules(rules: tuple[str, ...]) -> str:
    bodies = [rule.strip() for rule in rules if rule.strip()]
    if not bodies:
        return ""
    return _lines("<rules>", *(f"<user_rule>{body}</user_rule>" for body in bodies), "</rules>")


def _skills(skills: tuple[Skill, ...]) -> str:
    if not skills:
        return ""
    entries = (
        f"<agent_skill{_attrs(('name', skill.name), ('fullPath', skill.path))}>"
        f"{skill.description.strip()}</agent_skill>"
        for skill in skills
    )
    return _lines(
        "<agent_skills>",
        "Each skill is a file of instructions for one kind of task. When a skill fits the "
        "task, Read its file first and follow it.",
        "<available_skills>",
        *entries,
        "</available_skills>",
        "</agent_skills>",
    )


def _subagents(subagents: tuple[Subagent, ...]) -> str:
    if not subagents:
        return ""
    entries = (
        f"<subagent{_attrs(('name', agent.name))}>{agent.description.strip()}</subagent>"
        for agent in subagents
    )
    return _lines(
        "<subagents>",
        "Custom subagents the user defined. When you hand a task to a subagent, pick the one "
        "whose description fits the task and name it as given here.",
        *entries,
        "</subagents>",
    )


def _mcp_servers(servers: tuple[McpServer, ...]) -> str:
    if not servers:
        return ""
    entries = (
        "<mcp_meta_tool_server"
        + _attrs(
            ("name", server.name),
            ("tools", ", ".join(server.tools)),
            ("serverUseInstructions", server.use_instructions),
        )
        + " />"
        for server in servers
    )
    return _lines(
        "<mcp_meta_tools>",
        "MCP servers connected in the editor, each with the names of its tools. To use one of "
        "these tools, name its server by the name given here.",
        "<mcp_meta_tool_servers>",
        *entries,
        "</mcp_meta_tool_servers>",
        "</mcp_meta_tools>",
    )


def _open_files(open_files: OpenFiles | None) -> str:
    if open_files is None or not (open_files.recently_viewed or open_files.visible):
        return ""
    lines = ["<open_and_recently_viewed_files>"]
    if open_files.recently_viewed:
        lines.append("Recently viewed files:")
        lines.extend(
            f"- {item.path}{_details(total_lines=item.total_lines)}"
            for item in open_files.recently_viewed
        )
    if open_files.visible:
        lines.append("Files open in the editor:")
        for index, item in enumerate(open_files.visible):
            details = _details(
                focused=index == 0,
                cursor_line=item.cursor_line,
                total_lines=item.total_lines,
            )
            lines.append(f"- {item.path}{details}")
    lines.append(
        "This shows what the user has been looking at; it may or may not relate to the request."
    )
    lines.append("</open_and_recently_viewed_files>")
    return _lines(*lines)


def _details(
    *, focused: bool = False, cursor_line: int | None = None, total_lines: int | None = None
) -> str:
    parts = []
    if focused:
        parts.append("focused")
    if cursor_line is not None:
        parts.append(f"cursor on line {cursor_line}")
    if total_lines is not None:
        parts.append(f"total lines: {total_lines}")
    return f" ({', '.join(parts)})" if parts else ""


def _selected_context(selected: SelectedContext | None) -> str:
    if selected is None:
        return ""
    items = [text.strip() for text in selected.extra if text.strip()]
    items.extend(_element("file", file.content, path=file.path) for file in selected.files)
    for code in selected.code:
        lines = ""
        if code.start_line is not None and code.end_line is not None:
            lines = f"{code.start_line}-{code.end_line}"
        elif code.start_line is not None:
            lines = str(code.start_line)
        items.append(_element("code", code.content, path=code.path, lines=lines))
    items.extend(
        _element("terminal", term.content, title=term.title)
        for term in selected.terminals
        if term.content.strip()
    )
    items.extend(
        _element("terminal_selection", term.content, title=term.title)
        for term in selected.terminal_selections
        if term.content.strip()
    )
    items.extend(_element("rule", rule.content, path=rule.path) for rule in selected.rules)
    items.extend(
        _element("command", command.content, name=command.name) for command in selected.commands
    )
    for skill in selected.skills:
        body = _join(skill.description.strip(), skill.content.strip("\n"))
        items.append(_element("skill", body, path=skill.path))
    items.extend(
        _element("external_link", link.pdf_content, url=link.url)
        for link in selected.links
        if link.url.strip()
    )
    if not items:
        return ""
    return _lines("<selected_context>", "\n\n".join(items), "</selected_context>")


def _element(element: str, body: str, /, **attributes: str) -> str:
    """``<element a="…">`` + body + ``</element>``, or ``<element a="…" />`` when the body is
    blank; the body is kept verbatim apart from its surrounding newlines."""
    tag = element + _attrs(*attributes.items())
    body = body.strip("\n")
    return _lines(f"<{tag}>", body, f"</{element}>") if body.strip() else f"<{tag} />"


def _attrs(*pairs: tuple[str, str]) -> str:
    """Escaped ``name="value"`` attributes, each with a leading space; empty values are left out."""
    return "".join(f' {name}="{xml_attr(value)}"' for name, value in pairs if value)


def _user_query(query: str | None) -> str:
    if query is None or not query.strip():
        return ""
    # Keep the first line's indentation (pasted code); drop blank lines around the text.
    body = re.sub(r"\A(?:[ \t]*\r?\n)+", "", query).rstrip()
    return _lines("<user_query>", body, "</user_query>")
