"""How a store failure reaches the client, for every actor that writes on a run's behalf.

A locked or full database is the database's state, not a bug: the write did not happen, what
was committed before is kept, and a later turn may work, so the run ends ``unavailable`` and the
log says so in one line. Any other store failure is ours: ``internal``, logged with its
traceback (the writers that only record log theirs alike: ``store.database.log_store_failure``).
"""

from __future__ import annotations

import peewee

from store.database import unavailable_cause
from wire.errors import Code, ConnectError


def store_failure(exc: peewee.DatabaseError) -> ConnectError:
    """The run's error for a failed store call: ``unavailable`` when the database cannot take
    the write now, else ``internal``."""
    cause = unavailable_cause(exc)
    if cause is not None:
        return ConnectError(
            Code.UNAVAILABLE,
            f"the database cannot take the turn's write now ({cause}); what was saved before is "
            "kept, try again",
        )
    return ConnectError(Code.INTERNAL, f"store error: {exc}")
