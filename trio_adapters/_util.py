"""Small Trio helpers (the one here is backend-neutral and lives in the core)."""

from __future__ import annotations

from sansio_mcp.runtime import unwrap_single_exception

__all__ = ["unwrap_single_exception"]
