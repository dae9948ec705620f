"""Where metadata lives and whether it may be trusted: protected resource metadata
(RFC 9728), authorization server metadata (RFC 8414, OpenID Connect Discovery), and the
2025-03-26 fallbacks."""

from __future__ import annotations

import ipaddress
from typing import Any
from urllib.parse import urlsplit, urlunsplit

__all__ = [
    "as_metadata_urls",
    "canonical_resource",
    "fallback_endpoints",
    "insecure_endpoint",
    "origin_of",
    "prm_identifier",
    "prm_urls",
    "resource_allowed",
    "resource_identical",
    "same_resource",
]

_PRM = "/.well-known/oauth-protected-resource"


def insecure_endpoint(url: str) -> str | None:
    """Why ``url`` may not be an authorization server's (its issuer or an endpoint a
    client sends credentials to): OAuth 2.1 and the MCP spec want HTTPS, with plain
    HTTP only on a loopback address (a local test server).  None when it may."""
    parts = urlsplit(url)
    scheme, host = parts.scheme.lower(), (parts.hostname or "").lower()
    if scheme == "https" and host:
        return None
    if scheme == "http" and _is_loopback(host):
        return None
    if scheme == "http":
        return "is plain http, which only a loopback address may use (else https)"
    return "is no https URL"


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def origin_of(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "", "", ""))


def canonical_resource(url: str) -> str:
    """The server's URL as a resource indicator (RFC 8707 §2): no fragment, and a
    lowercase scheme and host."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path, parts.query, ""))


def prm_urls(server_url: str, from_challenge: str | None) -> list[str]:
    """Where to look for the protected resource metadata, in order: the challenge's
    ``resource_metadata``, else the path-aware well-known URI, then the root one."""
    if from_challenge:
        return [from_challenge]
    parts = urlsplit(server_url)
    origin = origin_of(server_url)
    path = parts.path.rstrip("/")
    urls = [f"{origin}{_PRM}{path}"] if path else []
    urls.append(f"{origin}{_PRM}")
    return urls


def prm_identifier(metadata_url: str) -> str | None:
    """The resource identifier a well-known metadata URL was built from (RFC 9728
    §3.1: the suffix inserted after the origin), or None for any other URL."""
    path = urlsplit(metadata_url).path
    if path != _PRM and not path.startswith(_PRM + "/"):
        return None
    return origin_of(metadata_url) + path[len(_PRM) :]


def same_resource(a: str, b: str) -> bool:
    """Whether two URLs are the same identifier up to RFC 3986 §6.2.2-6.2.3
    normalization: scheme and host case, and an empty path being ``/``."""

    def normal(url: str) -> tuple[str, ...]:
        p = urlsplit(url)
        return (p.scheme.lower(), p.netloc.lower(), p.path or "/", p.query, p.fragment)

    return normal(a) == normal(b)


def resource_identical(
    server_url: str, metadata_url: str, resource: str, *, from_challenge: bool
) -> bool:
    """Whether protected resource metadata fetched from ``metadata_url`` and naming
    ``resource`` may speak for ``server_url`` (RFC 9728 §3.3).

    A well-known URL the client built: ``resource`` is the identifier it was built
    from.  A URL a challenge named: ``resource`` is the URL the request went to, or,
    the one relaxation, the identifier of a well-known URL the challenge named when
    that identifier contains the server's URL (a server whose metadata covers its
    whole origin points at the root document)."""
    expected = prm_identifier(metadata_url)
    if from_challenge and same_resource(resource, server_url):
        return True
    if expected is None or not same_resource(resource, expected):
        return False
    return not from_challenge or resource_allowed(server_url, resource)


def as_metadata_urls(issuer: str) -> list[str]:
    """Where an issuer's metadata may live, in the order the MCP spec gives (RFC 8414
    §3.1 path insertion, OpenID Discovery with path insertion, then path appending).
    An issuer with a path is never looked up at the root."""
    parts = urlsplit(issuer)
    origin = origin_of(issuer)
    path = parts.path.rstrip("/")
    if not path:
        return [
            f"{origin}/.well-known/oauth-authorization-server",
            f"{origin}/.well-known/openid-configuration",
        ]
    return [
        f"{origin}/.well-known/oauth-authorization-server{path}",
        f"{origin}/.well-known/openid-configuration{path}",
        f"{origin}{path}/.well-known/openid-configuration",
    ]


def fallback_endpoints(server_url: str) -> dict[str, Any]:
    """The 2025-03-26 default endpoints at the server's origin, for a server with no
    metadata at all."""
    origin = origin_of(server_url)
    return {
        "issuer": origin,
        "authorization_endpoint": f"{origin}/authorize",
        "token_endpoint": f"{origin}/token",
        "registration_endpoint": f"{origin}/register",
    }


def resource_allowed(server_url: str, resource: str) -> bool:
    """Whether protected resource metadata naming ``resource`` may speak for
    ``server_url`` (RFC 9728 §3.3): same scheme, host and port, and the server's path
    inside the resource's."""
    server, claimed = urlsplit(canonical_resource(server_url)), urlsplit(resource)
    if (server.scheme, server.netloc) != (claimed.scheme.lower(), claimed.netloc.lower()):
        return False
    prefix = claimed.path.rstrip("/")
    path = server.path.rstrip("/")
    return path == prefix or path.startswith(prefix + "/")
