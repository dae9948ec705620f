#!/usr/bin/env python3
"""Run the official MCP conformance suite's server checks against the A2A bridge.

    python conformance/a2a_bridge.py                  # both requirement sets, trio
    python conformance/a2a_bridge.py --backend asyncio --run 2026-07-28 --out DIR

Starts the fixture A2A agent (``python -m sansio_mcp_testing.a2a_agent``) and
``sansio-mcp a2a-bridge`` in front of it on free loopback ports, then runs
``conformance server`` for the 2025-11-25 and 2026-07-28 requirement sets with the
bridge's own baseline, ``conformance/a2a-bridge-baseline.yml``: the scenarios that
call the suite's own fixture tools, prompts and resources, which a bridge to A2A
agents does not have, each with its reason.  Exit status as ``run.py``'s: 0 when
every other scenario passed and no baseline entry passed.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from run import (  # noqa: E402
    REPO,
    Run,
    _stop,
    missing_prerequisites,
    report,
    results_folder,
    run_suite,
)

BASELINE = HERE / "a2a-bridge-baseline.yml"
LABELS = ("2025-11-25", "2026-07-28")


@contextmanager
def _child(command: list[str], pattern: str, log: Path, *, on: str = "stdout") -> Iterator[str]:
    """A child process of ours; yields the first match of ``pattern`` in its output."""
    with log.open("w", encoding="utf-8") as sink:
        process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE if on == "stdout" else sink,
            stderr=subprocess.PIPE if on == "stderr" else sink,
            text=True,
            cwd=REPO,
        )
        try:
            stream = process.stdout if on == "stdout" else process.stderr
            assert stream is not None
            line = stream.readline()
            match = re.search(pattern, line)
            if match is None:
                raise RuntimeError(f"{command[2:4]} said {line!r} (see {log})")
            yield match.group(0)
        finally:
            _stop(process)


@contextmanager
def bridge(out_root: Path, backend: str) -> Iterator[str]:
    """The fixture agent and the bridge in front of it; yields the bridge's URL."""
    agent_command = [sys.executable, "-m", "sansio_mcp_testing.a2a_agent", "--port", "0"]
    with _child(agent_command, r"http://\S+/", out_root / "agent.log") as agent_url:
        config = out_root / "agents.json"
        config.write_text(json.dumps({"agents": {"fixture": {"url": agent_url}}}))
        command = [sys.executable, "-m", "sansio_mcp_cli", "a2a-bridge", "--config", str(config)]
        command += ["--port", "0", "--backend", backend]
        with _child(command, r"http://\S+/mcp", out_root / "bridge.log", on="stderr") as url:
            yield url


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, help="results directory (default: a new temp dir)")
    parser.add_argument("--run", action="append", choices=LABELS, help="requirement set")
    parser.add_argument("--backend", choices=("trio", "asyncio"), default="trio")
    parser.add_argument("--baseline", type=Path, default=BASELINE)
    parser.add_argument("--markdown", type=Path, help="also write the result table here")
    args = parser.parse_args(argv)
    problem = missing_prerequisites()
    if problem is not None:
        print(problem, file=sys.stderr)
        return 2
    out_root = results_folder(args.out, "a2a-bridge-conformance-")
    with bridge(out_root, args.backend) as url:
        results = [
            run_suite(Run("server", label), out_root, server_url=url, baseline_path=args.baseline)
            for label in args.run or LABELS
        ]
    return report(results, out_root, args.markdown)


if __name__ == "__main__":
    sys.exit(main())
