"""Import published LLMBar judge runs (``result.json`` files) as judgments.

A result file is the split's records, each with ``"results": [..., {"swap = False": {"completion":
[...], "winner": "1"|"2"|null}, "swap = True": {...}}]``.  The LAST element of ``results`` holds the
final verdicts (multi-step strategies append earlier steps before it).

- ``swap = False`` showed output_1 first: order ``AB``.  ``swap = True`` showed output_2 first:
  order ``BA``, and its winner is ALREADY mapped back to the original numbering, so both winners are
  canonical as they stand: "1" -> "A", "2" -> "B".
- ``null`` means the judge's output could not be parsed: verdict NULL, parse_status "failed".
- Structures seen in the repository: one step (Vanilla, CoT, ...), two steps for Swap strategies when
  the first round disagreed (round 1, then the final verdicts), Rating steps with ``score_1`` /
  ``score_2`` and no ``completion`` (the scores become ``raw_output``).  Labels may be 1/2 or "1"/"2".
- Items and ids are those of the ``llmbar`` loader: dataset ``llmbar``, item ``"<split>-<index>"``,
  category = split, so imported runs line up with fresh runs on the same pairs.

Judge, protocol (LLMBar "strategy") and split come from the path when it says them:
``<split>_<judge>_<strategy>.result.json`` (e.g. ``Natural_GPT-4_Vanilla.result.json``; the split is
``Natural`` or ``Adversarial_<Name>``), or the repository layout
``.../<Natural | Adversarial/<Name>>/evaluators/<judge>/<strategy>/result.json``.  ``judge``,
``protocol`` and ``dataset`` options override them; ``split`` names the split of a file whose name
does not.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ..core.items import ItemError, PairItem, Problems
from ..core.vocab import Order
from ..datasets._common import read_records
from ..datasets.llmbar import records_to_items
from ._batch import ImportBatch, judgment_row

WINNERS = {"1": "A", "2": "B"}
ORDERS = (("swap = False", Order.AB.value), ("swap = True", Order.BA.value))
_FLAT = re.compile(r"^(?P<split>Natural|Adversarial_[A-Za-z0-9]+)_(?P<judge>[^_]+)_(?P<protocol>.+)$")


def parse_result_path(path: Path) -> dict[str, str]:
    """What the path says about split, judge and strategy (keys present only when known)."""
    name = path.name
    if name == "result.json":
        parts = path.parts
        if "evaluators" in parts:
            k = len(parts) - 1 - parts[::-1].index("evaluators")
            out: dict[str, str] = {}
            if len(parts) - k >= 4:  # evaluators/<judge>/<strategy>/result.json
                out["judge"], out["protocol"] = parts[k + 1], parts[k + 2]
            before = parts[:k]
            if before:
                if len(before) >= 2 and before[-2] == "Adversarial":
                    out["split"] = f"Adversarial_{before[-1]}"
                else:
                    out["split"] = before[-1]
            return out
        return {}
    stem = name[: -len(".result.json")] if name.endswith(".result.json") else path.stem
    m = _FLAT.match(stem)
    if m:
        return m.groupdict()
    return {"split": stem}


def result_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    files = sorted(set(path.rglob("*.result.json")) | set(path.rglob("result.json")))
    if not files:
        raise ItemError("no LLMBar result files (*.result.json or result.json) under this folder",
                        path=str(path))
    return files


def _raw_output(completion: Any) -> str | None:
    if completion is None:
        return None
    if isinstance(completion, list) and completion and isinstance(completion[0], str):
        return completion[0]
    if isinstance(completion, str):
        return completion
    return json.dumps(completion, ensure_ascii=False)


def _rating_scores(step: dict[str, Any]) -> str | None:
    """Rating strategies keep no completion per order, only the two outputs' scores in the step."""
    if "score_1" not in step and "score_2" not in step:
        return None
    return json.dumps({k: step.get(k) for k in ("score_1", "score_2")}, ensure_ascii=False)


RULE = ("llmbar: swap = False -> order AB, swap = True -> order BA; winner '1' -> A, '2' -> B, both already "
        "in the original numbering (last element of 'results'); null -> unparsed")


def _last_step(rec: dict[str, Any], *, src: str, row: int) -> dict[str, Any]:
    results = rec.get("results")
    if not isinstance(results, list) or not results:
        raise ItemError("missing or empty 'results' list", path=src, row=row, field="results")
    last = results[-1]
    if not isinstance(last, dict) or not any(k in last for k, _ in ORDERS):
        raise ItemError("last element of 'results' has neither 'swap = False' nor 'swap = True'",
                        path=src, row=row, field="results")
    return last


def _game_verdict(last: dict[str, Any], key: str, *, src: str, row: int) -> tuple[Any, str | None]:
    """(raw winner, canonical verdict) of one order's game."""
    game = last[key]
    if not isinstance(game, dict) or "winner" not in game:
        raise ItemError(f"'{key}' has no 'winner'", path=src, row=row, field="results")
    w = game["winner"]
    if w is not None and str(w) not in WINNERS:
        raise ItemError(f"'{key}' winner must be '1', '2' or null, got {w!r}", path=src,
                        row=row, field="results")
    return w, None if w is None else WINNERS[str(w)]


def _file_names(f: Path, judge: str | None, protocol: str | None, split: str | None) -> tuple[str, str, str]:
    info = parse_result_path(f)
    j, proto, sp = judge or info.get("judge"), protocol or info.get("protocol"), split or info.get("split")
    for what, val in (("judge", j), ("protocol", proto), ("split", sp)):
        if not val:
            raise ItemError(f"cannot tell the {what} from the file name; pass --{what}", path=str(f),
                            field=what)
    return str(j), str(proto), str(sp)


def import_llmbar(path: str | Path, *, judge: str | None = None, protocol: str | None = None,
                  dataset: str | None = None, split: str | None = None,
                  temperature: float = 0.0, rep: int = 0, **options: Any) -> ImportBatch:
    if options:
        raise ItemError(f"unknown option(s) for the llmbar importer: {', '.join(sorted(options))}")
    p = Path(path)
    if not p.exists():
        raise ItemError("file not found", path=str(p))
    name = dataset or "llmbar"
    judgments: list[dict[str, Any]] = []
    items: list[PairItem] = []
    notes: list[str] = [f"verdict rule: {RULE}"]
    problems = Problems(str(p))          # every bad record of every file at once
    for f in result_files(p):
        src = str(f)
        j, proto, sp = _file_names(f, judge, protocol, split)
        rows = read_records(f, problems=problems)
        file_items = records_to_items(rows, split=sp, path=src, dataset=name)
        items.extend(file_items)
        n_before = len(judgments)
        for (row, rec), item in zip(rows, file_items, strict=True):
            try:
                judgments += _games(rec, item, src=src, row=row, judge=j, protocol=proto, dataset=name,
                                    temperature=temperature, rep=rep)
            except ItemError as exc:
                problems.add(exc)
        n_failed = sum(r["verdict"] is None for r in judgments[n_before:])
        notes.append(f"{f.name}: judge={j}, protocol={proto}, split={sp}, {len(rows)} pairs, "
                     f"{n_failed} unparsed verdict(s)")
    problems.raise_if_any()
    return ImportBatch(format="llmbar", source=str(p), judgments=judgments, items=list(items),
                       notes=notes)


def _games(rec: dict[str, Any], item: PairItem, *, src: str, row: int, judge: str, protocol: str, dataset: str,
           temperature: float, rep: int) -> list[dict[str, Any]]:
    """The judgment rows of one LLMBar result record: the last step's game in each order it ran."""
    last = _last_step(rec, src=src, row=row)
    out = []
    for key, order in ORDERS:
        if key not in last:
            continue
        w, verdict = _game_verdict(last, key, src=src, row=row)
        out.append(judgment_row(
            judge=judge, dataset=dataset, item_id=item.item_id, protocol=protocol, order=order,
            temperature=temperature, rep=rep, verdict=verdict, label=item.label,
            category=item.category, raw_output=_raw_output(last[key].get("completion")) or _rating_scores(last),
            parse_detail=(f"LLMBar winner {w!r} ({key}; already in original numbering)"
                          if verdict else f"LLMBar recorded no winner ({key})")))
        out[-1]["_row"], out[-1]["_file"] = row, src
    return out
