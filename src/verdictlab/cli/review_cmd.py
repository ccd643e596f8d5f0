"""`verdictlab review RUN_DIR` -- export the judge/human disagreements for the label-or-rubric loop.

Each exported row puts the judge's reasoning beside the human label and critique, so a domain
expert can decide, item by item, whether the label or the rubric is wrong.  Kinds of disagreement:

``judge_passed_human_failed``  (rubric) the dangerous direction: the judge let through what a person failed
``judge_failed_human_passed``  (rubric)
``judge_unknown``              (rubric) the judge answered UNKNOWN on a labelled item (more context needed?)
``grade_mismatch``             (pointwise grades) judge grade != human grade
``wrong_winner``               (pairwise) judge verdict != gold label (a judge ``tie`` on a decided pair too)
``unparsed``                   (only with ``--unparsed``) no verdict could be read

Human critiques are read from the item's ``meta["critique"]`` (or ``meta["critiques"][criterion]``).
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import pandas as pd
import typer

REVIEW_COLUMNS: tuple[str, ...] = (
    "kind", "judge", "dataset", "protocol", "item_id", "step", "order", "temperature", "rep",
    "human_label", "judge_verdict", "judge_reasoning", "human_critique", "question", "response",
    "response_a", "response_b", "reference", "parse_status", "raw_output",
)


def _reasoning(raw: Any) -> str:
    from ..protocols.rubric import extract_reasoning

    if not isinstance(raw, str):
        return ""
    text = extract_reasoning(raw)
    if text == raw.strip():  # pairwise XML or JSON with a rationale field
        import re

        m = re.search(r"<rationale>(.*?)(?:</rationale>|$)", raw, re.DOTALL)
        if m:
            return m.group(1).strip()
    return text


def _pair_kind(rec: dict[str, Any], verdict: Any, include_unparsed: bool) -> tuple[str | None, Any]:
    """(kind of disagreement or None, human label) for a pairwise row."""
    human = rec.get("label")
    if human not in ("A", "B"):
        return None, human
    if verdict is None:
        return ("unparsed" if include_unparsed else None), human
    return ("wrong_winner" if verdict != human else None), human


def _point_kind(item: Any, rec: dict[str, Any], verdict: Any, step: str,
                include_unparsed: bool) -> tuple[str | None, Any]:
    """(kind of disagreement or None, human label) for a rubric or graded pointwise row."""
    from ..protocols.pointwise import grade_text
    from ..protocols.rubric import RESULTS, human_label

    if verdict in RESULTS or str(rec.get("protocol", "")).startswith("rubric"):
        human = human_label(item, step)
        if human not in ("PASS", "FAIL"):
            return None, human
        if verdict is None:
            return ("unparsed" if include_unparsed else None), human
        if verdict == "UNKNOWN":
            return "judge_unknown", human
        if verdict != human:
            return ("judge_passed_human_failed" if verdict == "PASS" else "judge_failed_human_passed"), human
        return None, human
    human = grade_text(item.label)
    if human is None:
        return None, human
    if verdict is None:
        return ("unparsed" if include_unparsed else None), human
    return ("grade_mismatch" if grade_text(verdict) != human else None), human


def review_frame(judgments: pd.DataFrame, items: list[Any], *, include_unparsed: bool = False) -> pd.DataFrame:
    """Disagreement rows (columns :data:`REVIEW_COLUMNS`) from a judgments frame and the run's items."""
    from ..items import PairItem
    from ..protocols.rubric import human_critique

    by_id = {(it.dataset, str(it.item_id)): it for it in items}
    rows = []
    for rec in judgments.to_dict("records"):
        item = by_id.get((rec["dataset"], str(rec["item_id"])))
        step = rec.get("step") or ""
        verdict = rec.get("verdict")
        verdict = None if verdict is None or (isinstance(verdict, float) and verdict != verdict) else verdict
        if isinstance(item, PairItem) or item is None:
            kind, human = _pair_kind(rec, verdict, include_unparsed)
        else:
            kind, human = _point_kind(item, rec, verdict, step, include_unparsed)
        if kind is None:
            continue
        is_pair = isinstance(item, PairItem)
        rows.append({
            "kind": kind, "judge": rec["judge"], "dataset": rec["dataset"], "protocol": rec["protocol"],
            "item_id": rec["item_id"], "step": step, "order": rec.get("order"), "temperature": rec.get("temperature"),
            "rep": rec.get("rep"), "human_label": human, "judge_verdict": verdict,
            "judge_reasoning": _reasoning(rec.get("raw_output")),
            "human_critique": human_critique(item, step) if item is not None else "",
            "question": getattr(item, "question", None), "response": getattr(item, "response", None),
            "response_a": item.response_a if is_pair else None,  # type: ignore[union-attr]
            "response_b": item.response_b if is_pair else None,  # type: ignore[union-attr]
            "reference": getattr(item, "reference", None), "parse_status": rec.get("parse_status"),
            "raw_output": rec.get("raw_output"),
        })
    return pd.DataFrame(rows, columns=list(REVIEW_COLUMNS))


class ReviewFormat(StrEnum):
    csv = "csv"
    jsonl = "jsonl"


def review(
    run_dir: Annotated[Path, typer.Argument(help="Run directory holding run.sqlite.")],
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Output file (default RUN_DIR/review.<format>).")] = None,
    fmt: Annotated[ReviewFormat | None, typer.Option("--format", help="csv or jsonl (default: from --out, else csv).")] = None,
    protocol: Annotated[str | None, typer.Option(help="Only this protocol.")] = None,
    judge: Annotated[str | None, typer.Option(help="Only this judge.")] = None,
    unparsed: Annotated[bool, typer.Option("--unparsed", help="Also export labelled rows the parser could not read.")] = False,
) -> None:
    """Export the judge/human disagreements, the judge's reasoning beside the human label and critique."""
    from ..export import csv_safe
    from ..store import StoreError, open_store
    from ._errors import EXIT_STORE, check_writable, fail, say

    if fmt is None:
        fmt = ReviewFormat.jsonl if out is not None and out.suffix.lower() in (".jsonl", ".json") else ReviewFormat.csv
    check_writable(out or (run_dir / f"review.{fmt.value}"))
    try:
        store = open_store(run_dir)
    except StoreError as e:
        fail(e, EXIT_STORE)
    with store:
        df = store.judgments()
        items = store.items()
    if protocol is not None:
        df = df[df["protocol"] == protocol]
    if judge is not None:
        df = df[df["judge"] == judge]
    frame = review_frame(df, items, include_unparsed=unparsed)
    target = out or (run_dir / f"review.{fmt.value}")
    target.parent.mkdir(parents=True, exist_ok=True)
    if fmt is ReviewFormat.csv:
        csv_safe(frame).to_csv(target, index=False)     # cells starting with = + - @ made inert
    else:
        with target.open("w", encoding="utf-8") as fh:
            for rec in frame.to_dict("records"):
                fh.write(json.dumps({k: (None if isinstance(v, float) and v != v else v) for k, v in rec.items()},
                                    ensure_ascii=False, default=str) + "\n")
    counts = frame["kind"].value_counts().to_dict() if len(frame) else {}
    summary = ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())) or "none"
    say(f"{len(frame)} disagreement(s) written to {target} ({summary})", err=False)


def debate(
    config: Annotated[Path, typer.Argument(help="Run config: two judges, protocols [debate], datasets of pairs.")],
    run_dir: Annotated[Path | None, typer.Argument(help="Run directory (default runs/<name>).")] = None,
    rounds: Annotated[int, typer.Option(help="Most rounds (round 1 + rebuttals).")] = 3,
    fallback: Annotated[str, typer.Option(help="On a parse failure: none | previous | paper.")] = "none",
    final_rule: Annotated[str, typer.Option(help="Judges still disagree: tie | first-judge.")] = "tie",
    stop_on_agreement: Annotated[bool, typer.Option(help="Stop once both judges agree.")] = True,
) -> None:
    """Structured debate between the config's two judges; every round stored (see verdictlab.debate)."""
    from rich.console import Console

    from ..config import ConfigError, load_config
    from ..debate import DebateSettings, debate_summary, run_debate
    from ..engine import load_items
    from ..items import PairItem
    from ..store import open_store
    from ._errors import EXIT_INPUT, fail

    try:
        cfg = load_config(config)
        if len(cfg.judges) != 2:
            raise ConfigError(f"{config}: field 'judges': a debate needs exactly two judges, got {len(cfg.judges)}")
        items = [it for it in load_items(cfg)[0].values() if isinstance(it, PairItem)]
        if not items:
            raise ConfigError(f"{config}: field 'datasets': no pairs to debate")
        target = run_dir or Path("runs") / cfg.name
        n = 0
        for temp in cfg.temperatures:
            s = DebateSettings(rounds=rounds, fallback=fallback, final_rule=final_rule,
                               stop_on_agreement=stop_on_agreement, temperature=temp, orders=tuple(cfg.orders),
                               repetitions=cfg.repetitions)
            n += run_debate(items, cfg.judge_ids(), target, s)
    except (ConfigError, ValueError) as e:
        fail(e, EXIT_INPUT)
    with open_store(target) as st:
        summ = debate_summary(st.judgments())
    out = Console(markup=False, highlight=False)
    out.print(f"{n} debate(s) run; stored in {target}/run.sqlite")
    for rec in summ.to_dict("records"):
        out.print(f"{rec['debate']} T={rec['temperature']:g}: round-1 accuracy {rec['round1_accuracy']:.3f}, "
                  f"final {rec['final_accuracy']:.3f} (n={rec['n_labelled']}), mean rounds {rec['mean_rounds']:.2f}, "
                  f"round fallbacks {rec['n_round_fallbacks']}, finals depending on a fallback "
                  f"{rec['n_final_depending_on_fallback']}")


def register(app: typer.Typer) -> None:
    app.command("review")(review)
    # the debate runner lives here too: it is the other protocol-audit command of the same family
    app.command("debate")(debate)
