"""Offline batch files (issue 13 item 5): `verdictlab batch export` writes the pending requests in the
OpenAI batch JSONL format; `verdictlab batch import` turns an output file (OpenAI Batch API / vllm
run-batch shape, produced here by the fake server's batch logic) into judgments.  Error lines are
failed rows; malformed lines, unknown or repeated custom ids are errors that write nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

pytest.importorskip("openai")

from typer.testing import CliRunner  # noqa: E402

from verdictlab.cli._errors import EXIT_INPUT  # noqa: E402
from verdictlab.cli.main import app  # noqa: E402
from verdictlab.store import RunStore  # noqa: E402
from verdictlab.testing.fake_openai import FakeConfig, _Handler  # noqa: E402

runner = CliRunner()
N_ITEMS = 5
N = N_ITEMS * 2 * 2          # orders x repetitions, one protocol, one temperature


def _config(tmp_path: Path) -> Path:
    with (tmp_path / "pairs.jsonl").open("w") as fh:
        for i in range(N_ITEMS):
            fh.write(json.dumps({"item_id": i, "question": f"Question {i}?", "response_a": f"first {i}",
                                 "response_b": f"second {i}", "label": "AB"[i % 2]}) + "\n")
    cfg = {"name": "offline", "datasets": [{"name": "jsonl", "path": "pairs.jsonl"}],
           "judges": [{"id": "openai-compatible:fake-judge@http://127.0.0.1:9/v1"}],
           "protocols": ["direct"], "repetitions": 2, "temperatures": [1.0]}
    p = tmp_path / "cfg.yaml"
    p.write_text(yaml.safe_dump(cfg))
    return p


def _export(tmp_path: Path, *extra: str) -> list[dict]:
    out = tmp_path / "requests.jsonl"
    res = runner.invoke(app, ["batch", "export", str(_config(tmp_path)), "--run-dir", str(tmp_path / "run"),
                              "--out", str(out), *extra])
    assert res.exit_code == 0, res.output
    return [json.loads(line) for line in out.read_text().splitlines()]


def _results(tmp_path: Path, requests: list[dict], fail: tuple[str, ...] = ()) -> Path:
    """What `vllm run-batch` / the Batch API would write: output lines, plus error lines for ``fail``."""
    h = _Handler(FakeConfig(batch_fail_ids=fail))
    data = ("\n".join(json.dumps(r) for r in requests) + "\n").encode()
    (_, ok), (_, bad) = h.batches._run_openai(data)
    text = b"".join(h.batches.files[f] for f in (ok, bad) if f)
    p = tmp_path / "results.jsonl"
    p.write_bytes(text)
    return p


def _import(tmp_path: Path, path: Path):
    return runner.invoke(app, ["batch", "import", str(tmp_path / "run"), str(path)])


def test_export_then_import_through_the_normal_path(tmp_path: Path) -> None:
    reqs = _export(tmp_path)
    assert len(reqs) == N and len({r["custom_id"] for r in reqs}) == N
    r0 = reqs[0]
    assert r0["method"] == "POST" and r0["url"] == "/v1/chat/completions"
    assert r0["body"]["model"] == "fake-judge" and r0["body"]["messages"] and r0["body"]["logprobs"] is True
    assert "timeout" not in r0["body"] and "extra_body" not in r0["body"]
    assert len({r["body"]["seed"] for r in reqs}) == N      # per-trial seeds, as the live run sends
    bad = reqs[2]["custom_id"]
    res = _import(tmp_path, _results(tmp_path, reqs, fail=(bad,)))
    assert res.exit_code == 0, res.output
    assert f"{N} result(s)" in res.output and "1 failed" in res.output
    with RunStore(tmp_path / "run") as st:
        df = st.judgments().set_index("trial_id")
    assert len(df) == N
    assert df.drop(index=bad).verdict.notna().all() and df.drop(index=bad).p_a.notna().all()
    assert df.loc[bad, "parse_status"] == "failed" and "HTTP 500" in df.loc[bad, "error"]
    # importing the same file again adds nothing; export has nothing left but the failed request
    again = _import(tmp_path, tmp_path / "results.jsonl")
    assert again.exit_code == 0 and f"{N} already judged" in again.output
    assert _export(tmp_path) == []
    retry = _export(tmp_path, "--retry-failed")
    assert [r["custom_id"] for r in retry] == [bad]
    assert _import(tmp_path, _results(tmp_path, retry)).exit_code == 0
    with RunStore(tmp_path / "run") as st:
        assert st.judgments().verdict.notna().all()


@pytest.mark.parametrize("mutate, message", [
    (lambda lines: lines[:1] + ["{not json"] + lines[1:], "line 2: not a JSON object"),
    (lambda lines: lines + [json.dumps({"custom_id": "nope", "response": {}})], "is not a trial of this run"),
    (lambda lines: lines + lines[:1], "appears twice"),
    (lambda lines: [json.dumps({"response": {}})] + lines, "line 1: field 'custom_id' is missing"),
])
def test_bad_results_files_are_errors_and_write_nothing(tmp_path: Path, mutate, message) -> None:
    reqs = _export(tmp_path)
    path = _results(tmp_path, reqs)
    path.write_text("\n".join(mutate(path.read_text().splitlines())) + "\n")
    res = _import(tmp_path, path)
    assert res.exit_code == EXIT_INPUT and message in res.output
    with RunStore(tmp_path / "run") as st:
        assert len(st.judgments()) == 0


def test_export_refuses_a_judge_without_openai_requests(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    data = yaml.safe_load(cfg.read_text())
    data["judges"] = ["sim:skill=0.8"]
    cfg.write_text(yaml.safe_dump(data))
    res = runner.invoke(app, ["batch", "export", str(cfg), "--run-dir", str(tmp_path / "run"),
                              "--out", str(tmp_path / "r.jsonl")])
    assert res.exit_code == EXIT_INPUT and "cannot be exported" in res.output


def test_import_into_a_run_dir_without_a_store(tmp_path: Path) -> None:
    (tmp_path / "r.jsonl").write_text("")
    res = runner.invoke(app, ["batch", "import", str(tmp_path / "none"), str(tmp_path / "r.jsonl")])
    assert res.exit_code != 0 and "no run store" in res.output
