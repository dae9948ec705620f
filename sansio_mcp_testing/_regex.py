"""Regular expressions searched in time linear in the text, for the patterns a
server under test puts in its schemas: Python's backtracking ``re`` takes
exponential time on ``^(a+)+$`` against ``"aaaa…!"`` and holds the interpreter
all the while (no timeout can stop it).

The pattern is parsed by ``re``'s own parser (so it means what ``jsonschema``
would make of it) and run as a Thompson automaton, its state sets cached as a
lazy DFA.  Constructs no automaton can run (backreferences, lookaround, atomic
groups, possessive repeats) and flags other than DOTALL and MULTILINE are
refused with :class:`UnsupportedPattern`; so is a pattern whose counted repeats
expand past :data:`MAX_STATES`."""

from __future__ import annotations

import functools
import re
import re._constants as sre  # type: ignore[import-not-found]
import re._parser as sre_parse  # type: ignore[import-not-found]
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["MAX_STATES", "UnsupportedPattern", "search", "unsupported"]

#: Automaton states a pattern may expand to (``(a{1,100}){1,100}`` is 10,000).
MAX_STATES = 5000
#: Cached transitions per pattern (past it the cache starts over: still linear).
_MAX_CACHED = 50_000

_CHAR, _SPLIT, _ASSERT, _MATCH = range(4)
_ALLOWED_FLAGS = sre.SRE_FLAG_UNICODE | sre.SRE_FLAG_VERBOSE | sre.SRE_FLAG_DOTALL
_UNSUPPORTED = {
    sre.GROUPREF: "a backreference",
    sre.GROUPREF_EXISTS: "a conditional group",
    sre.ASSERT: "a lookaround",
    sre.ASSERT_NOT: "a lookaround",
    sre.ATOMIC_GROUP: "an atomic group",
    sre.POSSESSIVE_REPEAT: "a possessive repeat",
}


class UnsupportedPattern(ValueError):
    """A pattern this engine will not run (its message says why)."""


def _word(c: str) -> bool:
    return c.isalnum() or c == "_"


_CATEGORIES: dict[Any, Callable[[str], bool]] = {
    sre.CATEGORY_DIGIT: str.isdecimal,
    sre.CATEGORY_NOT_DIGIT: lambda c: not c.isdecimal(),
    sre.CATEGORY_SPACE: str.isspace,
    sre.CATEGORY_NOT_SPACE: lambda c: not c.isspace(),
    sre.CATEGORY_WORD: _word,
    sre.CATEGORY_NOT_WORD: lambda c: not _word(c),
}


class _Program:
    """A pattern's automaton: ``kind[s]``, ``arg[s]`` and ``out[s]`` per state."""

    def __init__(self, pattern: str) -> None:
        try:
            parsed = sre_parse.parse(pattern)
        except re.error as exc:
            raise UnsupportedPattern(f"it is no valid regular expression ({exc})") from None
        flags = parsed.state.flags
        if flags & ~(_ALLOWED_FLAGS | sre.SRE_FLAG_MULTILINE):
            raise UnsupportedPattern("it sets a flag other than s, m or x")
        self.dotall = bool(flags & sre.SRE_FLAG_DOTALL)
        self.multiline = bool(flags & sre.SRE_FLAG_MULTILINE)
        self.kind: list[int] = []
        self.arg: list[Any] = []
        self.out: list[list[int]] = []
        self.asserts = False
        self.match = self._state(_MATCH, None, [])
        self.start = self._sequence(list(parsed), self.match)
        self._steps: dict[tuple[frozenset[int], str, Any], frozenset[int]] = {}

    def _state(self, kind: int, arg: Any, out: list[int]) -> int:
        if len(self.kind) >= MAX_STATES:
            raise UnsupportedPattern(f"its repeats expand past {MAX_STATES} states")
        self.kind.append(kind)
        self.arg.append(arg)
        self.out.append(out)
        return len(self.kind) - 1

    def _sequence(self, items: list[tuple[Any, Any]], then: int) -> int:
        for op, av in reversed(items):
            then = self._item(op, av, then)
        return then

    def _item(self, op: Any, av: Any, then: int) -> int:
        if op in _UNSUPPORTED:
            raise UnsupportedPattern(f"it uses {_UNSUPPORTED[op]}")
        if op is sre.LITERAL:
            return self._state(_CHAR, chr(av).__eq__, [then])
        if op is sre.NOT_LITERAL:
            return self._state(_CHAR, chr(av).__ne__, [then])
        if op is sre.ANY:
            return self._state(_CHAR, (lambda c: True) if self.dotall else "\n".__ne__, [then])
        if op is sre.IN:
            return self._state(_CHAR, _char_set(av), [then])
        if op is sre.BRANCH:
            return self._state(_SPLIT, None, [self._sequence(list(alt), then) for alt in av[1]])
        if op is sre.SUBPATTERN:
            _group, add, remove, body = av
            if (add | remove) & ~_ALLOWED_FLAGS:
                raise UnsupportedPattern("it sets a flag other than s or x in a group")
            if (add | remove) & sre.SRE_FLAG_DOTALL:
                raise UnsupportedPattern("it sets a flag in a group")
            return self._sequence(list(body), then)
        if op in (sre.MAX_REPEAT, sre.MIN_REPEAT):  # greedy or lazy: the same matches
            low, high, body = av
            body = list(body)
            tail = then
            if high is sre.MAXREPEAT:
                tail = self._state(_SPLIT, None, [])
                self.out[tail] += [self._sequence(body, tail), then]
            else:
                for _ in range(high - low):
                    tail = self._state(_SPLIT, None, [self._sequence(body, tail), tail])
            for _ in range(low):
                tail = self._sequence(body, tail)
            return tail
        if op is sre.AT:
            self.asserts = True
            return self._state(_ASSERT, av, [then])
        raise UnsupportedPattern(f"it uses {str(op).lower()}")

    # Running -------------------------------------------------------------------------

    def _holds(self, code: Any, text: str, i: int) -> bool:
        n = len(text)
        before = text[i - 1] if i > 0 else ""
        after = text[i] if i < n else ""
        if code is sre.AT_BEGINNING_STRING:
            return i == 0
        if code is sre.AT_END_STRING:
            return i == n
        if code is sre.AT_BEGINNING:
            return i == 0 or (self.multiline and before == "\n")
        if code is sre.AT_END:
            # Python's $: the end, or a final newline's place (any newline's, multiline).
            return i == n or (after == "\n" and (self.multiline or i == n - 1))
        boundary = (bool(before) and _word(before)) != (bool(after) and _word(after))
        if code is sre.AT_BOUNDARY:
            return boundary
        if code is sre.AT_NON_BOUNDARY:
            return bool(text) and not boundary
        raise UnsupportedPattern(f"it uses the anchor {str(code).lower()}")

    def _closure(self, states: Iterator[int], text: str, i: int) -> frozenset[int]:
        """The character-reading (and matching) states reached from ``states`` at ``i``."""
        found: set[int] = set()
        seen: set[int] = set()
        pending = list(states)
        while pending:
            state = pending.pop()
            if state in seen:
                continue
            seen.add(state)
            kind = self.kind[state]
            if kind == _SPLIT:
                pending.extend(self.out[state])
            elif kind == _ASSERT:
                if self._holds(self.arg[state], text, i):
                    pending.extend(self.out[state])
            else:
                found.add(state)
        return frozenset(found)

    def _context(self, text: str, i: int) -> Any:
        """What the anchors can see at ``i`` (None: the pattern has none)."""
        if not self.asserts:
            return None
        n = len(text)
        return (i == 0, i == n, i == n - 1, text[i - 1] if i else "", text[i] if i < n else "")

    def search(self, text: str) -> bool:
        steps = self._steps
        current = self._closure(iter([self.start]), text, 0)
        for i, c in enumerate(text):
            if self.match in current:
                return True
            key = (current, c, self._context(text, i + 1))
            following = steps.get(key)
            if following is None:
                moved = [
                    self.out[s][0] for s in current if self.kind[s] == _CHAR and self.arg[s](c)
                ]
                following = self._closure(iter([*moved, self.start]), text, i + 1)
                if len(steps) >= _MAX_CACHED:
                    steps.clear()
                steps[key] = following
            current = following
        return self.match in current


def _char_set(items: list[tuple[Any, Any]]) -> Callable[[str], bool]:
    literals: set[str] = set()
    ranges: list[tuple[int, int]] = []
    tests: list[Callable[[str], bool]] = []
    negate = False
    for op, av in items:
        if op is sre.NEGATE:
            negate = True
        elif op is sre.LITERAL:
            literals.add(chr(av))
        elif op is sre.RANGE:
            ranges.append(av)
        elif op is sre.CATEGORY and av in _CATEGORIES:
            tests.append(_CATEGORIES[av])
        else:
            raise UnsupportedPattern(f"it uses {str(op).lower()} in a character set")

    def test(c: str) -> bool:
        code = ord(c)
        hit = (
            c in literals
            or any(low <= code <= high for low, high in ranges)
            or any(t(c) for t in tests)
        )
        return hit != negate

    return test


@functools.lru_cache(maxsize=256)
def _program(pattern: str) -> _Program | str:
    try:
        return _Program(pattern)
    except UnsupportedPattern as exc:
        return str(exc)


def unsupported(pattern: str) -> str | None:
    """Why :func:`search` will not run ``pattern`` (None: it will)."""
    program = _program(pattern)
    return program if isinstance(program, str) else None


def search(pattern: str, text: str) -> bool:
    """``re.search(pattern, text) is not None``, in time linear in ``text``; raises
    :class:`UnsupportedPattern` for a pattern it cannot run so."""
    program = _program(pattern)
    if isinstance(program, str):
        raise UnsupportedPattern(program)
    return program.search(text)
