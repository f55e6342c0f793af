"""The one crossing between actor threads and the asyncio loop (``bridge``), and the timers
that deliver deadlines to actors as messages (``timers``). Below every actor package."""
