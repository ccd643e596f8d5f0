"""``verdictlab.audit(...)``: a judge audit in one call, from a script or a notebook.

It writes the run config a user would write (:class:`~verdictlab.engine.config.RunConfig`), runs it into
``run_dir`` (resuming what is already there, as ``verdictlab run`` does) and returns the report
(:func:`~verdictlab.report.build_report`).  A judge is an id (``sim:...``, ``openai:...``,
``python:package.module:function``, ``python:NAME``), a config entry with its call settings, or a
Python function, registered on the spot as ``python:<its name>`` (:func:`verdictlab.judge`).  The data is a
file (``.jsonl``, ``.csv``, ``.parquet``; ``NAME/PATH`` for a file of a fetched public benchmark), a
registered dataset name (``demo``, ``llmbar``...), a config entry (``{"name": "llmbar", "path": ...}``),
a list of dicts or a pandas DataFrame with the columns of the jsonl format (``item_id, question, response_a, response_b, label``); records are written to
``run_dir/data.jsonl`` first, so the run keeps the data it judged and a rerun resumes.

In a notebook, whose cell already runs an event loop, the run goes to a thread of its own
(:func:`~verdictlab.engine.run_config`); interrupting the kernel stops it as Ctrl-C stops
``verdictlab run``, and what was judged stays stored.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.items import ItemError
from ..errors import InputError

if TYPE_CHECKING:
    from ..core.policy import FigurePolicy

#: the loader of a data file, by its suffix
LOADER_BY_SUFFIX = {".jsonl": "jsonl", ".csv": "csv", ".parquet": "parquet"}
#: where records given as a list or a DataFrame are written, inside the run directory
DATA_FILE = "data.jsonl"
JudgeLike = str | Mapping[str, Any] | Callable[..., Any]


def judge_entry(judge: JudgeLike) -> str | dict[str, Any]:
    """A run config's judge entry for ``judge``: an id as is, a mapping as a copy, a function as
    ``python:NAME`` (its :func:`verdictlab.judge` declaration, or registered now under its own name), also
    as a mapping's ``id`` (``{"id": my_function, "concurrency": 4}``)."""
    from ..judges.python_function import DECLARATION, FUNCTIONS, JudgeFunction
    from ..judges.python_function import judge as register_function

    if isinstance(judge, str):
        return judge
    if isinstance(judge, Mapping):           # a config entry; its id may be a function too
        entry = dict(judge)
        if callable(entry.get("id")):
            entry["id"] = judge_entry(entry["id"])
        return entry
    if callable(judge):
        declared = getattr(judge, DECLARATION, None)
        if isinstance(declared, JudgeFunction):
            FUNCTIONS.register(declared.name, declared)     # the id names this function, not an older one
            return f"python:{declared.name}"
        register_function(judge)
        return f"python:{getattr(judge, DECLARATION).name}"
    raise TypeError(f"a judge is an id, a config entry or a function, got a {type(judge).__name__}")


def _records_jsonl(data: Any) -> str:
    """JSON Lines of a DataFrame (missing values as null) or a list of mappings (row named on error)."""
    if hasattr(data, "to_json") and hasattr(data, "columns"):      # a pandas DataFrame
        text = data.to_json(orient="records", lines=True, force_ascii=False, date_format="iso")
        return text if text.endswith("\n") or not text else text + "\n"
    lines = []
    for i, rec in enumerate(data, start=1):
        if not isinstance(rec, Mapping):
            raise ItemError(f"a record must be a mapping (dict), got a {type(rec).__name__}", path="data", row=i)
        try:
            lines.append(json.dumps(dict(rec), ensure_ascii=False, allow_nan=False))
        except (TypeError, ValueError) as exc:
            raise ItemError(f"cannot be written as JSON: {exc}", path="data", row=i) from None
    return "".join(line + "\n" for line in lines)


def _write_if_changed(path: Path, text: str) -> None:
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def dataset_entry(data: Any, run_dir: Path, *, dataset: str = "data") -> dict[str, Any]:
    """The run config's dataset entry for ``data`` (module docstring); records are written to
    ``run_dir/data.jsonl`` under the dataset name ``dataset``."""
    from ..datasets import dataset_names
    from ..datasets.fetched import resolve_source

    if isinstance(data, Mapping):
        entry = dict(data)
        if entry.get("path") is not None:          # a fetched dataset's NAME/PATH stands for its file
            entry["path"] = str(Path(resolve_source(entry["path"]) or entry["path"]).expanduser().resolve())
        return entry
    if isinstance(data, str | os.PathLike):
        path = Path(data).expanduser()
        if not path.exists() and not (isinstance(data, str) and data in dataset_names()):
            path = Path(resolve_source(data) or data).expanduser()
        if path.is_file():
            loader = LOADER_BY_SUFFIX.get(path.suffix.lower())
            if loader is None:
                raise InputError(f"data {str(data)!r}: no loader for {path.suffix or 'a file without a suffix'} "
                                 f"(known: {', '.join(LOADER_BY_SUFFIX)}); give data={{'name': LOADER, 'path': ...}}")
            return {"name": loader, "path": str(path.resolve())}
        if isinstance(data, str) and data in dataset_names():
            return {"name": data}
        raise InputError(f"data {str(data)!r} is neither a file nor a dataset name "
                         f"(known: {', '.join(dataset_names())})")
    if isinstance(data, Sequence) or (hasattr(data, "to_json") and hasattr(data, "columns")):
        text = _records_jsonl(data)
        if not text:
            raise InputError("data has no records")
        target = run_dir / DATA_FILE
        _write_if_changed(target, text)
        return {"name": "jsonl", "path": str(target.resolve()), "dataset": dataset}
    raise TypeError(f"data is a path, a dataset name, a config entry, a list of dicts or a pandas DataFrame, "
                    f"got a {type(data).__name__}")


def _as_list(value: Any) -> list[Any]:
    return [value] if isinstance(value, str | Mapping | int | float) or callable(value) else list(value)


def audit_config(*, judges: Any, data: Any, protocols: Any, orders: Any, repetitions: int, temperatures: Any,
                 decoding: Any, run_dir: Path, name: str, seed: int, cache: str,
                 budget: Mapping[str, Any] | None) -> Any:
    """The :class:`~verdictlab.engine.config.RunConfig` of an :func:`audit` call (a
    :class:`~verdictlab.engine.config.ConfigError` names the argument that is wrong)."""
    from ..engine.config import ConfigError, config_from_dict

    raw = {"name": name, "datasets": [dataset_entry(data, run_dir)],
           "judges": [judge_entry(j) for j in _as_list(judges)], "protocols": _as_list(protocols),
           "orders": _as_list(orders), "temperatures": _as_list(temperatures), "repetitions": repetitions,
           "decoding": _as_list(decoding), "seed": seed, "cache": cache, "budget": dict(budget or {})}
    try:
        return config_from_dict(raw)
    except ConfigError as exc:
        raise ConfigError(str(exc).replace("<config>", "verdictlab.audit()")) from None


def audit(judges: Any, data: Any, *, protocols: Any = ("direct",), orders: Any = ("AB", "BA"),
          repetitions: int = 3, temperatures: Any = (0.0,), decoding: Any = ("free",),
          run_dir: str | os.PathLike[str] | None = None, name: str = "audit", seed: int = 42, cache: str = "auto",
          budget: Mapping[str, Any] | None = None, policy: FigurePolicy | None = None, progress: bool = True) -> Any:
    """Audit ``judges`` on ``data`` and return the report (:class:`~verdictlab.report.model.Report`).

    ``judges``: ids, config entries or Python functions (one or a list); ``data``: a file, a dataset
    name, a config entry, a list of dicts or a DataFrame (module docstring).  ``protocols``, ``orders``,
    ``repetitions``, ``temperatures``, ``decoding``, ``seed``, ``cache`` and ``budget`` mean what they
    mean in a run config (docs/running.md); ``policy``, a :class:`~verdictlab.core.policy.FigurePolicy`,
    how the report's figures are computed (default: the report command's).  ``run_dir`` (default ``runs/<name>``) keeps the store: a
    second call with the same arguments resumes and judges nothing twice.  ``progress``: the bar, on a
    terminal or in the notebook's cell.  A run stopped early (budget, interrupt, a judge halted after
    failing again and again) warns with the reason, and the report shows what was judged."""
    from ..core.policy import FigurePolicy
    from ..engine import run_config
    from ..report import build_report

    if policy is not None and not isinstance(policy, FigurePolicy):
        raise TypeError(f"policy is a verdictlab.FigurePolicy, got a {type(policy).__name__}")
    rd = Path(run_dir) if run_dir is not None else Path("runs") / name
    config = audit_config(judges=judges, data=data, protocols=protocols, orders=orders, repetitions=repetitions,
                          temperatures=temperatures, decoding=decoding, run_dir=rd, name=name, seed=seed,
                          cache=cache, budget=budget)
    summary = run_config(config, rd, progress=progress)     # in a notebook's cell: in a thread of its own
    if summary.stopped:
        warnings.warn(f"the run in {rd} stopped early: {summary.stopped}; the report shows what was judged "
                      "(call audit again to resume)", stacklevel=2)
    return build_report(rd) if policy is None else build_report(rd, policy=policy)


__all__ = ["DATA_FILE", "LOADER_BY_SUFFIX", "audit", "audit_config", "dataset_entry", "judge_entry"]
