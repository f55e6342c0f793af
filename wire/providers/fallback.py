"""When a failed call moves on to its model's next fallback, and what it then says: pure.

Asked only once the retry policy (``wire.providers.retry``) has given up on the model. A call
falls back on a failure that says "this provider cannot answer now", before anything of it
reached the turn: a connection or read error, a stall (no headers, or silence, within the
idle limit), a transient status (429, 408, ...) or any 5xx, or a stream's error event that
stands for one (``wire.providers.errors.stream_error_status``). Never on a refusal of the request
itself (400, 401, 404, ...: another model would be sent the same request, and a key or a
request to fix is the user's to see), never on our whole-call limit, never after the first
event reached the turn (the answer is under way and must not be shown twice).
"""

from __future__ import annotations

from wire.providers.retry import TRANSIENT_STATUSES, AttemptFailure


def may_fall_back(failure: AttemptFailure) -> bool:
    """Whether this failure, final for its model, moves the call to the next model."""
    if failure.events_reached_turn:
        return False
    if failure.http_status is not None:
        return failure.http_status in TRANSIENT_STATUSES or 500 <= failure.http_status <= 599
    return failure.transport_error


def chain_failure_message(
    message: str, failed_model: str, position: int, fallbacks: int, first_model: str
) -> str:
    """The call's last failure, saying which model of the chain it came from: ``position`` 0
    (the model asked for) leaves it as it is."""
    if position == 0:
        return message
    plural = "" if position == 1 else "s"
    return (
        f"{message} (from {failed_model}, fallback {position} of {fallbacks}: "
        f"{position} fallback{plural} tried after {first_model} failed)"
    )
