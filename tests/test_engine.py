"""Engine: grid expansion, one row per trial, canonical mapping, retries, budget, cache, resume.

Most tests drive ``run_trials`` with a tiny in-test protocol and a scripted judge registered like a
real backend (``register_judge("script", ...)``), so they do not depend on the real protocols.
The end-to-end tests use the real simulated judge and the real ``direct``/``vf-json`` protocols.
"""

from __future__ import annotations

import asyncio
import collections
import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from verdictlab.core.design import Trial
from verdictlab.core.items import PairItem, PointItem
from verdictlab.core.vocab import swap
from verdictlab.engine import (
    build_trials,
    canonical_p_a,
    derived_seed,
    prepare_run,
    redact,
    run_config,
    run_trials,
)
from verdictlab.engine.config import JudgeSpec, RunConfig, config_from_dict
from verdictlab.engine.limits import Budget
from verdictlab.judges import (
    JudgeAPI,
    JudgeCallError,
    JudgeRequest,
    JudgeResponse,
    RetryDecision,
    make_judge,
    register_judge,
)
from verdictlab.protocols.base import ParseResult, Protocol
from verdictlab.store import RunStore


# -- test doubles ---------------------------------------------------------------------------------
class LetterProtocol(Protocol):
    """Tiny protocol: asks for one letter; parses exactly 'A' or 'B' (shown terms)."""

    id = "letter"
    label_only = True
    verdict_choices = ("A", "B")

    def __init__(self, steps: tuple[str, ...] = ("",)) -> None:
        self._steps = steps

    def steps(self, item: Any) -> tuple[str, ...]:
        return self._steps

    def messages(self, item: Any, order: str, *, step: str = "") -> list[dict[str, str]]:
        first, second = item.shown(order)
        return [{"role": "user", "content": f"{item.question}\n[A] {first}\n[B] {second}\n{step}"}]

    def parse(self, text: str) -> ParseResult:
        t = text.strip()
        if t in ("A", "B"):
            return ParseResult(t, "ok")
        return ParseResult(None, "failed", f"expected A or B, got {t[:20]!r}")

    def max_tokens(self) -> int:
        return 2


Behaviour = Callable[[JudgeRequest, int], JudgeResponse]
SCRIPTS: dict[str, Behaviour] = {}


class ScriptJudge(JudgeAPI):
    """Calls ``SCRIPTS[spec](request, attempt_number_for_this_trial)``; records requests and the
    peak number of calls in flight."""

    provider = "script"

    def __init__(self, judge_id: str, spec: str) -> None:
        super().__init__(judge_id, model=spec)
        self.behaviour = SCRIPTS[spec.split("#")[0]]
        self.calls: collections.Counter[str] = collections.Counter()
        self.requests: list[JudgeRequest] = []
        self.in_flight = 0
        self.peak = 0

    async def generate(self, request: JudgeRequest) -> JudgeResponse:
        tid = request.metadata["trial_id"]
        self.calls[tid] += 1
        self.requests.append(request)
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            await asyncio.sleep(0)
            result = self.behaviour(request, self.calls[tid])
            if asyncio.iscoroutine(result):
                result = await result
            return result
        finally:
            self.in_flight -= 1


register_judge("script", ScriptJudge)


def shown_label(request: JudgeRequest) -> str:
    """The gold label of the request's item in shown terms (the engine sets ``request.item``)."""
    return str(swap(request.item.label, request.metadata["order"]))


def correct(request: JudgeRequest, attempt: int) -> JudgeResponse:
    """Always answers the gold label in shown terms."""
    return JudgeResponse(text=shown_label(request), tokens_in=10, tokens_out=1)


SCRIPTS["correct"] = correct


def items(n: int = 4, dataset: str = "toy") -> dict[tuple[str, str], PairItem]:
    out = {}
    for i in range(n):
        it = PairItem(item_id=f"i{i}", dataset=dataset, question=f"q{i}", response_a=f"a{i}",
                      response_b=f"b{i}", label="A" if i % 2 == 0 else "B", category="c")
        out[(dataset, it.item_id)] = it
    return out


def grid(judge: str, its: dict[tuple[str, str], PairItem], *, reps: int = 1, temps=(0.0,),
         orders=("AB", "BA")) -> list[Trial]:
    return [Trial(judge, ds, iid, "letter", o, t, r)
            for (ds, iid) in its for t in temps for o in orders for r in range(reps)]


def run(store: RunStore, trials: list[Trial], its, judge: JudgeAPI, *, spec: JudgeSpec | None = None,
        **kw: Any):
    return asyncio.run(run_trials(trials, store=store, items=its, judges={judge.judge_id: judge},
                                  protocols={"letter": LetterProtocol()},
                                  judge_specs={judge.judge_id: spec or JudgeSpec(id=judge.judge_id)},
                                  backoff_base_s=0.001, backoff_cap_s=0.01, flush_s=0.01, **kw))


# -- grid -----------------------------------------------------------------------------------------
def _config(tmp_path: Path, **over: Any) -> RunConfig:
    data = tmp_path / "pairs.jsonl"
    if not data.exists():
        with data.open("w") as fh:
            for i in range(6):
                fh.write(json.dumps({"item_id": i, "question": f"q{i}", "response_a": f"first answer {i}",
                                     "response_b": f"second answer {i}", "label": "AB"[i % 2]}) + "\n")
    base = {"name": "t", "datasets": [{"name": "jsonl", "path": "pairs.jsonl"}],
            "judges": ["sim:skill=1,position_lock=0,noise=0,seed=3"], "protocols": ["direct", "vf-json"],
            "orders": ["AB", "BA"], "temperatures": [0.0], "repetitions": 2}
    base.update(over)
    return config_from_dict(base, source=tmp_path / "cfg.yaml")


def test_grid_count_and_steps(tmp_path: Path) -> None:
    cfg = _config(tmp_path, judges=["sim:seed=1", "sim:seed=2"], temperatures=[0.0, 0.7], repetitions=3)
    prep = prepare_run(cfg)
    # 2 judges x 6 items x 2 protocols x 2 orders x 2 temperatures x 3 reps = 288
    assert len(prep.trials) == 288
    assert len({t.trial_id for t in prep.trials}) == 288
    # repetitions of one trial are back to back
    first = prep.trials[:3]
    assert [t.rep for t in first] == [0, 1, 2]
    assert len({(t.item_id, t.order, t.protocol) for t in first}) == 1

    # a multi-step protocol gets one trial per step; pointwise datasets are shown in one order
    its = dict(items(3))
    its[("pts", "p0")] = PointItem(item_id="p0", dataset="pts", question="q", response="r", label=1)
    # 3 pairs x 2 steps x 2 orders x 1 temp x 2 reps = 24 ; 1 point item x 2 steps x 1 order x 2 reps = 4
    trials = build_trials(_config(tmp_path, judges=["sim:"], protocols=["letter"]), its,
                          {"letter": LetterProtocol(steps=("x", "y"))})
    assert len(trials) == 28
    assert {t.step for t in trials} == {"x", "y"}
    assert {t.order for t in trials if t.dataset == "pts"} == {"AB"}


def test_trials_that_show_the_same_prompt_are_neighbours(tmp_path: Path) -> None:
    """One item in one order at a time, through every protocol, decoding and temperature, repetitions
    back to back (a local judge reads each prompt once; a run stopped early has every cell's first
    items).  Before, the grid ran protocol by protocol and decoding by decoding, so the same prompt
    came back 2 x 2 x 2 = 8 times per item and order, each time after other prompts."""
    cfg = _config(tmp_path, judges=["sim:seed=1", "sim:seed=2"], temperatures=[0.0, 0.7], repetitions=3,
                  decoding=["free", "constrained"])
    trials = prepare_run(cfg).trials
    assert len(trials) == 2 * 6 * 2 * 2 * 2 * 2 * 3
    groups = [(t.judge, t.item_id, t.order) for t in trials]
    runs = [g for i, g in enumerate(groups) if i == 0 or groups[i - 1] != g]
    assert len(runs) == len(set(runs)) == 2 * 6 * 2          # each (judge, item, order) is one stretch
    first = trials[: 2 * 2 * 2 * 3]                           # the first stretch, in the config's orders
    assert [(t.protocol, t.decoding, t.temperature) for t in first[::3]] == [
        (p, d, temp) for p in ("direct", "vf-json") for d in ("free", "constrained") for temp in (0.0, 0.7)]
    assert [t.rep for t in first] == [0, 1, 2] * 8
    assert [t.item_id for t in trials[:48]] == ["0"] * 24 + ["0"] * 24 and trials[48].item_id == "1"
    assert [t.order for t in trials[:48:24]] == ["AB", "BA"]


# -- end to end with the simulated judge --------------------------------------------------------
def test_sim_run_end_to_end_one_row_per_trial(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    summary = run_config(cfg, tmp_path / "run", progress=False)
    n = 6 * 2 * 2 * 2  # items x protocols x orders x reps
    assert summary.n_trials == n and summary.n_written == n and summary.complete
    assert summary.n_failed == 0 and summary.n_parse_failed == 0
    with RunStore(tmp_path / "run") as st:
        df = st.judgments()
        assert len(df) == n and df.trial_id.is_unique
        assert set(df.trial_id) == {t.trial_id for t in prepare_run(cfg).trials}
        # skill=1, no position lock, no noise: the judge always prefers the gold winner, so the
        # CANONICAL verdict equals the label in both orders ...
        assert (df.verdict == df.label).all()
        # ... and the first-shown response won exactly when the label was shown first:
        # order AB shows A first, order BA shows B first.
        expected_sfw = ((df.order == "AB") & (df.label == "A")) | ((df.order == "BA") & (df.label == "B"))
        assert (df.shown_first_won.astype(bool) == expected_sfw).all()
        assert (df.parse_status == "ok").all() and (df.attempts == 1).all()
        assert df.prompt_hash.notna().all() and df.category.isna().all()
        # the prompt hash covers the whole request, including the per-trial seed
        assert df.prompt_hash.str.fullmatch(r"[0-9a-f]{40}").all() and df.prompt_hash.is_unique
        meta = st.all_meta()
        assert meta["config"]["name"] == "t"
        assert meta["versions"]["verdictlab"]
        assert set(meta["judges"]) == {"sim:skill=1,position_lock=0,noise=0,seed=3"}
        assert meta["datasets"][0]["n_items"] == 6
        assert len(st.items()) == 6
        att = st.attempts()
        assert len(att) == n and set(att.outcome) == {"ok"}


def test_resume_skips_done_trials(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    first = run_config(cfg, tmp_path / "run", progress=False)
    again = run_config(cfg, tmp_path / "run", progress=False)
    assert again.n_written == 0 and again.n_skipped == first.n_trials and again.calls == 0
    # widening the design judges only the new trials
    more = run_config(_config(tmp_path, repetitions=3), tmp_path / "run", progress=False)
    assert more.n_skipped == first.n_trials and more.n_written == 6 * 2 * 2 * 1
    with RunStore(tmp_path / "run") as st:
        assert st.count() == 6 * 2 * 2 * 3
        assert len(st.get_meta("sessions")) == 3
        assert st.get_meta("config_history")[0]["repetitions"] == 2


def test_bad_dataset_stops_before_any_judging(tmp_path: Path) -> None:
    from verdictlab.core.items import ItemError

    cfg = _config(tmp_path)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"item_id": 1, "question": "q", "response_a": "a"}\n')
    cfg2 = _config(tmp_path, datasets=[{"name": "jsonl", "path": "pairs.jsonl"},
                                       {"name": "jsonl", "path": "bad.jsonl"}])
    with pytest.raises(ItemError, match=r"bad.jsonl, row 1, field 'response_b'"):
        run_config(cfg2, tmp_path / "run", progress=False)
    assert not (tmp_path / "run" / "run.sqlite").exists()
    assert cfg  # the good config alone is fine
    with pytest.raises(Exception, match="protocols.0"):
        run_config(_config(tmp_path, protocols=["no-such-protocol"]), tmp_path / "run", progress=False)


def test_plan_only_calls_nothing(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    s = run_config(cfg, tmp_path / "run", plan_only=True)
    assert s.plan is not None and s.plan.n_trials == 48 and s.plan.n_remaining == 48
    assert s.plan.est_tokens_in > 0 and s.plan.est_cost_usd == 0.0   # the sim judge is free
    assert not (tmp_path / "run" / "run.sqlite").exists()
    run_config(_config(tmp_path, repetitions=1), tmp_path / "run", progress=False)
    s2 = run_config(cfg, tmp_path / "run", plan_only=True)
    assert s2.plan.n_done == 24 and s2.plan.n_remaining == 24
    assert any("remaining" in line for line in s2.plan.lines())


# -- retries, timeouts, failures --------------------------------------------------------------------
def flaky(request: JudgeRequest, attempt: int) -> JudgeResponse:
    iid = request.metadata["item_id"]
    if iid == "i0" and attempt <= 2:      # transient twice, then fine
        raise JudgeCallError("503 upstream", RetryDecision.transient())
    if iid == "i1" and attempt == 1:      # one rate limit with a tiny Retry-After
        raise JudgeCallError("429 slow down", RetryDecision.rate_limit(0.001))
    if iid == "i2":                       # a fatal error is never retried
        raise JudgeCallError("400 bad request", RetryDecision.fatal())
    if iid == "i3":                       # always failing transiently
        raise JudgeCallError("502 bad gateway", RetryDecision.transient())
    return correct(request, attempt)


SCRIPTS["flaky"] = flaky


def test_retry_outcomes(tmp_path: Path) -> None:
    its = items(4)
    judge = make_judge("script:flaky")
    spec = JudgeSpec(id=judge.judge_id, max_retries=3)
    trials = grid(judge.judge_id, its, orders=("AB",))
    with RunStore(tmp_path) as st:
        s = run(st, trials, its, judge, spec=spec)
        df = st.judgments().set_index("item_id")
        att = st.attempts()
    assert s.n_written == 4 and s.n_failed == 2
    # i0: two transient errors then success -> 3 attempts, verdict stored
    assert df.loc["i0", "attempts"] == 3 and df.loc["i0", "verdict"] == "A" and pd.isna(df.loc["i0", "error"])
    # i1: one rate limit then success
    assert df.loc["i1", "attempts"] == 2 and df.loc["i1", "verdict"] == "B"
    # i2: fatal -> one attempt, failed row with the error, no verdict
    assert df.loc["i2", "attempts"] == 1 and pd.isna(df.loc["i2", "verdict"])
    assert df.loc["i2", "parse_status"] == "failed" and "400 bad request" in df.loc["i2", "error"]
    # i3: all 1 + max_retries = 4 attempts fail -> failed row with the last error
    assert df.loc["i3", "attempts"] == 4 and "502" in df.loc["i3", "error"]
    assert df.loc["i3", "parse_status"] == "failed"
    by_trial = {iid: list(g.sort_values("attempt").outcome)
                for iid, g in att.merge(st_ids(trials), on="trial_id").groupby("item_id")}
    assert by_trial["i0"] == ["retry", "retry", "ok"]
    assert by_trial["i1"] == ["retry", "ok"]
    assert by_trial["i2"] == ["failed"]
    assert by_trial["i3"] == ["retry", "retry", "retry", "failed"]
    kinds = set(att.error_kind.dropna())
    assert kinds == {"transient", "rate_limit", "fatal"}
    assert s.calls == 3 + 2 + 1 + 4


def st_ids(trials: list[Trial]) -> pd.DataFrame:
    return pd.DataFrame({"trial_id": [t.trial_id for t in trials], "item_id": [t.item_id for t in trials]})


async def slow_then_fast(request: JudgeRequest, attempt: int) -> JudgeResponse:
    if attempt == 1:
        await asyncio.sleep(5)            # longer than timeout_s: a timeout counts as transient
    return correct(request, attempt)


SCRIPTS["slow"] = slow_then_fast


def test_timeout_is_transient(tmp_path: Path) -> None:
    its = items(2)
    judge = make_judge("script:slow")
    spec = JudgeSpec(id=judge.judge_id, timeout_s=0.05, max_retries=1)
    with RunStore(tmp_path) as st:
        s = run(st, grid(judge.judge_id, its, orders=("AB",)), its, judge, spec=spec)
        df = st.judgments()
        att = st.attempts()
    assert s.n_failed == 0 and (df.attempts == 2).all() and (df.verdict == df.label).all()
    retries = att[att.outcome == "retry"]
    assert len(retries) == 2 and retries.error.str.contains("timeout").all()


def leaky(request: JudgeRequest, attempt: int) -> JudgeResponse:
    # key-shaped values are generated per run, so no key-like string is tracked in the repo
    raise JudgeCallError(f"401 invalid key sk-test{uuid.uuid4().hex} for Bearer abcdefghij12345",
                         RetryDecision.fatal())


SCRIPTS["leaky"] = leaky


def test_errors_are_key_free(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOMEPROVIDER_API_KEY", "supersecretvalue99")
    assert "supersecretvalue99" not in redact("echo supersecretvalue99 back")
    its = items(1)
    judge = make_judge("script:leaky")
    with RunStore(tmp_path) as st:
        run(st, grid(judge.judge_id, its, orders=("AB",)), its, judge)
        err = st.judgments().error.iloc[0]
        att_err = st.attempts().error.iloc[0]
    for text in (err, att_err):
        assert "401 invalid key" in text
        assert "sk-test" not in text and "abcdefghij12345" not in text and "[redacted]" in text


def garbage(request: JudgeRequest, attempt: int) -> JudgeResponse:
    return JudgeResponse(text="I think both are fine", tokens_in=5, tokens_out=5)


SCRIPTS["garbage"] = garbage


def test_unparseable_answer_is_failed_not_guessed(tmp_path: Path) -> None:
    its = items(2)
    judge = make_judge("script:garbage")
    with RunStore(tmp_path) as st:
        s = run(st, grid(judge.judge_id, its), its, judge)
        df = st.judgments()
    assert s.n_parse_failed == 4 and s.n_failed == 0
    assert df.verdict.isna().all() and (df.parse_status == "failed").all() and df.error.isna().all()
    assert df.shown_first_won.isna().all() and (df.raw_output == "I think both are fine").all()


# -- request contents, p_a, concurrency ------------------------------------------------------------
class LogprobJudge(ScriptJudge):
    supports_logprobs = True
    max_concurrency = 2


def probs(request: JudgeRequest, attempt: int) -> JudgeResponse:
    # shown-terms probabilities: first shown 0.7, second shown 0.1 (0.2 on other tokens)
    return JudgeResponse(text="A", choice_probs={"A": 0.7, "B": 0.1})


SCRIPTS["probs"] = probs


def test_request_and_p_a_mapping(tmp_path: Path) -> None:
    its = items(6)
    judge = LogprobJudge("lp:probs", "probs")
    spec = JudgeSpec(id=judge.judge_id, concurrency=16, params={"max_tokens": 3, "top_p": 0.5})
    trials = grid(judge.judge_id, its, reps=2)
    with RunStore(tmp_path) as st:
        run(st, trials, its, judge, spec=spec, seed=11)
        df = st.judgments()
    # backend cap (2) wins over the config's concurrency (16)
    assert judge.peak <= 2
    req = judge.requests[0]
    assert req.logprobs and req.top_logprobs >= 2 and req.verdict_choices == ("A", "B")
    assert req.max_tokens == 3 and req.params == {"top_p": 0.5}
    # every request carries its item (canonical terms) whatever the judge; the trial key says the order
    for r in judge.requests:
        assert r.item is its[(r.metadata["dataset"], r.metadata["item_id"])]
        assert "label_shown" not in r.metadata and "label" not in r.metadata   # not in production metadata
    # per-trial seeds: reproducible and different across repetitions and orders
    seeds = {r.metadata["trial_id"]: r.seed for r in judge.requests}
    assert all(seeds[t.trial_id] == derived_seed(11, t.trial_id) for t in trials)
    assert len(set(seeds.values())) == len(trials)
    # P(shown A)=0.7, P(shown B)=0.1 -> renormalised 0.875 / 0.125.
    # order AB: canonical A shown first -> p_a = 0.7/0.8 = 0.875
    # order BA: canonical A shown second -> p_a = 0.1/0.8 = 0.125
    assert df[df.order == "AB"].p_a.round(6).eq(0.875).all()
    assert df[df.order == "BA"].p_a.round(6).eq(0.125).all()
    # the verdict "A" (shown) is canonical A for AB and canonical B for BA
    assert (df[df.order == "AB"].verdict == "A").all() and (df[df.order == "BA"].verdict == "B").all()
    assert canonical_p_a(None, "AB") is None and canonical_p_a({"A": 0.5}, "AB") is None


def test_explicit_seed_and_no_logprobs_when_unsupported(tmp_path: Path) -> None:
    its = items(1)
    judge = make_judge("script:correct")
    spec = JudgeSpec(id=judge.judge_id, params={"seed": 5})
    with RunStore(tmp_path) as st:
        run(st, grid(judge.judge_id, its, reps=2), its, judge, spec=spec)
    assert {r.seed for r in judge.requests} == {5}
    assert not any(r.logprobs for r in judge.requests)


class FormatProtocol(LetterProtocol):
    label_only = False


def test_verdict_choices_only_for_label_only_protocols(tmp_path: Path) -> None:
    its = items(1)
    judge = LogprobJudge("lp:correct", "correct")
    with RunStore(tmp_path) as st:
        asyncio.run(run_trials(grid(judge.judge_id, its), store=st, items=its, judges={judge.judge_id: judge},
                               protocols={"letter": FormatProtocol()}))
    # a free-form protocol (JSON, XML...) must be generated, not scored from two letters
    assert all(r.verdict_choices == () and not r.logprobs for r in judge.requests)


# -- budget -----------------------------------------------------------------------------------------
def test_budget_stops_cleanly_and_resumes(tmp_path: Path) -> None:
    cfg = _config(tmp_path, budget={"max_calls": 10})
    s1 = run_config(cfg, tmp_path / "run", progress=False)
    assert s1.stopped is not None and s1.stopped.startswith("budget") and "max_calls=10" in s1.stopped
    assert s1.n_written == 10 and s1.calls == 10 and not s1.complete
    # the budget counts the whole run: a rerun with the same budget makes no call
    s2 = run_config(cfg, tmp_path / "run", progress=False)
    assert s2.calls == 0 and s2.n_written == 0 and s2.stopped.startswith("budget")
    # raising it continues where the run stopped
    s3 = run_config(_config(tmp_path, budget={"max_calls": 30}), tmp_path / "run", progress=False)
    assert s3.n_skipped == 10 and s3.n_written == 20
    s4 = run_config(_config(tmp_path), tmp_path / "run", progress=False)
    assert s4.complete and s4.n_written == 48 - 30
    with RunStore(tmp_path / "run") as st:
        assert st.count() == 48 and st.judgments().trial_id.is_unique
        assert len(st.attempts()) == 48


def test_token_budget(tmp_path: Path) -> None:
    its = items(4)
    judge = make_judge("script:correct#tok")
    with RunStore(tmp_path) as st:
        # each call charges 11 tokens; after 3 calls 33 >= 30 so the 4th never starts
        s = run(st, grid(judge.judge_id, its, orders=("AB",)), its, judge,
                spec=JudgeSpec(id=judge.judge_id, concurrency=1), budget=Budget(max_tokens=30))
        assert st.count() == 3
    assert s.stopped and "token budget" in s.stopped


# -- cache ------------------------------------------------------------------------------------------
def counting(request: JudgeRequest, attempt: int) -> JudgeResponse:
    counting.n += 1  # type: ignore[attr-defined]
    return JudgeResponse(text=shown_label(request) + f" #{counting.n}",  # type: ignore[attr-defined]
                         tokens_in=1, tokens_out=1)


counting.n = 0  # type: ignore[attr-defined]
SCRIPTS["counting"] = counting


class CountingProtocol(LetterProtocol):
    def parse(self, text: str) -> ParseResult:
        return super().parse(text.split(" #")[0])


def _cache_run(st: RunStore, judge: JudgeAPI, trials, its, policy: str):
    return asyncio.run(run_trials(trials, store=st, items=its, judges={judge.judge_id: judge},
                                  protocols={"letter": CountingProtocol()}, cache=policy, flush_s=0.01))


@pytest.mark.parametrize("policy, temp, expect_hits", [
    ("auto", 0.0, True), ("auto", 0.7, False), ("on", 0.7, True), ("off", 0.0, False)])
def test_cache_policy_and_per_rep_keys(tmp_path: Path, policy: str, temp: float, expect_hits: bool) -> None:
    its = items(2)
    judge = make_judge("script:counting")
    trials = grid(judge.judge_id, its, reps=3, temps=(temp,))
    with RunStore(tmp_path) as st:
        _cache_run(st, judge, trials, its, policy)
        first = st.judgments().set_index("trial_id").raw_output
        # every output is distinct (a counter), so a rep served from another rep's entry would show
        assert first.is_unique
        st.conn.execute("DELETE FROM judgments")
        s = _cache_run(st, judge, trials, its, policy)
        second = st.judgments().set_index("trial_id")
    if expect_hits:
        assert s.n_cache_hits == len(trials) and s.calls == 0
        # each repetition got back exactly its own earlier answer
        assert (second.raw_output == first.loc[second.index]).all()
        assert (second.cache_hit == 1).all() and (second.cost_usd == 0).all()
    else:
        assert s.n_cache_hits == 0 and s.calls == len(trials)
        assert (second.cache_hit == 0).all()
        assert not (second.raw_output == first.loc[second.index]).any()


# -- failing judges ---------------------------------------------------------------------------------
def unauthorised(request: JudgeRequest, attempt: int) -> JudgeResponse:
    if unauthorised.broken:  # type: ignore[attr-defined]
        raise JudgeCallError("401 unauthorised", RetryDecision.fatal())
    return correct(request, attempt)


unauthorised.broken = True  # type: ignore[attr-defined]
SCRIPTS["unauth"] = unauthorised


def test_failing_judge_halts_and_retry_failed_recovers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    its = items(10)
    judge = make_judge("script:unauth")
    ok_judge = make_judge("script:correct")
    trials = grid(judge.judge_id, its) + grid(ok_judge.judge_id, its)
    spec = JudgeSpec(id=judge.judge_id, concurrency=1)

    def go(**kw: Any):
        return asyncio.run(run_trials(trials, store=st, items=its,
                                      judges={judge.judge_id: judge, ok_judge.judge_id: ok_judge},
                                      protocols={"letter": LetterProtocol()},
                                      judge_specs={judge.judge_id: spec}, flush_s=0.01,
                                      max_consecutive_failures=3, **kw))

    with RunStore(tmp_path) as st:
        s = go()
        df = st.judgments()
        # the broken judge stops after 3 failed trials in a row; the healthy one finishes all 20
        assert (df.judge == judge.judge_id).sum() == 3 and (df.judge == ok_judge.judge_id).sum() == 20
        assert s.n_failed == 3 and "halted after 3 trials" in s.stopped and "401" in s.stopped
        # a plain resume skips the failed rows; --retry-failed removes and redoes them
        unauthorised.broken = False  # type: ignore[attr-defined]
        s2 = go()
        assert s2.n_skipped == 23 and s2.n_written == 17
        s3 = go(retry_failed=True)
        assert s3.n_retried_failed == 3 and s3.n_written == 3 and s3.n_failed == 0
        df = st.judgments()
        assert len(df) == 40 and df.error.isna().all() and df.trial_id.is_unique
        # the attempts table keeps the history of the failed calls
        assert (st.attempts().outcome == "failed").sum() == 3
    unauthorised.broken = True  # type: ignore[attr-defined]


def test_dollar_budget_needs_a_price(tmp_path: Path) -> None:
    from verdictlab.engine import EngineError

    register_judge("unpriced", lambda jid, spec: ScriptJudge(jid, "correct"))
    cfg = _config(tmp_path, judges=["unpriced:model-x"], budget={"max_usd": 1.0})
    with pytest.raises(EngineError, match="no price is known for unpriced:model-x"):
        run_config(cfg, tmp_path / "run", progress=False)


def test_second_concurrent_run_is_refused(tmp_path: Path) -> None:
    import fcntl

    from verdictlab.engine import EngineError

    cfg = _config(tmp_path)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with (run_dir / "run.lock").open("a+") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)    # another process's run holds it
        with pytest.raises(EngineError, match="in use by another 'verdictlab run'"):
            run_config(cfg, run_dir, progress=False)
    # once released, the run goes ahead (and releases the lock at the end)
    assert run_config(cfg, run_dir, progress=False).complete
    assert run_config(cfg, run_dir, progress=False).n_written == 0


class PickyProtocol(LetterProtocol):
    def messages(self, item: Any, order: str, *, step: str = "") -> list[dict[str, str]]:
        if item.item_id == "i1":
            raise ValueError("response_b is empty")
        return super().messages(item, order, step=step)


def test_item_a_protocol_cannot_present_is_a_failed_row(tmp_path: Path) -> None:
    its = items(3)
    judge = make_judge("script:correct")
    with RunStore(tmp_path) as st:
        s = asyncio.run(run_trials(grid(judge.judge_id, its), store=st, items=its,
                                   judges={judge.judge_id: judge}, protocols={"letter": PickyProtocol()}))
        df = st.judgments().set_index(["item_id", "order"]).sort_index()
    assert s.n_written == 6 and s.n_failed == 2
    assert df.loc[("i1", "AB"), "attempts"] == 0 and "response_b is empty" in df.loc[("i1", "AB"), "error"]
    assert (df.drop(index="i1").verdict == df.drop(index="i1").label).all()


def test_resume_refuses_changed_items(tmp_path: Path) -> None:
    from verdictlab.engine import EngineError

    cfg = _config(tmp_path, repetitions=1)
    run_config(cfg, tmp_path / "run", progress=False)
    lines = (tmp_path / "pairs.jsonl").read_text().splitlines()
    rec = json.loads(lines[2])
    rec["response_b"] = "an edited answer"
    lines[2] = json.dumps(rec)
    (tmp_path / "pairs.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(EngineError, match=r"1 item\(s\) changed .* \(first: pairs/2\)"):
        run_config(cfg, tmp_path / "run", progress=False)
    # adding items is fine: only the new ones are judged
    lines[2] = json.dumps({**rec, "response_b": "second answer 2"})
    lines.append(json.dumps({"item_id": 99, "question": "q", "response_a": "x", "response_b": "y", "label": "A"}))
    (tmp_path / "pairs.jsonl").write_text("\n".join(lines) + "\n")
    s = run_config(cfg, tmp_path / "run", progress=False)
    assert s.n_written == 2 * 2 and s.complete    # 1 new item x 2 protocols x 2 orders


def test_rate_limit_buckets_get_requests_and_token_estimates(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    import verdictlab.engine.caller as engine_mod

    taken: list[tuple[float, float]] = []

    class RecordingBucket(engine_mod.TokenBucket):
        async def acquire(self, amount: float = 1) -> float:
            taken.append((self.rate_per_minute, amount))
            return 0.0

    monkeypatch.setattr(engine_mod, "TokenBucket", RecordingBucket)
    its = items(1)
    judge = make_judge("script:correct")
    spec = JudgeSpec(id=judge.judge_id, requests_per_minute=60, tokens_per_minute=6000)
    with RunStore(tmp_path) as st:
        run(st, grid(judge.judge_id, its, orders=("AB",)), its, judge, spec=spec)
    # the prompt "q0\n[A] a0\n[B] b0\n" is 17 chars -> 17 // 4 = 4 tokens, + max_tokens 2 = 6
    assert sorted(taken) == [(60.0, 1), (6000.0, 6)]


def test_plan_cost_unknown_without_price(tmp_path: Path) -> None:
    register_judge("unpriced", lambda jid, spec: ScriptJudge(jid, "correct"))
    s = run_config(_config(tmp_path, judges=["unpriced:model-x"]), tmp_path / "run", plan_only=True)
    assert s.plan.est_cost_usd is None
    assert any("unknown" in line for line in s.plan.lines())
