"""The A2E bridge and client on each event loop: ``trio_bridge``/``trio_client`` on
Trio, ``asyncio_bridge``/``asyncio_client`` on asyncio (the same names on both)."""
