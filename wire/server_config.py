"""What the server appends to Cursor's ``GetServerConfig`` answer: the agent transport.

Sans-IO. The editor reads two fields to choose how it reaches the agent: ``http2_config``
(field 7) and ``agent_url_config`` (field 27: ``agent_url`` 1, ``agentn_url`` 2). Appended
after the upstream's bytes they win (a later scalar replaces, a later message merges), and
the upstream's answer stays a byte-exact prefix, as with the model list.

- HTTP/2 listener off: ``HTTP2_CONFIG_FORCE_ALL_DISABLED``, so the editor speaks HTTP/1.1 and
  uses RunSSE + BidiAppend without anyone turning HTTP/2 off; the agent URLs point at the
  address the editor used to reach us, never at Cursor's own agent hosts.
- On: ``HTTP2_CONFIG_UNSPECIFIED`` (the editor's own default, bidi ``Run`` over HTTP/2) and
  the agent URLs point at the listener.
"""

from __future__ import annotations

from typing import Final

from wire.proto import aiserver_v1_pb2 as aiserver

SERVER_CONFIG_ROUTES: Final = (
    "/aiserver.v1.AiService/GetServerConfig",
    "/aiserver.v1.ServerConfigService/GetServerConfig",
)

_HTTP2_CONFIG_FIELD: Final = 7


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def server_config_addition(agent_url: str, *, http2_listener: bool) -> bytes:
    """The encoded fields to append. ``http2_config`` is written even when 0, which proto3
    serialisation would leave out, so it replaces whatever the upstream said."""
    mode = (
        aiserver.HTTP2_CONFIG_UNSPECIFIED
        if http2_listener
        else aiserver.HTTP2_CONFIG_FORCE_ALL_DISABLED
    )
    http2 = _varint(_HTTP2_CONFIG_FIELD << 3) + _varint(mode)
    urls = aiserver.GetServerConfigResponse(
        agent_url_config=aiserver.AgentUrlConfig(agent_url=agent_url, agentn_url=agent_url)
    )
    return http2 + urls.SerializeToString()
