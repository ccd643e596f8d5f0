"""RAGTruth (Wu et al. 2024; annotations MIT): responses of six models to retrieval-augmented tasks
(QA, data-to-text, summarisation), each annotated by people with its hallucinated spans -- a binary
faithfulness grader's test set (``rubric`` with a faithfulness criterion, PASS = faithful).

Source: the release's folder with ``response.jsonl`` and ``source_info.jsonl`` (``path`` names the folder
or its ``response.jsonl``).  Each response is a :class:`~verdictlab.core.items.PointItem`: question = the
prompt the model was given (the task and its retrieved material), response = the response, label
``FAIL`` when annotators marked a hallucinated span (a span marked ``implicit_true`` -- right, though not
in the material -- does not count) and ``PASS`` otherwise; category = the task type; ``meta`` keeps the
model, the source id, the span types and the release's ``quality`` flag.  ``split`` keeps ``test``
(default), ``train`` or ``all``.  The source texts (news articles, reviews, web passages) are under their
owners' terms: the project does not ship them; fetch the release.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core.items import ItemError, PointItem
from ._common import check_no_options, check_unique, finish, read_records, require_path
from .registry import DatasetLoad

SPLITS: tuple[str, ...] = ("test", "train", "all")


def _files(p: Path) -> tuple[Path, Path]:
    folder = p if p.is_dir() else p.parent
    return folder / "response.jsonl", folder / "source_info.jsonl"


def _prompts(path: Path) -> dict[str, tuple[str, str | None]]:
    out: dict[str, tuple[str, str | None]] = {}
    for row, rec in read_records(path):
        sid, prompt = rec.get("source_id"), rec.get("prompt")
        if not isinstance(sid, str | int) or isinstance(sid, bool):
            raise ItemError(f"must be text or an integer, got {sid!r}", path=str(path), row=row, field="source_id")
        if not isinstance(prompt, str):
            raise ItemError("must be a string", path=str(path), row=row, field="prompt")
        task = rec.get("task_type")
        out[str(sid)] = (prompt, task if isinstance(task, str) else None)
    return out


def _label(spans: Any, *, src: str, row: int) -> tuple[str, list[str]]:
    if not isinstance(spans, list) or not all(isinstance(s, dict) for s in spans):
        raise ItemError("must be a list of span objects", path=src, row=row, field="labels")
    counted = [s for s in spans if not s.get("implicit_true")]
    return ("FAIL" if counted else "PASS"), sorted({str(s.get("label_type")) for s in counted})


def load_ragtruth(path: str | None = None, *, split: str = "test", dataset: str | None = None,
                  limit: int | None = None, **options: Any) -> DatasetLoad:
    check_no_options("ragtruth", options)
    if split not in SPLITS:
        raise ItemError(f"split must be one of {', '.join(SPLITS)}, got {split!r}", field="split")
    responses, sources = _files(require_path(path, "ragtruth"))
    if not sources.is_file():
        raise ItemError("file not found (RAGTruth keeps the prompts in source_info.jsonl beside response.jsonl)",
                        path=str(sources))
    prompts = _prompts(sources)
    src, name = str(responses), dataset or "ragtruth"
    items: list[PointItem] = []
    rows: list[int] = []
    for row, rec in read_records(responses):
        if split != "all" and rec.get("split") != split:
            continue
        sid = str(rec.get("source_id"))
        if sid not in prompts:
            raise ItemError(f"source_id {sid!r} is not in source_info.jsonl", path=src, row=row, field="source_id")
        if not isinstance(rec.get("response"), str):
            raise ItemError("must be a string", path=src, row=row, field="response")
        label, kinds = _label(rec.get("labels"), src=src, row=row)
        prompt, task = prompts[sid]
        items.append(PointItem(
            item_id=str(rec.get("id")), dataset=name, question=prompt, response=rec["response"], label=label,
            category=task, meta={"source": "ragtruth", "row": row, "source_id": sid, "model": rec.get("model"),
                                 "span_types": kinds, "quality": rec.get("quality")}))
        rows.append(row)
    check_unique(items, path=src, rows=rows)
    return finish(name, list(items), source=src, limit=limit,
                  notes=[f"pointwise items ({split} split); label FAIL = a hallucinated span marked by annotators"])
