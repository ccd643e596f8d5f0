"""`verdictlab run --plan` (issue 13 item 6): calls, tokens and dollars of the fixed design, at batch
prices, and of the adaptive design (needs a pilot; `--plan --pilot` runs just the pilot, which the
adaptive run then reuses)."""

from __future__ import annotations

import json
import random
import uuid

import pytest
from typer.testing import CliRunner

from verdictlab.cli.main import app
from verdictlab.engine import run_config
from verdictlab.engine.config import config_from_dict
from verdictlab.engine.plan_cost import pilot_trials
from verdictlab.engine.prepare import prepare_run
from verdictlab.store import RunStore

SIM = "sim:skill=0.8,position_lock=0.1,noise=0.1,seed=1"


def _pairs(path, n=120):
    rng = random.Random(0)
    with open(path, "w") as f:
        for i in range(n):
            f.write(json.dumps({"item_id": f"i{i}", "question": f"question {i}", "response_a": "a",
                                "response_b": "b", "label": rng.choice("AB")}) + "\n")


def _config(tmp_path, **over):
    _pairs(tmp_path / "pairs.jsonl")
    data = {"name": "plan", "datasets": [{"name": "jsonl", "path": str(tmp_path / "pairs.jsonl")}],
            "judges": [SIM], "protocols": ["direct"], "temperatures": [0.7], "repetitions": 10}
    data.update(over)
    return config_from_dict(data)


def test_fixed_plan_shows_batch_prices(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", f"sk-test-{uuid.uuid4().hex}")
    cfg = _config(tmp_path, judges=[{"id": "openai:gpt-4o-mini", "batch": True}])
    plan = run_config(cfg, tmp_path / "run", plan_only=True).plan
    assert plan is not None and plan.n_remaining == 120 * 2 * 10
    j = plan.judges[0]
    assert j.est_cost_usd and j.est_cost_batch_usd == pytest.approx(j.est_cost_usd / 2)
    text = "\n".join(plan.lines())
    assert f"at batch prices (batch: true on OpenAI / Anthropic judges): <= ${j.est_cost_batch_usd:.4f}" in text
    assert not (tmp_path / "run").exists()       # a plan calls nothing and writes nothing


def test_adaptive_plan_needs_a_pilot_then_plans_from_it(tmp_path):
    cfg = _config(tmp_path, repetitions={"max": 10}, precision={"T": 0.06, "pilot_pairs": 30})
    plan = run_config(cfg, tmp_path / "run", plan_only=True).plan
    assert plan is not None
    text = "\n".join(plan.lines())
    assert "adaptive design (T ±0.06 at 95%; R = 10; pilot 30 pairs per cell):" in text
    assert "needs a pilot (30 pairs at full R: 600 calls)" in text
    # --plan --pilot: only the pilot's trials are judged, then the plan uses them
    res = CliRunner().invoke(app, ["run", str(_write(tmp_path, cfg)), "--run-dir", str(tmp_path / "run"),
                                   "--plan", "--pilot", "--no-progress"])
    assert res.exit_code == 0, res.output
    assert "calls expected (fixed R-rep design at this precision:" in res.output
    assert "expected (planned cells): ~" in res.output
    pilot_ids = {t.trial_id for t in pilot_trials(prepare_run(cfg))}
    with RunStore(tmp_path / "run") as st:
        assert set(st.judgments().trial_id) == pilot_ids and len(pilot_ids) == 600
    # the adaptive run reuses the pilot: it is not judged again
    s = run_config(cfg, tmp_path / "run", progress=False)
    assert s.n_skipped == 600 and s.complete


def test_pilot_needs_plan(tmp_path):
    cfg = _config(tmp_path)
    res = CliRunner().invoke(app, ["run", str(_write(tmp_path, cfg)), "--pilot"])
    assert res.exit_code == 2 and "--pilot goes with --plan" in res.output


def _write(tmp_path, cfg):
    import yaml

    p = tmp_path / "cfg.yaml"
    d = cfg.public_dict()
    d.pop("source", None)
    p.write_text(yaml.safe_dump(d))
    return p
