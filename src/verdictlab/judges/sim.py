"""Simulated judge with a set accuracy, position bias, noise and malformed-output rate.

Id: ``sim:skill=S,position_lock=B,noise=N[,malformed=M][,forced_first=F][,seed=K][,latency=SECONDS]``
``[,verbosity=V][,self_pref=P,family=NAME][,anchoring=G][,probs=0|1][,invariance=I][,sensitivity=Q]``
(defaults: skill 0.8, position_lock 0, noise 0, malformed 0, forced_first 0.5, seed 0, latency 0,
verbosity 0, self_pref 0, family none, anchoring 0, probs 0, invariance 1, sensitivity 1).

Verdict probabilities (``probs=1``): for label-only protocols every response also carries the exact
distribution of that call's verdict (``choice_probs``, stored as P(A)): the preferred side with
probability 1 - N/2, the other with N/2 -- what a judge with token log-probabilities reports, so the
sampling-free figures (:mod:`verdictlab.stats.expected`) can be checked against this model's closed form.

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

Constrained decoding (``request.decoding == "constrained"``; the knob is ``F = forced_first``):
the format is forced, so no output is malformed.  A call that *would* have been malformed under free
decoding (the same draw, ``u < M``) becomes a forced verdict: with probability ``F`` the response
shown first (a guess driven by position), otherwise the call's own verdict (preference or noise).
Every other call returns exactly the verdict it returns free.  So with ``M = 1, F = 1`` every
constrained verdict is "shown first": C = 1, phi = 1, A = 1/2, T = 0 (forcing the format hides a
guess); with ``F = 0`` the constrained run equals a free run of the same judge with ``M = 0``.  The
mechanism is recorded per call in the notes (``MECHANISM``).

The output is a well-formed answer in the requested protocol's format, written by this judge
(:mod:`verdictlab.judges.sim_answers`: the protocols only build prompts and parse replies).  The
gold label and what the pair shows come from the item the request is about (``request.item``, which
the engine sets on every request; in shown terms through ``metadata["order"]``): this judge answers
from the item, where a real judge reads the prompt.

Planted biases (what ``verdictlab selftest`` recovers).  They act on a pair that is not
position-locked, through per-pair draws made from the *base* dataset name (the same draw on a probed
copy of the pair), and read what the pair shows (:func:`item_view`: shown lengths, shown authoring
systems, item meta); a request without its item leaves them inert.  Precedence:
anchoring, then self-preference, then verbosity; noise still replaces the verdict afterwards.

* ``anchoring=G``: on an item whose meta names ``anchor_side`` (the ``anchoring`` probe), with
  probability G the judge prefers the anchored side.  With B = N = 0 the relative shift toward the
  anchor, (s_probe - s_base) / (1 - s_base) with s the share of verdicts for the anchored side, is G.
* ``self_pref=P, family=NAME``: on a pair where exactly one shown response's system name contains
  NAME (case-insensitive), with probability P the judge prefers that (its own family's) response.
  With B = N = 0: P(picks own | own wrong) = P + (1 - P)(1 - S)/2 and P(picks other | other wrong) =
  (1 - P)(1 - S)/2, so their difference (the *harm*) is P.
* ``verbosity=V``: on a pair whose shown responses differ in length, with probability V the judge
  prefers the longer one.  On the padding probe over pairs of equal length, with B = N = 0 the
  relative rise (s_probe - s_base) / (1 - s_base) of the share of verdicts for the padded side is V.

Writing (``metadata["purpose"]`` ``paraphrase``, ``perturb.generate``, ``perturb.validate``): the simulated
judge writes a reworded question, a test case of ``verdictlab perturb`` or its validation from the
request's item, deterministically (:mod:`verdictlab.judges.sim_writing`); the validation is VALID with
probability S.

Pointwise graders (``rubric``, ``pointwise``, ``transcript`` protocols on point items).  The grade of an item is
right with probability ``S`` (fixed per item and criterion: the same in every repetition), otherwise
a fixed wrong grade (:mod:`verdictlab.judges.sim_answers`); noise replaces a call's grade by a coin
between the two, so with R repetitions C = p^R + (1-p)^R, p = 1 - N/2, as for pairs.  On a perturbed
item (``meta["perturbation"]``, the data contract in docs/architecture.md), per case (drawn from the
seed, dataset, case id and criterion):

* ``invariance=I`` (default 1): under a *preserving* perturbation the grader gives its grade of the
  source with probability I, otherwise the other grade about the same label (right <-> wrong), which
  always differs -- so the invariance rate is I;
* ``sensitivity=Q`` (default 1): under a *changing* perturbation, with probability Q it grades the case
  right (its new label), otherwise it repeats its grade of the source -- so among sources graded right
  the share of cases graded right is Q.

The source's grade is reproduced from ``source_id`` and the source's label (``source_label``; for a
preserving case the case's own label); a changing case without ``source_label`` is graded as a fresh item.

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

from ..core.items import PairItem, to_canonical, to_shown
from ..core.vocab import Order, swap
from ..protocols.output_format import OutputFormat
from . import sim_writing
from .base import JudgeAPI, JudgeCallError, JudgeConfigError, JudgeRequest, JudgeResponse, RetryDecision
from .sim_answers import AnswerStyle, answer_style

_PARAMS = {"skill": 0.8, "position_lock": 0.0, "noise": 0.0, "malformed": 0.0, "forced_first": 0.5, "seed": 0,
           "latency": 0.0, "verbosity": 0.0, "self_pref": 0.0, "family": "", "anchoring": 0.0, "probs": 0,
           "invariance": 1.0, "sensitivity": 1.0}
_RATES = ("skill", "position_lock", "noise", "malformed", "forced_first", "verbosity", "self_pref", "anchoring",
          "invariance", "sensitivity")
MECHANISM = ("simulated constraint: no malformed output; a would-be-malformed call gives the first-shown "
             "response with probability forced_first, else its own verdict")


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
    forced_first: float = 0.5
    seed: int = 0
    latency: float = 0.0
    verbosity: float = 0.0
    self_pref: float = 0.0
    family: str = ""
    anchoring: float = 0.0
    probs: int = 0
    invariance: float = 1.0
    sensitivity: float = 1.0

    @classmethod
    def parse(cls, spec: str) -> SimParams:
        values: dict[str, Any] = {}
        for part in filter(None, (p.strip() for p in spec.split(","))):
            key, sep, raw = part.partition("=")
            key = key.strip()
            if not sep or key not in _PARAMS:
                raise JudgeConfigError(f"sim judge: bad parameter {part!r}; expected key=value with keys "
                                       f"{', '.join(_PARAMS)}")
            if key == "family":
                values[key] = raw.strip().lower()
                continue
            try:
                values[key] = int(raw) if key in ("seed", "probs") else float(raw)
            except ValueError:
                raise JudgeConfigError(f"sim judge: {key} must be a number, got {raw!r}") from None
        p = cls(**values)
        for key in _RATES:
            v = getattr(p, key)
            if not 0.0 <= v <= 1.0:
                raise JudgeConfigError(f"sim judge: {key} must be in [0, 1], got {v}")
        if p.latency < 0:
            raise JudgeConfigError(f"sim judge: latency must be >= 0, got {p.latency}")
        if p.probs not in (0, 1):
            raise JudgeConfigError(f"sim judge: probs must be 0 or 1, got {p.probs}")
        if p.self_pref > 0 and not p.family:
            raise JudgeConfigError("sim judge: self_pref needs family=NAME (the judge's own model family)")
        return p


class SimJudge(JudgeAPI):
    provider = "sim"
    max_concurrency = None
    supports_logprobs = False
    free = True
    assumed_latency_s = 0.0

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

    def planted_bias(self, base: str, item_id: str, order: str, view: dict[str, Any] | None,
                     preferred: str, how: str) -> tuple[str, str]:
        """The planted anchoring / self-preference / verbosity biases (module docstring): the
        canonical preferred verdict and how it was reached, given what the pair shows (:func:`item_view`)."""
        p = self.params
        if not view or not (p.anchoring or p.self_pref or p.verbosity):
            return preferred, how
        u_anchor, u_self, u_verb, _ = _uniforms("sim-bias", p.seed, base, item_id)
        anchor = (view.get("item_meta") or {}).get("anchor_side")
        if anchor in ("A", "B") and u_anchor < p.anchoring:
            return anchor, "anchored"
        models = [str(m or "").lower() for m in view.get("shown_models") or ()]
        own = [bool(p.family) and p.family in m for m in models]
        if len(own) == 2 and own[0] != own[1] and u_self < p.self_pref:
            return to_canonical("A" if own[0] else "B", order) or preferred, "self-preference"
        chars: list[int] = list(view.get("shown_chars") or ())
        if len(chars) == 2 and chars[0] != chars[1] and u_verb < p.verbosity:
            return to_canonical("A" if chars[0] > chars[1] else "B", order) or preferred, "verbosity"
        return preferred, how

    def verdict_probabilities(self, meta: dict[str, Any]) -> dict[str, float]:
        """The exact distribution of one call's shown verdict over A/B (``probs=1``): the preferred
        side (first shown when the pair is position-locked) with probability 1 - noise/2, the other
        with noise/2.  Malformed outputs do not change it (they hide the verdict, not move it)."""
        p = self.params
        order = meta.get("order", Order.AB)
        dataset, item_id = str(meta.get("dataset", "")), str(meta.get("item_id", ""))
        base = dataset.split("+", 1)[0]
        locked, preferred = self.pair_preference(base, item_id, to_canonical(meta.get("label_shown"), order))
        if not locked:
            preferred, _ = self.planted_bias(base, item_id, order, meta.get("item_view"), preferred, "preference")
        shown = "A" if locked else (to_shown(preferred, order) or "A")
        other = "B" if shown == "A" else "A"
        return {shown: 1.0 - p.noise / 2, other: p.noise / 2}

    def constraint_mechanism(self, fmt: OutputFormat | None) -> str | None:
        return None if fmt is None else MECHANISM

    def decide(self, meta: dict[str, Any], *, constrained: bool = False) -> tuple[str | None, str]:
        """``(shown verdict or None when malformed, how)`` for one call described by ``meta``;
        ``constrained`` applies the constrained-decoding knob (module docstring)."""
        p = self.params
        order = meta.get("order", Order.AB)
        dataset, item_id = str(meta.get("dataset", "")), str(meta.get("item_id", ""))
        label = to_canonical(meta.get("label_shown"), order)
        # a probed dataset ("<base>+padding", ...) is the same pairs: the preference is drawn from the
        # base dataset's name, so the simulated judge is blind to probes (a bias of 0 by construction)
        locked, preferred = self.pair_preference(dataset.split("+", 1)[0], item_id, label)
        how = "position-locked" if locked else "preference"
        if not locked:
            preferred, how = self.planted_bias(dataset.split("+", 1)[0], item_id, order,
                                               meta.get("item_view"), preferred, how)
        verdict = "A" if locked else to_shown(preferred, order)
        u_noise, u_coin, u_bad, u_force = _uniforms("sim-call", p.seed, dataset, item_id, meta.get("protocol", ""),
                                              order, meta.get("temperature", 0.0), meta.get("rep", 0),
                                              meta.get("step", ""))
        if u_noise < p.noise:
            verdict, how = ("A" if u_coin < 0.5 else "B"), "noise"
        if u_bad < p.malformed:
            if not constrained:
                return None, "malformed"
            if u_force < p.forced_first:
                return "A", "forced: shown first"
            return verdict, f"forced: {how}"
        return verdict, how

    def call_meta(self, request: JudgeRequest) -> dict[str, Any]:
        """What :meth:`decide` reads about one call: the trial key, the gold label in shown terms
        (``label_shown``) and, for a pair, what it shows (``item_view``) -- from ``request.item``."""
        meta = dict(request.metadata)
        item, order = request.item, meta.get("order", Order.AB)
        if isinstance(item, PairItem):
            meta["label_shown"] = swap(item.label, order)
            meta["item_view"] = item_view(item, order)
        else:
            meta["label_shown"] = getattr(item, "label", None)
            meta["perturbation"] = (getattr(item, "meta", None) or {}).get("perturbation")
        return meta

    def point_grade(self, style: AnswerStyle, meta: dict[str, Any], how: str, verdict: str) -> str:
        """The grade of a pointwise call (module docstring, "Pointwise graders")."""
        p = self.params
        dataset, step = meta.get("dataset", ""), meta.get("step", "")
        u_item, u_pick, _, _ = _uniforms("sim-point", p.seed, dataset, meta.get("item_id", ""), step)
        assert style.own_verdict is not None
        if how == "noise":
            return style.own_verdict(meta.get("label_shown"), verdict == "A", u_pick)
        pert = meta.get("perturbation")
        src_label = (pert or {}).get("source_label", meta.get("label_shown") if (pert or {}).get("class")
                                     == "preserving" else None)
        if not pert or src_label is None:
            return style.own_verdict(meta.get("label_shown"), u_item < p.skill, u_pick)
        u_src, u_pick_src, _, _ = _uniforms("sim-point", p.seed, dataset, str(pert.get("source_id", "")), step)
        right_src = u_src < p.skill
        source_grade = style.own_verdict(src_label, right_src, u_pick_src)
        u_pert = _uniforms("sim-perturb", p.seed, dataset, meta.get("item_id", ""), step)[0]
        if pert.get("class") == "preserving":
            # kept with probability invariance; otherwise the other answer about the same label, which
            # always differs from the source's grade (right <-> wrong)
            return source_grade if u_pert < p.invariance else style.own_verdict(src_label, not right_src, u_pick_src)
        # changing: with probability sensitivity the grader follows the edit (the new label), else it
        # repeats its grade of the source
        return style.own_verdict(meta.get("label_shown"), True, u_pick) if u_pert < p.sensitivity else source_grade

    def answer(self, style: AnswerStyle, meta: dict[str, Any], *, constrained: bool = False) -> str:
        """The answer text of one call described by ``meta`` (:meth:`call_meta`), in ``style``."""
        verdict, how = self.decide(meta, constrained=constrained)
        if verdict is not None and style.own_verdict is not None:
            # pointwise protocols (rubric, pointwise) answer in their own vocabulary
            verdict = self.point_grade(style, meta, how, verdict)
        if verdict is None:
            u = _uniforms("sim-malformed", self.params.seed, meta.get("item_id"), meta.get("rep"))[0]
            return style.malformed_answer(u)
        return style.write(verdict, f"Response {verdict} is the better answer ({how}).")

    async def generate(self, request: JudgeRequest) -> JudgeResponse:
        t0 = time.perf_counter()
        if request.metadata.get("purpose") in sim_writing.PURPOSES:
            return self.write(request, t0)
        try:
            style = answer_style(str(request.metadata.get("protocol", "")), request.output_format)
        except LookupError as exc:
            raise JudgeCallError(f"sim judge: {exc}", RetryDecision.fatal()) from None
        meta = self.call_meta(request)
        constrained = request.decoding == "constrained"
        text = self.answer(style, meta, constrained=constrained)
        if self.params.latency > 0:
            await asyncio.sleep(self.params.latency)
        prompt_chars = sum(len(m.get("content", "")) for m in request.messages)
        notes = ["simulated judge; token counts are chars/4 estimates"]
        if constrained:
            notes.append(f"constrained: {MECHANISM}")
        probs = self.verdict_probabilities(meta) if self.params.probs and style.label_only else None
        return JudgeResponse(text=text, tokens_in=max(1, prompt_chars // 4), tokens_out=max(1, len(text) // 4),
                             cost_usd=0.0, latency_s=time.perf_counter() - t0, notes=notes, choice_probs=probs)

    def write(self, request: JudgeRequest, t0: float) -> JudgeResponse:
        """A writing request (a paraphrase, a test case, a validation): :mod:`verdictlab.judges.sim_writing`."""
        try:
            prompt = "\n".join(m.get("content", "") for m in request.messages)
            text = sim_writing.written_text(self.params, dict(request.metadata), request.item, prompt)
        except ValueError as exc:
            raise JudgeCallError(f"sim judge: {exc}", RetryDecision.fatal()) from None
        prompt_chars = sum(len(m.get("content", "")) for m in request.messages)
        return JudgeResponse(text=text, tokens_in=max(1, prompt_chars // 4), tokens_out=max(1, len(text) // 4),
                             cost_usd=0.0, latency_s=time.perf_counter() - t0,
                             notes=["simulated writer; token counts are chars/4 estimates"])

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "params": asdict(self.params)}


def item_view(item: PairItem, order: str) -> dict[str, Any]:
    """What a pair shows in ``order``, for the planted biases: shown lengths, shown authoring systems
    and the item meta."""
    first, second = item.shown(order)
    ma = item.system_a or item.meta.get("system_a")
    mb = item.system_b or item.meta.get("system_b")
    return {"shown_chars": [len(first), len(second)],
            "shown_models": [ma, mb] if order == Order.AB else [mb, ma], "item_meta": dict(item.meta)}


def make_sim_judge(judge_id: str, spec: str) -> SimJudge:
    return SimJudge(judge_id, spec)
