"""``python -m bench.pin CPU -- COMMAND...``: run COMMAND on that CPU only.

The stdio rows can pin a client and its server (``python -m bench --pin``);
this starts the server on its CPU without depending on ``taskset``.
"""

from __future__ import annotations

import os
import sys


def main() -> None:
    cpu, separator, *command = sys.argv[1:]
    if separator != "--" or not command:
        raise SystemExit("usage: python -m bench.pin CPU -- COMMAND...")
    os.sched_setaffinity(0, {int(cpu)})
    os.execvp(command[0], command)


if __name__ == "__main__":
    main()
