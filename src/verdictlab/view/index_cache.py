"""The viewer's index kept between start-ups: a cache beside the store, never inside it.

Building the index reads the outcome columns of every judgment (about ten seconds of CPU per million
judgments); what it produces -- the outcome rows and where each pair's judgments sit -- is small.  It is
written to ``VERDICTLAB_CACHE_DIR`` (default ``$XDG_CACHE_HOME/verdictlab``, else ``~/.cache/verdictlab``)
under ``view/<key>/`` as two Parquet files, where ``key`` hashes what the index depends on: the store's
path, the size and modification time of ``run.sqlite`` and its ``-wal`` file, the number of judgments and
the largest rowid, the unparsed policy and the verdictlab version.  Any change to the store gives another
key, so a cached index is never used for a store it was not built from.  A cache that cannot be read is
rebuilt; one that cannot be written is skipped (the viewer works without it).  Deleting the folder is
always safe.  The run directory and its store are never written.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .. import __version__
from ..store import RunStore

__all__ = ["CACHE_FORMAT", "CachedIndex", "cache_root", "index_key", "read_index", "write_index"]

CACHE_FORMAT = 1
#: cached indexes kept; the least recently used beyond this are removed
KEEP = 8


@dataclass(frozen=True)
class CachedIndex:
    """What the cache holds: the outcome rows and the pairs' judgment locations."""

    pairs: pd.DataFrame
    rowids: np.ndarray
    offsets: np.ndarray
    pair_keys: dict[tuple[str, str], int]


def cache_root() -> Path:
    """Where cached indexes live: ``VERDICTLAB_CACHE_DIR``, else the user's cache folder."""
    env = os.environ.get("VERDICTLAB_CACHE_DIR")
    if env:
        return Path(env) / "view"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "verdictlab" / "view"


def index_key(store: RunStore, *, unparsed: str) -> str:
    """The key of the store's index as it is now (see the module docstring)."""
    parts = [f"format={CACHE_FORMAT}", f"verdictlab={__version__}", f"unparsed={unparsed}",
             f"path={store.path.resolve()}"]
    for f in (store.path, store.path.with_name(store.path.name + "-wal")):
        if f.exists():
            st = f.stat()
            parts.append(f"{f.name}={st.st_size}:{st.st_mtime_ns}")
    n, last = store.judgment_extent()
    parts.append(f"judgments={n}:{last}")
    return hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()[:32]


def read_index(key: str, root: Path | None = None) -> CachedIndex | None:
    """The cached index of ``key``, or None (absent, or unreadable: then it is removed)."""
    folder = (root or cache_root()) / key
    if not folder.is_dir():
        return None
    try:
        pairs = pd.read_parquet(folder / "pairs.parquet")
        loc = pd.read_parquet(folder / "locations.parquet")
        rows = pd.read_parquet(folder / "rowids.parquet")["rowid"].to_numpy(dtype=np.int64)
        offsets = np.append(loc["start"].to_numpy(dtype=np.int64), len(rows))
        keys = {(str(d), str(i)): k for k, (d, i) in enumerate(zip(loc["dataset"], loc["item_id"], strict=True))}
        os.utime(folder)                                 # recently used: kept by the pruning
    except Exception:  # a damaged or foreign cache is never trusted: rebuild
        shutil.rmtree(folder, ignore_errors=True)
        return None
    for col in ("modal_AB", "modal_BA", "label"):
        pairs[col] = pairs[col].astype("object").where(pairs[col].notna(), None)
    return CachedIndex(pairs=pairs, rowids=rows, offsets=offsets, pair_keys=keys)


def write_index(key: str, index: CachedIndex, root: Path | None = None) -> Path | None:
    """Write the index under ``key`` (atomically: a finished folder or nothing); None when the cache
    folder cannot be written."""
    root = root or cache_root()
    try:
        root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=root, prefix=".building-"))
        pairs = index.pairs.copy()
        for col in pairs.columns:
            if isinstance(pairs[col].dtype, pd.CategoricalDtype) or pairs[col].dtype == object:
                pairs[col] = pairs[col].astype("object").where(pairs[col].notna(), None)
        pairs.to_parquet(tmp / "pairs.parquet", index=False)
        order = sorted(index.pair_keys, key=index.pair_keys.__getitem__)
        pd.DataFrame({"dataset": [d for d, _ in order], "item_id": [i for _, i in order],
                      "start": index.offsets[:-1]}).to_parquet(tmp / "locations.parquet", index=False)
        pd.DataFrame({"rowid": index.rowids}).to_parquet(tmp / "rowids.parquet", index=False)
        target = root / key
        if target.exists():
            shutil.rmtree(tmp, ignore_errors=True)
            return target
        tmp.rename(target)
    except OSError:
        return None
    _prune(root, keep=KEEP)
    return target


def _prune(root: Path, *, keep: int) -> None:
    entries = sorted((p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")),
                     key=lambda p: p.stat().st_mtime, reverse=True)
    for old in entries[keep:]:
        shutil.rmtree(old, ignore_errors=True)

