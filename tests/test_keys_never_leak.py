"""No API key value ever reaches the run directory, the console, or a report.

Two judges run against the fake server: one with the right key, one with a wrong key that the
(careless) server repeats in its 401 message -- the worst case a provider can produce.  Both key
values are distinctive (``sk-test-<uuid>``) and are searched for, byte for byte, in every file
under the run dir (SQLite database, WAL, anything else), in the captured stdout/stderr of
`verdictlab run` (with the SDK's debug logging on), and in `verdictlab report DIR --json`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

from verdictlab.testing import FakeConfig, FakeOpenAIServer

GOOD = f"sk-test-{uuid.uuid4()}"
WRONG = f"sk-test-{uuid.uuid4()}"


def cli(*args: str | Path) -> list[str]:
    return [sys.executable, "-m", "verdictlab.cli.main", *map(str, args)]


def _assert_clean(where: str, data: bytes | str) -> None:
    raw = data.encode() if isinstance(data, str) else data
    for key in (GOOD, WRONG):
        assert key.encode() not in raw, f"API key found in {where}"
        # nor its distinctive uuid part on its own (e.g. a key printed with a different prefix)
        assert key.split("sk-test-")[1].encode() not in raw, f"API key body found in {where}"


def test_no_key_in_run_dir_logs_or_report(tmp_path: Path) -> None:
    fake = FakeConfig(api_key=GOOD, seed=1, p_rate_limit=0.1, p_server_error=0.1, retry_after_s=0.01,
                      echo_key_in_errors=True)
    with FakeOpenAIServer(fake) as srv:
        with (tmp_path / "pairs.jsonl").open("w") as fh:
            for i in range(6):
                fh.write(json.dumps({"item_id": f"k{i}", "question": f"Q{i}?", "response_a": "yes",
                                     "response_b": "no", "label": "A"}) + "\n")
        cfg = tmp_path / "audit.yaml"
        cfg.write_text(f"""
name: keys
datasets: [{{name: jsonl, path: pairs.jsonl}}]
judges:
  - id: openai-compatible:fake-judge@{srv.base_url}
    concurrency: 4
    timeout_s: 5
    max_retries: 3
  - id: openai-compatible:fake-judge@{srv.base_url}#key_env=VL_TEST_WRONG_KEY
    concurrency: 2
    timeout_s: 5
    max_retries: 1
protocols: [direct, vf-json]
repetitions: 1
""")
        env = dict(os.environ, VERDICTLAB_API_KEY=GOOD, VL_TEST_WRONG_KEY=WRONG, OPENAI_LOG="debug")
        env.pop("OPENAI_API_KEY", None)
        out = tmp_path / "run"
        r = subprocess.run(cli("run", cfg, "--run-dir", out, "--no-progress"), env=env, capture_output=True,
                           text=True, timeout=180)
        stats = srv.stats
    # exit 4 (docs/errors.md): the wrong-key judge's trials failed for good, so the run is incomplete
    assert r.returncode in (0, 4), r.stderr[-2000:]
    # the test must actually have exercised the leaky path: 401s that echoed the wrong key
    assert stats.get("unauthorized", 0) > 0 and stats.get("ok", 0) > 0
    _assert_clean("run stdout", r.stdout)
    _assert_clean("run stderr", r.stderr)

    files = [p for p in out.rglob("*") if p.is_file()]
    assert any(p.name == "run.sqlite" for p in files)
    import sqlite3

    con = sqlite3.connect(out / "run.sqlite")
    errors = [e for (e,) in con.execute("SELECT error FROM attempts WHERE error LIKE '%401%'")]
    assert errors, "the wrong-key judge's 401 errors should be recorded (redacted)"
    con.close()

    rep = subprocess.run(cli("report", out, "--format", "json"), env=env, capture_output=True, text=True, timeout=180)
    assert rep.returncode == 0, rep.stderr[-2000:]
    json.loads(rep.stdout)          # it is the JSON report
    _assert_clean("report --json output", rep.stdout + rep.stderr)
    html = subprocess.run(cli("report", out, "--format", "html"), env=env, capture_output=True, text=True, timeout=180)
    _assert_clean("report --html output", html.stdout + html.stderr)

    # scan after the reports too: they may write into the run dir
    for p in [p for p in out.rglob("*") if p.is_file()]:
        _assert_clean(str(p), p.read_bytes())
