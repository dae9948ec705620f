"""A pytest plugin: check an MCP server from your own test suite.

Two ways in (the plugin is registered by ``pip install 'sansio-mcp[testing]'``):

* The fixture ``mcp_server_checker``::

      def test_my_server(mcp_server_checker):
          report = mcp_server_checker(["python", "-m", "my_server"], examples=10)
          report.assert_clean()

  It takes a command (list) or a URL plus any :class:`CheckOptions` field,
  runs the checker, and returns the :class:`Report`.

* The option ``--mcp-check "COMMAND ..."`` (or a URL) adds one test per
  property to the run, named ``mcp-check::<property>``; each fails with the
  violations of its property (transcripts included).  ``--mcp-check-examples``,
  ``--mcp-check-timeout``, ``--mcp-check-protocol-version``, the safety options
  ``--mcp-check-allow-destructive``, ``--mcp-check-allow TOOL``, ``--mcp-check-deny TOOL``
  and ``--mcp-check-read-only``, and ``--mcp-check-schema-dir`` tune it, as the same
  options of ``sansio-mcp check`` do.  Warnings (SHOULD-level) do not
  fail a test unless ``--mcp-check-strict``.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .report import Report

# This module is loaded by every pytest run once sansio-mcp is installed (the
# pytest11 entry point), so the checker (and hypothesis, jsonschema) is only
# imported when a check is asked for.

__all__ = ["mcp_server_checker"]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mcp-check", "property-based checks of an MCP server (sansio-mcp)")
    group.addoption("--mcp-check", metavar="COMMAND|URL", help="the server to check")
    group.addoption("--mcp-check-examples", type=int, default=10, help="examples per tool")
    group.addoption("--mcp-check-timeout", type=float, default=10.0, help="seconds per request")
    group.addoption("--mcp-check-seed", type=int, help="the Hypothesis seed")
    group.addoption(
        "--mcp-check-protocol-version",
        action="append",
        metavar="REV",
        help="revision to check (repeatable; default: all the server claims)",
    )
    group.addoption(
        "--mcp-check-allow-destructive",
        action="store_true",
        help="also call tools annotated destructiveHint: true",
    )
    group.addoption(
        "--mcp-check-allow",
        action="append",
        default=[],
        metavar="TOOL",
        help="call this tool even if destructive (repeatable)",
    )
    group.addoption(
        "--mcp-check-deny",
        action="append",
        default=[],
        metavar="TOOL",
        help="never call this tool (repeatable)",
    )
    group.addoption(
        "--mcp-check-read-only",
        action="store_true",
        help="call only tools annotated readOnlyHint: true",
    )
    group.addoption(
        "--mcp-check-schema-dir",
        metavar="DIR",
        help="folder of <revision>/schema.json searched first",
    )
    group.addoption("--mcp-check-strict", action="store_true", help="warnings fail the tests too")


def _target(text: str) -> list[str] | str:
    if text.startswith(("http://", "https://")):
        return text
    return shlex.split(text)


class _Run:
    """The checker run behind the ``--mcp-check`` tests (made once, on first use)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.report: Report | None = None

    def get(self) -> Report:
        from .checker import CheckOptions, run_check

        if self.report is None:
            option = self.config.getoption
            self.report = run_check(
                _target(option("--mcp-check")),
                CheckOptions(
                    examples=option("--mcp-check-examples"),
                    timeout=option("--mcp-check-timeout"),
                    seed=option("--mcp-check-seed"),
                    protocol_versions=option("--mcp-check-protocol-version"),
                    allow_destructive=option("--mcp-check-allow-destructive"),
                    allow=option("--mcp-check-allow"),
                    deny=option("--mcp-check-deny"),
                    read_only=option("--mcp-check-read-only"),
                    schema_dir=option("--mcp-check-schema-dir"),
                ),
            )
        return self.report


class MCPPropertyItem(pytest.Item):
    def __init__(self, *, run: _Run, prop: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.run = run
        self.prop = prop

    def runtest(self) -> None:
        report = self.run.get()
        result = report.properties[self.prop]
        if result.status == "skipped":
            pytest.skip(result.reason or "skipped")
        strict = self.config.getoption("--mcp-check-strict")
        found = [v for v in report.by_property(self.prop) if strict or v.severity == "error"]
        if found:
            raise _PropertyViolated(report.to_markdown(only=found))

    def repr_failure(self, excinfo: Any, style: Any = None) -> Any:
        if isinstance(excinfo.value, _PropertyViolated):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[str, int | None, str]:
        return "mcp-check", None, f"mcp-check::{self.prop}"


class _PropertyViolated(Exception):
    pass


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    if not config.getoption("--mcp-check"):
        return
    from .checker import PROPERTIES

    run = _Run(config)
    for prop in PROPERTIES:
        items.append(
            MCPPropertyItem.from_parent(session, name=f"mcp-check::{prop}", run=run, prop=prop)
        )


@pytest.fixture
def mcp_server_checker() -> Iterator[Callable[..., Report]]:
    """``check(target, **options) -> Report``: run the checker on a command or URL."""

    def check(target: Sequence[str] | str, **options: Any) -> Report:
        from .checker import CheckOptions, run_check

        return run_check(
            target if isinstance(target, str) else list(target), CheckOptions(**options)
        )

    yield check
