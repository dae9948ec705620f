"""A tiny description language for JSON shapes: each spec yields a Hypothesis
strategy for valid values, checks a value structurally, and knows where a
value can be broken (a required key to drop, a type to get wrong, a range to
leave).  The MCP message catalogue (:mod:`._catalog`) is written in it."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any, ClassVar, Generic, TypeVar

from hypothesis import strategies as st

from sansio_mcp.jsontext import json_type

__all__ = [
    "AnyJSON",
    "Arr",
    "Bool",
    "Const",
    "Enum",
    "Int",
    "Lazy",
    "Map",
    "Null",
    "Num",
    "Obj",
    "Opaque",
    "Spec",
    "Str",
    "Union",
    "Mutation",
    "mutations",
    "json_type",
    "json_values",
    "WRONG_TYPE_SAMPLES",
]

Path = tuple[str | int, ...]

#: One value of each JSON type, for replacing a value with one of the wrong type.
WRONG_TYPE_SAMPLES: dict[str, Any] = {
    "string": "not-the-right-type",
    "integer": 7,
    "number": 0.5,
    "boolean": True,
    "null": None,
    "array": [1, "two"],
    "object": {"unexpected": "object"},
}


def _type_ok(value: Any, types: frozenset[str]) -> bool:
    t = json_type(value)
    if t in types:
        return True
    if t == "integer" and "number" in types:
        return True
    # JSON Schema: 1.0 is an integer.
    return t == "number" and "integer" in types and float(value).is_integer()


def json_values(
    max_leaves: int = 8, *, stateless: bool = False, modern: bool = False
) -> st.SearchStrategy[Any]:
    """Any JSON value (finite numbers, short strings).

    ``stateless``: the 2026-07-28 ``JSONValue`` (no null, no fractional numbers);
    ``modern`` is its deprecated alias.
    """
    scalars: st.SearchStrategy[Any] = (
        st.booleans() | st.integers(-(2**31), 2**31) | st.text(max_size=12)
    )
    if not (stateless or modern):
        scalars = scalars | st.none() | st.floats(allow_nan=False, allow_infinity=False, width=32)
    return st.recursive(
        scalars,
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
        ),
        max_leaves=max_leaves,
    )


N = TypeVar("N", int, float)


class Spec:
    """A JSON shape. ``types`` is the set of JSON types it admits (empty: any)."""

    types: frozenset[str] = frozenset()

    def strategy(self) -> st.SearchStrategy[Any]:
        raise NotImplementedError

    def matches(self, value: Any) -> bool:
        return not self.types or _type_ok(value, self.types)

    def out_of_range(self) -> list[Any]:
        """Values of an admitted type that the spec nevertheless rejects."""
        return []

    def children(self, value: Any) -> Iterator[tuple[str | int, Spec, Any]]:
        """(key, spec, child value) for the parts of ``value`` worth descending into."""
        return iter(())


class AnyJSON(Spec):
    def __init__(self, *, stateless: bool = False) -> None:
        self.stateless = stateless

    def strategy(self) -> st.SearchStrategy[Any]:
        return json_values(stateless=self.stateless)


class Opaque(Spec):
    """A fixed strategy, typed but never descended into (shapes too loose to break reliably)."""

    def __init__(self, strategy: st.SearchStrategy[Any], types: Sequence[str] = ()) -> None:
        self._strategy = strategy
        self.types = frozenset(types)

    def strategy(self) -> st.SearchStrategy[Any]:
        return self._strategy


class Null(Spec):
    types = frozenset({"null"})

    def strategy(self) -> st.SearchStrategy[Any]:
        return st.none()


class Str(Spec):
    types = frozenset({"string"})

    def __init__(
        self,
        min_size: int = 0,
        max_size: int = 20,
        *,
        strategy: st.SearchStrategy[str] | None = None,
    ) -> None:
        self.min_size, self.max_size = min_size, max_size
        self._strategy = strategy

    def strategy(self) -> st.SearchStrategy[Any]:
        if self._strategy is not None:
            return self._strategy
        return st.text(min_size=self.min_size, max_size=self.max_size)


class Bool(Spec):
    types = frozenset({"boolean"})

    def strategy(self) -> st.SearchStrategy[Any]:
        return st.booleans()


class _Ranged(Spec, Generic[N]):
    """Numbers drawn from ``lo``..``hi``; ``floor``/``ceil`` are the bounds the
    schema itself enforces (the only ones an out-of-range edit may cross, by ``beyond``)."""

    beyond: ClassVar[float]

    def __init__(
        self,
        lo: N | None = None,
        hi: N | None = None,
        *,
        floor: N | None = None,
        ceil: N | None = None,
    ) -> None:
        self.lo: N | None = lo
        self.hi: N | None = hi
        self.floor: N | None = floor
        self.ceil: N | None = ceil

    def matches(self, value: Any) -> bool:
        return (
            super().matches(value)
            and (self.floor is None or value >= self.floor)
            and (self.ceil is None or value <= self.ceil)
        )

    def out_of_range(self) -> list[Any]:
        found: list[Any] = []
        if self.floor is not None:
            found.append(self.floor - self.beyond)
        if self.ceil is not None:
            found.append(self.ceil + self.beyond)
        return found


class Int(_Ranged[int]):
    """Integers drawn from ``lo``..``hi``; ``floor``/``ceil`` as for every range."""

    types = frozenset({"integer"})
    beyond = 1

    def strategy(self) -> st.SearchStrategy[Any]:
        lo = -(2**31) if self.lo is None else self.lo
        hi = 2**31 if self.hi is None else self.hi
        return st.integers(lo, hi)


class Num(_Ranged[float]):
    """Numbers (floats and integers) drawn from ``lo``..``hi``; ``floor``/``ceil`` as for
    every range."""

    types = frozenset({"number"})
    beyond = 1.5

    def strategy(self) -> st.SearchStrategy[Any]:
        return st.floats(
            min_value=self.lo,
            max_value=self.hi,
            allow_nan=False,
            allow_infinity=False,
            width=32,
        ) | (
            st.integers(
                math.ceil(self.lo) if self.lo is not None else -1000,
                math.floor(self.hi) if self.hi is not None else 1000,
            )
        )


class Const(Spec):
    """One value; ``closed`` says the schema insists on it (else it is only
    what we choose to send, and no out-of-range edit is made)."""

    def __init__(self, value: Any, *, closed: bool = True) -> None:
        self.value = value
        self.closed = closed
        self.types = frozenset({json_type(value)})

    def strategy(self) -> st.SearchStrategy[Any]:
        return st.just(self.value)

    def matches(self, value: Any) -> bool:
        if not self.closed:
            return super().matches(value)
        return bool(value == self.value and json_type(value) == json_type(self.value))

    def out_of_range(self) -> list[Any]:
        if not self.closed:
            return []
        if isinstance(self.value, str):
            return [self.value + "-not-allowed"]
        if isinstance(self.value, int) and not isinstance(self.value, bool):
            return [self.value + 1]
        return []


class Enum(Spec):
    """One of ``values``; ``closed`` as for :class:`Const`."""

    def __init__(self, *values: Any, closed: bool = True) -> None:
        self.values = values
        self.closed = closed
        self.types = frozenset(json_type(v) for v in values)

    def strategy(self) -> st.SearchStrategy[Any]:
        return st.sampled_from(self.values)

    def matches(self, value: Any) -> bool:
        if not self.closed:
            return super().matches(value)
        return value in self.values and json_type(value) in self.types

    def out_of_range(self) -> list[Any]:
        if not self.closed:
            return []
        if all(isinstance(v, str) for v in self.values):
            return ["-".join(str(v) for v in self.values[:2]) + "-not-allowed"]
        return []


class Arr(Spec):
    types = frozenset({"array"})

    def __init__(self, item: Spec, min_size: int = 0, max_size: int = 3) -> None:
        self.item, self.min_size, self.max_size = item, min_size, max_size

    def strategy(self) -> st.SearchStrategy[Any]:
        return st.lists(self.item.strategy(), min_size=self.min_size, max_size=self.max_size)

    def matches(self, value: Any) -> bool:
        return (
            isinstance(value, list)
            and len(value) >= self.min_size
            and all(self.item.matches(v) for v in value)
        )

    def children(self, value: Any) -> Iterator[tuple[str | int, Spec, Any]]:
        for i, v in enumerate(value):
            yield i, self.item, v


class Map(Spec):
    """An object with arbitrary keys, each value of one spec."""

    types = frozenset({"object"})

    def __init__(
        self,
        value: Spec,
        keys: st.SearchStrategy[str] | None = None,
        max_size: int = 3,
    ) -> None:
        self.value, self.max_size = value, max_size
        self.keys = keys if keys is not None else st.text(min_size=1, max_size=10)

    def strategy(self) -> st.SearchStrategy[Any]:
        return st.dictionaries(self.keys, self.value.strategy(), max_size=self.max_size)

    def matches(self, value: Any) -> bool:
        return isinstance(value, dict) and all(self.value.matches(v) for v in value.values())

    def children(self, value: Any) -> Iterator[tuple[str | int, Spec, Any]]:
        for k, v in value.items():
            yield k, self.value, v


class Obj(Spec):
    """An object with known keys (other keys are allowed, as MCP allows them).

    ``required`` keys are required by the schema; ``always`` keys are always
    sent although the schema does not insist (so dropping one is no error);
    ``optional`` keys may be sent.
    """

    types = frozenset({"object"})

    def __init__(
        self,
        required: dict[str, Spec] | None = None,
        optional: dict[str, Spec] | None = None,
        *,
        always: dict[str, Spec] | None = None,
    ) -> None:
        self.required = dict(required or {})
        self.optional = dict(optional or {})
        self.always = dict(always or {})

    def strategy(self) -> st.SearchStrategy[Any]:
        return st.fixed_dictionaries(
            {k: s.strategy() for k, s in {**self.required, **self.always}.items()},
            optional={k: s.strategy() for k, s in self.optional.items()},
        )

    def matches(self, value: Any) -> bool:
        if not isinstance(value, dict):
            return False
        for key, spec in self.required.items():
            if key not in value or not spec.matches(value[key]):
                return False
        return all(
            spec.matches(value[k])
            for k, spec in {**self.optional, **self.always}.items()
            if k in value
        )

    def children(self, value: Any) -> Iterator[tuple[str | int, Spec, Any]]:
        for key, spec in {**self.optional, **self.always, **self.required}.items():
            if key in value:
                yield key, spec, value[key]

    def extend(
        self, required: dict[str, Spec] | None = None, optional: dict[str, Spec] | None = None
    ) -> Obj:
        return Obj(
            {**self.required, **(required or {})},
            {**self.optional, **(optional or {})},
            always=self.always,
        )


class Union(Spec):
    """One of several specs; they must be told apart by ``matches`` (a ``type`` const)."""

    def __init__(self, *options: Spec) -> None:
        self.options = options
        types: set[str] = set()
        for option in options:
            if not option.types:
                types = set()
                break
            types |= option.types
        self.types = frozenset(types)

    def strategy(self) -> st.SearchStrategy[Any]:
        return st.one_of([o.strategy() for o in self.options])

    def matches(self, value: Any) -> bool:
        return any(o.matches(value) for o in self.options)

    def branch(self, value: Any) -> Spec | None:
        found = [o for o in self.options if o.matches(value)]
        return found[0] if len(found) == 1 else None


class Lazy(Spec):
    """A spec built on first use (for recursion)."""

    def __init__(self, build: Callable[[], Spec], types: Sequence[str]) -> None:
        self._build = build
        self._spec: Spec | None = None
        self.types = frozenset(types)

    @property
    def spec(self) -> Spec:
        if self._spec is None:
            self._spec = self._build()
        return self._spec

    def strategy(self) -> st.SearchStrategy[Any]:
        return st.deferred(lambda: self.spec.strategy())

    def matches(self, value: Any) -> bool:
        return self.spec.matches(value)

    def children(self, value: Any) -> Iterator[tuple[str | int, Spec, Any]]:
        return self.spec.children(value)

    def out_of_range(self) -> list[Any]:
        return self.spec.out_of_range()


# ---------------------------------------------------------------- mutations


class Mutation:
    """One way to break a value: ``kind`` at ``path`` (``apply`` returns a broken copy)."""

    __slots__ = ("kind", "path", "replacement")

    def __init__(self, kind: str, path: Path, replacement: Any = None) -> None:
        self.kind, self.path, self.replacement = kind, path, replacement

    def apply(self, value: Any) -> Any:
        return _apply(value, self.path, self.kind, self.replacement)

    def __repr__(self) -> str:
        where = "/".join(str(p) for p in self.path) or "(root)"
        return f"Mutation({self.kind} at {where})"


def _apply(value: Any, path: Path, kind: str, replacement: Any) -> Any:
    if not path:
        return replacement
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        copy = dict(value)
        assert isinstance(head, str)
        if not rest and kind == "missing_field":
            del copy[head]
        else:
            copy[head] = _apply(value[head], rest, kind, replacement)
        return copy
    assert isinstance(value, list) and isinstance(head, int)
    items = list(value)
    items[head] = _apply(value[head], rest, kind, replacement)
    return items


def _resolve(spec: Spec, value: Any) -> Spec | None:
    while True:
        if isinstance(spec, Lazy):
            spec = spec.spec
        elif isinstance(spec, Union):
            branch = spec.branch(value)
            if branch is None:
                return None
            spec = branch
        else:
            return spec


def mutations(spec: Spec, value: Any, path: Path = ()) -> Iterator[Mutation]:
    """Every breaking edit of ``value`` (valid under ``spec``) that is sure to break it."""
    types = spec.types
    if types:
        for t, sample in WRONG_TYPE_SAMPLES.items():
            if t in types or (t == "integer" and "number" in types):
                continue
            yield Mutation("wrong_type", path, sample)
            break
    concrete = _resolve(spec, value)
    if concrete is None:
        return
    for bad in concrete.out_of_range():
        yield Mutation("out_of_range", path, bad)
    if isinstance(concrete, Obj):
        for name in concrete.required:
            if name in value:
                yield Mutation("missing_field", (*path, name))
    if isinstance(concrete, Str) and isinstance(value, str):
        yield Mutation("oversized", path, None)
    for index, child_spec, child in concrete.children(value):
        yield from mutations(child_spec, child, (*path, index))
