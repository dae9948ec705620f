"""The eras' names: ``handshake`` and ``stateless``, the old ``legacy`` and
``modern`` still accepted as deprecated spellings."""

import pytest

from sansio_mcp import ClientSession, Era, LocalProtocolError
from sansio_mcp.tasks import CORE_TASKS_REVISION, LEGACY_TASKS_REVISION, poll_seconds


@pytest.mark.parametrize(
    ("given", "mode", "method"),
    [
        ("handshake", "handshake", "initialize"),
        ("legacy", "handshake", "initialize"),
        ("stateless", "stateless", "server/discover"),
        ("modern", "stateless", "server/discover"),
    ],
)
def test_mode_spellings_start_the_same_era(given: str, mode: str, method: str) -> None:
    session = ClientSession(mode=given)
    assert session.mode == mode
    session.start()
    assert method.encode() in session.data_to_send()


def test_unknown_mode_is_refused_naming_the_spellings() -> None:
    with pytest.raises(LocalProtocolError, match="handshake, stateless or auto"):
        ClientSession(mode="classic")


def test_old_names_are_aliases() -> None:
    assert Era.LEGACY is Era.HANDSHAKE and Era.MODERN is Era.STATELESS
    assert list(Era) == [Era.HANDSHAKE, Era.STATELESS]
    assert Era("legacy") is Era("handshake") and Era("modern") is Era("stateless")
    assert LEGACY_TASKS_REVISION == CORE_TASKS_REVISION == "2025-11-25"


def test_poll_seconds_reads_the_core_form_under_either_keyword() -> None:
    task = {"pollInterval": 2500, "pollIntervalMs": 100}
    assert poll_seconds(task) == 0.1
    assert poll_seconds(task, core_form=True) == poll_seconds(task, legacy=True) == 2.5
