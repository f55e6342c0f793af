"""A fake Cursor client: speaks RunSSE and BidiAppend over real HTTP, like the editor.

It frames requests the way the client does (raw protobuf, or one Connect envelope, optionally
gzip) and reads the RunSSE body incrementally as Connect envelopes.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import codecs
import contextlib
import fnmatch
import gzip
import hashlib
import json
import os
import re
import signal
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import httpx
from google.protobuf import json_format

from wire.connect import Envelope, EnvelopeReader, encode_envelope
from wire.proto import agent_v1_pb2 as agent
from wire.proto import aiserver_v1_pb2 as aiserver

RUN_SSE = "/agent.v1.AgentService/RunSSE"
BIDI_APPEND = "/aiserver.v1.BidiService/BidiAppend"


def login_token(claims: Mapping[str, object], signature: str = "c2lnbmF0dXJl") -> str:
    """A Cursor-login-like JWT carrying ``claims`` (its signature is made up: the server reads
    the claims, never verifies them)."""

    def part(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    header = part(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    return f"{header}.{part(json.dumps(dict(claims)).encode())}.{signature}"


def authorization(token: str) -> dict[str, str]:
    """The ``authorization`` header the editor sends with the user's login token: give it as a
    client's ``headers`` (``FakeCursor``, ``H2Cursor``) to send it on every request."""
    return {"authorization": f"Bearer {token}"}


def frame_body(payload: bytes, *, enveloped: bool, gzipped: bool) -> tuple[bytes, dict[str, str]]:
    """A request body in one of the client's shapes, with the headers that go with it."""
    body = encode_envelope(0, payload) if enveloped else payload
    headers = {
        "content-type": "application/connect+proto" if enveloped else "application/proto",
        "connect-protocol-version": "1",
    }
    if gzipped:
        body = gzip.compress(body)
        headers["content-encoding"] = "gzip"
    return body, headers


def bidi_append_body(
    request_id: str,
    seqno: int,
    message: agent.AgentClientMessage | None,
    *,
    data: str | None = None,
) -> bytes:
    """Serialized ``BidiAppendRequest``; ``data`` overrides the hex of ``message``."""
    if data is not None:
        hex_data = data
    else:
        assert message is not None  # without ``data`` the body carries the message
        hex_data = binascii.hexlify(message.SerializeToString()).decode()
    request = aiserver.BidiAppendRequest(
        data=hex_data,
        request_id=aiserver.BidiRequestId(request_id=request_id),
        append_seqno=seqno,
    )
    return request.SerializeToString()


def run_request_message(conversation_id: str = "conv-1") -> agent.AgentClientMessage:
    return agent.AgentClientMessage(
        run_request=agent.AgentRunRequest(conversation_id=conversation_id)
    )


def cancel_message(reason: str = "user pressed stop") -> agent.AgentClientMessage:
    return agent.AgentClientMessage(
        conversation_action=agent.ConversationAction(
            cancel_action=agent.CancelAction(reason=reason)
        )
    )


def heartbeat_message() -> agent.AgentClientMessage:
    return agent.AgentClientMessage(client_heartbeat=agent.ClientHeartbeat())


@dataclass
class StreamResult:
    """What a RunSSE stream delivered: decoded data frames and the EndStream JSON."""

    messages: list[agent.AgentServerMessage] = field(default_factory=list)
    # The EndStream's JSON as decoded (``{}``, or Connect's ``error``: code, message, details).
    end: dict[str, Any] | None = None
    raw: bytes = b""


def _server_gone(error: BaseException) -> bool:
    """Whether a request failed because the server's end was closed or gone (refused, reset,
    closed mid-answer), not because it was slow to answer."""
    return isinstance(error, httpx.TransportError) and not isinstance(error, httpx.TimeoutException)


class RunStream:
    """One open RunSSE response, read frame by frame."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self._reader = EnvelopeReader()
        self._pending: list[Envelope] = []
        self._chunks: AsyncIterator[bytes] = response.aiter_raw()
        self.raw = bytearray()

    async def next_envelope(self, timeout: float = 5.0) -> Envelope | None:
        """The next envelope, or None when the body ended."""
        while not self._pending:
            try:
                chunk = await asyncio.wait_for(anext(self._chunks), timeout)
            except StopAsyncIteration:
                self._reader.close()
                return None
            self.raw += chunk
            self._pending.extend(self._reader.feed(chunk))
        return self._pending.pop(0)

    async def read_to_end(self, timeout: float = 5.0) -> StreamResult:
        """Every frame until the EndStream, then check that the body ends there."""
        result = StreamResult()
        while (envelope := await self.next_envelope(timeout)) is not None:
            if envelope.is_end_stream:
                result.end = json.loads(envelope.payload)
                trailing = await self.next_envelope(timeout)
                assert trailing is None, "a frame followed the EndStream"
                break
            result.messages.append(agent.AgentServerMessage.FromString(envelope.payload))
        result.raw = bytes(self.raw)
        return result

    async def aclose(self) -> None:
        await self.response.aclose()


class AppendAnswer(Protocol):
    """What ``CursorSession`` reads of an append's answer (httpx's response, or a stand-in)."""

    @property
    def status_code(self) -> int: ...

    @property
    def text(self) -> str: ...


class RunBody(Protocol):
    """What ``CursorSession`` reads of an open run: its envelopes, then it closes it."""

    async def next_envelope(self, timeout: float = 5.0) -> Envelope | None: ...

    async def aclose(self) -> None: ...


class EditorClient(Protocol):
    """What ``CursorSession`` uses of its client: ``FakeCursor`` (RunSSE and BidiAppend over
    HTTP/1.1), ``H2Cursor`` (one Run stream over HTTP/2) or a benchmark's own."""

    async def open_run_sse(self, request_id: str) -> RunBody: ...

    async def append(
        self,
        request_id: str,
        seqno: int,
        message: agent.AgentClientMessage,
        *,
        headers: Mapping[str, str] | None = None,
    ) -> AppendAnswer: ...


class FakeCursor:
    """The client half of Cursor's agent protocol against one server."""

    def __init__(self, base_url: str, headers: Mapping[str, str] | None = None) -> None:
        """``headers`` go on every request (``x-cursor-client-version``, say)."""
        self.client = httpx.AsyncClient(base_url=base_url, timeout=10.0, headers=headers)

    async def aclose(self) -> None:
        await self.client.aclose()

    async def open_run_sse(
        self, request_id: str, *, enveloped: bool = True, gzipped: bool = False
    ) -> RunStream:
        payload = agent.BidiRequestId(request_id=request_id).SerializeToString()
        body, headers = frame_body(payload, enveloped=enveloped, gzipped=gzipped)
        request = self.client.build_request("POST", RUN_SSE, content=body, headers=headers)
        response = await self.client.send(request, stream=True)
        return RunStream(response)

    async def post_run_sse_raw(self, body: bytes, headers: Mapping[str, str]) -> httpx.Response:
        """``body`` as sent; a Connect content type unless ``headers`` name another."""
        sent = {"content-type": "application/proto", **headers}
        return await self.client.post(RUN_SSE, content=body, headers=sent)

    async def append(
        self,
        request_id: str,
        seqno: int,
        message: agent.AgentClientMessage,
        *,
        enveloped: bool = False,
        gzipped: bool = False,
        headers: Mapping[str, str] | None = None,
    ) -> httpx.Response:
        body, base_headers = frame_body(
            bidi_append_body(request_id, seqno, message), enveloped=enveloped, gzipped=gzipped
        )
        return await self.client.post(
            BIDI_APPEND, content=body, headers={**base_headers, **(headers or {})}
        )

    async def append_raw(
        self, body: bytes, headers: Mapping[str, str] | None = None
    ) -> httpx.Response:
        return await self.client.post(
            BIDI_APPEND,
            content=body,
            headers={"content-type": "application/proto", **(headers or {})},
        )


def user_turn_message(
    text: str,
    model_id: str,
    *,
    conversation_id: str = "conv-1",
    message_id: str = "msg-1",
    mode: agent.AgentMode = agent.AGENT_MODE_AGENT,
    request_context: agent.RequestContext | None = None,
    conversation_state: agent.ConversationStateStructure | None = None,
) -> agent.AgentClientMessage:
    """A RunRequest as the editor sends it for a typed message (in Agent mode unless ``mode``
    says otherwise); ``conversation_state`` is the client's last checkpoint, if any."""
    user = agent.UserMessage(text=text, message_id=message_id, mode=mode)
    request = agent.AgentRunRequest(
        conversation_id=conversation_id,
        conversation_state=conversation_state,
        action=agent.ConversationAction(
            user_message_action=agent.UserMessageAction(
                user_message=user, request_context=request_context
            )
        ),
        requested_model=agent.RequestedModel(model_id=model_id),
    )
    return agent.AgentClientMessage(run_request=request)


def resume_message(
    model_id: str,
    *,
    conversation_id: str,
    conversation_state: agent.ConversationStateStructure,
) -> agent.AgentClientMessage:
    """A RunRequest that resumes the conversation from ``conversation_state`` (no new user
    message): ``ConversationAction.resume_action``, as the editor sends after a reconnect."""
    request = agent.AgentRunRequest(
        conversation_id=conversation_id,
        conversation_state=conversation_state,
        action=agent.ConversationAction(resume_action=agent.ResumeAction()),
        requested_model=agent.RequestedModel(model_id=model_id),
    )
    return agent.AgentClientMessage(run_request=request)


def kv_ack(kv_id: int, error: str | None = None) -> agent.AgentClientMessage:
    result = (
        agent.SetBlobResult(error=agent.Error(message=error)) if error else agent.SetBlobResult()
    )
    return agent.AgentClientMessage(
        kv_client_message=agent.KvClientMessage(id=kv_id, set_blob_result=result)
    )


@dataclass
class TurnLog:
    """Everything one run showed the client, in order, plus the client's blob store."""

    messages: list[agent.AgentServerMessage] = field(default_factory=list)
    # perf_counter() when each message was read (benchmarks time the frames with it)
    received_at: list[float] = field(default_factory=list)
    # The EndStream's JSON as decoded (``{}``, or Connect's ``error``: code, message, details).
    end: dict[str, Any] | None = None
    blobs: dict[bytes, bytes] = field(default_factory=dict)
    # The RunSSE stream broke before its EndStream (the server died): what the editor keeps is
    # then its last checkpoint and its blobs, to resume with.
    dropped: bool = False
    # The client ended the turn itself: nothing visible came for ``visible_silence_cap_s``.
    stalled: bool = False

    def kinds(self) -> list[str]:
        """One label per frame: the AgentServerMessage variant, or the update kind."""
        out = []
        for m in self.messages:
            variant = m.WhichOneof("message")
            if variant == "interaction_update":
                out.append(m.interaction_update.WhichOneof("message") or "?")
            elif variant == "kv_server_message":
                out.append("kv_" + (m.kv_server_message.WhichOneof("message") or "?"))
            else:
                out.append(variant or "?")
        return out

    def checkpoints(self) -> list[agent.ConversationStateStructure]:
        return [
            m.conversation_checkpoint_update
            for m in self.messages
            if m.HasField("conversation_checkpoint_update")
        ]


def final_text(log: TurnLog) -> str:
    """The text of the run's last model call: the text deltas after its last tool card."""
    texts: list[str] = []
    for message in log.messages:
        update = message.interaction_update
        if update.HasField("tool_call_completed"):
            texts = []
        elif update.HasField("text_delta"):
            texts.append(update.text_delta.text)
    return "".join(texts)


# ---- the editor's side of the tools ----


def updates(log: TurnLog, kind: str) -> list[Any]:
    """Every ``interaction_update`` of ``kind`` the client received, in order."""
    return [
        getattr(m.interaction_update, kind)
        for m in log.messages
        if m.interaction_update.HasField(kind)
    ]


def queries(log: TurnLog) -> list[agent.InteractionQuery]:
    """Every interaction query the client received, in order."""
    return [m.interaction_query for m in log.messages if m.HasField("interaction_query")]


def workspace_path(workspace: Path, path: str) -> Path:
    """Where a path the server names lives: an absolute path inside the workspace as is,
    anything else (``/a.txt`` included) relative to the workspace root."""
    candidate = Path(path)
    if candidate.is_absolute() and candidate.is_relative_to(workspace):
        return candidate
    return workspace / path.lstrip("/")


def _expand_braces(pattern: str) -> list[str]:
    """``src/*.{js,ts}`` -> ``src/*.js``, ``src/*.ts`` (one level per brace, recursively)."""
    start = pattern.find("{")
    end = pattern.find("}", start)
    if start < 0 or end < 0:
        return [pattern]
    head, options, tail = pattern[:start], pattern[start + 1 : end], pattern[end + 1 :]
    return [x for option in options.split(",") for x in _expand_braces(head + option + tail)]


def glob_matches(relative: str, glob: str) -> bool:
    """ripgrep's ``--glob``: a pattern without ``/`` matches the file name, one with ``/`` the
    path from the search root; ``**/`` also matches no directory at all."""
    for pattern in _expand_braces(glob):
        if "/" not in pattern.rstrip("/"):
            if fnmatch.fnmatchcase(relative.rsplit("/", 1)[-1], pattern):
                return True
            continue
        variants = {pattern.lstrip("/"), pattern.lstrip("/").replace("**/", "")}
        if any(fnmatch.fnmatchcase(relative, variant) for variant in variants):
            return True
    return False


def _page(entries: list[Any], args: agent.GrepArgs) -> tuple[list[Any], bool]:
    """``offset`` then ``head_limit`` applied to the entries; True when entries were cut."""
    start = args.offset if args.HasField("offset") else 0
    kept = entries[start:]
    if args.HasField("head_limit") and args.head_limit < len(kept):
        return kept[: args.head_limit], True
    return kept, start > 0 and bool(entries)


def grep_workspace(workspace: Path, args: agent.GrepArgs) -> agent.GrepResult:
    """Run a GrepArgs over the workspace as the editor does with ripgrep, in Python: files in
    path order, paths relative to the workspace, results under the workspace root. An empty
    pattern lists every file the glob selects (that is how Glob arrives)."""
    flags = re.IGNORECASE if args.case_insensitive else 0
    try:
        regex = re.compile(args.pattern, flags)
    except re.error as exc:
        return agent.GrepResult(error=agent.GrepError(error=f"regex parse error: {exc}"))
    base = workspace_path(workspace, args.path) if args.path else workspace
    if not base.exists():
        return agent.GrepResult(error=agent.GrepError(error=f"path not found: {args.path}"))
    candidates = [base] if base.is_file() else sorted(p for p in base.rglob("*") if p.is_file())
    mode = args.output_mode or "content"
    before = args.context if args.HasField("context") else args.context_before
    after = args.context if args.HasField("context") else args.context_after
    file_matches: list[agent.GrepFileMatch] = []
    counts: list[agent.GrepFileCount] = []
    total_lines = 0
    for path in candidates:
        relative = path.relative_to(workspace).as_posix()
        within = path.relative_to(base).as_posix() if base.is_dir() else path.name
        if args.glob and not glob_matches(within, args.glob):
            continue
        try:
            lines = path.read_text().splitlines()
        except (UnicodeDecodeError, OSError):
            continue  # binary or unreadable: ripgrep skips it too
        total_lines += len(lines)
        if not args.pattern:
            file_matches.append(agent.GrepFileMatch(file=relative))
            counts.append(agent.GrepFileCount(file=relative, count=len(lines)))
            continue
        hits = [n for n, line in enumerate(lines) if regex.search(line)]
        if not hits:
            continue
        shown = sorted(
            {k for n in hits for k in range(max(n - before, 0), min(n + after + 1, len(lines)))}
        )
        matches = [
            agent.GrepContentMatch(
                line_number=n + 1, content=lines[n], is_context_line=n not in hits
            )
            for n in shown
        ]
        file_matches.append(agent.GrepFileMatch(file=relative, matches=matches))
        counts.append(agent.GrepFileCount(file=relative, count=len(hits)))
    union = agent.GrepUnionResult()
    if mode == "files_with_matches":
        files, cut = _page([m.file for m in file_matches], args)
        union.files.CopyFrom(
            agent.GrepFilesResult(files=files, total_files=len(file_matches), client_truncated=cut)
        )
    elif mode == "count":
        kept, cut = _page(counts, args)
        union.count.CopyFrom(
            agent.GrepCountResult(
                counts=kept,
                total_files=len(counts),
                total_matches=sum(c.count for c in counts),
                client_truncated=cut,
            )
        )
    else:
        flat = [(m.file, line) for m in file_matches for line in m.matches]
        kept_lines, cut = _page(flat, args)
        grouped: dict[str, list[agent.GrepContentMatch]] = {}
        for file, line in kept_lines:
            grouped.setdefault(file, []).append(line)
        union.content.CopyFrom(
            agent.GrepContentResult(
                matches=[agent.GrepFileMatch(file=f, matches=ms) for f, ms in grouped.items()],
                total_lines=total_lines,
                total_matched_lines=sum(1 for _, line in flat if not line.is_context_line),
                client_truncated=cut,
            )
        )
    if args.HasField("head_limit"):
        getattr(union, mode_field(mode)).head_limit_applied = args.head_limit
    if args.HasField("offset"):
        getattr(union, mode_field(mode)).offset_applied = args.offset
    success = agent.GrepSuccess(pattern=args.pattern, path=args.path, output_mode=mode)
    success.workspace_results[str(workspace)].CopyFrom(union)
    return agent.GrepResult(success=success)


def lint_workspace(workspace: Path, args: agent.DiagnosticsArgs) -> agent.DiagnosticsResult:
    """A fake linter: each line of the file holding ``FIXME`` is a warning at its column."""
    target = workspace_path(workspace, args.path)
    if not target.is_file():
        return agent.DiagnosticsResult(file_not_found=agent.DiagnosticsFileNotFound(path=args.path))
    success = agent.DiagnosticsSuccess(path=args.path)
    for number, line in enumerate(target.read_text().splitlines(), 1):
        column = line.find("FIXME")
        if column >= 0:
            at = agent.Position(line=number, column=column + 1)
            success.diagnostics.add(
                severity=agent.DIAGNOSTIC_SEVERITY_WARNING,
                range=agent.Range(start=at, end=at),
                message="unfinished work",
                source="fakelint",
            )
    success.total_diagnostics = len(success.diagnostics)
    return agent.DiagnosticsResult(success=success)


def mode_field(mode: str) -> str:
    """The GrepUnionResult field of an output mode."""
    return {"files_with_matches": "files", "count": "count"}.get(mode, "content")


@dataclass
class RunningShell:
    """A command the fake editor started; ``forwarding`` is False once it is backgrounded (its
    later output stays here, as the editor writes it to the terminal file)."""

    process: asyncio.subprocess.Process
    forwarding: bool = True
    later_output: list[str] = field(default_factory=list)
    pumps: list[asyncio.Task[None]] = field(default_factory=list)
    transcript: list[str] = field(default_factory=list)  # all its output, in order
    terminal_file: Path | None = None  # where its output goes once backgrounded

    def stop(self) -> None:
        """Kill the command and everything it started (its own process group)."""
        self.forwarding = False
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)

    async def finished(self) -> int:
        """The exit status once both output streams are drained (a signal is 128 + its number)."""
        await asyncio.gather(*self.pumps)
        code = await self.process.wait()
        return 128 - code if code < 0 else code


def write_terminal_header(pid: int, cwd: Path, command: str) -> str:
    """The metadata a terminal file opens with, between two ``---`` lines."""
    return f"---\npid: {pid}\ncwd: {cwd}\ncommand: {command}\n---\n"


async def write_terminal_footer(path: Path, finished: asyncio.Task[int], started: float) -> None:
    """Once the command ended: its exit record, a last ``---`` block holding ``exit_code``."""
    code = await finished
    elapsed_ms = round((time.monotonic() - started) * 1000)
    text = path.read_text()
    lead = "" if not text or text.endswith("\n") else "\n"
    with path.open("a") as terminal:
        terminal.write(f"{lead}---\nexit_code: {code}\nelapsed_ms: {elapsed_ms}\n---\n")


def reversed_order(batch: list[agent.ExecServerMessage]) -> list[agent.ExecServerMessage]:
    return list(reversed(batch))


QueryAnswer = Callable[[agent.InteractionQuery], agent.InteractionResponse | None]
"""How the fake user answers an interaction query: the response (its id is set by the
session), or None to hold it unanswered."""


@dataclass
class FakeMcpServer:
    """One MCP server the fake editor hosts: its tools (name -> description), canned results
    by tool name (an ``McpResult``, or a function of the call's arguments giving one), its
    resources by URI, and, when ``error`` is set, a server that failed to start (listed with
    that error and no tools)."""

    identifier: str
    tools: dict[str, str] = field(default_factory=dict)
    results: dict[str, Any] = field(default_factory=dict)
    resources: dict[str, agent.ReadMcpResourceSuccess] = field(default_factory=dict)
    error: str | None = None

    def definitions(self) -> list[agent.McpToolDefinition]:
        return [
            agent.McpToolDefinition(
                name=f"mcp-{self.identifier}-{name}",
                provider_identifier=f"provider-{self.identifier}",
                tool_name=name,
                description=description,
                input_schema_json=json.dumps(
                    {"type": "object", "properties": {"q": {"type": "string"}}}
                ),
            )
            for name, description in self.tools.items()
        ]

    def state(self) -> agent.McpStateServer:
        server = agent.McpStateServer(
            server_name=self.identifier.title(), server_identifier=self.identifier
        )
        if self.error is not None:
            server.status = "error"
            server.error_message = self.error
        else:
            server.tools.extend(self.definitions())
        return server


def answer_mcp(
    servers: list[FakeMcpServer], exec_message: agent.ExecServerMessage
) -> dict[str, Any]:
    """The fake editor's answer to an MCP exec, as ``ExecClientMessage`` keyword arguments."""
    by_id = {server.identifier: server for server in servers}
    variant = exec_message.WhichOneof("message")
    if variant == "mcp_state_exec_args":
        wanted = list(exec_message.mcp_state_exec_args.server_identifiers)
        states = [s.state() for s in servers if not wanted or s.identifier in wanted]
        success = agent.McpStateSuccess(servers=states)
        return {"mcp_state_exec_result": agent.McpStateExecResult(success=success)}
    if variant == "mcp_args":
        args = exec_message.mcp_args
        server = by_id.get(args.server_identifier)
        if server is None:
            missing = agent.McpServerNotFound(
                name=args.server_identifier, available_servers=list(by_id)
            )
            return {"mcp_result": agent.McpResult(server_not_found=missing)}
        if server.error is not None:  # a server that failed to start answers with its error
            return {"mcp_result": agent.McpResult(error=agent.McpError(error=server.error))}
        result = server.results.get(args.tool_name)
        if result is None:
            missing_tool = agent.McpToolNotFound(
                name=args.tool_name, available_tools=list(server.tools)
            )
            return {"mcp_result": agent.McpResult(tool_not_found=missing_tool)}
        if callable(result):
            result = result({k: json_format.MessageToDict(v) for k, v in args.args.items()})
        return {"mcp_result": result}
    args_r = exec_message.read_mcp_resource_exec_args
    server = by_id.get(args_r.server)
    resource = server.resources.get(args_r.uri) if server is not None else None
    if resource is None:
        found = agent.ReadMcpResourceNotFound(uri=args_r.uri)
        return {"read_mcp_resource_exec_result": agent.ReadMcpResourceExecResult(not_found=found)}
    return {"read_mcp_resource_exec_result": agent.ReadMcpResourceExecResult(success=resource)}


MCP_EXECS = ("mcp_state_exec_args", "mcp_args", "read_mcp_resource_exec_args")


def hold_queries(query: agent.InteractionQuery) -> None:
    """Never answer (the user looks away): the query stays pending."""
    return None


def answer_questions(
    answers: Mapping[str, str | list[str]], *, reject: str | None = None
) -> QueryAnswer:
    """Answer AskQuestion: question id -> typed words (a str) or chosen option ids (a list);
    with ``reject``, decline with that reason instead."""

    def answer(query: agent.InteractionQuery) -> agent.InteractionResponse | None:
        assert query.WhichOneof("query") == "ask_question_interaction_query", query
        if reject is not None:
            result = agent.AskQuestionResult(rejected=agent.AskQuestionRejected(reason=reject))
        else:
            success = agent.AskQuestionSuccess()
            for question in query.ask_question_interaction_query.args.questions:
                chosen = answers[question.id]
                item = success.answers.add(question_id=question.id)
                if isinstance(chosen, str):
                    item.freeform_text = chosen
                else:
                    item.selected_option_ids.extend(chosen)
            result = agent.AskQuestionResult(success=success)
        response = agent.AskQuestionInteractionResponse(result=result)
        return agent.InteractionResponse(ask_question_interaction_response=response)

    return answer


# Approval queries: the query's field -> the response's field and message (each has an
# ``Approved`` and a ``Rejected{reason}`` of its own).
_APPROVALS: dict[str, tuple[str, Any]] = {
    "web_search_request_query": ("web_search_request_response", agent.WebSearchRequestResponse),
    "web_fetch_request_query": ("web_fetch_request_response", agent.WebFetchRequestResponse),
}


def approve_queries(*, reject: str | None = None) -> QueryAnswer:
    """Answer every approval query (WebSearch, WebFetch) as the user would: approve it, or
    with ``reject``, refuse it with that reason."""

    def answer(query: agent.InteractionQuery) -> agent.InteractionResponse | None:
        variant = query.WhichOneof("query")
        assert variant in _APPROVALS, query
        field, response_type = _APPROVALS[variant]
        if reject is None:
            response = response_type(approved=response_type.Approved())
        else:
            response = response_type(rejected=response_type.Rejected(reason=reject))
        return agent.InteractionResponse(**{field: response})

    return answer


def approve_images(description: str = "") -> QueryAnswer:
    """Approve every GenerateImage query, as the user pressing "Generate"; a ``description``
    stands for the user's edit of the model's description (empty: kept as it was)."""

    def answer(query: agent.InteractionQuery) -> agent.InteractionResponse | None:
        assert query.WhichOneof("query") == "generate_image_request_query", query
        approved = agent.GenerateImageRequestResponse.Approved(description=description)
        response = agent.GenerateImageRequestResponse(approved=approved)
        return agent.InteractionResponse(generate_image_request_response=response)

    return answer


def answer_questions_later(query: agent.InteractionQuery) -> agent.InteractionResponse:
    """Answer an AskQuestion that runs with ``run_async`` as the editor does: ``async`` at once
    (the answers come later, in a run of their own)."""
    assert query.ask_question_interaction_query.args.run_async, query
    # ``async`` is a Python keyword: the field goes in by name, through the message's **kwargs.
    fields: dict[str, Any] = {"async": agent.AskQuestionAsync()}
    result = agent.AskQuestionResult(**fields)
    response = agent.AskQuestionInteractionResponse(result=result)
    return agent.InteractionResponse(ask_question_interaction_response=response)


def answer_switch_mode(*, reject: str | None = None) -> QueryAnswer:
    """Approve a SwitchMode, or with ``reject`` decline it with that reason."""

    def answer(query: agent.InteractionQuery) -> agent.InteractionResponse:
        assert query.WhichOneof("query") == "switch_mode_request_query", query
        Response = agent.SwitchModeRequestResponse
        if reject is None:
            response = Response(approved=Response.Approved())
        else:
            response = Response(rejected=Response.Rejected(reason=reject))
        return agent.InteractionResponse(switch_mode_request_response=response)

    return answer


FetchAnswer = Callable[[agent.FetchArgs], Awaitable[agent.FetchResult]]
"""How the fake editor answers a WebFetch's ``fetch_args``."""


async def fetch_over_http(args: agent.FetchArgs) -> agent.FetchResult:
    """Fetch the page for real, as the editor does (any status is a page; no answer is an
    error)."""
    async with httpx.AsyncClient(timeout=5.0) as client:
        try:
            response = await client.get(args.url)
        except httpx.HTTPError as exc:
            return agent.FetchResult(error=agent.FetchError(url=args.url, error=repr(exc)))
    success = agent.FetchSuccess(
        url=args.url,
        content=response.text,
        status_code=response.status_code,
        content_type=response.headers.get("content-type", ""),
    )
    return agent.FetchResult(success=success)


def answer_create_plan(
    plan_uri: str = "file:///work/.cursor/plans/plan.md", *, error: str | None = None
) -> QueryAnswer:
    """Save a CreatePlan's plan at ``plan_uri``, or with ``error`` fail to."""

    def answer(query: agent.InteractionQuery) -> agent.InteractionResponse:
        assert query.WhichOneof("query") == "create_plan_request_query", query
        if error is None:
            result = agent.CreatePlanResult(plan_uri=plan_uri, success=agent.CreatePlanSuccess())
        else:
            result = agent.CreatePlanResult(error=agent.CreatePlanError(error=error))
        response = agent.CreatePlanRequestResponse(result=result)
        return agent.InteractionResponse(create_plan_request_response=response)

    return answer


def answer_by_kind(**answerers: QueryAnswer) -> QueryAnswer:
    """Answer each query with the answerer named by its variant (e.g.
    ``switch_mode_request_query=answer_switch_mode()``); any other query is held."""

    def answer(query: agent.InteractionQuery) -> agent.InteractionResponse | None:
        answerer = answerers.get(query.WhichOneof("query") or "", hold_queries)
        return answerer(query)

    return answer


def reject_images(reason: str) -> QueryAnswer:
    """Decline every GenerateImage query with ``reason``."""

    def answer(query: agent.InteractionQuery) -> agent.InteractionResponse | None:
        assert query.WhichOneof("query") == "generate_image_request_query", query
        rejected = agent.GenerateImageRequestResponse.Rejected(reason=reason)
        response = agent.GenerateImageRequestResponse(rejected=rejected)
        return agent.InteractionResponse(generate_image_request_response=response)

    return answer


# What a client that caps silence counts as activity: text, thinking, a tool's card, an exec
# or its abort, KV. Heartbeats, token counts and checkpoints do not count.
VISIBLE_UPDATES = frozenset(
    {
        "text_delta",
        "thinking_delta",
        "thinking_completed",
        "partial_tool_call",
        "tool_call_delta",
        "tool_call_started",
        "tool_call_completed",
    }
)
VISIBLE_MESSAGES = frozenset(
    {"exec_server_message", "exec_server_control_message", "kv_server_message"}
)


def is_visible(message: agent.AgentServerMessage) -> bool:
    variant = message.WhichOneof("message")
    if variant == "interaction_update":
        return message.interaction_update.WhichOneof("message") in VISIBLE_UPDATES
    return variant in VISIBLE_MESSAGES


class CursorSession:
    """The client side of one request id, like the editor.

    Every KV SET is checked (SHA-256), kept in the client's blob store (``log.blobs``) and
    acknowledged by its own task, so the receive loop never waits for an ack's HTTP round trip;
    seqnos are taken in receive order and the server orders by them. A KV GET is answered from
    that store the same way (no data when the blob is unknown).

    With a ``workspace``, execs are run against it: Read, Write, Grep and Glob (Glob arrives as
    grep args), and Shell (a real subprocess in the workspace whose stdout/stderr stream back as
    they come, ending with exit, or backgrounded past its block-until time). Execs are collected
    until ``batch_size`` wait, then answered one after the other in ``answer_order`` (reverse
    by default); an ``exec_server_control_message.abort`` stops the one it names. With a
    ``terminals_folder``, a backgrounded shell's output goes on into ``<shell_id>.txt`` there
    as Cursor's does: a ``---`` metadata header, the output, and once it exits a footer with
    ``exit_code``.
    """

    def __init__(
        self,
        cursor: EditorClient,
        request_id: str,
        *,
        workspace: Path | None = None,
        batch_size: int = 1,
        answer_order: Callable[
            [list[agent.ExecServerMessage]], list[agent.ExecServerMessage]
        ] = reversed_order,
        blobs: Mapping[bytes, bytes] | None = None,
        answer_query: QueryAnswer = hold_queries,
        terminals_folder: Path | None = None,
        answer_fetch: FetchAnswer | None = None,
        parent_headers: Mapping[str, str] | None = None,
        run_subagents: bool = False,
        subagent_headers: Mapping[str, str] | None = None,
        mcp_servers: list[FakeMcpServer] | None = None,
        shell_gate: asyncio.Event | None = None,
        visible_silence_cap_s: float | None = None,
    ) -> None:
        """``workspace``: where execs run (none: execs stay unanswered). ``blobs``: what the
        client's blob store already holds (from earlier turns), as is (unchecked).
        ``answer_query``: the user's answer to each interaction query (default: none).
        ``terminals_folder``: where a backgrounded shell's terminal file is written
        (``write_terminal_header``); inside the workspace, so Read finds it.
        ``answer_fetch``: how a WebFetch's ``fetch_args`` is answered (none: never).
        ``parent_headers``: sent on every BidiAppend (a subagent's link to its parent).
        ``run_subagents``: a Task's ``subagent_args`` is answered as the editor does: a child
        run of its own (``subagents``), whose final message is the ``SubagentSuccess``;
        ``subagent_headers`` go on its appends too (another ``authorization``, say).
        ``mcp_servers``: the MCP servers that answer MCP execs (none: never answered).
        ``shell_gate``: a Shell exec announces its start, then waits for the event before its
        command runs, so a test decides when the command (and its result) happens.
        ``visible_silence_cap_s``: end the turn (``log.stalled``) after this long without
        visible activity (``is_visible``; heartbeats do not count), as some clients do."""
        self.visible_silence_cap_s = visible_silence_cap_s
        self.cursor = cursor
        self.request_id = request_id
        self.seqno = 0
        self.log = TurnLog(blobs=dict(blobs or {}))
        self.workspace = workspace
        self.batch_size = batch_size
        self.answer_order = answer_order
        self.answer_query = answer_query
        self.terminals_folder = terminals_folder
        self.answer_fetch = answer_fetch
        self.parent_headers = dict(parent_headers or {})
        self.run_subagents = run_subagents
        self.subagent_headers = dict(subagent_headers or {})
        self.subagents: list[CursorSession] = []  # the child runs started for Tasks
        self.background_tasks: list[agent.SubagentArgs] = []  # background Tasks, answered
        self.mcp_servers = mcp_servers
        self.shell_gate = shell_gate
        self.rejected: list[int] = []  # KV ids answered with a SetBlobResult error
        self.background_shells: dict[int, RunningShell] = {}  # by shell_id
        # Foreground Tasks and Shells the user may move to the background
        # (``force_background_*_args``), by tool call id: set the event to move it.
        self._movable: dict[str, asyncio.Event] = {}
        self.moved_children: list[asyncio.Task[TurnLog]] = []  # child runs moved to background
        self._waiting_execs: list[agent.ExecServerMessage] = []
        self._exec_tasks: dict[int, asyncio.Task[None]] = {}  # by exec wire id
        self._work: set[asyncio.Task[Any]] = set()  # exec answers and output pumps
        self._sends: set[asyncio.Task[None]] = set()
        self._gone: list[tuple[str, int]] = []  # appends answered 404: (variant, seqno)
        self._failures: list[BaseException] = []
        self._converse_task: asyncio.Task[None] | None = None
        self._next_shell_id = 1

    # ---- sending ----

    def _take_seqno(self) -> int:
        seqno = self.seqno
        self.seqno += 1
        return seqno

    async def send(self, message: agent.AgentClientMessage) -> AppendAnswer:
        """Append ``message`` now and check it was accepted (200)."""
        response = await self.cursor.append(
            self.request_id, self._take_seqno(), message, headers=self.parent_headers
        )
        assert response.status_code == 200, (message.WhichOneof("message"), response.text)
        return response

    def _dispatch(self, message: agent.AgentClientMessage, label: str) -> asyncio.Task[None]:
        """Append ``message`` from a task of its own; its seqno is taken now, synchronously."""
        seqno = self._take_seqno()
        return self._spawn(self._post(seqno, message, label), self._sends)

    async def _post(self, seqno: int, message: agent.AgentClientMessage, label: str) -> None:
        response = await self.cursor.append(
            self.request_id, seqno, message, headers=self.parent_headers
        )
        if response.status_code == 404:
            # The run may have ended meanwhile; ``run`` decides whether that was allowed.
            self._gone.append((label, seqno))
            return
        assert response.status_code == 200, (label, seqno, response.text)

    async def flush(self) -> None:
        """Wait until every append dispatched so far got its answer."""
        await asyncio.gather(*self._sends, return_exceptions=True)

    def _spawn(self, coroutine: Coroutine[Any, Any, Any], group: set[Any]) -> asyncio.Task[Any]:
        task = asyncio.create_task(coroutine)
        group.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        if task.cancelled():
            return
        error = task.exception()
        if error is None:
            return
        self._failures.append(error)
        if task in self._sends and _server_gone(error):
            # An append that found the server gone: the stream says how the run ended (a
            # stopping server still sends its EndStream on it), so reading goes on, as the
            # editor's does.
            return
        # Any other failure in a background task fails the run at once, not at its timeout.
        if self._converse_task is not None and not self._converse_task.done():
            self._converse_task.cancel()

    # ---- one run ----

    async def run(
        self,
        first: agent.AgentClientMessage,
        *,
        hold_ack: Callable[[int], bool] = lambda kv_id: False,
        reject_set: Callable[[int], bool] = lambda kv_id: False,
        timeout: float = 10.0,
        total_timeout: float = 30.0,
    ) -> TurnLog:
        """Open RunSSE, send ``first``, and answer until the EndStream; then stop whatever still
        runs (unanswered execs, backgrounded commands) and wait for every append in flight.

        A KV SET whose id ``reject_set`` selects is answered with a SetBlobResult error; one
        ``hold_ack`` selects is stored but not acknowledged (send its ack with ``send``).
        An append answered 404 (the run had ended) is an error unless it is an exec's trailing
        ``stream_close`` or the run ended with an error.
        """
        stream = await self.cursor.open_run_sse(self.request_id)
        converse = asyncio.create_task(self._converse(stream, first, hold_ack, reject_set, timeout))
        self._converse_task = converse
        try:
            async with asyncio.timeout(total_timeout):
                try:
                    await converse
                except asyncio.CancelledError:
                    if not (self._failures and converse.cancelled()):
                        raise
        finally:
            if not converse.done():
                converse.cancel()
                await asyncio.wait([converse])
            await self._settle()
            await stream.aclose()
        failures = self._failures
        ended_in_error = isinstance(self.log.end, dict) and "error" in self.log.end
        if (
            self.log.end is None
            and failures
            and all(isinstance(f, httpx.TransportError) for f in failures)
        ):
            self.log.dropped = True  # an append found the server gone before the stream did
        if self.log.dropped or ended_in_error:
            # Appends in flight when the server died fail to connect, as the editor's would.
            failures = [f for f in failures if not isinstance(f, httpx.TransportError)]
        if failures:
            raise failures[0]
        for label, seqno in self._gone:
            assert label == "stream_close" or ended_in_error, (
                f"append {seqno} ({label}) answered 404 but the run did not end with an error"
            )
        return self.log

    async def _settle(self, limit: float = 10.0) -> None:
        for task in self._exec_tasks.values():
            task.cancel()
        for shell in self.background_shells.values():
            shell.stop()
        async with asyncio.timeout(limit):
            await asyncio.gather(*self._work, return_exceptions=True)
            await asyncio.gather(*self._sends, return_exceptions=True)

    async def _converse(
        self,
        stream: RunBody,
        first: agent.AgentClientMessage,
        hold_ack: Callable[[int], bool],
        reject_set: Callable[[int], bool],
        timeout: float,
    ) -> None:
        await self.send(first)
        cap = self.visible_silence_cap_s
        loop = asyncio.get_running_loop()
        last_visible = loop.time()
        while True:
            wait = timeout
            if cap is not None:
                wait = max(0.001, min(timeout, cap - (loop.time() - last_visible)))
            try:
                envelope = await self._next_or_drop(stream, wait)
            except TimeoutError:
                if cap is None or loop.time() - last_visible < cap:
                    raise
                self.log.stalled = True  # the client gives the turn up, as its rule says
                return
            if envelope is None:
                break
            if envelope.is_end_stream:
                self.log.end = json.loads(envelope.payload)
                break
            message = agent.AgentServerMessage.FromString(envelope.payload)
            self.log.messages.append(message)
            self.log.received_at.append(time.perf_counter())
            if is_visible(message):
                last_visible = loop.time()
            self._on_message(message, hold_ack, reject_set)

    def _on_message(
        self,
        message: agent.AgentServerMessage,
        hold_ack: Callable[[int], bool],
        reject_set: Callable[[int], bool],
    ) -> None:
        """Answer one server message as the editor does (KV, queries, aborts, execs)."""
        if message.kv_server_message.HasField("set_blob_args"):
            kv = message.kv_server_message
            data = kv.set_blob_args.blob_data
            assert hashlib.sha256(data).digest() == kv.set_blob_args.blob_id
            self.log.blobs[kv.set_blob_args.blob_id] = data
            if reject_set(kv.id):
                self.rejected.append(kv.id)
                self._dispatch(kv_ack(kv.id, error="the test client refused this blob"), "kv")
            elif not hold_ack(kv.id):
                self._dispatch(kv_ack(kv.id), "kv")
        if message.kv_server_message.HasField("get_blob_args"):
            kv = message.kv_server_message
            stored = self.log.blobs.get(kv.get_blob_args.blob_id)
            result = agent.GetBlobResult(blob_data=stored)
            kv_reply = agent.KvClientMessage(id=kv.id, get_blob_result=result)
            self._dispatch(agent.AgentClientMessage(kv_client_message=kv_reply), "kv")
        if message.HasField("interaction_query"):
            response = self.answer_query(message.interaction_query)
            if response is not None:
                reply = agent.InteractionResponse()
                reply.CopyFrom(response)
                reply.id = message.interaction_query.id
                self._dispatch(agent.AgentClientMessage(interaction_response=reply), "query")
        if message.exec_server_control_message.HasField("abort"):
            task = self._exec_tasks.get(message.exec_server_control_message.abort.id)
            if task is not None:
                task.cancel()
        if message.HasField("exec_server_message"):
            self._on_exec(message.exec_server_message)

    async def _next_or_drop(self, stream: RunBody, timeout: float) -> Envelope | None:
        """The next envelope; None, with ``log.dropped`` set, when the connection broke (the
        server process died) or the body ended without an EndStream."""
        try:
            envelope = await stream.next_envelope(timeout)
        except httpx.TransportError:
            envelope = None
        if envelope is None:
            self.log.dropped = True
        return envelope

    def _on_exec(self, exec_message: agent.ExecServerMessage) -> None:
        """A WebFetch's fetch goes to ``answer_fetch``; the others wait for their batch."""
        force = exec_message.WhichOneof("message")
        if force in ("force_background_subagent_args", "force_background_shell_args"):
            self._spawn(self._force_background(exec_message, force), self._work)
            return
        if exec_message.HasField("fetch_args"):
            if self.answer_fetch is not None:
                self._spawn(self._fetch(exec_message), self._work)
            return
        if exec_message.HasField("subagent_args"):
            if self.run_subagents:
                task = self._spawn(self._subagent(exec_message), self._work)
                self._exec_tasks[exec_message.id] = task
            return
        if exec_message.WhichOneof("message") in MCP_EXECS:
            if self.mcp_servers is not None:
                self._spawn(self._mcp(exec_message), self._work)
            return
        if self.workspace is None:
            return
        self._waiting_execs.append(exec_message)
        if len(self._waiting_execs) >= self.batch_size:
            batch, self._waiting_execs = self._waiting_execs, []
            previous: asyncio.Task[None] | None = None
            for waiting in self.answer_order(batch):
                previous = self._spawn(self._answer_after(previous, waiting), self._work)
                self._exec_tasks[waiting.id] = previous

    async def _answer_after(
        self, previous: asyncio.Task[None] | None, exec_message: agent.ExecServerMessage
    ) -> None:
        """Answer after the previous exec of the batch finished (or was stopped)."""
        if previous is not None:
            await asyncio.wait([previous])
        await self._answer(exec_message)

    # ---- answering execs ----

    async def _reply(self, exec_message: agent.ExecServerMessage, **result: Any) -> None:
        reply = agent.ExecClientMessage(id=exec_message.id, exec_id=exec_message.exec_id, **result)
        task = self._dispatch(agent.AgentClientMessage(exec_client_message=reply), "exec")
        await asyncio.shield(task)

    def movable(self, tool_call_id: str) -> bool:
        """Whether the Task or Shell ``tool_call_id`` is running here and can be moved to the
        background: before that the editor answers a move NOT_FOUND, as Cursor does."""
        return tool_call_id in self._movable

    async def _force_background(self, exec_message: agent.ExecServerMessage, field: str) -> None:
        """The user's "move to background", as the editor carries it out: the running Task or
        Shell named is moved (its own exec then ends as a backgrounded one), else NOT_FOUND."""
        moved = self._movable.pop(getattr(exec_message, field).tool_call_id, None)
        if moved is not None:
            moved.set()
        if field == "force_background_shell_args":
            status: Any = (
                agent.FORCE_BACKGROUND_SHELL_STATUS_ACCEPTED
                if moved
                else agent.FORCE_BACKGROUND_SHELL_STATUS_NOT_FOUND
            )
            result: dict[str, Any] = {
                "force_background_shell_result": agent.ForceBackgroundShellResult(status=status)
            }
        else:
            status = (
                agent.FORCE_BACKGROUND_SUBAGENT_STATUS_ACCEPTED
                if moved
                else agent.FORCE_BACKGROUND_SUBAGENT_STATUS_NOT_FOUND
            )
            result = {
                "force_background_subagent_result": agent.ForceBackgroundSubagentResult(
                    status=status
                )
            }
        await self._reply(exec_message, **result)
        await self._close(exec_message)

    async def _close(self, exec_message: agent.ExecServerMessage) -> None:
        """The trailing stream_close, which may find the run already finished, as with Cursor."""
        close = agent.ExecClientControlMessage(
            stream_close=agent.ExecClientStreamClose(id=exec_message.id)
        )
        message = agent.AgentClientMessage(exec_client_control_message=close)
        await asyncio.shield(self._dispatch(message, "stream_close"))

    async def _fetch(self, exec_message: agent.ExecServerMessage) -> None:
        assert self.answer_fetch is not None
        result = await self.answer_fetch(exec_message.fetch_args)
        await self._reply(exec_message, fetch_result=result)
        await self._close(exec_message)

    async def _subagent(self, exec_message: agent.ExecServerMessage) -> None:
        """A Task as the editor runs it: a child run (its own RunSSE/BidiAppend, the parent
        headers on every append) in the workspace; its final message answers the Task. When
        the Task's exec is aborted, the child run is cancelled."""
        args = exec_message.subagent_args
        if args.run_in_background:
            # Started and answered at once, as the editor does; this fake runs no child for it
            # (its end comes as a ``background_task_completion_action`` the test sends).
            self.background_tasks.append(args)
            success = agent.SubagentSuccess(
                agent_id=f"background-{len(self.background_tasks)}",
                background_reason=agent.SUBAGENT_BACKGROUND_REASON_AGENT_REQUEST,
            )
            await self._reply(exec_message, subagent_result=agent.SubagentResult(success=success))
            await self._close(exec_message)
            return
        child = CursorSession(
            self.cursor,
            f"{self.request_id}.sub{exec_message.id}",
            workspace=self.workspace,
            answer_query=self.answer_query,
            terminals_folder=self.terminals_folder,
            parent_headers={
                "x-parent-request-id": self.request_id,
                "x-parent-agent-tool-call-id": exec_message.exec_id,
                **self.subagent_headers,
            },
        )
        self.subagents.append(child)
        agent_id = f"subagent-{len(self.subagents)}"
        first = user_turn_message(
            args.prompt, args.model_id, conversation_id=agent_id, message_id=f"{agent_id}-msg"
        )
        first.run_request.subagent_type_name = args.subagent_type or "generalPurpose"
        run = asyncio.create_task(child.run(first))
        moved = self._movable.setdefault(args.tool_call_id or exec_message.exec_id, asyncio.Event())
        waiting = asyncio.ensure_future(moved.wait())
        try:
            await asyncio.wait([run, waiting], return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            # Cancel the child and see it end, even if this task is cancelled again meanwhile.
            cancelling = asyncio.ensure_future(self._cancel_child(child, run))
            while not cancelling.done():
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.shield(cancelling)
            raise
        finally:
            waiting.cancel()
        if not run.done():
            # The user moved it to the background: the Task ends now, the child runs on.
            self.moved_children.append(run)
            success = agent.SubagentSuccess(
                agent_id=agent_id,
                background_reason=agent.SUBAGENT_BACKGROUND_REASON_USER_REQUEST,
            )
            await self._reply(exec_message, subagent_result=agent.SubagentResult(success=success))
            await self._close(exec_message)
            return
        self._movable.pop(args.tool_call_id or exec_message.exec_id, None)
        log = run.result()
        if isinstance(log.end, dict) and "error" in log.end:
            error = agent.SubagentError(agent_id=agent_id, error=json.dumps(log.end["error"]))
            result = agent.SubagentResult(error=error)
        else:
            success = agent.SubagentSuccess(agent_id=agent_id, final_message=final_text(log))
            result = agent.SubagentResult(success=success)
        await self._reply(exec_message, subagent_result=result)
        await self._close(exec_message)

    @staticmethod
    async def _cancel_child(child: CursorSession, run: asyncio.Task[TurnLog]) -> None:
        cancel = cancel_message("the parent's Task was aborted")
        await child.cursor.append(
            child.request_id, child._take_seqno(), cancel, headers=child.parent_headers
        )
        await asyncio.wait([run])

    async def _mcp(self, exec_message: agent.ExecServerMessage) -> None:
        assert self.mcp_servers is not None
        result = answer_mcp(self.mcp_servers, exec_message)
        if exec_message.HasField("mcp_args"):  # the user approves first, as the editor asks
            await self._reply(
                exec_message, mcp_result=agent.McpResult(approved=agent.McpApproved())
            )
        await self._reply(exec_message, **result)
        await self._close(exec_message)

    async def answer(self, exec_message: agent.ExecServerMessage) -> None:
        """Run one exec against the workspace now and answer it (outside ``run`` too)."""
        await self._answer(exec_message)

    async def _answer(self, exec_message: agent.ExecServerMessage) -> None:
        """Run one exec against the workspace and answer it, then close its stream."""
        assert self.workspace is not None
        variant = exec_message.WhichOneof("message")
        if variant == "read_args":
            await self._reply(exec_message, read_result=self._read(exec_message.read_args))
        elif variant == "write_args":
            await self._reply(exec_message, write_result=self._write(exec_message.write_args))
        elif variant == "grep_args":
            found = grep_workspace(self.workspace, exec_message.grep_args)
            await self._reply(exec_message, grep_result=found)
        elif variant == "delete_args":
            await self._reply(exec_message, delete_result=self._delete(exec_message.delete_args))
        elif variant == "diagnostics_args":
            lints = lint_workspace(self.workspace, exec_message.diagnostics_args)
            await self._reply(exec_message, diagnostics_result=lints)
        elif variant == "shell_stream_args":
            await self._run_shell(exec_message)
            return  # the shell closed its own stream
        else:
            raise AssertionError(
                f"this fake runs Read, Write, Delete, Grep, Glob, ReadLints and Shell only, "
                f"got {variant}"
            )
        await self._close(exec_message)

    def _write(self, args: agent.WriteArgs) -> agent.WriteResult:
        """Write ``file_bytes`` when set, else ``file_text`` as sent (no line-ending
        translation), creating folders as the editor does."""
        assert self.workspace is not None
        target = workspace_path(self.workspace, args.path)
        target.parent.mkdir(parents=True, exist_ok=True)
        data = args.file_bytes or args.file_text.encode()
        target.write_bytes(data)
        success = agent.WriteSuccess(
            path=args.path, lines_created=data.count(b"\n") + 1, file_size=len(data)
        )
        return agent.WriteResult(success=success)

    def _delete(self, args: agent.DeleteArgs) -> agent.DeleteResult:
        """Remove the file, as the editor does; a missing one is file_not_found."""
        assert self.workspace is not None
        target = workspace_path(self.workspace, args.path)
        if not target.is_file():
            return agent.DeleteResult(file_not_found=agent.DeleteFileNotFound(path=args.path))
        data = target.read_bytes()
        target.unlink()
        success = agent.DeleteSuccess(
            path=args.path, deleted_file=args.path, file_size=len(data), prev_content=data.decode()
        )
        return agent.DeleteResult(success=success)

    def _read(self, args: agent.ReadArgs) -> agent.ReadResult:
        """The file's text as stored (line endings included), or file_not_found; a file
        that is not UTF-8 comes back as its bytes (``data``), as the editor sends a binary
        file."""
        assert self.workspace is not None
        target = workspace_path(self.workspace, args.path)
        if not target.exists():
            return agent.ReadResult(file_not_found=agent.ReadFileNotFound(path=args.path))
        raw = target.read_bytes()
        try:
            text = raw.decode()
        except UnicodeDecodeError:
            success = agent.ReadSuccess(path=args.path, data=raw, file_size=len(raw))
            return agent.ReadResult(success=success)
        return agent.ReadResult(
            success=agent.ReadSuccess(
                path=args.path,
                content=text,
                total_lines=text.count("\n") + 1,
                file_size=len(text.encode()),
            )
        )

    async def _run_shell(self, exec_message: agent.ExecServerMessage) -> None:
        """start, then stdout/stderr as the command writes them, then exit; or, past the
        block-until time (``timeout``, 0: at once) or with ``is_background``, backgrounded."""
        assert self.workspace is not None
        args = exec_message.shell_stream_args
        cwd = (
            workspace_path(self.workspace, args.working_directory)
            if args.working_directory
            else self.workspace
        )
        await self._reply(
            exec_message, shell_stream=agent.ShellStream(start=agent.ShellStreamStart())
        )
        if self.shell_gate is not None:
            await self.shell_gate.wait()
        started = time.monotonic()
        process = await asyncio.create_subprocess_shell(
            args.command,
            cwd=cwd,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
        shell = RunningShell(process)
        assert process.stdout is not None and process.stderr is not None
        shell.pumps = [
            self._spawn(self._pump(exec_message, shell, process.stdout, "stdout"), self._work),
            self._spawn(self._pump(exec_message, shell, process.stderr, "stderr"), self._work),
        ]
        finished = self._spawn(shell.finished(), self._work)
        block_s = 0.0 if args.is_background else max(args.timeout, 0) / 1000
        backgrounded = False
        moved = self._movable.setdefault(exec_message.exec_id, asyncio.Event())
        try:
            if block_s > 0:
                waiting = asyncio.ensure_future(moved.wait())
                await asyncio.wait(
                    [finished, waiting], timeout=block_s, return_when=asyncio.FIRST_COMPLETED
                )
                waiting.cancel()
            self._movable.pop(exec_message.exec_id, None)
            aborted = False
            if not finished.done():
                if (
                    moved.is_set()
                    or args.is_background
                    or args.timeout_behavior == agent.TIMEOUT_BEHAVIOR_BACKGROUND
                ):
                    backgrounded = True
                    await self._background(
                        exec_message, shell, cwd, finished, started, moved.is_set()
                    )
                    return
                shell.stop()  # the command's time is up and it may not go to the background
                aborted = True
            code = await finished
            exit_event = agent.ShellStreamExit(
                code=code,
                cwd=str(cwd),
                aborted=aborted,
                local_execution_time_ms=round((time.monotonic() - started) * 1000),
            )
            if aborted:
                exit_event.abort_reason = agent.SHELL_ABORT_REASON_TIMEOUT
            await self._reply(exec_message, shell_stream=agent.ShellStream(exit=exit_event))
            await self._close(exec_message)
        finally:
            if not backgrounded:
                shell.stop()  # aborted, or the run ended: the command goes with it

    async def _background(
        self,
        exec_message: agent.ExecServerMessage,
        shell: RunningShell,
        cwd: Path,
        finished: asyncio.Task[int],
        started: float,
        by_user: bool = False,
    ) -> None:
        args = exec_message.shell_stream_args
        shell.forwarding = False  # from here on its output goes to the terminal file
        shell_id = self._next_shell_id
        self._next_shell_id += 1
        self.background_shells[shell_id] = shell
        if self.terminals_folder is not None:
            path = self.terminals_folder / f"{shell_id}.txt"
            header = write_terminal_header(shell.process.pid, cwd, args.command)
            path.write_text(header + "".join(shell.transcript))
            shell.terminal_file = path
            self._spawn(write_terminal_footer(path, finished, started), self._work)
        event = agent.ShellStreamBackgrounded(
            shell_id=shell_id,
            command=args.command,
            working_directory=str(cwd),
            pid=shell.process.pid,
            reason=agent.SHELL_BACKGROUND_REASON_USER_REQUEST
            if args.is_background or by_user
            else agent.SHELL_BACKGROUND_REASON_TIMEOUT,
        )
        await self._reply(exec_message, shell_stream=agent.ShellStream(backgrounded=event))
        await self._close(exec_message)

    async def _pump(
        self,
        exec_message: agent.ExecServerMessage,
        shell: RunningShell,
        reader: asyncio.StreamReader,
        stream: str,
    ) -> None:
        """Forward one output stream chunk by chunk, as it arrives."""
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        while True:
            chunk = await reader.read(65536)
            text = decoder.decode(chunk, final=not chunk)
            if text:
                shell.transcript.append(text)
                if shell.terminal_file is not None:
                    with shell.terminal_file.open("a") as terminal:
                        terminal.write(text)
            if text and shell.forwarding:
                event = (
                    agent.ShellStream(stdout=agent.ShellStreamStdout(data=text))
                    if stream == "stdout"
                    else agent.ShellStream(stderr=agent.ShellStreamStderr(data=text))
                )
                await self._reply(exec_message, shell_stream=event)
            elif text:
                shell.later_output.append(text)
            if not chunk:
                return
