"""The package and its tests pass ``mypy --strict`` (the settings are pyproject.toml's)."""

from __future__ import annotations

from mypy import api

from conftest import REPO


def test_mypy_strict_passes() -> None:
    python = REPO / "python"
    stdout, stderr, status = api.run(
        [
            "--strict",
            "--config-file", str(python / "pyproject.toml"),
            "--cache-dir", str(REPO / "target" / "mypy"),
            str(python / "kleinrock"),
            str(python / "tests"),
        ]
    )
    assert status == 0, stdout + stderr
