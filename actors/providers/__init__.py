"""The ProviderActor (``actor``: one per LLM call), the one provider HTTP request it makes
(``transport``) and the ``CallRecorderActor`` (``recorder``: the one writer of call records).
The formats themselves are sans-IO, in ``wire.providers``."""
