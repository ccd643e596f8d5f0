"""SummEval (Fabbri et al. 2021): summaries of CNN/DailyMail news articles rated by three expert
annotators on four attributes, each an integer 1-5 -- an ordinal grader's test set (``pointwise@1-5``).

Source: SummEval's paired annotation records (``model_annotations.aligned.paired.jsonl``), one JSON
object a line, or a folder of such files (the fetched ``summeval``: the same records split per system,
``model_output_annotations/M<k>_outputs_annotations.jsonl``; every ``*.jsonl`` of the folder is read,
in name order).  One record per summary: ``id`` (the CNN/DM document), ``model_id`` (the system),
``text`` (the article), ``decoded`` (the summary) and ``expert_annotations``: a list of the experts'
ratings, each ``{"coherence", "consistency", "fluency", "relevance"}``.

Each record is a :class:`~verdictlab.core.items.PointItem`: question = an instruction and the article,
response = the summary, label = the experts' rating of the chosen ``attribute`` (default ``coherence``:
the most spread of the four; ``consistency`` is 5 for most summaries), scale ``(1, 2, 3, 4, 5)``.
Rule for the label: the **median of the experts' integer ratings** (with an even number of experts, the
lower median), so it is always a level of the scale; the mean is not used, as it is not one.  The other
attributes' medians and every expert's ratings are in ``meta``.  Item id: ``<doc id>:<system id>``.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from ..core.items import ItemError, PointItem
from ._common import check_no_options, check_unique, finish, read_records, require_path
from .registry import DatasetLoad

ATTRIBUTES: tuple[str, ...] = ("coherence", "consistency", "fluency", "relevance")
SCALE: tuple[int, ...] = (1, 2, 3, 4, 5)
INSTRUCTION = "Summarize the following news article."


def _files(p: Path) -> list[Path]:
    if not p.is_dir():
        return [p]
    files = sorted(p.glob("*.jsonl"))
    if not files:
        raise ItemError("no *.jsonl file in the folder", path=str(p))
    return files


def _text(rec: dict[str, Any], field: str, *, src: str, row: int) -> str:
    v = rec.get(field)
    if not isinstance(v, str) or not v.strip():
        raise ItemError(f"must be a non-empty string, got {type(v).__name__}", path=src, row=row, field=field)
    return v


def _experts(rec: dict[str, Any], *, src: str, row: int) -> list[dict[str, int]]:
    v = rec.get("expert_annotations")
    if not isinstance(v, list) or not v:
        raise ItemError("must be a non-empty list of the experts' ratings", path=src, row=row,
                        field="expert_annotations")
    out = []
    for k, e in enumerate(v):
        if not isinstance(e, dict):
            raise ItemError(f"expert {k + 1}: must be an object", path=src, row=row, field="expert_annotations")
        ratings = {}
        for a in ATTRIBUTES:
            r = e.get(a)
            if isinstance(r, float) and r.is_integer():
                r = int(r)
            if isinstance(r, bool) or not isinstance(r, int) or r not in SCALE:
                raise ItemError(f"expert {k + 1}: must be an integer rating 1-5, got {r!r}", path=src, row=row,
                                field=f"expert_annotations.{a}")
            ratings[a] = r
        out.append(ratings)
    return out


def load_summeval(path: str | None = None, *, attribute: str = "coherence", dataset: str | None = None,
                  limit: int | None = None, **options: Any) -> DatasetLoad:
    check_no_options("summeval", options)
    if attribute not in ATTRIBUTES:
        raise ItemError(f"attribute must be one of {', '.join(ATTRIBUTES)}, got {attribute!r}", field="attribute")
    p = require_path(path, "summeval")
    name = dataset or "summeval"
    items: list[PointItem] = []
    rows: list[int] = []
    for f in _files(p):
        src = str(f)
        for row, rec in read_records(f):
            doc, system = _text(rec, "id", src=src, row=row), _text(rec, "model_id", src=src, row=row)
            article, summary = _text(rec, "text", src=src, row=row), _text(rec, "decoded", src=src, row=row)
            experts = _experts(rec, src=src, row=row)
            ratings = {a: int(statistics.median_low(e[a] for e in experts)) for a in ATTRIBUTES}
            items.append(PointItem(item_id=f"{doc}:{system}", dataset=name, question=f"{INSTRUCTION}\n\n{article}",
                                   response=summary, label=ratings[attribute], scale=SCALE,
                                   meta={"source": "summeval", "doc_id": doc, "system": system, "file": f.name,
                                         "row": row, "ratings": ratings, "experts": experts}))
            rows.append(row)
    check_unique(items, path=str(p), rows=rows)
    return finish(name, list(items), source=str(p), limit=limit,
                  notes=[f"pointwise items; label = the median of the experts' {attribute} ratings on the scale 1-5"])
