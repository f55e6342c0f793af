"""Where a run is served: here (a user model) or relayed to Cursor's backend; pure.

Our models reach Cursor under 8-hex public ids (``store.catalog.urls.public_model_id``); every other
model id names one of Cursor's own models, whose runs go to Cursor's backend as they are. An
8-hex id still needs the store's word (Cursor could name a model that way too), so this
module answers with the id to look up. A RunRequest that names no model stays here: the
default-model routes tell the editor its default is our first model, and the local run says
that no model was selected.
"""

from __future__ import annotations

import re
from enum import Enum
from typing import Final

from wire.proto import agent_v1_pb2 as agent

_PUBLIC_ID: Final = re.compile(r"[0-9a-f]{8}")


class Place(Enum):
    """A decision that needs no store lookup."""

    LOCAL = "local"
    RELAY = "relay"


def requested_model_id(request: agent.AgentRunRequest) -> str:
    """``requested_model.model_id``, else ``model_details.model_id`` (maybe empty)."""
    if request.HasField("requested_model") and request.requested_model.model_id:
        return request.requested_model.model_id
    return request.model_details.model_id


def run_place(request: agent.AgentRunRequest) -> Place | str:
    """``Place`` when the id alone decides; otherwise the public id the store must know.

    A CLI id's ``/reasoning/context/fast`` suffixes are not part of the public id.
    """
    model_id = requested_model_id(request)
    if not model_id:
        return Place.LOCAL
    head = model_id.split("/", 1)[0]
    return head if _PUBLIC_ID.fullmatch(head) else Place.RELAY
