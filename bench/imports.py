"""Import cost of the adapters against ``import mcp`` (issue 37, row 6).

Each case runs in a fresh interpreter (bytecode compiled once beforehand): the CPU time
(``time.process_time``) and the wall time of its statements, and how many modules they
load.  The cases of a round run one after another in a rotated order, so a ratio to
``import mcp`` compares readings of the same minutes.  Run:
``python -m bench.imports [ROUNDS] [--baseline CHECKOUT]``; with ``--baseline`` each case
also runs against that checkout's code, in the same rounds.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

from ._proc import PY, REPO, child_env

#: A stdio server's imports on an adapter.
STDIO_SERVER = (
    "from sansio_mcp.runtime import Server; from {adapter} import serve_stdio; Server('s')"
)

#: (label, statements already run before the clock starts, the timed statements).
CASES = (
    ("import mcp", "", "import mcp"),
    ("import trio", "", "import trio"),
    ("import asyncio", "", "import asyncio"),
    ("import sansio_mcp", "", "import sansio_mcp"),
    ("import trio_adapters", "", "import trio_adapters"),
    ("import trio, trio_adapters", "", "import trio, trio_adapters"),
    ("import trio_adapters, Trio already imported", "import trio", "import trio_adapters"),
    ("import asyncio_adapters", "", "import asyncio_adapters"),
    ("import asyncio, asyncio_adapters", "", "import asyncio, asyncio_adapters"),
    (
        "import asyncio_adapters, asyncio already imported",
        "import asyncio",
        "import asyncio_adapters",
    ),
    *(
        case
        for loop, adapter in (("trio", "trio_adapters"), ("asyncio", "asyncio_adapters"))
        for program, timed in (
            ("stdio server (Server, serve_stdio)", STDIO_SERVER.format(adapter=adapter)),
            ("stdio client (open_stdio_client)", f"from {adapter} import open_stdio_client"),
            ("transport table (BACKEND)", f"from {adapter} import BACKEND"),
        )
        for case in (
            (f"{adapter} {program}", "", timed),
            (f"{adapter} {program}, {loop} already imported", f"import {loop}", timed),
        )
    ),
)

SNIPPET = (
    "import sys, time\n{prelude}\nn = len(sys.modules)\n"
    "c, w = time.process_time(), time.perf_counter()\n{timed}\n"
    "c, w = time.process_time() - c, time.perf_counter() - w\n"
    "print(c, w, len(sys.modules) - n)"
)


def _run(checkout: Path, prelude: str, timed: str) -> tuple[float, float, int]:
    env = child_env()
    env["PYTHONPATH"] = str(checkout)
    code = SNIPPET.format(prelude=prelude, timed=timed)
    out = subprocess.run(
        [PY, "-c", code], cwd=checkout, env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    return float(out[0]) * 1e3, float(out[1]) * 1e3, int(out[2])


def _summary(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} ({min(values):.1f}-{max(values):.1f})"


def _ratio(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} ({min(values):.3f}-{max(values):.3f})"


def main(argv: list[str]) -> int:
    rounds = int(argv[0]) if argv and argv[0].isdigit() else 9
    checkouts = {"ours": REPO}
    if "--baseline" in argv:
        checkouts["baseline"] = Path(argv[argv.index("--baseline") + 1]).resolve()
    runs = [(name, path, case) for name, path in checkouts.items() for case in CASES]
    for _name, path, (_label, prelude, timed) in runs:  # compile the bytecode once
        _run(path, prelude, timed)
    cpu: dict[tuple[str, str], list[float]] = {}
    wall: dict[tuple[str, str], list[float]] = {}
    modules: dict[tuple[str, str], int] = {}
    ratios: dict[tuple[str, str], list[float]] = {}
    for r in range(rounds):
        k = r % len(runs)
        got: dict[tuple[str, str], float] = {}
        for name, path, (label, prelude, timed) in runs[k:] + runs[:k]:
            c, w, n = _run(path, prelude, timed)
            cpu.setdefault((name, label), []).append(c)
            wall.setdefault((name, label), []).append(w)
            modules[name, label] = n
            got[name, label] = c
        mcp = got["ours", "import mcp"]
        for key, c in got.items():
            ratios.setdefault(key, []).append(c / mcp)
    rows = []
    width = max(len(label) for label, _, _ in CASES)
    for key in cpu:
        rows.append(
            {
                "checkout": key[0],
                "case": key[1],
                "cpu_ms": _summary(cpu[key]),
                "wall_ms": _summary(wall[key]),
                "x_import_mcp_cpu": _ratio(ratios[key]),
                "modules": modules[key],
            }
        )
        print(
            f"{key[0]:8s} {key[1]:{width}s} cpu {_summary(cpu[key]):22s} wall "
            f"{_summary(wall[key]):22s} x mcp {_ratio(ratios[key]):22s} {modules[key]} modules"
        )
    print(json.dumps({"rounds": rounds, "rows": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
