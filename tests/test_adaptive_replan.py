"""A rerun with another precision design plans again from the stored pilot: a tighter target judges the
extra trials the new plan needs and says so (before, it judged nothing, exited 0 and kept the old plan);
the same design resumes without a call.  And the designs that cannot be planned are refused by the
config (exit 3) instead of an internal error: R = 1 with precision, a phi or T target with one order."""

from __future__ import annotations

import json
import random

import pytest
import yaml
from typer.testing import CliRunner

from verdictlab.cli.main import app
from verdictlab.engine import run_config
from verdictlab.engine.adaptive import META_KEY
from verdictlab.engine.config import ConfigError, config_from_dict
from verdictlab.store import RunStore


def _pairs(path, n=200):
    rng = random.Random(5)
    with open(path, "w") as f:
        for i in range(n):
            f.write(json.dumps({"item_id": f"i{i}", "question": f"question {i}", "response_a": "a",
                                "response_b": "b", "label": rng.choice("AB")}) + "\n")


def _data(path, **over):
    data = {"name": "replan", "datasets": [{"name": "jsonl", "path": str(path)}],
            "judges": ["sim:skill=0.8,position_lock=0.2,noise=0.1,seed=1"], "protocols": ["direct"],
            "repetitions": {"max": 5}, "precision": {"T": 0.2, "pilot_pairs": 20}}
    data.update(over)
    return data


def test_a_tighter_precision_on_a_rerun_judges_the_extra_trials_and_says_so(tmp_path):
    _pairs(tmp_path / "pairs.jsonl")
    loose = config_from_dict(_data(tmp_path / "pairs.jsonl"))
    first = run_config(loose, tmp_path / "run", progress=False)
    assert first.complete and first.notes == []
    with RunStore(tmp_path / "run") as st:
        n_pairs_loose = next(iter(st.get_meta(META_KEY)["cells"].values()))["n_pairs"]
    tight = config_from_dict(_data(tmp_path / "pairs.jsonl", precision={"T": 0.06, "pilot_pairs": 20}))
    second = run_config(tight, tmp_path / "run", progress=False)
    assert second.n_written > 0, "a tighter precision judged nothing"
    assert len(second.notes) == 1 and "adaptive design changed since the last session (T ±0.2" in second.notes[0]
    assert "T ±0.06" in second.notes[0]
    with RunStore(tmp_path / "run") as st:
        meta = st.get_meta(META_KEY)
        judged_pairs = st.judgments()["item_id"].nunique()
    plan = next(iter(meta["cells"].values()))
    assert meta["design"]["targets"] == {"T": 0.06} and meta["previous_designs"][0]["targets"] == {"T": 0.2}
    assert plan["n_pairs"] > n_pairs_loose and judged_pairs == plan["n_pairs"]
    # the same design again: nothing to judge, nothing to say
    third = run_config(tight, tmp_path / "run", progress=False)
    assert third.n_written == 0 and third.notes == []


def test_the_cli_prints_the_replan_line(tmp_path):
    _pairs(tmp_path / "pairs.jsonl")
    for t in (0.2, 0.08):
        cfg = tmp_path / f"c{t}.yaml"
        cfg.write_text(yaml.safe_dump(_data("pairs.jsonl", precision={"T": t, "pilot_pairs": 20})))
        r = CliRunner().invoke(app, ["run", str(cfg), "--run-dir", str(tmp_path / "run"), "--no-progress"])
        assert r.exit_code == 0, r.output
    # the run's summary and notes are messages: stderr (docs/cli.md)
    assert "adaptive design changed since the last session" in r.stderr
    assert "0 trials judged this run" not in r.stderr


@pytest.mark.parametrize(("over", "message"), [
    ({"repetitions": {"max": 1}}, r"precision: needs repetitions of at least 2 \(got 1\)"),
    ({"orders": ["AB"], "precision": {"phi": 0.1}}, r"a precision target for phi needs both orders"),
    ({"orders": ["BA"], "precision": {"T": 0.1, "A": 0.1}}, r"a precision target for T needs both orders"),
])
def test_designs_that_cannot_be_planned_are_config_errors(tmp_path, over, message):
    _pairs(tmp_path / "pairs.jsonl", n=20)
    with pytest.raises(ConfigError, match=message):
        config_from_dict(_data(tmp_path / "pairs.jsonl", **over))
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump(_data("pairs.jsonl", **over)))
    r = CliRunner().invoke(app, ["run", str(cfg), "--run-dir", str(tmp_path / "run"), "--no-progress"])
    assert r.exit_code == 3 and "internal error" not in r.stderr


def test_one_order_with_an_accuracy_target_is_still_planned(tmp_path):
    _pairs(tmp_path / "pairs.jsonl", n=20)
    cfg = config_from_dict(_data(tmp_path / "pairs.jsonl", orders=["AB"], precision={"A": 0.2, "pilot_pairs": 10}))
    assert cfg.precision is not None and cfg.precision.targets() == {"A": 0.2}
