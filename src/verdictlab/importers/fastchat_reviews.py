"""FastChat-style review folders (the Vicuna-80 evaluation's ``review`` files and the releases that copy
them): one JSON Lines file per system pair, one review per line.

Record: ``review_id, question_id, answer1_id, answer2_id, reviewer_id, text, score``.  ``text`` is the
reviewer's output; ``score`` is either a score pair ``[s1, s2]`` (answer 1's and answer 2's scores: the
higher wins, equal scores are a tie) or a three-class verdict (``1`` answer 1 is better, ``2`` answer 2,
``3`` a tie).  ``[-1, -1]`` (and ``-1``) is FastChat's mark of a review whose score it could not read:
stored as a failed parse (verdict NULL), never as a verdict.

A review's systems and shown order come from its answer ids, joined to the answer records
(:class:`verdictlab.importers._keys.Answers`: ``answer_id, model_id, text, question_id`` in
``answer_*.jsonl`` or ``*generations*.jsonl``; ``answers`` / ``--answers`` names the folder or file,
else the review folder, its parent and the parent's ``generations/`` are searched) -- never from the file
name alone, since releases name their files in another order than the one they show the answers in.
Answer 1 is the response shown first.  The item is the question's pair of two systems
(``<question_id>-<A>-vs-<B>``, A the system whose name sorts first), so both presentation orders,
from two files, meet on one item; the question texts come from a ``*question*.jsonl`` file found the
same way (``question_id, text``), else the item's question is empty (noted).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.items import ItemError, PairItem, Problems, make_pair_item, text_id
from ..core.vocab import swap
from ._batch import ImportBatch, check_batch, check_options, judgment_row
from ._keys import Answers, answer_files, files_of, pair_item_id, shown_pair

RULE = ("fastchat-reviews: score [s1, s2] -> the higher-scored answer wins, equal -> tie; three-class 1 -> "
        "answer 1, 2 -> answer 2, 3 -> tie; [-1, -1] / -1 -> not read (failed, no verdict); answer 1 is the "
        "response shown first; systems and order from the answer ids")
_THREE_CLASS = {1: "A", 2: "B", 3: "tie"}


@dataclass
class ReviewSource:
    """What every review file of one import shares: its answers and questions, and the trial key."""

    answers: Answers
    questions: dict[str, str]
    judge: str
    protocol: str
    dataset: str
    temperature: float
    rep: int
    items: dict[str, PairItem] = field(default_factory=dict)


def shown_verdict(score: Any, *, path: str, row: int) -> tuple[str | None, str]:
    """(verdict as shown -- ``A`` = answer 1 --, parse detail) of a review's ``score``."""
    if isinstance(score, list):
        if len(score) != 2 or not all(isinstance(s, int | float) and not isinstance(s, bool) for s in score):
            raise ItemError(f"a score pair must be two numbers, got {score!r}"[:200], path=path, row=row, field="score")
        if score[0] == -1 and score[1] == -1:
            return None, "score [-1, -1]: the review's scores were not read (FastChat's mark); no verdict"
        first, second = score
        return ("A" if first > second else "B" if second > first else "tie"), f"score pair {score!r}"
    if isinstance(score, int) and not isinstance(score, bool):
        if score == -1:
            return None, "score -1: the review's verdict was not read (FastChat's mark); no verdict"
        if score in _THREE_CLASS:
            return _THREE_CLASS[score], f"three-class score {score}"
    raise ItemError(f"must be a score pair [s1, s2] or a three-class verdict 1 / 2 / 3, got {score!r}"[:200],
                    path=path, row=row, field="score")


def read_review_file(f: Path, src: ReviewSource, problems: Problems) -> list[dict[str, Any]]:
    """The judgment rows of one review file (items into ``src.items``); problems are collected."""
    from ..datasets._common import read_records

    rows: list[dict[str, Any]] = []
    for row, rec in read_records(f, problems=problems):     # a line that is not JSON: one problem among them
        try:
            rows.append(_review_row(rec, f, row, src))
        except ItemError as exc:
            problems.add(exc)
    return rows


def _review_row(rec: dict[str, Any], f: Path, row: int, src: ReviewSource) -> dict[str, Any]:
    path = str(f)
    first = src.answers.get(rec.get("answer1_id"), path=path, row=row, field="answer1_id")
    second = src.answers.get(rec.get("answer2_id"), path=path, row=row, field="answer2_id")
    pair = shown_pair(first, second, path=path, row=row, field="answer2_id")
    qid = text_id(rec.get("question_id"), path=path, row=row, field="question_id")
    for ans, name in ((first, "answer1_id"), (second, "answer2_id")):
        if ans.question_id is not None and ans.question_id != qid:
            raise ItemError(f"answer {rec.get(name)!r} answers question {ans.question_id}, the review question {qid}",
                            path=path, row=row, field=name)
    shown, detail = shown_verdict(rec.get("score"), path=path, row=row)
    item_id = pair_item_id(qid, pair.system_a, pair.system_b)
    if item_id not in src.items:
        src.items[item_id] = make_pair_item(
            {"item_id": item_id, "dataset": src.dataset, "question": src.questions.get(qid, ""),
             "response_a": pair.response_a, "response_b": pair.response_b, "system_a": pair.system_a,
             "system_b": pair.system_b, "meta": {"question_id": qid}}, path=path, row=row)
    score = rec.get("score")
    scores = None
    if isinstance(score, list) and detail.startswith("score pair"):
        a_first = pair.order == "AB"
        scores = {"score_a": score[0] if a_first else score[1], "score_b": score[1] if a_first else score[0]}
    text = rec.get("text")
    r = judgment_row(judge=src.judge, dataset=src.dataset, item_id=item_id, protocol=src.protocol,
                     order=pair.order, temperature=src.temperature, rep=src.rep, verdict=swap(shown, pair.order),
                     label=None, raw_output=text if isinstance(text, str) else None,
                     parse_detail=f"{f.name} row {row}: {detail}", scores=scores, system_a=pair.system_a,
                     system_b=pair.system_b)
    r["_row"], r["_file"] = row, str(f)
    return r


def read_questions(path: Path | None) -> dict[str, str]:
    """``{question_id: text}`` of a ``*question*.jsonl`` file (empty without one)."""
    from ..datasets._common import read_records

    if path is None:
        return {}
    out = {}
    for row, rec in read_records(path):
        qid = text_id(rec.get("question_id"), path=str(path), row=row, field="question_id")
        text = rec.get("text", rec.get("turns"))
        if isinstance(text, list) and text and isinstance(text[0], str):
            text = text[0]
        if not isinstance(text, str):
            raise ItemError("must be the question's text", path=str(path), row=row, field="text")
        out[qid] = text
    return out


def find_questions(*folders: Path) -> Path | None:
    """The first ``*question*.jsonl`` in these folders or their sub-folders one level down."""
    for folder in folders:
        if not folder.is_dir():
            continue
        found = sorted(folder.glob("*question*.jsonl")) + sorted(folder.glob("*/*question*.jsonl"))
        if found:
            return found[0]
    return None


def _answer_folder(root: Path) -> Path:
    for candidate in (root, root.parent, root.parent / "generations", root / "generations"):
        if answer_files(candidate):
            return candidate
    raise ItemError("no answer files (answer_*.jsonl or *generations*.jsonl) beside the reviews; give --answers",
                    path=str(root))


def import_fastchat_reviews(path: str | Path, *, judge: str | None = None, protocol: str | None = None,
                            dataset: str | None = None, temperature: float | None = None, rep: int | None = None,
                            answers: str | Path | None = None, questions: str | Path | None = None,
                            keep: Callable[[Path], bool] | None = None) -> ImportBatch:
    """Read a review file or a folder of them (module docstring).  ``judge`` defaults to the folder's
    name (``ratings-gpt4`` -> ``gpt4``); ``keep`` (Python only) chooses the files of a folder."""
    p = Path(path)
    check_options({"temperature": temperature, "rep": rep}, path=str(p))
    files = [f for f in files_of(p, (".jsonl",)) if not f.name.startswith("answer_") or "-vs-" in f.name]
    folder = p if p.is_dir() else p.parent
    kept = [f for f in files if keep is None or keep(f)]
    answer_source = Path(answers) if answers is not None else _answer_folder(folder)
    question_file = Path(questions) if questions is not None else find_questions(
        answer_source if answer_source.is_dir() else answer_source.parent, folder.parent)
    src = ReviewSource(answers=Answers.read(answer_source), questions=read_questions(question_file),
                       judge=judge or folder.name.removeprefix("ratings-").removeprefix("review-"),
                       protocol=protocol or "fastchat-review", dataset=dataset or "fastchat-reviews",
                       temperature=0.0 if temperature is None else float(temperature), rep=rep or 0)
    problems = Problems(str(p))
    rows: list[dict[str, Any]] = []
    for f in kept:
        rows += read_review_file(f, src, problems)
    batch = ImportBatch(format="fastchat-reviews", source=str(p), judgments=rows, items=list(src.items.values()),
                        notes=review_notes(src, kept, files, answer_source, question_file, temperature))
    if not problems:
        check_batch(batch, problems)
    problems.raise_if_any()
    batch.checked = True
    return batch


def review_notes(src: ReviewSource, kept: list[Path], files: list[Path], answer_source: Path,
                 question_file: Path | None, temperature: float | None) -> list[str]:
    notes = [f"verdict rule: {RULE}", f"{len(kept)} review file(s); answers from {answer_source} "
             f"({len(src.answers.by_id)} answer(s))"]
    skipped = [f.name for f in files if f not in kept]
    if skipped:
        notes.append(f"{len(skipped)} file(s) left out: {json.dumps(skipped)}")
    notes.append(f"questions from {question_file}" if question_file is not None
                 else "no question file found: the items' questions are empty")
    if temperature is None:
        notes.append("temperature 0 assumed for every row (the reviews do not say; --temperature)")
    return notes
