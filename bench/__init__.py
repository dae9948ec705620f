"""Benchmarks: sansio-mcp against the official ``mcp`` SDK, side by side.

Run ``python -m bench`` (``--quick`` for a smoke run); see ``docs/performance.md``.
"""
