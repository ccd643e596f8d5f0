"""Readings of the figures: every sentence the report says about what its numbers mean, and every
reading rule and display threshold -- in this one module.  The numbers come from
:mod:`verdictlab.stats` (gathered by :func:`verdictlab.report.build_report`); nothing here computes a
figure, it compares figures with the thresholds below and says what that means.  Why a figure is
missing is decided once, by :func:`verdictlab.stats.figure_reasons` (carried by each cell); what each
reason means in words is :data:`MISSING_WHY`.

Cell sentences (:func:`cell_sentence`), rules tried in this order:

1. No judgments, or fewer than ``MIN_PARSED_SHARE`` of the outputs readable (none at all: the reason
   ``no readable replies``) -> the figures say nothing about judging, only that the judge does not
   follow the output format.
2. ``phi >= ORDER_DRIVEN_PHI`` -> *order-driven whatever its C*: it picks the first- (or second-)
   shown answer, whichever wins more often (``agreement.share_first_won``).
3. One repetition -> C is not measured (every verdict agrees with itself), so nothing is said about
   reproducibility, T is only an upper bound (A - phi q), and "trustworthy" is never said (its region is
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
   most common parse failure when the cell carries it (``top_parse_failure``: a ``(reason, count)``
   pair of :func:`verdictlab.stats.top_parse_failures`).

Every sentence names the cell's region and ends with the N it stands on (pairs x orders x
repetitions, unparsed outputs).  Beside them: the validation-protocol checklist
(:func:`validation_checklist`), the display bands of T (:func:`t_band`), the reading printed under
each plot (:func:`plot_readings`), the free-vs-constrained reading (:func:`decoding_reading`), the
single-repetition warning, the unparsed-policy line, the constrained-decoding line, the decision
(:func:`decision`) and, with published definitions asked for, which of them the report explains
(:func:`shown_definitions`) and their unparsed rule (:func:`definition_unparsed_rule`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..core.policy import FigurePolicy
from ..core.vocab import DEFAULT_DECODING, CellKey, Missing
from ..stats.by_cell import ONE_ORDER_REASON
from ..stats.ranking_audit import LeaderboardAudit
from ..stats.regions import DEFAULT_C_HIGH, DEFAULT_PHI_LOW, PARADOX_BIAS, PARADOX_RETEST, failure_region
from .model import (
    Agreement,
    Cell,
    CheckItem,
    DatasetDecision,
    DecisionEntry,
    DispersionRow,
    GraderBlock,
    LeaderboardBlock,
    MissingFigure,
    Report,
    Scalar,
)

__all__ = ["BARELY_MOVES", "CHANCE_MARGIN", "DECISION_GROUPS", "DETERMINISTIC_C", "MIN_BENCHMARKS", "MIN_PARSED_SHARE",
           "MIN_REPETITIONS", "MISSING_WHY", "NEAR_CEILING", "NOISY_C", "NOTE_UNPARSED", "ORDER_DRIVEN_PHI",
           "SOME_FLIPS_PHI", "TABLE_READINGS", "TRUSTWORTHY_T", "T_BANDS", "agreement_caption", "agreement_of",
           "avoid_rule", "bound_legend", "caution", "cell_region", "cell_sentence", "cell_title",
           "configuration_status", "decision", "decision_test_line", "decoding_line", "decoding_reading",
           "definition_unparsed_rule", "figure_words", "missing_figures", "n_phrase", "paradox_rule",
           "parse_failure_phrase", "plot_readings", "policy_line", "protocol_label", "protocol_sentences",
           "ranking_line", "region_caption", "region_phrase", "shown_definitions", "single_rep_note", "t_band", "temperature_text",
           "t_with_interval", "unparsed_how", "validation_checklist"]

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

#: what each reason a figure is missing (:class:`~verdictlab.core.vocab.Missing`) means, in words
MISSING_WHY: dict[str, str] = {
    Missing.NO_READABLE_REPLIES: "none of its replies could be read, so nothing about its judging is measured",
    Missing.ONE_ORDER: "the answers were never swapped, so the flip rate is not measured",
    Missing.ONE_REPETITION: "re-asking was never tried, so reproducibility is not measured",
    Missing.NO_LABELS: "accuracy (and T) is not measured",
    Missing.TOO_FEW_PAIRS: "too few pairs were read to measure it",
    Missing.ADAPTIVE_DESIGN: "the adaptive design does not estimate it (it needs every repetition of every unit)",
}

#: the figures' names in sentences
FIGURE_WORDS: dict[str, str] = {"C": "C", "self_consistency": "self-consistency", "phi": "φ", "A": "A",
                                "A_dec": "A decisive", "A_max": "A max", "capability_gap": "the capability gap",
                                "A_corrected": "A − φq", "T": "T", "T_joint": "T joint", "tie_rate": "the tie rate"}


def figure_words(name: str) -> str:
    """A figure's name in a sentence (``phi`` -> ``φ``)."""
    return FIGURE_WORDS.get(name, name.replace("_", " "))


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
    if isinstance(x, bool):
        return None
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(v) else v


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.0f}%"


def _v(cell: Cell, name: str) -> float | None:
    return _num(cell.value(name))


def n_phrase(cell: Cell) -> str:
    """The N a cell's figures stand on, in words."""
    n_pairs = int(_v(cell, "n_pairs") or 0)
    n_both = int(_v(cell, "n_order_pairs") or 0)
    reps = _v(cell, "repetitions")
    n_j = int(_v(cell, "n_judgments") or 0)
    n_bad = int(_v(cell, "n_unparsed") or 0)
    rep_txt = f", up to {reps:g} repetitions each" if reps is not None else ""
    return (f"N = {n_j} judgments, {n_bad} unreadable; {n_pairs} pairs with a readable verdict, "
            f"{n_both} of them in both orders{rep_txt}")


def parse_failure_phrase(top: Any) -> str:
    """The commonest parse failure of a cell (``(reason, count)``) as text: ``"no verdict (12x)"``."""
    if isinstance(top, tuple | list) and len(top) == 2:
        return f"{top[0]} ({int(top[1])}x)"
    return str(top) if top else ""


def _reason(cell: Cell) -> str:
    top = parse_failure_phrase(cell.top_parse_failure)
    return f"; most common failure: {top}" if top else ""


def _c_measured(cell: Cell) -> bool:
    """C is measured when the cell has at least two repetitions (with one, every verdict agrees with itself)."""
    return cell.missing.get("C") != Missing.ONE_REPETITION


def _unreadable(cell: Cell) -> bool:
    """Nothing, or almost nothing, of the cell could be read (rule 1 of the cell sentences)."""
    fail = _v(cell, "parse_failure_rate") or 0.0
    return 1.0 - fail < MIN_PARSED_SHARE or cell.missing.get("C") == Missing.NO_READABLE_REPLIES


def cell_region(cell: Cell, *, c_high: float = DEFAULT_C_HIGH, phi_low: float = DEFAULT_PHI_LOW) -> str | None:
    """The failure region of a cell: its ``region`` when it carries one, else :func:`failure_region` of
    its C and phi; ``None`` when either is undefined or C is not measured (one repetition)."""
    if cell.region:
        return str(cell.region)
    C, phi = _v(cell, "C"), _v(cell, "phi")
    if C is None or phi is None or not _c_measured(cell):
        return None
    return str(failure_region(C, phi, c_high=c_high, phi_low=phi_low))


def _region_words(cell: Cell) -> tuple[str, str] | None:
    """(the regions a cell may be in, joined with "or"; the span clause, empty for one region), or None
    when the cell has no region.  The regions are ``regions_possible`` (the ones the intervals of C and
    phi reach: :func:`verdictlab.stats.cell_regions_possible`), else the cell's region alone."""
    region = cell_region(cell)
    if region is None:
        return None
    reach = [str(r) for r in (cell.regions_possible or []) if r] or [region]
    if len(reach) == 1:
        return reach[0], ""
    names = f"{', '.join(reach[:-1])} or {reach[-1]}"
    span = {2: "both", 3: "all three", 4: "all four"}.get(len(reach), f"all {len(reach)}")
    return names, f"the interval spans {span}"


def region_phrase(cell: Cell, *, short: bool = False) -> str | None:
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


def bound_legend() -> str:
    """How an upper bound reads in every table."""
    return ("≤ marks an upper bound: with one repetition C is not measured, so T = C·(A − φq) is at most "
            "A − φq (and T joint at most its one-repetition value)")


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


def _accuracy(cell: Cell) -> tuple[str | None, str]:
    """(``"chance"`` / ``"worse"`` / ``"better"`` / None, the accuracy clause)."""
    A = _v(cell, "A")
    if A is None:
        why = cell.missing.get("A")
        return None, f"its accuracy is not measured ({why})" if why else "its accuracy is undefined (no labelled pairs)"
    a = cell.figure("A")
    lo = a.low if a.low is not None else A - CHANCE_MARGIN
    hi = a.high if a.high is not None else A + CHANCE_MARGIN
    verdict = "chance" if lo <= 0.5 <= hi else ("worse" if hi < 0.5 else "better")
    return verdict, {"chance": "not distinguishable from chance at this N",
                     "worse": "worse than chance (it prefers the wrong answer)",
                     "better": "better than chance"}[verdict]


def _order_driven(cell: Cell) -> str:
    share = _num(cell.agreement.get("share_first_won")) if cell.agreement is not None else None
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


def _main(cell: Cell, C: float, region: str | None, *, c_high: float, phi_low: float) -> str:
    verdict, acc = _accuracy(cell)
    T, phi = _v(cell, "T"), _v(cell, "phi")
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


def _figure_text(cell: Cell, name: str, word: str) -> str:
    """``C = 72%``, ``T ≤ 72%`` (an upper bound) or ``C not measured (one repetition)``."""
    iv = cell.figure(name)
    if iv.point is None:
        why = cell.missing.get(name)
        return f"{word} not measured ({why})" if why else f"{word} = n/a"
    return f"{word} {'≤' if iv.upper_bound else '='} {_pct(iv.point)}"


def cell_sentence(cell: Cell, *, c_high: float = DEFAULT_C_HIGH, phi_low: float = DEFAULT_PHI_LOW) -> str:
    """One plain sentence on what the figures of ``cell`` say.  "Trustworthy" is said only of a cell in
    the trustworthy failure region (the one :func:`failure_region` gives with the same thresholds), and
    the sentence names the region, so it never contradicts the plot; a cell judged once per (pair,
    order) is never called repeatable (its C is not measured, its T only an upper bound)."""
    n_j = _v(cell, "n_judgments") or 0
    if n_j <= 0:
        return "No judgments yet."
    C, phi = _v(cell, "C"), _v(cell, "phi")
    fail = _v(cell, "parse_failure_rate") or 0.0
    tail = f" ({n_phrase(cell)})."
    if _unreadable(cell):
        return (f"Almost never gave a readable verdict ({_pct(1 - fail)} of outputs parsed{_reason(cell)}): the "
                f"figures say nothing about its judging, only that it does not follow this output format" + tail)
    measured = _c_measured(cell)
    region = cell_region(cell, c_high=c_high, phi_low=phi_low)
    words = _region_words(cell)
    where = "undefined" if words is None else words[0] + (f" ({words[1]})" if words[1] else "")
    figures = (f"region {where}: {_figure_text(cell, 'C', 'C')}, phi = {_pct(phi)}, A = {_pct(_v(cell, 'A'))}, "
               f"{_figure_text(cell, 'T', 'T')}")
    side: list[str] = []
    if phi is not None and SOME_FLIPS_PHI <= phi < ORDER_DRIVEN_PHI:
        side.append(f"swapping the two answers changes the verdict on {_pct(phi)} of pairs")
    if fail >= NOTE_UNPARSED:
        side.append(f"{_pct(fail)} of its outputs were unreadable and left out{_reason(cell)}")
    if not measured:
        side.append("judged once per pair and order, so its reproducibility C is not measured and its T is "
                    "only an upper bound: run at least 2 repetitions to measure it")
    side_txt = ("; " + "; ".join(side)) if side else ""
    if phi is not None and phi >= ORDER_DRIVEN_PHI:
        main = _order_driven(cell)
    elif not measured or C is None:
        main = _one_repetition_main(*_accuracy(cell))
    else:
        main = _main(cell, C, region, c_high=c_high, phi_low=phi_low)
    return f"{main}{side_txt} [{figures}]{tail}"


def protocol_label(cell: Cell, *, names: bool = True) -> str:
    """The protocol of a cell as tables show it: its display name (``names``) with its step (``flask
    [accuracy]``) and a decoding mode other than free (``vf-json (constrained)``)."""
    label = cell.names.protocol if names and cell.names is not None else cell.key.protocol
    if cell.step:
        label += f" [{cell.step}]"
    dec = cell.key.decoding
    if dec and dec != DEFAULT_DECODING and str(dec) not in label:
        label += f" ({dec})"
    return label


def cell_title(cell: Cell) -> str:
    """``judge / protocol / dataset / T=t`` (+ the decoding when it is not free, + the step of a
    multi-call protocol): one cell in a title."""
    names = cell.names
    judge = names.judge if names is not None else cell.key.judge
    dataset = names.dataset if names is not None else cell.key.dataset
    protocol = names.protocol if names is not None else cell.key.protocol
    dec = cell.key.decoding
    tail = (f" / {dec}" if dec and dec != DEFAULT_DECODING else "") + (f" / {cell.step}" if cell.step else "")
    return f"{judge} / {protocol} / {dataset} / T={temperature_text(cell.key.temperature)}{tail}"


def protocol_sentences(cells: Iterable[Cell]) -> list[tuple[str, str]]:
    """``(label, sentence)`` per cell; the label is the protocol, extended with judge / dataset /
    temperature only where the cells differ in them (a caller showing two decodings names them)."""
    cells = list(cells)
    varying = [k for k in ("judge", "dataset", "temperature") if len({str(getattr(c.key, k)) for c in cells}) > 1]
    out = []
    for c in cells:
        label = c.key.protocol
        if varying:
            label += " (" + ", ".join(f"{k} {getattr(c.key, k)}" for k in varying) + ")"
        out.append((label, c.sentence or cell_sentence(c)))
    return out


def single_rep_note(cells: Sequence[Cell]) -> str:
    """A warning when some cells have one repetition: their C is not measured and their T is an upper bound."""
    one = [c for c in cells if not _c_measured(c)]
    if not one:
        return ""
    return (f"{len(one)} of {len(cells)} cells have a single repetition: their C (and self-consistency) is not "
            "measured -- every verdict agrees with itself -- and their T is only an upper bound (≤, A − φq); "
            f"run ≥ {MIN_REPETITIONS} repetitions to measure it.")


def unparsed_how(policy: FigurePolicy, *, audit: bool = False, short: bool = False) -> str:
    """What the report's figures did with unparsed verdicts, in words (``audit``: the audit trail's wording;
    ``short``: a few words)."""
    if policy.drops_unparsed:
        if short:
            return "excluded (and counted)"
        return "excluded from every figure and counted" if audit else "excluded from every figure (and counted)"
    return "counted as wrong" if short else "counted as wrong verdicts"


def policy_line(report: Report, *, legend: bool = True) -> str:
    """The unparsed policy, the Ns and the interval methods in one line (plus the column legend of the
    figures table when ``legend``)."""
    policy = report.policy
    totals = report.totals or {}
    counts = (f"; {totals['n_unparsed']} of {totals['n_judgments']} judgments unparsed"
              if "n_unparsed" in totals and "n_judgments" in totals else "")
    bound = (" ≤ = an upper bound (C not measured)." if any(c.upper_bounds for c in report.cells) else "")
    return (f"Unparsed verdicts: {unparsed_how(policy)} [--unparsed {policy.unparsed.value}]{counts}. "
            f"Figures in %; brackets are {policy.confidence:.0%} intervals (Wilson for proportions, pair-level "
            f"bootstrap for T, {policy.n_bootstrap} resamples). C and φ stand on all pairs "
            f"('pairs'); A, A decisive and T on labelled non-tie pairs ('labelled'); — = not measured, with "
            f"the reason below it."
            + (" SC = self-consistency; gap = A max − A; ★ = best T of the dataset." if legend
               else " ★ = best T of the dataset.") + bound)


def paradox_rule() -> str:
    """The consistency-bias paradox rule in words, with its thresholds."""
    return f"test–retest > {PARADOX_RETEST:g} with position bias > {PARADOX_BIAS:g}"


def agreement_caption() -> str:
    """How to read the agreement and bias table (with the paradox thresholds)."""
    return ("exact match (tie-excluded), Cohen κ, Krippendorff α and κ deflation (= exact − κ) on "
            "(pair, order) units (N units); position bias = |share first-shown won − ½| on parsed A/B "
            f"judgments (N position); test–retest = α over repetitions; paradox = test–retest > "
            f"{PARADOX_RETEST:g} with position bias > {PARADOX_BIAS:g} (— where either is undefined); "
            "verbosity r = Pearson r of length difference with verdict")


def agreement_of(values: Mapping[str, Scalar]) -> Agreement:
    """A cell's agreement row (:func:`verdictlab.stats.agreement_by_cell`) with its undefined rules
    filled in, once: the consistency-bias paradox is neither yes nor no where test-retest or position
    bias is undefined (it needs both), and an undefined position bias says why (one order)."""
    retest, bias = _num(values.get("test_retest")), _num(values.get("position_bias"))
    missing = [w for w, v in (("test–retest", retest), ("position bias", bias)) if v is None]
    paradox = None if missing else bool(values.get("consistency_bias_paradox"))
    note = values.get("position_bias_note")
    return Agreement(values=dict(values), paradox=paradox,
                     paradox_reason=f"undefined without {' and '.join(missing)}" if missing else None,
                     position_note=str(note) if note and bias is None else None)


def shown_definitions(report: Report) -> list[Mapping[str, Any]]:
    """The published definitions the report explains (``report --definitions``): the catalogue entries
    (``report.definitions``) of those some cell has a figure for, in catalogue order."""
    shown = {r.definition for c in report.cells for r in c.definitions or ()}
    return [d for d in report.definitions if d["name"] in shown]


def definition_unparsed_rule(entry: Mapping[str, Any], policy: FigurePolicy) -> str:
    """What a published definition does with unparsed outputs, for its catalogue line: its source's
    rule, or the cell's unparsed policy where the source has none (``entry["policy"]``)."""
    return f"the cell's policy: {policy.unparsed.value}" if entry.get("policy") else str(entry.get("unparsed") or "")


def decoding_line(meta: Mapping[str, Any]) -> str:
    """One line on constrained decoding from the run's meta (``decoding_mechanisms``: judge -> protocol ->
    mechanism or "not constrainable: why"); empty when the run used free decoding only."""
    table = meta.get("decoding_mechanisms") or {}
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


def _cell_name(cell: Cell) -> str:
    name = cell.key.label()
    return f"{name} [{cell.step}]" if cell.step else name


def _check_agreement(cells: Sequence[Cell]) -> CheckItem:
    have_agreement = any(c.agreement is not None for c in cells)
    finite_k = [c for c in cells if c.agreement is not None and _num(c.agreement.get("kappa")) is not None]
    return CheckItem(
        check="Chance-corrected agreement (Cohen's κ / Krippendorff's α) reported, not only exact match",
        passed=bool(finite_k),
        detail=(f"κ reported for {len(finite_k)} of {len(cells)} cells" if have_agreement
                else "no agreement figures in this report (stats agreement function unavailable "
                     "or no labelled pairs)"))


def _check_orders(order_coverage: tuple[int, Sequence[Any]]) -> CheckItem:
    n_cells, lacking = order_coverage
    if not n_cells:
        both, detail = False, "no judgments"
    else:
        both = not lacking
        detail = ("every cell ran both orders (AB and BA)" if both else
                  f"{len(lacking)} of {n_cells} cells lack an order, e.g. {_fmt_key(lacking[0])}")
    return CheckItem("Both presentation orders run (position swap)", both, detail)


def _missing_count(cells: Sequence[Cell], figure: str) -> str:
    """``; φ not measured in 2 cells (no readable replies)``: the reasons a figure is missing, by count."""
    reasons: dict[str, int] = {}
    for c in cells:
        why = c.missing.get(figure)
        if why:
            reasons[why] = reasons.get(why, 0) + 1
    if not reasons:
        return ""
    return f"; {figure_words(figure)} not measured in " + ", ".join(
        f"{n} cell{'s' if n != 1 else ''} ({why})" for why, n in reasons.items())


def _check_position(cells: Sequence[Cell]) -> CheckItem:
    one_order = [c for c in cells if c.agreement is not None and c.agreement.position_note == ONE_ORDER_REASON]
    check = "Position bias checked even where test–retest is high"
    if one_order:
        # never PASS while a cell ran one order only (its position bias is confounded with quality)
        return CheckItem(check, False, f"{ONE_ORDER_REASON}: {len(one_order)} of {len(cells)} cells ran one order "
                                       f"only, e.g. {_cell_name(one_order[0])}")
    have_agreement = any(c.agreement is not None for c in cells)
    n_pb = sum(c.agreement is not None and _num(c.agreement.get("position_bias")) is not None for c in cells)
    phis = [c for c in cells if _v(c, "phi") is not None]
    paradox = [c for c in cells if c.agreement is not None and c.agreement.paradox]
    checked = (n_pb == len(cells) and n_pb > 0) or (not have_agreement and len(phis) == len(cells) and phis)
    extra = ""
    if paradox:
        extra = (f"; consistency–bias paradox (test–retest > {PARADOX_RETEST:g} with position bias > "
                 f"{PARADOX_BIAS:g}) in {len(paradox)} cell(s), e.g. {_cell_name(paradox[0])}")
    return CheckItem(check, bool(checked),
                     (f"position bias measured in {n_pb} of {len(cells)} cells" if have_agreement
                      else f"flip rate φ measured in {len(phis)} of {len(cells)} cells")
                     + _missing_count(cells, "phi") + extra)


def validation_checklist(cells: Sequence[Cell], order_coverage: tuple[int, Sequence[Any]]) -> list[CheckItem]:
    """The minimum validation protocol, line by line, with pass/fail for this run: ``cells`` are the
    report's cells, ``order_coverage`` is :func:`verdictlab.stats.cells_lacking_an_order` of the pairwise
    judgments they stand on.  Where a figure is missing the line says why, with the cells' own reasons."""
    reps = [int(r) for c in cells if (r := _v(c, "repetitions")) is not None]
    min_rep = min(reps) if reps else 0
    datasets = sorted({c.key.dataset for c in cells})
    failed = [c for c in cells if (_v(c, "parse_failure_rate") or 0) > 0]
    unread = [c for c in cells if c.missing.get("C") == Missing.NO_READABLE_REPLIES]
    return [
        _check_agreement(cells),
        _check_orders(order_coverage),
        CheckItem(f"At least {MIN_REPETITIONS} repetitions per trial (stochastic consistency measurable)",
                  bool(reps) and min_rep >= MIN_REPETITIONS,
                  (f"fewest repetitions in a cell: {min_rep}" + _missing_count(cells, "C")) if reps else "no cells"),
        CheckItem(f"At least {MIN_BENCHMARKS} contrasting benchmarks", len(datasets) >= MIN_BENCHMARKS,
                  f"{len(datasets)} dataset(s): {', '.join(datasets) or '—'}"),
        _check_position(cells),
        CheckItem("Unparsed verdicts counted and disclosed (never guessed)",
                  all(c.value("n_unparsed") is not None for c in cells) and bool(cells),
                  f"{sum(int(_v(c, 'n_unparsed') or 0) for c in cells)} unparsed judgments; "
                  f"{len(failed)} cell(s) with parse failures"
                  + (f", {len(unread)} with no readable reply (every figure of it not measured)" if unread else "")),
    ]


# -- readings of the plots ---------------------------------------------------------------------------

def _jname(c: Cell) -> str:
    return c.names.judge if c.names is not None else c.key.judge


def _defined(cells: Sequence[Cell], *names: str) -> list[Cell]:
    return [c for c in cells if all(_v(c, n) is not None for n in names)]


def temperature_text(x: Any) -> str:
    """A temperature as every output prints it: ``0.7``; ``?`` for none (an old store's NULL)."""
    t = _num(x)
    return "?" if t is None else f"{t:g}"


def _ceiling_reading(cells: Sequence[Cell]) -> str:
    pts = _defined(cells, "A", "phi")
    near = [c for c in pts if (g := _v(c, "capability_gap")) is not None and g <= NEAR_CEILING]
    worst = max(pts, key=lambda c: _v(c, "phi") or 0.0, default=None)
    return ("Each point is a cell. A judge that flips on a share φ of pairs can be right on at most "
            "1 − φ/2 of them: on a flipped pair exactly one of the two orders is right. Points on the "
            "line have reached that ceiling; more accuracy needs fewer flips, not a better judge of content. "
            + (f"{len(near)} of {len(pts)} cells lie within {100 * NEAR_CEILING:g} points of the ceiling. "
               if pts else "")
            + (f"The highest flip rate is {_pct(_v(worst, 'phi'))} ({_jname(worst)}, {worst.key.protocol}, "
               f"{worst.key.dataset}), capping accuracy at {_pct(_v(worst, 'A_max'))}."
               if worst else ""))


def _joint_gap_reading(cells: Sequence[Cell], gap: Mapping[str, Any] | None) -> str:
    if not gap or not gap.get("n_cells") or gap.get("largest_row") is None:
        return ""
    worst = cells[int(gap["largest_row"])]
    return (f"The factorised T assumes consistency, order-invariance and correctness are independent; "
            f"measured directly (T_joint) it differs by {100 * gap['mean_abs']:.1f} points on average over "
            f"{gap['n_cells']} cells (largest: {100 * gap['largest']:+.1f} points, {_jname(worst)}, "
            f"{worst.key.protocol}, {worst.key.dataset}).")


def _factors_reading(cells: Sequence[Cell], gap: Mapping[str, Any] | None) -> str:
    best = max(_defined(cells, "T", "C"), key=lambda c: _v(c, "T") or 0.0, default=None)
    unmeasured = len([c for c in cells if not _c_measured(c)])
    return ("T is the product of consistency C (vertical) and the accuracy left after removing order "
            "coin-flips, A − φ/2 (horizontal). Dashed curves join points of equal T; to move up a curve a "
            "judge must get better on both axes, so a very consistent judge can still have a low T. "
            + (f"Best T: {_pct(_v(best, 'T'))} ({_jname(best)}, {best.key.protocol}, {best.key.dataset}, "
               f"temperature {temperature_text(best.key.temperature)}). " if best else "")
            + (f"{unmeasured} cell{'s' if unmeasured != 1 else ''} with C not measured (one repetition) "
               f"{'are' if unmeasured != 1 else 'is'} not drawn. " if unmeasured else "")
            + _joint_gap_reading(cells, gap))


def _regions_reading(cells: Sequence[Cell], c_high: float, phi_low: float) -> str:
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


def _format_reading(dispersion: Sequence[DispersionRow], names: Mapping[str, str]) -> str:
    spread = [d for d in dispersion if d.delta_T_fmt is not None]
    top = max(spread, key=lambda d: d.delta_T_fmt or 0.0, default=None)
    return ("Each column holds one judge on one dataset; its points are the prompt formats (protocols). "
            "The grey bar and Δ show ΔT_fmt, how much the trustworthy rate moves just by changing the "
            "prompt format. "
            + (f"Largest: {100 * (top.delta_T_fmt or 0.0):.0f} points ({names.get(top.judge, top.judge)} on "
               f"{top.dataset})." if top else "Only one protocol per judge and dataset: no dispersion to show."))


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


def plot_readings(report: Report) -> dict[str, str]:
    """A short plain-language reading of each plot (keyed like the plots: ceiling, factors, regions,
    format, temperature, spread) from the report's cells, thresholds, format dispersion and the
    across-cell figures it gathered (``across_cells``)."""
    cells = report.cells
    th = report.region_thresholds or {}
    c_high, phi_low = float(th.get("c_high", DEFAULT_C_HIGH)), float(th.get("phi_low", DEFAULT_PHI_LOW))
    across = report.across_cells or {}
    names = {c.key.judge: _jname(c) for c in cells}
    return {"ceiling": _ceiling_reading(cells),
            "factors": _factors_reading(cells, across.get("joint_gap")),
            "regions": _regions_reading(cells, c_high, phi_low),
            "format": _format_reading(report.format_dispersion, names),
            "temperature": _temperature_reading(across.get("temperature_effect")),
            "spread": _spread_reading(across.get("judge_spread") or [], names)}


# -- the decision: which configurations to use, which to avoid, what was not measured ----------------

#: the groups of the decision, in the order a reader sees them
DECISION_GROUPS: tuple[str, ...] = ("use", "avoid", "below_best", "not_measured")


def avoid_rule(cell: Cell) -> tuple[str, str] | None:
    """``(rule, one sentence)`` when a configuration must be avoided, by the rules its cell sentence
    reads (:func:`cell_sentence`), tried in this order: *unreadable format* (fewer than
    ``MIN_PARSED_SHARE`` of its outputs parsed), *order-driven* (phi >= ``ORDER_DRIVEN_PHI``),
    *unstable* (C measured and below ``NOISY_C``), *inaccurate* (A's interval contains 1/2 or lies
    below it).  None when no rule applies."""
    fail = _v(cell, "parse_failure_rate") or 0.0
    if (_v(cell, "n_judgments") or 0) > 0 and _unreadable(cell):
        return ("unreadable format", f"almost never gives a readable verdict in this format ({_pct(1 - fail)} "
                                     f"of its outputs parsed{_reason(cell)})")
    phi, C = _v(cell, "phi"), _v(cell, "C")
    if phi is not None and phi >= ORDER_DRIVEN_PHI:
        return ("order-driven", f"swapping the two answers reverses {_pct(phi)} of its verdicts: they follow "
                                f"the layout, not the content")
    if C is not None and _c_measured(cell) and C < NOISY_C:
        return ("unstable", f"re-asking changes its verdict on most pairs (only {_pct(C)} reproducible)")
    verdict, _ = _accuracy(cell)
    A = _pct(_v(cell, "A"))
    if verdict == "chance":
        return ("inaccurate", f"no better than chance (A = {A}; its interval contains 50%)")
    if verdict == "worse":
        return ("inaccurate", f"worse than chance: it prefers the wrong answer (A = {A})")
    return None


def t_with_interval(cell: Cell) -> str:
    """``T 95% [88, 100]`` -- or ``T ≤ 95% [88, 100]`` for an upper bound: a configuration's T with its
    interval."""
    t = cell.figure("T")
    bound = " ≤" if t.upper_bound else ""
    iv = "" if t.low is None or t.high is None else f" [{100 * t.low:.0f}, {100 * t.high:.0f}]"
    return f"T{bound} {_pct(t.point)}{iv}"


def _paired(vs: Any) -> str:
    n, a, b = (int(_num(vs.get(k)) or 0) for k in ("n_shared", "n_better_best", "n_better_cell"))
    p = _num(vs.get("p_holm"))
    return (f"on the {n} pairs both judged, {a} favour the best and {b} this one "
            f"(sign test, Holm p = {'n/a' if p is None else f'{p:.2g}'})")


#: why a configuration has no T, by the reason :func:`verdictlab.stats.figure_reasons` gives
_NO_T: dict[str, str] = {
    Missing.NO_READABLE_REPLIES: "no T: none of its replies could be read",
    Missing.ONE_ORDER: "no T: no pair was judged in both orders, so its flip rate is not measured",
    Missing.NO_LABELS: "no T: no labelled pair, so its accuracy is not measured",
}


def _no_t_reason(cell: Cell) -> str:
    return _NO_T.get(cell.missing.get("T") or "", "no T: too few readable verdicts")


def configuration_status(cell: Cell) -> tuple[str, str, str]:
    """``(group, rule, reason)`` of one configuration in the decision: ``avoid`` by :func:`avoid_rule`;
    ``not_measured`` without a T (or never compared with the best: no pair judged by both); ``use``
    for the best T of its dataset and every configuration the paired test does not tell from it (or
    tells better); ``below_best`` for the ones it tells worse.  ``cell.vs_best`` is its row of
    :func:`verdictlab.stats.versus_best`."""
    avoid = avoid_rule(cell)
    if avoid is not None:
        return "avoid", avoid[0], avoid[1]
    if _v(cell, "T") is None:
        return "not_measured", "no T", _no_t_reason(cell)
    vs = cell.vs_best
    if vs is None:
        return "not_measured", "not compared", "not compared with the best: no labelled pair judged in both orders by both"
    if vs.best:
        return "use", "best", "the best T of this dataset" + (" (an upper bound)" if cell.upper_bounds.get("T") else "")
    if _num(vs.get("p_holm")) is None:
        return "not_measured", "not compared", "not compared with the best: no labelled pair judged in both orders by both"
    if not vs.get("distinguishable"):
        return "use", "not distinguishable", "not distinguishable from the best: " + _paired(vs)
    if (_num(vs.get("n_better_cell")) or 0) > (_num(vs.get("n_better_best")) or 0):
        return "use", "better on shared pairs", "below the best by T but more often trustworthy: " + _paired(vs)
    return "below_best", "below the best", "distinguishably below the best: " + _paired(vs)


def _configuration(cell: Cell) -> str:
    return cell.names.configuration if cell.names is not None else _cell_name(cell)


#: the figures the decision says were not measured, in this order
DECISION_FIGURES: tuple[str, ...] = ("C", "phi", "A", "T")


def missing_figures(cells: Sequence[Cell]) -> list[MissingFigure]:
    """What was not measured, by figure (C, φ, A, T) and reason -- each cell's own reason
    (:func:`verdictlab.stats.figure_reasons`) -- naming the configurations that lack it (``every``: all
    do); T is listed only where its reason is not already given for C, φ or A."""
    out = []
    for figure in DECISION_FIGURES:
        by_reason: dict[str, list[str]] = {}
        for c in cells:
            why = c.missing.get(figure)
            if why is None:
                continue
            if figure == "T" and any(c.missing.get(f) == why for f in ("phi", "A")):
                continue
            by_reason.setdefault(why, []).append(_configuration(c))
        for why, names in by_reason.items():
            every = len(names) == len(cells)
            who = "every configuration" if every else ", ".join(names)
            out.append(MissingFigure(figure=figure, reason=why, why=MISSING_WHY.get(why, why),
                                     configurations=tuple(names), every=every,
                                     line=f"{figure_words(figure)} not measured for {who}: {why}: "
                                          f"{MISSING_WHY.get(why, why)}"))
    return out


def caution(cell: Cell) -> str:
    """What a reader of a usable configuration should still know, by the side clauses of the cell
    sentences: flips under the swap (phi >= ``SOME_FLIPS_PHI``), unreadable outputs (>=
    ``NOTE_UNPARSED``), C not measured (T only an upper bound).  Empty when nothing applies."""
    phi = _v(cell, "phi")
    fail = _v(cell, "parse_failure_rate") or 0.0
    notes = []
    if phi is not None and phi >= SOME_FLIPS_PHI:
        notes.append(f"swapping the answers changes {_pct(phi)} of its verdicts")
    if fail >= NOTE_UNPARSED:
        notes.append(f"{_pct(fail)} of its outputs unreadable")
    if not _c_measured(cell):
        notes.append("C not measured (one repetition): T is an upper bound")
    return "; ".join(notes)


def _brief(group: str, rule: str, cell: Cell) -> str:
    """The reason in a few words, for a one-line list: the paired counts against the best."""
    vs = cell.vs_best
    if rule == "best":
        return "the best T" + (" (upper bound)" if cell.upper_bounds.get("T") else "")
    if group in ("use", "below_best") and vs is not None and _num(vs.get("p_holm")) is not None:
        n, a, b = (int(_num(vs.get(k)) or 0) for k in ("n_shared", "n_better_best", "n_better_cell"))
        return f"{a} vs {b} of {n} pairs, Holm p {float(vs.get('p_holm') or 0.0):.2g}"
    return rule


def _entry(number: int, index: int, cell: Cell) -> DecisionEntry:
    group, rule, reason = configuration_status(cell)
    return DecisionEntry(number=number, cell_index=index, configuration=_configuration(cell),
                         configuration_id=cell.names.configuration_id if cell.names is not None else _cell_name(cell),
                         key=cell.key, step=cell.step, T=cell.figure("T"), T_text=t_with_interval(cell),
                         region=region_phrase(cell), region_short=region_phrase(cell, short=True),
                         group=group, rule=rule, reason=reason, brief=_brief(group, rule, cell),
                         caution=caution(cell) if group == "use" else "")


def _headline(entries: Sequence[DecisionEntry], cells: Sequence[Cell]) -> str:
    use = [e for e in entries if e.group == "use"]
    best = next((e for e in entries if cells[e.cell_index].vs_best is not None
                 and cells[e.cell_index].vs_best.best), None)  # type: ignore[union-attr]
    if use:
        first = use[0]
        more = (f" — or any of {len(use) - 1} more not distinguishable from it" if len(use) > 2
                else " — or one more not distinguishable from it" if len(use) == 2 else "")
        head = f"Use {first.configuration} ({first.T_text}){more}."
        if best is not None and best.group == "avoid":
            head += f" The best T, {best.configuration} ({best.T_text}), is to be avoided: {best.reason}."
        return head
    if best is not None:
        return f"No configuration to use: the best T, {best.configuration} ({best.T_text}), is to be avoided: {best.reason}."
    return "No configuration to use: no configuration has a T (see what was not measured)."


def ranking_line(cells: Sequence[Cell]) -> str:
    """Which T the dataset's configurations are ranked by: T, or -- where C was not measured (one
    repetition) -- its upper bound A − φq, saying for how many."""
    with_t = [c for c in cells if _v(c, "T") is not None]
    bound = [c for c in with_t if c.upper_bounds.get("T")]
    if not with_t:
        return "Nothing ranked: no configuration has a T."
    if not bound:
        return "Ranked by T = C·(A − φq)."
    if len(bound) == len(with_t):
        return ("Ranked by an upper bound of T, A − φq: C was not measured (one repetition), so the ranking "
                "ignores reproducibility.")
    return (f"Ranked by T, and by its upper bound A − φq for the {len(bound)} configuration(s) whose C was not "
            f"measured (one repetition; marked ≤).")


def decision(cells: Sequence[Cell], *, alpha: float, family_size: int) -> list[DatasetDecision]:
    """Per dataset, in the order of the cells: the headline, the configurations to use, to avoid, below the
    best and without a T (each :class:`~verdictlab.report.model.DecisionEntry`, numbered by T: 1 = best,
    naming its place in the report's cells), what was not measured (:func:`missing_figures`) and which T it
    ranked by (:func:`ranking_line`).  The cells carry their ``vs_best`` row and display names."""
    out = []
    for ds in dict.fromkeys(c.key.dataset for c in cells):
        idx = [i for i, c in enumerate(cells) if c.key.dataset == ds]
        ranked = sorted(idx, key=lambda i: (_v(cells[i], "T") is None, -(_v(cells[i], "T") or 0.0), i))
        entries = [_entry(k + 1, i, cells[i]) for k, i in enumerate(ranked)]
        first = cells[idx[0]]
        groups = {g: tuple(e for e in entries if e.group == g) for g in DECISION_GROUPS}
        out.append(DatasetDecision(
            dataset=ds, dataset_name=first.names.dataset if first.names is not None else ds,
            headline=_headline(entries, cells), ranking=ranking_line([cells[i] for i in idx]),
            ranked_by_bound=any(cells[i].upper_bounds.get("T") for i in idx), alpha=alpha,
            family_size=family_size, use=groups["use"], avoid=groups["avoid"], below_best=groups["below_best"],
            not_measured=groups["not_measured"], missing=tuple(missing_figures([cells[i] for i in idx]))))
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


# -- the sentences about the whole report ---------------------------------------------------------------

def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def names_line(report: Report) -> str:
    """The ids shown under a shorter name: ``Names: judge X = id; ...``; empty when none is.  Read
    from the cells' values (their id and display name), never from the keys of ``display_names``: a
    terminal view makes the values of a report printable, not its keys."""
    seen: dict[str, dict[str, str]] = {"judge": {}, "protocol": {}, "dataset": {}}
    for c in report.cells:
        for kind, ids in seen.items():
            ids[str(getattr(c.key, kind))] = getattr(c.names, kind) if c.names is not None else str(getattr(c.key, kind))
    pairs = [f"{kind} {n} = {i}" for kind in seen for i, n in sorted(seen[kind].items()) if i != n]
    return ("Names: " + "; ".join(pairs)) if pairs else ""


def _broken_line(report: Report, *, html: bool) -> str:
    bi: Mapping[str, Any] = report.broken_items or {}
    n_total = int(bi.get("n_total") or 0)
    if html:
        shown = int(bi.get("n_shown") or 0)
        return (f"{n_total} (pair × cell) combinations: {bi.get('n_flipped', 0)} flipped under the swap (modal verdict "
                f"differs between orders), {bi.get('n_unstable', 0)} unstable across repetitions."
                + (f" Showing the first {shown} (flipped first)." if n_total > shown else ""))
    if not n_total:
        return ""
    return (f"{n_total} (pair × cell) combinations break the judge: {bi.get('n_flipped', 0)} flipped under the swap, "
            f"{bi.get('n_unstable', 0)} unstable across repetitions (see --format html for the items side by side).")


def _lead(report: Report) -> str:
    run = report.run
    return f"verdictlab report — {run.run_dir}  ({run.n_judgments} judgments, {len(report.cells)} cells)"


def _lead_html(report: Report) -> str:
    run = report.run
    temps = ", ".join(f"{t:g}" for t in run.temperatures)
    return (f"{run.n_judgments} judgments · {len(report.cells)} configurations (judge × protocol"
            f"{' × temperature' if len(run.temperatures) > 1 else ''}) on {_plural(len(run.datasets), 'dataset')} · "
            f"{_plural(len(run.judges), 'judge')}, {_plural(len(run.protocols), 'protocol')}, "
            f"temperature{'s' if len(run.temperatures) != 1 else ''} {temps}")


def _headline_html(report: Report) -> str:
    policy = report.policy
    return ("C = stochastic consistency (all repetitions agree), φ = position flip rate, A = accuracy against the "
            "label, A max = 1 − φ(1 − q) the ceiling that flips allow, T = C·(A − φq) the trustworthy verdict rate "
            "(T joint measures the same event directly). Figures in %; small print under a figure is its "
            f"{policy.confidence:.0%} interval (Wilson for C, φ, A; pair-level bootstrap for T, {policy.n_bootstrap} "
            f"resamples), or the reason it is not measured (—). Unparsed verdicts are {unparsed_how(policy, short=True)} "
            f"(--unparsed {policy.unparsed.value}). ★ and the shaded row mark the best T of each dataset. "
            + (bound_legend() + ". " if any(c.upper_bounds for c in report.cells) else "")
            + "Click a column header to sort.")


def report_notes(report: Report) -> dict[str, str]:
    """Every sentence about the whole report, filled once for every renderer: ``lead`` (and ``lead_html``;
    ``counts`` for Markdown),
    ``empty``, ``policy`` (the figures table's legend; ``policy_short`` without the column legend),
    ``headline`` (the HTML's), ``single_repetition``, ``region``, ``agreement`` (and ``agreement_html``),
    ``more``, ``test``, ``decision_pictures``, ``decoding``, ``names``, ``broken`` (and ``broken_html``),
    ``unparsed_audit``, ``intervals`` and ``definitions``."""
    policy = report.policy
    n_point = report.run.n_pointwise_judgments
    n_graders = len(report.extra_tables.get("grader_cells", {}).get("rows") or [])
    first = report.decision[0] if report.decision else None
    return {
        "lead": _lead(report), "lead_html": _lead_html(report),
        "counts": (f"{report.run.n_judgments} judgments, {len(report.cells)} cells (judge × protocol × dataset × "
                   "temperature)."),
        "empty": (f"{n_point} pointwise judgment(s), no pairwise cells." if n_point else "No judgments in this run yet."),
        "empty_terminal": (f"{n_point} pointwise judgment(s) in {n_graders} grader cell(s) (tables grader_cells and "
                           "grader_decision below), no pairwise cells." if n_point else "No judgments in this run yet."),
        "policy": policy_line(report), "policy_short": policy_line(report, legend=False) + " " + region_caption() + ".",
        "headline": _headline_html(report),
        "single_repetition": single_rep_note(report.cells), "region": region_caption(),
        "agreement": agreement_caption(),
        "agreement_html": ("Agreement of the modal verdict with the label: exact match (tie-excluded), Cohen's κ and "
                           "Krippendorff's α (chance-corrected), κ deflation = exact match − κ. Position bias = |share "
                           "of decided verdicts won by the first-shown answer − ½| (\"needs both orders\" where a cell "
                           f"ran one order only); test–retest = α over repetitions; paradox = {paradox_rule()} (— "
                           "where either is undefined)."),
        "more": ("Columns added to the cells by registered analyses (three-class accuracy and macro-F1, expected "
                 "figures from verdict probabilities, ...) and the decoding mode, where the run has them."),
        "test": decision_test_line(policy.alpha, first.family_size if first is not None else 0),
        "decision_pictures": ("The pictures: accuracy A against flip rate φ for each configuration, with both "
                              "intervals and numbered as in the lists; the solid line is the ceiling A = 1 − φ/2, the "
                              "dashed lines A − φ/2 = T (the T of a fully consistent judge: a configuration's T is its "
                              "C times its line)."),
        "decoding": decoding_line(report.run.meta or {}), "names": names_line(report),
        "broken": _broken_line(report, html=False), "broken_html": _broken_line(report, html=True),
        "unparsed_audit": unparsed_how(policy, audit=True),
        "intervals": f"{policy.confidence:.0%}; {policy.n_bootstrap} bootstrap resamples (seed {policy.seed})",
        "definitions": ("The same judgments under each published definition of \"agreement\", \"accuracy\", "
                        "\"consistency\" or \"win rate\" (--definitions): value in % to two decimals as papers print "
                        "them (— with the reason where the cell's figure is not measured), interval, N and what the "
                        "definition's rules left out of its denominator, per cell; the table after the cells gives "
                        "each definition's source and what it counts differently from A."),
    }


# -- the leaderboard block of the decision panel ------------------------------------------------------------

#: the kinds of ranking comparison within one configuration, in the words the panel uses
LEADERBOARD_CHANGES: dict[str, str] = {"order": "Swapping the order of the answers",
                                       "repetition": "Asking again", "humans": "The humans' labels"}


def _comparison_kind(variant_b: str) -> str:
    """Which comparison a stability row is: the leaderboard analysis names a repetition's variant
    ``"<cell> · rep N"`` and the humans' ``"<cell> · humans"``; the two orders are the rest."""
    if variant_b.endswith(" · humans"):
        return "humans"
    return "repetition" if " · rep " in variant_b else "order"


def _tau_words(point: Any, lo: Any, hi: Any) -> str:
    t, lo, hi = _num(point), _num(lo), _num(hi)
    if t is None:
        return "Kendall τ not measured (fewer than two systems ranked by both)"
    ci = f" [{lo:.2f}, {hi:.2f}]" if lo is not None and hi is not None else ""
    return f"Kendall τ {t:.2f}{ci}"


def _top_words(changed: bool, top_a: Any, top_b: Any, p_changes: float) -> str:
    often = f"; the top changes in {_pct(p_changes)} of resampled prompts" if _num(p_changes) is not None else ""
    if changed:
        return f"the top changes from {top_a} to {top_b}{often}"
    return f"the top stays {top_a}{often}"


def leaderboard_ranking(audit: LeaderboardAudit) -> str:
    """The ranking, best first, each system with its Elo-scale rating, interval and rank range."""
    parts = []
    for s in audit.ranking:
        rng = f", rank {s.rank_lo}–{s.rank_hi}" if s.rank_lo != s.rank_hi else ""
        parts.append(f"{s.rank}. {s.system} {s.rating.estimate:.0f} ({s.rating.low:.0f}–{s.rating.high:.0f}{rng})")
    return "Ranking (Bradley–Terry, Elo scale, interval over resampled pairs): " + "; ".join(parts) + "."


def leaderboard_distinguishable(audit: LeaderboardAudit) -> str:
    """Which systems this judge can tell apart: the separable tiers in plain words."""
    counted = f"{audit.n_separable_pairs} of {audit.n_pairs} pairs separable by a sign test over shared prompts, Holm-adjusted"
    if len(audit.tiers) <= 1:
        return (f"No two systems are distinguishable ({counted}): the order of this ranking is not evidence "
                "that one system is better than another.")
    if all(len(t) == 1 for t in audit.tiers):
        return f"Every system is distinguishable from the next ({counted})."
    tiers = " > ".join("{" + ", ".join(t) + "}" for t in audit.tiers)
    return (f"Distinguishable tiers, best first: {tiers}; within a tier this judge cannot tell the systems "
            f"apart ({counted}).")


def _protocol_rows(key: CellKey, keys: Mapping[str, CellKey],
                   agreement: Sequence[Mapping[str, Any]]) -> list[tuple[CellKey, Mapping[str, Any]]]:
    """The agreement rows comparing ``key`` with a configuration that differs from it only in protocol."""
    out = []
    for row in agreement:
        a, b = keys.get(str(row.get("config_a"))), keys.get(str(row.get("config_b")))
        other = b if a == key else a if b == key else None
        if other is not None and other.protocol != key.protocol and \
                other.as_dict() | {"protocol": key.protocol} == key.as_dict():
            out.append((other, row))
    return out


def leaderboard_changes(key: CellKey, audit: LeaderboardAudit, keys: Mapping[str, CellKey],
                        agreement: Sequence[Mapping[str, Any]], protocol_names: Mapping[str, str]) -> tuple[str, ...]:
    """Whether the order, a repetition, the humans' labels or the protocol change the ranking: one
    sentence each (the leaderboard_stability and leaderboard_agreement figures)."""
    out = []
    for st in audit.stability:
        kind = _comparison_kind(st.variant_b)
        where = f" ({st.variant_b.rsplit(' · ', 1)[-1]})" if kind == "repetition" else ""
        out.append(f"{LEADERBOARD_CHANGES[kind]}{where}: {_tau_words(st.tau.estimate, st.tau.low, st.tau.high)}, "
                   f"{_top_words(st.top_changed, st.top_a, st.top_b, st.p_top_changes)}.")
    if not any(_comparison_kind(st.variant_b) == "order" for st in audit.stability):
        out.append("Swapping the order: not measured (the run shows each pair in one order only).")
    rows = _protocol_rows(key, keys, agreement)
    for other, row in rows:
        name = protocol_names.get(other.protocol, other.protocol)
        mine, theirs = ("top_a", "top_b") if keys.get(str(row.get("config_a"))) == key else ("top_b", "top_a")
        out.append(f"Protocol {name} instead: {_tau_words(row['tau'], row.get('tau_lo'), row.get('tau_hi'))}, "
                   f"{_top_words(bool(row['top_changed']), row[mine], row[theirs], row['p_top_changes'])}.")
    if not rows:
        out.append("Another protocol: not measured (no other protocol judged these pairs with this judge, "
                   "dataset, temperature and decoding).")
    return tuple(out)


def leaderboard_blocks(audits: Mapping[CellKey, LeaderboardAudit], agreement: Sequence[Mapping[str, Any]],
                       names: Mapping[str, Mapping[str, str]]) -> list[LeaderboardBlock]:
    """The decision panel's leaderboard block per judge configuration whose pairs name their systems
    (:func:`verdictlab.analyses.leaderboard.leaderboard_audits`); none for a run without systems."""
    keys = {k.label(): k for k in audits}
    out = []
    for key, audit in audits.items():
        shown = {p: names.get(p, {}).get(str(getattr(key, p)), str(getattr(key, p))) for p in ("judge", "protocol", "dataset")}
        t = temperature_text(key.temperature)
        config = f"{shown['judge']} · {shown['protocol']} · T={t}" + (
            f" · {key.decoding}" if key.decoding != DEFAULT_DECODING else "")
        out.append(LeaderboardBlock(
            dataset=shown["dataset"], configuration=config, systems=tuple(s.system for s in audit.ranking),
            tiers=audit.tiers, ranking=leaderboard_ranking(audit), distinguishable=leaderboard_distinguishable(audit),
            changes=leaderboard_changes(key, audit, keys, agreement, names.get("protocol", {}))))
    return out


__all__ += ["LEADERBOARD_CHANGES", "leaderboard_blocks", "leaderboard_changes", "leaderboard_distinguishable",
            "leaderboard_ranking"]


# -- the graders' block of the decision panel ---------------------------------------------------------------

#: what the graders are ranked by, in words
GRADER_RANKED_BY: dict[str, str] = {
    "T_g": "ranked by T_g, the grader's trustworthy rate (consistent, invariant and agreeing with the humans)",
    "T_bound": "ranked by the bound C × A (invariance was not measured for some grader, so T_g is not "
               "defined for every one)"}


def _grader_line(choice: Any, names: Mapping[str, Mapping[str, str]]) -> str:
    key = choice.cell
    judge = names.get("judge", {}).get(str(key.judge), str(key.judge))
    name = f"{judge} · {names.get('protocol', {}).get(str(key.protocol), str(key.protocol))} · T={temperature_text(key.temperature)}"
    if choice.rank is None:
        return f"– {name}: not ranked ({choice.unranked_because})."
    if math.isfinite(choice.lo) and math.isfinite(choice.hi):
        figure = f"{_pct(choice.value)} [{_pct(choice.lo)}, {_pct(choice.hi)}]"
    else:                                 # ranked by the bound C x A: an upper bound of T_g, no interval
        figure = f"≤ {_pct(choice.value)} (the bound C × A, no interval)"
    if choice.best:
        status = "the best"
    elif choice.distinguishable is False:
        status = "not distinguishable from the best"
    else:
        status = "below the best"
    head = f"{choice.rank}. {name}: {figure}, {status}"
    if choice.why:
        return f"{head}. Avoid: " + "; ".join(choice.why) + "."
    return head + "."


def grader_blocks(groups: Sequence[Any], names: Mapping[str, Mapping[str, str]]) -> list[GraderBlock]:
    """The decision panel's grader block per dataset and criterion (the ``grader_decision`` analysis'
    :class:`~verdictlab.analyses.grader_decision.GraderGroup`\\ s): best first, why each to avoid."""
    out = []
    for g in groups:
        ranked = [c for c in g.choices if c.rank is not None]
        good = [c for c in ranked if not c.avoid]
        dataset = names.get("dataset", {}).get(g.dataset, g.dataset)
        if good:
            best = good[0].cell
            headline = f"Use {names.get('judge', {}).get(str(best.judge), str(best.judge))}"
        elif ranked:
            headline = "Every grader has a reason to avoid it"
        else:
            headline = "No grader could be ranked"
        n_avoid = sum(bool(c.avoid) for c in g.choices)
        headline += f" ({len(g.choices)} grader{'s' if len(g.choices) != 1 else ''}, {n_avoid} to avoid; " \
                    f"{GRADER_RANKED_BY.get(g.ranked_by, g.ranked_by)})."
        out.append(GraderBlock(dataset=dataset, criterion=g.step, headline=headline, ranked_by=g.ranked_by,
                               lines=tuple(_grader_line(c, names) for c in g.choices),
                               avoid=tuple(bool(c.avoid) for c in g.choices)))
    return out


__all__ += ["GRADER_RANKED_BY", "grader_blocks"]
