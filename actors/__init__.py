"""The actors that serve a run, and the packages they stand on.

Here, one module per actor, each the one owner of its facts: ``tool_runtime``
(``ToolRuntimeActor``: the run's tool executions and wire ids), ``checkpoint``
(``CheckpointActor``: the only checkpoint builder), ``blob_sync`` (``BlobSyncActor``: the KV
sub-protocol and its ids), ``run_events`` (``RunEventRecorderActor``: the timeline writer);
``tell`` and ``store_failure`` are what they share. The packages, from the bottom up:
``conversation`` (the domain), ``loop`` (the one actor/loop crossing), ``pool`` (the worker
pool), ``codecs`` (Cursor's checkpoint and request forms <-> the domain), ``protocols`` (every
actor's messages), ``turn`` (the pure phases of a turn), ``services`` (server work: web search,
images, the instance lease), ``providers`` (the ``ProviderActor``, its transport and the call
recorder) and, above them all, ``run`` (the ``SessionActor`` and the run kinds it drives).
``tests/repo/test_layers.py`` holds the order.
"""
