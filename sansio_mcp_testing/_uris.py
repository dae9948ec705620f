"""Syntax checks of the URIs a server lists: resource URIs (RFC 3986, absolute:
the schema says ``"format": "uri"``) and resource templates (RFC 6570 level 4,
``"format": "uri-template"``).  jsonschema checks neither format without extra
packages, and a server's malformed URI is a finding the client meets later."""

from __future__ import annotations

import re

__all__ = ["uri_problem", "uri_template_problem"]

_UNRESERVED = r"A-Za-z0-9\-._~"
_SUB_DELIMS = r"!$&'()*+,;="
_PCT = r"%[0-9A-Fa-f]{2}"
#: Characters allowed after the scheme (the generic syntax's hier-part, query and
#: fragment together), percent-encodings aside.
_REST = re.compile(rf"(?:[{_UNRESERVED}{_SUB_DELIMS}:@/?#\[\]]|{_PCT})*\Z")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+\-.]*\Z")

#: RFC 6570: an expression's operator, and a variable name (with its modifier).
_OPERATORS = set("+#./;?&")
_RESERVED_OPERATORS = set("=,!@|")
_VARNAME = re.compile(r"(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})(?:\.?(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2}))*")
_VARSPEC = re.compile(rf"({_VARNAME.pattern})(?::([1-9][0-9]{{0,3}})|\*)?\Z")
#: Literal characters RFC 6570 forbids outside expressions.
_BAD_LITERALS = set(" \"'<>\\^`{|}") | {chr(c) for c in range(0x20)} | {"\x7f"}


def uri_problem(uri: str) -> str | None:
    """What makes ``uri`` no absolute RFC 3986 URI (None: nothing)."""
    scheme, colon, rest = uri.partition(":")
    if not colon or not _SCHEME.match(scheme):
        return "no scheme (an absolute URI starts with one, like file: or https:)"
    if not _REST.match(rest):
        bad = next(
            (c for i, c in enumerate(rest) if not _REST.match(c) and not _pct_at(rest, i)), "%"
        )
        return f"the character {bad!r} is not allowed in a URI (percent-encode it)"
    if rest.count("#") > 1:
        return "more than one '#'"
    return None


def _pct_at(text: str, index: int) -> bool:
    """Whether ``text[index]`` starts or continues a valid percent-encoding."""
    for start in (index, index - 1, index - 2):
        if start >= 0 and re.match(_PCT, text[start : start + 3]):
            return True
    return False


def uri_template_problem(template: str) -> str | None:
    """What makes ``template`` no RFC 6570 URI template, or one whose literal part
    lacks a scheme (None: nothing)."""
    position = 0
    literal = []
    while position < len(template):
        char = template[position]
        if char == "{":
            end = template.find("}", position)
            if end < 0:
                return f"an expression opened at {position} is never closed"
            problem = _expression_problem(template[position + 1 : end])
            if problem is not None:
                return f"expression {template[position : end + 1]!r}: {problem}"
            literal.append("x")  # stands for the expansion when checking the scheme
            position = end + 1
            continue
        if char == "}":
            return f"a '}}' at {position} closes no expression"
        if char in _BAD_LITERALS:
            return f"the character {char!r} is not allowed outside an expression"
        literal.append(char)
        position += 1
    scheme, colon, _ = "".join(literal).partition(":")
    if not colon or not _SCHEME.match(scheme):
        return "no scheme (a resource template expands to absolute URIs)"
    return None


def _expression_problem(body: str) -> str | None:
    if not body:
        return "empty"
    if body[0] in _RESERVED_OPERATORS:
        return f"operator {body[0]!r} is reserved"
    if body[0] in _OPERATORS:
        body = body[1:]
    for spec in body.split(","):
        if not _VARSPEC.match(spec):
            return f"{spec!r} is no variable name (letters, digits, _ and %XX; :N or *)"
    return None
