"""A Ray worker's per-run state, in process (no cluster): the chunks a worker judges at once share one
caller, so the judge's concurrency share holds for the worker, not per chunk."""

from __future__ import annotations

import asyncio
from typing import Any

from verdictlab.core.design import expand_grid
from verdictlab.core.items import PairItem
from verdictlab.core.judgment import Judgment
from verdictlab.engine.config import JudgeSpec
from verdictlab.engine.ray_executor import _TRIAL_VALUES, WorkerRun, judge_chunk
from verdictlab.judges.base import JudgeResponse
from verdictlab.judges.sim import SimJudge


class _Remote:
    def __init__(self, fn: Any) -> None:
        self.fn = fn

    def remote(self, *args: Any) -> Any:
        async def call() -> Any:
            return self.fn(*args)
        return call()


class _Ledger:
    """Stands in for the ledger actor: grants every lease, records the settles."""

    def __init__(self) -> None:
        self.leased = 0
        self.returned = 0
        self.lease = _Remote(self._lease)
        self.settle = _Remote(self._settle)

    def _lease(self, n: int) -> tuple[int, None]:
        self.leased += n
        return n, None

    def _settle(self, unused: int, tokens: int, usd: float) -> None:
        self.returned += unused


class _Counting(SimJudge):
    """The simulated judge, slowed down, counting how many of its calls overlap."""

    def __init__(self) -> None:
        super().__init__("sim:skill=0.8,seed=3", "skill=0.8,seed=3")
        self.now = 0
        self.peak = 0

    async def generate(self, request: Any) -> JudgeResponse:
        self.now += 1
        self.peak = max(self.peak, self.now)
        try:
            await asyncio.sleep(0.01)
            return await super().generate(request)
        finally:
            self.now -= 1


def test_chunks_judged_at_once_share_the_workers_concurrency_share():
    """Defect: each chunk built its own caller, so a worker holding two chunks ran 2x its share of
    the judge's concurrency (and of its rate limits).  Two chunks of 12 at a share of 4: peak 4."""
    judge = _Counting()
    items = {("d", f"i{i}"): PairItem(item_id=f"i{i}", dataset="d", question="q", response_a="a", response_b="b",
                                      label="A") for i in range(12)}
    trials = list(expand_grid(judges=[judge.judge_id], items_by_dataset={"d": [k[1] for k in items]},
                              protocols=["direct"], orders=("AB", "BA")))
    assert len(trials) == 24
    spec = JudgeSpec(id=judge.judge_id, concurrency=4).model_dump()
    base = {"run": "r", "judge": judge.judge_id, "spec": spec, "seed": 1, "cache": "off", "workers": 1,
            "backoff_base_s": None, "backoff_cap_s": None, "items": items}
    ledger = _Ledger()
    run = WorkerRun(base, judge=judge, ledger=ledger)

    async def both() -> list[dict[str, Any]]:
        chunks = [trials[:12], trials[12:]]
        return await asyncio.gather(*(judge_chunk({**base, "trials": [_TRIAL_VALUES(t) for t in c]}, run=run)
                                      for c in chunks))

    results = asyncio.run(both())
    rows = [Judgment.from_values(v) for r in results for v in r["rows"]]
    assert sorted(r.trial_id for r in rows) == sorted(t.trial_id for t in trials)
    assert judge.peak == 4
    # each chunk reports only what was spent since the last report: together, every call once
    assert sum(r["spend"]["calls"] for r in results) == 24
    assert sum(len(r["attempts"]) for r in results) == 24
    # leases: 24 taken, 24 used, none handed back; nothing held once no chunk is in flight
    assert ledger.leased == 24 and ledger.returned == 0 and run.active == 0
