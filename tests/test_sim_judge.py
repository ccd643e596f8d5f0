"""The simulated judge: its id, determinism, output formats and the figures it is built to produce."""

from __future__ import annotations

import asyncio
import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom

from verdictlab.core.items import PairItem, to_canonical
from verdictlab.core.policy import FigurePolicy
from verdictlab.judges import JudgeConfigError, JudgeRequest, make_judge
from verdictlab.judges.sim import SimJudge
from verdictlab.protocols import PAIRWISE_IDS, get_protocol


def _request(item_id: str, order: str, rep: int, *, protocol: str = "vf-json", label: str | None = "A",
             temperature: float = 0.7, dataset: str = "toy") -> JudgeRequest:
    meta = {"dataset": dataset, "item_id": item_id, "protocol": protocol, "order": order,
            "temperature": temperature, "rep": rep, "step": ""}
    # the simulated judge reads the gold label from the item the request is about (canonical terms)
    item = PairItem(item_id=item_id, dataset=dataset, question="q", response_a="a", response_b="b", label=label)
    return JudgeRequest(messages=({"role": "user", "content": "q"},), temperature=temperature, metadata=meta,
                        item=item)


def _simulate(judge_id: str, *, n_pairs: int, reps: int, protocol: str = "vf-json",
              seed: int = 7) -> pd.DataFrame:
    """Run the judge over n_pairs x 2 orders x reps calls and parse each output with the protocol,
    returning a judgments frame in canonical terms (what the engine would store)."""
    judge = make_judge(judge_id)
    proto = get_protocol(protocol)
    labels = np.random.default_rng(seed).choice(["A", "B"], size=n_pairs)

    async def run() -> list[dict]:
        rows = []
        for i in range(n_pairs):
            for order in ("AB", "BA"):
                for rep in range(reps):
                    resp = await judge.generate(_request(f"p{i}", order, rep, protocol=protocol,
                                                         label=str(labels[i])))
                    parsed = proto.parse(resp.text)
                    rows.append({"judge": judge_id, "protocol": protocol, "dataset": "toy",
                                 "temperature": 0.7, "item_id": f"p{i}", "order": order, "rep": rep,
                                 "label": str(labels[i]), "parse_status": parsed.status,
                                 "verdict": to_canonical(parsed.verdict, order)})
        return rows

    return pd.DataFrame(asyncio.run(run()))


def _figures(df: pd.DataFrame) -> dict[str, float]:
    """C, phi, A with the docs/definitions.md definitions: verdicts.stats.reliability when present, else a
    local computation (split modes -> undefined: not consistent, not order-invariant, not correct)."""
    try:
        from verdictlab.stats.reliability import reliability
    except ImportError:  # pragma: no cover - before the stats module landed
        reliability = None
    if reliability is not None:
        row = reliability(df, policy=FigurePolicy(n_bootstrap=0)).iloc[0]
        return {"C": float(row["C"]), "phi": float(row["phi"]), "A": float(row["A"])}
    parsed = df[df["verdict"].notna()]
    modes, consistent = {}, []
    for (item, order), g in parsed.groupby(["item_id", "order"]):
        counts = g["verdict"].value_counts()
        consistent.append(len(counts) == 1)
        top = counts[counts == counts.max()]
        modes[(item, order)] = top.index[0] if len(top) == 1 else None
    items = parsed["item_id"].unique()
    label = dict(zip(df["item_id"], df["label"], strict=False))
    P = [modes[(i, "AB")] is not None and modes[(i, "AB")] == modes[(i, "BA")] for i in items]
    correct = [modes[(i, o)] == label[i] for i in items for o in ("AB", "BA")]
    return {"C": float(np.mean(consistent)), "phi": 1 - float(np.mean(P)), "A": float(np.mean(correct))}


def _expected(S: float, B: float, N: float, R: int) -> dict[str, float]:
    """Exact large-sample expectations of the sim's figures.

    Per call the preferred verdict comes back with p = 1 - N/2 (noise replaces it with a fair coin
    with probability N, and the coin agrees half the time).  Over R repetitions the count X of the
    preferred verdict is Binomial(R, p):
      C = P(X = R) + P(X = 0) = p^R + (1-p)^R
      mode = preferred with qm = P(X > R/2), the other verdict with wm = P(X < R/2), split otherwise.
    Locked pair (prefers the first shown; its canonical preference differs between orders): the two
    modes agree in canonical terms iff exactly one order's mode was flipped: 2 qm wm.
    Free pair (same canonical preference in both orders): agree iff both or neither flipped:
    qm^2 + wm^2.  So phi = 1 - [B 2 qm wm + (1-B)(qm^2 + wm^2)].
    Accuracy: a free pair prefers the label with a = S + (1-S)/2, so a unit is correct with
    a qm + (1-a) wm; a locked pair prefers the label in exactly one of its two orders:
    (qm + wm)/2.  A = (1-B)(a qm + (1-a) wm) + B (qm + wm)/2.
    """
    p = 1 - N / 2
    qm = float(binom.sf(R // 2, R, p))              # P(X > R/2)   (R even: X >= R/2 + 1)
    wm = float(binom.cdf((R - 1) // 2, R, p))       # P(X < R/2)
    a = S + (1 - S) / 2
    return {"C": p**R + (1 - p) ** R,
            "phi": 1 - (B * 2 * qm * wm + (1 - B) * (qm**2 + wm**2)),
            "A": (1 - B) * (a * qm + (1 - a) * wm) + B * (qm + wm) / 2}


@pytest.mark.slow
@pytest.mark.parametrize("S,B,N", [(0.8, 0.3, 0.2), (0.6, 0.1, 0.5)])
def test_sim_figures_recovered_within_sampling_error(S: float, B: float, N: float) -> None:
    n_pairs, R = 400, 10
    df = _simulate(f"sim:skill={S},position_lock={B},noise={N},seed=11", n_pairs=n_pairs, reps=R)
    assert len(df) == n_pairs * 2 * R and (df["parse_status"] == "ok").all()
    got, exp = _figures(df), _expected(S, B, N, R)
    # Tolerance: 4 binomial standard errors.  C is a mean over 800 independent (pair, order) units
    # (consistency depends only on that unit's own noise draws): SE = sqrt(C(1-C)/800).  phi is a
    # mean over 400 independent pairs: SE = sqrt(phi(1-phi)/400).  A averages two correlated units
    # per pair; a per-pair mean Y in [0, 1] has Var(Y) <= A(1-A), so SE <= sqrt(A(1-A)/400).
    n_units = 2 * n_pairs
    tol = {"C": 4 * math.sqrt(exp["C"] * (1 - exp["C"]) / n_units),
           "phi": 4 * math.sqrt(exp["phi"] * (1 - exp["phi"]) / n_pairs),
           "A": 4 * math.sqrt(exp["A"] * (1 - exp["A"]) / n_pairs)}
    for k in ("C", "phi", "A"):
        assert abs(got[k] - exp[k]) <= tol[k], (k, got[k], exp[k], tol[k])


def test_expected_figures_match_the_simple_formulas_without_noise() -> None:
    # N = 0: p = 1, every unit consistent (C = 1), modes never flip (qm = 1, wm = 0), so
    # phi = 1 - (1-B) = B and A = (1-B)(S + (1-S)/2) + B/2 -- the formulas in the sim docstring.
    e = _expected(0.8, 0.3, 0.0, 10)
    assert e["C"] == pytest.approx(1.0)
    assert e["phi"] == pytest.approx(0.3)
    assert e["A"] == pytest.approx(0.7 * 0.9 + 0.15)


def test_fully_position_locked_judge_is_exactly_order_driven() -> None:
    # B = 1, N = 0: every pair picks the first shown response in both orders -> the canonical
    # verdicts differ in every pair (phi = 1), each order is perfectly consistent (C = 1) and
    # exactly one of the two orders shows the label first (A = 1/2 exactly).
    df = _simulate("sim:skill=1,position_lock=1,noise=0,seed=3", n_pairs=30, reps=3)
    got = _figures(df)
    assert got == {"C": 1.0, "phi": 1.0, "A": 0.5}


def test_perfect_judge_is_always_right() -> None:
    df = _simulate("sim:skill=1,position_lock=0,noise=0,seed=3", n_pairs=30, reps=2, protocol="cot-xml")
    assert (df["verdict"] == df["label"]).all()


def test_malformed_outputs_fail_to_parse_at_the_set_rate() -> None:
    # M = 0.25 over 2 x 4 x 150 = 1200 calls: failed share within 4 SE = 4 sqrt(.25 .75 / 1200) = 0.05
    for protocol in PAIRWISE_IDS:
        df = _simulate("sim:skill=0.9,noise=0,malformed=0.25,seed=5", n_pairs=150, reps=4, protocol=protocol)
        failed = df["parse_status"] == "failed"
        assert abs(failed.mean() - 0.25) <= 0.05, protocol
        assert df.loc[failed, "verdict"].isna().all()
        assert df.loc[~failed, "parse_status"].eq("ok").all()


def test_same_call_same_output_and_pair_preference_fixed() -> None:
    judge = make_judge("sim:skill=0.5,noise=0.3,seed=1")
    a = asyncio.run(judge.generate(_request("x", "AB", 2)))
    b = asyncio.run(judge.generate(_request("x", "AB", 2)))
    assert a.text == b.text
    # the pair-level state does not depend on the protocol or the order
    assert isinstance(judge, SimJudge)
    assert judge.pair_preference("toy", "x", "A") == judge.pair_preference("toy", "x", "A")
    other = make_judge("sim:skill=0.5,noise=0.3,seed=2")
    prefs1 = [judge.pair_preference("toy", str(i), None)[1] for i in range(50)]
    prefs2 = [other.pair_preference("toy", str(i), None)[1] for i in range(50)]
    assert prefs1 != prefs2  # another seed, another judge
    assert {"A", "B"} == set(prefs1)


def test_sim_speaks_every_protocol() -> None:
    judge = make_judge("sim:skill=1,seed=0")
    for pid in PAIRWISE_IDS:
        resp = asyncio.run(judge.generate(_request("q1", "BA", 0, protocol=pid, label="A")))
        parsed = get_protocol(pid).parse(resp.text)
        # label A canonical, shown second in order BA -> shown verdict B
        assert (parsed.status, parsed.verdict) == ("ok", "B"), pid
        assert resp.tokens_in and resp.tokens_out and resp.latency_s is not None


@pytest.mark.parametrize("spec", ["skill=2", "noise=-0.1", "bogus=1", "skill", "seed=x", "latency=-1"])
def test_bad_sim_ids_are_rejected(spec: str) -> None:
    with pytest.raises(JudgeConfigError):
        make_judge(f"sim:{spec}")


def test_latency_is_awaited() -> None:
    import time

    judge = make_judge("sim:latency=0.05")
    t0 = time.perf_counter()
    asyncio.run(judge.generate(_request("x", "AB", 0)))
    assert time.perf_counter() - t0 >= 0.05
