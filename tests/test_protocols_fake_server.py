"""Reasoning-first and rubric protocols (cot-json, cot-xml, geval, flask, debate) through the REAL
engine and the openai-compatible backend, against the fake server answering each protocol's shape.

The data make the labelled (correct) response the longer one, so the fake server's
``winner_policy="longer"`` is a judge that is always right and ``"first"`` one that always picks the
response shown first; the figures below follow from that by hand.  No network beyond 127.0.0.1.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("openai")

from verdictlab.engine import prepare_run, run_config  # noqa: E402
from verdictlab.engine.config import config_from_dict  # noqa: E402
from verdictlab.store import RunStore  # noqa: E402
from verdictlab.testing import FakeConfig, FakeOpenAIServer  # noqa: E402
from verdictlab.testing.fake_openai import detect_shape, shown_responses  # noqa: E402

KEY = f"sk-test-protocols-{uuid.uuid4().hex}"
N_ITEMS = 4


def _write_pairs(tmp_path: Path) -> list[dict[str, object]]:
    rows = []
    for i in range(N_ITEMS):
        right, wrong = f"The answer is {i + 2}, since {i} plus 2 is {i + 2}.", f"It is {i + 3}."
        label = "AB"[i % 2]
        a, b = (right, wrong) if label == "A" else (wrong, right)
        rows.append({"item_id": f"q{i}", "question": f"What is {i} + 2?", "response_a": a, "response_b": b,
                     "label": label})
    with (tmp_path / "pairs.jsonl").open("w") as fh:
        for r in rows:
            fh.write(json.dumps(r) + "\n")
    return rows


def _run(tmp_path: Path, url: str, protocols: list[str], *, repetitions: int = 1) -> tuple[pd.DataFrame, object]:
    _write_pairs(tmp_path)
    spec = {"id": f"openai-compatible:fake-judge@{url}#key_env=VL_FAKE_KEY", "concurrency": 8,
            "timeout_s": 5, "max_retries": 2, "backoff_base_s": 0.01, "backoff_cap_s": 0.05}
    cfg = config_from_dict({"name": "p", "datasets": [{"name": "jsonl", "path": "pairs.jsonl"}],
                            "judges": [spec], "protocols": protocols, "repetitions": repetitions},
                           source=tmp_path / "cfg.yaml")
    summary = run_config(cfg, tmp_path / "run", progress=False)
    with RunStore(tmp_path / "run") as st:
        df = st.judgments()
    # one row per trial of the plan, none lost, none twice
    want = {t.trial_id for t in prepare_run(cfg).trials}
    assert summary.complete and len(df) == len(want) == summary.n_trials
    assert df.trial_id.is_unique and set(df.trial_id) == want
    assert df.error.isna().all()          # no call failed: every status below is the parser's
    return df, summary


@pytest.fixture
def key_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VL_FAKE_KEY", KEY)


# -- the fake server reads each protocol's requested shape --------------------------------------------
def test_detect_shape_reads_the_last_template_and_the_labels() -> None:
    # a response that itself shows a JSON verdict must not be taken for the instruction
    prompt = ('Response A:\n{"winner": "B"}\n\nResponse B:\nno\n\nReply with JSON: '
              '{"rationale": "why", "score_P": <1-10>, "score_Q": <1-10>, "winner": "P or Q"}')
    shape = detect_shape(prompt)
    assert shape is not None and shape.kind == "json"
    assert [k for k, _ in shape.fields] == ["rationale", "score_P", "score_Q", "winner"]
    assert shape.labels == ("P", "Q") and shape.scale == (1, 10)
    assert shown_responses(prompt) == ('{"winner": "B"}', "no")
    assert detect_shape("Which is better? Reply with one letter only: A or B.") is None


# -- cot-json, cot-xml, geval: fault-free --------------------------------------------------------------
@pytest.mark.parametrize("protocol", ["cot-json", "cot-xml", "geval"])
def test_reasoning_first_protocols_parse_ok(tmp_path: Path, key_env: None, protocol: str) -> None:
    with FakeOpenAIServer(FakeConfig(api_key=KEY, winner_policy="longer")) as srv:
        df, _ = _run(tmp_path, srv.base_url, [protocol])
        assert srv.stats["ok"] == N_ITEMS * 2       # one call per trial (4 items x 2 orders x 1 rep)
    assert len(df) == N_ITEMS * 2
    assert (df.parse_status == "ok").all(), df.parse_detail.tolist()
    # the "longer" judge names the labelled response in both orders: accuracy 8/8, no position flip
    assert (df.verdict == df.label).all()
    if protocol.startswith("cot"):
        assert df.raw_output.str.contains("rationale").all()      # reasoning came first
        assert df.raw_output.str.find("rationale").lt(df.raw_output.str.find("winner")).all()


def test_geval_scores_stored_canonically_with_weighted_scores(tmp_path: Path, key_env: None) -> None:
    from verdictlab.analyses.geval import contradiction_table
    from verdictlab.protocols.geval import scores_frame

    with FakeOpenAIServer(FakeConfig(api_key=KEY, winner_policy="longer", logprob_top=0.8)) as srv:
        df, _ = _run(tmp_path, srv.base_url, ["geval"])
    sc = scores_frame(df)
    # scale 1..5: the fake gives the winner 1 + round(0.75 * 4) = 4 and the loser 1 + round(0.25 * 4) = 2,
    # in SHOWN terms; scores_frame maps them back with the order, so the labelled response has 4 whatever
    # the order it was shown in
    right = sc.score_a.where(df.label == "A", sc.score_b)
    wrong = sc.score_b.where(df.label == "A", sc.score_a)
    assert (right == 4).all() and (wrong == 2).all()
    assert not sc.contradiction.any()
    # probability-weighted scores from the digit tokens' top log-probabilities: p(d) = 0.8,
    # p(d+1) = 0.2 * 2/3, p(d-1) = 0.2 * 1/3 -> E = d + 0.2 * (2/3 - 1/3) = d + 0.0667
    wright = sc.wscore_a.where(df.label == "A", sc.wscore_b)
    wwrong = sc.wscore_b.where(df.label == "A", sc.wscore_a)
    assert wright.to_numpy() == pytest.approx([4 + 0.2 / 3] * len(df))
    assert wwrong.to_numpy() == pytest.approx([2 + 0.2 / 3] * len(df))
    table = contradiction_table(df)
    assert table.n_scored.sum() == len(df) and table.n_contradictions.sum() == 0


def test_geval_contradiction_is_flagged_not_hidden(tmp_path: Path, key_env: None) -> None:
    from verdictlab.analyses.geval import contradiction_table
    from verdictlab.protocols.geval import scores_frame

    with FakeOpenAIServer(FakeConfig(api_key=KEY, winner_policy="longer", p_contradict=1.0)) as srv:
        df, _ = _run(tmp_path, srv.base_url, ["geval"])
    # default on_contradiction="flag": the verdict is the winner the judge named (the labelled one),
    # the text parsed cleanly (status ok), and every row carries the flag and says why
    assert (df.parse_status == "ok").all() and (df.verdict == df.label).all()
    assert df.parse_detail.str.contains("winner contradicts scores").all()
    sc = scores_frame(df)
    assert sc.contradiction.all()
    right = sc.score_a.where(df.label == "A", sc.score_b)
    assert (right == 2).all()               # the named winner got the LOWER score
    table = contradiction_table(df)
    assert table.n_contradictions.sum() == len(df) == 8 and (table.contradiction_rate == 1.0).all()


def test_position_policy_first_gives_full_position_flips(tmp_path: Path, key_env: None) -> None:
    with FakeOpenAIServer(FakeConfig(api_key=KEY, winner_policy="first")) as srv:
        df, _ = _run(tmp_path, srv.base_url, ["cot-json", "cot-xml"])
    assert (df.parse_status == "ok").all()
    # always the shown-first response: canonical A in order AB, B in order BA -> every pair flips
    assert (df.shown_first_won == 1).all()
    assert (df.verdict == df.order.map({"AB": "A", "BA": "B"})).all()
    # accuracy is then exactly 1/2: in each pair one order agrees with the label
    assert (df.verdict == df.label).mean() == 0.5


# -- truncated JSON / XML: failed, never guessed; repaired only where a documented repair applies ---------
# Replies (fake server, "longer" policy, rationale "It answers the question more directly."):
#   cot-json {"rationale": "It answers the question more directly.", "winner": "A"}          70 chars
#   cot-xml  <judgment><rationale>It answers ...</rationale><winner>A</winner></judgment>     100 chars
#   geval    {"rationale": "It answers ...", "score_A": 4, "score_B": 2, "winner": "A"}       98 chars
#   vf-json  {"winner": "A", "rationale": "It answers the question more directly."}          70 chars
# Cut points: 0.5 falls inside the rationale of the reasoning-first replies (no verdict: failed) and
# after vf-json's complete winner field (R5: repaired).  0.95 keeps cot-json up to '"winner": "A'
# without its closing quote (incomplete field: failed), cot-xml past '</winner>' (R5: repaired),
# and geval past both scores but not the winner (documented: winner read from unequal scores).
@pytest.mark.parametrize(("protocol", "truncate_at", "status"), [
    ("cot-json", 0.5, "failed"), ("cot-xml", 0.5, "failed"), ("geval", 0.5, "failed"),
    ("vf-json", 0.5, "repaired"), ("cot-json", 0.95, "failed"), ("cot-xml", 0.95, "repaired"),
    ("geval", 0.95, "repaired"),
])
def test_truncated_replies(tmp_path: Path, key_env: None, protocol: str, truncate_at: float, status: str) -> None:
    fake = FakeConfig(api_key=KEY, winner_policy="longer", p_truncated=1.0, truncate_at=truncate_at)
    with FakeOpenAIServer(fake) as srv:
        df, summary = _run(tmp_path, srv.base_url, [protocol])
        assert srv.stats["truncated"] == len(df) == N_ITEMS * 2
    assert (df.parse_status == status).all(), df[["raw_output", "parse_status", "parse_detail"]].to_dict("records")
    if status == "failed":
        assert df.verdict.isna().all() and summary.n_parse_failed == len(df)
    else:
        # a repair recovers what the judge wrote (the labelled response), and says which repair it was
        assert (df.verdict == df.label).all() and (df.parse_detail != "").all()
    if protocol == "geval" and status == "repaired":
        assert df.parse_detail.str.contains("winner missing; read from the scores").all()


# -- flask: one row per criterion, and the aggregate --------------------------------------------------
def test_flask_one_row_per_criterion_and_aggregate(tmp_path: Path, key_env: None) -> None:
    from verdictlab.analyses.flask import aggregate_criteria
    from verdictlab.protocols.registry import get_protocol

    with FakeOpenAIServer(FakeConfig(api_key=KEY, winner_policy="longer")) as srv:
        df, _ = _run(tmp_path, srv.base_url, ["flask"])
    criteria = set(get_protocol("flask").steps(_item_like("jsonl")))
    assert len(criteria) == 4
    # 4 items x 2 orders x 4 criteria, each criterion its own trial and row
    assert len(df) == N_ITEMS * 2 * 4 and set(df.step) == criteria
    assert (df.groupby(["item_id", "order"]).step.nunique() == 4).all()
    assert (df.parse_status == "ok").all() and (df.verdict == df.label).all()
    agg = aggregate_criteria(df)
    assert len(agg) == N_ITEMS * 2 and (agg.step == "").all()
    assert (agg.verdict == agg.label).all() and (agg.parse_status == "ok").all()
    votes = [json.loads(s) for s in agg.scores]
    assert all(v["criteria"] == 4 and max(v["votes_A"], v["votes_B"]) == 4 for v in votes)


def test_flask_truncated_criteria_fail_and_the_aggregate_has_no_quorum(tmp_path: Path, key_env: None) -> None:
    from verdictlab.analyses.flask import aggregate_criteria

    fake = FakeConfig(api_key=KEY, winner_policy="longer", p_truncated=1.0)
    with FakeOpenAIServer(fake) as srv:
        df, _ = _run(tmp_path, srv.base_url, ["flask"])
    assert len(df) == N_ITEMS * 2 * 4
    assert (df.parse_status == "failed").all() and df.verdict.isna().all()
    agg = aggregate_criteria(df)
    # 0 of 4 criteria parsed < quorum 3: no aggregate verdict, counted as failed
    assert len(agg) == N_ITEMS * 2 and agg.verdict.isna().all() and (agg.parse_status == "failed").all()


def _item_like(dataset: str) -> object:
    from verdictlab.core.items import PairItem

    return PairItem(item_id="x", dataset=dataset, question="q", response_a="a", response_b="b")


# -- debate: two openai-compatible debaters, every round stored ------------------------------------------
def _debate(tmp_path: Path, url: str, **settings: object) -> pd.DataFrame:
    from verdictlab.core.items import PairItem
    from verdictlab.engine.debate import DebateSettings, run_debate

    tmp_path.mkdir(parents=True, exist_ok=True)
    items = [PairItem(dataset="pairs", **{k: str(v) for k, v in r.items()}) for r in _write_pairs(tmp_path)]
    judges = [f"openai-compatible:{m}@{url}#key_env=VL_FAKE_KEY" for m in ("fake-a", "fake-b")]
    n = run_debate(items, judges, tmp_path / "run",
                   DebateSettings(max_retries=1, concurrency=4, **settings))  # type: ignore[arg-type]
    assert n == N_ITEMS * 2
    with RunStore(tmp_path / "run") as st:
        df = st.judgments()
    assert df.trial_id.is_unique
    finals = df[df.step.fillna("") == ""]
    assert len(finals) == N_ITEMS * 2           # one final per (pair, order)
    return df


def test_debate_rounds_stored_and_persuasion(tmp_path: Path, key_env: None) -> None:
    from verdictlab.analyses.debate import debate_summary

    # fake-a is always right (longer); fake-b starts wrong (shorter) but adopts the other judge's verdict
    # when told it: round 1 disagrees, round 2 agrees, the debate stops after 2 of 3 rounds
    fake = FakeConfig(api_key=KEY, winner_by_model={"fake-a": "longer", "fake-b": "shorter"},
                      persuadable_models=("fake-b",))
    with FakeOpenAIServer(fake) as srv:
        df = _debate(tmp_path, srv.base_url, rounds=3)
    rounds = df[df.step.fillna("") != ""]
    # 8 debates x 2 rounds x 2 judges
    assert len(rounds) == N_ITEMS * 2 * 2 * 2 and set(rounds.step) == {"round-1", "round-2"}
    assert (rounds.parse_status == "ok").all() and rounds.raw_output.notna().all()
    r1 = rounds[rounds.step == "round-1"]
    assert (r1[r1.judge.str.contains("fake-a")].verdict == r1[r1.judge.str.contains("fake-a")].label).all()
    assert (r1[r1.judge.str.contains("fake-b")].verdict != r1[r1.judge.str.contains("fake-b")].label).all()
    assert ((rounds[rounds.step == "round-2"].verdict) == rounds[rounds.step == "round-2"].label).all()
    finals = df[df.step.fillna("") == ""]
    assert (finals.verdict == finals.label).all() and (finals.parse_status == "ok").all()
    s = debate_summary(df).iloc[0]
    # round 1: fake-a 8/8, fake-b 0/8 -> mean 0.5; final 8/8 -> +0.5; 2 rounds each; all agreed
    assert s.round1_accuracy == 0.5 and s.final_accuracy == 1.0 and s.final_minus_round1 == 0.5
    assert s.mean_rounds == 2.0 and s.agreement_rate == 1.0 and s.n_round_failed == 0


def test_debate_truncated_rounds_failed_or_counted_fallbacks(tmp_path: Path, key_env: None) -> None:
    from verdictlab.analyses.debate import debate_summary

    fake = FakeConfig(api_key=KEY, winner_policy="longer", p_truncated=1.0)
    with FakeOpenAIServer(fake) as srv:
        df = _debate(tmp_path / "none", srv.base_url, rounds=2, fallback="none")
        rounds = df[df.step.fillna("") != ""]
        # no verdict ever: no agreement, both rounds run, every round row failed, every final failed
        assert len(rounds) == N_ITEMS * 2 * 2 * 2
        assert (rounds.parse_status == "failed").all() and rounds.verdict.isna().all()
        finals = df[df.step.fillna("") == ""]
        assert finals.verdict.isna().all() and (finals.parse_status == "failed").all()

        df = _debate(tmp_path / "paper", srv.base_url, rounds=2, fallback="paper")
    # the audited implementation's rule: an unreadable round 1 counts as the first-shown response; both
    # judges then "agree" on it after one round -- every such row and final is marked, not hidden
    rounds = df[df.step.fillna("") != ""]
    assert len(rounds) == N_ITEMS * 2 * 2 and (rounds.step == "round-1").all()
    assert (rounds.parse_status == "fallback").all() and (rounds.fallback_rule == "first-shown").all()
    assert (rounds.shown_first_won == 1).all()
    finals = df[df.step.fillna("") == ""]
    assert (finals.parse_status == "fallback").all() and (finals.fallback_rule == "depends-on-fallback").all()
    s = debate_summary(df).iloc[0]
    assert s.n_round_fallbacks == N_ITEMS * 2 * 2 and s.n_final_depending_on_fallback == N_ITEMS * 2


# -- every registered protocol: the fake's reply parses cleanly ---------------------------------------------
_CLIENT: list = []


def _post(url: str, messages: list[dict[str, str]], stop: tuple[str, ...], **extra: object) -> dict:
    import httpx

    if not _CLIENT:      # one keep-alive client for the module (a new client per call costs ~40 ms)
        _CLIENT.append(httpx.Client(trust_env=False, timeout=10))
    r = _CLIENT[0].post(url + "/chat/completions", headers={"Authorization": f"Bearer {KEY}"},
                        json={"model": "fake-judge", "messages": messages, "stop": list(stop), **extra})
    r.raise_for_status()
    return r.json()


def test_every_registered_protocol_gets_a_reply_it_parses_ok() -> None:
    from verdictlab.core.items import PairItem, PointItem, Transcript, TranscriptMessage
    from verdictlab.protocols.debate import DebateProtocol
    from verdictlab.protocols.registry import get_protocol, protocol_ids

    pair = PairItem(item_id="1", dataset="gsm-math", question="What is 2 + 2?",
                    response_a="It is 4, since 2 plus 2 makes 4.", response_b="5", label="A")
    point = PointItem(item_id="1", dataset="jd", question="What is 2 + 2?", response="4", label=2,
                      scale=(0, 1, 2), reference="4")
    run = Transcript(messages=(TranscriptMessage(role="user", content="What is 2 + 2?"),
                               TranscriptMessage(role="assistant", content="4")))
    agent = point.model_copy(update={"transcript": run, "label": "PASS", "scale": ("PASS", "FAIL")})
    labelled = [pair.model_copy(update={"meta": {"shown_labels": lab, "score_scale": sc}})
                for lab, sc in (("12", 3), ("pq", 10))]
    checked = []
    with FakeOpenAIServer(FakeConfig(api_key=KEY, winner_policy="longer")) as srv:
        for pid in protocol_ids():
            proto = get_protocol(pid)
            if pid == "debate":
                assert isinstance(proto, DebateProtocol)
                calls = [proto.messages(pair, o, turn=True) for o in ("AB", "BA")]
            else:
                items = ([point] if pid in ("pointwise", "rubric") else [agent] if pid == "transcript" else [pair, *(labelled if "geval" in pid else [])])
                calls = [proto.messages(it, o, step=st) for it in items for o in ("AB", "BA")
                         for st in proto.steps(it)]
            for msgs in calls:
                text = _post(srv.base_url, msgs, tuple(proto.stop()))["choices"][0]["message"]["content"]
                res = proto.parse(text)
                assert res.status == "ok", (pid, text, res)
                checked.append(pid)
    assert {"direct", "vf-json", "vf-xml", "cot-json", "cot-xml", "geval", "flask", "debate", "pointwise",
            "rubric", "transcript"} <= set(checked)


def test_seeded_policy_is_deterministic_by_seed() -> None:
    from verdictlab.protocols.registry import get_protocol

    proto = get_protocol("geval")
    prompts = [proto.messages(_item_like("d").model_copy(update={"question": f"q{i}?"}), "AB")  # type: ignore[attr-defined]
               for i in range(24)]

    def verdicts(seed: int) -> list[str]:
        with FakeOpenAIServer(FakeConfig(api_key=KEY, seed=seed)) as srv:
            return [_post(srv.base_url, m, ("}",), temperature=0)["choices"][0]["message"]["content"]
                    for m in prompts]

    a, b, c = verdicts(5), verdicts(5), verdicts(6)
    assert a == b                     # same seed, same replies (a fresh server each time)
    assert a != c                     # another seed draws other winners (24 fair draws: all equal w.p. 2^-24)
    winners = {json.loads(t + "}")["winner"] for t in a}
    assert winners == {"A", "B"}


def test_knobs_are_validated_and_settable_at_run_time() -> None:
    from verdictlab.testing import FakeOpenAIProcess

    with pytest.raises(ValueError, match="winner_policy"):
        FakeConfig(winner_policy="best")
    with pytest.raises(ValueError, match="winner_by_model"):
        FakeConfig(winner_by_model={"x*": "best"})
    msgs = [{"role": "user", "content": "Response A:\nlong answer here\n\nResponse B:\nshort\n\n"
                                        "Which response is better? Reply with one letter only: A or B."}]
    # the child-process server takes the new knobs from its JSON config and from /_fake/config
    with FakeOpenAIProcess(FakeConfig(api_key=KEY, winner_by_model={"fake-*": "shorter"})) as proc:
        assert _post(proc.base_url, msgs, ())["choices"][0]["message"]["content"] == "B"
        proc.configure(winner_by_model={}, winner_policy="longer")
        assert _post(proc.base_url, msgs, ())["choices"][0]["message"]["content"] == "A"
        with pytest.raises(Exception, match="400"):
            proc.configure(winner_policy="best")


# -- geval parser fix found while writing these tests --------------------------------------------------------
@pytest.mark.parametrize(("text", "want"), [
    # cut by the token limit inside "score_B": 10 (scale 1..10): reading the 1 would name A. Not a guess: fail
    ('{"rationale": "B is right", "score_A": 3, "score_B": 1', (None, "failed")),
    ('{"rationale": "B is right, "score_A": 3, "score_B": 1', (None, "failed")),      # broken JSON too
    # a trailing 2 cannot be the start of a valid score (20 > 10): the documented repair still applies
    ('{"rationale": "B is right", "score_A": 3, "score_B": 2', ("A", "repaired")),
    # with a winner the verdict does not rest on the unreliable score; it is dropped, not compared
    ('{"winner": "B", "score_A": 3, "score_B": 1', ("B", "repaired")),
    # a complete value followed by the winner is read as before (contradiction flagged)
    ('{"rationale": "x", "score_A": 3, "score_B": 1, "winner": "B"', ("B", "ok")),
])
def test_geval_trailing_score_that_may_be_cut_short_is_not_read(text: str, want: tuple[str | None, str]) -> None:
    from verdictlab.protocols.geval import parse_geval

    res = parse_geval(text)
    assert (res.verdict, res.status) == want, res
    if text.endswith(": 1") and "winner" in text:
        assert res.scores["score_shown_second"] is None and not res.scores["contradiction"]
