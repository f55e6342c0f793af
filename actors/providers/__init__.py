"""LLM providers: canonical events, one sans-IO adapter per wire format, the ProviderActor."""
