#!/usr/bin/env bash
# Install everything the test suite needs from the project's own files, then run it all.
#
#   bash scripts/test.sh [PYTEST ARGS...]           the locked environment (.venv, requirements/test.lock)
#   bash scripts/test.sh --latest [PYTEST ARGS...]  the newest versions pyproject.toml allows (.venv-latest)
#
# The locked run is what CI runs: every PyPI package comes from requirements/test.lock (exact
# versions and hashes), so what else is installed on the machine changes nothing. --latest is
# how breakage from new releases is found on purpose.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=.venv
latest=0
if [[ "${1:-}" == "--latest" ]]; then
    latest=1
    venv=.venv-latest
    shift
fi

python=${PYTHON:-python3}
if [[ ! -x "$venv/bin/python" ]]; then
    "$python" -m venv "$venv"
fi
py="$PWD/$venv/bin/python"
pip=("$py" -m pip install --quiet --disable-pip-version-check)

if [[ $latest == 1 ]]; then
    "${pip[@]}" --upgrade pip setuptools wheel
    "${pip[@]}" --upgrade --upgrade-strategy eager -e '.[test]'
else
    "${pip[@]}" --require-hashes --no-deps -r requirements/test.lock
    # The project itself, built with the locked setuptools (no second, unpinned download).
    "${pip[@]}" --no-deps --no-build-isolation -e .
fi

# Third-party MCP peers (server-everything, the TypeScript SDK, the conformance suite), pinned by package-lock.json.
npm ci --no-audit --no-fund --loglevel=error

# The benchmark peers that cannot share .venv (fastmcp 4.x; mcp-proxy, which needs mcp<2), each
# in a venv of its own under .bench-venvs/, from its hashed lock (requirements/bench-*.lock):
# the bench smoke test runs their rows. A failure is said in full on a second try.
"$py" -m bench --setup-peers >/dev/null 2>&1 || "$py" -m bench --setup-peers

# redis-server and nginx, for the replica tests (issue 33): Debian's packages, installed when
# missing and this runs as root (as CI does). Elsewhere those tests skip, saying what to install.
if ! command -v redis-server >/dev/null || ! { command -v nginx >/dev/null || [[ -x /usr/sbin/nginx ]]; }; then
    if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
        apt_install=(env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends redis-server nginx)
        # policy-rc.d 101: the packages' own services stay stopped (the tests start their own,
        # on free loopback ports).
        policy=/usr/sbin/policy-rc.d
        had_policy=0
        [[ -e $policy ]] && had_policy=1
        if [[ $had_policy == 0 ]]; then
            printf '#!/bin/sh\nexit 101\n' >"$policy"
            chmod +x "$policy"
        fi
        "${apt_install[@]}" >/dev/null || { apt-get update -qq && "${apt_install[@]}" >/dev/null; }
        [[ $had_policy == 1 ]] || rm -f "$policy"
    else
        echo "redis-server or nginx is missing (the replica tests skip): apt-get install redis-server nginx"
    fi
fi

export PATH="$PWD/$venv/bin:$PATH"
"$py" -m ruff check sansio_mcp trio_adapters asyncio_adapters sansio_mcp_apps sansio_mcp_cli sansio_mcp_testing fuzz tests examples scripts conformance bench
"$py" -m mypy
# The tests run in parallel (pytest-xdist): most of them wait on sockets and child processes,
# so more workers than cores still pay. TEST_WORKERS sets how many (0: all in this process);
# so does a -n of your own, which comes later and wins. worksteal keeps every worker busy
# when the long tests (conformance, bench smoke) land on one.
# pytest exits 5 when it collected nothing: that is a failure here, so it is not masked.
"$py" -m pytest -q -p no:cacheprovider -rs -n "${TEST_WORKERS:-4}" --dist worksteal "$@"
