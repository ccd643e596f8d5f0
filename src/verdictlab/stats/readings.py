"""Readings of the figures: the plain sentence per cell, the validation-protocol checklist and the
display bands of T -- every rule and threshold in one place, beside the failure regions of
:mod:`verdictlab.stats.regions` that they use.

Sentence rules (:func:`cell_sentence`), tried in this order; thresholds are module constants:

1. No judgments, or fewer than ``MIN_PARSED_SHARE`` of the outputs readable -> the figures say
   nothing about judging, only that the judge does not follow the output format.
2. ``phi >= ORDER_DRIVEN_PHI`` -> *order-driven whatever its C*: it picks the first- (or second-)
   shown answer, whichever wins more often (``agreement.share_first_won``).
3. ``C < NOISY_C`` -> *unstable*: re-asking often changes the verdict.
4. Accuracy against chance, read from the Wilson interval of A (``A_lo``/``A_hi``, falling back
   to ``A`` +- ``CHANCE_MARGIN`` without an interval): interval containing 1/2 -> *no better than
   chance* ("deterministic but no better than chance" when ``C >= DETERMINISTIC_C``); entirely below
   -> *worse than chance*; entirely above -> *better than chance*, and *trustworthy* only when also
   ``T >= TRUSTWORTHY_T`` **and** the cell is in the ``trustworthy`` failure region (C >= c_high,
   phi <= phi_low); a cell with such a T outside that region is "better than chance but not
   trustworthy", with the region's reason.
5. Side clauses: ``SOME_FLIPS_PHI <= phi < ORDER_DRIVEN_PHI`` -> how many verdicts the swap flips;
   ``parse_failure_rate >= NOTE_UNPARSED`` -> how many outputs were unreadable and left out, and the
   most common parse failure when the cell carries it (optional key ``top_parse_failure``, see
   :func:`top_parse_failures`).

Every sentence names the cell's region and ends with the N it stands on (pairs x orders x
repetitions, unparsed outputs).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from ..vocab import ORDERS, ParseStatus
from .by_cell import NEEDS_BOTH_ORDERS
from .regions import DEFAULT_C_HIGH, DEFAULT_PHI_LOW, PARADOX_BIAS, PARADOX_RETEST, failure_region

__all__ = ["CHANCE_MARGIN", "DETERMINISTIC_C", "MIN_BENCHMARKS", "MIN_PARSED_SHARE", "MIN_REPETITIONS",
           "NOISY_C", "NOTE_UNPARSED", "ORDER_DRIVEN_PHI", "SOME_FLIPS_PHI", "TRUSTWORTHY_T", "T_BANDS",
           "cell_region", "cell_sentence", "n_phrase", "protocol_sentences", "t_band", "top_parse_failures",
           "validation_checklist"]

MIN_PARSED_SHARE = 0.10      # below this share of readable outputs the figures are not read
ORDER_DRIVEN_PHI = 0.70      # swapping the answers reverses most verdicts
SOME_FLIPS_PHI = 0.20        # worth mentioning
NOISY_C = 0.50               # fewer than half of the (pair, order) cells are reproducible
DETERMINISTIC_C = 0.80
TRUSTWORTHY_T = 0.60
CHANCE_MARGIN = 0.10         # only used when a cell carries no interval for A
NOTE_UNPARSED = 0.30

#: validation-protocol checklist: fewest repetitions per trial and fewest contrasting benchmarks
MIN_REPETITIONS = 3
MIN_BENCHMARKS = 2

#: display bands of T like the source paper's Table 1 (>= 70 / 60-70 / 50-60 / 40-50 / < 40)
T_BANDS: tuple[float, ...] = (0.70, 0.60, 0.50, 0.40)


def t_band(T: float | None) -> int | None:
    """Index of T's band in :data:`T_BANDS` (0 = best; ``len(T_BANDS)`` = below the last); ``None``
    for an undefined T."""
    if T is None or (isinstance(T, float) and math.isnan(T)):
        return None
    for i, lo in enumerate(T_BANDS):
        if lo <= T:
            return i
    return len(T_BANDS)


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
    failed = judgments[judgments["parse_status"] == ParseStatus.FAILED]
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


def cell_region(cell: Mapping[str, Any], *, c_high: float = DEFAULT_C_HIGH,
                phi_low: float = DEFAULT_PHI_LOW) -> str | None:
    """The failure region of a cell: its ``region`` when it carries one, else :func:`failure_region` of
    its C and phi; ``None`` when either is undefined."""
    given = cell.get("region")
    if given:
        return str(given)
    C, phi = _num(cell.get("C")), _num(cell.get("phi"))
    if C is None or phi is None:
        return None
    return str(failure_region(C, phi, c_high=c_high, phi_low=phi_low))


def _not_trustworthy_because(region: str | None, C: float, phi: float | None, *, c_high: float,
                             phi_low: float) -> str:
    """Why a cell outside the trustworthy region is not called trustworthy, in words."""
    if region == "noisy-but-fair":
        return (f"re-asking changes its verdict too often (C = {_pct(C)}, below {_pct(c_high)}), "
                f"although the order of the answers matters little")
    if region == "confidently-biased":
        return f"the order of the answers moves its verdicts (phi = {_pct(phi)}, above {_pct(phi_low)})"
    if region == "chaos":
        return (f"re-asking and swapping the answers both move its verdicts (C = {_pct(C)}, "
                f"phi = {_pct(phi)})")
    return "its flip rate is undefined (no pair was judged in both orders)"


def cell_sentence(cell: Mapping[str, Any], *, c_high: float = DEFAULT_C_HIGH,
                  phi_low: float = DEFAULT_PHI_LOW) -> str:
    """One plain sentence on what the figures of ``cell`` (a report cell dict) say.  "Trustworthy" is
    said only of a cell in the trustworthy failure region (the one :func:`failure_region` gives with
    the same thresholds), and the sentence names the region, so it never contradicts the plot."""
    n_j = _num(cell.get("n_judgments")) or 0
    if n_j <= 0:
        return "No judgments yet."
    C, phi, A, T = (_num(cell.get(k)) for k in ("C", "phi", "A", "T"))
    fail = _num(cell.get("parse_failure_rate")) or 0.0
    tail = f" ({n_phrase(cell)})."
    if 1.0 - fail < MIN_PARSED_SHARE or C is None:
        return (f"Almost never gave a readable verdict ({_pct(1 - fail)} of outputs parsed{_reason(cell)}): the "
                f"figures say nothing about its judging, only that it does not follow this output format" + tail)
    region = cell_region(cell, c_high=c_high, phi_low=phi_low)
    figures = (f"region {region or 'undefined'}: C = {_pct(C)}, phi = {_pct(phi)}, A = {_pct(A)}, "
               f"T = {_pct(T)}")
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
    elif verdict == "better" and T is not None and T >= TRUSTWORTHY_T and region == "trustworthy":
        main = "Trustworthy on these pairs: repeatable, little moved by order and right most of the time"
    elif verdict == "better" and T is not None and T >= TRUSTWORTHY_T:
        main = ("Better than chance but not trustworthy: "
                + _not_trustworthy_because(region, C, phi, c_high=c_high, phi_low=phi_low))
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


# -- validation-protocol checklist ------------------------------------------------------------------

def _fmt_key(key: Any) -> str:
    return " × ".join(str(k) for k in key) if isinstance(key, tuple) else str(key)


def _cell_key(cell: Mapping[str, Any]) -> tuple[Any, ...]:
    key = tuple(cell.get(k) for k in ("judge", "protocol", "dataset", "temperature"))
    return key + ((cell.get("step") or "",) if "step" in cell else ())


def _check_agreement(cells: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    kappas = [(c.get("agreement") or {}).get("kappa") for c in cells]
    have_agreement = any("agreement" in c for c in cells)
    finite_k = [k for k in kappas if k is not None]
    return {
        "check": "Chance-corrected agreement (Cohen's κ / Krippendorff's α) reported, not only exact match",
        "passed": bool(finite_k),
        "detail": (f"κ reported for {len(finite_k)} of {len(cells)} cells" if have_agreement
                   else "no agreement figures in this report (stats agreement function unavailable "
                        "or no labelled pairs)"),
    }


def _check_orders(judgments: pd.DataFrame, cell_key: Sequence[str]) -> dict[str, Any]:
    if judgments.empty:
        both, detail = False, "no judgments"
    else:
        orders = judgments.groupby(list(cell_key), dropna=False)["order"].agg(lambda s: set(s.dropna()))
        lacking = [k for k, v in orders.items() if v != set(ORDERS)]
        both = not lacking
        detail = ("every cell ran both orders (AB and BA)" if both else
                  f"{len(lacking)} of {len(orders)} cells lack an order, e.g. {_fmt_key(lacking[0])}")
    return {"check": "Both presentation orders run (position swap)", "passed": both, "detail": detail}


def _check_position(cells: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    one_order = [c for c in cells if (c.get("agreement") or {}).get("position_bias_note") == NEEDS_BOTH_ORDERS]
    if one_order:
        # never PASS while a cell ran one order only (its position bias is confounded with quality)
        return {"check": "Position bias checked even where test–retest is high", "passed": False,
                "detail": f"{NEEDS_BOTH_ORDERS}: {len(one_order)} of {len(cells)} cells ran one order only, "
                          f"e.g. {_fmt_key(_cell_key(one_order[0]))}"}
    have_agreement = any("agreement" in c for c in cells)
    pb = [(c.get("agreement") or {}).get("position_bias") for c in cells]
    n_pb = sum(p is not None for p in pb)
    phis = [c.get("phi") for c in cells if c.get("phi") is not None]
    paradox = [c for c in cells if (c.get("agreement") or {}).get("consistency_bias_paradox")]
    checked = (n_pb == len(cells) and n_pb > 0) or (not have_agreement and len(phis) == len(cells) and phis)
    extra = ""
    if paradox:
        extra = (f"; consistency–bias paradox (test–retest > {PARADOX_RETEST:g} with position bias > "
                 f"{PARADOX_BIAS:g}) in {len(paradox)} cell(s), e.g. {_fmt_key(_cell_key(paradox[0]))}")
    return {"check": "Position bias checked even where test–retest is high",
            "passed": bool(checked),
            "detail": (f"position bias measured in {n_pb} of {len(cells)} cells" if have_agreement
                       else f"flip rate φ measured in {len(phis)} of {len(cells)} cells") + extra}


def validation_checklist(cells: Sequence[Mapping[str, Any]], judgments: pd.DataFrame, *,
                         cell_key: Sequence[str] = ("judge", "protocol", "dataset", "temperature"),
                         ) -> list[dict[str, Any]]:
    """The minimum validation protocol, line by line, with pass/fail for this run: ``cells`` are the
    report's cell dicts (figures of :func:`reliability`, ``agreement`` of :func:`agreement_by_cell`),
    ``judgments`` the pairwise rows they stand on."""
    reps = [int(c["repetitions"]) for c in cells if c.get("repetitions") is not None]
    min_rep = min(reps) if reps else 0
    datasets = sorted({str(c["dataset"]) for c in cells})
    failed = [c for c in cells if (c.get("parse_failure_rate") or 0) > 0]
    return [
        _check_agreement(cells),
        _check_orders(judgments, cell_key),
        {"check": f"At least {MIN_REPETITIONS} repetitions per trial (stochastic consistency measurable)",
         "passed": bool(reps) and min_rep >= MIN_REPETITIONS,
         "detail": f"fewest repetitions in a cell: {min_rep}" if reps else "no cells"},
        {"check": f"At least {MIN_BENCHMARKS} contrasting benchmarks",
         "passed": len(datasets) >= MIN_BENCHMARKS,
         "detail": f"{len(datasets)} dataset(s): {', '.join(datasets) or '—'}"},
        _check_position(cells),
        {"check": "Unparsed verdicts counted and disclosed (never guessed)",
         "passed": all(c.get("n_unparsed") is not None for c in cells) and bool(cells),
         "detail": f"{sum((c.get('n_unparsed') or 0) for c in cells)} unparsed judgments; "
                   f"{len(failed)} cell(s) with parse failures"},
    ]
