"""What the config files of the gateway, the A2A bridge and the A2E bridge share
(``sansio_mcp._config``): each loader refuses a key given twice, which plain JSON
would settle silently by keeping the last, and text that is not JSON."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from sansio_mcp._config import ConfigError, check_url, load_json
from sansio_mcp_apps import a2a, a2e
from sansio_mcp_apps.gateway import parse_config as parse_gateway_config

#: loader, a config giving a key twice, the same config with the second key renamed.
LOADERS: dict[str, tuple[Callable[[str], Any], str, str]] = {
    "gateway": (
        lambda text: parse_gateway_config(load_json(text)),
        '{"connectors": {"a": {"transport": "stdio", "cmd": ["x"]},'
        ' "a": {"transport": "stdio", "cmd": ["y"]}}}',
        '{"connectors": {"a": {"transport": "stdio", "cmd": ["x"]},'
        ' "b": {"transport": "stdio", "cmd": ["y"]}}}',
    ),
    "a2a bridge": (
        a2a.load_config,
        '{"agents": {"a": {"url": "http://x"}, "a": {"url": "http://y"}}}',
        '{"agents": {"a": {"url": "http://x"}, "b": {"url": "http://y"}}}',
    ),
    "a2e bridge": (
        a2e.load_config,
        '{"servers": [{"server_id": "s", "cmd": ["x"], "cmd": ["y"]}]}',
        '{"servers": [{"server_id": "s", "cmd": ["x"], "env": {}}]}',
    ),
}


@pytest.mark.parametrize("which", sorted(LOADERS))
def test_a_key_given_twice_is_refused(which: str) -> None:
    load, twice, once = LOADERS[which]
    with pytest.raises(ConfigError, match=r"'(a|cmd)' is given twice in one object"):
        load(twice)
    assert load(once) is not None


@pytest.mark.parametrize("which", sorted(LOADERS))
def test_text_that_is_not_json_is_refused(which: str) -> None:
    load, _, _ = LOADERS[which]
    with pytest.raises(ConfigError, match="the config is not JSON"):
        load('{"agents": ')
    with pytest.raises(ConfigError, match="not UTF-8"):
        load(b'{"x": "\xff"}')  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://", "has no host"),
        ("http:///mcp", "has no host"),
        ("http://:9/mcp", "has no host"),
        ("http://h:99999/mcp", "has an invalid port"),
        ("http://h:port/mcp", "has an invalid port"),
    ],
)
def test_a_url_without_a_host_or_with_a_bad_port_is_refused(url: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=f"^where {problem}"):
        check_url(url, "where")
    with pytest.raises(ConfigError, match=f"agents.a.url {problem}"):
        a2a.parse_config({"agents": {"a": {"url": url}}})


@pytest.mark.parametrize("url", ["http://h/mcp", "https://h:8443/", "http://[::1]:9/mcp"])
def test_a_good_url_passes(url: str) -> None:
    check_url(url, "where")
    assert a2a.parse_config({"agents": {"a": {"url": url}}}).agents[0].url == url
