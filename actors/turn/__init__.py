"""The phases of one agent turn, each a small object with its own state and no IO.

``plan`` reads the request (action, mode, what must be fetched, the runtime message),
``model_call`` turns one provider call's events into frames and steps and its end into an
outcome, ``tool_round`` builds each committed tool pair, and ``ending`` is the one way a run
ends. ``actors.agent_run`` drives them: it carries out what they return (store writes, frames,
messages to the run's other actors). None of them imports pykka, peewee or the store's engine,
so ``tests/test_turn_phases.py`` runs them without threads or SQLite.
"""
