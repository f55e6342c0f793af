"""Cursor's forms of a conversation <-> the domain, as pure functions (no actor, no IO).

``checkpoint_json`` (canonical messages <-> the JSON Cursor keeps in a checkpoint),
``checkpoint_state`` (the protobuf pieces of a checkpoint: steps, turns, todos, the plan, the
mode) and ``request_context`` (Cursor's ``UserMessage`` and ``RequestContext`` -> the runtime
user message). The CheckpointActor and the turn's phases use them.
"""
