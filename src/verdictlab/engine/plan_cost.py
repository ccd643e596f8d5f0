"""The adaptive design in ``verdictlab run --plan``: expected calls, tokens and dollars.

The fixed design's calls, tokens and dollars come from :func:`~verdictlab.engine.prepare.make_plan`
(and at batch prices, the price table's ``batch_rate``).  For a config with ``precision:``, the
adaptive design's expected calls come from the planning formula
(:func:`~verdictlab.stats.adaptive.plan_adaptive`), which needs a pilot per cell: ``pilot_pairs`` pairs
at full R, exactly the pilot the adaptive executor runs first (same pairs, in the same seeded order).
Without a stored pilot the plan says so and what the pilot costs; ``run --plan --pilot`` runs only the
pilot trials into the run dir (the adaptive run then reuses them: nothing is judged twice) and plans
from them.  Tokens per call are the fixed plan's per-trial estimate (prompt chars / 4; the output
token ceiling), so dollars are upper-bound estimates like the fixed plan's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from ..core.design import Trial
from ..judges.base import JudgeAPI
from ..stats.adaptive import plan_adaptive
from .adaptive import _Cell, cell_key
from .limits import PriceTable
from .prepare import PreparedRun, make_plan


def _cells(trials: list[Trial]) -> dict[Any, _Cell]:
    cells: dict[Any, _Cell] = {}
    for t in trials:
        k = cell_key(t)
        cells.setdefault(k, _Cell(k)).units[(t.item_id, t.order)][int(t.rep)] = t
    return cells


def pilot_trials(prepared: PreparedRun) -> list[Trial]:
    """The trials of the adaptive design's pilot: per cell, the first ``pilot_pairs`` pairs in the
    seeded pair order, both orders, every repetition."""
    cfg = prepared.config
    assert cfg.precision is not None
    out: list[Trial] = []
    for cell in _cells(prepared.trials).values():
        keep = set(cell.pairs(cfg.seed)[:cfg.precision.pilot_pairs])
        out += [t for (item, _), reps in cell.units.items() if item in keep for t in reps.values()]
    return out


def _money(cost: float | None) -> str:
    return "unknown" if cost is None else f"${cost:.4f}"


def adaptive_notes(prepared: PreparedRun, stored: pd.DataFrame | None, judges: Mapping[str, JudgeAPI],
                   prices: PriceTable) -> list[str]:
    """Plan lines of the adaptive design (empty when the config has no ``precision:``)."""
    cfg = prepared.config
    if cfg.precision is None:
        return []
    full = make_plan(prepared, set(), judges, prices)
    per_call = {j.judge: ((j.est_tokens_in / j.n_trials, j.est_tokens_out_max / j.n_trials) if j.n_trials
                          else (0.0, 0.0)) for j in full.judges}
    targets = cfg.precision.targets()
    reps = cfg.repetitions
    out = ["adaptive design (" + ", ".join(f"{k} ±{v}" for k, v in targets.items())
           + f" at {cfg.precision.confidence:.0%}; R = {reps}; pilot {cfg.precision.pilot_pairs} pairs per cell):"]
    tot_calls, tot_in, tot_out = 0.0, 0.0, 0.0
    costs: list[float | None] = []
    batch_costs: list[float | None] = []
    missing = 0
    for cell in _cells(prepared.trials).values():
        n_pool = len({item for item, _ in cell.units})
        pilot = _stored_pilot(cell, stored, cfg.seed, cfg.precision.pilot_pairs)
        if pilot is None:
            missing += 1
            n0 = min(cfg.precision.pilot_pairs, n_pool)
            out.append(f"  {cell.label()}: needs a pilot ({n0} pairs at full R: "
                       f"{sum(len(r) for (i, _), r in cell.units.items() if i in set(cell.pairs(cfg.seed)[:n0])):,} "
                       "calls) -- `verdictlab run CONFIG --plan --pilot` runs just the pilot (the run reuses it)")
            continue
        plan = plan_adaptive(pilot, targets=targets, reps=reps, pool_pairs=n_pool,
                             confidence=cfg.precision.confidence)
        judge = judges[cell.key[0]]
        tin, tout = (plan.expected_calls * x for x in per_call[cell.key[0]])
        tot_calls, tot_in, tot_out = tot_calls + plan.expected_calls, tot_in + tin, tot_out + tout
        costs.append(judge.cost(prices, int(tin), int(tout)))
        batch_costs.append(judge.cost(prices, int(tin), int(tout), batch=True))
        out.append(f"  {cell.label()}: {plan.n_pairs} of {n_pool} pairs, C on {plan.c_fraction:.0%}: "
                   f"~{plan.expected_calls:,.0f} calls expected (fixed R-rep design at this precision: "
                   f"{plan.fixed_calls:,}; whole grid: {sum(len(r) for r in cell.units.values()):,})"
                   + ("" if plan.reachable else " -- target not reachable with every pair"))
    if missing < len(_cells(prepared.trials)):
        cost = None if any(c is None for c in costs) else sum(c or 0.0 for c in costs)
        bcost = None if any(c is None for c in batch_costs) else sum(c or 0.0 for c in batch_costs)
        out.append(f"  expected (planned cells): ~{tot_calls:,.0f} calls, ~{tot_in:,.0f} prompt tokens, "
                   f"<= {tot_out:,.0f} output tokens, cost <= {_money(cost)} (at batch prices {_money(bcost)})")
    return out


def _stored_pilot(cell: _Cell, stored: pd.DataFrame | None, seed: int, n_pilot: int) -> pd.DataFrame | None:
    """The cell's pilot judgments when every pilot trial is stored (at least 10 pairs), else None."""
    if stored is None or stored.empty:
        return None
    keep = set(cell.pairs(seed)[:n_pilot])
    ids = {t.trial_id for (item, _), reps in cell.units.items() if item in keep for t in reps.values()}
    got = stored[stored["trial_id"].isin(ids)]
    if len(keep) < 10 or len(got) < len(ids):
        return None
    return got


__all__ = ["adaptive_notes", "pilot_trials"]
