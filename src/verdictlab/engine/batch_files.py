"""Offline batch files: a run's pending requests as an OpenAI batch JSONL file, and a
results file back into judgments -- so a judge can run on the user's own GPUs (``vllm run-batch``) or
through any OpenAI-batch-compatible service, and be audited like a live run.

* :func:`export_requests` prepares the run dir exactly like ``verdictlab run`` (items, meta, item
  checks), then writes one line per trial not yet stored, for the OpenAI-compatible judges of the
  config (the judges whose batch adapter writes such lines, :attr:`~verdictlab.judges.batch.BatchAdapter.offline_file`):
  ``{"custom_id": TRIAL_ID, "method": "POST", "url": "/v1/chat/completions", "body": {...}}``.
  The body is the adapter's (the same request, seed included, the live run sends).
  The store meta ``batch_export`` records the config the file came from.
* :func:`import_results` reads an output file of that format (OpenAI Batch API / vLLM ``run-batch``:
  ``{"custom_id", "response": {"status_code", "body"}, "error"}``), rebuilds each trial's request from
  the stored config and turns the answer into a judgment through the normal path: the judge's response
  reader, then the judge's caller (:meth:`~verdictlab.engine.caller.JudgeCaller.reserve` and
  :meth:`~verdictlab.engine.caller.JudgeCaller.record`: sanitiser, batch price, attempt row, cache
  entry under the config's cache policy), then :func:`~verdictlab.engine.trials.judgment_for`.  The whole file is
  checked first: a malformed line, a line without ``custom_id``, an unknown ``custom_id`` or one given
  twice is an error naming the line, and nothing is written.  A line that reports an error (``error``
  set, or a non-200 status) is stored as a failed row (verdict NULL, the error) -- counted, never
  guessed; ``export --retry-failed`` writes those requests again.  A trial already stored is skipped.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.design import Trial
from ..errors import InputError, StoreError
from ..judges.base import JudgeAPI, JudgeCallError
from ..judges.batch import BatchAdapter, Outcome
from ..store import RunStore
from .caller import CallRecords, CallResult, JudgeCaller, cache_allows
from .config import RunConfig, config_from_dict
from .prepare import PreparedRun, prepare_run
from .summary import EngineError
from .trials import RequestBuilder, judgment_for

EXPORT_META = "batch_export"


class BatchFileError(InputError):
    """A results file cannot be imported as asked (the message names the file and line)."""


@dataclass
class ExportResult:
    out: Path
    n_written: int
    n_done: int
    judges: list[str]


@dataclass
class ImportResult:
    n_answered: int = 0
    n_failed: int = 0          # lines that reported an error: stored as failed rows
    n_parse_failed: int = 0    # answered, but the verdict could not be parsed (verdict NULL)
    n_already: int = 0         # trials already stored: skipped
    judges: list[str] = field(default_factory=list)


def export_judge(judge_id: str) -> tuple[JudgeAPI, BatchAdapter]:
    """The judge (built offline: no key needed, nothing is called) and the batch adapter whose OpenAI
    batch lines a file holds (:attr:`~verdictlab.judges.batch.BatchAdapter.offline_file`)."""
    from ..judges import make_judge

    judge = make_judge(judge_id, offline=True)
    adapter = judge.batch_adapter()
    if adapter is None or not adapter.offline_file:
        raise EngineError(f"judge {judge_id!r}: batch files hold OpenAI chat-completions requests; provider "
                          f"{judge.provider!r} cannot be exported (use an openai: or openai-compatible: judge, "
                          "e.g. openai-compatible:MODEL@http://127.0.0.1:8000/v1 for vLLM)")
    return judge, adapter


Exported = Mapping[str, tuple[JudgeAPI, BatchAdapter]]


def _judges(cfg: RunConfig, only: str | None) -> dict[str, tuple[JudgeAPI, BatchAdapter]]:
    ids = cfg.judge_ids()
    if only is not None:
        if only not in ids:
            raise EngineError(f"--judge {only!r} is not a judge of this config (judges: {', '.join(ids)})")
        ids = [only]
    return {jid: export_judge(jid) for jid in ids}


def _requests(prepared: PreparedRun, judges: Exported,
              trials: list[Trial]) -> Iterator[tuple[Trial, Any, Any]]:
    """(trial, request, body) for ``trials``; a trial the protocol cannot present is skipped."""
    cfg = prepared.config
    specs = {j.id: j for j in cfg.judges}
    builders = {jid: RequestBuilder(j, specs[jid], seed=cfg.seed) for jid, (j, _) in judges.items()}
    for t in trials:
        try:
            req = builders[t.judge].build(t, prepared.items[(t.dataset, t.item_id)], prepared.protocols[t.protocol],
                                          t.trial_id)
            body, _ = judges[t.judge][1].body(req)
        except (JudgeCallError, ValueError, KeyError):
            continue
        yield t, req, body


def export_requests(cfg: RunConfig, run_dir: str | Path, out: str | Path, *, judge: str | None = None,
                    retry_failed: bool = False) -> ExportResult:
    """Write the pending requests of ``cfg`` (for its OpenAI-compatible judges) to ``out`` (JSONL)."""
    from .run import RunLock, _check_items_unchanged, _write_meta

    judges = _judges(cfg, judge)
    prepared = prepare_run(cfg)
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    out = Path(out)
    with RunLock(run_dir), RunStore(run_dir) as store:
        _check_items_unchanged(store, prepared.items)
        store.write_items(prepared.items.values())
        _write_meta(store, cfg, prepared, {jid: j for jid, (j, _) in judges.items()})
        mine = [t for t in prepared.trials if t.judge in judges]
        if retry_failed:
            store.delete_failed(t.trial_id for t in mine)
        done = store.done_trial_ids()
        todo = [t for t in mine if t.trial_id not in done]
        n = 0
        tmp = out.with_name(out.name + ".part")
        try:
            with tmp.open("w", encoding="utf-8") as fh:
                for t, _req, body in _requests(prepared, judges, todo):
                    fh.write(json.dumps({"custom_id": t.trial_id, "method": "POST", "url": "/v1/chat/completions",
                                         "body": body}) + "\n")
                    n += 1
            tmp.replace(out)
        except OSError as exc:
            raise InputError(f"{out}: cannot write the requests file ({exc.strerror or exc})") from exc
        exports = store.get_meta(EXPORT_META, []) or []
        exports.append({"file": str(out.resolve()), "judges": sorted(judges), "n_requests": n,
                        "exported_at": time.time()})
        store.set_meta(EXPORT_META, exports)
    return ExportResult(out, n, len(mine) - len(todo), sorted(judges))


def _read_results(path: Path, known: set[str]) -> dict[str, dict[str, Any]]:
    """Every line of a results file, checked before anything is written (module docstring)."""
    if not path.is_file():
        raise BatchFileError(f"{path}: results file not found")
    lines: dict[str, dict[str, Any]] = {}
    with path.open("rb") as fh:
        for no, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            try:
                line = json.loads(raw.decode("utf-8"))
            except UnicodeDecodeError:
                raise BatchFileError(f"{path}: line {no}: not UTF-8 text") from None
            except json.JSONDecodeError as exc:
                raise BatchFileError(f"{path}: line {no}: not a JSON object ({exc.msg})") from None
            if not isinstance(line, dict):
                raise BatchFileError(f"{path}: line {no}: not a JSON object")
            cid = line.get("custom_id")
            if not isinstance(cid, str) or not cid:
                raise BatchFileError(f"{path}: line {no}: field 'custom_id' is missing")
            if cid not in known:
                raise BatchFileError(f"{path}: line {no}: field 'custom_id': {cid[:80]!r} is not a trial of this "
                                     "run's exported judges (a results file of another run or config?)")
            if cid in lines:
                raise BatchFileError(f"{path}: line {no}: field 'custom_id': {cid[:80]!r} appears twice")
            if "response" not in line and "error" not in line:
                raise BatchFileError(f"{path}: line {no}: neither 'response' nor 'error' (not a batch output line)")
            lines[cid] = line
    return lines


def stored_config(store: RunStore) -> RunConfig:
    """The config the run dir was exported (or run) with, from its meta."""
    data = store.get_meta("config")
    if not isinstance(data, dict):
        raise EngineError(f"{store.run_dir}: no run config in this run dir; run `verdictlab batch export` first")
    data = dict(data)
    return config_from_dict({k: v for k, v in data.items() if k != "source"}, source=data.get("source"))


def import_results(results: str | Path, run_dir: str | Path) -> ImportResult:
    """Turn a batch results file into judgments of the run in ``run_dir`` (module docstring)."""
    from .run import RunLock, _check_items_unchanged

    run_dir = Path(run_dir)
    if not (run_dir / "run.sqlite").exists():
        raise StoreError(f"{run_dir}: no run store here; run `verdictlab batch export` into it first")
    with RunLock(run_dir), RunStore(run_dir) as store:
        exports = store.get_meta(EXPORT_META, []) or []
        if not exports:
            raise StoreError(f"{run_dir}: nothing was exported from this run dir (`verdictlab batch export`)")
        cfg = stored_config(store)
        judges = {jid: export_judge(jid) for jid in sorted({j for e in exports for j in e["judges"]})}
        prepared = prepare_run(cfg)
        _check_items_unchanged(store, prepared.items)
        trials = {t.trial_id: t for t in prepared.trials if t.judge in judges}
        lines = _read_results(Path(results), set(trials))
        done = store.done_trial_ids()
        result = ImportResult(judges=sorted(judges))
        result.n_already = sum(1 for cid in lines if cid in done)
        todo = [trials[cid] for cid in lines if cid not in done]
        records = CallRecords()
        rows = _judgments(prepared, judges, todo, lines, result, records)
        attempts, cache = records.drain()
        now = time.time()
        store.write_batch(judgments=rows, attempts=attempts, cache=[(*entry, now) for entry in cache])
    return result


def _judgments(prepared: PreparedRun, judges: Exported, todo: list[Trial],
               lines: dict[str, dict[str, Any]], result: ImportResult, records: CallRecords) -> list[Any]:
    """The rows of ``todo`` from their result lines, each answer recorded through its judge's caller
    (attempts and cache entries into ``records``).  A results file is the last word on its requests:
    a failed line is a failed row (``export --retry-failed`` sends it again), never retried here."""
    cfg = prepared.config
    specs = {j.id: j for j in cfg.judges}
    callers = {jid: JudgeCaller(judge, specs.get(jid), log=records) for jid, (judge, _) in judges.items()}
    rows: list[Any] = []
    for t, req, body in _requests(prepared, judges, todo):
        caller = callers[t.judge]
        adapter = judges[t.judge][1]
        out = adapter.line_outcome(lines[t.trial_id])
        resp = None
        if out.error is None:
            try:
                resp = adapter.response(out.answer, req, body, [])
            except JudgeCallError as exc:
                out = Outcome(error=f"unreadable answer in the results file: {exc}", decision=exc.decision)
        caller.reserve(t.trial_id)
        recorded = caller.record(t.trial_id, response=resp, error=out.error, decision=out.decision,
                                 cache_key=caller.cache_key(req, t.rep) if cache_allows(cfg.cache, t.temperature)
                                 else None, batch_price=True, can_retry=False)
        assert isinstance(recorded, CallResult)      # can_retry=False: the caller's answer is final
        row = judgment_for(t, prepared.items[(t.dataset, t.item_id)], prepared.protocols[t.protocol], recorded,
                           tid=t.trial_id, prompt_hash=caller.prompt_hash(req))
        rows.append(row)
        if recorded.response is None:
            result.n_failed += 1
            continue
        result.n_answered += 1
        if row.verdict is None:
            result.n_parse_failed += 1
    return rows


__all__ = ["BatchFileError", "ExportResult", "ImportResult", "export_judge", "export_requests", "import_results",
           "stored_config"]
