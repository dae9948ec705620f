"""The ``sansio-mcp`` command line and the bundled example server."""
