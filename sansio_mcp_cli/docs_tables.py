"""Print the state tables the documentation holds (docs/architecture.md,
docs/gateway.md, docs/a2a-bridge.md): ``python -m sansio_mcp_cli.docs_tables``.

The tables are rendered by the library (:mod:`sansio_mcp.state_tables`) and the
applications that own the machines; this only prints them, in page order.
"""

from __future__ import annotations

from collections.abc import Callable

from sansio_mcp.state_tables import render_auth_table, render_state_tables, render_task_table
from sansio_mcp_apps.a2a import render_a2a_states
from sansio_mcp_apps.a2e import render_link_table
from sansio_mcp_apps.gateway import render_connector_table

__all__ = ["TABLES", "main"]

#: Every generated table, in the order printed.
TABLES: tuple[Callable[[], str], ...] = (
    render_state_tables,
    render_task_table,
    render_link_table,
    render_auth_table,
    render_connector_table,
    render_a2a_states,
)


def main() -> None:
    print("\n\n".join(render() for render in TABLES))


if __name__ == "__main__":
    main()
