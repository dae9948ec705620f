"""The parity suite: the same tests on the Trio and asyncio adapters, and across them."""
