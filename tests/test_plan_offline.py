"""`verdictlab run --plan` is offline: no key, no optional package (no openai, anthropic, vllm, llama_cpp
or ray import), and it prints calls, tokens, dollars and a duration from the rate limits and concurrency,
with what it assumed.  The duration is a pure function, pinned here on values worked out by hand."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from verdictlab.engine.plan_duration import DurationEstimate, estimate_duration, format_duration

OPTIONAL = ("openai", "anthropic", "vllm", "llama_cpp", "ray")

# Every optional module's import is recorded and refused; the plan must not even try one.
PROBE = textwrap.dedent("""
    import importlib.abc, sys
    tried = set()

    class Refuse(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in {blocked}:
                tried.add(name)
                raise ImportError(f"blocked: {{name}}")
            return None

    sys.meta_path.insert(0, Refuse())
    from verdictlab.cli.main import app
    try:
        app(["run", sys.argv[1], "--plan"])
    except SystemExit as exc:
        print(f"EXIT {{exc.code}}", file=sys.stderr)
        print(f"TRIED {{sorted(tried)}}", file=sys.stderr)
""").format(blocked=set(OPTIONAL))


def test_plan_needs_no_key_and_no_optional_package(tmp_path: Path) -> None:
    (tmp_path / "pairs.jsonl").write_text(
        '{"item_id": "1", "question": "2+2?", "response_a": "4", "response_b": "5", "label": "A"}\n'
        '{"item_id": "2", "question": "Capital of France?", "response_a": "Lyon", "response_b": "Paris", '
        '"label": "B"}\n', encoding="utf-8")
    (tmp_path / "big.yaml").write_text(textwrap.dedent("""
        name: big
        datasets: [{name: jsonl, path: pairs.jsonl}]
        judges:
          - {id: "openai:gpt-4o-mini", concurrency: 4, requests_per_minute: 60}
          - {id: "anthropic:claude-3-5-haiku-latest", tokens_per_minute: 1000}
          - "vllm:Qwen/Qwen2.5-7B-Instruct"
          - "llamacpp:smollm2-135m"
        protocols: [direct, vf-json]
        repetitions: 3
        executor: ray
    """), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not any(s in k for s in ("API_KEY", "_KEY_"))}
    p = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path / "big.yaml")], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=300)
    assert "EXIT 0" in p.stderr and "TRIED []" in p.stderr, p.stderr[-2000:]
    out = p.stdout
    # 2 pairs x 2 protocols x 2 orders x 3 repetitions = 24 calls per judge
    assert "trials: 96  done: 0  remaining: 96" in out, out
    assert "openai:gpt-4o-mini: 24 of 24 remaining (24 calls)" in out
    assert "cost <= $" in out and "estimated cost: <= $" in out
    # openai: 24 calls at 60 per minute = 24 s (latency: 24 x 2 s / 4 = 12 s)
    assert "time ~24 s (set by requests_per_minute 60)" in out
    assert "(set by tokens_per_minute 1000)" in out                 # anthropic: its token limit binds
    assert "vllm:Qwen/Qwen2.5-7B-Instruct: 24 of 24 remaining (24 calls)" in out and "time unknown" in out
    # the embedded judge: concurrency 1 (its own cap) x 0.3 s: 24 x 0.3 = 7.2 s
    assert "time ~7 s (set by concurrency 1 x 0.3 s per call)" in out
    assert "estimated duration: ~" in out and "not included: vllm:Qwen/Qwen2.5-7B-Instruct" in out
    assert "assumed: latency per call anthropic 2 s, llamacpp 0.3 s, openai 2 s, vllm unknown" in out
    assert "tokens per call in + out (prompt characters / 4; the max_tokens ceiling)" in out


def test_duration_is_the_slowest_limit() -> None:
    # the running.md example the issue timed: 2,150 calls of ~150 tokens, concurrency 32, 500 requests and
    # 200,000 tokens per minute.  latency: 2150 x 2 / 32 = 134.375 s; requests: 60 x 2150 / 500 = 258 s;
    # tokens: 60 x 322,500 / 200,000 = 96.75 s -> 258 s, set by requests_per_minute (the issue measured 258 s)
    est = estimate_duration(2150, 2150 * 150, concurrency=32, latency_s=2.0, requests_per_minute=500,
                            tokens_per_minute=200_000)
    assert est == DurationEstimate(258.0, "requests_per_minute")
    # no rate limit: 500 x 2 / 8 = 125 s, set by the calls in flight
    assert estimate_duration(500, 10_000, concurrency=8, latency_s=2.0) == DurationEstimate(125.0, "latency")
    # tokens bind: 60 x 90,000 / 1,000 = 5,400 s > 100 x 2 / 1 = 200 s
    assert estimate_duration(100, 90_000, concurrency=1, latency_s=2.0,
                             tokens_per_minute=1000) == DurationEstimate(5400.0, "tokens_per_minute")
    assert estimate_duration(10, 100, concurrency=4, latency_s=None) == DurationEstimate(None, "unknown")
    assert estimate_duration(0, 0, concurrency=4, latency_s=None) == DurationEstimate(0.0, "latency")
    # a rate limit still binds when no latency is assumed: 60 x 30 / 120 = 15 s
    assert estimate_duration(30, 0, concurrency=4, latency_s=None,
                             requests_per_minute=120) == DurationEstimate(15.0, "requests_per_minute")


@pytest.mark.parametrize(("seconds", "text"), [(258.0, "4 min 18 s"), (3725, "1 h 2 min"), (0.4, "< 1 s"),
                                               (59.6, "1 min 0 s"), (7.2, "7 s"), (None, "unknown")])
def test_format_duration(seconds: float | None, text: str) -> None:
    assert format_duration(seconds) == text
