"""Perturbation suites: perturbed copies of point items, to test whether a grader keeps its grade when
the meaning is kept and changes it when the meaning changes.

A suite is a dataset transform: the source items and, for each source and kind, its cases -- ordinary
point items in the same dataset under ids of their own (``<source>~<kind>``), each carrying
``meta["perturbation"]`` (the data contract in docs/architecture.md: source id, kind, class, origin,
curation status, and what made it).  Kinds (:data:`KINDS`; ``verdictlab perturb --kind``):

==============================  ==========  =============  ==================================================
kind                            class       written by     module
==============================  ==========  =============  ==================================================
``format.whitespace``           preserving  a rule         :mod:`~verdictlab.datasets.perturb_format`
``format.markdown``             preserving  a rule
``format.list_style``           preserving  a rule
``format.casing``               preserving  a rule
``verbosity.pad``               preserving  a rule         :mod:`~verdictlab.datasets.perturb_verbosity`
``transcript.reformat_message`` preserving  a rule         :mod:`~verdictlab.datasets.perturb_transcript`
``transcript.drop_tool_result`` changing    a rule
``transcript.wrong_answer``     changing    a rule
``paraphrase``                  preserving  a model        :mod:`~verdictlab.datasets.perturb_model`
``label_flip``                  changing    a model
``synthetic``                   both        a model        (``synthetic.same_level`` / ``.other_level``)
==============================  ==========  =============  ==================================================

A rule's case is reproducible from the suite's seed and the parameters stored with it (``params``) and
counts in the figures as written; a model's case counts once a person accepted it (``verdictlab view
RUN``, the curation page).  The response kinds do not apply to transcripts and the transcript kinds
apply only to them; a case a rule cannot make from a source (no list to restyle, no tool result to
drop) is counted as ``not_applicable``, never faked.

Datasets never call a judge: the model-written kinds get their calls through ``write``, a function the
engine hands in (:func:`verdictlab.engine.writing.write_with_judge`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.items import PointItem, perturbation_of
from ..core.vocab import PerturbationClass
from ..protocols.writing import Written
from .perturb_cases import Dropped, Edit, NotApplicable, case_id, case_rng, make_case
from .perturb_format import FORMAT_RULES
from .perturb_model import MODEL_KINDS, ModelOptions, WriteFn, model_cases
from .perturb_transcript import CHANGED_LABEL, TRANSCRIPT_RULES
from .perturb_verbosity import DEFAULT_PAD_CHARS, pad

__all__ = ["DETERMINISTIC_KINDS", "KINDS", "KindSpec", "PerturbationSuite", "perturb_items"]


@dataclass(frozen=True)
class KindSpec:
    """A perturbation kind: its class (None: per case), who writes it and what it applies to."""

    name: str
    klass: PerturbationClass | None
    origin: str
    applies_to: str
    description: str


_P, _C = PerturbationClass.PRESERVING, PerturbationClass.CHANGING
KINDS: dict[str, KindSpec] = {s.name: s for s in (
    KindSpec("format.whitespace", _P, "deterministic", "response", "the response laid out with other whitespace"),
    KindSpec("format.markdown", _P, "deterministic", "response", "Markdown added (heading, bold) or stripped"),
    KindSpec("format.list_style", _P, "deterministic", "response", "list markers changed, or prose made a list"),
    KindSpec("format.casing", _P, "deterministic", "response", "the response in upper or lower case"),
    KindSpec("verbosity.pad", _P, "deterministic", "response", "neutral sentences of a stated size appended"),
    KindSpec("transcript.reformat_message", _P, "deterministic", "transcript",
             "the last assistant message laid out again"),
    KindSpec("transcript.drop_tool_result", _C, "deterministic", "transcript",
             "the last tool result removed (PASS -> FAIL)"),
    KindSpec("transcript.wrong_answer", _C, "deterministic", "transcript",
             "the final answer's value made wrong (PASS -> FAIL)"),
    KindSpec("paraphrase", _P, "model", "response", "the response reworded, every fact kept"),
    KindSpec("label_flip", _C, "model", "response", "the smallest edit that changes the gold grade"),
    KindSpec("synthetic", None, "model", "response", "a new response written for each grade of the scale"),
)}
DETERMINISTIC_KINDS: tuple[str, ...] = tuple(k for k, s in KINDS.items() if s.origin == "deterministic")


@dataclass
class PerturbationSuite:
    """Sources and cases of one dataset, the cases dropped and why, the template of each model-written
    kind and the result of every writing call (by call key)."""

    dataset: str
    sources: list[PointItem]
    cases: list[PointItem]
    dropped: list[Dropped] = field(default_factory=list)
    templates: dict[str, str] = field(default_factory=dict)
    calls: dict[str, Written] = field(default_factory=dict)

    @property
    def items(self) -> list[PointItem]:
        """Every item of the suite: each source followed by its cases."""
        by_source: dict[str, list[PointItem]] = {}
        for c in self.cases:
            p = perturbation_of(c)
            assert p is not None
            by_source.setdefault(p.source_id, []).append(c)
        return [it for s in self.sources for it in (s, *by_source.get(s.item_id, []))]

    def counts(self) -> dict[str, dict[str, int]]:
        """Per case kind: cases ``kept`` and dropped per reason."""
        out: dict[str, Counter[str]] = {}
        for c in self.cases:
            p = perturbation_of(c)
            assert p is not None
            out.setdefault(p.kind, Counter())["kept"] += 1
        for d in self.dropped:
            out.setdefault(d.kind, Counter())[d.reason] += 1
        return {k: dict(v) for k, v in sorted(out.items())}


def _rule(kind: str, options: dict[str, Any]) -> Callable[[PointItem, Any], Edit]:
    if kind in FORMAT_RULES:
        fn = FORMAT_RULES[kind]
        return lambda item, rng: fn(item.response, rng)
    if kind == "verbosity.pad":
        chars = int(options.get("pad_chars") or DEFAULT_PAD_CHARS)
        return lambda item, rng: pad(item.response, rng, chars=chars)
    return TRANSCRIPT_RULES[kind]


def _applies(spec: KindSpec, item: PointItem) -> None:
    if spec.applies_to == "transcript" and item.transcript is None:
        raise NotApplicable("not a transcript")
    if spec.applies_to == "response" and item.transcript is not None:
        raise NotApplicable("a transcript: its cases are the transcript.* kinds")


def _rule_cases(sources: Sequence[PointItem], kinds: Sequence[str], seed: int,
                options: dict[str, Any]) -> tuple[list[PointItem], list[Dropped]]:
    cases, dropped = [], []
    for kind in kinds:
        spec, rule = KINDS[kind], _rule(kind, options)
        assert spec.klass is not None
        for src in sources:
            cid = case_id(src.item_id, kind)
            try:
                _applies(spec, src)
                edit = rule(src, case_rng(seed, src.dataset, src.item_id, kind))
            except NotApplicable as exc:
                dropped.append(Dropped(cid, src.item_id, kind, "not_applicable", str(exc)))
                continue
            if (edit.response in (None, src.response)) and edit.transcript in (None, src.transcript):
                dropped.append(Dropped(cid, src.item_id, kind, "unchanged", "the rule left the source as it was"))
                continue
            label = CHANGED_LABEL.get(kind, src.label) if spec.klass == _C else src.label
            cases.append(make_case(src, kind=kind, klass=spec.klass, origin="deterministic", cid=cid, label=label,
                                   response=edit.response, transcript=edit.transcript,
                                   extra={"seed": seed, "params": edit.params}))
    return cases, dropped


def perturb_items(items: Sequence[Any], kinds: Sequence[str], *, seed: int = 0, write: WriteFn | None = None,
                  model: ModelOptions | None = None, pad_chars: int = DEFAULT_PAD_CHARS) -> PerturbationSuite:
    """The suite of ``kinds`` (names of :data:`KINDS`) over the point items ``items`` (one dataset;
    items that are already perturbed cases are left out of the sources).  The model-written kinds need
    ``write`` (the engine's writing function) and ``model`` (writer, validator, variants, temperature,
    similarity threshold); a ``ValueError`` names what is missing or unknown."""
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise ValueError(f"unknown perturbation kind(s) {', '.join(unknown)}; kinds: {', '.join(KINDS)}")
    points = [it for it in items if isinstance(it, PointItem)]
    if len(points) != len(items) or not points:
        raise ValueError("perturbation suites are made of point items (one response each); this dataset has "
                         f"{len(items) - len(points)} pair item(s) and {len(points)} point item(s)")
    datasets = sorted({it.dataset for it in points})
    if len(datasets) != 1:
        raise ValueError(f"a suite perturbs one dataset at a time; these items are in {', '.join(datasets)}")
    sources = [it for it in points if perturbation_of(it) is None]
    rules = [k for k in dict.fromkeys(kinds) if KINDS[k].origin == "deterministic"]
    families = [k for k in dict.fromkeys(kinds) if KINDS[k].origin == "model"]
    cases, dropped = _rule_cases(sources, rules, seed, {"pad_chars": pad_chars})
    suite = PerturbationSuite(datasets[0], sources, cases, dropped)
    if families:
        if write is None or model is None:
            raise ValueError(f"the kind(s) {', '.join(families)} are written by a model: name the writer judge")
        mcases, mdropped, templates, calls = model_cases(sources, families, write=write, opts=model, seed=seed)
        suite.cases += mcases
        suite.dropped += mdropped
        suite.templates = templates
        suite.calls = calls
    return suite


assert set(MODEL_KINDS) == {k for k, s in KINDS.items() if s.origin == "model"}
