"""The engine against a real HTTP judge: the openai-compatible backend talking to the
fault-injecting fake server (429 with Retry-After, 5xx, hung requests, malformed bodies,
truncated answers, wrong key).  No network beyond 127.0.0.1."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import pytest

pytest.importorskip("openai")

from verdictlab.engine import prepare_run, run_config  # noqa: E402
from verdictlab.engine.config import config_from_dict  # noqa: E402
from verdictlab.store import RunStore  # noqa: E402
from verdictlab.testing import FakeConfig, FakeOpenAIServer  # noqa: E402

KEY = f"sk-test-engine-{uuid.uuid4().hex}"


def _config(tmp_path: Path, url: str, *, n_items: int = 12, **judge: object):
    with (tmp_path / "pairs.jsonl").open("w") as fh:
        for i in range(n_items):
            fh.write(json.dumps({"item_id": i, "question": f"Question {i}?", "response_a": f"first {i}",
                                 "response_b": f"second {i}", "label": "AB"[i % 2]}) + "\n")
    spec = {"id": f"openai-compatible:fake-judge@{url}#key_env=VL_FAKE_KEY", "concurrency": 8,
            "timeout_s": 0.3, "max_retries": 6,
            "backoff_base_s": 0.01, "backoff_cap_s": 0.1, **judge}
    return config_from_dict({"name": "fake", "datasets": [{"name": "jsonl", "path": "pairs.jsonl"}],
                             "judges": [spec], "protocols": ["direct", "vf-json"], "repetitions": 2},
                            source=tmp_path / "cfg.yaml")


def test_faulty_server_one_row_per_trial_and_no_key_stored(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("VL_FAKE_KEY", KEY)
    fake = FakeConfig(api_key=KEY, seed=3, p_rate_limit=0.15, p_server_error=0.15, p_hang=0.05,
                      p_malformed=0.05, p_truncated=0.05, retry_after_s=0.01, latency_s=0.002)
    with FakeOpenAIServer(fake) as srv:
        cfg = _config(tmp_path, srv.base_url)
        summary = run_config(cfg, tmp_path / "run", progress=False)
        stats = srv.stats
    n = 12 * 2 * 2 * 2
    assert summary.n_trials == n and summary.complete
    with RunStore(tmp_path / "run") as st:
        df = st.judgments()
        att = st.attempts()
    assert len(df) == n and df.trial_id.is_unique
    assert set(df.trial_id) == {t.trial_id for t in prepare_run(cfg).trials}
    # the server really injected faults and the engine retried them (typed, not by message)
    assert stats.get("rate_limit", 0) > 0 and stats.get("server_error", 0) > 0 and stats.get("hang", 0) > 0
    kinds = set(att[att.outcome == "retry"].error_kind)
    assert {"rate_limit", "transient"} <= kinds
    assert att[att.outcome == "retry"].error.str.contains("timeout").any()     # hung requests
    # a trial whose 1 + max_retries = 7 attempts all failed is a failed row (verdict NULL, the last
    # error, attempts = 7); with ~35% retryable faults per attempt that is rare, but it happens
    failed = df[df.error.notna()]
    assert len(failed) == summary.n_failed <= 3
    assert (failed.attempts == 7).all() and failed.verdict.isna().all()
    assert (failed.parse_status == "failed").all()
    # truncated / malformed answers are parse failures (verdict NULL, status failed), never guesses
    assert len(df[df.verdict.notna()]) >= 0.8 * n
    assert (df[df.verdict.isna()].parse_status == "failed").all()
    # every attempt is accounted for: one ok attempt per answered trial (no kill, no cache here)
    assert (att.outcome == "ok").sum() == n - len(failed)
    assert (att.outcome == "failed").sum() == len(failed)
    assert (df.attempts == att.groupby("trial_id").size().reindex(df.trial_id).to_numpy()).all()
    # the label-only protocol got probabilities from logprobs, mapped to canonical A
    direct = df[df.protocol == "direct"]
    assert direct.p_a.notna().mean() > 0.5 and direct.p_a.dropna().between(0, 1).all()
    # the key is nowhere in the store
    raw = b"".join(p.read_bytes() for p in (tmp_path / "run").iterdir())
    assert KEY.encode() not in raw


def test_wrong_key_halts_the_judge(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("VL_FAKE_KEY", f"sk-test-wrong-key-{uuid.uuid4().hex}")
    with FakeOpenAIServer(FakeConfig(api_key=KEY)) as srv:
        cfg = _config(tmp_path, srv.base_url, concurrency=2)
        summary = run_config(cfg, tmp_path / "run", progress=False)
    assert summary.stopped and "halted after" in summary.stopped and "401" in summary.stopped
    assert "sk-test-wrong-key" not in summary.stopped
    # 8 failures in a row trip the breaker; at most the calls already in flight finish after it
    assert 8 <= summary.n_failed <= 8 + 2 and summary.n_written == summary.n_failed


def test_requests_per_minute_is_honoured(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("VL_FAKE_KEY", KEY)
    with FakeOpenAIServer(FakeConfig(api_key=KEY)) as srv:
        # 6 items x 2 protocols x 2 orders x 2 reps = 48 calls at 1200/min = 20/s with a burst of 20:
        # at least (48 - 20) / 20 = 1.4 s
        cfg = _config(tmp_path, srv.base_url, n_items=6, requests_per_minute=1200)
        t0 = time.monotonic()
        summary = run_config(cfg, tmp_path / "run", progress=False)
        elapsed = time.monotonic() - t0
    assert summary.n_written == 48
    assert elapsed >= 1.3


def test_retries_and_rate_limits_are_counted_and_said(tmp_path: Path, monkeypatch) -> None:
    """"calls: 107" for 96 trials, unexplained: the summary (and the progress bar) say how many calls were
    retries and how many answers were a 429, the same counts as the attempts table."""
    from verdictlab.cli.run_cmd import _print_summary
    from verdictlab.engine.trial_runner import Progress

    monkeypatch.setenv("VL_FAKE_KEY", KEY)
    fake = FakeConfig(api_key=KEY, seed=5, p_rate_limit=0.2, retry_after_s=0.0)
    with FakeOpenAIServer(fake) as srv:
        summary = run_config(_config(tmp_path, srv.base_url, n_items=6), tmp_path / "run", progress=False)
        served_429 = srv.stats.get("rate_limit", 0)
    with RunStore(tmp_path / "run") as st:
        att = st.attempts()
    assert summary.n_written == 48 and summary.calls == len(att)
    assert summary.retries == int((att.attempt > 1).sum()) > 0
    assert summary.rate_limited == int((att.error_kind == "rate_limit").sum()) == served_429 > 0
    text = summary.calls_text()
    assert text == (f"{summary.calls} ({summary.calls - summary.retries} first calls + {summary.retries} retries; "
                    f"{summary.rate_limited} answered 429 (rate limited))")
    assert summary.calls - summary.retries == 48            # one first call per trial, no cache hits here
    from rich.console import Console

    console = Console(record=True, width=300)
    _print_summary(console, "fake", tmp_path / "run", summary)
    assert f"calls: {text}" in console.export_text()
    assert Progress.calls_field(summary) == (f"calls {summary.calls} ({summary.retries} retries, "
                                             f"{summary.rate_limited} × 429)")
