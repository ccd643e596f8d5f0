"""Model-written perturbations: cases a model writes from a template, a second call validates and a
similarity filter thins, before a person curates them.

Kinds (the wording: ``protocols/templates/perturbation.yaml``, :mod:`verdictlab.protocols.writing`)
---------------------------------------------------------------------------------------------------
``paraphrase`` (meaning-preserving; cases of kind ``paraphrase``)
    the response reworded, every fact kept.  Expected label: the source's.
``label_flip`` (meaning-changing; ``label_flip``)
    the smallest edit that makes the response deserve another grade: the other one of a two-grade scale
    (PASS <-> FAIL), or on a longer scale the far end -- the lowest grade for a source in the upper half of
    the scale, the highest otherwise.  Expected label: that grade (``target``).  Sources without a label,
    or whose label is not on their scale, are not applicable.
``synthetic`` (one case per grade of the scale)
    a new response written to deserve exactly that grade.  The case at the source's own grade is kind
    ``synthetic.same_level`` (preserving: it must get the source's grade); the others are
    ``synthetic.other_level`` (changing: each must get its grade).  Sources without a label or a scale of
    at least two grades are not applicable.

A scale is the item's ``scale``; an item without one whose label is PASS or FAIL has the scale FAIL, PASS.

The pipeline, per suite (every call through the engine's caller, handed in as ``write``)
------------------------------------------------------------------------------------------
1. **write**: one call per case (``variants`` per source and kind -- ``rep`` = the variant, its own
   cache entry -- at ``temperature``, a sampling seed derived from the suite seed and the case id);
2. **read**: :func:`~verdictlab.protocols.writing.parse_written`; an empty reply is ``unparsed``, a reply
   equal to the source's response (whitespace aside) is ``unchanged``;
3. **validate**: a second call (the ``validator``, temperature 0) per case read; ``INVALID`` is dropped as
   ``invalid``, an unreadable reply as ``validation_unparsed``;
4. **filter**: in a fixed order (source, kind, grade, variant), a valid case whose similarity
   (:mod:`verdictlab.datasets.near_duplicates`) to a text it is compared with reaches ``threshold`` is a
   ``near_duplicate``.  Compared with: the cases of the same source and kind kept before it (for
   ``synthetic``: every grade's, since two grades written alike are not two grades) and, for a
   paraphrase, the source's response (a paraphrase that close is a copy, not a rewording).  The filter
   runs after validation, so an invalid case never shadows a valid one.

Every kept case stores, under ``meta["perturbation"]``: ``template`` (its id), ``model`` (the writer),
``seed`` (the suite's) and ``request_seed``, ``variant``, ``target`` (label flips and synthetic cases),
``written`` (parse status and repairs), ``validation`` (validator, verdict, parse status, reasoning)
and ``similarity`` (measure, threshold, the closest text it was compared with and the score).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.items import PointItem
from ..core.vocab import PerturbationClass
from ..protocols.pointwise import grade_text
from ..protocols.rubric import normalise_result
from ..protocols.writing import (
    WritingPrompt,
    WritingTemplate,
    Written,
    generation_prompt,
    parse_validation,
    parse_written,
    scale_text,
    validation_prompt,
    writing_template,
)
from .near_duplicates import DEFAULT_THRESHOLD, MEASURE, most_similar
from .perturb_cases import Dropped, NotApplicable, case_id, case_rng, make_case

__all__ = ["MODEL_KINDS", "ModelOptions", "WriteFn", "model_cases"]

#: the kinds a model writes (what ``--kind`` names) and the kinds of the cases they make
MODEL_KINDS: dict[str, tuple[str, ...]] = {
    "paraphrase": ("paraphrase",), "label_flip": ("label_flip",),
    "synthetic": ("synthetic.same_level", "synthetic.other_level")}
WriteFn = Callable[[str, Mapping[str, WritingPrompt]], Mapping[str, Written]]


@dataclass(frozen=True)
class ModelOptions:
    """Who writes and validates, how many variants per source and kind, at what temperature, and the
    similarity threshold of the near-duplicate filter."""

    writer: str
    validator: str | None = None
    variants: int = 1
    temperature: float = 0.7
    threshold: float = DEFAULT_THRESHOLD
    template_path: str | None = None
    max_tokens: int = 1024

    def __post_init__(self) -> None:
        if self.variants < 1:
            raise ValueError(f"variants must be at least 1, got {self.variants}")
        if not 0 < self.threshold <= 1:
            raise ValueError(f"the similarity threshold must be in (0, 1], got {self.threshold}")

    @property
    def validator_id(self) -> str:
        return self.validator or self.writer


@dataclass
class _Plan:
    """One case to write."""

    cid: str
    source: PointItem
    family: str
    kind: str
    klass: PerturbationClass
    label: Any
    target: Any
    variant: int | None
    scale: str
    written: Any = None
    validation: Any = None
    extra: dict[str, Any] = field(default_factory=dict)


def _scale(item: PointItem) -> list[Any] | None:
    if item.scale and len(item.scale) >= 2:
        return list(item.scale)
    if normalise_result(item.label) in ("PASS", "FAIL"):
        return ["FAIL", "PASS"]
    return None


def _position(item: PointItem, scale: Sequence[Any]) -> int:
    if item.label is None:
        raise NotApplicable("the source has no label to change")
    word = list(scale) == ["FAIL", "PASS"] and not item.scale      # PASS/FAIL labels without a scale of their own
    texts = [str(g) for g in scale] if word else [grade_text(g) for g in scale]
    label = normalise_result(item.label) if word else grade_text(item.label)
    if label is None or label not in texts:
        raise NotApplicable(f"the source's label {item.label!r} is not on its scale {list(scale)}")
    return texts.index(label)


def _targets(item: PointItem, family: str) -> list[tuple[str, PerturbationClass, Any]]:
    """``(case kind, class, target grade)`` of each case ``family`` makes from ``item``."""
    if item.transcript is not None:
        raise NotApplicable("a transcript: its cases are the transcript.* kinds")
    if family == "paraphrase":
        return [("paraphrase", PerturbationClass.PRESERVING, item.label)]
    scale = _scale(item)
    if scale is None:
        raise NotApplicable("no scale of two or more grades (give the items a scale, or PASS/FAIL labels)")
    at = _position(item, scale)
    if family == "label_flip":
        far = 0 if at >= (len(scale) - 1) / 2 else len(scale) - 1
        if len(scale) == 2:
            far = 1 - at
        return [("label_flip", PerturbationClass.CHANGING, scale[far])]
    return [("synthetic.same_level" if i == at else "synthetic.other_level",
             PerturbationClass.PRESERVING if i == at else PerturbationClass.CHANGING, g) for i, g in enumerate(scale)]


def _plan(sources: Sequence[PointItem], families: Sequence[str], opts: ModelOptions
          ) -> tuple[list[_Plan], list[Dropped]]:
    plans, dropped = [], []
    variants: list[int | None] = [None] if opts.variants == 1 else list(range(1, opts.variants + 1))
    for src in sources:
        for family in families:
            try:
                targets = _targets(src, family)
            except NotApplicable as exc:
                dropped.append(Dropped(case_id(src.item_id, family), src.item_id, family, "not_applicable", str(exc)))
                continue
            scale = _scale(src) or []
            for kind, klass, target in targets:
                name = family if family != "synthetic" else f"synthetic.{grade_text(target)}"
                for v in variants:
                    plans.append(_Plan(case_id(src.item_id, name, v), src, family, kind, klass, src.label,
                                       target, v, scale_text(scale)))
    return plans, dropped


def _key(p: _Plan, step: str) -> str:
    return f"perturb:{p.source.dataset}/{p.cid}:{step}"


def _meta(p: _Plan) -> dict[str, Any]:
    return {"dataset": p.source.dataset, "source_id": p.source.item_id, "case_id": p.cid, "variant": p.variant or 1}


def _write(plans: list[_Plan], templates: Mapping[str, WritingTemplate], write: WriteFn, opts: ModelOptions,
           seed: int) -> tuple[list[_Plan], list[Dropped], dict[str, Written]]:
    prompts = {}
    for p in plans:
        p.extra["request_seed"] = case_rng(seed, p.source.dataset, p.cid).getrandbits(31)
        prompts[_key(p, "generate")] = generation_prompt(
            templates[p.family], p.source, label=p.label, target=p.target, scale=p.scale,
            temperature=opts.temperature, max_tokens=opts.max_tokens, rep=p.variant or 0,
            seed=p.extra["request_seed"], metadata=_meta(p))
    got = dict(write(opts.writer, prompts))
    read, dropped = [], []
    for p in plans:
        w = got.get(_key(p, "generate"))
        reason, detail = _read(p, w)
        if reason:
            dropped.append(Dropped(p.cid, p.source.item_id, p.kind, reason, detail))
        else:
            read.append(p)
    return read, dropped, got


def _read(p: _Plan, w: Written | None) -> tuple[str, str]:
    """The reason a written case is dropped (empty when it is read), and the detail."""
    if w is None:
        return "not_sent", "the budget stopped the calls before this one"
    if w.text is None:
        return "call_failed", w.error or "no answer"
    text = parse_written(w.text)
    if text.text is None:
        return "unparsed", text.detail
    if " ".join(text.text.split()) == " ".join(p.source.response.split()):
        return "unchanged", "the reply repeats the source's response"
    p.written = text
    return "", ""


def _validate(plans: list[_Plan], templates: Mapping[str, WritingTemplate], write: WriteFn,
              opts: ModelOptions) -> tuple[list[_Plan], list[Dropped], dict[str, Written]]:
    prompts = {_key(p, "validate"): validation_prompt(templates[p.family], p.source, p.written.text, label=p.label,
                                                      target=p.target, scale=p.scale, metadata=_meta(p))
               for p in plans}
    got = dict(write(opts.validator_id, prompts))
    valid, dropped = [], []
    for p in plans:
        w = got.get(_key(p, "validate"))
        if w is None or w.text is None:
            reason = "not_sent" if w is None else "validation_failed"
            dropped.append(Dropped(p.cid, p.source.item_id, p.kind, reason, "" if w is None else w.error or ""))
            continue
        res = parse_validation(w.text)
        p.validation = {"validator": opts.validator_id, "verdict": res.verdict, "parse_status": res.status,
                        "reasoning": res.scores.get("reasoning", "") or res.detail}
        if res.verdict is None:
            dropped.append(Dropped(p.cid, p.source.item_id, p.kind, "validation_unparsed", res.detail))
        elif res.verdict == "INVALID":
            dropped.append(Dropped(p.cid, p.source.item_id, p.kind, "invalid", p.validation["reasoning"][:300]))
        else:
            valid.append(p)
    return valid, dropped, got


def _filter(plans: list[_Plan], threshold: float) -> tuple[list[_Plan], list[Dropped]]:
    kept: dict[tuple[str, str], list[tuple[str, str]]] = {}
    out, dropped = [], []
    for p in plans:
        seen = kept.setdefault((p.source.item_id, p.family), [])
        compared = list(seen)
        if p.family == "paraphrase":
            compared.insert(0, (f"{p.source.item_id} (source)", p.source.response))
        nearest, score = most_similar(p.written.text, compared)
        if nearest is not None and score >= threshold:
            dropped.append(Dropped(p.cid, p.source.item_id, p.kind, "near_duplicate",
                                   f"similarity {score:.3f} to {nearest}"))
            continue
        p.extra["similarity"] = {"measure": MEASURE, "threshold": threshold, "nearest": nearest,
                                 "score": round(score, 4)}
        seen.append((p.cid, p.written.text))
        out.append(p)
    return out, dropped


def model_cases(sources: Sequence[PointItem], families: Sequence[str], *, write: WriteFn, opts: ModelOptions,
                seed: int = 0) -> tuple[list[PointItem], list[Dropped], dict[str, str], dict[str, Written]]:
    """The cases of the model-written ``families`` (keys of :data:`MODEL_KINDS`) for ``sources``:
    ``(cases kept, cases dropped with their reason, template id per family, every call's result by
    key)`` -- the pipeline of the module docstring."""
    unknown = [f for f in families if f not in MODEL_KINDS]
    if unknown:
        raise ValueError(f"not a model-written kind: {', '.join(unknown)}; those are {', '.join(MODEL_KINDS)}")
    templates = {f: writing_template(f, opts.template_path) for f in families}
    plans, dropped = _plan(sources, families, opts)
    read, lost, calls = _write(plans, templates, write, opts, seed)
    valid, invalid, vcalls = _validate(read, templates, write, opts)
    kept, dups = _filter(valid, opts.threshold)
    cases = [make_case(p.source, kind=p.kind, klass=p.klass, origin="model", cid=p.cid,
                       label=p.target if p.klass == PerturbationClass.CHANGING or p.family == "synthetic" else p.label,
                       response=p.written.text,
                       extra={"template": templates[p.family].template_id, "model": opts.writer, "seed": seed,
                              "variant": p.variant or 1, "target": p.target if p.family != "paraphrase" else None,
                              "written": {"parse_status": p.written.status, "detail": p.written.detail},
                              "validation": p.validation, **p.extra})
             for p in kept]
    return cases, [*dropped, *lost, *invalid, *dups], {f: t.template_id for f, t in templates.items()}, \
        {**calls, **vcalls}
