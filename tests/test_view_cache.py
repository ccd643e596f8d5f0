"""The viewer's index cache: read back equal to a fresh build, keyed so a changed store is rebuilt, a damaged
cache rebuilt, an unwritable one skipped -- and never anything written inside the run directory."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from _view_runs import write_known_run
from verdictlab.core.judgment import make_judgment
from verdictlab.core.policy import FigurePolicy
from verdictlab.store import RunStore, open_store
from verdictlab.view import Filters, PairIndex
from verdictlab.view.index_cache import cache_root


def _index(run: Path, cache: Path | None, unparsed: str = "exclude") -> PairIndex:
    with open_store(run) as st:
        return PairIndex.from_store(st, policy=FigurePolicy(unparsed=unparsed), cache=cache)


def _same(a: PairIndex, b: PairIndex) -> None:
    pd.testing.assert_frame_equal(a.pairs.astype("object").reset_index(drop=True),
                                  b.pairs.astype("object").reset_index(drop=True), check_dtype=False)
    assert np.array_equal(a.rowids, b.rowids) and np.array_equal(a.offsets, b.offsets)
    assert a.pair_keys == b.pair_keys and a.choices == b.choices
    for f in (Filters(), Filters(outcome="flipped"), Filters(text="p6"),
              Filters(temperature=0.7, outcome="disagree")):
        assert a.page(f, per_page=5) == b.page(f, per_page=5)


def test_a_cached_index_equals_a_fresh_build(tmp_path: Path) -> None:
    run = write_known_run(tmp_path / "run")
    before = sorted(p.name for p in run.iterdir())
    fresh = _index(run, None)
    first = _index(run, tmp_path / "cache")
    second = _index(run, tmp_path / "cache")
    assert not fresh.from_cache and not first.from_cache and second.from_cache
    _same(fresh, second)
    assert len(list((tmp_path / "cache").iterdir())) == 1
    # the policy is part of the key: another policy is another index
    wrong = _index(run, tmp_path / "cache", unparsed="wrong")
    assert not wrong.from_cache and len(list((tmp_path / "cache").iterdir())) == 2
    _same(wrong, _index(run, None, unparsed="wrong"))
    # nothing written beside the store (SQLite itself may add the empty -wal/-shm companions a read of a
    # WAL-mode database needs)
    added = {p.name for p in run.iterdir()} - set(before)
    assert added <= {"run.sqlite-wal", "run.sqlite-shm"}
    assert not (run / "run.sqlite-wal").exists() or (run / "run.sqlite-wal").stat().st_size == 0


def test_a_changed_store_is_not_served_from_the_cache(tmp_path: Path) -> None:
    run = write_known_run(tmp_path / "run")
    assert not _index(run, tmp_path / "cache").from_cache
    st = RunStore(run)
    st.add_judgments([make_judgment(judge="sim:late", dataset="ds1", item_id="p1", protocol="direct", order="AB",
                                    temperature=0.0, rep=0, verdict="B", label="A")])
    st.close()
    after = _index(run, tmp_path / "cache")
    assert not after.from_cache and after.n_judgments == 97
    assert "sim:late" in after.choices["judge"]


def test_a_damaged_cache_is_rebuilt_and_an_unwritable_one_skipped(tmp_path: Path) -> None:
    run = write_known_run(tmp_path / "run")
    fresh = _index(run, tmp_path / "cache")
    (entry,) = (tmp_path / "cache").iterdir()
    (entry / "pairs.parquet").write_bytes(b"not parquet")
    rebuilt = _index(run, tmp_path / "cache")
    assert not rebuilt.from_cache
    _same(fresh, rebuilt)
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache folder would go")
    assert not _index(run, blocked).from_cache                      # works without a cache


def test_the_store_is_unchanged_by_building_and_reading_the_cache(tmp_path: Path) -> None:
    run = write_known_run(tmp_path / "run")
    digest = hashlib.sha256((run / "run.sqlite").read_bytes()).hexdigest()
    _index(run, tmp_path / "cache")
    _index(run, tmp_path / "cache")
    assert hashlib.sha256((run / "run.sqlite").read_bytes()).hexdigest() == digest


def test_cache_root_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("VERDICTLAB_CACHE_DIR", str(tmp_path / "c"))
    assert cache_root() == tmp_path / "c" / "view"
    monkeypatch.delenv("VERDICTLAB_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == tmp_path / "xdg" / "verdictlab" / "view"
