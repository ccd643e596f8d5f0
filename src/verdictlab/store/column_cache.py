"""What is read from a run store kept between commands: a cache beside the store, never inside it.

Reading the columns of millions of judgments out of SQLite costs a Python object per value (about 15
seconds of CPU per million judgments for the report's columns); the same columns read back from a
Parquet file take a fraction of a second.  So a report keeps its frame of the judgments' figure columns
(:data:`FIGURE_COLUMNS`) here, and the viewer its index (:mod:`verdictlab.view.index_cache`), both under
``VERDICTLAB_CACHE_DIR`` (default ``$XDG_CACHE_HOME/verdictlab``, else ``~/.cache/verdictlab``), one
folder per kind (``columns/``, ``view/``) and one sub-folder per key.

A key (:func:`store_key`) hashes what the cached content depends on: the store's path, the size and
modification time of ``run.sqlite`` and its ``-wal`` file, the number of judgments and the largest
rowid, and what the kind adds (its format; the viewer's index its policy and the verdictlab version).  Any change to the store
gives another key, so a cache is never used for a store it was not built from.  A cache that cannot be
read is removed and rebuilt; one that cannot be written is skipped (everything works without it).  Only
the :data:`KEEP` most recently used entries of a kind are kept.  Deleting the folder is always safe.
The run directory and its store are never written.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from .sqlite import (
    CATEGORICAL_COLUMNS,
    JUDGMENT_COLUMN_NAMES,
    CompactColumns,
    RunStore,
    figure_detail_kept,
    open_store,
    with_read_defaults,
)

__all__ = ["FIGURE_COLUMNS", "FIGURE_FORMAT", "KEEP", "WIDE_COLUMNS", "FigureFrameBuilder", "cache_root",
           "cached_folder", "figure_frame", "figure_key", "store_key", "write_figure_frame", "write_folder"]

#: cached entries kept per kind; the least recently used beyond this are removed
KEEP = 8
#: the judgment columns that are most of a stored row's bytes and that no figure reads: the judge's raw
#: output, the trial id and the prompt hash (a report reads raw outputs only for the pairs it shows)
WIDE_COLUMNS: tuple[str, ...] = ("raw_output", "trial_id", "prompt_hash")
#: the columns of the judgments frame a report computes from (``parse_detail`` only where a figure reads
#: it: :func:`verdictlab.store.figure_detail_kept`)
FIGURE_COLUMNS: tuple[str, ...] = tuple(c for c in JUDGMENT_COLUMN_NAMES if c not in WIDE_COLUMNS)
#: the layout and read rules of a cached figure frame (the store's columns, computed from nothing): a
#: change of either gives new keys
FIGURE_FORMAT = 2
_FIGURES = "columns"
_FILE = "judgments.parquet"


def cache_root(kind: str) -> Path:
    """Where the cached entries of ``kind`` live: ``VERDICTLAB_CACHE_DIR/<kind>``, else the user's
    cache folder's ``verdictlab/<kind>``."""
    env = os.environ.get("VERDICTLAB_CACHE_DIR")
    if env:
        return Path(env) / kind
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "verdictlab" / kind


def store_key(store: RunStore, *parts: str) -> str:
    """The key of what is cached for ``store`` as it is now, and ``parts`` (a format, a policy)."""
    lines = [*parts, f"path={store.path.resolve()}"]
    for f in (store.path, store.path.with_name(store.path.name + "-wal")):
        st = f.stat() if f.exists() else None
        if st is not None and (st.st_size or f == store.path):   # an empty -wal (a reader's) holds nothing
            lines.append(f"{f.name}={st.st_size}:{st.st_mtime_ns}")
    n, last = store.judgment_extent()
    lines.append(f"judgments={n}:{last}")
    return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()[:32]


def cached_folder(root: Path, key: str) -> Path | None:
    """The cached entry ``key`` under ``root`` (marked as recently used), or None."""
    folder = root / key
    try:
        if not folder.is_dir():
            return None
    except OSError:       # a cache folder this user may not read (another user's): as if absent
        return None
    with contextlib.suppress(OSError):
        os.utime(folder)
    return folder


def write_folder(root: Path, key: str, fill: Callable[[Path], None]) -> Path | None:
    """Write the entry ``key`` under ``root`` with ``fill(folder)``, atomically (a finished folder or
    nothing); None when the cache folder cannot be written."""
    try:
        root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=root, prefix=".building-"))
        try:
            fill(tmp)
            target = root / key
            if target.exists():
                return target
            tmp.rename(target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    except OSError:
        return None
    with contextlib.suppress(OSError):    # a folder another process is removing
        _prune(root, keep=KEEP)
    return target


def _prune(root: Path, *, keep: int) -> None:
    entries = sorted((p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")),
                     key=lambda p: p.stat().st_mtime, reverse=True)
    for old in entries[keep:]:
        shutil.rmtree(old, ignore_errors=True)


# -- the report's figure frame ----------------------------------------------------------------------------

def figure_key(store: RunStore) -> str:
    """The key of ``store``'s figure frame as the store is now."""
    return store_key(store, f"kind={_FIGURES}", f"format={FIGURE_FORMAT}")


def figure_frame(store: RunStore, *, cache: Path | None = None) -> pd.DataFrame:
    """The judgments' :data:`FIGURE_COLUMNS` as a compact frame (``RunStore.judgments(compact=True,
    figure_details=True)``): from the cache under ``cache`` (a root such as ``cache_root("columns")``)
    when it holds this store's state, else read from the store and written there.  ``cache=None``
    always reads the store."""
    if cache is None:
        return _read(store)
    key = figure_key(store)
    folder = cached_folder(cache, key)
    if folder is not None:
        try:
            return with_read_defaults(_read_cached(folder / _FILE))
        except Exception:  # noqa: BLE001 - a damaged or foreign cache is never trusted: rebuilt below
            shutil.rmtree(folder, ignore_errors=True)
    frame = _read(store)
    write_figure_frame(cache, key, frame)
    return frame


def cached_figure_reader(store: RunStore, *, cache: Path) -> Callable[[], pd.DataFrame] | None:
    """A function of no arguments reading ``store``'s figure frame from the cache under ``cache``, which
    touches neither the store nor its connection (so it may run on another thread while the caller reads
    the store); None when the cache does not hold the store's state.  It raises on a damaged cache:
    :func:`figure_frame` then rebuilds it."""
    folder = cached_folder(cache, figure_key(store))
    if folder is None:
        return None
    return lambda: with_read_defaults(_read_cached(folder / _FILE))


def write_figure_frame(cache: Path, key: str, frame: pd.DataFrame) -> Path | None:
    """Cache ``frame`` (the figure frame of the store state ``key``) under ``cache``; None when the
    cache cannot be written."""
    return write_folder(cache, key, lambda folder: frame.to_parquet(folder / _FILE, index=False))


class FigureFrameBuilder:
    """The figure frame of the rows a writer stores, built from the columns it writes (chunk by chunk,
    in the order the rows get their rowids), so a bulk import leaves the cache warm without reading the
    store back: :meth:`add` every chunk, then :meth:`write` once the store is closed."""

    def __init__(self) -> None:
        self._columns = CompactColumns(FIGURE_COLUMNS)

    def add(self, values: Mapping[str, Sequence[Any]]) -> None:
        """One chunk of store-ready column values (every figure column); ``parse_detail`` is kept
        only where a figure reads it, as ``RunStore.judgments(figure_details=True)`` reads it."""
        keep = figure_detail_kept(values["parse_status"], values["decoding"])
        details = [d if k else None for d, k in zip(values["parse_detail"], keep, strict=True)]
        self._columns.add({**values, "parse_detail": details})

    def write(self, run_dir: str | Path, cache: Path | None = None) -> Path | None:
        """Cache the frame under the key of the store in ``run_dir`` as it is now (after its writer
        closed it): the frame must hold every row of the store, in rowid order."""
        frame = self._columns.frame()
        with open_store(run_dir) as store:
            if store.count() != len(frame):
                return None
            return write_figure_frame(cache or cache_root(_FIGURES), figure_key(store), frame)


def _read(store: RunStore) -> pd.DataFrame:
    return store.judgments(list(FIGURE_COLUMNS), compact=True, figure_details=True)


def _read_cached(path: Path, columns: Sequence[str] = FIGURE_COLUMNS) -> pd.DataFrame:
    """The cached figure frame at ``path`` in the dtypes of a compact store read (what
    ``_compact_dtypes(pd.read_parquet(path))`` gives, value for value and dtype for dtype).

    Read with pyarrow on one thread, each categorical column made from its dictionary's indices and
    values without a string per row, and the frame assembled without a copy.  Measured on the 5.4
    million-row cache of ``bench/scale_bench.py``'s 5.4Mp run (28 columns, fresh processes): ``figure_frame`` took 1.9-2.1 s
    of user CPU and 3.4-7.7 s with the kernel's through ``pd.read_parquet`` and :func:`_compact_dtypes`
    (which made each categorical from an object array, all-None for the four empty columns, and sorted
    its categories again); 0.8-0.95 s of user CPU this way, 1.1-1.6 s with the kernel's in most runs (the
    kernel's share of page faults varies from 0.2 to 3.9 s between runs on a busy VM).  Arrow's thread
    pool gave no gain on two busy cores."""
    table = pq.read_table(path, use_threads=False)
    if table.column_names != list(columns):
        raise ValueError(f"cached figure frame has columns {table.column_names}, expected {list(columns)}")
    plain = [n for n in columns if n not in CATEGORICAL_COLUMNS]
    # the other columns as pandas reads them (its metadata gives Int64 and string dtypes): 0.15 s
    rest = table.select(plain).to_pandas(use_threads=False, split_blocks=True)
    out: dict[str, Any] = {}
    for name in columns:
        if name not in CATEGORICAL_COLUMNS:
            out[name] = rest[name]
            continue
        col = table.column(name)
        cat = _arrow_categorical(col)
        if cat is None:        # not dictionary-encoded: the general conversion
            cat = _compact_dtypes(col.to_pandas().rename(name).to_frame(), [name])[name].array
        out[name] = cat
    return pd.DataFrame(out, copy=False)


def _arrow_categorical(col: pa.ChunkedArray) -> pd.Categorical | None:
    """A dictionary-encoded (or all-null) Arrow column as a categorical with sorted plain object
    categories, from its indices; None for a column of another type."""
    if pa.types.is_null(col.type):        # a column without a value (Parquet keeps no dictionary)
        return pd.Categorical.from_codes(np.full(len(col), -1, dtype=np.int8),
                                         categories=pd.Index([], dtype=object))
    if not pa.types.is_dictionary(col.type):
        return None
    if not (pa.types.is_string(col.type.value_type) or pa.types.is_large_string(col.type.value_type)):
        return None
    chunks = col.chunks
    if any(not c.dictionary.equals(chunks[0].dictionary) for c in chunks[1:]):
        chunks = col.unify_dictionaries().chunks      # row groups with dictionaries of their own
    if not chunks:
        return pd.Categorical.from_codes(np.empty(0, dtype=np.int8), categories=pd.Index([], dtype=object))
    values = chunks[0].dictionary.to_numpy(zero_copy_only=False).astype(object)
    indices = pa.concat_arrays([c.indices for c in chunks]).fill_null(-1).to_numpy()
    if len(values) > 1 and not (values[:-1] < values[1:]).all():
        order = np.argsort(values, kind="stable")          # sorted(), as a compact store read has them
        rank = np.empty(len(values), dtype=indices.dtype)
        rank[order] = np.arange(len(values), dtype=indices.dtype)
        indices = np.where(indices >= 0, rank[np.maximum(indices, 0)], -1).astype(indices.dtype)
        values = values[order]
    # from_codes checks every code against the categories: a damaged cache raises here
    return pd.Categorical.from_codes(indices, categories=pd.Index(values, dtype=object))


def _compact_dtypes(frame: pd.DataFrame, columns: Sequence[str] = FIGURE_COLUMNS) -> pd.DataFrame:
    """A frame read back from Parquet in the dtypes of a compact store read: the categorical columns
    with plain sorted categories (Parquet gives a column without a value as objects)."""
    if list(frame.columns) != list(columns):
        raise ValueError(f"cached figure frame has columns {list(frame.columns)}, expected {list(columns)}")
    out = {}
    for name in frame.columns:
        col = frame[name]
        if name in CATEGORICAL_COLUMNS:
            values = col.astype("category") if not isinstance(col.dtype, pd.CategoricalDtype) else col
            cats = pd.Index(sorted(values.cat.categories), dtype=object)
            col = pd.Series(pd.Categorical(values, categories=cats), name=name)
        out[name] = col
    return pd.DataFrame(out)
