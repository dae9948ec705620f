"""``sansio-mcp schemas fetch``: the official schemas, downloaded at pinned commits and checked.

The schemas are the specification repositories' own files, never copied into this project.
Each is taken from a pinned commit and must match the SHA-256 pinned here; a file that does
not is refused and nothing is written for it.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterable
from pathlib import Path

import attrs

from .schemas import SCHEMA_NAMES, user_cache_dir

__all__ = ["DEFAULT_SOURCE", "PINNED", "FetchResult", "PinnedSchema", "fetch_schemas"]

#: Where the repositories' files are served from; ``--source`` swaps it for a mirror.
DEFAULT_SOURCE = "https://raw.githubusercontent.com"
_SPEC = ("modelcontextprotocol/modelcontextprotocol", "b0f60ba5409db7a6582440a7b473cc0398890f15")
_TASKS = ("modelcontextprotocol/ext-tasks", "e4345978be1f602f1fc48d89051e8559dd5302a6")
#: A schema is a few hundred KB; anything far larger is not one.
MAX_SCHEMA_BYTES = 16 * 1024 * 1024


@attrs.frozen
class PinnedSchema:
    """One schema file: its repository, commit and path there, and the SHA-256 it must have."""

    name: str
    repository: str
    commit: str
    path: str
    sha256: str

    def url(self, source: str = DEFAULT_SOURCE) -> str:
        return f"{source.rstrip('/')}/{self.repository}/{self.commit}/{self.path}"


def _spec(name: str, sha256: str) -> PinnedSchema:
    return PinnedSchema(name, *_SPEC, f"schema/{name}/schema.json", sha256)


PINNED: dict[str, PinnedSchema] = {
    pin.name: pin
    for pin in (
        _spec("2024-11-05", "61cea2392d4f284092d09bc84b9ac488c0d5618ac2b38a56942fc5b99fd960ce"),
        _spec("2025-03-26", "e720669548c8100a4282c49e580efd6ddf7f28899ea786fc8db251dbdb356131"),
        _spec("2025-06-18", "af845e7e5b9d27107d1690f0936022546177a1403e63ffb11470135b296a2e01"),
        _spec("2025-11-25", "268a5f82ba70fd7e4b6dc4aa1e64f116f74b4d0edcb69dc046829c79dd4e97e7"),
        _spec("2026-07-28", "ef70b61f99b6d2e5e3b46863822eab08dff6a45bedc7a08914e0e5b133f40203"),
        _spec("draft", "ef70b61f99b6d2e5e3b46863822eab08dff6a45bedc7a08914e0e5b133f40203"),
        PinnedSchema(
            "ext-tasks/draft",
            *_TASKS,
            "schema/draft/schema.json",
            "10933a5003097bbccb03d964e6a5f7a2819cc4d7a1d07e27c6765cbf5da35c5c",
        ),
    )
}


@attrs.frozen
class FetchResult:
    """What happened to one schema: ``fetched``, ``present`` (already right) or ``failed``."""

    name: str
    status: str
    path: Path
    detail: str = ""


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _download(url: str, timeout: float) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        data: bytes = response.read(MAX_SCHEMA_BYTES + 1)
    if len(data) > MAX_SCHEMA_BYTES:
        raise ValueError(f"more than {MAX_SCHEMA_BYTES} bytes")
    return data


def _write_atomically(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".schema-", suffix=".part")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def fetch_schemas(
    dest: Path | None = None,
    *,
    names: Iterable[str] | None = None,
    source: str = DEFAULT_SOURCE,
    timeout: float = 30.0,
    force: bool = False,
) -> list[FetchResult]:
    """Download each pinned schema into ``dest`` (the user's cache by default).

    A file already there with the pinned hash is kept unless ``force``. A download whose
    hash differs from the pin is refused: reported ``failed`` and not written.
    """
    dest = user_cache_dir() if dest is None else dest
    results = []
    for name in SCHEMA_NAMES if names is None else names:
        pin = PINNED.get(name)
        target = dest / name / "schema.json"
        if pin is None:
            known = f"unknown schema; known: {list(PINNED)}"
            results.append(FetchResult(name, "failed", target, known))
            continue
        if not force and target.is_file() and _sha256(target.read_bytes()) == pin.sha256:
            results.append(FetchResult(name, "present", target))
            continue
        url = pin.url(source)
        try:
            data = _download(url, timeout)
        except (OSError, ValueError, urllib.error.URLError) as exc:
            results.append(FetchResult(name, "failed", target, f"{url}: {exc}"))
            continue
        digest = _sha256(data)
        if digest != pin.sha256:
            results.append(
                FetchResult(
                    name,
                    "failed",
                    target,
                    f"{url}: SHA-256 {digest} is not the pinned {pin.sha256}; not stored",
                )
            )
            continue
        _write_atomically(target, data)
        results.append(FetchResult(name, "fetched", target, url))
    return results
