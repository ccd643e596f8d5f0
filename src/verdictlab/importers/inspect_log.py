"""Import inspect_ai evaluation logs whose samples a model-graded scorer graded over several epochs.

Logs are read with inspect_ai's own log API (``inspect_ai.log.read_eval_log``; ``.eval`` and
``.json`` logs, a file or a folder of them) -- install the ``inspect`` extra
(``pip install 'verdictlab[inspect]'``).  Recorded verdict rule (``inspect`` rule, in the notes and every
row's ``parse_detail``):

* every sample x epoch x scorer becomes one **pointwise** judgment: the item is the sample (a
  :class:`~verdictlab.core.items.PointItem`: question = the input, response = the model's output, reference
  = the target), the verdict is the scorer's grade as it gave it (``"C"``, ``"I"``, ``"P"``, a number
  as text, a dict/list value as sorted JSON), and **the epoch is the repetition** (``rep = epoch - 1``);
  so the grader's consistency over repetitions is measured (analysis ``grader_consistency``);
* a sample an epoch could not score (``Score.unscored`` / a NaN value / no score) is unparsed
  (verdict NULL, parse_status failed), its explanation kept as raw output;
* the grader sees the *answer*: when a sample's answers differ between epochs (a sampled solver),
  each distinct answer is its own item (``<id>@answer-<k>``) and only epochs that graded the same
  answer are repetitions of one another -- counted in the notes;
* judge = the scorer's grader model (``model`` option of the scorer in the log's eval spec, else the
  ``grader`` model role, else the evaluated model), protocol = the scorer name, dataset = the task name,
  temperature = the grader's configured temperature when the spec records it (else 0, noted);
  ``--judge`` / ``--protocol`` / ``--dataset`` / ``--temperature`` override, ``--scorer`` picks one scorer;
* ``--label-scorer NAME``: that scorer's grade is the items' gold label (``C`` / 1 / true -> ``PASS``,
  ``I`` / 0 / false -> ``FAIL``, anything else unlabelled) instead of a judgment, so a deterministic
  scorer (``match``, ``includes``) checks the model-graded one; the other scorers' grades are then read
  the same way (``C`` -> ``PASS``, ``I`` -> ``FAIL``; any other grade, a partial ``P``, kept as given and
  matching no label), the grade as given kept in ``parse_detail``;
* ``--transcripts``: the graded object is the agent's whole run, not only its answer -- each item carries
  the sample's transcript (messages, tool calls, tool results: the ``inspect-transcripts`` loader's items,
  :mod:`verdictlab.datasets.inspect_transcripts`) and epochs are repetitions when their transcripts are
  the same (``<id>@transcript-<k>`` otherwise).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from ..core.items import ItemError, PairItem, PointItem
from ..core.judgment import judgment_dict
from ..core.ranges import TEMPERATURE
from ..core.vocab import Order
from ..datasets.inspect_transcripts import (
    completion_label,
    log_files,
    read_log,
    sample_ids,
    text_of,
    transcript_items,
)
from ._batch import ImportBatch, checked

RULE = ("inspect: one pointwise judgment per sample x epoch x scorer; the grade as the scorer gave it; "
        "epoch = repetition (rep = epoch - 1) of the same answer; unscored -> unparsed")


def grade(value: Any) -> str | None:
    """A score value as stored verdict text; None for no grade (NaN / None)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float):
        return str(int(value)) if float(value).is_integer() else f"{value:g}"
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, default=str)


def _grader(log: Any, scorer: str) -> tuple[str, float | None]:
    """(grader model, its configured temperature or None) of ``scorer`` from the eval spec."""
    for spec in log.eval.scorers or []:
        if spec.name != scorer:
            continue
        model = (spec.options or {}).get("model")
        if isinstance(model, list) and model:
            model = model[0]
        if isinstance(model, dict) and model.get("model"):
            temp = (model.get("config") or {}).get("temperature")
            return str(model["model"]), None if temp is None else float(temp)
        if isinstance(model, str) and model:
            return model, None
    roles = log.eval.model_roles or {}
    if "grader" in roles:
        role = roles["grader"]
        return str(getattr(role, "model", role)), None
    return str(log.eval.model), None


def _answer_ids(samples: list[Any]) -> tuple[dict[tuple[Any, int], str], int]:
    """item id per (sample id, epoch): the sample id, or ``<id>@answer-<k>`` when answers differ."""
    answers: dict[Any, list[str]] = {}
    for s in samples:
        text = s.output.completion if s.output else ""
        seen = answers.setdefault(s.id, [])
        if text not in seen:
            seen.append(text)
    out: dict[tuple[Any, int], str] = {}
    for s in samples:
        distinct = answers[s.id]
        text = s.output.completion if s.output else ""
        out[(s.id, s.epoch)] = str(s.id) if len(distinct) == 1 else f"{s.id}@answer-{distinct.index(text) + 1}"
    return out, sum(len(v) > 1 for v in answers.values())


def _verdict(value: Any, opts: dict[str, Any]) -> str | None:
    """The stored verdict: the grade as the scorer gave it; with a label scorer, read as task completion
    like the label (C / 1 / true PASS, I / 0 / false FAIL; any other grade kept as given), so the grader and
    the label speak one vocabulary."""
    if opts["label_scorer"]:
        return completion_label(value) or grade(value)
    return grade(value)


def _items_of(f: Path, log: Any, samples: list[Any], opts: dict[str, Any]
              ) -> tuple[dict[tuple[Any, int], str], dict[str, PointItem], int]:
    """(item id per (sample id, epoch), the items by id, samples whose answers or runs varied)."""
    if opts["transcripts"]:
        ids = sample_ids(samples)
        items = {it.item_id: it for it in transcript_items(log, f, label_scorer=opts["label_scorer"],
                                                           dataset=opts["dataset"])}
        return ids, items, sum(1 for i in set(ids.values()) if "@transcript-" in i and i.endswith("-1"))
    ids, n_varied = _answer_ids(samples)
    name = opts["dataset"] or str(log.eval.task)
    labels: dict[str, str | None] = {}
    if opts["label_scorer"]:
        if not any(opts["label_scorer"] in (s.scores or {}) for s in samples):
            raise ItemError(f"no scores from scorer {opts['label_scorer']!r} in this log", path=str(f),
                            field="label_scorer")
        for s in samples:
            score = (s.scores or {}).get(opts["label_scorer"])
            labels.setdefault(ids[(s.id, s.epoch)], completion_label(None if score is None else score.value))
    items = {}
    for s in samples:
        item_id = ids[(s.id, s.epoch)]
        items.setdefault(item_id, PointItem(
            item_id=item_id, dataset=name, question=text_of(s.input), response=s.output.completion if s.output else "",
            reference=text_of(s.target) or None, label=labels.get(item_id),
            meta={"source": "inspect", "sample_id": s.id, "log": f.name,
                  **({"label_scorer": opts["label_scorer"]} if opts["label_scorer"] else {})}))
    return ids, items, n_varied


def _log_rows(f: Path, log: Any, opts: dict[str, Any]) -> tuple[list[dict[str, Any]], list[PointItem], str]:
    samples = list(log.samples or [])
    if not samples:
        raise ItemError("the log has no samples (a header-only or failed eval)", path=str(f))
    if opts["label_scorer"] and opts["scorer"] == opts["label_scorer"]:
        raise ItemError(f"scorer {opts['scorer']!r} cannot be both the grader and the label", path=str(f),
                        field="label_scorer")
    ids, items, n_varied = _items_of(f, log, samples, opts)
    rows: list[dict[str, Any]] = []
    graders: dict[str, tuple[str, float | None]] = {}
    for s in samples:
        for scorer_name, score in (s.scores or {}).items():
            if (opts["scorer"] and scorer_name != opts["scorer"]) or scorer_name == opts["label_scorer"]:
                continue
            if scorer_name not in graders:
                model, temp = _grader(log, scorer_name)
                graders[scorer_name] = (model, None if temp is None else
                                        checked(TEMPERATURE, temp, path=str(f), field=f"{scorer_name}.temperature"))
            model, temp = graders[scorer_name]
            item = items[ids[(s.id, s.epoch)]]
            rows.append(judgment_dict(
                judge=opts["judge"] or model, dataset=item.dataset, item_id=item.item_id,
                protocol=opts["protocol"] or scorer_name, order=Order.AB.value,
                temperature=opts["temperature"] if opts["temperature"] is not None else (temp or 0.0),
                rep=int(s.epoch) - 1, verdict=_verdict(score.value, opts), label=item.label,
                raw_output=score.explanation,
                parse_detail=(f"inspect {scorer_name} epoch {s.epoch} value {score.value!r}; rule {RULE}"),
                pair=False))
            rows[-1]["_file"] = str(f)
    if opts["scorer"] and not rows:
        raise ItemError(f"no scores from scorer {opts['scorer']!r} in this log", path=str(f), field="scorer")
    temps = ", ".join(f"{k}=" + ("not recorded (0 assumed)" if t is None else f"{t:g}")
                      for k, (_, t) in graders.items())
    what = "transcript(s)" if opts["transcripts"] else "answer(s)"
    note = (f"{f.name}: task {log.eval.task}, {len(samples)} sample-epoch(s), {len(items)} {what}, {len(rows)} "
            f"grade(s), graders {sorted({m for m, _ in graders.values()})}, temperature {temps}"
            + (f"; labels from scorer {opts['label_scorer']!r}: "
               f"{sum(it.label is not None for it in items.values())} of {len(items)} labelled"
               if opts["label_scorer"] else "")
            + (f"; {n_varied} sample(s) had different {what} across epochs (separate items)" if n_varied else ""))
    return rows, list(items.values()), note


def import_inspect(path: str | Path, *, judge: str | None = None, protocol: str | None = None,
                   dataset: str | None = None, scorer: str | None = None, temperature: float | None = None,
                   label_scorer: str | None = None, transcripts: bool = False, **options: Any) -> ImportBatch:
    if options:
        raise ItemError(f"unknown option(s) for the inspect importer: {', '.join(sorted(options))}")
    p = Path(path)
    opts = {"judge": judge, "protocol": protocol, "dataset": dataset, "scorer": scorer,
            "temperature": temperature, "label_scorer": label_scorer, "transcripts": bool(transcripts)}
    judgments: list[dict[str, Any]] = []
    items: list[PairItem | PointItem] = []
    notes = [f"verdict rule: {RULE}" + (f"; scorer {label_scorer!r} is the gold label and every grade is read as "
                                        "task completion: C / 1 / true -> PASS, I / 0 / false -> FAIL, any other "
                                        "grade kept as given" if label_scorer else "")]
    for f in log_files(p):
        rows, its, note = _log_rows(f, read_log(f), opts)
        judgments += rows
        items += its
        notes.append(note)
    return ImportBatch(format="inspect", source=str(p), judgments=judgments, items=items, notes=notes)
