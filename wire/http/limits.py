"""The edge's named limits and time spans, in one place so tests can shorten them."""

from __future__ import annotations

import msgspec

from wire.inbox import MAX_BUFFERED_BYTES, MAX_POOLED_BYTES

MIB = 1024 * 1024


class EdgeLimits(msgspec.Struct, frozen=True):
    """Limits of the Connect edge; the defaults are what ``python run.py`` uses."""

    # Largest RunSSE/BidiAppend body, before and after gzip decompression (413 beyond).
    max_body_bytes: int = 32 * MIB
    # ... all of them being received at once, over every request (each counted at its
    # Content-Length from the start): the request that would pass it is refused.
    body_bytes_in_flight: int = 256 * MIB
    # A RunSSE/BidiAppend body from which nothing arrives for this long is cut off.
    body_idle_s: float = 30.0
    # A request id that never receives a RunRequest ends with deadline_exceeded after this.
    run_request_timeout_s: float = 120.0
    # A finished request keeps its frames this long for reconnecting RunSSE streams.
    finished_retention_s: float = 60.0
    # ... and all finished requests together keep at most this many bytes of frames: beyond
    # it the oldest finished one is removed early (the newest is always kept its full time).
    finished_retention_bytes: int = 64 * MIB
    # A removed request id answers 404 (never a fresh session) for this long ...
    tombstone_ttl_s: float = 6 * 3600.0
    # ... and at most this many removed ids are remembered.
    max_tombstones: int = 100_000
    # An open run with nothing else sent for this long gets an InteractionUpdate.heartbeat.
    heartbeat_interval_s: float = 5.0
    # A Run whose RunRequest carries no context waits this long for request_context_args.
    request_context_wait_s: float = 30.0
    # An exec the editor answers without asking anyone (Read, Grep, Glob, ReadLints, MCP
    # resources and state: ``wire.tools.exec_deadline``) unanswered this long is aborted and
    # its call ends with an error the model reads.
    exec_answer_timeout_s: float = 120.0
    # A model call that has shown nothing (no text, thinking or tool call) for this long is
    # shown to the editor as the model thinking (an empty thinking delta), again every as
    # long: a client that ends a turn after 60 s without visible activity keeps it
    # (heartbeats do not count).
    silent_model_keepalive_s: float = 20.0
    # An append_seqno gap (later appends wait for a missing one) that does not fill within
    # this long ends the run invalid_argument naming the missing number.
    append_gap_timeout_s: float = 30.0
    # A RunSSE write the client does not take (it stopped reading, its socket buffer is full)
    # for this long cuts that stream and ends the run deadline_exceeded.
    slow_reader_timeout_s: float = 30.0
    # How often an open RunSSE checks that its client is still there (a relayed run's
    # upstream streams close with it).
    client_poll_s: float = 1.0
    # Bytes of out-of-order appends one request may hold, and all requests together
    # (``wire.inbox``): the append that would pass either is refused resource_exhausted.
    append_buffer_bytes_per_run: int = MAX_BUFFERED_BYTES
    append_buffer_bytes: int = MAX_POOLED_BYTES
    # Request ids held at once, finished ones inside their retention included: a new id
    # beyond it first ends the oldest finished one's retention, else is refused.
    max_live_runs: int = 10_000
    # Open RunSSE streams from one peer address, and from all: the next is refused.
    max_run_streams_per_peer: int = 512
    max_run_streams: int = 4096
    # TCP connections from one peer address, and from all, over both listeners: the next is
    # answered 503 (HTTP/2: closed) at once.
    max_connections_per_peer: int = 1024
    max_connections: int = 4096
    # A request's headers must arrive within this long of its first byte (a new
    # connection's, of its opening); else 408 and the connection is closed.
    header_timeout_s: float = 10.0
    # An HTTP/1.1 connection with no request in progress is closed after this long.
    keepalive_timeout_s: float = 75.0
