"""What a span says, from the facts the recorders hear; no IO.

Names and attributes follow OpenTelemetry's GenAI semantic conventions where one fits
(``chat {model}``, ``execute_tool {tool}``, ``invoke_agent``) and ``cursor.*`` otherwise. Only
ids, names, counts and outcomes: never a prompt, an answer, a tool's arguments or output, an
error's text (it may quote either), a key or a header value.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from urllib.parse import urlsplit

from opentelemetry.util.types import AttributeValue

from actors.conversation.request import ModelRoute, ProviderType
from store.llm_calls import CallEnd, CallStatus

Attributes = dict[str, AttributeValue]

# ``gen_ai.provider.name`` (current conventions) and ``gen_ai.system`` (earlier ones) of each
# format; an OpenAI-compatible endpoint that is not OpenAI's is named by its format too.
PROVIDER_NAMES: Mapping[ProviderType, tuple[str, str]] = {
    ProviderType.OPENAI_CHAT: ("openai", "openai"),
    ProviderType.OPENAI_RESPONSES: ("openai", "openai"),
    ProviderType.ANTHROPIC: ("anthropic", "anthropic"),
    ProviderType.GEMINI: ("gcp.gemini", "gemini"),
}
# The call record's usage columns -> the conventions' token attributes.
USAGE_ATTRIBUTES = {
    "input_tokens": "gen_ai.usage.input_tokens",
    "output_tokens": "gen_ai.usage.output_tokens",
    "cache_read_tokens": "gen_ai.usage.cache_read.input_tokens",
    "cache_write_tokens": "gen_ai.usage.cache_creation.input_tokens",
    "reasoning_tokens": "gen_ai.usage.reasoning.output_tokens",
}
RUN_SPAN = "invoke_agent"
CHECKPOINT_SPAN = "checkpoint kv_wait"
OK = "ok"


def run_ids(run_id: str) -> tuple[int, int]:
    """The trace id and root span id of a run, derived from its id (never zero)."""
    digest = hashlib.sha256(run_id.encode("utf-8")).digest()
    trace_id = int.from_bytes(digest[:16], "big") or 1
    span_id = int.from_bytes(digest[16:24], "big") or 1
    return trace_id, span_id


def _text(detail: Mapping[str, object], name: str) -> str | None:
    value = detail.get(name)
    return value if isinstance(value, str) else None


def run_attributes(
    run_id: str, conversation_id: str, detail: Mapping[str, object]
) -> tuple[Attributes, bool]:
    """A run's root span (its start's and end's detail, merged) and whether it failed. The
    user's text and the end's message are left out."""
    code = _text(detail, "code") or "unknown"
    attributes: Attributes = {
        "gen_ai.operation.name": RUN_SPAN,
        "gen_ai.conversation.id": conversation_id,
        "cursor.run.id": run_id,
        "cursor.run.code": code,
    }
    if (model := _text(detail, "model")) is not None:
        attributes["cursor.model"] = model
    if asked := _text(detail, "asked"):
        attributes["cursor.model.asked"] = asked
    if isinstance(resumed := detail.get("resumed"), bool):
        attributes["cursor.run.resumed"] = resumed
    return attributes, code != OK


def tool_attributes(detail: Mapping[str, object]) -> tuple[str, Attributes, bool]:
    """A tool call's span name, attributes and whether it failed (an error or aborted)."""
    tool = _text(detail, "tool") or "unknown"
    outcome = _text(detail, "outcome") or "unknown"
    attributes: Attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": tool,
        "gen_ai.tool.call.id": _text(detail, "call_id") or "",
        "cursor.tool.outcome": outcome,
    }
    return f"execute_tool {tool}", attributes, outcome not in ("success", "closed")


def checkpoint_attributes(detail: Mapping[str, object]) -> tuple[Attributes, bool]:
    """A checkpoint job's wait for its KV ACKs: job id, kind, outcome (not the error's text)."""
    outcome = _text(detail, "outcome") or "unknown"
    attributes: Attributes = {
        "cursor.checkpoint.kind": _text(detail, "kind") or "unknown",
        "cursor.checkpoint.outcome": outcome,
    }
    if isinstance(job_id := detail.get("job_id"), int):
        attributes["cursor.checkpoint.job_id"] = job_id
    return attributes, outcome != "published"


def call_span_name(route: ModelRoute) -> str:
    return f"chat {route.model_id}"


def call_attributes(
    route: ModelRoute, chain_position: int, attempt: int, end: CallEnd
) -> tuple[Attributes, bool]:
    """A provider attempt's span: the GenAI conventions' request and usage attributes, the
    server's host (not its URL), the attempt's place; and whether it failed."""
    provider_name, system = PROVIDER_NAMES[route.provider_type]
    attributes: Attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider_name,
        "gen_ai.system": system,
        "gen_ai.request.model": route.model_id,
        "cursor.provider.name": route.provider_name,
        "cursor.provider.format": route.provider_type.value,
        "cursor.model": route.public_id,
        "cursor.call.status": end.status.value,
        "cursor.call.chain_position": chain_position,
        "cursor.call.attempt": attempt,
    }
    host = urlsplit(route.base_url).hostname
    if host:
        attributes["server.address"] = host
    for column, value in end.usage.items():
        if column in USAGE_ATTRIBUTES:
            attributes[USAGE_ATTRIBUTES[column]] = value
    if end.finish_reason:
        attributes["gen_ai.response.finish_reasons"] = (end.finish_reason,)
    if end.http_status is not None:
        attributes["http.response.status_code"] = end.http_status
    if end.ttft_ms is not None:
        attributes["cursor.call.ttft_ms"] = end.ttft_ms
    failed = end.status is CallStatus.FAILED
    if failed:
        attributes["error.type"] = (
            str(end.http_status) if end.http_status is not None else end.status.value
        )
    return attributes, failed
