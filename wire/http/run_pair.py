"""A ``Run`` stream of one of Cursor's own models, relayed upstream as the HTTP/1.1 pair; pure.

Cursor's backend serves a run over RunSSE + BidiAppend as well as over ``Run`` (it is the
editor's own fallback), so a relayed ``Run`` goes through the same ``UpstreamRun`` as a relayed
pair and needs no full-duplex HTTP/2 client: the RunSSE names the run id, each client message
becomes the BidiAppend it stands for (seqno = its index on the stream, its payload as the
client framed it, hex-encoded as the pair carries it), and the upstream's RunSSE body (the same
enveloped ``AgentServerMessage``s and EndStream a ``Run`` answers with) is streamed back
unchanged. The client's headers go along, minus HTTP/2 pseudo-headers and the fields that
describe the ``Run`` body itself (content type, length, encodings): each request of the pair
carries its own.
"""

from __future__ import annotations

import binascii
from collections.abc import Iterable
from typing import Final

import msgspec

from wire.connect import encode_envelope
from wire.hop_by_hop import Header
from wire.http.upstream_run import RawRequest
from wire.proto import agent_v1_pb2 as agent
from wire.proto import aiserver_v1_pb2 as aiserver

# Fields of the ``Run`` request that describe its own body, not the pair's.
_BODY_FIELDS: Final = frozenset(
    {
        b"content-type",
        b"content-length",
        b"content-encoding",
        b"connect-content-encoding",
        b"connect-accept-encoding",
        b"accept-encoding",
    }
)
_RUN_SSE_TYPE: Final = (b"content-type", b"application/connect+proto")
_APPEND_TYPE: Final = (b"content-type", b"application/proto")


class RunPair(msgspec.Struct, frozen=True):
    """The pair's requests for one relayed ``Run``: its id and the client's headers."""

    run_id: str
    headers: tuple[Header, ...]

    def run_sse(self) -> RawRequest:
        """The RunSSE: an uncompressed enveloped ``BidiRequestId``."""
        payload = agent.BidiRequestId(request_id=self.run_id).SerializeToString()
        return RawRequest(encode_envelope(0, payload), (*self.headers, _RUN_SSE_TYPE))

    def append(self, seqno: int, payload: bytes) -> RawRequest:
        """The BidiAppend of the client message ``payload`` (its serialized bytes)."""
        request = aiserver.BidiAppendRequest(
            data=binascii.hexlify(payload).decode("ascii"),
            request_id=aiserver.BidiRequestId(request_id=self.run_id),
            append_seqno=seqno,
        )
        return RawRequest(request.SerializeToString(), (*self.headers, _APPEND_TYPE))


def run_pair(run_id: str, stream_headers: Iterable[tuple[str, str]]) -> RunPair:
    """The pair for a ``Run`` stream with these HTTP/2 header fields (hop-by-hop fields are
    dropped later, by ``UpstreamRun``, as for every relayed request)."""
    headers = tuple(
        (name.encode(), value.encode("utf-8", "surrogateescape"))
        for name, value in stream_headers
        if not name.startswith(":") and name.lower().encode() not in _BODY_FIELDS
    )
    return RunPair(run_id, headers)
