"""The aiohttp edge: the only code under ``wire/`` that does network IO."""
