"""How a store failure reaches the client, for every actor that writes on a run's behalf.

A locked or full database is the database's state, not a bug: the write did not happen, what
was committed before is kept, and a later turn may work, so the run ends ``unavailable`` and the
log says so in one line. Any other store failure is ours: ``internal``, logged with its
traceback. The writers that only record (call records, run events, the checkpoint index) log
their failures the same way (``log_store_failure``).
"""

from __future__ import annotations

import logging

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


def log_store_failure(
    logger: logging.Logger, exc: BaseException, message: str, *args: object
) -> None:
    """Log a failed store call: a locked or full database as one warning naming it (the
    database's state, not a bug), anything else as an error with its traceback."""
    cause = unavailable_cause(exc)
    if cause is not None:
        logger.warning(message + ": the database cannot take it now (%s)", *args, cause)
    else:
        logger.error(message, *args, exc_info=exc)
