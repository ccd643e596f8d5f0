"""The report's figure-column cache (``verdictlab.store.column_cache``) and the store reads under it: a cached frame
reads back equal to a store read, a changed store is never served from the cache, a damaged entry is
rebuilt, an unwritable one skipped; ``parse_detail`` is read only where a figure reads it; the texts of
one pair come from the store by index; a report built through the cache equals one built without it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from verdictlab.core.judgment import make_judgment
from verdictlab.core.policy import FigurePolicy
from verdictlab.report import build_report, report_json
from verdictlab.store import CompactColumns, RunStore, figure_detail_kept, open_store
from verdictlab.store.column_cache import (
    FIGURE_COLUMNS,
    KEEP,
    _compact_dtypes,
    _read_cached,
    cached_figure_reader,
    figure_frame,
    figure_key,
    write_folder,
)
from verdictlab.testing.synthetic_run import write_synthetic_run


def _row(item: str, order: str, rep: int, **kw: object) -> object:
    return make_judgment(judge="sim:a", dataset="ds", item_id=item, protocol="direct", order=order,
                         temperature=0.0, rep=rep, label="A", **kw)  # type: ignore[arg-type]


@pytest.fixture()
def run(tmp_path: Path) -> Path:
    # four rows, one of each kind figure_detail_kept decides on:
    #   p1 AB ok/free        -> detail dropped (no figure reads a clean parse's detail)
    #   p1 BA failed/free    -> kept (the parse audit's reason)
    #   p2 AB ok/constrained -> kept (the decoding table names the mechanism)
    #   p2 BA repaired/free  -> kept
    st = RunStore(tmp_path / "run")
    st.add_judgments([
        _row("p1", "AB", 0, verdict="A", raw_output="raw-1", parse_detail="clean"),
        _row("p1", "BA", 0, verdict=None, raw_output="raw-2", parse_detail="no verdict found"),
        _row("p2", "AB", 0, verdict="B", raw_output="raw-3", parse_detail="grammar: gbnf", decoding="constrained"),
        _row("p2", "BA", 0, verdict="A", parse_status="repaired", raw_output="raw-4", parse_detail="quotes fixed"),
    ])
    st.close()
    return tmp_path / "run"


def test_parse_detail_is_read_only_where_a_figure_reads_it(run: Path) -> None:
    assert figure_detail_kept(["ok", "failed", "ok", "repaired", "ok"],
                              ["free", "free", "constrained", "free", None]).tolist() == [
        False, True, True, True, False]
    with open_store(run) as st:
        full = st.judgments(["item_id", "order", "parse_detail"])
        figure = st.judgments(["item_id", "order", "parse_detail"], figure_details=True)
    assert full["parse_detail"].tolist() == ["clean", "no verdict found", "grammar: gbnf", "quotes fixed"]
    assert figure["parse_detail"].isna().tolist() == [True, False, False, False]
    assert figure["parse_detail"].tolist()[1:] == ["no verdict found", "grammar: gbnf", "quotes fixed"]


def test_pair_texts_gives_one_pairs_raw_outputs_and_details(run: Path) -> None:
    with open_store(run) as st:
        cell = {"judge": "sim:a", "dataset": "ds", "protocol": "direct", "temperature": 0.0}
        texts, absent, constrained, free = st.pair_texts([
            {**cell, "item_id": "p1"}, {**cell, "item_id": "p9"}, {**cell, "item_id": "p2", "decoding": "constrained"},
            {**cell, "item_id": "p2"}])
    assert absent == {}
    assert free == {("BA", 0): ("raw-4", "quotes fixed")}
    assert texts == {("AB", 0): ("raw-1", "clean"), ("BA", 0): ("raw-2", "no verdict found")}
    # the decoding is part of the cell: p2's free BA row is not in the constrained cell
    assert constrained == {("AB", 0): ("raw-3", "grammar: gbnf")}


def test_compact_columns_in_chunks_equal_one_chunk() -> None:
    cols = ["judge", "rep", "temperature", "verdict"]
    rows = [("sim:b", 0, 0.0, "A"), ("sim:a", 1, 0.7, None), ("sim:c", 2, 0.0, "B"), ("sim:a", 0, 0.7, "tie")]
    whole, parts = CompactColumns(cols), CompactColumns(cols)
    whole.add_rows(rows)
    parts.add_rows(rows[:1])
    parts.add_rows(rows[1:])
    joined = parts.frame()
    pd.testing.assert_frame_equal(whole.frame(), joined)
    assert list(joined["judge"].cat.categories) == ["sim:a", "sim:b", "sim:c"]   # sorted across chunks


def test_a_cached_frame_equals_a_store_read(run: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    with open_store(run) as st:
        direct = figure_frame(st)
        first = figure_frame(st, cache=cache)
        assert (cache / figure_key(st)).is_dir()
        second = figure_frame(st, cache=cache)
    assert list(direct.columns) == list(FIGURE_COLUMNS)
    assert "raw_output" not in direct and "trial_id" not in direct
    pd.testing.assert_frame_equal(direct, first)
    pd.testing.assert_frame_equal(direct, second)        # dtypes too: categoricals with sorted categories
    # nothing written inside the run directory
    assert {p.name for p in run.iterdir()} <= {"run.sqlite", "run.sqlite-wal", "run.sqlite-shm"}


def _cached_ways(path: Path, columns: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The frame at ``path`` read back the fast way and the way it was read before (pandas, then dtypes)."""
    return _read_cached(path, columns), _compact_dtypes(pd.read_parquet(path), columns)


def test_the_fast_cache_read_equals_the_pandas_read(tmp_path: Path) -> None:
    # unsorted categories, an unused one, missing values, an all-missing column, nullable ints, strings
    frame = pd.DataFrame({
        "judge": pd.Categorical(["sim:b", "sim:a", None, "sim:b"], categories=["sim:b", "sim:z", "sim:a"]),
        "rep": pd.array([0, None, 2, 1], dtype="Int64"),
        "error": pd.Categorical([None] * 4, categories=pd.Index([], dtype=object)),
        "temperature": [0.0, np.nan, 0.7, 1.0],
        "parse_detail": pd.array(["x", None, "y", None], dtype="string"),
        "verdict": pd.Categorical(["A", "B", "A", "tie"]),
    })
    cols = list(frame.columns)
    frame.to_parquet(tmp_path / "f.parquet", index=False)
    fast, before = _cached_ways(tmp_path / "f.parquet", cols)
    pd.testing.assert_frame_equal(fast, before, check_exact=True)
    assert list(fast["judge"].cat.categories) == ["sim:a", "sim:b", "sim:z"]
    # an empty frame
    frame.iloc[:0].to_parquet(tmp_path / "e.parquet", index=False)
    pd.testing.assert_frame_equal(*_cached_ways(tmp_path / "e.parquet", cols), check_exact=True)


def test_the_fast_cache_read_joins_row_groups_with_their_own_dictionaries(tmp_path: Path) -> None:
    # a file written by another writer: each row group has its own dictionary; one column is plain text
    parts = [pa.table({"judge": pa.array(["sim:c", "sim:a", None]).dictionary_encode(), "label": ["A", None, "B"]}),
             pa.table({"judge": pa.array(["sim:b", "sim:c"]).dictionary_encode(), "label": ["tie", "A"]})]
    with pq.ParquetWriter(tmp_path / "g.parquet", parts[0].schema) as w:
        for t in parts:
            w.write_table(t)
    fast, before = _cached_ways(tmp_path / "g.parquet", ["judge", "label"])
    pd.testing.assert_frame_equal(fast, before, check_exact=True)
    assert fast["judge"].tolist()[:2] == ["sim:c", "sim:a"] and fast["judge"].isna().tolist()[2]
    assert list(fast["judge"].cat.categories) == ["sim:a", "sim:b", "sim:c"]


def test_a_changed_store_gets_a_new_key(run: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    with open_store(run) as st:
        before = figure_key(st)
        assert len(figure_frame(st, cache=cache)) == 4
    st = RunStore(run)
    st.add_judgments([_row("p3", "AB", 0, verdict="A")])
    st.close()
    with open_store(run) as st:
        assert figure_key(st) != before
        assert len(figure_frame(st, cache=cache)) == 5
    assert len(list(cache.iterdir())) == 2


def test_a_damaged_cache_is_rebuilt_and_an_unwritable_one_skipped(run: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    with open_store(run) as st:
        direct = figure_frame(st)
        figure_frame(st, cache=cache)
        (cache / figure_key(st) / "judgments.parquet").write_bytes(b"not parquet")
        pd.testing.assert_frame_equal(figure_frame(st, cache=cache), direct)
        pd.testing.assert_frame_equal(figure_frame(st, cache=cache), direct)   # rewritten
        blocked = tmp_path / "file"
        blocked.write_text("a file where the cache folder would be")
        pd.testing.assert_frame_equal(figure_frame(st, cache=blocked / "columns"), direct)


def test_a_cache_this_user_may_not_read_is_skipped(run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # another user's cache folder: Path.is_dir raises PermissionError on a folder one may not search (root
    # ignores permissions, so the error is fed in); the report reads the store instead of failing
    cache = tmp_path / "cache"
    real = Path.is_dir

    def denied(self: Path) -> bool:
        if str(self).startswith(str(cache)):
            raise PermissionError(13, "Permission denied", str(self))
        return real(self)

    monkeypatch.setattr(Path, "is_dir", denied)
    with open_store(run) as st:
        pd.testing.assert_frame_equal(figure_frame(st, cache=cache), figure_frame(st))


def test_only_the_most_recently_used_entries_are_kept(tmp_path: Path) -> None:
    for k in range(KEEP + 3):
        assert write_folder(tmp_path, f"key{k}", lambda folder, k=k: (folder / "x").write_text(str(k))) is not None
    kept = sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("."))
    assert len(kept) == KEEP


def test_a_report_through_the_cache_equals_one_without(tmp_path: Path) -> None:
    st = write_synthetic_run(tmp_path / "run", datasets=("d1",), protocols=("direct", "vf-json"), n_items=8,
                             repetitions=3, seed=4, fail_rate=0.2, decodings=("free", "constrained"))
    st.close()
    plain = report_json(build_report(tmp_path / "run", policy=FigurePolicy(n_bootstrap=30)))
    cold = build_report(tmp_path / "run", policy=FigurePolicy(n_bootstrap=30), cache=tmp_path / "cache")
    warm = build_report(tmp_path / "run", policy=FigurePolicy(n_bootstrap=30), cache=tmp_path / "cache")
    assert report_json(cold) == plain and report_json(warm) == plain
    # the broken items shown carry the stored raw outputs and details (read for those pairs only)
    with open_store(tmp_path / "run") as s:
        stored = s.judgments(["judge", "protocol", "temperature", "item_id", "order", "rep", "decoding",
                              "raw_output", "parse_detail"])
    assert warm.broken_items is not None
    rows = warm.broken_items["rows"]
    assert rows
    for row in rows:
        for order, recs in row["orders"].items():
            for rec in recs:
                match = stored[(stored["judge"] == row["judge"]) & (stored["protocol"] == row["protocol"])
                               & (stored["temperature"] == row["temperature"])
                               & (stored["item_id"] == row["item_id"]) & (stored["order"] == order)
                               & (stored["rep"] == rec["rep"]) & (stored["decoding"] == row["decoding"])]
                assert len(match) == 1
                assert rec["raw_output"] == (match["raw_output"].iloc[0] or "")[:4000]
                assert rec["parse_detail"] == match["parse_detail"].iloc[0]
    assert np.isfinite([c.value("T") for c in warm.cells if c.value("T") is not None]).all()


def test_a_report_reads_a_damaged_cache_on_its_thread_then_rebuilds_it(tmp_path: Path) -> None:
    # the report reads a cached figure frame on a second thread while it validates the items: a damaged
    # file there must give the report of the store, and a rebuilt cache entry, never an error or a guess
    st = write_synthetic_run(tmp_path / "run", datasets=("d1",), protocols=("direct",), n_items=6, seed=2)
    st.close()
    cache = tmp_path / "cache"
    plain = report_json(build_report(tmp_path / "run", policy=FigurePolicy(n_bootstrap=20)))
    build_report(tmp_path / "run", policy=FigurePolicy(n_bootstrap=20), cache=cache)     # fills the cache
    with open_store(tmp_path / "run") as s:
        entry = cache / figure_key(s) / "judgments.parquet"
        assert cached_figure_reader(s, cache=cache) is not None
    entry.write_bytes(b"not parquet")
    assert report_json(build_report(tmp_path / "run", policy=FigurePolicy(n_bootstrap=20), cache=cache)) == plain
    pq.read_table(entry)                                                                 # rebuilt, readable
    with open_store(tmp_path / "run") as s:
        assert cached_figure_reader(s, cache=tmp_path / "empty") is None               # nothing cached there
