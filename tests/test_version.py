"""The version is set in one place: ``verdictlab.__version__``; pyproject reads it (dynamic version)."""

from __future__ import annotations

import importlib.metadata
import tomllib
from pathlib import Path

import verdictlab

ROOT = Path(__file__).resolve().parents[1]


def test_pyproject_takes_the_version_from_the_package() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"]
    assert "version" in project["project"]["dynamic"]
    attr = project["tool"]["setuptools"]["dynamic"]["version"]["attr"]
    assert attr == "verdictlab.__version__"


def test_installed_metadata_matches_the_package() -> None:
    # what `pip show verdictlab` and the run store's meta say is the same string
    assert importlib.metadata.version("verdictlab") == verdictlab.__version__
