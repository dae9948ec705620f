"""Raw 2026-07-28 rounds addressed to one replica (httpx), so a test decides which
replica answers which round."""

from __future__ import annotations

from typing import Any

import httpx

from tests.auth.test_task_owners import _message
from tests.transports.helpers import POST_HEADERS, stateless_headers, stateless_request

#: What a 2026-07-28 client declares so the example server may ask it questions.
CAPABILITIES: dict[str, Any] = {"elicitation": {"form": {}}, "sampling": {}}


def stateless_round(
    url: str,
    name: str,
    arguments: dict[str, Any],
    *,
    state: str | None = None,
    responses: dict[str, Any] | None = None,
    token: str | None = None,
) -> dict[str, Any]:
    """One 2026-07-28 ``tools/call`` round, POSTed to ``url``: its JSON-RPC answer."""
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if state is not None:
        params["requestState"] = state
    if responses is not None:
        params["inputResponses"] = responses
    message = stateless_request("tools/call", params, capabilities=CAPABILITIES)
    headers = {**POST_HEADERS, **stateless_headers(message)}
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    response = httpx.post(url, json=message, headers=headers, timeout=30)
    assert response.status_code == 200, (response.status_code, response.text)
    return _message(response.content)


def accept(answer: str) -> dict[str, Any]:
    return {"input-1": {"action": "accept", "content": {"answer": answer}}}


def elicit_across(
    first: str, second: str, *, token: str | None = None, second_token: str | None = None
) -> dict[str, Any]:
    """``elicit``'s first round at ``first``, its second at ``second``: the second's answer."""
    asked = stateless_round(first, "elicit", {"question": "colour?"}, token=token)
    result = asked["result"]
    assert result["resultType"] == "input_required", asked
    assert result["inputRequests"]["input-1"]["method"] == "elicitation/create"
    return stateless_round(
        second,
        "elicit",
        {"question": "colour?"},
        state=result["requestState"],
        responses=accept("teal"),
        token=second_token if second_token is not None else token,
    )
