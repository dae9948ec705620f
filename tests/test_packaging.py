"""The wheel and the sdist hold what a user needs, and nothing of the test suite."""

from __future__ import annotations

import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOP_PACKAGES = (
    "sansio_mcp",
    "trio_adapters",
    "asyncio_adapters",
    "sansio_mcp_apps",
    "sansio_mcp_cli",
    "sansio_mcp_testing",
)


def _source_packages() -> set[str]:
    """Every package folder of the library in the checkout, as a path inside the wheel."""
    found = set()
    for top in TOP_PACKAGES:
        for init in (ROOT / top).rglob("__init__.py"):
            found.add(init.parent.relative_to(ROOT).as_posix())
    return found


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "build",
            "--no-isolation",
            "--sdist",
            "--wheel",
            "--outdir",
            str(out),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # Deprecated metadata (the old license table form, say) is a warning today, an error later.
    assert "SetuptoolsDeprecationWarning" not in done.stdout + done.stderr
    (wheel,) = out.glob("*.whl")
    (sdist,) = out.glob("*.tar.gz")
    return wheel, sdist


def test_the_wheel_ships_every_package_typed(built: tuple[Path, Path]) -> None:
    wheel, _ = built
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {name.rpartition("/")[0] for name in names if name.endswith("/__init__.py")}
    assert shipped == _source_packages()
    for top in TOP_PACKAGES:
        assert f"{top}/py.typed" in names
    assert not [n for n in names if n.startswith(("tests/", "bench/", "fuzz/", "conformance/"))]
    assert not [n for n in names if "__pycache__" in n]


def test_the_wheel_declares_the_cli_and_the_pytest_plugin(built: tuple[Path, Path]) -> None:
    wheel, _ = built
    archive = zipfile.ZipFile(wheel)
    (entry_points,) = [n for n in archive.namelist() if n.endswith(".dist-info/entry_points.txt")]
    text = archive.read(entry_points).decode()
    assert "sansio-mcp = sansio_mcp_cli.main:main" in text
    assert "sansio_mcp = sansio_mcp_testing.pytest_plugin" in text
    (metadata,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
    headers = archive.read(metadata).decode()
    assert "License-Expression: MIT" in headers
    assert "Provides-Extra: testing" in headers


def test_the_sdist_builds_the_same_wheel(built: tuple[Path, Path]) -> None:
    _, sdist = built
    names = tarfile.open(sdist).getnames()
    root = names[0].split("/")[0]
    for needed in ("pyproject.toml", "README.md", "LICENSE"):
        assert f"{root}/{needed}" in names
    for package in _source_packages():
        assert f"{root}/{package}/__init__.py" in names
