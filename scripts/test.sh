#!/usr/bin/env bash
# Install everything the test suite needs from the project's own files, then run it all.
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m pip install --quiet --disable-pip-version-check -e '.[test]'
# Third-party MCP peers (server-everything, the TypeScript SDK, the conformance suite), pinned by package-lock.json.
npm ci --no-audit --no-fund --loglevel=error

python3 -m ruff check sansio_mcp trio_adapters asyncio_adapters sansio_mcp_cli sansio_mcp_testing fuzz tests examples scripts conformance
python3 -m mypy
# pytest exits 5 when it collected nothing: that is a failure here, so it is not masked.
python3 -m pytest -q -p no:cacheprovider "$@"
