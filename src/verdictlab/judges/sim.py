"""Simulated judge with a set accuracy, position bias, noise and malformed-output rate.

Id: ``sim:skill=S,position_lock=B,noise=N[,malformed=M][,seed=K][,latency=SECONDS]``
(defaults: skill 0.8, position_lock 0, noise 0, malformed 0, seed 0, latency 0).

Behaviour (normative; tests pin it)
-----------------------------------
Per *pair* (fixed for the pair across protocols, orders, temperatures and repetitions; drawn from
``seed``, dataset and item id):

* with probability ``B`` the judge is *position-locked* on this pair: it picks whichever response
  is shown first;
* otherwise, with probability ``S`` it prefers the labelled winner, else a fixed random one of the
  two (which may coincide with the label).  Pairs labelled ``tie`` or unlabelled get the fixed
  random one.

Per *call* (drawn from seed, dataset, item, protocol, order, temperature, repetition and step):

* with probability ``N`` the verdict is replaced by a fair coin (noise does not depend on
  temperature);
* with probability ``M`` the output is malformed: text in the protocol's style that carries no
  readable verdict (e.g. truncated before the winner field).

The output is the requested protocol's well-formed rendering
(``get_protocol(request.metadata["protocol"]).render(verdict)``).  The gold label is read from
``request.gold_label`` (shown terms), which the caller fills in only for backends that declare
``needs_gold_label`` -- only this judge ever looks at it.

Large-sample expectations with R repetitions per order (no malformed outputs): per (pair, order) a
call returns the preferred verdict with probability p = 1 - N/2, so
C = p^R + (1-p)^R;  phi ~ B when N is small;  A = (1-B)(S + (1-S)/2) + B/2.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from dataclasses import asdict, dataclass
from typing import Any

from ..items import to_canonical, to_shown
from .base import JudgeAPI, JudgeCallError, JudgeConfigError, JudgeRequest, JudgeResponse, RetryDecision

_PARAMS = {"skill": 0.8, "position_lock": 0.0, "noise": 0.0, "malformed": 0.0, "seed": 0, "latency": 0.0}


def _uniforms(*parts: Any) -> list[float]:
    """Four independent U[0,1) numbers from the sha256 of ``parts`` (a hash-based RNG: the same
    parts give the same numbers in every process, whatever the call order)."""
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).digest()
    return [int.from_bytes(digest[i:i + 8], "big") / 2.0**64 for i in range(0, 32, 8)]


@dataclass(frozen=True)
class SimParams:
    skill: float = 0.8
    position_lock: float = 0.0
    noise: float = 0.0
    malformed: float = 0.0
    seed: int = 0
    latency: float = 0.0

    @classmethod
    def parse(cls, spec: str) -> SimParams:
        values: dict[str, Any] = {}
        for part in filter(None, (p.strip() for p in spec.split(","))):
            key, sep, raw = part.partition("=")
            key = key.strip()
            if not sep or key not in _PARAMS:
                raise JudgeConfigError(f"sim judge: bad parameter {part!r}; expected key=value with keys "
                                       f"{', '.join(_PARAMS)}")
            try:
                values[key] = int(raw) if key == "seed" else float(raw)
            except ValueError:
                raise JudgeConfigError(f"sim judge: {key} must be a number, got {raw!r}") from None
        p = cls(**values)
        for key in ("skill", "position_lock", "noise", "malformed"):
            v = getattr(p, key)
            if not 0.0 <= v <= 1.0:
                raise JudgeConfigError(f"sim judge: {key} must be in [0, 1], got {v}")
        if p.latency < 0:
            raise JudgeConfigError(f"sim judge: latency must be >= 0, got {p.latency}")
        return p


class SimJudge(JudgeAPI):
    provider = "sim"
    max_concurrency = None
    supports_logprobs = False
    needs_gold_label = True      # the caller fills in request.gold_label (shown terms) for this judge

    def __init__(self, judge_id: str, spec: str) -> None:
        super().__init__(judge_id, model=f"sim({spec})")
        self.params = SimParams.parse(spec)

    def pair_preference(self, dataset: str, item_id: str, label_canonical: str | None) -> tuple[bool, str]:
        """``(position_locked, preferred canonical verdict)`` for one pair; the preferred verdict
        is irrelevant when locked."""
        p = self.params
        u_lock, u_skill, u_coin, _ = _uniforms("sim-pair", p.seed, dataset, item_id)
        locked = u_lock < p.position_lock
        random_pick = "A" if u_coin < 0.5 else "B"
        if label_canonical in ("A", "B") and u_skill < p.skill:
            return locked, label_canonical
        return locked, random_pick

    def decide(self, meta: dict[str, Any]) -> tuple[str | None, str]:
        """``(shown verdict or None when malformed, how)`` for one call described by ``meta``."""
        p = self.params
        order = meta.get("order", "AB")
        dataset, item_id = str(meta.get("dataset", "")), str(meta.get("item_id", ""))
        label = to_canonical(meta.get("label_shown"), order)
        # a probed dataset ("<base>+padding", ...) is the same pairs: the preference is drawn from the
        # base dataset's name, so the simulated judge is blind to probes (a bias of 0 by construction)
        locked, preferred = self.pair_preference(dataset.split("+", 1)[0], item_id, label)
        verdict = "A" if locked else to_shown(preferred, order)
        how = "position-locked" if locked else "preference"
        u_noise, u_coin, u_bad, _ = _uniforms("sim-call", p.seed, dataset, item_id, meta.get("protocol", ""),
                                              order, meta.get("temperature", 0.0), meta.get("rep", 0),
                                              meta.get("step", ""))
        if u_noise < p.noise:
            verdict, how = ("A" if u_coin < 0.5 else "B"), "noise"
        if u_bad < p.malformed:
            return None, "malformed"
        return verdict, how

    async def generate(self, request: JudgeRequest) -> JudgeResponse:
        from ..protocols import get_protocol

        t0 = time.perf_counter()
        meta = {**request.metadata, "label_shown": request.gold_label}
        try:
            protocol = get_protocol(meta["protocol"])
        except KeyError as exc:
            raise JudgeCallError(f"sim judge: unknown or missing protocol ({exc})", RetryDecision.fatal()) from None
        verdict, how = self.decide(meta)
        if verdict is not None:
            # pointwise protocols (rubric, pointwise) answer in their own vocabulary: right about
            # the item with probability skill (fixed per item and step), a coin under noise;
            # pairwise protocols' sim_verdict hook returns None and the A/B verdict stands
            u_item, u_pick, _, _ = _uniforms("sim-point", self.params.seed, meta.get("dataset", ""),
                                             meta.get("item_id", ""), meta.get("step", ""))
            correct = (verdict == "A") if how == "noise" else u_item < self.params.skill
            verdict = protocol.sim_verdict(meta.get("label_shown"), correct=correct, u=u_pick) or verdict
        if verdict is None:
            u = _uniforms("sim-malformed", self.params.seed, meta.get("item_id"), meta.get("rep"))[0]
            text = protocol.render_malformed(u)
        else:
            text = protocol.render(verdict, rationale=f"Response {verdict} is the better answer ({how}).")
        if self.params.latency > 0:
            await asyncio.sleep(self.params.latency)
        prompt_chars = sum(len(m.get("content", "")) for m in request.messages)
        return JudgeResponse(text=text, tokens_in=max(1, prompt_chars // 4), tokens_out=max(1, len(text) // 4),
                             cost_usd=0.0, latency_s=time.perf_counter() - t0,
                             notes=["simulated judge; token counts are chars/4 estimates"])

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "params": asdict(self.params)}


def make_sim_judge(judge_id: str, spec: str) -> SimJudge:
    return SimJudge(judge_id, spec)
