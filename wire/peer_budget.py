"""How many of something (connections, open streams) each peer address holds, and all of
them together, against two caps: one client cannot take what every other client needs, and
all of them cannot take more than the process can hold.

Pure counting: the caller admits on open and releases on close, exactly once each; peers are
named as ``wire.peers`` names them.
"""

from __future__ import annotations

from wire.peers import peer_key


class PeerBudget:
    """Open ``what`` per peer (at most ``per_peer``) and in all (at most ``total``)."""

    def __init__(self, what: str, *, per_peer: int, total: int) -> None:
        self.what = what
        self.per_peer = per_peer
        self.total = total
        self._held: dict[str, int] = {}
        self.held = 0

    def holding(self, peer: str | None) -> int:
        return self._held.get(peer_key(peer), 0)

    def admit(self, peer: str | None) -> str | None:
        """Count one more for ``peer``, or say why not (nothing is counted then)."""
        key = peer_key(peer)
        if self.held >= self.total:
            return f"this server holds {self.total} open {self.what}, its limit over all clients"
        if self._held.get(key, 0) >= self.per_peer:
            return f"{key} holds {self.per_peer} open {self.what}, its limit"
        self._held[key] = self._held.get(key, 0) + 1
        self.held += 1
        return None

    def release(self, peer: str | None) -> None:
        key = peer_key(peer)
        left = self._held[key] - 1
        if left:
            self._held[key] = left
        else:
            del self._held[key]
        self.held -= 1
