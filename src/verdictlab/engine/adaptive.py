"""The adaptive executor: spend judge calls only where they can still change a figure.

A run config asks for a precision instead of a fixed grid::

    repetitions: {max: 10}                       # R of the fixed design whose figures are estimated
    precision: {T: 0.03, confidence: 0.95}      # half-widths (C, phi, A and/or T); pilot_pairs: 100

The grid is expanded at R = max as usual; this executor then decides, per cell (judge × protocol ×
dataset × temperature × decoding), which of those trials to run (the statistics and why they keep the
estimands unbiased: :mod:`verdictlab.stats.adaptive` and docs/adaptive.md):

1. pairs in a seeded random order (:func:`~verdictlab.stats.adaptive.pair_rank`);
2. a pilot of ``pilot_pairs`` pairs at full R;
3. :func:`~verdictlab.stats.adaptive.plan_adaptive` fixes the number of pairs and the share of C pairs
   from the pilot's variances (stored in the run meta ``adaptive_design`` and reused on resume);
4. every other chosen pair's units run their repetitions one after another and stop when their mode
   (and, for C pairs, N) is decided (:func:`~verdictlab.stats.adaptive.unit_done`).

Every decision is a function of the run seed and of stored verdicts, so a resumed run makes the same
decisions: a unit's stored repetitions are replayed through the same rule before any new call.  Calls
go through the judge's caller like any other executor's (cache, limits, retries, budget, accounting).
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd

from ..core.design import Trial
from ..core.items import PairItem, PointItem
from ..core.judgment import Judgment
from ..errors import InputError
from ..stats.adaptive import (
    AdaptivePlan,
    c_pair_draw,
    c_pairs_from,
    check_targets,
    pair_rank,
    plan_adaptive,
    unit_done,
)
from ..store import RunStore
from .caller import RunControl
from .executor import BaseExecutor, Lane

Item = PairItem | PointItem
JudgeOneResult = Callable[[Trial, Lane], Awaitable[Judgment | None]]
META_KEY = "adaptive_design"

CellKey = tuple[str, str, str, float, str, str]       # judge, dataset, protocol, temperature, decoding, step
UnitKey = tuple[str, str]                              # item_id, order


@dataclass(frozen=True)
class AdaptiveDesign:
    """What the config asked for: target half-widths, confidence, R (= repetitions max), pilot size."""

    targets: dict[str, float]
    reps: int
    confidence: float = 0.95
    pilot_pairs: int = 100
    seed: int = 42

    def __post_init__(self) -> None:
        check_targets(self.targets)
        if self.reps < 2:
            raise InputError("an adaptive design needs repetitions max >= 2")
        if self.pilot_pairs < 10:
            raise InputError("precision.pilot_pairs must be at least 10")


@dataclass
class _Cell:
    key: CellKey
    units: dict[UnitKey, dict[int, Trial]] = field(default_factory=lambda: collections.defaultdict(dict))

    def pairs(self, seed: int) -> list[str]:
        items = sorted({item for item, _ in self.units})
        return sorted(items, key=lambda i: pair_rank(seed, self.key[1], i))

    def label(self) -> str:
        j, d, p, t, dec, step = self.key
        return f"{j} | {p} | {d} | t={t:g}" + (f" | {dec}" if dec != "free" else "") + (f" | {step}" if step else "")


def cell_key(t: Trial) -> CellKey:
    return (t.judge, t.dataset, t.protocol, float(t.temperature), str(getattr(t, "decoding", "free") or "free"),
            t.step or "")


class AdaptiveExecutor(BaseExecutor):
    """Runs a precision-driven design over the trials of each lane (see the module docstring).

    ``store`` gives the verdicts already stored (resume) and keeps the plans; ``items`` gives labels.
    ``judge_one`` must return the written :class:`~verdictlab.core.judgment.Judgment` (None when no row was
    written, e.g. the budget stopped the run)."""

    def __init__(self, design: AdaptiveDesign, *, store: RunStore, items: Mapping[tuple[str, str], Item],
                 all_trials: Sequence[Trial]) -> None:
        self.design = design
        self.store = store
        self.items = items
        self.all_trials = list(all_trials)
        stored = dict(store.get_meta(META_KEY, {}) or {})
        self.previous_designs: list[dict[str, Any]] = list(stored.get("previous_designs", []))
        #: the design of the last session when this config asks for another one (targets, confidence, R,
        #: pilot size or seed changed); its plans are then made again from the stored pilot
        self.replanned_from: dict[str, Any] | None = None
        self.plans: dict[str, dict[str, Any]] = stored.get("cells", {})
        if stored.get("design") is not None and stored["design"] != asdict(design):
            self.replanned_from = stored["design"]
            self.previous_designs.append(stored["design"])
            self.plans = {}
        self.n_not_needed = 0

    # -- what is stored --------------------------------------------------------------------------
    def _stored(self) -> dict[str, str | None]:
        frame = self.store.judgments()
        if frame.empty:
            return {}
        return {tid: (None if pd.isna(v) else str(v)) for tid, v in zip(frame["trial_id"], frame["verdict"],
                                                                         strict=True)}

    def _cells(self, judges: set[str]) -> dict[CellKey, _Cell]:
        cells: dict[CellKey, _Cell] = {}
        for t in self.all_trials:
            if t.judge not in judges:
                continue
            k = cell_key(t)
            cell = cells.setdefault(k, _Cell(k))
            cell.units[(t.item_id, t.order)][int(t.rep)] = t
        return cells

    # -- running -----------------------------------------------------------------------------------
    async def execute(self, lanes: Mapping[str, Lane], judge_one: Callable[..., Awaitable[Any]],
                      control: RunControl) -> None:
        stored = self._stored()
        todo_ids = {t.trial_id for lane in lanes.values() for t in lane.trials}
        cells = self._cells(set(lanes))
        sems = {j: asyncio.Semaphore(max(1, lane.caller.concurrency)) for j, lane in lanes.items()}
        runner = _CellRunner(self, lanes, sems, judge_one, control, stored, todo_ids)
        await asyncio.gather(*(runner.run(cell) for cell in cells.values()))
        for lane in lanes.values():
            lane.trials.clear()
        self._save()

    def plan_for(self, cell: _Cell, pilot: pd.DataFrame, pool: int) -> dict[str, Any]:
        label = cell.label()
        if label in self.plans:
            return self.plans[label]
        plan: AdaptivePlan = plan_adaptive(pilot, targets=self.design.targets, reps=self.design.reps,
                                           pool_pairs=pool, confidence=self.design.confidence)
        j, d, p, t, dec, step = cell.key
        record = {**asdict(plan), "pilot_pairs": int(pilot["item_id"].nunique()),
                  "cell": {"judge": j, "dataset": d, "protocol": p, "temperature": t, "decoding": dec,
                           "step": step},
                  "why": (f"pilot of {pilot['item_id'].nunique()} pairs at R = {self.design.reps}: "
                          f"{plan.n_pairs} pairs with C on a {plan.c_fraction:.0%} subsample reach "
                          + ", ".join(f"{k} ±{v}" for k, v in self.design.targets.items())
                          + ("" if plan.reachable else " -- not reachable with every pair; all pairs at full R"))}
        self.plans[label] = record
        self._save()
        return record

    def _save(self) -> None:
        meta: dict[str, Any] = {"design": asdict(self.design), "cells": self.plans}
        if self.previous_designs:
            meta["previous_designs"] = self.previous_designs
        self.store.set_meta(META_KEY, meta)

    def replan_note(self) -> str | None:
        """One line when this session's design differs from the stored one (None otherwise)."""
        if self.replanned_from is None:
            return None

        def show(d: dict[str, Any]) -> str:
            targets = ", ".join(f"{k} ±{v:g}" for k, v in dict(d.get("targets", {})).items())
            return (f"{targets} at {float(d.get('confidence', 0)):.0%}, R = {d.get('reps')}, "
                    f"pilot {d.get('pilot_pairs')} pairs, seed {d.get('seed')}")

        return (f"adaptive design changed since the last session ({show(self.replanned_from)} -> "
                f"{show(asdict(self.design))}): every cell was planned again from its stored pilot, "
                "and the trials the new plan needs were judged")


class _CellRunner:
    def __init__(self, ex: AdaptiveExecutor, lanes: Mapping[str, Lane], sems: Mapping[str, asyncio.Semaphore],
                 judge_one: Callable[..., Awaitable[Any]], control: RunControl, stored: dict[str, str | None],
                 todo_ids: set[str]) -> None:
        self.ex, self.lanes, self.sems = ex, lanes, sems
        self.judge_one, self.control = judge_one, control
        self.stored, self.todo_ids = stored, todo_ids

    async def unit(self, cell: _Cell, key: UnitKey, *, full: bool, consistency: bool) -> list[str | None] | None:
        """Run (or replay) one unit's repetitions until the rule says stop; None when stopped early."""
        reps = self.ex.design.reps
        trials = cell.units[key]
        lane = self.lanes[cell.key[0]]
        verdicts: list[str | None] = []
        for rep in range(reps):
            if not full and unit_done(verdicts, reps, consistency=consistency):
                break
            t = trials.get(rep)
            if t is None:
                break
            if t.trial_id in self.stored:
                verdicts.append(self.stored[t.trial_id])
                continue
            if self.control.stopped or lane.halted or t.trial_id not in self.todo_ids:
                return None
            async with self.sems[cell.key[0]]:
                row = await self.judge_one(t, lane)
            if row is None:
                return None
            verdicts.append(row.verdict)
        self.ex.n_not_needed += sum(1 for r, t in trials.items()
                                    if r >= len(verdicts) and t.trial_id not in self.stored)
        return verdicts

    async def run(self, cell: _Cell) -> None:
        design = self.ex.design
        pairs = cell.pairs(design.seed)
        n0 = min(design.pilot_pairs, len(pairs))
        pilot_pairs = pairs[:n0]
        orders = sorted({o for _, o in cell.units})
        pilot_keys = [(i, o) for i in pilot_pairs for o in orders if (i, o) in cell.units]
        results = await asyncio.gather(*(self.unit(cell, k, full=True, consistency=True) for k in pilot_keys))
        if any(r is None for r in results):
            return
        rows = []
        for (item, order), verdicts in zip(pilot_keys, results, strict=True):
            label = getattr(self.ex.items.get((cell.key[1], item)), "label", None)
            rows += [{"dataset": cell.key[1], "item_id": item, "order": order, "rep": r, "label": label,
                      "verdict": v} for r, v in enumerate(verdicts or [])]
        plan = self.ex.plan_for(cell, pd.DataFrame(rows), len(pairs))
        chosen = pairs[n0:int(plan["n_pairs"])]
        rest = [(i, o) for i in chosen for o in orders if (i, o) in cell.units]
        c_of = {i: c_pair_draw(design.seed, cell.key[1], i) < float(plan["c_fraction"]) for i in chosen}
        # what the design chose, in the store: the pilot pairs (full R), the C pairs (until N is decided),
        # the mode-only pairs (until the mode is decided) and the pairs not needed
        plan.update(pilot=list(pilot_pairs), c_pairs=sorted(i for i in chosen if c_of[i]),
                    mode_only_pairs=sorted(i for i in chosen if not c_of[i]),
                    n_not_needed_pairs=len(pairs) - int(plan["n_pairs"]))
        await asyncio.gather(*(self.unit(cell, k, full=False, consistency=c_of[k[0]]) for k in rest))
        skipped = [t for i in pairs[int(plan["n_pairs"]):] for o in orders for t in cell.units.get((i, o), {}).values()
                   if t.trial_id not in self.stored]
        self.ex.n_not_needed += len(skipped)


def c_pairs_of(store: RunStore) -> dict[str, set[tuple[str, str]]] | None:
    """The C pairs of every cell of an adaptive run (see :func:`verdictlab.stats.adaptive.c_pairs_from`)."""
    return c_pairs_from(store.get_meta(META_KEY), store.judgments())


__all__ = ["META_KEY", "AdaptiveDesign", "AdaptiveExecutor", "c_pairs_of", "cell_key"]
