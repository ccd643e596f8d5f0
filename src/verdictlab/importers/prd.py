"""The Peer Rank and Discussion study's Vicuna-80 release (Li, Patel and Du, "PRD: Peer Rank and
Discussion Improve Large Language Model based Evaluations", 2023), read as published.

Layout (``data/vicuna80/`` of the release; ``PATH`` is that folder or the release root above it):
``generations/answer_<system>.jsonl`` (the five systems' answers), ``prompts/vicuna_questions.jsonl``,
``ratings-<reviewer>/answer_<x>-vs-answer_<y>-<reviewer>-reviewer*.jsonl`` (FastChat-style reviews,
:mod:`verdictlab.importers.fastchat_reviews`; one file per ordered system pair: both orders) and
``ratings-human/answer_<x>-vs-answer_<y>-human-reviewer*.jsonl`` (crowd votes: ``question_id, text,
score`` with 1 = x better, 2 = y better, 3 = tie, one line per vote, x shown first).

What is read, as the authors' notebook (``peer_rank/peer_ranking.ipynb``) reads it:

* systems and reviewers by the release's short names (``gpt4``, ``gpt35``, ``bard``, ``claude``,
  ``vicuna-13b``): the system of an answer is its file's (``answer_gpt4.jsonl`` -> ``gpt4``), the judge of a
  review the name after ``ratings-``, so a reviewer is also a system (the peer-rank weights need that);
* only the files named ``answer_<x>-vs-answer_<y>-<reviewer>-reviewer...`` with both systems among the
  generations (the notebook's glob); others -- ``ratings-gpt35/answer-gpt35-vs-answer-gpt4-...``, a second
  run of one pair -- are left out and listed in the notes;
* the human votes become the items' ``votes`` (annotators ``h1``, ``h2``, ... by their line within the
  question of a file: the release names no annotator) and the gold label is the **sign of the mean** of
  the votes (the notebook's ``human_majority``: A = +1, B = -1, tie = 0), ``label_rule = "mean-sign"``;
  votes on pairs with a system without generations (the guanaco models) are left out (counted);
* a review's systems and order come from its answer ids; ``score`` 3 is a tie (the notebook maps a -1,
  which this release does not hold, to a tie; here it would be a failed parse).

One item per (question, pair of systems), ``<question_id>-<A>-vs-<B>`` (A the name that sorts first);
every reviewer judged each in both orders: 8,000 judgments over 800 items, all labelled.  Dataset
``prd-vicuna80``, protocol ``prd-threeclass``, temperature 0 (the release does not give the reviewers'
temperatures; noted).
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from ..core.items import ItemError, PairItem, Problems, Vote, text_id
from ..core.vocab import gold_label
from ._batch import ImportBatch, check_batch
from ._keys import Answers, pair_item_id
from .fastchat_reviews import ReviewSource, read_questions, read_review_file

DATASET = "prd-vicuna80"
PROTOCOL = "prd-threeclass"
GOLD_RULE = "mean-sign"
HUMAN = "human"
#: the review files the notebook reads: answer_<x>-vs-answer_<y>-<reviewer>-reviewer*.jsonl
_REVIEW = re.compile(r"^answer_(?P<first>.+)-vs-answer_(?P<second>.+)-(?P<reviewer>.+?)-reviewer.*\.jsonl$")
_VOTES = {1: "first", 2: "second", 3: "tie"}


def release_folder(path: str | Path) -> Path:
    """The ``vicuna80`` folder of a PRD release given it, the release root or its ``data`` folder."""
    p = Path(path)
    for candidate in (p, p / "vicuna80", p / "data" / "vicuna80"):
        if (candidate / "generations").is_dir() and any(candidate.glob("ratings-*")):
            return candidate
    raise ItemError("not a PRD Vicuna-80 release: expected generations/ and ratings-<reviewer>/ folders "
                    "(data/vicuna80/ of the release)", path=str(p))


def _systems_of(name: str, systems: set[str]) -> tuple[str, str, str] | None:
    """(first, second, reviewer) of a review file name whose two systems have generations, else None."""
    m = _REVIEW.match(name)
    if m is None:
        return None
    # the reviewer name may itself hold '-' (vicuna-13b): try every split of "<second>-<reviewer>"
    head = f"{m.group('second')}-{m.group('reviewer')}"
    for k in range(len(head)):
        if head[k] == "-" and head[:k] in systems and m.group("first") in systems:
            return m.group("first"), head[:k], head[k + 1:]
    return None


def import_prd(path: str | Path, *, dataset: str | None = None, protocol: str | None = None) -> ImportBatch:
    """Read the release (module docstring): the reviewers' judgments, the items with the human votes
    and the mean-sign gold label."""
    root = release_folder(path)
    name = dataset or DATASET
    answers = Answers.read(root / "generations", system_from_file=True)
    systems = {a.system for a in answers.by_id.values()}
    questions = read_questions(root / "prompts" / "vicuna_questions.jsonl"
                               if (root / "prompts" / "vicuna_questions.jsonl").is_file() else None)
    problems = Problems(str(root))
    rows: list[dict[str, Any]] = []
    items: dict[str, PairItem] = {}
    left_out: list[str] = []
    for folder in sorted(root.glob("ratings-*")):
        reviewer = folder.name.removeprefix("ratings-")
        if reviewer == HUMAN or not folder.is_dir():
            continue
        src = ReviewSource(answers=answers, questions=questions, judge=reviewer, protocol=protocol or PROTOCOL,
                           dataset=name, temperature=0.0, rep=0, items=items)
        for f in sorted(folder.glob("*.jsonl")):
            parsed = _systems_of(f.name, systems)
            if parsed is None or parsed[2] != reviewer:
                left_out.append(f"{folder.name}/{f.name}")
                continue
            rows += read_review_file(f, src, problems)
    votes, n_other = _human_votes(root / f"ratings-{HUMAN}", systems, problems)
    labelled = _label_items(items, votes, problems)
    labels = {iid: it.label for iid, it in labelled.items()}
    for r in rows:
        r["label"] = labels.get(r["item_id"])
    batch = ImportBatch(format="prd", source=str(root), judgments=rows, items=list(labelled.values()),
                        notes=_notes(rows, labelled, votes, n_other, left_out))
    if not problems:
        check_batch(batch, problems)
    problems.raise_if_any()
    batch.checked = True
    return batch


def _human_votes(folder: Path, systems: set[str], problems: Problems
                 ) -> tuple[dict[tuple[str, str, str], list[tuple[str, str]]], int]:
    """``{(question_id, system_a, system_b): [(annotator, canonical vote), ...]}`` and the number of
    votes on pairs with a system without generations."""
    from ..datasets._common import read_records

    out: dict[tuple[str, str, str], list[tuple[str, str]]] = defaultdict(list)
    n_other = 0
    if not folder.is_dir():
        return out, 0
    for f in sorted(folder.glob("*.jsonl")):
        parsed = _systems_of(f.name, systems)
        if parsed is None or parsed[2] != HUMAN:
            n_other += sum(1 for _ in read_records(f))
            continue
        first, second, _ = parsed
        a, b = sorted((first, second))
        seen: dict[str, int] = defaultdict(int)
        for row, rec in read_records(f, problems=problems):
            try:
                qid = text_id(rec.get("question_id"), path=str(f), row=row, field="question_id")
                score = rec.get("score")
                if isinstance(score, bool) or score not in _VOTES:
                    raise ItemError(f"must be 1, 2 or 3, got {score!r}", path=str(f), row=row, field="score")
            except ItemError as exc:
                problems.add(exc)
                continue
            seen[qid] += 1
            side = _VOTES[score]
            winner = first if side == "first" else second if side == "second" else None
            vote = "tie" if winner is None else "A" if winner == a else "B"
            out[(qid, a, b)].append((f"h{seen[qid]}", vote))
    return out, n_other


def _label_items(items: dict[str, PairItem], votes: dict[tuple[str, str, str], list[tuple[str, str]]],
                 problems: Problems) -> dict[str, PairItem]:
    """The items with their human votes and the mean-sign gold label."""
    out = dict(items)
    for (qid, a, b), vs in votes.items():
        item_id = pair_item_id(qid, a, b)
        it = out.get(item_id)
        if it is None:
            problems.add(ItemError(f"human votes on question {qid} ({a} vs {b}), which no reviewer judged",
                                   path=f"ratings-{HUMAN}"))
            continue
        out[item_id] = it.model_copy(update={
            "votes": (*it.votes, *(Vote.model_validate({"annotator": ann, "vote": v}) for ann, v in vs)),
            "label": gold_label([v for _, v in vs], GOLD_RULE), "label_rule": GOLD_RULE})
    return out


def _notes(rows: list[dict[str, Any]], items: dict[str, PairItem], votes: dict[Any, Any], n_other: int,
           left_out: list[str]) -> list[str]:
    n_votes = sum(len(v) for v in votes.values())
    notes = [f"{len(rows)} review(s) by {len({r['judge'] for r in rows})} reviewer(s) over {len(items)} item(s)",
             f"gold label: sign of the mean of the human votes (A = +1, B = -1, tie = 0), rule {GOLD_RULE}; "
             f"{n_votes} vote(s) on {len(votes)} item(s)",
             "verdict rule: score 1 -> answer 1 (shown first), 2 -> answer 2, 3 -> tie; systems and order from "
             "the answer ids",
             "temperature 0 assumed for every row (the release does not give the reviewers' temperatures)"]
    if n_other:
        notes.append(f"{n_other} human vote(s) on pairs with a system without generations left out")
    if left_out:
        notes.append(f"{len(left_out)} file(s) not in the study's naming left out: {', '.join(left_out)}")
    return notes
