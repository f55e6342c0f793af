"""The phases of one agent turn, each a small object with its own state and no IO.

``plan`` reads the request (action, mode, what must be fetched, the runtime message),
``model_call`` turns one provider call's events into frames and steps and its end into an
outcome, ``tool_round`` builds each committed tool pair, and ``ending`` is the one way a run
ends. ``actors.run.start`` and ``actors.run.agent`` drive them: they carry out what the phases
return (store writes, frames, messages to the run's other actors). No phase imports an actor,
pykka, peewee, asyncio or an HTTP library (the messages they read are in
``actors.protocols``), and none does IO, so ``tests/actors/test_turn_phases.py`` runs them without
threads, sockets or SQLite.
"""
