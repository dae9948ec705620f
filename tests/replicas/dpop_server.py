"""``sansio-mcp example-server`` protected by one DPoP-bound token, for the DPoP replay
test: the token ``tok`` (subject ``alice``, scope ``mcp``) is bound to the key whose
thumbprint is in ``$SANSIO_MCP_TEST_DPOP_JKT``; proofs name ``RESOURCE``.

    SANSIO_MCP_TEST_DPOP_JKT=... python tests/replicas/dpop_server.py [example-server options]
"""

from __future__ import annotations

import argparse
import os
import sys

import sansio_mcp_cli.main as cli
from sansio_mcp.auth import AccessToken, ResourceServer

#: The URL every proof names (the one the replicas serve behind their balancer).
RESOURCE = "http://mcp.example/mcp"
JKT_VARIABLE = "SANSIO_MCP_TEST_DPOP_JKT"


class BoundToken:
    """A verifier for the one token ``tok``, bound to ``jkt``."""

    def __init__(self, jkt: str) -> None:
        self.jkt = jkt

    def verify(self, token: str, now: float) -> AccessToken | None:
        if token != "tok":
            return None
        return AccessToken(token, frozenset({"mcp"}), "client", "alice", jkt=self.jkt)


def bound_resource_server(args: argparse.Namespace) -> ResourceServer:
    verifier = BoundToken(os.environ[JKT_VARIABLE])
    return ResourceServer(RESOURCE, ["http://as.example"], verifier, required_scopes=["mcp"])


if __name__ == "__main__":
    # The command as it is, with this protection instead of its --auth-* options.
    cli._resource_server = bound_resource_server
    sys.exit(cli.main(["example-server", *sys.argv[1:]]))
