"""The checker against a server that attacks it: a schema pattern that takes a
backtracking regex engine exponential time, and a flood of notifications.  The
check ends, reports what it found, and its transcripts stay within their bounds."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

from sansio_mcp_testing._recorder import RECEIVED, Recorder
from sansio_mcp_testing._regex import MAX_STATES, search, unsupported
from sansio_mcp_testing._validation import (
    BudgetExceeded,
    checked_validator,
    checked_validator_for,
    time_budget,
    unevaluated_unchecked,
)

from .defective_server import HOSTILE
from .test_defects import DEFECTIVE, check, found

# -- the linear regex engine ---------------------------------------------------------

_ATOMS = [
    "a",
    "b",
    ".",
    r"\d",
    r"\w",
    r"\s",
    r"\W",
    "[ab]",
    "[^a]",
    "[a-c1]",
    r"\b",
    r"\B",
    "^",
    "$",
]


@st.composite
def _patterns(draw: st.DrawFn, depth: int = 0) -> str:
    parts = []
    for _ in range(draw(st.integers(1, 3))):
        if depth < 2 and draw(st.booleans()):
            inner = "|".join(draw(st.lists(_patterns(depth + 1), min_size=1, max_size=2)))
            atom = f"({inner})"
        else:
            atom = draw(st.sampled_from(_ATOMS))
        quantifier = draw(st.sampled_from(["", "", "*", "+", "?", "{2}", "{1,2}", "*?", "{0,}"]))
        if atom in ("^", "$", r"\b", r"\B"):
            quantifier = ""
        parts.append(atom + quantifier)
    return "".join(parts)


@given(_patterns(), st.text(alphabet="ab1 _\n-", max_size=8))
def test_search_agrees_with_re(pattern: str, text: str) -> None:
    assert search(pattern, text) == (re.search(pattern, text) is not None)


@pytest.mark.parametrize(
    ("pattern", "missed", "matched"),
    [
        (r"^(a+)+$", "a" * 100_000 + "!", "a" * 100_000),
        (r"^(a|aa)*$", "a" * 100_000 + "!", "a" * 100_000),
        (r"(\w+\s?)*!$", "word " * 20_000 + "?", "word " * 20_000 + "!"),
        (r"^(a*)*b", "a" * 100_000, "a" * 100_000 + "b"),
    ],
)
def test_catastrophic_patterns_run_in_linear_time(pattern: str, missed: str, matched: str) -> None:
    # Python's re takes exponential time on each ``missed`` (the run never ends).
    assert search(pattern, missed) is False
    assert search(pattern, matched) is True


def test_what_cannot_run_in_linear_time_is_refused_with_why() -> None:
    assert unsupported(r"(a)\1") == "it uses a backreference"
    assert unsupported(r"a(?=b)") == "it uses a lookaround"
    assert unsupported(r"(?>a*)b") == "it uses an atomic group"
    assert unsupported(r"(?i)abc") == "it sets a flag other than s, m or x"
    assert unsupported("(a{1,100}){1,100}") == f"its repeats expand past {MAX_STATES} states"
    assert unsupported("(") is not None and "no valid regular expression" in unsupported("(")
    assert unsupported(r"^[a-z]+@\w+\.com$") is None


_SCHEMA = {
    "type": "object",
    "properties": {"word": {"type": "string", "pattern": "^(a+)+$"}},
    "patternProperties": {"^x(a+)+$": {"type": "integer"}},
    "additionalProperties": False,
    "uniqueItems": True,
}


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-2, 2)
    | st.sampled_from([1.0, 0.0, 2.5])
    | st.text("ab", max_size=2),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text("ab", max_size=2), inner, max_size=3)
    ),
    max_leaves=6,
)


@given(
    st.dictionaries(
        st.sampled_from(["word", "xaa", "xa!", "other", "xaaa"]),
        st.sampled_from(["a", "aa!", 3, "", "aaa"]),
    )
    | st.lists(_JSON, max_size=5)
)
def test_the_checked_validator_judges_as_jsonschema_does(instance: object) -> None:
    def errors(cls: type) -> list[str]:
        return sorted(e.message for e in cls(_SCHEMA).iter_errors(instance))

    linear = checked_validator(jsonschema.Draft202012Validator)
    assert errors(linear) == errors(jsonschema.Draft202012Validator)


def test_the_checked_validator_passes_a_pattern_it_cannot_run() -> None:
    linear = checked_validator(jsonschema.Draft202012Validator)
    schema = {"type": "string", "pattern": r"(a)\1"}
    assert linear(schema).is_valid("b")


def test_unique_items_are_told_apart_in_linear_time() -> None:
    # jsonschema compares every pair of objects: 100,000 distinct ones never ended.
    validator = checked_validator(jsonschema.Draft202012Validator)({"uniqueItems": True})
    distinct = [{"n": i} for i in range(100_000)]
    assert validator.is_valid(distinct)
    assert not validator.is_valid([*distinct, {"n": 5}])


def _nested_any_of(depth: int) -> dict[str, object]:
    """Each level two ways to the next: 2**depth paths for a value that fails them all."""
    defs: dict[str, object] = {f"l{depth}": {"type": "string"}}
    for level in range(depth):
        step = {"$ref": f"#/$defs/l{level + 1}"}
        defs[f"l{level}"] = {"anyOf": [step, step]}
    return {"$defs": defs, "$ref": "#/$defs/l0"}


def test_validation_stops_at_its_budget() -> None:
    validator = checked_validator(jsonschema.Draft202012Validator)(_nested_any_of(40))
    with pytest.raises(BudgetExceeded), time_budget(0.2):
        validator.is_valid(7)
    assert validator.is_valid("fine")  # without a budget, and a value the first path takes


def test_a_backtracking_output_pattern_is_judged_in_time(tmp_path: Path, schema_dir: str) -> None:
    data = check(tmp_path, schema_dir, *DEFECTIVE, "backtracking-pattern", revision="2025-06-18")
    finding = found(data, "valid-arguments", "structuredContent does not match the outputSchema")
    assert finding["tool"] == "match"
    assert data["properties"]["malformed-jsonrpc"]["checks"] == 7, data["stderr"][-2000:]


# -- the transcript's bounds -----------------------------------------------------------


def _notification(size: int) -> bytes:
    params = {"level": "info", "data": "x" * size}
    return json.dumps(
        {"jsonrpc": "2.0", "method": "notifications/message", "params": params}
    ).encode()


def test_a_flood_is_counted_not_kept() -> None:
    recorder = Recorder("2025-06-18", max_messages=1000, max_bytes=4 << 20)
    recorder.sent_obj({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    flood = _notification(1 << 20) + b"\n"
    for _ in range(300):
        for start in range(0, len(flood), 65536):  # as a pipe hands it over
            recorder.received_bytes(flood[start : start + 65536])
    recorder.received_bytes(b'{"jsonrpc": "2.0", "id": 1, "result": {}}\n')
    kept = [line for line in recorder.lines if line.direction == RECEIVED]
    assert sum(len(line.text) for line in kept) <= 4 << 20
    assert len(recorder.lines) <= 7  # our ping, three notifications, the count, the answer
    assert recorder.unrecorded == 297
    assert recorder.unrecorded_bytes == 297 * (len(flood) - 1)
    counted = recorder.lines[-2]
    assert counted.unrecorded == 297
    assert counted.render().startswith("< … 297 more message(s) from the server (")
    # The answer to our request is kept though the bounds were passed long before.
    answer = recorder.lines[-1]
    assert answer.obj == {"jsonrpc": "2.0", "id": 1, "result": {}}


def test_the_message_bound_holds_for_small_messages() -> None:
    recorder = Recorder("2025-06-18", max_messages=50)
    for _ in range(10_000):
        recorder.received_bytes(_notification(10) + b"\n")
    assert len(recorder.lines) == 51
    assert recorder.unrecorded == 9_950
    assert recorder.lines[-1].unrecorded == 9_950


async def test_an_answer_after_a_flood_is_still_waited_for() -> None:
    recorder = Recorder("2025-06-18", max_messages=2)
    recorder.sent_obj({"jsonrpc": "2.0", "id": 7, "method": "ping"})

    async def flood_then_answer() -> None:
        for _ in range(20):
            recorder.received_bytes(_notification(10) + b"\n")
            await trio.lowlevel.checkpoint()
        recorder.received_bytes(b'{"jsonrpc": "2.0", "id": 7, "result": {}}\n')

    async with trio.open_nursery() as nursery:
        nursery.start_soon(flood_then_answer)
        line = await recorder.wait_for(
            lambda line: isinstance(line.obj, dict) and line.obj.get("id") == 7,
            after=0,
            timeout=30,
        )
    assert line is not None and line.obj["result"] == {}


def test_a_notification_flood_ends_in_a_report_line(tmp_path: Path, schema_dir: str) -> None:
    data = check(
        tmp_path,
        schema_dir,
        *DEFECTIVE,
        "notification-flood",
        revision="2025-06-18",
        options=["--env", "FLOOD_MIB=12", "--max-recorded-bytes", str(4 << 20)],
    )
    skipped = [s for s in data["skipped"] if s["what"] == "transcript"]
    assert skipped, data["skipped"]
    reason = skipped[0]["reason"]
    assert re.match(r"\d+ messages from the server \(\d+ bytes\) not recorded", reason), reason
    assert "--max-recorded-bytes" in reason
    assert int(reason.split()[0]) >= 8  # twelve 1 MiB messages, four fit
    assert data["properties"]["malformed-jsonrpc"]["checks"] == 7, data["stderr"][-2000:]


def test_an_exponential_output_schema_is_given_up_at_the_timeout(
    tmp_path: Path, schema_dir: str
) -> None:
    data = check(tmp_path, schema_dir, *DEFECTIVE, "exponential-schema", revision="2025-06-18")
    skipped = [s for s in data["skipped"] if s["what"] == "tool nest: its structuredContent"]
    assert skipped, data["skipped"]
    assert skipped[0]["reason"] == (
        "not checked: validating a value against its outputSchema took over 1s (--timeout)"
    )
    assert data["properties"]["malformed-jsonrpc"]["checks"] == 7, data["stderr"][-2000:]


def test_every_hostile_mode_is_tested() -> None:
    assert set(HOSTILE) == {"backtracking-pattern", "exponential-schema", "notification-flood"}


def test_unevaluated_properties_beside_patterns_are_left_unchecked() -> None:
    # jsonschema matches patternProperties with re when it looks for unevaluated
    # properties: ^(a+)+$ against a 64-letter key would never end.
    schema = {
        "type": "object",
        "patternProperties": {"^(a+)+$": {"type": "string"}},
        "unevaluatedProperties": False,
    }
    assert unevaluated_unchecked(schema)
    cls = checked_validator_for(schema, jsonschema.Draft202012Validator)
    assert cls(schema).is_valid({"a" * 64 + "!": 1})
    plain = {"type": "object", "properties": {"a": {}}, "unevaluatedProperties": False}
    assert not unevaluated_unchecked(plain)
    assert not checked_validator_for(plain, jsonschema.Draft202012Validator)(plain).is_valid(
        {"b": 1}
    )
