"""Preparing a run: load and validate every dataset, build the protocols, expand the trial grid,
and estimate what the run would cost (:class:`~verdictlab.engine.summary.Plan`)."""

from __future__ import annotations

import collections
import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..core.design import Trial, expand_grid
from ..core.items import PairItem, PointItem
from ..judges.base import JudgeAPI
from ..protocols.base import Protocol
from .caller import estimate_tokens
from .config import RunConfig
from .limits import PriceTable, default_price_table
from .summary import EngineError, JudgePlan, Plan

Item = PairItem | PointItem


@dataclass
class PreparedRun:
    config: RunConfig
    items: dict[tuple[str, str], Item]
    loads: list[Any]                       # DatasetLoad per dataset
    protocols: dict[str, Protocol]
    trials: list[Trial]
    trials_by_judge: dict[str, int]


def _with_paraphraser(opts: dict[str, Any], *, offline: bool = False) -> dict[str, Any]:
    """A ``paraphrase`` probe with a named paraphraser judge gets the engine's caller-backed function
    (datasets never call a judge themselves); ``offline`` (a plan): the questions as they are, so a plan
    calls nothing and still counts every item."""
    probe = opts.get("probe")
    name = probe.get("name") if isinstance(probe, Mapping) else probe
    if name != "paraphrase":
        return opts
    from .paraphrase import paraphrase_with_judge

    fn = _unchanged_questions if offline else paraphrase_with_judge
    return {**opts, "probe_options": {**dict(opts.get("probe_options") or {}), "paraphrase_fn": fn}}


def _unchanged_questions(judge_id: str, questions: Mapping[str, str]) -> dict[str, str]:
    """A plan's stand-in for the paraphraser judge: the run asks it; the plan only counts."""
    return dict(questions)


def load_items(config: RunConfig, *, offline: bool = False) -> tuple[dict[tuple[str, str], Item], list[Any]]:
    """Load and validate every dataset of ``config`` (all of them, before anything is judged);
    ``offline``: for a plan, no judge is called (a paraphraser judge included)."""
    from ..datasets import get_loader, load_dataset

    items: dict[tuple[str, str], Item] = {}
    loads = []
    seen: dict[str, str] = {}
    for i, spec in enumerate(config.datasets):
        opts = dict(spec.options)
        try:
            loader = get_loader(spec.name)
        except KeyError as exc:
            raise EngineError(f"{config.source or '<config>'}: field 'datasets.{i}.name': {exc.args[0]}") from None
        probe_opts = opts.get("probe_options")
        if isinstance(probe_opts, Mapping) and isinstance(probe_opts.get("file"), str):   # beside the config
            opts["probe_options"] = {**probe_opts, "file": config.resolved_file(probe_opts["file"])}
        if "seed" not in opts:
            try:
                params = inspect.signature(loader).parameters
                if "seed" in params or any(p.kind is p.VAR_KEYWORD for p in params.values()):
                    opts["seed"] = config.seed
            except (TypeError, ValueError):
                pass
        load = load_dataset(spec.name, path=config.resolved_path(spec), **_with_paraphraser(opts, offline=offline))
        if load.name in seen:
            raise EngineError(f"{config.source or '<config>'}: field 'datasets.{i}': dataset name "
                              f"{load.name!r} is also produced by datasets entry {seen[load.name]}; "
                              "give one a different name with 'dataset: NAME' in the entry (on a probe entry "
                              "it names the probe's dataset)")
        seen[load.name] = str(i)
        if not load.items:
            raise EngineError(f"dataset {load.name!r} ({load.source}) has no items")
        for it in load.items:
            if it.dataset != load.name:
                it = it.model_copy(update={"dataset": load.name})
            items[(load.name, it.item_id)] = it
        loads.append(load)
    return items, loads


def build_trials(config: RunConfig, items: Mapping[tuple[str, str], Item],
                 protocols: Mapping[str, Protocol]) -> list[Trial]:
    """Expand the grid.  Multi-step protocols get one trial per step; datasets of pointwise items are
    shown in one order only (order is meaningless for them).

    The order (:func:`prompt_order`): per judge and dataset, one item in one order at a time, through
    every protocol, decoding and temperature, repetitions back to back.  Trials that show the same
    prompt are neighbours, so a local judge reads a prompt once for all its decodings, temperatures
    and repetitions, and the next protocol only its own instruction (protocols share everything
    before it); and a run stopped early (budget, Ctrl-C) has the first items in every cell instead
    of some cells complete and others empty."""
    by_dataset: dict[str, list[Item]] = collections.defaultdict(list)
    for (ds, _), it in items.items():
        by_dataset[ds].append(it)
    trials: list[Trial] = []
    for judge in config.judge_ids():
        for ds, ds_items in by_dataset.items():
            pointwise = all(isinstance(it, PointItem) for it in ds_items)
            orders = list(config.orders[:1]) if pointwise else list(config.orders)
            for pid in config.protocols:
                proto = protocols[pid]
                groups: dict[tuple[str, ...], list[str]] = collections.defaultdict(list)
                for it in ds_items:
                    groups[tuple(proto.steps(it)) or ("",)].append(it.item_id)
                for steps, ids in groups.items():
                    trials.extend(expand_grid(judges=[judge], items_by_dataset={ds: ids}, protocols=[pid],
                                              orders=orders, temperatures=config.temperatures,
                                              repetitions=config.repetitions,
                                              steps_by_protocol={pid: steps},
                                              decodings=tuple(config.decoding)))
    return prompt_order(trials, config, items)


def prompt_order(trials: list[Trial], config: RunConfig, items: Mapping[tuple[str, str], Item]) -> list[Trial]:
    """``trials`` sorted by judge, dataset, item, order, protocol, decoding, temperature (each in the
    config's order); the sort is stable, so steps and repetitions keep their order within."""
    judges = {j: i for i, j in enumerate(config.judge_ids())}
    datasets: dict[str, int] = {}
    positions: dict[tuple[str, str], int] = {}
    for i, key in enumerate(items):
        datasets.setdefault(key[0], len(datasets))
        positions[key] = i
    orders: dict[str, int] = {o: i for i, o in enumerate(config.orders)}
    protos = {p: i for i, p in enumerate(config.protocols)}
    decodings: dict[str, int] = {d: i for i, d in enumerate(config.decoding)}
    temperatures = {float(t): i for i, t in enumerate(config.temperatures)}
    return sorted(trials, key=lambda t: (judges[t.judge], datasets[t.dataset], positions[(t.dataset, t.item_id)],
                                         orders[t.order], protos[t.protocol], decodings[t.decoding],
                                         temperatures[t.temperature]))


def prepare_run(config: RunConfig, *, offline: bool = False) -> PreparedRun:
    """Load the datasets, build the protocols and the trial grid; ``offline`` (a plan): call no judge."""
    from ..protocols import get_protocol

    items, loads = load_items(config, offline=offline)
    protocols: dict[str, Protocol] = {}
    for i, pid in enumerate(config.protocols):
        base, arg = config.resolve_protocol_arg(pid)   # ID@ARG: a file ARG resolves next to the config
        try:
            if arg is None:
                protocols[pid] = get_protocol(pid)
            else:
                protocols[pid] = get_protocol(base, template_path=arg)
                protocols[pid].id = pid                # the stored protocol id stays as written
        except (KeyError, ValueError, OSError) as exc:
            raise EngineError(f"{config.source or '<config>'}: field 'protocols.{i}': "
                              f"{exc.args[0] if exc.args else exc}") from None
    # fail early if a protocol cannot render a dataset's items
    firsts: dict[str, Item] = {}
    for (ds, _), it in items.items():
        firsts.setdefault(ds, it)
    for pid, proto in protocols.items():
        for ds, it in firsts.items():
            try:
                for step in proto.steps(it) or ("",):
                    proto.messages(it, config.orders[0], step=step)
            except Exception as exc:
                raise EngineError(f"protocol {pid!r} cannot present items of dataset {ds!r} "
                                  f"({type(exc).__name__}: {exc})") from None
    trials = build_trials(config, items, protocols)
    counts = collections.Counter(t.judge for t in trials)
    return PreparedRun(config, items, loads, protocols, trials, dict(counts))


def _with_duration(plan: JudgePlan, spec: Any, judge: JudgeAPI) -> JudgePlan:
    """``plan`` with its time under the judge's concurrency and rate limits (engine/plan_duration.py)."""
    from dataclasses import replace

    from .plan_duration import estimate_duration

    concurrency = min(spec.concurrency, judge.max_concurrency or spec.concurrency)
    latency = judge.assumed_latency_s
    limits = {"latency_s": latency, "concurrency": concurrency, "requests_per_minute": spec.requests_per_minute,
              "tokens_per_minute": spec.tokens_per_minute}
    if spec.batch:
        return replace(plan, est_duration_s=None, duration_bound="batch", **limits)
    est = estimate_duration(plan.n_remaining, plan.est_tokens_in + plan.est_tokens_out_max, **limits)
    return replace(plan, est_duration_s=est.seconds, duration_bound=est.bound, **limits)


def make_plan(prepared: PreparedRun, done: set[str], judges: Mapping[str, JudgeAPI],
              prices: PriceTable | None = None) -> Plan:
    prices = prices or default_price_table()
    cfg = prepared.config
    specs = {j.id: j for j in cfg.judges}
    per: dict[str, dict[str, int]] = {j: {"n": 0, "done": 0, "tin": 0, "tout": 0} for j in cfg.judge_ids()}
    chars_cache: dict[tuple[str, str, str, str, str], int] = {}
    for t in prepared.trials:
        acc = per[t.judge]
        acc["n"] += 1
        if t.trial_id in done:
            acc["done"] += 1
            continue
        key = (t.dataset, t.item_id, t.protocol, t.order, t.step)
        if key not in chars_cache:
            msgs = prepared.protocols[t.protocol].messages(prepared.items[(t.dataset, t.item_id)], t.order,
                                                           step=t.step)
            chars_cache[key] = estimate_tokens(msgs)
        acc["tin"] += chars_cache[key]
        acc["tout"] += int(specs[t.judge].params.get("max_tokens") or prepared.protocols[t.protocol].max_tokens())
    plans = []
    for jid, acc in per.items():
        judge = judges[jid]
        cost = judge.cost(prices, acc["tin"], acc["tout"])
        plans.append(_with_duration(JudgePlan(
            jid, acc["n"], acc["done"], acc["n"] - acc["done"], acc["tin"], acc["tout"], cost,
            judge.cost(prices, acc["tin"], acc["tout"], batch=True)), specs[jid], judge))
    n = len(prepared.trials)
    n_done = sum(p.n_done for p in plans)
    return Plan(n_trials=n, n_done=n_done, n_remaining=n - n_done, judges=plans)
