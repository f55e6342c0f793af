"""Map Cursor's ``UserMessage`` and ``RequestContext`` onto the renderer's ``RuntimeContext``.

A pure function of the protobuf messages: every section the request carries is filled, and
a section it does not carry (empty strings, empty lists) is left out, so the runtime message
never shows an empty ``<user_info>`` or ``<rules>``. The time zone is checked when the
message is rendered (``RuntimeContextError``), not here.

Only the inline parts are mapped: rules (``rules``, ``non_file_rules``, ``cloud_rule``), the
environment and git repositories. ``UserMessage.selected_context`` (open files, attachments,
images), skills, MCP and blob-referenced parts are not read yet.
"""

from __future__ import annotations

from datetime import datetime

from prompt.runtime_message import (
    Environment,
    GitRepo,
    RuntimeContext,
)
from wire.proto import agent_v1_pb2 as agent


def runtime_context(
    user_message: agent.UserMessage,
    request_context: agent.RequestContext | None,
    now: datetime | None,
) -> RuntimeContext:
    """The runtime message's context for one user turn; ``now`` must carry a UTC offset."""
    if request_context is None:
        return RuntimeContext(user_query=user_message.text, now=now)
    return RuntimeContext(
        user_query=user_message.text,
        environment=_environment(request_context),
        rules=_rules(request_context),
        now=now,
    )


def _environment(context: agent.RequestContext) -> Environment | None:
    env = context.env
    environment = Environment(
        os_version=env.os_version,
        shell=env.shell,
        workspace_paths=tuple(path for path in env.workspace_paths if path),
        git_repos=tuple(
            GitRepo(path=repo.path, status=repo.status) for repo in context.git_repos if repo.path
        ),
        terminals_folder=env.terminals_folder,
        time_zone=env.time_zone,
    )
    return None if environment == Environment() else environment


def _rules(context: agent.RequestContext) -> tuple[str, ...]:
    texts = [rule.content for rule in (*context.rules, *context.non_file_rules)]
    if context.HasField("cloud_rule"):
        texts.append(context.cloud_rule)
    return tuple(text for text in texts if text.strip())
