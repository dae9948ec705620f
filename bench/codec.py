"""Row 3: the codec.  One *pair* = a ``tools/call`` request and its result,
each serialized to bytes (as the sender does) and parsed back (as the
receiver does): four operations.

* ``ours``: what a sansio-mcp session does with a message: a session keeps
  the messages it sends as JSON-ready dicts, so out is ``_json.encode``
  (the bytes ``data_to_send`` frames), in is ``_json.loads`` +
  ``parse_message`` (what ``receive_data`` does with each line), with
  whatever JSON backend ``sansio_mcp._json`` picked;
* ``ours_stdlib``: the same with the stdlib ``json`` backend forced;
* ``sdk``: the ``mcp`` SDK's transport path: ``model_dump_json(by_alias=True,
  exclude_unset=True)`` out, ``jsonrpc_message_adapter.validate_json`` in;
* ``json``: bare stdlib ``json.dumps`` / ``json.loads`` of plain dicts (no validation);
* ``orjson``: bare ``orjson.dumps`` / ``orjson.loads`` (when installed).
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from typing import Any

REQUEST_PARAMS: dict[str, Any] = {
    "name": "echo",
    "arguments": {"message": "hello, bench: a short line of text"},
    "_meta": {"progressToken": 7},
}
RESULT: dict[str, Any] = {
    "content": [{"type": "text", "text": "hello, bench: a short line of text"}],
    "isError": False,
}


def _ours(stdlib: bool) -> Callable[[], None]:
    from sansio_mcp import jsontext, parse_message

    loads, encode = jsontext.loads, jsontext.encode
    if stdlib:
        stdlib_dumps = jsontext.stdlib_dumps
        loads = jsontext.stdlib_loads

        def encode(obj: Any) -> bytes:
            return stdlib_dumps(obj).encode("utf-8")

    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": REQUEST_PARAMS}
    response = {"jsonrpc": "2.0", "id": 1, "result": RESULT}

    def pair() -> None:
        got = parse_message(loads(encode(request)))
        back = parse_message(loads(encode(response)))
        assert got.id == back.id  # type: ignore[union-attr]

    return pair


def _sdk() -> Callable[[], None]:
    import warnings

    warnings.simplefilter("ignore")
    from mcp import types

    adapter = types.jsonrpc_message_adapter
    request = adapter.validate_python(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": REQUEST_PARAMS}
    )
    response = adapter.validate_python({"jsonrpc": "2.0", "id": 1, "result": RESULT})

    def pair() -> None:
        wire = request.model_dump_json(by_alias=True, exclude_unset=True).encode("utf-8")
        got = adapter.validate_json(wire, by_name=False)
        wire = response.model_dump_json(by_alias=True, exclude_unset=True).encode("utf-8")
        back = adapter.validate_json(wire, by_name=False)
        assert got.id == back.id  # type: ignore[union-attr]

    return pair


def _json_pair() -> Callable[[], None]:
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": REQUEST_PARAMS}
    response = {"jsonrpc": "2.0", "id": 1, "result": RESULT}
    dumps, loads = json.dumps, json.loads

    def pair() -> None:
        got = loads(dumps(request, separators=(",", ":")).encode("utf-8"))
        back = loads(dumps(response, separators=(",", ":")).encode("utf-8"))
        assert got["id"] == back["id"]

    return pair


def _orjson_pair() -> Callable[[], None]:
    import orjson

    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": REQUEST_PARAMS}
    response = {"jsonrpc": "2.0", "id": 1, "result": RESULT}
    dumps, loads = orjson.dumps, orjson.loads

    def pair() -> None:
        got = loads(dumps(request))
        back = loads(dumps(response))
        assert got["id"] == back["id"]

    return pair


IMPLS: dict[str, Callable[[], Callable[[], None]]] = {
    "ours": lambda: _ours(False),
    "ours_stdlib": lambda: _ours(True),
    "sdk": _sdk,
    "json": _json_pair,
    "orjson": _orjson_pair,
}


def run_codec(pairs: int, repeats: int = 5) -> dict[str, Any]:
    """Pairs per second of each implementation: the median of ``repeats``
    timed batches of ``pairs``, the implementations interleaved."""
    fns: dict[str, Callable[[], None]] = {}
    missing: dict[str, str] = {}
    for name, make in IMPLS.items():
        try:
            fns[name] = make()
            fns[name]()  # warm up, and prove it works
        except (ImportError, LookupError) as exc:
            missing[name] = str(exc)
    rates: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            for _ in range(pairs):
                fn()
            rates[name].append(pairs / (time.perf_counter() - start))
    out: dict[str, Any] = {
        name: {"pairs_per_s": statistics.median(r), "us_per_pair": 1e6 / statistics.median(r)}
        for name, r in rates.items()
    }
    out["unavailable"] = missing
    return out
