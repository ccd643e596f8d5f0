"""A synthetic run written straight into a RunStore -- for report tests, development and docs.

No judge is called: verdicts are drawn from a seeded toy model per (judge, protocol) with set
skill, position bias, noise (growing with temperature) and parse-failure rate.  This only feeds the
report machinery; real audits use ``verdictlab run`` with real (or ``sim:``) judges.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np

from ..core.design import trial_id
from ..core.items import PairItem
from ..core.vocab import DECISIVE, ORDERS, Order, other_side, swap
from ..store import RunStore

_PROFILES = {
    # judge: (skill, first-position bias, noise at T=0, parse-failure rate)
    "sim:steady": (0.85, 0.05, 0.02, 0.01),
    "sim:biased": (0.75, 0.35, 0.03, 0.03),
}
_PROTOCOL_SHIFT = {"direct": -0.08, "vf-json": 0.0, "vf-xml": -0.03, "cot-json": 0.05, "cot-xml": 0.02}


_PAYLOADS = ["<script>document.title='PWNED';document.body.setAttribute('data-pwned','1')</script>",
             "<img src=x onerror=\"document.title='PWNED';document.body.setAttribute('data-pwned','2')\">",
             "</table></div><h1 id='injected'>broken out</h1>"]


@dataclass
class _Sim:
    """The settings of one synthetic run and its two random streams (``rng`` as always; ``extra`` for
    the optional ties and one-order pairs, so the defaults give exactly the run they always gave)."""

    rng: np.random.Generator
    extra: np.random.Generator
    repetitions: int
    hostile: bool
    judge_tie_rate: float
    decoding: str = "free"
    one_order: set[str] = field(default_factory=set)
    rows: list[dict[str, object]] = field(default_factory=list)
    attempts: list[dict[str, object]] = field(default_factory=list)


def _make_items(rng: np.random.Generator, datasets: Sequence[str], n_items: int, hostile: bool) -> list[PairItem]:
    items: list[PairItem] = []
    for ds in datasets:
        for i in range(n_items):
            label: Literal["A", "B", "tie"] = "A" if rng.random() < 0.5 else "B"
            if i % 11 == 10:
                label = "tie"
            q = f"Question {i} of {ds}: which answer is better?"
            ra, rb = f"Answer one to question {i}.", f"Answer two to question {i}."
            cat = ["coding", "writing", "reasoning"][i % 3]
            if hostile:
                p = _PAYLOADS[i % 3]
                q, ra, rb, cat = q + " " + p, ra + p, p + rb, cat + p
            items.append(PairItem(item_id=f"{ds}-{i}", dataset=ds, question=q, response_a=ra, response_b=rb,
                                  label=label, category=cat))
    return items


def _shown(rng: np.random.Generator, label: str | None, order: str, *, biased: bool, knows: bool,
           noise: float) -> str:
    """The verdict in shown terms: first-shown when biased, else right when the judge knows, a coin
    for tie labels; flipped with probability ``noise``."""
    if biased:
        shown = "A"
    elif label in DECISIVE:
        right_shown = str(swap(label, order))  # the label in shown terms
        shown = right_shown if knows else other_side(right_shown)
    else:
        shown = "A" if rng.random() < 0.5 else "B"
    if rng.random() < noise:
        shown = other_side(shown)  # flipped
    return shown


def _add_attempts(sim: _Sim, tid: str, judge: str, n_att: int) -> None:
    for a in range(n_att):
        last = a == n_att - 1
        sim.attempts.append({"trial_id": tid, "judge": judge, "attempt": a + 1, "outcome": "ok" if last else "retry",
                             "error_kind": None if last else "rate_limit",
                             "error": None if last else "429 Too Many Requests", "latency_s": 0.01})


def _judge_item(sim: _Sim, judge: str, protocol: str, temp: float, it: PairItem, *, skill: float, bias: float,
                noise: float, fail: float) -> None:
    """Every (order, rep) judgment of one item by one judge / protocol / temperature."""
    rng = sim.rng
    knows = rng.random() < skill  # item-level: judge knows the right answer
    for order in ORDERS:
        biased = rng.random() < bias  # item x order: prefers whichever is shown first
        for rep in range(sim.repetitions):
            shown = _shown(rng, it.label, order, biased=biased, knows=knows, noise=noise)
            canon = str(swap(shown, order))  # shown -> canonical terms
            failed = rng.random() < fail
            if sim.judge_tie_rate > 0 and sim.extra.random() < sim.judge_tie_rate:
                shown = canon = "tie"
            if order == Order.BA and it.item_id in sim.one_order:
                continue
            raw = f"Verdict: Output ({'a' if shown == 'A' else 'b'})" if shown != "tie" else "Verdict: tie"
            if sim.hostile:
                raw += " " + _PAYLOADS[rep % 3]
            if failed:
                raw = "I cannot decide between these." + (_PAYLOADS[0] if sim.hostile else "")
            tid = trial_id(judge, it.dataset, it.item_id, protocol, order, temp, rep, decoding=sim.decoding)
            n_att = 2 if rng.random() < 0.03 else 1
            sim.rows.append({
                "trial_id": tid, "judge": judge, "dataset": it.dataset, "item_id": it.item_id,
                "protocol": protocol, "order": order, "temperature": float(temp), "rep": rep,
                "step": "", "label": it.label, "category": it.category, "raw_output": raw,
                "system_a": it.system_a, "system_b": it.system_b,
                "verdict": None if failed else canon,
                "shown_first_won": None if failed or shown == "tie" else int(shown == "A"),
                "parse_status": "failed" if failed else "ok",
                "parse_detail": "no verdict found" if failed else "strict",
                "latency_s": 0.01, "tokens_in": 120, "tokens_out": 8, "cost_usd": 0.0,
                "attempts": n_att, "cache_hit": 0, "decoding": sim.decoding,
            })
            _add_attempts(sim, tid, judge, n_att)


def write_synthetic_run(run_dir: str | Path, *, datasets: Sequence[str] = ("llmbar-natural", "pandalm"),
                        protocols: Sequence[str] = ("direct", "vf-json", "vf-xml", "cot-json", "cot-xml"),
                        temperatures: Sequence[float] = (0.0, 0.7), judges: Sequence[str] = tuple(_PROFILES),
                        n_items: int = 24, repetitions: int = 3, seed: int = 7,
                        hostile: bool = False, judge_tie_rate: float = 0.0, one_order_share: float = 0.0,
                        fail_rate: float | None = None, decodings: Sequence[str] = ("free",)) -> RunStore:
    """Write a synthetic run; returns the open store.  ``hostile=True`` puts HTML/script payloads
    into questions, responses, raw outputs, categories and the meta (for escaping tests).

    ``judge_tie_rate``: share of judgments whose verdict is ``tie`` (so q is measured);
    ``one_order_share``: share of items judged in the AB order only (one-order pairs);
    ``fail_rate``: parse-failure rate for every judge instead of its profile's; ``decodings``: the
    decoding modes, each judged like a separate run (its own draws).  These draw from their own random
    stream (or come after the default draws), so the defaults give exactly the run they always gave."""
    sim = _Sim(rng=np.random.default_rng(seed), extra=np.random.default_rng(seed + 1_000_003),
               repetitions=repetitions, hostile=hostile, judge_tie_rate=judge_tie_rate)
    store = RunStore(run_dir)
    items = _make_items(sim.rng, datasets, n_items, hostile)
    store.write_items(items)
    sim.one_order = {it.item_id for it in items if one_order_share > 0 and sim.extra.random() < one_order_share}
    for sim.decoding in decodings:
        for judge in judges:
            skill0, bias, noise0, fail = _PROFILES.get(judge, (0.7, 0.2, 0.05, 0.02))
            for protocol in protocols:
                skill = min(0.98, skill0 + _PROTOCOL_SHIFT.get(protocol, 0.0))
                for temp in temperatures:
                    for it in items:
                        _judge_item(sim, judge, protocol, temp, it, skill=skill, bias=bias,
                                    noise=noise0 + 0.25 * temp, fail=fail if fail_rate is None else fail_rate)
    # one trial that failed for good
    sim.attempts.append({"trial_id": "f" * 40, "judge": judges[0], "attempt": 1, "outcome": "failed",
                         "error_kind": "timeout", "error": "timed out after 60 s", "latency_s": 60.0})
    store.add_judgments(sim.rows)
    store.add_attempts(sim.attempts)
    store.set_meta("config", {"judges": list(judges), "datasets": list(datasets), "protocols": list(protocols),
                              "temperatures": list(temperatures), "repetitions": repetitions,
                              "generation": {"max_tokens": 64, "top_p": 1.0},
                              "note": "synthetic run" + (" " + _PAYLOADS[1] if hostile else ""),
                              "api_key": f"sk-test-THIS-MUST-NOT-APPEAR-{uuid.uuid4().hex}"})
    store.set_meta("versions", {"verdictlab": "0.1.0"})
    return store
