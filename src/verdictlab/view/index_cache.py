"""The viewer's index kept between start-ups: a cache beside the store, never inside it
(:mod:`verdictlab.store.column_cache`, kind ``view``).

Building the index reads the outcome columns of every judgment (about ten seconds of CPU per million
judgments); what it produces -- the outcome rows and where each pair's judgments sit -- is small.  It is
written under ``view/<key>/`` as three Parquet files, where ``key`` is
:func:`verdictlab.store.column_cache.store_key` of the store with the unparsed policy and the verdictlab
version.  Any change to the store gives another key, so a cached index is never used for a store it
was not built from.  A cache that cannot be read is rebuilt; one that cannot be written is skipped (the
viewer works without it).  Deleting the folder is always safe.  The run directory and its store are
never written.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..core.policy import FigurePolicy
from ..core.versions import installed_version
from ..store import RunStore
from ..store.column_cache import cache_root as _cache_root
from ..store.column_cache import cached_folder, store_key, write_folder

__all__ = ["CACHE_FORMAT", "CachedIndex", "cache_root", "index_key", "read_index", "write_index"]

CACHE_FORMAT = 1


@dataclass(frozen=True)
class CachedIndex:
    """What the cache holds: the outcome rows and the pairs' judgment locations."""

    pairs: pd.DataFrame
    rowids: np.ndarray
    offsets: np.ndarray
    pair_keys: dict[tuple[str, str], int]


def cache_root() -> Path:
    """Where cached indexes live: ``VERDICTLAB_CACHE_DIR/view``, else the user's cache folder."""
    return _cache_root("view")


def index_key(store: RunStore, *, policy: FigurePolicy) -> str:
    """The key of the store's index as it is now (see the module docstring)."""
    return store_key(store, f"format={CACHE_FORMAT}", f"verdictlab={installed_version('verdictlab')}", f"unparsed={policy.unparsed.value}")


def read_index(key: str, root: Path | None = None) -> CachedIndex | None:
    """The cached index of ``key``, or None (absent, or unreadable: then it is removed)."""
    folder = cached_folder(root or cache_root(), key)
    if folder is None:
        return None
    try:
        pairs = pd.read_parquet(folder / "pairs.parquet")
        loc = pd.read_parquet(folder / "locations.parquet")
        rows = pd.read_parquet(folder / "rowids.parquet")["rowid"].to_numpy(dtype=np.int64)
        offsets = np.append(loc["start"].to_numpy(dtype=np.int64), len(rows))
        keys = {(str(d), str(i)): k for k, (d, i) in enumerate(zip(loc["dataset"], loc["item_id"], strict=True))}
    except Exception:  # a damaged or foreign cache is never trusted: rebuild
        shutil.rmtree(folder, ignore_errors=True)
        return None
    for col in ("modal_AB", "modal_BA", "label"):
        pairs[col] = pairs[col].astype("object").where(pairs[col].notna(), None)
    return CachedIndex(pairs=pairs, rowids=rows, offsets=offsets, pair_keys=keys)


def write_index(key: str, index: CachedIndex, root: Path | None = None) -> Path | None:
    """Write the index under ``key`` (atomically: a finished folder or nothing); None when the cache
    folder cannot be written."""

    def fill(folder: Path) -> None:
        pairs = index.pairs.copy()
        for col in pairs.columns:
            if isinstance(pairs[col].dtype, pd.CategoricalDtype) or pairs[col].dtype == object:
                pairs[col] = pairs[col].astype("object").where(pairs[col].notna(), None)
        pairs.to_parquet(folder / "pairs.parquet", index=False)
        order = sorted(index.pair_keys, key=index.pair_keys.__getitem__)
        pd.DataFrame({"dataset": [d for d, _ in order], "item_id": [i for _, i in order],
                      "start": index.offsets[:-1]}).to_parquet(folder / "locations.parquet", index=False)
        pd.DataFrame({"rowid": index.rowids}).to_parquet(folder / "rowids.parquet", index=False)

    return write_folder(root or cache_root(), key, fill)
