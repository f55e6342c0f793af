"""The CallRecorderActor's protocol: a call's start, its chunks and its end."""

from __future__ import annotations

import msgspec

from actors.conversation.request import ModelRoute
from actors.protocols.provider import ProviderCallEnded, ProviderListener
from store.llm_calls import CallEnd


class RecordCallStart(msgspec.Struct, frozen=True):
    """An attempt of a call started at ``started`` (monotonic) along ``route``; ``request`` is
    None when none was built. ``chain_position`` (0: the model asked for, n: its n-th
    fallback) and ``attempt`` (1-based within that model) place it in the call;
    ``call_route``, the call's first route with its fallbacks, names every credential to
    scrub (None: ``route``'s)."""

    run_id: str | None
    model_call_id: str
    route: ModelRoute
    started: float
    request: tuple[tuple[tuple[str, str], ...], bytes] | None  # (headers, body) as sent
    key_label: str | None = None  # the label of the pool key the attempt sent
    chain_position: int = 0
    attempt: int = 1
    call_route: ModelRoute | None = None


class RecordChunks(msgspec.Struct, frozen=True):
    """Response bytes as read, each with its monotonic arrival time."""

    model_call_id: str
    chunks: tuple[tuple[bytes, float], ...]


class RecordCallEnd(msgspec.Struct, frozen=True):
    """The call (or one attempt of it) ended: write ``end``, then tell ``listener`` ``ended``
    with the record id. An attempt that is retried has no ``ended``: nobody is told."""

    model_call_id: str
    end: CallEnd | None  # None: the call's last record was already ended (a retry's wait)
    ended: ProviderCallEnded | None
    listener: ProviderListener | None


RecorderMessage = RecordCallStart | RecordChunks | RecordCallEnd
