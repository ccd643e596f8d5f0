"""A self-test of the auditor: run the whole pipeline on simulated judges with biases planted at known
strengths and check that the figures recover them (``verdictlab selftest``).

The run is an ordinary run (datasets -> probes -> grid -> engine -> store -> stats/analyses): a
generated pairs file (responses of equal length, gold labels), its ``padding`` and ``anchoring`` probes,
and a multi-response file (three systems per question, equal lengths, gold scores), judged by five
simulated judges -- each with one planted property (:mod:`verdictlab.judges.sim` documents the knobs
and their expected figures) -- with the ``direct`` protocol, both orders and two repetitions.

Rows (planted -> what recovers it):

=====================  =========================================  ==========================================
property               judge (others at 0; skill 0.8)            recovered as
=====================  =========================================  ==========================================
accuracy               skill S = 0.8 -> A = S + (1 - S)/2 = 0.9     A (pair bootstrap interval)
position bias          position_lock B -> phi = B                  phi (Wilson over pairs)
noise                  noise N -> C = p^2 + (1-p)^2, p = 1 - N/2   N = 1 - sqrt(2C - 1) (Wilson on C)
verbosity bias         verbosity V, padding probe                  relative rise toward the padded side
anchoring              anchoring G, anchoring probe                susceptibility (shift / room to move)
self-preference        self_pref P, family alpha                   harm = P(own | own wrong) - P(other | other wrong)
non-transitive share   skill 0.8 on 3-system items:                share of non-transitive triples (Wilson)
                       q = 0.9 per pair, q^2 (1-q) + (1-q)^2 q
grader accuracy        pointwise 0/1 grader, skill S = 0.8         accuracy = S (Wilson over source items)
grader noise           noise N on the grader -> C = p^2+(1-p)^2    N = 1 - sqrt(2C - 1) (Wilson on C)
grader invariance      invariance I = 0.7, whitespace cases        share of cases graded as their source
grader sensitivity     sensitivity Q = 0.6, accepted label flips   share graded right among sources right
=====================  =========================================  ==========================================

The grader rows come from a second run: ``points.jsonl`` (0/1 labels; per item a deterministic
whitespace case and an accepted label flip, the data contract of docs/architecture.md) graded by two
simulated pointwise graders with ``pointwise@0-1``, two repetitions.

A row passes when the planted value lies inside the recovered interval.  Intervals are Bonferroni-
adjusted (each at 1 - 0.05/k for the k = 11 rows), so a correct auditor fails some row with probability at most
5 % for a new ``seed``; with the default seed the outcome is fixed (the simulated judge is hash-seeded).
Units that are not independent are not counted twice: the self-preference and anchoring rows use
one order per item where the verdict of the other order is a copy.
"""

from __future__ import annotations

import json
import math
import signal
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from verdictlab.core.policy import FigurePolicy
from verdictlab.core.stopping import Stopped
from verdictlab.core.vocab import Order

SYSTEMS = ("alpha-7b", "bravo-7b", "gamma-7b")
PREFIX = "sim"
PLANTED = {"skill": 0.8, "position_lock": 0.3, "noise": 0.2, "verbosity": 0.4, "anchoring": 0.3, "self_pref": 0.35,
           "invariance": 0.7, "sensitivity": 0.6}
#: the pointwise protocol of the grader rows: a binary 0/1 grade
GRADER_PROTOCOL = "pointwise@0-1"


@dataclass(frozen=True)
class SelftestRow:
    property: str
    planted: float
    recovered: float
    lo: float
    hi: float
    passed: bool
    judge: str
    how: str


def judges(seed: int) -> dict[str, str]:
    """Role -> simulated judge id (one planted property each)."""
    s = PLANTED["skill"]
    return {
        "plain": f"{PREFIX}:skill={s},seed={seed}",
        "position": f"{PREFIX}:skill={s},position_lock={PLANTED['position_lock']},seed={seed + 1}",
        "noise": f"{PREFIX}:skill={s},noise={PLANTED['noise']},seed={seed + 2}",
        "verbosity": f"{PREFIX}:skill={s},verbosity={PLANTED['verbosity']},seed={seed + 3}",
        "anchoring": f"{PREFIX}:skill={s},anchoring={PLANTED['anchoring']},seed={seed + 4}",
        "self": f"{PREFIX}:skill={s},self_pref={PLANTED['self_pref']},family=alpha,seed={seed + 5}",
    }


def grader_judges(seed: int) -> dict[str, str]:
    """Role -> simulated pointwise grader id: one with planted invariance and sensitivity, one with noise."""
    s = PLANTED["skill"]
    return {
        "grader": f"{PREFIX}:skill={s},invariance={PLANTED['invariance']},sensitivity={PLANTED['sensitivity']},"
                  f"seed={seed + 6}",
        "grader-noise": f"{PREFIX}:skill={s},noise={PLANTED['noise']},seed={seed + 7}",
    }


def write_points(root: Path, *, n_points: int, seed: int) -> Path:
    """``points.jsonl``: ``n_points`` items graded 0/1, each with a meaning-preserving case (a rule's
    whitespace change, same label) and a meaning-changing case (an accepted label flip)."""
    rng = np.random.default_rng(seed + 100)
    path = root / "points.jsonl"
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n_points):
            label = int(rng.random() < 0.5)
            base = {"question": f"Is claim {i:04d} supported?", "scale": [0, 1]}
            fh.write(json.dumps({**base, "item_id": f"g{i:04d}", "response": f"Claim {i:04d} holds.",
                                 "label": label}) + "\n")
            for kind, klass, origin, status, lab in (("format.whitespace", "preserving", "deterministic", "generated",
                                                      label),
                                                     ("label_flip", "changing", "model", "accepted", 1 - label)):
                fh.write(json.dumps({**base, "item_id": f"g{i:04d}~{kind}", "response": f"Claim {i:04d}  holds .",
                                     "label": lab, "meta": {"perturbation": {
                                         "source_id": f"g{i:04d}", "kind": kind, "class": klass, "origin": origin,
                                         "status": status, "source_label": label}}}) + "\n")
    return path


def build_grader_config(points: Path, *, seed: int) -> Any:
    from ..engine.config import RunConfig

    return RunConfig.model_validate({
        "name": "selftest-graders",
        "datasets": [{"name": "judges-verdict", "path": str(points), "dataset": "points", "scale": [0, 1]}],
        "judges": [{"id": j, "concurrency": 64} for j in grader_judges(seed).values()],
        "protocols": [GRADER_PROTOCOL], "repetitions": 2, "temperatures": [0.0], "cache": "off", "seed": seed,
    })


def write_datasets(root: Path, *, n_pairs: int, n_questions: int, seed: int) -> tuple[Path, Path]:
    """The generated sources: ``pairs.jsonl`` (equal-length responses) and ``systems.jsonl``."""
    rng = np.random.default_rng(seed)
    pairs = root / "pairs.jsonl"
    with pairs.open("w", encoding="utf-8") as fh:
        for i in range(n_pairs):
            fh.write(json.dumps({"item_id": f"p{i:04d}", "question": f"Question {i:04d}?",
                                 "response_a": f"Answer {i:04d}, version one.",
                                 "response_b": f"Answer {i:04d}, version two.",
                                 "label": "A" if rng.random() < 0.5 else "B"}) + "\n")
    systems = root / "systems.jsonl"
    with systems.open("w", encoding="utf-8") as fh:
        for i in range(n_questions):
            scores = rng.permutation(len(SYSTEMS)).tolist()
            fh.write(json.dumps({"item_id": f"q{i:04d}", "question": f"Task {i:04d}?",
                                 "responses": {s: f"Reply from {s} to task {i:04d}." for s in SYSTEMS},
                                 "scores": dict(zip(SYSTEMS, scores, strict=True))}) + "\n")
    return pairs, systems


def build_config(pairs: Path, systems: Path, *, seed: int) -> Any:
    from ..engine.config import RunConfig

    return RunConfig.model_validate({
        "name": "selftest",
        "datasets": [{"name": "jsonl", "path": str(pairs), "dataset": "pairs"},
                     # a probe's dataset is <base>+<probe> (pairs+padding); its base is the file's name, pairs
                     {"name": "jsonl", "path": str(pairs), "probe": "padding"},
                     {"name": "jsonl", "path": str(pairs), "probe": "anchoring"},
                     {"name": "multi-jsonl", "path": str(systems), "dataset": "systems"}],
        "judges": [{"id": j, "concurrency": 64} for j in judges(seed).values()],
        "protocols": ["direct"], "repetitions": 2, "temperatures": [0.0], "cache": "off", "seed": seed,
    })


def _row(prop: str, planted: float, est: float, lo: float, hi: float, judge: str, how: str) -> SelftestRow:
    ok = bool(np.isfinite(lo) and np.isfinite(hi) and lo - 1e-12 <= planted <= hi + 1e-12)
    return SelftestRow(prop, float(planted), float(est), float(lo), float(hi), ok, judge, how)


def _cell(df: pd.DataFrame, judge: str, dataset: str) -> pd.DataFrame:
    return df[(df["judge"] == judge) & (df["dataset"] == dataset)]


def _reliability_rows(j: pd.DataFrame, ids: dict[str, str], policy: FigurePolicy) -> list[SelftestRow]:
    from ..stats import reliability

    rel = reliability(j[j["dataset"] == "pairs"], policy=policy).set_index("judge")
    s, b, n = PLANTED["skill"], PLANTED["position_lock"], PLANTED["noise"]
    plain, pos, noi = rel.loc[ids["plain"]], rel.loc[ids["position"]], rel.loc[ids["noise"]]
    # noise: C = p^2 + (1-p)^2 with p = 1 - N/2  =>  N = 1 - sqrt(2C - 1) (decreasing in C)
    inv = (lambda c: 1.0 - math.sqrt(max(2.0 * c - 1.0, 0.0)))  # noqa: E731
    return [
        _row("accuracy", s + (1 - s) / 2, plain["A"], plain["A_boot_lo"], plain["A_boot_hi"], ids["plain"],
             "A = S + (1 - S)/2; pair-bootstrap interval"),
        _row("position bias", b, pos["phi"], pos["phi_lo"], pos["phi_hi"], ids["position"],
             "phi (position flip rate) = position_lock; Wilson over pairs"),
        _row("noise", n, inv(noi["C"]), inv(noi["C_hi"]), inv(noi["C_lo"]), ids["noise"],
             "N = 1 - sqrt(2C - 1) with R = 2; Wilson interval of C mapped through it"),
    ]


def _shift_row(prop: str, j: pd.DataFrame, items: list[Any], judge: str, probe_ds: str,
               policy: FigurePolicy) -> SelftestRow:
    from ..stats.stability import anchoring_shift

    side = {it.item_id: it.meta.get("probe_side") for it in items if it.dataset == probe_ds}
    keys = ["item_id", "order", "rep"]
    m = _cell(j, judge, probe_ds).merge(_cell(j, judge, "pairs"), on=keys, suffixes=("_p", "_b"))
    m = m[(m["order"] == Order.AB) & (m["rep"] == 0)]        # one verdict per item: the units are independent
    r = anchoring_shift(m["verdict_b"], m["verdict_p"], m["item_id"].map(side), m["item_id"],
                        n_boot=policy.n_bootstrap, seed=policy.seed, confidence=policy.confidence)
    planted = PLANTED["verbosity" if prop == "verbosity bias" else "anchoring"]
    return _row(prop, planted, r.susceptibility, r.susceptibility_lo, r.susceptibility_hi, judge,
                f"(s_probe - s_base)/(1 - s_base) on the {probe_ds.split('+')[1]} probe; item bootstrap")


def _selfpref_row(j: pd.DataFrame, items: list[Any], judge: str, conf: float) -> SelftestRow:
    from ..analyses.self_preference import self_preference_table as selfpref_table

    one = _cell(j, judge, "systems")
    one = one[(one["order"] == Order.AB) & (one["rep"] == 0)]
    t = selfpref_table(one, [it for it in items if it.dataset == "systems"], policy=FigurePolicy(confidence=conf))
    r = t.iloc[0]
    return _row("self-preference", PLANTED["self_pref"], r["harm"], r["harm_lo"], r["harm_hi"], judge,
                "harm = P(own | own wrong) - P(other | other wrong); Newcombe interval")


def _transitivity_row(j: pd.DataFrame, items: list[Any], judge: str, conf: float) -> SelftestRow:
    from ..analyses.transitivity import multi_rows
    from ..stats.transitivity import pair_outcomes, transitivity

    rows = multi_rows(_cell(j, judge, "systems"), items)
    res = transitivity(pair_outcomes(rows), confidence=conf)
    q = PLANTED["skill"] + (1 - PLANTED["skill"]) / 2
    return _row("non-transitive share", q * q * (1 - q) + (1 - q) ** 2 * q, res.share, res.low, res.high, judge,
                "each pair right w.p. q = 0.9: a triple cycles w.p. q^2(1-q) + (1-q)^2 q; Wilson over items")


def _grader_rows(judgments: pd.DataFrame, items: list[Any], seed: int, conf: float, n_boot: int) -> list[SelftestRow]:
    from ..analyses import AnalysisInput
    from ..analyses.grader_cells import grader_cells

    ids = grader_judges(seed)
    t = grader_cells(AnalysisInput(judgments, items=items, policy=FigurePolicy(confidence=conf, n_bootstrap=n_boot, seed=seed)))
    if t is None:
        raise RuntimeError("selftest: the grader run gave no grader cells")
    t = t.set_index("judge")
    g, noi = t.loc[ids["grader"]], t.loc[ids["grader-noise"]]
    inv = (lambda c: 1.0 - math.sqrt(max(2.0 * c - 1.0, 0.0)))  # noqa: E731
    return [
        _row("grader accuracy", PLANTED["skill"], g["accuracy"], g["accuracy_lo"], g["accuracy_hi"], ids["grader"],
             "binary grade right w.p. skill: accuracy = S; Wilson over source items"),
        _row("grader noise (consistency)", PLANTED["noise"], inv(noi["C"]), inv(noi["C_hi"]), inv(noi["C_lo"]),
             ids["grader-noise"], "N = 1 - sqrt(2C - 1) with R = 2; Wilson interval of C mapped through it"),
        _row("grader invariance", PLANTED["invariance"], g["invariance"], g["invariance_lo"], g["invariance_hi"],
             ids["grader"], "share of whitespace cases graded as their source; Wilson over source items"),
        _row("grader sensitivity", PLANTED["sensitivity"], g["sensitivity"], g["sensitivity_lo"],
             g["sensitivity_hi"], ids["grader"],
             "share of label flips graded right among sources graded right; Wilson"),
    ]


#: rows of :func:`evaluate` (the Bonferroni family): 7 pairwise rows and 4 grader rows
N_ROWS = 11


def evaluate(judgments: pd.DataFrame, items: list[Any], *, seed: int, n_boot: int = 2000,
             familywise: float = 0.05, grader_judgments: pd.DataFrame | None = None,
             grader_items: list[Any] | None = None) -> list[SelftestRow]:
    """Planted vs recovered rows from a finished selftest run (module docstring); the grader rows
    when the grader run's judgments and items are given."""
    ids = judges(seed)
    k = N_ROWS
    conf = 1.0 - familywise / k
    policy = FigurePolicy(confidence=conf, n_bootstrap=n_boot, seed=seed)
    rows = _reliability_rows(judgments, ids, policy)
    rows.append(_shift_row("verbosity bias", judgments, items, ids["verbosity"], "pairs+padding", policy))
    rows.append(_shift_row("anchoring", judgments, items, ids["anchoring"], "pairs+anchoring", policy))
    rows.append(_selfpref_row(judgments, items, ids["self"], conf))
    rows.append(_transitivity_row(judgments, items, ids["plain"], conf))
    if grader_judgments is not None:
        rows += _grader_rows(grader_judgments, list(grader_items or []), seed, conf, n_boot)
    return rows


def _run(config: Any, run_dir: Path, progress: bool) -> tuple[pd.DataFrame, list[Any]]:
    from ..engine import run_config
    from ..store import open_store

    summary = run_config(config, run_dir, progress=progress)
    if summary.stopped in ("interrupted", "terminated"):    # Ctrl-C / SIGTERM: stop, not a failure
        raise Stopped(signal.SIGINT if summary.stopped == "interrupted" else signal.SIGTERM)
    if summary.stopped:
        raise RuntimeError(f"selftest run stopped early: {summary.stopped}")
    with open_store(run_dir) as store:
        return store.judgments(), store.items()


def run_selftest(*, n_pairs: int = 400, n_questions: int = 300, n_points: int = 400, seed: int = 7,
                 n_boot: int = 2000, workdir: str | Path | None = None, progress: bool = False) -> list[SelftestRow]:
    """Generate the sources, run the grids (pairwise judges; pointwise graders) through the engine into
    run dirs, and evaluate."""
    with tempfile.TemporaryDirectory(prefix="verdictlab-selftest-") as tmp:
        root = Path(workdir) if workdir is not None else Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        pairs, systems = write_datasets(root, n_pairs=n_pairs, n_questions=n_questions, seed=seed)
        judgments, items = _run(build_config(pairs, systems, seed=seed), root / "run", progress)
        points = write_points(root, n_points=n_points, seed=seed)
        g_judgments, g_items = _run(build_grader_config(points, seed=seed), root / "graders", progress)
    return evaluate(judgments, items, seed=seed, n_boot=n_boot, grader_judgments=g_judgments, grader_items=g_items)


def rows_json(rows: list[SelftestRow]) -> dict[str, Any]:
    return {"rows": [{k: v for k, v in asdict(r).items()} for r in rows],
            "passed": all(r.passed for r in rows)}
