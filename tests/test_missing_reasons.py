"""Every reason is the real cause, and unmeasured is never a number.

One function decides why a figure of a cell is missing (:func:`verdictlab.stats.figure_reasons`): no
readable replies, one order, one repetition, no labels, too few pairs -- the first that applies, in that
order.  Each cause is built here as a run of its own, and every output -- the JSON (``missing``), the
decision, the terminal, Markdown and HTML tables and the checklist -- must name that cause and no other.
The regression of the demo run: a cell whose replies were all unreadable was said to be missing phi for
"one order" and A for "no labels", though both orders were run and every pair labelled.  And on a
one-repetition run C is not measured (null in JSON, "—" in every table and definition, with the reason),
T is an upper bound with its own mark (≤) in every output, and the decision says which ranking it used.
"""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from rich.console import Console

from verdictlab.core.design import trial_id
from verdictlab.core.items import PairItem
from verdictlab.core.policy import FigurePolicy
from verdictlab.core.vocab import Missing
from verdictlab.report import build_report, render_html, render_markdown, render_terminal, report_json
from verdictlab.stats import figure_reasons, reliability, upper_bound_reasons
from verdictlab.store import RunStore

REASONS = [m.value for m in Missing if m is not Missing.ADAPTIVE_DESIGN]
N_PAIRS = 6


def _write(run_dir: Path, cells: dict[str, dict[str, Any]], *, labelled: bool = True) -> Path:
    """A store with one dataset of N_PAIRS pairs (labelled A/B alternately, or not at all) and one cell per
    entry of ``cells`` (protocol -> ``orders``, ``reps``, ``readable``: "all" / "none" / "AB only").  The
    judge is right on every pair but the first (label B), which it flips: A in order AB, B in order BA."""
    st = RunStore(run_dir)
    labels = ["A" if i % 2 else "B" for i in range(N_PAIRS)]
    st.write_items([PairItem(item_id=f"p{i}", dataset="d", question=f"q{i}", response_a=f"a{i}",
                             response_b=f"b{i}", label=labels[i] if labelled else None) for i in range(N_PAIRS)])
    rows = []
    for protocol, spec in cells.items():
        for i in range(N_PAIRS):
            for order in spec.get("orders", ("AB", "BA")):
                for rep in range(spec.get("reps", 3)):
                    readable = spec.get("readable", "all")
                    ok = readable == "all" or (readable == "AB only" and order == "AB")
                    right = ("A" if order == "AB" else "B") if i == 0 else labels[i]
                    verdict = right if ok else None
                    rows.append({"trial_id": trial_id("j", "d", f"p{i}", protocol, order, 0.0, rep), "judge": "j",
                                 "dataset": "d", "item_id": f"p{i}", "protocol": protocol, "order": order,
                                 "temperature": 0.0, "rep": rep, "step": "", "label": labels[i] if labelled else None,
                                 "verdict": verdict, "parse_status": "ok" if ok else "failed",
                                 "raw_output": "?" if not ok else verdict, "attempts": 1})
    st.add_judgments(rows)
    st.close()
    return run_dir


def _outputs(run_dir: Path, *, definitions: str | None = "all") -> tuple[dict[str, Any], dict[str, str]]:
    rep = build_report(run_dir, policy=FigurePolicy(n_bootstrap=20), definitions=definitions)
    buf = io.StringIO()
    render_terminal(rep, Console(file=buf, width=250, color_system=None))
    return report_json(rep), {"terminal": buf.getvalue(), "markdown": render_markdown(rep),
                              "html": render_html(rep, embed_plots=False, viewer_url=None)}


# the causes, each alone in its run: (cells of the run, labelled, the cause, {figure: reason} of the cell)
CAUSES = {
    "no readable replies": ({"direct": {"readable": "none"}}, True),
    "one order": ({"direct": {"orders": ("AB",)}}, True),
    "one repetition": ({"direct": {"reps": 1}}, True),
    "no labels": ({"direct": {}}, False),
    "too few pairs": ({"direct": {"readable": "AB only"}}, True),
}


@pytest.fixture(scope="module")
def healthy(tmp_path_factory: pytest.TempPathFactory) -> dict[bool, dict[str, str]]:
    """The outputs of a run that lacks nothing, with the published definitions (key True) or without them
    (False, as a run without labels is reported): every reason word they hold is the report's own static
    text (captions, the definitions' rules such as "one order unparsed: tie")."""
    run = _write(tmp_path_factory.mktemp("healthy") / "run", {"direct": {}})
    return {defs: _outputs(run, definitions="all" if defs else None)[1] for defs in (True, False)}


@pytest.mark.parametrize("cause", list(CAUSES))
def test_every_output_names_the_cause_and_only_that_one(cause: str, tmp_path: Path,
                                                        healthy: dict[bool, dict[str, str]]) -> None:
    cells, labelled = CAUSES[cause]
    # (the published definitions of a run without labels are another fix's: they stop on it today)
    doc, texts = _outputs(_write(tmp_path / "run", cells, labelled=labelled), definitions="all" if labelled else None)
    (cell,) = doc["cells"]
    assert cell["missing"] and set(cell["missing"].values()) == {cause}, cell["missing"]
    for figure in cell["missing"]:
        assert cell[figure] is None, figure                               # unmeasured is never a number
    (d,) = doc["run"]["decision"]
    assert d["missing"] and {m["reason"] for m in d["missing"]} == {cause}
    others = [r for r in REASONS if r != cause]
    checklist = " ".join(c["detail"] for c in doc["run"]["checklist"])
    decision = json.dumps(d, ensure_ascii=False)
    for r in others:
        assert r not in decision and r not in checklist, f"the decision or checklist names {r!r} for {cause!r}"
    for name, text in texts.items():
        base = healthy[labelled][name]
        assert text.count(cause) > base.count(cause), f"{name} does not name {cause!r}"
        wrong = [r for r in others if text.count(r) > base.count(r)]
        assert not wrong, f"{name} names {wrong} for a cell missing figures for {cause!r}"
        assert "—" in text                                                 # the figure is shown as "—"


def test_the_demo_cell_with_no_readable_reply_is_not_called_one_order_or_unlabelled(tmp_path: Path) -> None:
    """The demo's regression: among readable cells, the one whose replies were all unreadable is missing
    phi and A for "no readable replies" -- never "one order: the answers were never swapped" nor "no
    labels" -- and its remedies and definitions are "—" with that reason (not the both-orders vote's
    "n_pairs 8, C 1.000, A 0.000, tie_rate 1.000" made from nothing)."""
    run = _write(tmp_path / "run", {"direct": {}, "cot-json": {"readable": "none"}})
    doc, texts = _outputs(run)
    bad = next(c for c in doc["cells"] if c["protocol"] == "cot-json")
    assert set(bad["missing"].values()) == {"no readable replies"} and {"phi", "A", "C", "T"} <= set(bad["missing"])
    panel = json.dumps(doc["run"]["decision"], ensure_ascii=False)
    assert "no readable replies" in panel and "one order" not in panel and "no labels" not in panel
    _, fine = _outputs(_write(tmp_path / "fine", {"direct": {}, "cot-json": {}}))
    for name, text in texts.items():      # beyond the report's own static text (captions, definitions' rules)
        assert text.count("one order") <= fine[name].count("one order"), name
        assert text.count("no labels") <= fine[name].count("no labels"), name
        assert text.count("no readable replies") > fine[name].count("no readable replies"), name
    remedies = doc["run"]["analyses"]["remedies"]
    rows = [dict(zip(remedies["columns"], r, strict=True)) for r in remedies["rows"]]
    for r in (r for r in rows if r["protocol"] == "cot-json"):
        assert all(r[f] is None for f in ("A", "phi", "C", "T", "tie_rate")), r
        assert r["note"] == "no readable replies", r
    for r in bad["definitions"]:
        assert r["value"] is None and r["missing"] == "no readable replies", r


def test_one_repetition_c_is_null_and_t_an_upper_bound_everywhere(tmp_path: Path) -> None:
    doc, texts = _outputs(_write(tmp_path / "run", {"direct": {"reps": 1}, "vf-json": {"reps": 1}}))
    for cell in doc["cells"]:
        assert cell["C"] is None and cell["C_lo"] is None and cell["self_consistency"] is None
        assert cell["missing"]["C"] == "one repetition"
        assert cell["upper_bounds"] == {"T": "one repetition", "T_joint": "one repetition"}
        # T = A - phi/2 with C unmeasured (5 of 6 pairs right in both orders, pair 1 flipped: A = 11/12,
        # phi = 1/6, q = 1/2 -> T <= 11/12 - 1/12 = 10/12)
        assert cell["T"] == pytest.approx(10 / 12)
        defs = {r["definition"]: r for r in cell["definitions"]}
        assert defs["C"]["value"] is None and defs["C"]["missing"] == "one repetition"
        assert defs["T"]["upper_bound"] == "one repetition" and defs["T"]["value"] == pytest.approx(10 / 12)
    (d,) = doc["run"]["decision"]
    assert "upper bound" in d["ranking"] and "one repetition" in d["ranking"]
    assert all(e["T_upper_bound"] == "one repetition" for g in ("use", "below_best") for e in d[g])
    for name, text in texts.items():
        assert "≤ 83.3" in text, name                                       # T's own mark, in every table
        assert "one repetition" in text, name                               # C's reason, in every table
    assert "T ≤ 83%" in doc["run"]["decision"][0]["headline"]


# -- the one function, on hand-made frames ------------------------------------------------------------

def _frame(**kw: Any) -> pd.DataFrame:
    base = {"judge": "j", "protocol": "p", "dataset": "d", "temperature": 0.0, "decoding": "free", "n_judgments": 12,
            "n_unparsed": 0, "n_orders": 2, "repetitions": 3, "n_labelled_judged": 2, "C": 0.5, "self_consistency": 0.7,
            "phi": 0.5, "A": 0.5, "A_dec": 0.5, "A_max": 0.75, "capability_gap": 0.25, "A_corrected": 0.25,
            "T": 0.125, "T_joint": 0.1, "tie_rate": 0.0}
    return pd.DataFrame([{**base, **kw}])


def test_the_reasons_take_the_first_cause_in_their_order() -> None:
    # every cause at once: the first (no readable replies) is the reason of every figure
    (why,) = figure_reasons(_frame(n_unparsed=12, n_orders=1, repetitions=1, n_labelled_judged=0, C=np.nan,
                                   phi=np.nan, A=np.nan, T=np.nan))
    assert set(why.values()) == {"no readable replies"} and "tie_rate" in why
    # one order and one repetition and no labels: phi by one order, C by one repetition, A by no labels,
    # T by one order (it needs phi first)
    (why,) = figure_reasons(_frame(n_orders=1, repetitions=1, n_labelled_judged=0, C=np.nan, phi=np.nan, A=np.nan))
    assert (why["phi"], why["C"], why["A"], why["T"]) == ("one order", "one repetition", "no labels", "one order")
    # nothing lacking but the figure undefined: too few pairs
    (why,) = figure_reasons(_frame(phi=np.nan, T=np.nan))
    assert why == {"phi": "too few pairs", "T": "too few pairs"}
    # measured: no reason
    assert figure_reasons(_frame()) == [{}]


def test_one_repetition_makes_t_an_upper_bound_not_a_missing_figure() -> None:
    f = _frame(repetitions=1, C=np.nan, self_consistency=np.nan)
    assert figure_reasons(f) == [{"C": "one repetition", "self_consistency": "one repetition"}]
    assert upper_bound_reasons(f) == [{"T": "one repetition", "T_joint": "one repetition"}]
    # with T missing for another reason it is not a bound
    assert upper_bound_reasons(_frame(repetitions=1, n_orders=1, C=np.nan, phi=np.nan, T=np.nan,
                                      T_joint=np.nan)) == [{}]


def test_reliability_leaves_c_unmeasured_at_one_repetition() -> None:
    # two pairs, one repetition, both orders; pair 1 right in both, pair 2 flipped (A then B, label B):
    # C not measured; phi = 1/2; A = 3/4; q = 1/2 -> T <= A - phi q = 3/4 - 1/4 = 1/2
    rows = [{"judge": "j", "protocol": "p", "dataset": "d", "temperature": 0.0, "item_id": i, "order": o, "rep": 0,
             "verdict": v, "label": lab} for i, lab, vs in (("1", "A", "AA"), ("2", "B", "AB"))
            for o, v in zip(("AB", "BA"), vs, strict=True)]
    r = reliability(pd.DataFrame(rows), policy=FigurePolicy(n_bootstrap=0)).iloc[0]
    assert math.isnan(r["C"]) and math.isnan(r["self_consistency"]) and math.isnan(r["C_lo"])
    assert (r["phi"], r["A"], r["A_corrected"], r["T"]) == pytest.approx((0.5, 0.75, 0.5, 0.5))
    assert (r["n_orders"], r["n_labelled_judged"], r["repetitions"]) == (2, 2, 1)
