"""What every row of the harness shares: how much each measures (:class:`Counts`,
:data:`FULL` and :data:`QUICK`) and where its figures go (:class:`Results`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["FULL", "QUICK", "Counts", "Results"]


@dataclass
class Counts:
    rounds: int
    stdio_calls: int
    stdio_warmup: int
    http_calls: int
    http_warmup: int
    codec_pairs: int
    clients: int
    calls_per_client: int
    import_runs: int
    sessions: int
    bridge_calls: int
    loop_deadline: float  # seconds for one timed loop
    worker_timeout: float  # seconds for one child process, start-up included
    pin: str = "off"  # where the stdio rows put a client and its server (PIN_MODES)


FULL = Counts(
    rounds=3,
    stdio_calls=2000,
    stdio_warmup=200,
    http_calls=500,
    http_warmup=50,
    codec_pairs=20000,
    clients=1000,
    calls_per_client=3,
    import_runs=7,
    sessions=1000,
    bridge_calls=1000,
    loop_deadline=60.0,
    worker_timeout=240.0,
)
QUICK = Counts(
    rounds=1,
    stdio_calls=40,
    stdio_warmup=5,
    http_calls=15,
    http_warmup=2,
    codec_pairs=300,
    clients=20,
    calls_per_client=2,
    import_runs=1,
    sessions=20,
    bridge_calls=20,
    loop_deadline=8.0,
    worker_timeout=40.0,
)


@dataclass
class Results:
    """Per row, per variant: one measurement dict per round (or ``{"error": ...}``)."""

    rows: dict[int, dict[str, list[dict[str, Any]]]] = field(default_factory=dict)
    notes: dict[int, list[str]] = field(default_factory=dict)
    labels: dict[int, dict[str, str]] = field(default_factory=dict)

    def add(self, row: int, variant: str, label: str, value: dict[str, Any]) -> None:
        self.rows.setdefault(row, {}).setdefault(variant, []).append(value)
        self.labels.setdefault(row, {})[variant] = label

    def note(self, row: int, text: str) -> None:
        notes = self.notes.setdefault(row, [])
        if text not in notes:
            notes.append(text)
