"""asyncio adapters for sansio-mcp (they arrive with the asyncio-parity work)."""

__all__: list[str] = []
