"""Applications built on sansio-mcp from its public API only: the A2E bridge
(:mod:`sansio_mcp_apps.a2e`), the A2A bridge (:mod:`sansio_mcp_apps.a2a`) and the
gateway (:mod:`sansio_mcp_apps.gateway`); in each, the pure half, its async
``runtime`` subpackage and (A2E) the Trio and asyncio ``adapters``."""
