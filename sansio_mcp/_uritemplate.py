"""The RFC 6570 subset MCP servers use for resource templates: ``{var}``
(one path segment) and ``{+var}`` (reserved expansion, may contain ``/``)."""

from __future__ import annotations

import re

__all__ = ["UriTemplate"]

_EXPR = re.compile(r"\{(\+?)([A-Za-z0-9_]+)\}")


class UriTemplate:
    """Match URIs against a template and expand it."""

    def __init__(self, template: str) -> None:
        self.template = template
        pattern = []
        position = 0
        self.variables: list[str] = []
        for match in _EXPR.finditer(template):
            pattern.append(re.escape(template[position : match.start()]))
            reserved, name = match.groups()
            if name in self.variables:
                raise ValueError(f"variable {name!r} appears twice in {template!r}")
            self.variables.append(name)
            pattern.append(f"(?P<{name}>{'.+' if reserved else '[^/?#]+'})")
            position = match.end()
        pattern.append(re.escape(template[position:]))
        self._regex = re.compile("".join(pattern) + r"\Z")

    def match(self, uri: str) -> dict[str, str] | None:
        """The variables of ``uri``, or None if it does not match."""
        found = self._regex.match(uri)
        return found.groupdict() if found else None

    def expand(self, **values: str) -> str:
        return _EXPR.sub(lambda m: values[m.group(2)], self.template)
