"""How ``sansio-mcp call`` (and ``inspect``) answers a server's questions: from
the command line (``--elicit``, ``--sample``, ``--root``), else at the terminal,
else by declining, and saying so."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

from sansio_mcp import MCPError
from sansio_mcp.runtime import ClientHandlers, TransportBackend

__all__ = ["Answers"]


class Answers:
    """The answers one ``call`` may give."""

    def __init__(
        self,
        elicitations: Sequence[dict[str, Any]],
        sample: str | None,
        roots: Sequence[str],
        *,
        interactive: bool,
        backend: TransportBackend,
        ask: Callable[[str], str] = input,
        command: str = "call",
    ) -> None:
        self._elicitations = list(elicitations)
        self._sample = sample
        self._roots = [{"uri": uri} for uri in roots]
        self._interactive = interactive
        self._backend = backend
        self._ask = ask
        self._command = command

    def _note(self, text: str) -> None:
        print(f"sansio-mcp {self._command}: {text}", file=sys.stderr, flush=True)

    @classmethod
    def from_options(
        cls,
        elicit: Sequence[str],
        sample: str | None,
        roots: Sequence[str],
        *,
        backend: TransportBackend,
        command: str = "call",
    ) -> Answers:
        contents = []
        for text in elicit:
            try:
                content = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ValueError(f"--elicit is not valid JSON: {exc}") from None
            if not isinstance(content, dict):
                raise ValueError("--elicit must be a JSON object")
            contents.append(content)
        interactive = sys.stdin.isatty()
        return cls(
            contents, sample, roots, interactive=interactive, backend=backend, command=command
        )

    def handlers(self, *, tasks: bool = False) -> ClientHandlers:
        return ClientHandlers(
            sampling=self.sampling, elicitation=self.elicitation, roots=self.roots, tasks=tasks
        )

    def roots(self) -> list[dict[str, Any]]:
        return self._roots

    async def elicitation(self, params: dict[str, Any]) -> dict[str, Any]:
        message = params.get("message", "")
        if self._elicitations:
            return {"action": "accept", "content": self._elicitations.pop(0)}
        if params.get("mode") == "url":
            self._note(f"the server asks you to open {params.get('url')} ({message}); declined")
            return {"action": "decline"}
        if not self._interactive:
            self._note(f"the server asked {message!r} and no --elicit answer was left: declined")
            return {"action": "decline"}
        schema = params.get("requestedSchema") or {}
        print(f"\n{message}", file=sys.stderr)
        content: dict[str, Any] = {}
        for name, spec in (schema.get("properties") or {}).items():
            label = spec.get("description") or spec.get("title") or name
            raw = await self._backend.to_thread(self._ask, f"  {label}: ")
            if not raw:
                return {"action": "decline"}
            content[name] = _convert(raw, spec)
        return {"action": "accept", "content": content}

    async def sampling(self, params: dict[str, Any]) -> dict[str, Any]:
        reply = self._sample
        if reply is None and self._interactive:
            last = (params.get("messages") or [{}])[-1].get("content", {})
            prompt = last.get("text", "") if isinstance(last, dict) else ""
            print(f"\nThe server asks the model: {prompt}", file=sys.stderr)
            reply = await self._backend.to_thread(self._ask, "  reply: ") or None
        if reply is None:
            self._note(
                "the server asked for a model completion and no --sample was given: declined"
            )
            raise MCPError(-1, "the user declined the sampling request")
        return {
            "role": "assistant",
            "content": {"type": "text", "text": reply},
            "model": "sansio-mcp-cli",
            "stopReason": "endTurn",
        }


def _convert(raw: str, spec: dict[str, Any]) -> Any:
    kind = spec.get("type")
    try:
        if kind == "integer":
            return int(raw)
        if kind == "number":
            return float(raw)
        if kind == "boolean":
            return raw.strip().lower() in ("y", "yes", "true", "1")
    except ValueError:
        return raw
    return raw
