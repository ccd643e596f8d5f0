"""Readings of the figures: every sentence the report says about what its numbers mean, and every
reading rule and display threshold -- in this one module.  The numbers come from
:mod:`verdictlab.stats` (gathered by :func:`verdictlab.report.build_report`); nothing here computes a
figure, it compares figures with the thresholds below and says what that means.

Cell sentences (:func:`cell_sentence`), rules tried in this order:

1. No judgments, or fewer than ``MIN_PARSED_SHARE`` of the outputs readable -> the figures say
   nothing about judging, only that the judge does not follow the output format.
2. ``phi >= ORDER_DRIVEN_PHI`` -> *order-driven whatever its C*: it picks the first- (or second-)
   shown answer, whichever wins more often (``agreement.share_first_won``).
3. One repetition -> C is not measured (every verdict agrees with itself: C = 100% by construction),
   so nothing is said about reproducibility, and "trustworthy" is never said (its region is
   undefined, like a cell judged in one order has no phi).
4. ``C < NOISY_C`` -> *unstable*: re-asking often changes the verdict.
5. Accuracy against chance, read from the Wilson interval of A (``A_lo``/``A_hi``, falling back
   to ``A`` +- ``CHANCE_MARGIN`` without an interval): interval containing 1/2 -> *no better than
   chance* ("deterministic but no better than chance" when ``C >= DETERMINISTIC_C``); entirely below
   -> *worse than chance*; entirely above -> *better than chance*, and *trustworthy* only when also
   ``T >= TRUSTWORTHY_T`` **and** the cell is in the ``trustworthy`` failure region (C >= c_high,
   phi <= phi_low); a cell with such a T outside that region is "better than chance but not
   trustworthy", with the region's reason.
6. Side clauses: ``SOME_FLIPS_PHI <= phi < ORDER_DRIVEN_PHI`` -> how many verdicts the swap flips;
   ``parse_failure_rate >= NOTE_UNPARSED`` -> how many outputs were unreadable and left out, and the
   most common parse failure when the cell carries it (optional key ``top_parse_failure``: a
   ``(reason, count)`` pair of :func:`verdictlab.stats.top_parse_failures`).

Every sentence names the cell's region and ends with the N it stands on (pairs x orders x
repetitions, unparsed outputs).  Beside them: the validation-protocol checklist
(:func:`validation_checklist`), the display bands of T (:func:`t_band`), the reading printed under
each plot (:func:`plot_readings`), the free-vs-constrained reading (:func:`decoding_reading`), the
single-repetition warning, the unparsed-policy line, the constrained-decoding line and, with published
definitions asked for, which of them the report explains (:func:`shown_definitions`) and their unparsed
rule (:func:`definition_unparsed_rule`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..core.policy import FigurePolicy
from ..core.vocab import CellKey
from ..stats.by_cell import ONE_ORDER_REASON
from ..stats.regions import DEFAULT_C_HIGH, DEFAULT_PHI_LOW, PARADOX_BIAS, PARADOX_RETEST, failure_region

__all__ = ["BARELY_MOVES", "CHANCE_MARGIN", "DECISION_GROUPS", "DETERMINISTIC_C", "MIN_BENCHMARKS", "MIN_PARSED_SHARE",
           "MIN_REPETITIONS", "NEAR_CEILING", "NOISY_C", "NOTE_UNPARSED", "ORDER_DRIVEN_PHI", "SOME_FLIPS_PHI",
           "TABLE_READINGS", "TRUSTWORTHY_T", "T_BANDS", "agreement_caption", "avoid_rule", "caution", "cell_region",
           "cell_sentence", "configuration_status", "decision", "decision_test_line", "decoding_line",
           "decoding_reading", "definition_unparsed_rule", "missing_figures", "missing_line", "n_phrase",
           "paradox_rule", "parse_failure_phrase", "plot_readings", "policy_line", "protocol_sentences",
           "region_caption", "region_phrase", "shown_definitions", "single_rep_note", "t_band", "t_with_interval", "unparsed_how",
           "validation_checklist"]

MIN_PARSED_SHARE = 0.10      # below this share of readable outputs the figures are not read
ORDER_DRIVEN_PHI = 0.70      # swapping the answers reverses most verdicts
SOME_FLIPS_PHI = 0.20        # worth mentioning
NOISY_C = 0.50               # fewer than half of the (pair, order) cells are reproducible
DETERMINISTIC_C = 0.80
TRUSTWORTHY_T = 0.60
CHANCE_MARGIN = 0.10         # only used when a cell carries no interval for A
NOTE_UNPARSED = 0.30
NEAR_CEILING = 0.02          # a cell this close to its accuracy ceiling A_max has "reached" it (plot reading)
BARELY_MOVES = 0.02          # a mean change of C or corrected accuracy smaller than this "barely moves"

#: validation-protocol checklist: fewest repetitions per trial and fewest contrasting benchmarks
MIN_REPETITIONS = 3
MIN_BENCHMARKS = 2

#: display bands of T like the source paper's Table 1 (>= 70 / 60-70 / 50-60 / 40-50 / < 40)
T_BANDS: tuple[float, ...] = (0.70, 0.60, 0.50, 0.40)

#: the free-vs-constrained reading: a forced verdict this order-driven / this unstable is called so
FORCED_ORDER_DRIVEN_PHI = 0.5
FORCED_NOISY_C = 0.5


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
    reps = _num(cell.get("repetitions"))
    n_j = int(_num(cell.get("n_judgments")) or 0)
    n_bad = int(_num(cell.get("n_unparsed")) or 0)
    rep_txt = f", up to {reps:g} repetitions each" if reps is not None else ""
    return (f"N = {n_j} judgments, {n_bad} unreadable; {n_pairs} pairs with a readable verdict, "
            f"{n_both} of them in both orders{rep_txt}")


def parse_failure_phrase(top: Any) -> str:
    """The commonest parse failure of a cell (``(reason, count)``) as text: ``"no verdict (12x)"``."""
    if isinstance(top, tuple | list) and len(top) == 2:
        return f"{top[0]} ({int(top[1])}x)"
    return str(top) if top else ""


def _reason(cell: Mapping[str, Any]) -> str:
    top = parse_failure_phrase(cell.get("top_parse_failure"))
    return f"; most common failure: {top}" if top else ""


def _c_measured(cell: Mapping[str, Any]) -> bool:
    """C is measured when the cell has at least two repetitions (with one, C = 1 by construction)."""
    reps = _num(cell.get("repetitions"))
    return reps is None or reps >= 2


def cell_region(cell: Mapping[str, Any], *, c_high: float = DEFAULT_C_HIGH,
                phi_low: float = DEFAULT_PHI_LOW) -> str | None:
    """The failure region of a cell: its ``region`` when it carries one, else :func:`failure_region` of
    its C and phi; ``None`` when either is undefined or C is not measured (one repetition)."""
    given = cell.get("region")
    if given:
        return str(given)
    C, phi = _num(cell.get("C")), _num(cell.get("phi"))
    if C is None or phi is None or not _c_measured(cell):
        return None
    return str(failure_region(C, phi, c_high=c_high, phi_low=phi_low))


def _region_words(cell: Mapping[str, Any]) -> tuple[str, str] | None:
    """(the regions a cell may be in, joined with "or"; the span clause, empty for one region), or None
    when the cell has no region.  The regions are ``regions_possible`` (the ones the intervals of C and
    phi reach: :func:`verdictlab.stats.cell_regions_possible`), else the cell's region alone."""
    region = cell_region(cell)
    if region is None:
        return None
    reach = [str(r) for r in (cell.get("regions_possible") or []) if r] or [region]
    if len(reach) == 1:
        return reach[0], ""
    names = f"{', '.join(reach[:-1])} or {reach[-1]}"
    span = {2: "both", 3: "all three", 4: "all four"}.get(len(reach), f"all {len(reach)}")
    return names, f"the interval spans {span}"


def region_phrase(cell: Mapping[str, Any], *, short: bool = False) -> str | None:
    """A cell's failure region as the report names it everywhere: ``chaos``, or -- when the intervals
    of C and phi reach other regions -- ``chaos or confidently-biased: the interval spans both``
    (``short``: without the clause, for a table whose caption says it).  None without a region."""
    words = _region_words(cell)
    if words is None:
        return None
    names, span = words
    if short and span:
        return "any of the four regions" if span.endswith("all four") else names
    return names if not span else f"{names}: {span}"


def region_caption() -> str:
    """How a table's region column reads."""
    return ("Region: the failure region of (C, φ); 'X or Y' when the intervals of C and φ reach both "
            "regions (the figures cannot tell them apart), 'any of the four' when they reach all four")


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


def _accuracy(cell: Mapping[str, Any]) -> tuple[str | None, str]:
    """(``"chance"`` / ``"worse"`` / ``"better"`` / None, the accuracy clause)."""
    A = _num(cell.get("A"))
    if A is None:
        return None, "its accuracy is undefined (no labelled pairs)"
    a_lo, a_hi = _num(cell.get("A_lo")), _num(cell.get("A_hi"))
    lo = a_lo if a_lo is not None else A - CHANCE_MARGIN
    hi = a_hi if a_hi is not None else A + CHANCE_MARGIN
    verdict = "chance" if lo <= 0.5 <= hi else ("worse" if hi < 0.5 else "better")
    return verdict, {"chance": "not distinguishable from chance at this N",
                     "worse": "worse than chance (it prefers the wrong answer)",
                     "better": "better than chance"}[verdict]


def _order_driven(cell: Mapping[str, Any]) -> str:
    share = _num((cell.get("agreement") or {}).get("share_first_won"))
    where = "shown" if share is None else ("first-shown" if share >= 0.5 else "second-shown")
    won = "" if share is None else f" ({where} answer wins {_pct(share if share >= 0.5 else 1 - share)})"
    return (f"Order-driven whatever its C: it mostly picks the {where} answer{won}, so its verdicts "
            f"follow the layout, not the content")


def _one_repetition_main(verdict: str | None, acc: str) -> str:
    """The main clause of a cell judged once per (pair, order): nothing about reproducibility."""
    if verdict == "chance":
        return "No better than chance (A's interval contains 50%)"
    if verdict == "better":
        return "Better than chance; whether it is trustworthy is not known, since re-asking was never tried"
    return acc[0].upper() + acc[1:]


def _main(cell: Mapping[str, Any], C: float, region: str | None, *, c_high: float, phi_low: float) -> str:
    verdict, acc = _accuracy(cell)
    T, phi = _num(cell.get("T")), _num(cell.get("phi"))
    if C < NOISY_C:
        return f"Unstable: re-asking changes its verdict on most pairs (only {_pct(C)} reproducible), and {acc}"
    if verdict == "chance":
        return ("Deterministic but no better than chance (A's interval contains 50%)" if C >= DETERMINISTIC_C
                else "Fairly repeatable but no better than chance (A's interval contains 50%)")
    if verdict == "better" and T is not None and T >= TRUSTWORTHY_T and region == "trustworthy":
        return "Trustworthy on these pairs: repeatable, little moved by order and right most of the time"
    if verdict == "better" and T is not None and T >= TRUSTWORTHY_T:
        return ("Better than chance but not trustworthy: "
                + _not_trustworthy_because(region, C, phi, c_high=c_high, phi_low=phi_low))
    if verdict == "better":
        return (f"Better than chance, but only {_pct(T)} of its verdicts are trustworthy "
                f"(reproducible, order-invariant and right)")
    return acc[0].upper() + acc[1:]


def cell_sentence(cell: Mapping[str, Any], *, c_high: float = DEFAULT_C_HIGH,
                  phi_low: float = DEFAULT_PHI_LOW) -> str:
    """One plain sentence on what the figures of ``cell`` (a report cell dict) say.  "Trustworthy" is
    said only of a cell in the trustworthy failure region (the one :func:`failure_region` gives with
    the same thresholds), and the sentence names the region, so it never contradicts the plot; a cell
    judged once per (pair, order) is never called repeatable (its C is not measured)."""
    n_j = _num(cell.get("n_judgments")) or 0
    if n_j <= 0:
        return "No judgments yet."
    C, phi, A, T = (_num(cell.get(k)) for k in ("C", "phi", "A", "T"))
    fail = _num(cell.get("parse_failure_rate")) or 0.0
    tail = f" ({n_phrase(cell)})."
    if 1.0 - fail < MIN_PARSED_SHARE or C is None:
        return (f"Almost never gave a readable verdict ({_pct(1 - fail)} of outputs parsed{_reason(cell)}): the "
                f"figures say nothing about its judging, only that it does not follow this output format" + tail)
    measured = _c_measured(cell)
    region = cell_region(cell, c_high=c_high, phi_low=phi_low)
    c_text = f"C = {_pct(C)}" if measured else "C not measured (one repetition)"
    words = _region_words(cell)
    where = "undefined" if words is None else words[0] + (f" ({words[1]})" if words[1] else "")
    figures = f"region {where}: {c_text}, phi = {_pct(phi)}, A = {_pct(A)}, T = {_pct(T)}"
    side: list[str] = []
    if phi is not None and SOME_FLIPS_PHI <= phi < ORDER_DRIVEN_PHI:
        side.append(f"swapping the two answers changes the verdict on {_pct(phi)} of pairs")
    if fail >= NOTE_UNPARSED:
        side.append(f"{_pct(fail)} of its outputs were unreadable and left out{_reason(cell)}")
    if not measured:
        side.append("judged once per pair and order, so its reproducibility C is not measured "
                    "(100% by construction): run at least 2 repetitions to measure it")
    side_txt = ("; " + "; ".join(side)) if side else ""
    if phi is not None and phi >= ORDER_DRIVEN_PHI:
        main = _order_driven(cell)
    elif not measured:
        main = _one_repetition_main(*_accuracy(cell))
    else:
        main = _main(cell, C, region, c_high=c_high, phi_low=phi_low)
    return f"{main}{side_txt} [{figures}]{tail}"


def protocol_sentences(cells: Iterable[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """``(label, sentence)`` per cell; the label is the protocol, extended with judge / dataset /
    temperature only where the cells differ in them (a caller showing two decodings names them)."""
    cells = list(cells)
    varying = [k for k in ("judge", "dataset", "temperature") if len({str(c.get(k)) for c in cells}) > 1]
    out = []
    for c in cells:
        label = str(c.get("protocol"))
        if varying:
            label += " (" + ", ".join(f"{k} {c.get(k)}" for k in varying) + ")"
        out.append((label, cell_sentence(c)))
    return out


def single_rep_note(cells: Sequence[Mapping[str, Any]]) -> str:
    """A warning when some cells have one repetition: their C is 100% by construction."""
    one = [c for c in cells if (_num(c.get("repetitions")) or 0) < 2]
    if not one:
        return ""
    return (f"{len(one)} of {len(cells)} cells have a single repetition: their C (and self-consistency) is 100% "
            "by construction and says nothing about reproducibility; run ≥ 3 repetitions to measure it.")


def policy_line(report: Mapping[str, Any], *, legend: bool = True) -> str:
    """The unparsed policy, the Ns and the interval methods in one line (plus the column legend of the
    figures table when ``legend``)."""
    policy: FigurePolicy = report["policy"]
    conf = policy.confidence
    totals = report.get("totals") or {}
    how = unparsed_how(policy)
    counts = (f"; {totals['n_unparsed']} of {totals['n_judgments']} judgments unparsed"
              if "n_unparsed" in totals and "n_judgments" in totals else "")
    return (f"Unparsed verdicts: {how} [--unparsed {policy.unparsed.value}]{counts}. "
            f"Figures in %; brackets are {conf:.0%} intervals (Wilson for proportions, pair-level "
            f"bootstrap for T, {policy.n_bootstrap} resamples). C and φ stand on all pairs "
            f"('pairs'); A, A_dec and T on labelled non-tie pairs ('lab.')."
            + (" SC = self-consistency; gap = A_max − A; ★ = best T of the dataset." if legend
               else " ★ = best T of the dataset."))


def unparsed_how(policy: FigurePolicy, *, audit: bool = False, short: bool = False) -> str:
    """What the report's figures did with unparsed verdicts, in words (``audit``: the audit trail's wording;
    ``short``: a few words)."""
    if policy.drops_unparsed:
        if short:
            return "excluded (and counted)"
        return "excluded from every figure and counted" if audit else "excluded from every figure (and counted)"
    return "counted as wrong" if short else "counted as wrong verdicts"


def paradox_rule() -> str:
    """The consistency-bias paradox rule in words, with its thresholds."""
    return f"test–retest > {PARADOX_RETEST:g} with position bias > {PARADOX_BIAS:g}"


def agreement_caption() -> str:
    """How to read the agreement and bias table (with the paradox thresholds)."""
    return ("exact match (tie-excluded), Cohen κ, Krippendorff α and κ deflation (= exact − κ) on "
            "(pair, order) units (N units); position bias = |share first-shown won − ½| on parsed A/B "
            f"judgments (N pos.); retest = α over repetitions; paradox = retest > {PARADOX_RETEST:g} with "
            f"position bias > {PARADOX_BIAS:g}; verb. r = Pearson r of length difference with verdict")


def shown_definitions(report: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The published definitions the report explains (``report --definitions``): the catalogue entries
    (``report["definitions"]``) of those some cell has a figure for, in catalogue order."""
    shown = {r["definition"] for c in report["cells"] for r in c.get("definitions") or []}
    return [d for d in report.get("definitions") or [] if d["name"] in shown]


def definition_unparsed_rule(entry: Mapping[str, Any], policy: FigurePolicy) -> str:
    """What a published definition does with unparsed outputs, for its catalogue line: its source's
    rule, or the cell's unparsed policy where the source has none (``entry["policy"]``)."""
    return f"the cell's policy: {policy.unparsed.value}" if entry.get("policy") else str(entry.get("unparsed") or "")


def decoding_line(run: Mapping[str, Any]) -> str:
    """One line on constrained decoding from the run's meta (``decoding_mechanisms``: judge -> protocol ->
    mechanism or "not constrainable: why"); empty when the run used free decoding only."""
    table = (run.get("meta") or {}).get("decoding_mechanisms") or {}
    pairs = [(j, p, str(m)) for j, protos in table.items() if isinstance(protos, Mapping) for p, m in protos.items()]
    if not pairs:
        return ""
    skipped = [f"{j} × {p} ({m.split(':', 1)[-1].strip()})" for j, p, m in pairs if m.startswith("not constrainable")]
    line = f"Constrained decoding: {len(pairs) - len(skipped)} of {len(pairs)} judge × protocol pairs constrained"
    return line + (f"; not constrainable, so not run constrained: {'; '.join(skipped)}." if skipped else ".")


def decoding_reading(row: Mapping[str, Any]) -> str:
    """One plain line on what the constraint changed, from a row of
    :func:`verdictlab.stats.decoding.decoding_effect`."""
    def f(key: str) -> float:
        v = _num(row.get(key))
        return float("nan") if v is None else v

    pf0, pf1, removed = f("unparsed_free"), f("unparsed_constrained"), f("unparsed_removed")
    parts = []
    if pf0 > 0:
        verb = "removed" if removed >= 0 else "added"
        parts.append(f"forcing the format {verb} {abs(removed):.0%} of unparsed outputs ({pf0:.0%} -> {pf1:.0%})")
    elif pf1 > 0:
        parts.append(f"forcing the format left {pf1:.0%} unparsed (free: none)")
    else:
        parts.append("every output was readable in both modes")
    phi1, c1, a1 = f("phi_constrained"), f("C_constrained"), f("A_constrained")
    if phi1 >= FORCED_ORDER_DRIVEN_PHI:
        parts.append(f"the forced verdicts are order-driven: phi {phi1:.2f}")
    elif c1 < FORCED_NOISY_C:
        parts.append(f"the forced verdicts are noisy: C {c1:.2f}")
    elif not math.isnan(a1):
        parts.append(f"the forced verdicts are right {a1:.0%} of the time (phi {phi1:.2f}, C {c1:.2f})")
    dt, lo, hi = f("dT"), f("dT_lo"), f("dT_hi")
    if math.isnan(dt):
        which = "free" if math.isnan(f("T_free")) else "constrained"
        parts.append(f"no T {which} (too few readable verdicts in both orders), so no dT")
    else:
        sig = "" if math.isnan(lo) or lo <= 0 <= hi else " (interval excludes 0)"
        parts.append(f"dT {dt:+.2f} [{lo:+.2f}, {hi:+.2f}]{sig}")
    return "; ".join(parts)


#: registered analyses whose rows the report reads aloud: table name -> the reading of one row (a
#: ``reading`` column the report adds to the table)
TABLE_READINGS = {"decoding": decoding_reading}


# -- validation-protocol checklist ------------------------------------------------------------------

def _fmt_key(key: Any) -> str:
    return " × ".join(str(k) for k in key) if isinstance(key, tuple | list) else str(key)


def _cell_name(cell: Mapping[str, Any]) -> str:
    name = CellKey.of(cell).label()
    return f"{name} [{cell['step']}]" if cell.get("step") else name


def _check_agreement(cells: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    kappas = [(c.get("agreement") or {}).get("kappa") for c in cells]
    have_agreement = any(c.get("agreement") for c in cells)
    finite_k = [k for k in kappas if k is not None]
    return {
        "check": "Chance-corrected agreement (Cohen's κ / Krippendorff's α) reported, not only exact match",
        "passed": bool(finite_k),
        "detail": (f"κ reported for {len(finite_k)} of {len(cells)} cells" if have_agreement
                   else "no agreement figures in this report (stats agreement function unavailable "
                        "or no labelled pairs)"),
    }


def _check_orders(order_coverage: tuple[int, Sequence[Any]]) -> dict[str, Any]:
    n_cells, lacking = order_coverage
    if not n_cells:
        both, detail = False, "no judgments"
    else:
        both = not lacking
        detail = ("every cell ran both orders (AB and BA)" if both else
                  f"{len(lacking)} of {n_cells} cells lack an order, e.g. {_fmt_key(lacking[0])}")
    return {"check": "Both presentation orders run (position swap)", "passed": both, "detail": detail}


def _check_position(cells: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    one_order = [c for c in cells if (c.get("agreement") or {}).get("position_bias_note") == ONE_ORDER_REASON]
    if one_order:
        # never PASS while a cell ran one order only (its position bias is confounded with quality)
        return {"check": "Position bias checked even where test–retest is high", "passed": False,
                "detail": f"{ONE_ORDER_REASON}: {len(one_order)} of {len(cells)} cells ran one order only, "
                          f"e.g. {_cell_name(one_order[0])}"}
    have_agreement = any(c.get("agreement") for c in cells)
    pb = [(c.get("agreement") or {}).get("position_bias") for c in cells]
    n_pb = sum(p is not None for p in pb)
    phis = [c.get("phi") for c in cells if c.get("phi") is not None]
    paradox = [c for c in cells if (c.get("agreement") or {}).get("consistency_bias_paradox")]
    checked = (n_pb == len(cells) and n_pb > 0) or (not have_agreement and len(phis) == len(cells) and phis)
    extra = ""
    if paradox:
        extra = (f"; consistency–bias paradox (test–retest > {PARADOX_RETEST:g} with position bias > "
                 f"{PARADOX_BIAS:g}) in {len(paradox)} cell(s), e.g. {_cell_name(paradox[0])}")
    return {"check": "Position bias checked even where test–retest is high",
            "passed": bool(checked),
            "detail": (f"position bias measured in {n_pb} of {len(cells)} cells" if have_agreement
                       else f"flip rate φ measured in {len(phis)} of {len(cells)} cells") + extra}


def validation_checklist(cells: Sequence[Mapping[str, Any]], order_coverage: tuple[int, Sequence[Any]]
                         ) -> list[dict[str, Any]]:
    """The minimum validation protocol, line by line, with pass/fail for this run: ``cells`` are the
    report's cell dicts (figures of :func:`verdictlab.stats.reliability`, ``agreement`` of
    :func:`verdictlab.stats.agreement_by_cell`), ``order_coverage`` is
    :func:`verdictlab.stats.cells_lacking_an_order` of the pairwise judgments they stand on."""
    reps = [int(c["repetitions"]) for c in cells if c.get("repetitions") is not None]
    min_rep = min(reps) if reps else 0
    datasets = sorted({str(c["dataset"]) for c in cells})
    failed = [c for c in cells if (c.get("parse_failure_rate") or 0) > 0]
    return [
        _check_agreement(cells),
        _check_orders(order_coverage),
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


# -- readings of the plots ---------------------------------------------------------------------------

def _jname(c: Mapping[str, Any]) -> str:
    return str(c.get("judge_label") or c["judge"])


def _defined(cells: Sequence[Mapping[str, Any]], *names: str) -> list[Mapping[str, Any]]:
    return [c for c in cells if all(c.get(n) is not None for n in names)]


def _temp(x: Any) -> str:
    t = _num(x)
    return "?" if t is None else f"{t:g}"


def _ceiling_reading(cells: Sequence[Mapping[str, Any]]) -> str:
    pts = _defined(cells, "A", "phi")
    near = [c for c in pts if c.get("capability_gap") is not None and c["capability_gap"] <= NEAR_CEILING]
    worst = max(pts, key=lambda c: c["phi"], default=None)
    return ("Each point is a cell. A judge that flips on a share φ of pairs can be right on at most "
            "1 − φ/2 of them: on a flipped pair exactly one of the two orders is right. Points on the "
            "line have reached that ceiling; more accuracy needs fewer flips, not a better judge of content. "
            + (f"{len(near)} of {len(pts)} cells lie within {100 * NEAR_CEILING:g} points of the ceiling. "
               if pts else "")
            + (f"The highest flip rate is {_pct(worst['phi'])} ({_jname(worst)}, {worst['protocol']}, "
               f"{worst['dataset']}), capping accuracy at {_pct(_num(worst.get('A_max')))}."
               if worst else ""))


def _joint_gap_reading(cells: Sequence[Mapping[str, Any]], gap: Mapping[str, Any] | None) -> str:
    if not gap or not gap.get("n_cells") or gap.get("largest_row") is None:
        return ""
    worst = cells[int(gap["largest_row"])]
    return (f"The factorised T assumes consistency, order-invariance and correctness are independent; "
            f"measured directly (T_joint) it differs by {100 * gap['mean_abs']:.1f} points on average over "
            f"{gap['n_cells']} cells (largest: {100 * gap['largest']:+.1f} points, {_jname(worst)}, "
            f"{worst['protocol']}, {worst['dataset']}).")


def _factors_reading(cells: Sequence[Mapping[str, Any]], gap: Mapping[str, Any] | None) -> str:
    best = max(_defined(cells, "T", "C"), key=lambda c: c["T"], default=None)
    return ("T is the product of consistency C (vertical) and the accuracy left after removing order "
            "coin-flips, A − φ/2 (horizontal). Dashed curves join points of equal T; to move up a curve a "
            "judge must get better on both axes, so a very consistent judge can still have a low T. "
            + (f"Best T: {_pct(best['T'])} ({_jname(best)}, {best['protocol']}, {best['dataset']}, "
               f"temperature {_temp(best.get('temperature'))}). " if best else "")
            + _joint_gap_reading(cells, gap))


def _regions_reading(cells: Sequence[Mapping[str, Any]], c_high: float, phi_low: float) -> str:
    counts: dict[str, int] = {}
    for c in _defined(cells, "C", "phi"):
        name = cell_region(c, c_high=c_high, phi_low=phi_low)
        if name:
            counts[name] = counts.get(name, 0) + 1
    return (f"Cells with C ≥ {c_high:g} and φ ≤ {phi_low:g} are trustworthy; consistent but "
            "order-sensitive cells are confidently biased (stable answers driven by position), order-fair "
            "but unstable ones are noisy-but-fair, and the rest is chaos. "
            + ("This run: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items(), key=lambda kv: -kv[1])) + "."
               if counts else ""))


def _format_reading(dispersion: Sequence[Mapping[str, Any]], names: Mapping[str, str]) -> str:
    spread = [d for d in dispersion if d.get("delta_T_fmt") is not None]
    top = max(spread, key=lambda d: d["delta_T_fmt"], default=None)
    return ("Each column holds one judge on one dataset; its points are the prompt formats (protocols). "
            "The grey bar and Δ show ΔT_fmt, how much the trustworthy rate moves just by changing the "
            "prompt format. "
            + (f"Largest: {100 * top['delta_T_fmt']:.0f} points ({names.get(top['judge'], top['judge'])} on "
               f"{top['dataset']})." if top else "Only one protocol per judge and dataset: no dispersion to show."))


def _move(d: float) -> str:
    return "barely moves" if abs(d) < BARELY_MOVES else (f"rises by {100 * d:.0f} points" if d > 0
                                                         else f"falls by {100 * -d:.0f} points")


def _temperature_reading(effect: Mapping[str, Any] | None) -> str:
    text = ("Left: stochastic consistency per temperature; right: the accuracy left after removing order "
            "coin-flips. Lines join the same judge, protocol and dataset. ")
    if not effect or effect.get("t_low") is None or effect.get("t_low") == effect.get("t_high"):
        return text + "Only one temperature in this run."
    if not effect.get("n_lines"):
        return text
    dc, da = float(effect["d_C"]), float(effect["d_corrected_accuracy"])
    main = "consistency" if abs(dc) >= abs(da) else "corrected accuracy"
    return (text + f"From temperature {effect['t_low']:g} to {effect['t_high']:g} (mean over {effect['n_lines']} "
            f"lines) consistency {_move(dc)} and corrected accuracy {_move(da)}; "
            + ("so temperature hardly changes T here." if max(abs(dc), abs(da)) < BARELY_MOVES
               else f"so T's change with temperature is mostly a {main} effect."))


def _spread_reading(spread: Sequence[Mapping[str, Any]], names: Mapping[str, str]) -> str:
    widest = max(spread, key=lambda r: r["spread"], default=None)
    return ("One box per judge over all its cells (datasets × protocols × temperatures). A tall box means "
            "the judge's trustworthiness depends on where and how it is used; rankings from one benchmark "
            "or one prompt may not carry over. "
            + (f"Widest range: {names.get(widest['judge'], widest['judge'])} ({100 * widest['spread']:.0f} points)."
               if widest else ""))


def plot_readings(report: Mapping[str, Any]) -> dict[str, str]:
    """A short plain-language reading of each plot (keyed like the plots: ceiling, factors, regions,
    format, temperature, spread) from the report's cells, thresholds, format dispersion and the
    across-cell figures it gathered (``across_cells``)."""
    cells = list(report.get("cells") or [])
    th = report.get("region_thresholds") or {}
    c_high, phi_low = float(th.get("c_high", DEFAULT_C_HIGH)), float(th.get("phi_low", DEFAULT_PHI_LOW))
    across = report.get("across_cells") or {}
    names = {str(c["judge"]): _jname(c) for c in cells}
    return {"ceiling": _ceiling_reading(cells),
            "factors": _factors_reading(cells, across.get("joint_gap")),
            "regions": _regions_reading(cells, c_high, phi_low),
            "format": _format_reading(report.get("format_dispersion") or [], names),
            "temperature": _temperature_reading(across.get("temperature_effect")),
            "spread": _spread_reading(across.get("judge_spread") or [], names)}


# -- the decision: which configurations to use, which to avoid, what was not measured ----------------

#: the groups of the decision, in the order a reader sees them
DECISION_GROUPS: tuple[str, ...] = ("use", "avoid", "below_best", "not_measured")


def avoid_rule(cell: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(rule, one sentence)`` when a configuration must be avoided, by the rules its cell sentence
    reads (:func:`cell_sentence`), tried in this order: *unreadable format* (fewer than
    ``MIN_PARSED_SHARE`` of its outputs parsed), *order-driven* (phi >= ``ORDER_DRIVEN_PHI``),
    *unstable* (C measured and below ``NOISY_C``), *inaccurate* (A's interval contains 1/2 or lies
    below it).  None when no rule applies."""
    fail = _num(cell.get("parse_failure_rate")) or 0.0
    if (_num(cell.get("n_judgments")) or 0) > 0 and 1.0 - fail < MIN_PARSED_SHARE:
        return ("unreadable format", f"almost never gives a readable verdict in this format ({_pct(1 - fail)} "
                                     f"of its outputs parsed{_reason(cell)})")
    phi, C = _num(cell.get("phi")), _num(cell.get("C"))
    if phi is not None and phi >= ORDER_DRIVEN_PHI:
        return ("order-driven", f"swapping the two answers reverses {_pct(phi)} of its verdicts: they follow "
                                f"the layout, not the content")
    if C is not None and _c_measured(cell) and C < NOISY_C:
        return ("unstable", f"re-asking changes its verdict on most pairs (only {_pct(C)} reproducible)")
    verdict, _ = _accuracy(cell)
    A = _pct(_num(cell.get("A")))
    if verdict == "chance":
        return ("inaccurate", f"no better than chance (A = {A}; its interval contains 50%)")
    if verdict == "worse":
        return ("inaccurate", f"worse than chance: it prefers the wrong answer (A = {A})")
    return None


def _interval_text(cell: Mapping[str, Any], name: str) -> str:
    lo, hi = _num(cell.get(f"{name}_lo")), _num(cell.get(f"{name}_hi"))
    return "" if lo is None or hi is None else f" [{100 * lo:.0f}, {100 * hi:.0f}]"


def t_with_interval(cell: Mapping[str, Any]) -> str:
    """``T 95% [88, 100]``: a configuration's T with its interval."""
    return f"T {_pct(_num(cell.get('T')))}{_interval_text(cell, 'T')}"


def _paired(vs: Mapping[str, Any]) -> str:
    n, a, b = (int(_num(vs.get(k)) or 0) for k in ("n_shared", "n_better_best", "n_better_cell"))
    p = _num(vs.get("p_holm"))
    return (f"on the {n} pairs both judged, {a} favour the best and {b} this one "
            f"(sign test, Holm p = {'n/a' if p is None else f'{p:.2g}'})")


def _no_t_reason(cell: Mapping[str, Any]) -> str:
    if _num(cell.get("A")) is None:
        return "no T: no labelled pair, so its accuracy is not measured"
    if _num(cell.get("phi")) is None:
        return "no T: no pair was judged in both orders, so its flip rate is not measured"
    return "no T: too few readable verdicts"


def configuration_status(cell: Mapping[str, Any]) -> tuple[str, str, str]:
    """``(group, rule, reason)`` of one configuration in the decision: ``avoid`` by :func:`avoid_rule`;
    ``not_measured`` without a T (or never compared with the best: no pair judged by both); ``use``
    for the best T of its dataset and every configuration the paired test does not tell from it (or
    tells better); ``below_best`` for the ones it tells worse.  ``cell["vs_best"]`` is its row of
    :func:`verdictlab.stats.versus_best`."""
    avoid = avoid_rule(cell)
    if avoid is not None:
        return "avoid", avoid[0], avoid[1]
    if _num(cell.get("T")) is None:
        return "not_measured", "no T", _no_t_reason(cell)
    vs = cell.get("vs_best") or {}
    if vs.get("best"):
        return "use", "best", "the best T of this dataset"
    if _num(vs.get("p_holm")) is None:
        return "not_measured", "not compared", "not compared with the best: no labelled pair judged in both orders by both"
    if not vs.get("distinguishable"):
        return "use", "not distinguishable", "not distinguishable from the best: " + _paired(vs)
    if (_num(vs.get("n_better_cell")) or 0) > (_num(vs.get("n_better_best")) or 0):
        return "use", "better on shared pairs", "below the best by T but more often trustworthy: " + _paired(vs)
    return "below_best", "below the best", "distinguishably below the best: " + _paired(vs)


_MISSING = (
    ("C", "one repetition: re-asking was never tried, so reproducibility is not measured",
     lambda c: not _c_measured(c)),
    ("φ", "one order: the answers were never swapped, so the flip rate is not measured",
     lambda c: _num(c.get("phi")) is None and (_num(c.get("n_judgments")) or 0) > 0),
    ("A", "no labels: accuracy (and T) is not measured",
     lambda c: _num(c.get("A")) is None and (_num(c.get("n_judgments")) or 0) > 0),
)


def _configuration(cell: Mapping[str, Any]) -> str:
    return str((cell.get("display") or {}).get("configuration") or _cell_name(cell))


def missing_figures(cells: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """What was not measured: ``{"figure", "why", "configurations", "every"}`` for C (one repetition),
    φ (one order) and A (no labels), naming the configurations that lack it (``every``: all do)."""
    out = []
    for figure, why, lacks in _MISSING:
        names = [_configuration(c) for c in cells if lacks(c)]
        if names:
            out.append({"figure": figure, "why": why, "configurations": names, "every": len(names) == len(cells)})
    return out


def missing_line(item: Mapping[str, Any]) -> str:
    """One line of :func:`missing_figures` in words."""
    who = "every configuration" if item["every"] else ", ".join(item["configurations"])
    return f"{item['figure']} not measured for {who}: {item['why']}"


def caution(cell: Mapping[str, Any]) -> str:
    """What a reader of a usable configuration should still know, by the side clauses of the cell
    sentences: flips under the swap (phi >= ``SOME_FLIPS_PHI``), unreadable outputs (>=
    ``NOTE_UNPARSED``), C not measured.  Empty when nothing applies."""
    phi = _num(cell.get("phi"))
    fail = _num(cell.get("parse_failure_rate")) or 0.0
    notes = []
    if phi is not None and phi >= SOME_FLIPS_PHI:
        notes.append(f"swapping the answers changes {_pct(phi)} of its verdicts")
    if fail >= NOTE_UNPARSED:
        notes.append(f"{_pct(fail)} of its outputs unreadable")
    if not _c_measured(cell):
        notes.append("C not measured (one repetition)")
    return "; ".join(notes)


def _brief(group: str, rule: str, cell: Mapping[str, Any]) -> str:
    """The reason in a few words, for a one-line list: the paired counts against the best."""
    vs = cell.get("vs_best") or {}
    if rule == "best":
        return "the best T"
    if group in ("use", "below_best") and _num(vs.get("p_holm")) is not None:
        n, a, b = (int(_num(vs.get(k)) or 0) for k in ("n_shared", "n_better_best", "n_better_cell"))
        return f"{a} vs {b} of {n} pairs, Holm p {float(vs['p_holm']):.2g}"
    return rule


def _entry(index: int, cell: Mapping[str, Any]) -> dict[str, Any]:
    group, rule, reason = configuration_status(cell)
    display = cell.get("display") or {}
    return {"cell_index": index, "configuration": _configuration(cell),
            "configuration_id": str(display.get("configuration_id") or _configuration(cell)),
            **{k: cell.get(k) for k in ("judge", "protocol", "temperature", "decoding", "step")},
            "T": cell.get("T"), "T_lo": cell.get("T_lo"), "T_hi": cell.get("T_hi"),
            "region": region_phrase(cell), "region_short": region_phrase(cell, short=True),
            "group": group, "rule": rule, "reason": reason, "brief": _brief(group, rule, cell),
            "caution": caution(cell) if group == "use" else ""}


def _headline(entries: Sequence[Mapping[str, Any]], cells: Sequence[Mapping[str, Any]]) -> str:
    use = [e for e in entries if e["group"] == "use"]
    best = next((e for e in entries if (cells[e["cell_index"]].get("vs_best") or {}).get("best")), None)
    if use:
        first = use[0]
        more = (f" — or any of {len(use) - 1} more not distinguishable from it" if len(use) > 2
                else " — or one more not distinguishable from it" if len(use) == 2 else "")
        head = f"Use {first['configuration']} ({t_with_interval(cells[first['cell_index']])}){more}."
        if best is not None and best["group"] == "avoid":
            head += (f" The best T, {best['configuration']} ({t_with_interval(cells[best['cell_index']])}), "
                     f"is to be avoided: {best['reason']}.")
        return head
    if best is not None:
        return (f"No configuration to use: the best T, {best['configuration']} "
                f"({t_with_interval(cells[best['cell_index']])}), is to be avoided: {best['reason']}.")
    return "No configuration to use: no configuration has a T (see what was not measured)."


def decision(cells: Sequence[Mapping[str, Any]], *, alpha: float, family_size: int) -> list[dict[str, Any]]:
    """Per dataset, in the order of the cells: ``{"dataset", "headline", "use", "avoid", "below_best",
    "not_measured", "missing"}``.  Each group lists configurations as ``{"number", "cell_index",
    "configuration", judge, protocol, temperature, decoding, step, "T", "T_lo", "T_hi", "region",
    "group", "rule", "reason"}`` (``number``: its rank by T in the dataset, 1 = best; ``cell_index``:
    its place in the report's cells); ``missing`` is :func:`missing_figures`.  The cells carry their
    ``vs_best`` row and ``display`` names (:func:`verdictlab.report.build_report`)."""
    out = []
    for ds in dict.fromkeys(str(c["dataset"]) for c in cells):
        idx = [i for i, c in enumerate(cells) if str(c["dataset"]) == ds]
        ranked = sorted(idx, key=lambda i: (_num(cells[i].get("T")) is None, -(_num(cells[i].get("T")) or 0.0), i))
        entries = [{"number": k + 1, **_entry(i, cells[i])} for k, i in enumerate(ranked)]
        item: dict[str, Any] = {"dataset": ds,
                                "dataset_name": str((cells[idx[0]].get("display") or {}).get("dataset") or ds),
                                "headline": _headline(entries, cells), "alpha": alpha, "family_size": family_size}
        for g in DECISION_GROUPS:
            item[g] = [e for e in entries if e["group"] == g]
        item["missing"] = missing_figures([cells[i] for i in idx])
        out.append(item)
    return out


def decision_test_line(alpha: float, family_size: int) -> str:
    """How "not distinguishable from the best" is decided, in one sentence."""
    return (f"Not distinguishable = an exact sign test over the pairs both configurations judged (labelled, "
            f"both orders) on how many of each pair's two orders got a trustworthy verdict (reproducible, "
            f"order-invariant and right; the event T_joint counts) — 'a vs b of n pairs': on a pairs the best "
            f"has more, on b this one — Holm-adjusted across all {family_size} "
            f"comparisons with a dataset's best T, at {alpha:.0%}. Avoid = the rules of the cell sentences: "
            f"unreadable format, order-driven (φ ≥ {_pct(ORDER_DRIVEN_PHI)}), unstable (C < {_pct(NOISY_C)}), "
            f"inaccurate (A's interval not above 50%).")
