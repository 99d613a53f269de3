"""Shared fixtures: the repository's scenarios and the command line they are compared with."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCENARIOS = REPO / "scenarios"


def cli_path() -> Path:
    """The ``kleinrock`` command built from this checkout (``$KLEINROCK_BIN``, else
    ``target/release/kleinrock``, which the README's test command builds first)."""
    path = Path(os.environ.get("KLEINROCK_BIN", REPO / "target" / "release" / "kleinrock"))
    if not path.is_file():
        pytest.fail(
            f"no kleinrock command at {path}: build it with `cargo build --release "
            "-p kleinrock-cli` (the README's test command does) or set KLEINROCK_BIN"
        )
    return path


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """Runs the command line with ``args`` and returns what it printed."""
    return subprocess.run(
        [str(cli_path()), *args], capture_output=True, text=True, check=False, cwd=REPO
    )
