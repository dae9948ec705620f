"""Coverage-guided fuzzing (atheris) of the byte-level parsers: NDJSON framing +
JSON-RPC classification + the session, and the SSE parser.

    pip install atheris
    python -m fuzz.atheris_parsers -atheris_runs=200000      # or -max_total_time=600

Any exception other than the documented protocol errors is a bug (atheris
stops and writes the crashing input to ./crash-*).
"""

from __future__ import annotations

import sys

from sansio_mcp import NEED_DATA, ProtocolError, ServerSession
from sansio_mcp.http import SSEParser


def one_input(data: bytes) -> None:
    split = data[0] % 8 if data else 0
    body = data[1:]
    session = ServerSession(capabilities={"tools": {}})
    # Arbitrary chunking exercises the framer's buffering.
    for start in range(0, len(body), max(1, split * 7)):
        session.receive_data(body[start : start + max(1, split * 7)])
        while session.next_event() is not NEED_DATA:
            pass
    session.receive_data(b"")
    session.data_to_send()
    parser = SSEParser()
    try:
        parser.feed(body)
        while parser.next_event() is not NEED_DATA:
            pass
    except ProtocolError:
        pass


def main() -> None:
    import atheris

    with atheris.instrument_imports():
        import sansio_mcp  # noqa: F401
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
