"""The debate's call path: two judges debate a pair over rounds, every call through the caller,
every round stored and every fallback counted.

The wording and parser of a turn are the debate protocol (:mod:`verdictlab.protocols.debate`); the
figures of the stored debates are an analysis (:func:`verdictlab.analyses.debate.debate_summary`).

Rounds
------
Round 1: each of the two judges answers the pair independently.  Rounds 2..N (rebuttals): each judge
sees the other judge's latest argument and verdict and answers again, keeping or changing its verdict.
The debate stops early once both judges name the same winner (``stop_on_agreement``) or after
``rounds`` rounds.

Stored rows (run store, ``protocol = "debate"``)
------------------------------------------------
* one row per judge and round: ``judge`` = the debater, ``step = "round-k"``, with its raw output,
  parse status and verdict (canonical terms, like every row);
* one *final* row per (pair, order, rep): ``judge = "debate(J1 | J2)"``, ``step = ""``.  Its verdict is
  the verdict both judges hold after the last round; if they still disagree, ``final_rule`` decides:
  ``"tie"`` (default) or ``"first-judge"``.  Its ``parse_status`` is ``fallback`` (with
  ``fallback_rule = "depends-on-fallback"``) when a verdict it rests on came from a fallback, so the
  number of finals that depend on a fallback is a count, not a guess.

Parse failures (explicit, configurable, counted)
------------------------------------------------
``fallback="none"`` (default): a judge whose reply cannot be parsed has no verdict that round (its
opponent's argument stands alone; a final without both verdicts is ``failed`` unless the other rule
applies).  ``"previous"``: the judge keeps its previous round's verdict (none in round 1).
``"paper"``: round 1 falls back to the first-shown response and later rounds to the previous
verdict -- the rule of the audited implementation, offered so its effect can be measured.
Every fallback row has ``parse_status = "fallback"`` and a named ``fallback_rule``.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.design import trial_id
from ..core.items import PairItem
from ..core.judgment import Judgment, from_shown
from ..core.vocab import ORDERS, ParseStatus
from ..errors import InputError
from ..judges.base import JudgeAPI, JudgeRequest
from ..protocols.base import ParseResult
from ..protocols.debate import PROTOCOL_ID, DebateProtocol
from .caller import CallResult, JudgeCaller, RunControl, cache_allows
from .config import ConfigError, JudgeSpec, load_config
from .limits import Budget
from .writer import Writer

FALLBACKS: tuple[str, ...] = ("none", "previous", "paper")
FINAL_RULES: tuple[str, ...] = ("tie", "first-judge")


@dataclass(frozen=True)
class DebateSettings:
    rounds: int = 3
    fallback: str = "none"
    final_rule: str = "tie"
    stop_on_agreement: bool = True
    temperature: float = 0.0
    orders: tuple[str, ...] = ORDERS
    repetitions: int = 1
    max_retries: int = 3
    concurrency: int = 4
    backoff_base_s: float = 0.05
    backoff_cap_s: float = 2.0
    timeout_s: float = 120.0
    cache: str = "off"        # "auto": serve temperature-0 turns from the run's response cache

    def __post_init__(self) -> None:
        if self.rounds < 1:
            raise InputError("rounds must be >= 1")
        if self.fallback not in FALLBACKS:
            raise InputError(f"fallback must be one of {FALLBACKS}, got {self.fallback!r}")
        if self.cache not in ("off", "auto", "on"):
            raise InputError(f"cache must be off, auto or on, got {self.cache!r}")
        if self.final_rule not in FINAL_RULES:
            raise InputError(f"final_rule must be one of {FINAL_RULES}, got {self.final_rule!r}")


def debate_judge_id(judges: Sequence[str]) -> str:
    return f"debate({judges[0]} | {judges[1]})"


def _debaters(judges: Sequence[JudgeAPI], store: Any, s: DebateSettings, writer: Any,
              budget: Budget | None) -> list[JudgeCaller]:
    """One :class:`~verdictlab.engine.caller.JudgeCaller` per debater: every debate call goes through
    the caller (cache, limits, retries, timeout, budget, attempts, scrubbing), like a grid run's."""
    budget = budget or Budget()
    control = RunControl()
    return [JudgeCaller(j, JudgeSpec(id=j.judge_id, concurrency=max(1, s.concurrency), max_retries=s.max_retries,
                                     backoff_base_s=s.backoff_base_s, backoff_cap_s=s.backoff_cap_s,
                                     timeout_s=s.timeout_s),
                        budget=budget, log=writer, cache=store, control=control)
            for j in judges]


def _turn_row(item: PairItem, order: str, rep: int, s: DebateSettings, judge_id: str, step: str,
              result: CallResult | None, turn: tuple[str | None, str, str | None, str], prompt_hash: str) -> Judgment:
    verdict, status, rule, detail = turn
    resp = result.response if result is not None else None
    return from_shown(shown_verdict=verdict, order=order, judge=judge_id, dataset=item.dataset, item_id=item.item_id,
                      protocol=PROTOCOL_ID, temperature=s.temperature, rep=rep, step=step, label=item.label,
                      category=item.category, system_a=item.system_a, system_b=item.system_b, raw_output=resp.text if resp is not None else None,
                      parse_status=status, parse_detail=detail, fallback_rule=rule,
                      latency_s=resp.latency_s if resp is not None else None,
                      tokens_in=resp.tokens_in if resp is not None else None,
                      tokens_out=resp.tokens_out if resp is not None else None,
                      cost_usd=result.cost_usd if result is not None and resp is not None else None,
                      attempts=result.attempts if result is not None else 0,
                      error=result.error if result is not None else "not called: the run stopped (budget)",
                      cache_hit=int(bool(result and result.cache_hit)), prompt_hash=prompt_hash)


def _read_turn(protocol: DebateProtocol, text: str | None, k: int, previous: str | None,
               s: DebateSettings) -> tuple[tuple[str | None, str, str | None, str], bool]:
    """((shown verdict, parse status, fallback rule, detail), whether a fallback gave the verdict)."""
    parsed = (protocol.parse(text) if text is not None
              else ParseResult(None, ParseStatus.FAILED.value, "no answer: the call failed"))
    verdict, status, rule, detail = parsed.verdict, parsed.status, parsed.fallback_rule, parsed.detail
    if verdict is None and s.fallback != "none":
        if k == 1 and s.fallback == "paper":
            verdict, rule = "A", "first-shown"
        elif k > 1 and previous is not None:
            verdict, rule = previous, "previous-round"
        if verdict is not None:
            detail = f"{detail}; fallback: {rule}"
            return (verdict, ParseStatus.FALLBACK.value, rule, detail), True
    return (verdict, status, rule, detail), False


async def _ask(caller: JudgeCaller, request: JudgeRequest, tid: str, rep: int, cache: str) -> CallResult | None:
    use = cache_allows(cache, request.temperature)
    return await caller.call(request, trial_id=tid, cache_key=caller.cache_key(request, rep) if use else None)


def _final(verdicts: list[str | None], from_fallback: list[bool], s: DebateSettings) -> tuple[str | None, str, bool]:
    """(final shown verdict, how it was reached, whether it depends on a fallback verdict)."""
    v0, v1 = verdicts
    if v0 is not None and v0 == v1:
        final, how = v0, "agreement"
    elif v0 is not None and v1 is not None:
        final, how = ("tie", "disagreement -> tie") if s.final_rule == "tie" else (v0, "disagreement -> first judge")
    elif s.final_rule == "first-judge" and v0 is not None:
        final, how = v0, "second judge has no verdict -> first judge"
    else:
        final, how = None, "a judge has no verdict"
    # the final rests on both last verdicts, except when the first judge's verdict decides alone
    rests_on_second = how == "agreement" or (s.final_rule == "tie" and v1 is not None)
    depends = final is not None and (from_fallback[0] or (from_fallback[1] and rests_on_second))
    return final, how, depends


async def _debate_one(item: PairItem, order: str, rep: int, callers: Sequence[JudgeCaller], s: DebateSettings,
                      protocol: DebateProtocol) -> list[Judgment]:
    rows: list[Judgment] = []
    latest: list[tuple[str, str] | None] = [None, None]    # (argument, shown verdict) per judge
    verdicts: list[str | None] = [None, None]                # shown terms
    from_fallback = [False, False]
    rounds_used = 0
    for k in range(1, s.rounds + 1):
        rounds_used = k
        step = f"round-{k}"
        reqs, tids = [], []
        for i, c in enumerate(callers):
            jid = c.judge.judge_id
            msgs = protocol.messages(item, order, opponent=latest[1 - i] if k > 1 else None,
                                     own=latest[i] if k > 1 else None, turn=True)
            tid = trial_id(jid, item.dataset, item.item_id, PROTOCOL_ID, order, s.temperature, rep, step)
            meta = {"judge": jid, "dataset": item.dataset, "item_id": item.item_id, "protocol": PROTOCOL_ID,
                    "order": order, "temperature": s.temperature, "rep": rep, "step": step, "trial_id": tid}
            reqs.append(JudgeRequest(messages=tuple(msgs), temperature=s.temperature, max_tokens=protocol.max_tokens(),
                                     stop=protocol.stop(), metadata=meta, item=item))
            tids.append(tid)
        results = await asyncio.gather(*(_ask(c, r, t, rep, s.cache) for c, r, t in zip(callers, reqs, tids, strict=True)))
        if any(r is None for r in results):      # the run stopped (budget): this debate is redone on resume
            return []
        new_latest = list(latest)
        for i, (result, caller) in enumerate(zip(results, callers, strict=True)):
            text = result.response.text if result is not None and result.response is not None else None
            turn, used_fallback = _read_turn(protocol, text, k, verdicts[i], s)
            verdicts[i] = turn[0]
            from_fallback[i] = used_fallback
            new_latest[i] = (protocol.argument(text), turn[0]) if turn[0] is not None else new_latest[i]
            rows.append(_turn_row(item, order, rep, s, caller.judge.judge_id, step, result, turn,
                                  caller.prompt_hash(reqs[i])))
        latest = new_latest
        if s.stop_on_agreement and verdicts[0] is not None and verdicts[0] == verdicts[1]:
            break
    final, how, depends = _final(verdicts, from_fallback, s)
    fj = debate_judge_id([c.judge.judge_id for c in callers])
    rows.append(from_shown(shown_verdict=final, order=order, judge=fj, dataset=item.dataset, item_id=item.item_id,
                           protocol=PROTOCOL_ID, temperature=s.temperature, rep=rep, step="", label=item.label,
                           category=item.category, system_a=item.system_a, system_b=item.system_b, raw_output=None,
                           parse_status=(ParseStatus.FAILED if final is None
                                         else ParseStatus.FALLBACK if depends else ParseStatus.OK).value,
                           parse_detail=f"{how} after {rounds_used} round(s)",
                           fallback_rule="depends-on-fallback" if depends else None,
                           scores=json.dumps({"rounds": rounds_used, "agreed": how == "agreement"}),
                           cost_usd=0.0, attempts=0, cache_hit=0))
    return rows


async def run_debate_async(items: Sequence[PairItem], judges: Sequence[JudgeAPI], store: Any,
                           settings: DebateSettings = DebateSettings(), *, budget: Budget | None = None) -> int:
    """Debate every item in every order and repetition; write the rows to ``store`` (a
    :class:`~verdictlab.store.RunStore`).  Debates whose final row is already stored are skipped
    (resume).  Every call goes through a :class:`~verdictlab.engine.caller.JudgeCaller`, so
    ``budget`` (calls, tokens, dollars) applies and attempts are recorded.  Returns the number of
    debates run."""
    if len(judges) != 2:
        raise InputError("a debate needs exactly two judges")
    if judges[0].judge_id == judges[1].judge_id:
        raise InputError("the two debaters need different judge ids (e.g. the same model with two seeds)")
    protocol = DebateProtocol()
    fj = debate_judge_id([j.judge_id for j in judges])
    done = store.done_trial_ids()
    writer = Writer(store, flush_rows=10**9)
    callers = _debaters(judges, store, settings, writer, budget)
    sem = asyncio.Semaphore(settings.concurrency)
    n = 0

    async def one(item: PairItem, order: str, rep: int) -> None:
        nonlocal n
        async with sem:
            rows = await _debate_one(item, order, rep, callers, settings, protocol)
        for r in rows:
            writer.add_row(r)
        writer.flush()
        n += bool(rows)

    tasks = [one(it, o, r) for it in items for o in settings.orders for r in range(settings.repetitions)
             if trial_id(fj, it.dataset, it.item_id, PROTOCOL_ID, o, settings.temperature, r, "") not in done]
    try:
        await asyncio.gather(*tasks)
    finally:
        writer.flush()
    return n


def run_debate(items: Sequence[PairItem], judge_ids: Sequence[str], run_dir: Any,
               settings: DebateSettings = DebateSettings()) -> int:
    """Synchronous wrapper: build the two judges by id, open ``RUN_DIR/run.sqlite``, run."""
    from ..judges import base as judges_base
    from ..store import RunStore

    judges = [judges_base.make_judge(j) for j in judge_ids]
    with RunStore(run_dir) as store:
        store.write_items(items)
        store.set_meta("debate", {"judges": list(judge_ids), "settings": settings.__dict__, "started": time.time()})
        return asyncio.run(run_debate_async(items, judges, store, settings))


@dataclass(frozen=True)
class DebateRun:
    """What :func:`debate_config` did: debates run now, and the run directory holding every round."""

    n_debates: int
    run_dir: Path


def debate_config(config_path: str | Path, run_dir: str | Path | None = None, *, rounds: int = 3,
                  fallback: str = "none", final_rule: str = "tie", stop_on_agreement: bool = True,
                  overrides: Sequence[str] = ()) -> DebateRun:
    """Debate every pair of a run config between its two judges, at each of its temperatures, in its
    orders and repetitions (``verdictlab debate CONFIG``).  ``run_dir`` defaults to ``runs/<name>``;
    debates already stored there are skipped (resume).  A config without exactly two judges or
    without pairs is a :class:`~verdictlab.engine.config.ConfigError` naming the field.  ``overrides``:
    settings changed for this debate (``--set KEY=VALUE``, :func:`~verdictlab.engine.config.apply_overrides`)."""
    from .prepare import load_items

    cfg = load_config(config_path, overrides=overrides)
    if len(cfg.judges) != 2:
        raise ConfigError(f"{config_path}: field 'judges': a debate needs exactly two judges, got {len(cfg.judges)}")
    items = [it for it in load_items(cfg)[0].values() if isinstance(it, PairItem)]
    if not items:
        raise ConfigError(f"{config_path}: field 'datasets': no pairs to debate")
    target = Path(run_dir) if run_dir is not None else Path("runs") / cfg.name
    try:                 # a setting out of range (--rounds 0, --fallback x) is bad input, said as such
        settings = [DebateSettings(rounds=rounds, fallback=fallback, final_rule=final_rule,
                                   stop_on_agreement=stop_on_agreement, temperature=temp,
                                   orders=tuple(cfg.orders), repetitions=cfg.repetitions)
                    for temp in cfg.temperatures]
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    n = sum(run_debate(items, cfg.judge_ids(), target, s) for s in settings)
    return DebateRun(n, target)


__all__ = ["FALLBACKS", "FINAL_RULES", "DebateRun", "DebateSettings", "debate_config", "debate_judge_id",
           "run_debate", "run_debate_async"]
