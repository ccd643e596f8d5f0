"""Every value a run can store comes back from every export: the three formats and the partitioned
Parquet export over any partition columns, read back with :func:`read_export` and with pyarrow (the
partitioned one with pyarrow's Hive reader, as Spark, DuckDB and Ray Data read it).

The values are any Unicode text, with the names the layers below reserve drawn often: Hive's null
(``__HIVE_DEFAULT_PARTITION__``, which a partition export of run whose judge had that id read back as
null), the file system's ``.``, ``..``, ``/``, empty and NUL, over-long names, and the characters of CSV
and of percent-encoding."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from verdictlab.core.judgment import make_judgment
from verdictlab.store import JUDGMENT_COLUMN_NAMES, JUDGMENT_COLUMNS, RunStore
from verdictlab.store.export import PARTITION_COLUMNS, export_judgments, read_export

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

RESERVED = ["__HIVE_DEFAULT_PARTITION__", ".", "..", "", "/", "=", "%", "%2F", "\x00", "a\x00b", "+", "~",
            "x" * 300, "é" * 200, "😀" * 80, " ", "\r", "a\rb", "\n", "'", "'=1", "=1+2", "-", "nan", "NULL",
            "None", "null", "part-0.parquet", "_verdictlab_export.json", "judge=x", "a/b/../c", "\ufeff",
            "\u2028", "CON", "_hidden", ".hidden"]
TEXT = st.one_of(st.sampled_from(RESERVED), st.text(max_size=40), st.text(min_size=200, max_size=400))
#: the text columns a test run fills with generated values (trial_id is derived, order a fixed word, verdict,
#: label and parse_status the judgment vocabulary; step '' or text: the store never holds a NULL step)
FREE_TEXT = ("judge", "dataset", "item_id", "protocol", "step", "category", "raw_output", "parse_detail",
             "fallback_rule", "scores", "error", "prompt_hash", "decoding")
TEXT_COLUMNS = [n for n, t, _ in JUDGMENT_COLUMNS if t == "TEXT"]


def _plain(v: Any) -> Any:
    if v is None or v is pd.NA:
        return None
    if isinstance(v, float) and math.isnan(v):
        return None
    return v.item() if hasattr(v, "item") else v


def _rows(frame: pd.DataFrame) -> dict[str, tuple[Any, ...]]:
    """Every row of a judgments frame as plain values, by trial_id."""
    cols = list(JUDGMENT_COLUMN_NAMES)
    return {str(r[0]): tuple(_plain(v) for v in r) for r in frame[cols].itertuples(index=False, name=None)}


def _same(got: pd.DataFrame, stored: pd.DataFrame, how: str) -> None:
    want, have = _rows(stored), _rows(got)
    assert set(have) == set(want), how
    for tid, row in want.items():
        for name, w, g in zip(JUDGMENT_COLUMN_NAMES, row, have[tid], strict=True):
            if isinstance(w, float) and isinstance(g, float):
                assert g == pytest.approx(w), (how, name)
            else:
                assert g == w, (how, name, w if not isinstance(w, str) else w[:60],
                                g if not isinstance(g, str) else g[:60])


@st.composite
def _stored_rows(draw: Any) -> list[dict[str, Any]]:
    n = draw(st.integers(1, 3))
    rows = []
    for k in range(n):
        values = {c: draw(TEXT) for c in FREE_TEXT}
        row = make_judgment(judge=values["judge"], dataset=values["dataset"], item_id=f"{values['item_id']}{k}",
                            protocol=values["protocol"], order=draw(st.sampled_from(["AB", "BA"])),
                            temperature=0.0, rep=k, step=values["step"],
                            verdict=draw(st.sampled_from(["A", "B", "tie", None])),
                            label=draw(st.sampled_from(["A", "B", "tie", None]))).as_dict()
        # the store's columns take any text (the engine writes only free / constrained as a decoding)
        row.update({c: values[c] for c in ("category", "raw_output", "parse_detail", "fallback_rule", "scores",
                                           "error", "prompt_hash", "decoding")})
        # a row may also hold NULL in each nullable text column
        for c in ("category", "raw_output", "error", "decoding"):
            if draw(st.booleans()) and draw(st.booleans()):
                row[c] = None
        rows.append(row)
    return rows


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=_stored_rows(), partition=st.lists(st.sampled_from(PARTITION_COLUMNS), min_size=1, max_size=4,
                                               unique=True))
def test_every_stored_value_round_trips_through_every_export(rows: list[dict[str, Any]],
                                                             partition: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        with RunStore(run) as store:
            store.add_judgments(rows)
            stored = store.judgments()
        for fmt in ("parquet", "jsonl", "csv"):
            path = export_judgments(run, format=fmt, out=Path(tmp) / f"all.{fmt}")
            _same(read_export(path), stored, f"read_export {fmt}")
        _same(pq.read_table(Path(tmp) / "all.parquet").to_pandas(), stored, "pyarrow parquet")
        parts = export_judgments(run, format="parquet", out=Path(tmp) / "parts", partition_by=partition)
        _same(read_export(parts), stored, f"read_export partitioned by {partition}")
        hive = ds.dataset(parts, format="parquet", partitioning="hive").to_table().to_pandas()
        _same(hive, stored, f"pyarrow hive reader, partitioned by {partition}")
        for path in parts.rglob("*"):           # every name the export made is a name a file system keeps
            assert len(path.name.encode()) <= 255 and "\x00" not in path.name


def test_a_judge_named_like_hive_null_reads_back(tmp_path: Path) -> None:
    """The issue's input: a run whose judge id is ``__HIVE_DEFAULT_PARTITION__``, exported partitioned by
    judge, dataset and protocol, came back with ``judge = None`` without a word."""
    from verdictlab.testing.synthetic_run import write_synthetic_run

    write_synthetic_run(tmp_path / "run", judges=("__HIVE_DEFAULT_PARTITION__", "sim:steady"), n_items=3,
                        datasets=("d",), protocols=("direct",)).close()
    from typer.testing import CliRunner

    from verdictlab.cli.main import app

    out = tmp_path / "parts"
    r = CliRunner().invoke(app, ["export", str(tmp_path / "run"), "--format", "parquet", "--partition-by",
                                 "judge,dataset,protocol", "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert set(read_export(out)["judge"]) == {"__HIVE_DEFAULT_PARTITION__", "sim:steady"}
    hive = ds.dataset(out, format="parquet", partitioning="hive").to_table()
    assert set(hive.column("judge").to_pylist()) == {"__HIVE_DEFAULT_PARTITION__", "sim:steady"}
    # no directory key decodes to Hive's null: the key columns hold no null either
    assert None not in hive.column("judge_key").to_pylist()


def test_csv_tells_an_empty_text_from_null_and_keeps_a_carriage_return(tmp_path: Path) -> None:
    rows = [make_judgment(judge=j, dataset="d", item_id=f"i{k}", protocol="p", order="AB", temperature=0.0,
                          rep=0, verdict="A", raw_output=raw).as_dict()
            for k, (j, raw) in enumerate([("", None), ("\r", ""), ("a\rb", "'")])]
    with RunStore(tmp_path / "run") as store:
        store.add_judgments(rows)
    back = read_export(export_judgments(tmp_path / "run", format="csv"))
    got = {r.item_id: (r.judge, None if r.raw_output is pd.NA else r.raw_output) for r in back.itertuples()}
    assert got == {"i0": ("", None), "i1": ("\r", ""), "i2": ("a\rb", "'")}
    text = (tmp_path / "run" / "judgments.csv").read_bytes()
    assert text.count(b"\r\n") == 4           # the header and three rows, RFC 4180 line ends
