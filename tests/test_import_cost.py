"""Importing an adapter loads only what every program needs: the WebSocket
transport's wsproto, the OAuth client and the JWT machinery load when first used
(import time, issue 37), and their public names still import as before."""

from __future__ import annotations

import subprocess
import sys

import pytest

#: Modules a program that never speaks WebSocket nor OAuth never needs.
LAZY = (
    "wsproto",
    "jwt",
    "cryptography",
    "httpx",
    "sansio_mcp._websocket",
    "sansio_mcp.auth._client",
    "sansio_mcp.auth._types",
    "sansio_mcp.auth._jwt_verifier",
    "sansio_mcp.runtime._oauth",
)


def _loaded_after(statement: str) -> list[str]:
    code = f"import sys\n{statement}\nprint(' '.join(m for m in {LAZY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.split()


@pytest.mark.parametrize("adapter", ["trio_adapters", "asyncio_adapters"])
def test_importing_an_adapter_leaves_the_rarely_used_modules_unloaded(adapter: str) -> None:
    assert _loaded_after(f"import {adapter}") == []


def test_the_lazy_names_still_import() -> None:
    loaded = _loaded_after(
        "from sansio_mcp.runtime import OAuthProvider, FileTokenStore\n"
        "from sansio_mcp.auth import OAuthClient, JWTVerifier, OAuthConfig\n"
        "from trio_adapters.websocket import open_ws_client\n"
        "assert OAuthProvider.__name__ == 'OAuthProvider' and OAuthClient and JWTVerifier\n"
        "import sansio_mcp.auth as auth\n"
        "assert all(getattr(auth, name) is not None for name in auth.__all__)"
    )
    assert {"sansio_mcp.runtime._oauth", "sansio_mcp.auth._client", "wsproto"} <= set(loaded)


def test_an_unknown_name_is_an_attribute_error() -> None:
    import sansio_mcp.auth
    import sansio_mcp.runtime

    for module in (sansio_mcp.auth, sansio_mcp.runtime):
        with pytest.raises(AttributeError, match="no_such_name"):
            getattr(module, "no_such_name")  # noqa: B009
