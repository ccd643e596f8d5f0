"""The installed version of a distribution, read from its metadata -- never by importing the package:
importing ``verdictlab`` itself from a room below it would make that room depend on the package's
public facade (every room), and an SDK's import can take seconds."""

from __future__ import annotations

import importlib.metadata
from functools import lru_cache


@lru_cache(maxsize=64)
def installed_version(distribution: str) -> str | None:
    """``"1.2.3"``, or None when ``distribution`` is not installed (e.g. verdictlab run from a source tree
    without ``pip install -e``)."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


__all__ = ["installed_version"]
