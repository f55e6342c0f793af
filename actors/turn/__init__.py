"""The phases of one agent turn, each a small object with its own state and no IO.

``plan`` reads the request (action, mode, what must be fetched, the runtime message),
``model_call`` turns one provider call's events into frames and steps and its end into an
outcome, ``tool_round`` builds each committed tool pair, and ``ending`` is the one way a run
ends. ``actors.run_start`` and ``actors.agent_run`` drive them: they carry out what the phases
return (store writes, frames, messages to the run's other actors). No phase imports pykka,
peewee, asyncio or an HTTP library itself (the message types they read are the actors' own, in
the actors' modules), and none does IO, so ``tests/test_turn_phases.py`` runs them without
threads, sockets or SQLite.
"""
