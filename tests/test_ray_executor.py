"""The Ray executor (issue 15) on a local Ray cluster: the same judgments as the local executor,
the cluster-wide budget, a killed worker, and a killed driver."""

from __future__ import annotations

import json
import random

import pytest

ray = pytest.importorskip("ray")

from verdictlab.core.policy import FigurePolicy  # noqa: E402
from verdictlab.engine import run_config  # noqa: E402
from verdictlab.engine.config import config_from_dict  # noqa: E402
from verdictlab.report import build_report  # noqa: E402
from verdictlab.store import RunStore  # noqa: E402

pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def ray_cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    yield
    ray.shutdown()


def _pairs(path, n=40, seed=0):
    rng = random.Random(seed)
    with open(path, "w") as f:
        for i in range(n):
            f.write(json.dumps({"item_id": f"i{i}", "question": f"question {i}", "response_a": "a" * (i % 7 + 1),
                                "response_b": "b", "label": rng.choice("AB")}) + "\n")


def _config(path, **over):
    data = {"name": "ray", "datasets": [{"name": "jsonl", "path": str(path)}],
            "judges": ["sim:skill=0.8,position_lock=0.2,noise=0.2,malformed=0.05,seed=4",
                       "sim:skill=0.6,noise=0.4,seed=9"],
            "protocols": ["direct", "vf-json"], "temperatures": [0.0, 0.7], "repetitions": 3}
    data.update(over)
    return config_from_dict(data)


def _rows(run_dir):
    with RunStore(run_dir) as st:
        frame = st.judgments()
    return {t: (v, s) for t, v, s in zip(frame["trial_id"], frame["verdict"], frame["parse_status"], strict=True)}


def test_ray_writes_the_same_judgments_and_figures_as_local(tmp_path, ray_cluster):
    _pairs(tmp_path / "p.jsonl")
    local = run_config(_config(tmp_path / "p.jsonl"), tmp_path / "local", progress=False)
    remote = run_config(_config(tmp_path / "p.jsonl", executor="ray", ray={"workers": 2, "chunk_size": 20}),
                        tmp_path / "ray", progress=False)
    assert local.complete and remote.complete
    assert remote.n_written == local.n_written == 40 * 2 * 2 * 2 * 2 * 3
    assert _rows(tmp_path / "local") == _rows(tmp_path / "ray")
    a = build_report(tmp_path / "local", policy=FigurePolicy(n_bootstrap=50))
    b = build_report(tmp_path / "ray", policy=FigurePolicy(n_bootstrap=50))
    keys = ("judge", "protocol", "dataset", "temperature", "C", "phi", "A", "T", "n_unparsed")

    def shown(c):       # T's interval is its figure's low/high (value() gives a figure's point only)
        return {**{k: c.value(k) for k in keys}, "T_lo": c.figure("T").low, "T_hi": c.figure("T").high}

    assert [shown(c) for c in a.cells] == [shown(c) for c in b.cells]
    # resume: nothing left, nothing judged twice
    again = run_config(_config(tmp_path / "p.jsonl", executor="ray"), tmp_path / "ray", progress=False)
    assert again.n_written == 0 and again.complete


def test_ray_budget_holds_for_the_whole_cluster(tmp_path, ray_cluster):
    _pairs(tmp_path / "p.jsonl")
    cfg = _config(tmp_path / "p.jsonl", executor="ray", ray={"workers": 2, "chunk_size": 10},
                  budget={"max_calls": 50})
    s = run_config(cfg, tmp_path / "run", progress=False)
    with RunStore(tmp_path / "run") as st:
        n_attempts = len(st.attempts())
    assert s.stopped and "budget" in s.stopped
    assert n_attempts <= 50 and s.n_written <= 50



def _worker_pids():
    names = [a["name"] for a in ray.util.list_named_actors(all_namespaces=True)
             if a["namespace"] == "verdictlab" and a["name"].startswith("judge-worker-")]
    return [ray.get(ray.get_actor(n, namespace="verdictlab").pid.remote(), timeout=10) for n in names]


def test_a_killed_worker_is_restarted_and_nothing_is_lost(tmp_path, ray_cluster):
    import os
    import signal
    import threading
    import time

    _pairs(tmp_path / "p.jsonl", n=30)
    over = {"judges": ["sim:skill=0.8,position_lock=0.2,noise=0.2,seed=4,latency=0.05"], "protocols": ["direct"],
            "temperatures": [0.7]}
    killed: list[int] = []

    def killer():
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not killed:
            time.sleep(0.5)
            rows = 0
            if (tmp_path / "ray" / "run.sqlite").exists():
                with RunStore(tmp_path / "ray", read_only=True) as st:
                    rows = len(st.judgments())
            if rows >= 20:
                pids = _worker_pids()
                if pids:
                    os.kill(pids[0], signal.SIGKILL)
                    killed.append(pids[0])

    t = threading.Thread(target=killer, daemon=True)
    t.start()
    s = run_config(_config(tmp_path / "p.jsonl", executor="ray", ray={"workers": 2, "chunk_size": 8}, **over),
                   tmp_path / "ray", progress=False)
    t.join(timeout=5)
    assert killed, "the test never killed a worker (the run finished too fast)"
    assert s.complete
    local = run_config(_config(tmp_path / "p.jsonl", **over), tmp_path / "local", progress=False)
    assert local.complete
    rows = _rows(tmp_path / "ray")
    assert len(rows) == 30 * 2 * 3 and rows == _rows(tmp_path / "local")


@pytest.mark.slow
def test_a_killed_driver_resumes(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    import yaml

    _pairs(tmp_path / "p.jsonl", n=30)
    cfg = {"name": "ray", "datasets": [{"name": "jsonl", "path": str(tmp_path / "p.jsonl")}],
           "judges": ["sim:skill=0.8,noise=0.2,seed=4,latency=0.05"], "protocols": ["direct"],
           "temperatures": [0.7], "repetitions": 3, "executor": "ray", "ray": {"workers": 2, "chunk_size": 6}}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg))
    cmd = [sys.executable, "-m", "verdictlab.cli.main", "run", str(tmp_path / "c.yaml"), "--run-dir",
           str(tmp_path / "run"), "--no-progress"]
    env = {**os.environ, "RAY_ADDRESS": "local"}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + 120
    rows = 0
    while time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.5)
        if (tmp_path / "run" / "run.sqlite").exists():
            with RunStore(tmp_path / "run", read_only=True) as st:
                rows = len(st.judgments())
            if rows >= 20:
                break
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert 0 < rows < 180, rows
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    with RunStore(tmp_path / "run", read_only=True) as st:
        frame = st.judgments()
    assert len(frame) == 180 and frame["trial_id"].is_unique


def test_ray_data_pipeline_on_cpu_matches_local(tmp_path, ray_cluster):
    """The Ray Data batch-inference path (the vLLM stage's pipeline), with the simulated judge as the
    stage on the CPU: the same judgments as the local executor."""
    import asyncio

    from verdictlab.engine import prepare_run, run_trials
    from verdictlab.engine.ray_data import LocalJudgeStage, RayDataExecutor
    from verdictlab.judges import make_judge

    _pairs(tmp_path / "p.jsonl", n=25)
    cfg = _config(tmp_path / "p.jsonl", judges=["sim:skill=0.7,noise=0.3,seed=2,probs=1"], protocols=["direct"])
    run_config(cfg, tmp_path / "local", progress=False)
    prepared = prepare_run(cfg)
    judges = {j: make_judge(j) for j in cfg.judge_ids()}
    with RunStore(tmp_path / "data") as store:
        s = asyncio.run(run_trials(prepared.trials, store=store, items=prepared.items, judges=judges,
                                   protocols=prepared.protocols, seed=cfg.seed,
                                   executor=RayDataExecutor(stage_for=lambda jid: LocalJudgeStage, batch_size=10)))
    assert s.complete and s.n_written == 25 * 2 * 2 * 3
    assert _rows(tmp_path / "data") == _rows(tmp_path / "local")
    with RunStore(tmp_path / "data") as st:
        assert st.judgments()["p_a"].notna().all()     # P(A) travels through the pipeline


def _ray_data_run(tmp_path, name, cfg, bad, budget):
    """The Ray Data path on the CPU, with a stage that fails trial ``bad`` (a transient error) every time."""
    import asyncio

    from verdictlab.engine import prepare_run, run_trials
    from verdictlab.engine.config import JudgeSpec
    from verdictlab.engine.ray_data import LocalJudgeStage, RayDataExecutor
    from verdictlab.judges import make_judge

    class FlakyStage(LocalJudgeStage):      # defined here: pickled by value to the Ray workers
        def __call__(self, batch):
            out = super().__call__(batch)
            for i, tid in enumerate(out["trial_id"]):
                if tid == bad:
                    out["generated_text"][i], out["error"][i], out["error_kind"][i] = None, "HTTP 503", "transient"
            return out

    prepared = prepare_run(cfg)
    judges = {j: make_judge(j) for j in cfg.judge_ids()}
    specs = {j: JudgeSpec(id=j, max_retries=2) for j in judges}
    with RunStore(tmp_path / name) as store:
        return asyncio.run(run_trials(prepared.trials, store=store, items=prepared.items, judges=judges,
                                      protocols=prepared.protocols, judge_specs=specs, seed=cfg.seed, budget=budget,
                                      executor=RayDataExecutor(stage_for=lambda jid: FlakyStage, batch_size=16)))


def test_ray_data_rows_are_reserved_recorded_and_retried_by_the_drivers_caller(tmp_path, ray_cluster, caller_spy,
                                                                                monkeypatch):
    """Defect: the Ray Data stage judged through a bare caller of its own on the workers: no run budget, no
    attempt rows, no cache entries, retries decided there.  Now every row is reserved and recorded by the
    lane's caller on the driver, whose retry rule decides what flows through the stage again."""
    from collections import Counter

    from verdictlab.engine import prepare_run
    from verdictlab.engine.caller import JudgeCaller
    from verdictlab.engine.limits import Budget

    _pairs(tmp_path / "p.jsonl", n=6)
    cfg = _config(tmp_path / "p.jsonl", judges=["sim:skill=0.7,noise=0.3,seed=2"], protocols=["direct"],
                  repetitions=2)      # 6 items x 2 orders x temperatures (0, 0.7) x 2 repetitions = 48 trials
    trials = prepare_run(cfg).trials
    bad = next(t.trial_id for t in trials if t.temperature == 0.7)
    budget = Budget()
    s = _ray_data_run(tmp_path, "run", cfg, bad, budget)
    with RunStore(tmp_path / "run") as st:
        df = st.judgments().set_index("trial_id")
        att = st.attempts()
        n_cache = st.conn.execute("SELECT COUNT(*) FROM cache").fetchone()[0]
    # the failed trial: attempts 1 and 2 retried (<= max_retries 2), attempt 3 final: 47 + 3 = 50 calls
    assert s.n_written == 48 and s.calls == budget.calls == 50 and len(att) == 50
    assert caller_spy.reserved == caller_spy.recorded == Counter(att.trial_id) and caller_spy.recorded[bad] == 3
    assert df.loc[bad, "parse_status"] == "failed" and df.loc[bad, "attempts"] == 3
    assert list(att[att.trial_id == bad].outcome) == ["retry", "retry", "failed"]
    assert budget.tokens == int(df.tokens_in.fillna(0).sum() + df.tokens_out.fillna(0).sum())
    zero = {t.trial_id for t in trials if t.temperature == 0.0}
    assert {t for t, k in caller_spy.cache_keys.items() if k} == zero and n_cache == len(zero)
    # the caller's rule, not the executor's: a caller that never retries gets one attempt of the failed trial
    monkeypatch.setattr(JudgeCaller, "worth_retrying", lambda self, decision, attempt: False)
    s2 = _ray_data_run(tmp_path, "never", cfg, bad, Budget())
    assert s2.calls == 48
    with RunStore(tmp_path / "never") as st:
        assert st.judgments().set_index("trial_id").loc[bad, "attempts"] == 1


def test_the_worker_pool_is_gone_when_a_run_ends(tmp_path, ray_cluster):
    """Defect: every run left its actors alive in the cluster (one pool per run, never killed)."""
    _pairs(tmp_path / "p.jsonl", n=10)
    s = run_config(_config(tmp_path / "p.jsonl", executor="ray", ray={"workers": 2}, protocols=["direct"]),
                   tmp_path / "run", progress=False)
    assert s.complete
    assert _worker_pids() == []


def test_a_kept_pool_serves_two_runs_each_with_its_own_budget(tmp_path, ray_cluster):
    """Defect: the ledger was a new actor (a new process, ~1 s of CPU) per run and the pool a new one
    per run; now both live as long as the executor, and the ledger starts each run with its budget."""
    import asyncio

    from verdictlab.engine import prepare_run, run_trials
    from verdictlab.engine.limits import Budget
    from verdictlab.engine.ray_executor import RayExecutor
    from verdictlab.judges import make_judge

    _pairs(tmp_path / "p.jsonl", n=20)
    cfg = _config(tmp_path / "p.jsonl", judges=["sim:skill=0.7,noise=0.3,seed=2"], protocols=["direct"],
                  temperatures=[0.7], repetitions=2)
    prepared = prepare_run(cfg)
    ex = RayExecutor(workers=2, chunk_size=8, cache="off", keep_workers=True)
    try:
        written, pools = [], []
        for run, cap in (("a", 30), ("b", 50)):
            judges = {j: make_judge(j) for j in cfg.judge_ids()}
            with RunStore(tmp_path / run) as store:
                s = asyncio.run(run_trials(prepared.trials, store=store, items=prepared.items, judges=judges,
                                           protocols=prepared.protocols, seed=cfg.seed, cache="off",
                                           executor=ex, budget=Budget(max_calls=cap)))
                assert s.stopped and "budget" in s.stopped
                assert len(store.attempts()) <= cap
                written.append(s.n_written)
            pools.append([a._actor_id for a in ex.actors])
        assert pools[0] == pools[1] and len(pools[0]) == 2     # the same two actors served both runs
        assert 0 < written[0] <= 30 and 30 < written[1] <= 50
    finally:
        ex.close()
    assert _worker_pids() == []
