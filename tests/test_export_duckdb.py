"""docs/scale.md's DuckDB query over a partitioned export gives verdictlab's C, phi and A per cell.

The query is read from the doc (its ``sql`` block), so the doc and this test cannot drift apart.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from verdictlab.core.policy import FigurePolicy
from verdictlab.stats import reliability
from verdictlab.store import open_store
from verdictlab.store.export import export_judgments
from verdictlab.testing.synthetic_run import write_synthetic_run

duckdb = pytest.importorskip("duckdb")
DOC = Path(__file__).resolve().parents[1] / "docs" / "scale.md"


def _query() -> str:
    blocks = re.findall(r"```sql\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)
    assert len(blocks) == 1, "docs/scale.md should hold one sql block"
    return blocks[0]


def test_duckdb_over_the_partitions_gives_the_store_figures(tmp_path, monkeypatch) -> None:
    # two judges (one position-biased) x two datasets x two protocols x two temperatures, 10 items,
    # 3 repetitions, judge ties and parse failures; a few items judged in one order only
    store = write_synthetic_run(tmp_path / "run", datasets=("llmbar", "pandalm"), protocols=("direct", "vf-json"),
                                n_items=10, judge_tie_rate=0.05, one_order_share=0.1, fail_rate=0.08)
    store.close()
    export_judgments(tmp_path / "run", out=tmp_path / "judgments", partition_by=["judge", "dataset"])
    monkeypatch.chdir(tmp_path)                       # the query reads 'judgments/**/*.parquet'
    got = duckdb.sql(_query()).df()
    with open_store(tmp_path / "run") as st:
        want = reliability(st.judgments(), policy=FigurePolicy(n_bootstrap=0))
    want = want.sort_values(["judge", "protocol", "dataset", "temperature"], ignore_index=True)
    assert len(got) == len(want) == 16 and set(got["decoding"]) == {"free"}
    for col in ("judge", "protocol", "dataset"):
        assert got[col].tolist() == want[col].astype(str).tolist()
    for fig in ("C", "phi", "A"):
        assert got[fig].to_numpy() == pytest.approx(want[fig].to_numpy(float), abs=1e-12), fig
    assert os.path.isfile(tmp_path / "judgments" / "_verdictlab_export.json")
