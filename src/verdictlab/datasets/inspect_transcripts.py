"""The ``inspect-transcripts`` loader: an inspect_ai evaluation log's samples as agent transcripts.

Read with inspect_ai's own log API (``inspect_ai.log.read_eval_log``; ``.eval`` or ``.json`` logs, a file
or a folder of them -- the ``inspect`` extra).  Each sample becomes a point item whose graded object is
the agent's run: ``question`` = the sample's input, ``response`` = the final answer
(``output.completion``), ``reference`` = the target, ``transcript`` = its messages (role, text, the tool
calls an assistant message made, each tool result with its tool and error), ``dataset`` = the task name
(``dataset`` renames it).

Label (task completed): the grade of the scorer named by ``label_scorer`` -- ``C`` / ``correct`` / 1 /
true is ``PASS``, ``I`` / ``incorrect`` / 0 / false is ``FAIL``; any other value (a partial credit, no
score) leaves the item unlabelled, with the value kept in ``meta.label_value``.  Without
``label_scorer`` the items are unlabelled.

Epochs: a sample run over several epochs gives one transcript per epoch; epochs whose transcripts are
the same (every message and the answer) are one item (``<sample id>``), and when a sample's epochs
differ each distinct transcript is its own item, ``<sample id>@transcript-<k>`` -- the rule the
``inspect`` importer applies to answers.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..core.items import ItemError, PairItem, PointItem, ToolCall, Transcript, TranscriptMessage
from ._common import check_no_options, check_unique, finish
from .registry import DatasetLoad

__all__ = ["LOG_SUFFIXES", "completion_label", "load_inspect_transcripts", "log_files", "read_log", "sample_ids",
           "text_of", "transcript_items", "transcript_of"]

LOG_SUFFIXES = (".eval", ".json")
_PASS = {"c", "correct", "pass", "passed", "true", "yes", "1"}
_FAIL = {"i", "incorrect", "fail", "failed", "false", "no", "0"}


def read_log(path: Path) -> Any:
    """The log at ``path`` through inspect_ai's reader; an :class:`ItemError` naming the file when it
    cannot be read (or inspect_ai is not installed)."""
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise ItemError("reading inspect_ai logs needs inspect_ai: pip install 'verdictlab[inspect]'",
                        path=str(path)) from None
    try:
        return read_eval_log(str(path))
    except Exception as exc:  # noqa: BLE001 - any unreadable log is bad input naming the file
        raise ItemError(f"not a readable inspect_ai log ({type(exc).__name__}: {exc})", path=str(path)) from None


def log_files(p: Path) -> list[Path]:
    """``p`` itself, or every ``.eval`` / ``.json`` log under the folder ``p``."""
    if p.is_file():
        return [p]
    if not p.exists():
        raise ItemError("file not found", path=str(p))
    files = sorted(f for f in p.rglob("*") if f.suffix in LOG_SUFFIXES and f.is_file())
    if not files:
        raise ItemError("no inspect_ai logs (*.eval, *.json) under this folder", path=str(p))
    return files


def text_of(value: Any) -> str:
    """An input / target as text: messages' contents joined, lists joined by newlines."""
    if isinstance(value, str):
        return value
    if isinstance(value, Iterable):
        parts = [v if isinstance(v, str) else getattr(v, "text", None) or str(getattr(v, "content", v))
                 for v in value]
        return "\n".join(parts)
    return "" if value is None else str(value)


def _message(m: Any) -> TranscriptMessage:
    role = str(getattr(m, "role", ""))
    if role not in ("system", "user", "assistant", "tool"):
        role = "user"
    calls = tuple(ToolCall(function=str(c.function), arguments=dict(c.arguments or {}), id=c.id)
                  for c in (getattr(m, "tool_calls", None) or ()))
    err = getattr(m, "error", None)
    return TranscriptMessage(role=role, content=str(getattr(m, "text", "") or ""), tool_calls=calls,  # type: ignore[arg-type]
                             tool_call_id=getattr(m, "tool_call_id", None), function=getattr(m, "function", None),
                             error=None if err is None else str(getattr(err, "message", err)))


def transcript_of(sample: Any) -> Transcript | None:
    """The sample's messages as a :class:`Transcript` (None when it has none)."""
    msgs = [_message(m) for m in getattr(sample, "messages", None) or ()]
    return Transcript(messages=tuple(msgs)) if msgs else None


def completion_label(value: Any) -> str | None:
    """A scorer's value as a task-completion label: PASS, FAIL or None (module docstring)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    key = str(value).strip().lower() if not isinstance(value, float) else f"{value:g}"
    return "PASS" if key in _PASS else "FAIL" if key in _FAIL else None


def _answer(sample: Any) -> str:
    return sample.output.completion if getattr(sample, "output", None) else ""


def sample_ids(samples: list[Any]) -> dict[tuple[Any, int], str]:
    """Item id per (sample id, epoch): the sample id, or ``<id>@transcript-<k>`` when its epochs' runs
    differ (module docstring)."""
    runs: dict[Any, list[str]] = {}
    keys: dict[tuple[Any, int], str] = {}
    for s in samples:
        t = transcript_of(s)
        key = json.dumps([t.model_dump(mode="json") if t else None, _answer(s)], sort_keys=True, default=str)
        seen = runs.setdefault(s.id, [])
        if key not in seen:
            seen.append(key)
        keys[(s.id, s.epoch)] = key
    return {(sid, ep): str(sid) if len(runs[sid]) == 1 else f"{sid}@transcript-{runs[sid].index(k) + 1}"
            for (sid, ep), k in keys.items()}


def transcript_items(log: Any, f: Path, *, label_scorer: str | None = None,
                     dataset: str | None = None) -> list[PointItem]:
    """The distinct transcripts of one log as point items (module docstring)."""
    samples = list(log.samples or [])
    if not samples:
        raise ItemError("the log has no samples (a header-only or failed eval)", path=str(f))
    if label_scorer and not any(label_scorer in (s.scores or {}) for s in samples):
        raise ItemError(f"no scores from scorer {label_scorer!r} in this log", path=str(f), field="label_scorer")
    ids = sample_ids(samples)
    name = dataset or str(log.eval.task)
    items: dict[str, PointItem] = {}
    for s in samples:
        item_id = ids[(s.id, s.epoch)]
        if item_id in items:
            continue
        meta: dict[str, Any] = {"source": "inspect", "sample_id": s.id, "epoch": s.epoch, "log": f.name}
        label = None
        if label_scorer:
            score = (s.scores or {}).get(label_scorer)
            value = None if score is None else score.value
            label = completion_label(value)
            meta["label_scorer"] = label_scorer
            if label is None:
                meta["label_value"] = value if isinstance(value, str | int | float | bool | None) else str(value)
        items[item_id] = PointItem(item_id=item_id, dataset=name, question=text_of(s.input), response=_answer(s),
                                   reference=text_of(s.target) or None, label=label, transcript=transcript_of(s),
                                   meta=meta)
    return list(items.values())


def load_inspect_transcripts(path: str | None = None, *, label_scorer: str | None = None,
                             dataset: str | None = None, limit: int | None = None,
                             **options: Any) -> DatasetLoad:
    check_no_options("inspect-transcripts", options)
    if path is None:
        raise ItemError("the inspect-transcripts loader reads an inspect_ai log: give its path", field="path")
    p = Path(path)
    items: list[PairItem | PointItem] = []
    names = set()
    for f in log_files(p):
        its = transcript_items(read_log(f), f, label_scorer=label_scorer, dataset=dataset)
        items += its
        names |= {it.dataset for it in its}
    if len(names) > 1:
        raise ItemError(f"the logs hold several tasks ({', '.join(sorted(names))}); read one task at a time or "
                        "name one dataset with the dataset option", path=str(p), field="dataset")
    check_unique(items, path=str(p))
    n_labelled = sum(it.label is not None for it in items)
    notes = [f"agent transcripts: {len(items)} item(s), {n_labelled} labelled by scorer {label_scorer!r}"
             if label_scorer else f"agent transcripts: {len(items)} item(s), unlabelled (no label_scorer)"]
    return finish(names.pop() if names else "inspect", items, source=str(p), notes=notes, limit=limit)
