"""Judging bench figures: medians and paired ratios over rounds, the targets they are
held to, and how one measurement is taken and logged (shared by every row's module)."""

from __future__ import annotations

import json
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._model import Results
from ._proc import WorkerError


def _rotate(items: list[Any], by: int) -> list[Any]:
    if not items:
        return items
    by %= len(items)
    return items[by:] + items[:by]


def _measure(
    results: Results, row: int, variant: str, label: str, fn: Callable[[], dict[str, Any]]
) -> None:
    try:
        value = fn()
    except WorkerError as exc:
        value = {"error": str(exc)}
    results.add(row, variant, label, value)
    shown = value.get("error") or _brief(value)
    _log(f"    row {row} {label}: {shown}")


def _brief(value: dict[str, Any]) -> str:
    for key, unit in (
        ("calls_per_s", "calls/s"),
        ("pairs_per_s", "pairs/s"),
        ("seconds_import", "s"),
        ("bytes_per_session", "B/session"),
    ):
        if key in value:
            extra = f", {value['errors']} errors" if value.get("errors") else ""
            return f"{value[key]:,.{3 if unit == 's' else 0}f} {unit}{extra}"
    return json.dumps(value)[:120]


def _values(results: Results, row: int, variant: str, key: str) -> list[float | None]:
    out: list[float | None] = []
    for value in results.rows.get(row, {}).get(variant, []):
        v = value.get(key)
        out.append(float(v) if isinstance(v, (int, float)) and "error" not in value else None)
    return out


def median_of(results: Results, row: int, variant: str, key: str) -> float | None:
    values = [v for v in _values(results, row, variant, key) if v is not None]
    return statistics.median(values) if values else None


def paired_ratio(
    results: Results, row: int, a: str, b: str, key: str, key_b: str | None = None
) -> float | None:
    """Median over rounds of a[round] / b[round] (rounds where both succeeded)."""
    va = _values(results, row, a, key)
    vb = _values(results, row, b, key_b or key)
    ratios = [x / y for x, y in zip(va, vb, strict=False) if x is not None and y]
    return statistics.median(ratios) if ratios else None


@dataclass
class Target:
    id: str
    text: str
    value: float | None
    threshold: float
    higher_is_better: bool = True
    extra_ok: bool = True
    detail: str = ""
    #: False: a figure shown for information, with no verdict.
    judged: bool = True

    @property
    def status(self) -> str:
        if not self.judged:
            return "INFO"
        if self.value is None:
            return "ERROR"
        ok = self.value >= self.threshold if self.higher_is_better else self.value <= self.threshold
        return "PASS" if ok and self.extra_ok else "MISS"

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "target": self.text,
            "value": self.value,
            "threshold": self.threshold,
            "higher_is_better": self.higher_is_better,
            "status": self.status,
            "detail": self.detail,
            "judged": self.judged,
        }


def _log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _us(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _table(
    results: Results,
    row: int,
    base: Callable[[str], str | None],
    vs: str,
    extra: tuple[tuple[str, str], ...] = (("server_cpu_us_per_call", "srv CPU"),),
) -> list[str]:
    """Each variant's median time per call (and ``extra`` figures), and the median of
    its per-round time ratios to ``base(variant)``."""
    variants = results.rows.get(row, {})
    notes = [f"  note: {note}" for note in results.notes.get(row, [])]
    if not variants:
        return notes
    labels = results.labels.get(row, {})
    width = max([len(label) for label in labels.values()] + [30])
    head = f"  {'variant':{width}}  {'us/call':>9}"
    head += "".join(f"  {name:>8}" for _, name in extra)
    lines = [f"{head}  {vs:>9}"]
    for variant, rounds in variants.items():
        per = median_of(results, row, variant, "us_per_call")
        line = f"  {labels[variant]:{width}}  {_us(per):>9}"
        for key, _ in extra:
            line += f"  {_us(median_of(results, row, variant, key)):>8}"
        other = base(variant)
        ratio = paired_ratio(results, row, variant, other, "us_per_call") if other else None
        line += f"  {ratio:8.2f}x" if ratio is not None else f"  {'-':>9}"
        errs = [str(v["error"])[:80] for v in rounds if "error" in v]
        if errs:
            line += f"  [{len(errs)} failed: {errs[0]}]"
        lines.append(line)
    return lines + notes
