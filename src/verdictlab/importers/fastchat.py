"""Import FastChat MT-Bench pairwise judgments (``data/mt_bench/model_judgment/*_pair.jsonl``).

Each line is one match of FastChat's ``play_a_match_pair``: ``question_id, model_1, model_2,
g1_winner, g2_winner, judge ([judge model, prompt name]), g1_user_prompt, g1_judgment,
g2_user_prompt, g2_judgment, turn, tstamp``.

- Game 1 showed model_1's answer first (as "A"); game 2 showed model_2's answer first.  FastChat maps
  both games' winners to MODEL names before writing (``g1_map = {"A": "model_1", "B": "model_2"}``,
  ``g2_map = {"A": "model_2", "B": "model_1"}`` in ``fastchat/llm_judge/common.py``), so
  ``g1_winner`` / ``g2_winner`` are ``"model_1"``, ``"model_2"``, ``"tie"`` or ``"error"`` in the
  same (unswapped) terms.  ``"error"`` -> verdict NULL, parse_status "failed".
- Canonical order: the two model names sorted (``response_a`` = alphabetically first model), as in
  the ``mtbench-human`` loader, and the same item id ``"<qid>-<A>-vs-<B>-t<turn>"`` -- so human labels
  can be attached with ``items=`` (``verdictlab import fastchat ... --items mtbench-human
  --items-path ...``).  Game 1 is order AB when model_1 is the canonical A, else BA; game 2 the other.
- judge = the judge model (``gpt-4``), protocol = FastChat's prompt name (``pair-v2``,
  ``pair-v2-multi-turn``, ``pair-math-v1`` ...), dataset ``mt-bench`` unless given.
Single-answer grading files (``*_single.jsonl``, with ``score``) are not pairwise and are refused.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core.items import ItemError, Problems, text_id
from ..core.vocab import order_showing_first
from ..datasets._common import get_field, read_records
from ..datasets.mtbench_human import pair_item_id
from ._batch import ImportBatch, judgment_row

WINNERS = ("model_1", "model_2", "tie", "error")
RULE = ("fastchat: g1 showed model_1 first, g2 model_2 first; g1_winner/g2_winner name MODELS (model_1, "
        "model_2, tie), mapped to the canonical side (response_a = alphabetically first model); error -> unparsed")


def _files(p: Path) -> list[Path]:
    if p.is_file():
        return [p]
    files = sorted(p.rglob("*_pair.jsonl")) or sorted(p.rglob("*.jsonl"))
    if not files:
        raise ItemError("no FastChat judgment files (*_pair.jsonl) under this folder", path=str(p))
    return files


def import_fastchat(path: str | Path, *, judge: str | None = None, protocol: str | None = None,
                    dataset: str | None = None, temperature: float = 0.0, rep: int = 0,
                    **options: Any) -> ImportBatch:
    if options:
        raise ItemError(f"unknown option(s) for the fastchat importer: {', '.join(sorted(options))}")
    p = Path(path)
    if not p.exists():
        raise ItemError("file not found", path=str(p))
    name = dataset or "mt-bench"
    judgments: list[dict[str, Any]] = []
    notes: list[str] = [f"verdict rule: {RULE}"]
    problems = Problems(str(p))          # every bad record of every file at once
    for f in _files(p):
        src = str(f)
        rows = read_records(f, problems=problems)
        n_before = len(judgments)
        for row, rec in rows:
            try:
                judgments += _match_rows(rec, src=src, row=row, judge=judge, protocol=protocol, dataset=name,
                                         temperature=temperature, rep=rep)
            except ItemError as exc:
                problems.add(exc)
        n_err = sum(r["verdict"] is None for r in judgments[n_before:])
        notes.append(f"{f.name}: {len(rows)} match(es), {n_err} unparsed verdict(s)")
    problems.raise_if_any()
    return ImportBatch(format="fastchat", source=str(p), judgments=judgments, notes=notes)


def _judge_names(rec: dict[str, Any], *, src: str, row: int) -> tuple[str, str | None]:
    raw_judge = get_field(rec, "judge", path=src, row=row)
    if isinstance(raw_judge, list | tuple) and len(raw_judge) == 2:
        j_model, j_prompt = (text_id(x, path=src, row=row, field="judge") for x in raw_judge)
        return j_model, j_prompt
    if isinstance(raw_judge, str):
        return raw_judge, None
    raise ItemError(f"must be [judge model, prompt name], got {raw_judge!r}", path=src, row=row, field="judge")


def _match_rows(rec: dict[str, Any], *, src: str, row: int, judge: str | None, protocol: str | None,
                dataset: str, temperature: float, rep: int) -> list[dict[str, Any]]:
    """The two judgment rows (games g1 and g2) of one FastChat match record."""
    if "score" in rec or "m1_score" in rec:
        raise ItemError("single-answer grading record; only pairwise judgments can be imported",
                        path=src, row=row, field="score")
    # ids and names are text or integers, never str() of null, a list or an object
    qid, m1, m2 = (text_id(get_field(rec, f, path=src, row=row), path=src, row=row, field=f)
                   for f in ("question_id", "model_1", "model_2"))
    turn = get_field(rec, "turn", path=src, row=row)
    if isinstance(turn, bool) or not isinstance(turn, int) or turn < 1:
        raise ItemError(f"must be a positive integer, got {turn!r}", path=src, row=row, field="turn")
    j_model, j_prompt = _judge_names(rec, src=src, row=row)
    j = judge or j_model
    proto = protocol or j_prompt
    if not proto:
        raise ItemError("no prompt name in 'judge'; pass --protocol", path=src, row=row, field="judge")
    canon_a, _ = sorted((m1, m2))
    side = {"model_1": "A" if m1 == canon_a else "B", "model_2": "A" if m2 == canon_a else "B"}
    item_id = pair_item_id(qid, m1, m2, turn)
    out = []
    # game 1 shows model_1 first; game 2 shows model_2 first
    for game, shown_first in (("g1", "model_1"), ("g2", "model_2")):
        field = f"{game}_winner"
        w = get_field(rec, field, path=src, row=row)
        if w not in WINNERS:
            raise ItemError(f"must be one of {list(WINNERS)}, got {w!r}", path=src, row=row, field=field)
        verdict = None if w == "error" else ("tie" if w == "tie" else side[w])
        raw = rec.get(f"{game}_judgment")
        r = judgment_row(
            judge=j, dataset=dataset, item_id=item_id, protocol=proto, order=order_showing_first(side[shown_first]),
            temperature=temperature, rep=rep, verdict=verdict, label=None,
            category=f"turn-{turn}", raw_output=raw if isinstance(raw, str) else None,
            parse_detail=(f"FastChat {field}={w!r}" if verdict is not None
                          else f"FastChat recorded {field}='error' (judgment not parsed)"))
        r["_row"], r["_file"] = row, src
        out.append(r)
    return out
