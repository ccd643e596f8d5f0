"""`verdictlab drift`: two runs, two judges of one run, a series, --json and --html."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from verdictlab.core.design import trial_id
from verdictlab.store import RunStore

HOSTILE = 'sim:<script>alert("x")</script>'


def _app() -> typer.Typer:
    """The real CLI: its one error path gives each refusal its documented exit code."""
    from verdictlab.cli.main import app

    return app


def _write_run(d: Path, judge: str, accuracy: float, *, seed: int, n: int = 120,
               protocols: tuple[str, ...] = ("direct",)) -> Path:
    rng = np.random.default_rng(seed)
    rows = []
    for proto in protocols:
        for i in range(n):
            label = "AB"[i % 2]
            right = rng.random() < accuracy
            v = label if right else ("B" if label == "A" else "A")
            for order in ("AB", "BA"):
                rows.append({"trial_id": trial_id(judge, "anchor", str(i), proto, order, 0.0, 0), "judge": judge,
                             "dataset": "anchor", "item_id": str(i), "protocol": proto, "order": order,
                             "temperature": 0.0, "rep": 0, "step": "", "label": label, "verdict": v,
                             "parse_status": "ok"})
    with RunStore(d) as s:
        s.add_judgments(rows)
    return d


def test_two_runs_json_has_the_promised_fields(tmp_path: Path):
    a = _write_run(tmp_path / "a", "sim:v1", 0.9, seed=1, protocols=("direct", "vf-json"))
    b = _write_run(tmp_path / "b", "sim:v2", 0.7, seed=2, protocols=("direct", "vf-json"))
    res = CliRunner().invoke(_app(), ["drift", str(a), str(b), "--format", "json", "--bootstrap", "200"])
    assert res.exit_code == 0, res.output
    rep = json.loads(res.output)
    assert rep["mode"] == "pair" and len(rep["cells"]) == 2
    for c in rep["cells"]:
        for k in ("kappa", "flip_rate", "mcnemar_p", "mcnemar_p_holm", "delta_A", "delta_A_lo", "delta_A_hi",
                  "delta_T", "equivalent"):
            assert k in c
        assert c["judge_a"] == "sim:v1" and c["judge_b"] == "sim:v2"
        assert c["delta_A"] < -0.1 and c["equivalent"] == "no"     # 20 pp drop, margin 2 pp
        assert c["mcnemar_p_holm"] >= c["mcnemar_p"]
    assert {r["figure"] for r in rep["ranking_change"]} == {"A", "T"}


def test_same_run_twice_is_equivalent_and_html_escapes(tmp_path: Path):
    a = _write_run(tmp_path / "a", HOSTILE, 0.8, seed=1)
    out = tmp_path / "drift.html"
    res = CliRunner().invoke(_app(), ["drift", str(a), str(a), "--format", "html", "-o", str(out), "--bootstrap", "100"])
    assert res.exit_code == 0, res.output
    page = out.read_text()
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "<svg" in page and "yes" in page


def test_one_run_two_judges_needs_both_names(tmp_path: Path):
    d = tmp_path / "r"
    _write_run(d, "sim:a", 0.8, seed=1)
    _write_run(d, "sim:b", 0.8, seed=1)      # same verdicts: identical judges
    res = CliRunner().invoke(_app(), ["drift", str(d), "--format", "json"])
    assert res.exit_code == 2 and "--judge-a" in res.output
    res = CliRunner().invoke(_app(), ["drift", str(d), "--judge-a", "sim:a", "--judge-b", "sim:b", "--format", "json"])
    rep = json.loads(res.output)
    assert rep["cells"][0]["flip_rate"] == 0 and rep["cells"][0]["kappa"] == pytest.approx(1.0)


def test_series_flags_the_first_shifted_run(tmp_path: Path):
    runs = [_write_run(tmp_path / f"r{k}", "sim:j", acc, seed=k, n=300)
            for k, acc in enumerate((0.85, 0.85, 0.85, 0.65, 0.65))]
    res = CliRunner().invoke(_app(), ["drift", *map(str, runs), "--format", "json", "--baseline", "2"])
    assert res.exit_code == 0, res.output
    ch = json.loads(res.output)["charts"][0]
    assert ch["first_flagged_index"] == 3 and ch["onset_index"] == 3
    assert ch["first_flagged_run"].endswith("r3")
    out = tmp_path / "series.html"
    res = CliRunner().invoke(_app(), ["drift", *map(str, runs), "--chart", "ewma", "--html", str(out)])
    assert res.exit_code == 0, res.output
    assert "first flagged" in res.output and "<svg" in out.read_text()


def test_missing_run_dir_is_a_clear_error(tmp_path: Path):
    res = CliRunner().invoke(_app(), ["drift", str(tmp_path / "nope"), str(tmp_path / "nope2")])
    assert res.exit_code == 5 and "nope" in res.output     # EXIT_STORE (docs/errors.md)


def test_a_run_whose_every_verdict_is_unparsed_says_so(tmp_path: Path):
    """``drift R R`` on a run where every verdict is unparsed said "no cell ... judged on both sides",
    naming the same cells on both sides; the cause is that nothing was parsed."""
    from verdictlab.cli.main import app
    from verdictlab.testing.synthetic_run import write_synthetic_run

    write_synthetic_run(tmp_path / "r", n_items=4, judges=("sim:steady",), protocols=("direct",), datasets=("d",),
                        fail_rate=1.0).close()
    r = CliRunner().invoke(app, ["drift", str(tmp_path / "r"), str(tmp_path / "r"), "--bootstrap", "20"])
    assert r.exit_code == 2
    assert "every verdict of" in r.stderr and "is unparsed" in r.stderr and "--unparsed wrong" in r.stderr
    assert "no cell" not in r.stderr
