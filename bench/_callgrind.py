"""Running a command under valgrind's callgrind and reading the instructions it counted
(``bench.stdio_cpu --instructions``, ``bench.stateless_e2e --instructions``)."""

from __future__ import annotations

import os
import re


def callgrind_command(folder: str, *argv: str) -> tuple[str, list[str]]:
    """(the dump's path, the command running ``argv`` under callgrind), its files in
    ``folder``."""
    out = os.path.join(folder, "callgrind.out")
    command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"]
    return out, [*command, f"--log-file={folder}/log", *argv]


def callgrind_total(dump: str) -> int:
    """The instructions a callgrind dump counted in all."""
    with open(dump) as text:
        found = re.search(r"^(?:summary|totals): (\d+)", text.read(), re.MULTILINE)
    assert found is not None, "no totals in callgrind's dump"
    return int(found.group(1))
