"""The LLM provider formats, sans-IO: one adapter per wire format turning the neutral request
into an HTTP call and the provider's stream into canonical events.

``adapter`` (the interface, the lookup by provider type and what the formats share),
``openai_chat``, ``openai_responses``, ``anthropic``, ``gemini``; ``sse`` (the incremental
server-sent-events decoder), ``grammar`` (the canonical stream grammar and the result it
assembles), ``errors`` (``ProviderFailure``), ``retry`` (when a failed attempt is tried again),
``redaction`` (credentials kept out of what is stored, logged or shown), ``cache_points``
(Anthropic's prompt-cache breakpoints). The IO is the ProviderActor's (``actors.providers``).
"""
