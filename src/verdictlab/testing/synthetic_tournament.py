"""A simulated tournament of systems, for tests, benchmarks and the leaderboard docs.

Two forms:

* :func:`tournament_frame` -- judgment rows straight away (no judge is called), vectorised so a
  5-million-row leaderboard is drawn in seconds: systems with set Bradley-Terry strengths, prompts,
  pairs of systems per prompt, judge configurations with their own skill (how strongly the verdict
  follows the strengths), position bias (log-odds added for the response shown first) and tie rate,
  both presentation orders and repetitions.  The gold ``label`` of a pair (one draw from the true
  strengths, as a human vote would be) rides along.
* :func:`tournament_records` / :func:`write_tournament_dataset` -- a ``multi-jsonl`` dataset (one
  question, a response per system, gold scores drawn from the strengths) that ``sim:`` judges then
  judge through the real engine.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["JudgeProfile", "system_names", "tournament_frame", "tournament_records", "write_tournament_dataset"]


@dataclass(frozen=True)
class JudgeProfile:
    """One simulated judge configuration: ``skill`` multiplies the strength gap in the log-odds of a
    win, ``position_bias`` is added for the response shown first, ``tie_rate`` is the share of ties."""

    judge: str
    protocol: str
    skill: float = 1.0
    position_bias: float = 0.0
    tie_rate: float = 0.0
    temperature: float = 0.0


def system_names(n: int) -> list[str]:
    return [f"sys{k:02d}" for k in range(n)]


def _pairs(rng: np.random.Generator, n_systems: int, n_prompts: int, pairs_per_prompt: int | None,
           baseline: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(prompt, a, b) per pair item: every pair of systems per prompt (``None``), each system
    against system 0 (``baseline``), or ``pairs_per_prompt`` random pairs per prompt."""
    if baseline:
        a = np.tile(np.arange(1, n_systems), n_prompts)
        b = np.zeros_like(a)
        prompt = np.repeat(np.arange(n_prompts), n_systems - 1)
    elif pairs_per_prompt is None:
        i, j = np.triu_indices(n_systems, k=1)
        a, b = np.tile(i, n_prompts), np.tile(j, n_prompts)
        prompt = np.repeat(np.arange(n_prompts), len(i))
    else:
        a = rng.integers(0, n_systems, size=(n_prompts, pairs_per_prompt))
        b = (a + rng.integers(1, n_systems, size=a.shape)) % n_systems
        prompt = np.repeat(np.arange(n_prompts), pairs_per_prompt)
        a, b = a.ravel(), b.ravel()
    flip = rng.random(len(a)) < 0.5          # which system is canonical A: drawn per pair
    return prompt, np.where(flip, b, a), np.where(flip, a, b)


def tournament_frame(*, n_systems: int = 8, n_prompts: int = 60, pairs_per_prompt: int | None = None,
                     baseline: bool = False, judges: Sequence[JudgeProfile] = (JudgeProfile("sim:fair", "direct"),),
                     repetitions: int = 1, dataset: str = "tournament", spread: float = 2.0, seed: int = 0,
                     scores: bool = False, lengths: bool = False) -> pd.DataFrame:
    """Judgment rows of a simulated tournament (module docstring).  System k's strength is
    ``spread`` * (0.5 - k / (n - 1)) (sys00 strongest).  Columns: the cell key, ``item_id``, ``prompt``,
    ``system_a``, ``system_b``, ``order``, ``rep``, ``verdict``, ``label``; with ``scores`` a 1-10
    ``score_a``/``score_b`` pair per judgment, with ``lengths`` ``len_a``/``len_b`` (characters; the
    judges do not look at them)."""
    rng = np.random.default_rng(seed)
    strength = spread * (0.5 - np.arange(n_systems) / max(n_systems - 1, 1))
    prompt, a, b = _pairs(rng, n_systems, n_prompts, pairs_per_prompt, baseline)
    gap = strength[a] - strength[b]
    label = np.where(rng.random(len(a)) < 1 / (1 + np.exp(-gap)), "A", "B")
    names = np.asarray(system_names(n_systems), dtype=object)
    n_items = len(a)
    frames = []
    for prof in judges:
        for order in ("AB", "BA"):
            sign = 1.0 if order == "AB" else -1.0
            for rep in range(repetitions):
                logit = prof.skill * gap + sign * prof.position_bias
                verdict = np.where(rng.random(n_items) < 1 / (1 + np.exp(-logit)), "A", "B").astype(object)
                verdict[rng.random(n_items) < prof.tie_rate] = "tie"
                cols: dict[str, Any] = {
                    "judge": prof.judge, "protocol": prof.protocol, "dataset": dataset,
                    "temperature": prof.temperature, "decoding": "free", "item_id": np.arange(n_items),
                    "prompt": prompt, "system_a": names[a], "system_b": names[b], "order": order, "rep": rep,
                    "verdict": verdict, "label": label}
                if scores:
                    base = 6 + 2 * np.tanh(prof.skill * np.column_stack([strength[a], strength[b]]))
                    cols["score_a"], cols["score_b"] = np.clip(np.round(base + rng.normal(0, 1, (n_items, 2))),
                                                               1, 10).T
                if lengths:
                    cols["len_a"] = 400 + 40 * a + rng.integers(0, 200, n_items)
                    cols["len_b"] = 400 + 40 * b + rng.integers(0, 200, n_items)
                frames.append(pd.DataFrame(cols))
    out = pd.concat(frames, ignore_index=True)
    for c in ("judge", "protocol", "dataset", "decoding", "order", "system_a", "system_b", "verdict", "label"):
        out[c] = out[c].astype("category")
    return out


def tournament_records(*, n_systems: int = 6, n_prompts: int = 20, spread: float = 3.0,
                       seed: int = 0) -> list[dict[str, Any]]:
    """``multi-jsonl`` records: per prompt a response per system and gold scores (the strength plus
    logistic noise, rounded to a tenth), so each pair's gold label follows the strengths."""
    rng = np.random.default_rng(seed)
    strength = spread * (0.5 - np.arange(n_systems) / max(n_systems - 1, 1))
    names = system_names(n_systems)
    recs = []
    for p in range(n_prompts):
        noisy = strength + rng.logistic(0, 1, n_systems)
        recs.append({"item_id": f"q{p:03d}", "question": f"Question {p}: explain topic {p} briefly.",
                     "responses": {s: f"{s}'s answer to question {p}." for s in names},
                     "scores": {s: round(float(v), 1) for s, v in zip(names, noisy, strict=True)}})
    return recs


def write_tournament_dataset(path: str | Path, **options: Any) -> Path:
    """Write :func:`tournament_records` (``options`` as there) as a JSON Lines file; returns the path."""
    p = Path(path)
    p.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in tournament_records(**options)),
                 encoding="utf-8")
    return p
