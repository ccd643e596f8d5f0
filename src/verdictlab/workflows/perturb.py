"""``verdictlab perturb``: a perturbation suite written into a run, ready to curate and to grade.

:func:`perturb_dataset` loads a dataset of point items, makes the cases of the kinds asked for
(:func:`verdictlab.datasets.perturb.perturb_items`; the model-written ones through the engine's caller,
:func:`verdictlab.engine.writing.write_with_judge`, with the run store as its attempt log and response
cache and an optional budget), and writes

* into the run directory's store: the sources and their cases as the run's items, one attempt row per
  call made, the cached replies (so writing the suite again reads them instead of paying again) and an
  entry of the meta list ``perturbation_suites`` (the audit trail: kinds, writer and validator, seed,
  variants, temperature, similarity measure and threshold, templates, the count of cases kept and
  dropped per kind and reason, every dropped case and why, the calls, tokens and dollars spent);
* the suite file (JSON Lines, the ``perturbations`` loader; default ``RUN/suite-<dataset>.jsonl``): every
  item of that dataset the run holds, curated cases as curated -- the dataset a run config grades.

Writing a suite again into the same run adds to it: a case already there is kept as it is when it is
the same, or the same before a person curated it; a case the run judged or a person curated is never
replaced by a different text (an :class:`~verdictlab.core.items.ItemError` says which).
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.curation import curation_events, keep_curated
from ..core.items import ItemError, PointItem, perturbation_of
from ..datasets import load_dataset
from ..datasets.near_duplicates import DEFAULT_THRESHOLD, MEASURE
from ..datasets.perturb import PerturbationSuite, perturb_items
from ..datasets.perturb_model import ModelOptions
from ..datasets.perturb_verbosity import DEFAULT_PAD_CHARS
from ..datasets.perturbation_suite import suite_lines
from ..engine.limits import Budget
from ..engine.run import RunLock
from ..engine.writer import Writer
from ..engine.writing import write_with_judge
from ..protocols.writing import WritingPrompt, Written
from ..store import RunStore

__all__ = ["PerturbResult", "SpendTotals", "perturb_dataset", "suite_file_name"]


@dataclass
class SpendTotals:
    """Calls, tokens, dollars, retries and rate-limited calls of the writing calls (the caller adds to it)."""

    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    retries: int = 0
    rate_limited: int = 0


@dataclass
class PerturbResult:
    """What :func:`perturb_dataset` wrote: the run and the suite file, the dataset, sources and cases in
    the file, counts per kind (kept and dropped per reason, for this call's cases), the cases a person had
    curated that were kept as curated, the spend and whether the budget stopped the calls."""

    run_dir: Path
    out: Path
    dataset: str
    n_sources: int
    n_cases: int
    counts: dict[str, dict[str, int]]
    n_kept_curated: int = 0
    spend: dict[str, Any] = field(default_factory=dict)
    templates: dict[str, str] = field(default_factory=dict)
    stopped: str | None = None


def suite_file_name(dataset: str) -> str:
    """``suite-<dataset>.jsonl`` with every character outside letters, digits, ``.``, ``_`` and ``-``
    made ``_``."""
    return f"suite-{re.sub(r'[^A-Za-z0-9._-]', '_', dataset)[:100]}.jsonl"


def _merge(store: RunStore, suite: PerturbationSuite) -> tuple[list[PointItem], int]:
    """The items to store (stored curated cases kept) and how many curated cases were kept."""
    out, kept_curated, conflicts = [], 0, []
    for it in suite.items:
        stored = store.item_record(it.dataset, it.item_id)
        if stored is None:
            out.append(it)
            continue
        kept = keep_curated(it, stored)
        if isinstance(kept, PointItem):
            kept_curated += kept is not it and bool(curation_events(kept))
            out.append(kept)
        elif curation_events(stored) or store.item_judgment_count(it.dataset, it.item_id):
            conflicts.append(it.item_id)
        else:
            out.append(it)
    if conflicts:
        raise ItemError(f"{len(conflicts)} item(s) of {store.run_dir} were judged or curated and would now get "
                        f"another text (first: {suite.dataset}/{conflicts[0]}); write this suite into another "
                        "run directory", path=str(store.path))
    return out, kept_curated


def _spend(calls: dict[str, Written], totals: SpendTotals, budget: Budget) -> dict[str, Any]:
    by_step: dict[str, dict[str, Any]] = {}
    for key, w in calls.items():
        step = key.rsplit(":", 1)[-1]
        s = by_step.setdefault(step, {"prompts": 0, "attempts": 0, "cache_hits": 0, "failed": 0})
        s["prompts"] += 1
        s["attempts"] += w.attempts
        s["cache_hits"] += int(w.cache_hit)
        s["failed"] += int(w.text is None)
    return {"calls": totals.calls, "tokens_in": totals.tokens_in, "tokens_out": totals.tokens_out,
            "cost_usd": round(totals.cost_usd, 6), "retries": totals.retries, "rate_limited": totals.rate_limited,
            "by_step": by_step, "unpriced_calls": getattr(budget, "unpriced_calls", 0)}


def perturb_dataset(loader: str, *, kinds: list[str], run_dir: str | Path, path: str | None = None,
                    options: dict[str, Any] | None = None, out: str | Path | None = None, writer: str | None = None,
                    validator: str | None = None, seed: int = 0, variants: int = 1, temperature: float = 0.7,
                    similarity: float = DEFAULT_THRESHOLD, pad_chars: int = DEFAULT_PAD_CHARS, cache: bool = True,
                    max_calls: int | None = None, max_usd: float | None = None,
                    template: str | None = None) -> PerturbResult:
    """Write the suite of ``kinds`` over the dataset ``loader`` (``path``, loader ``options``) into
    ``run_dir`` and its suite file (module docstring).  ``writer`` / ``validator`` (judge ids; the
    validator defaults to the writer) write and check the model-written kinds; ``template`` replaces the
    package wording with a YAML file of the same shape."""
    load = load_dataset(loader, path=path, **dict(options or {}))
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    with RunLock(run_dir), RunStore(run_dir) as store:
        log = Writer(store)
        totals = SpendTotals()
        budget = Budget(max_calls, None, max_usd)

        def write(judge_id: str, prompts: Mapping[str, WritingPrompt]) -> dict[str, Written]:
            try:
                return write_with_judge(judge_id, prompts, log=log, cache=store if cache else None, budget=budget,
                                        spend=totals)
            finally:
                log.flush()

        model = None if writer is None else ModelOptions(
            writer=writer, validator=validator, variants=variants, temperature=temperature, threshold=similarity,
            template_path=template)
        try:
            suite = perturb_items(load.items, kinds, seed=seed, write=write, model=model, pad_chars=pad_chars)
        except ItemError:
            raise
        except ValueError as exc:     # pair items, several datasets, a template file that cannot be used
            raise ItemError(str(exc), path=load.source) from None
        items, kept_curated = _merge(store, suite)
        store.write_items(items)
        every = [it for it in store.items(suite.dataset) if isinstance(it, PointItem)]
        target = Path(out) if out is not None else run_dir / suite_file_name(suite.dataset)
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("w", encoding="utf-8") as fh:
            fh.writelines(suite_lines(_ordered(every)))
        spend = _spend(suite.calls, totals, budget)
        stopped = f"budget: {budget.exhausted_reason}" if budget.exhausted_reason else None
        entry = {"at": time.time(), "dataset": suite.dataset, "loader": loader, "source": load.source,
                 "kinds": list(kinds), "seed": seed, "writer": writer, "validator": validator or writer,
                 "variants": variants, "temperature": temperature,
                 "similarity": {"measure": MEASURE, "threshold": similarity}, "pad_chars": pad_chars,
                 "templates": suite.templates, "counts": suite.counts(), "n_sources": len(suite.sources),
                 "n_cases_written": len(suite.cases), "n_kept_curated": kept_curated,
                 "dropped": [d.as_dict() for d in suite.dropped], "spend": spend, "file": str(target),
                 "cache": cache, "stopped": stopped}
        store.set_meta("perturbation_suites", [*(store.get_meta("perturbation_suites", []) or []), entry])
    n_cases = sum(perturbation_of(it) is not None for it in every)
    return PerturbResult(run_dir, target, suite.dataset, len(every) - n_cases, n_cases, suite.counts(), kept_curated,
                         spend, suite.templates, stopped)


def _ordered(items: list[PointItem]) -> list[PointItem]:
    """Each source followed by its cases (cases by id), sources in the order stored."""
    cases: dict[str, list[PointItem]] = {}
    sources = []
    for it in items:
        p = perturbation_of(it)
        if p is None:
            sources.append(it)
        else:
            cases.setdefault(p.source_id, []).append(it)
    return [x for s in sources for x in (s, *sorted(cases.get(s.item_id, []), key=lambda c: c.item_id))]
