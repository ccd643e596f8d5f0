"""One plain sentence per cell saying what its reliability figures mean.

The sentence is produced by fixed rules from the cell's figures (no model, no randomness), tried in
this order; thresholds are module constants so a reader can check them:

1. No judgments, or fewer than ``MIN_PARSED_SHARE`` of the outputs readable -> the figures say
   nothing about judging, only that the judge does not follow the output format.
2. ``phi >= ORDER_DRIVEN_PHI`` -> *order-driven whatever its C*: it picks the first- (or second-)
   shown answer, whichever wins more often (``agreement.share_first_won``).
3. ``C < NOISY_C`` -> *unstable*: re-asking often changes the verdict.
4. Accuracy against chance, read from the Wilson interval of A (``A_lo``/``A_hi``, falling back
   to ``A`` +- ``CHANCE_MARGIN`` without an interval): interval containing 1/2 -> *no better than
   chance* ("deterministic but no better than chance" when ``C >= DETERMINISTIC_C``); entirely below
   -> *worse than chance*; entirely above -> *better than chance*, and *trustworthy* when also
   ``T >= TRUSTWORTHY_T``.
5. Side clauses: ``SOME_FLIPS_PHI <= phi < ORDER_DRIVEN_PHI`` -> how many verdicts the swap flips;
   ``parse_failure_rate >= NOTE_UNPARSED`` -> how many outputs were unreadable and left out, and the
   most common parse failure when the cell carries it (optional key ``top_parse_failure``, see
   :func:`top_parse_failures`).

Every sentence ends with the N it stands on (pairs x orders x repetitions, unparsed outputs).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

MIN_PARSED_SHARE = 0.10      # below this share of readable outputs the figures are not read
ORDER_DRIVEN_PHI = 0.70      # swapping the answers reverses most verdicts
SOME_FLIPS_PHI = 0.20        # worth mentioning
NOISY_C = 0.50               # fewer than half of the (pair, order) cells are reproducible
DETERMINISTIC_C = 0.80
TRUSTWORTHY_T = 0.60
CHANCE_MARGIN = 0.10         # only used when a cell carries no interval for A
NOTE_UNPARSED = 0.30


def _num(x: Any) -> float | None:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(v) else v


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.0f}%"


def n_phrase(cell: Mapping[str, Any]) -> str:
    """The N a cell's figures stand on, in words."""
    n_pairs = int(_num(cell.get("n_pairs")) or 0)
    n_both = int(_num(cell.get("n_order_pairs")) or 0)
    reps = cell.get("repetitions")
    n_j = int(_num(cell.get("n_judgments")) or 0)
    n_bad = int(_num(cell.get("n_unparsed")) or 0)
    rep_txt = f", up to {reps} repetitions each" if reps not in (None, "") else ""
    return (f"N = {n_j} judgments, {n_bad} unreadable; {n_pairs} pairs with a readable verdict, "
            f"{n_both} of them in both orders{rep_txt}")


def _reason(cell: Mapping[str, Any]) -> str:
    top = cell.get("top_parse_failure")
    return f"; most common failure: {top}" if top else ""


def top_parse_failures(judgments: Any) -> dict[tuple[Any, ...], str]:
    """Most common parse-failure reason per (judge, protocol, dataset, temperature), from a
    judgments frame (``parse_detail`` with the quoted output excerpt cut off), with its count."""
    if judgments is None or len(judgments) == 0 or "parse_detail" not in judgments:
        return {}
    failed = judgments[judgments["parse_status"] == "failed"]
    if failed.empty:
        return {}
    reasons = failed["parse_detail"].fillna("").astype(str).str.split(" | ", regex=False).str[0]
    reasons = reasons.str.replace(r" in '.*$| \(.*$|\s+$", "", regex=True).str.slice(0, 60)
    out = {}
    keys = ["judge", "protocol", "dataset", "temperature"]
    for key, grp in reasons.groupby([failed[k] for k in keys]):
        counts = grp.value_counts()
        out[tuple(key)] = f"{counts.index[0]} ({int(counts.iloc[0])}x)"
    return out


def cell_sentence(cell: Mapping[str, Any]) -> str:
    """One plain sentence on what the figures of ``cell`` (a report cell dict) say."""
    n_j = _num(cell.get("n_judgments")) or 0
    if n_j <= 0:
        return "No judgments yet."
    C, phi, A, T = (_num(cell.get(k)) for k in ("C", "phi", "A", "T"))
    fail = _num(cell.get("parse_failure_rate")) or 0.0
    tail = f" ({n_phrase(cell)})."
    if 1.0 - fail < MIN_PARSED_SHARE or C is None:
        return (f"Almost never gave a readable verdict ({_pct(1 - fail)} of outputs parsed{_reason(cell)}): the "
                f"figures say nothing about its judging, only that it does not follow this output format" + tail)
    figures = f"C = {_pct(C)}, phi = {_pct(phi)}, A = {_pct(A)}, T = {_pct(T)}"
    side: list[str] = []
    if phi is not None and SOME_FLIPS_PHI <= phi < ORDER_DRIVEN_PHI:
        side.append(f"swapping the two answers changes the verdict on {_pct(phi)} of pairs")
    if fail >= NOTE_UNPARSED:
        side.append(f"{_pct(fail)} of its outputs were unreadable and left out{_reason(cell)}")
    side_txt = ("; " + "; ".join(side)) if side else ""

    if phi is not None and phi >= ORDER_DRIVEN_PHI:
        share = _num((cell.get("agreement") or {}).get("share_first_won"))
        where = "shown" if share is None else ("first-shown" if share >= 0.5 else "second-shown")
        won = "" if share is None else f" ({where} answer wins {_pct(share if share >= 0.5 else 1 - share)})"
        main = (f"Order-driven whatever its C: it mostly picks the {where} answer{won}, so its verdicts "
                f"follow the layout, not the content")
        return f"{main}{side_txt} [{figures}]{tail}"

    a_lo, a_hi = _num(cell.get("A_lo")), _num(cell.get("A_hi"))
    if A is None:
        acc = "its accuracy is undefined (no labelled pairs)"
        verdict = None
    else:
        lo = a_lo if a_lo is not None else A - CHANCE_MARGIN
        hi = a_hi if a_hi is not None else A + CHANCE_MARGIN
        verdict = "chance" if lo <= 0.5 <= hi else ("worse" if hi < 0.5 else "better")
        acc = {"chance": "not distinguishable from chance at this N", "worse": "worse than chance (it prefers the wrong answer)",
               "better": "better than chance"}[verdict]

    if C < NOISY_C:
        main = f"Unstable: re-asking changes its verdict on most pairs (only {_pct(C)} reproducible), and {acc}"
    elif verdict == "chance":
        main = ("Deterministic but no better than chance (A's interval contains 50%)" if C >= DETERMINISTIC_C
                else "Fairly repeatable but no better than chance (A's interval contains 50%)")
    elif verdict == "better" and T is not None and T >= TRUSTWORTHY_T:
        main = "Trustworthy on these pairs: repeatable, little moved by order and right most of the time"
    elif verdict == "better":
        main = (f"Better than chance, but only {_pct(T)} of its verdicts are trustworthy "
                f"(reproducible, order-invariant and right)")
    else:
        main = acc[0].upper() + acc[1:]
    return f"{main}{side_txt} [{figures}]{tail}"


def protocol_sentences(cells: Iterable[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """``(label, sentence)`` per cell; the label is the protocol, extended with judge / dataset /
    temperature only where the cells differ in them."""
    cells = list(cells)
    varying = [k for k in ("judge", "dataset", "temperature") if len({str(c.get(k)) for c in cells}) > 1]
    out = []
    for c in cells:
        label = str(c.get("protocol"))
        if varying:
            label += " (" + ", ".join(f"{k} {c.get(k)}" for k in varying) + ")"
        out.append((label, cell_sentence(c)))
    return out
