"""Every figure of every report is the same before and after the typed report.

The golden files were written by the report before it was typed (``tests/_report_golden.py`` says how):
the simulated runs and the published logs of the shared data (the two LLMBar runs, a PandaLM verdict file
over the real test set, the PRD reviewers' three-class files), both unparsed policies.  Every cell of the
JSON, the format dispersion, the figures across cells and every registered analysis' table must equal
them -- every key the old report had, every number to 1e-12 -- except for the changes named here, each a
defect of the old report:

* C and self-consistency of a one-repetition cell (and their intervals) were 1.0: not measured, now
  ``null`` with the reason in ``missing`` (T keeps its value, A - phi q, now marked an upper bound);
* the consistency-bias paradox was ``false`` where test-retest or position bias is undefined: now
  ``null`` -- neither yes nor no;
* the remedy rows of a cell with no readable reply had figures made from nothing: now ``null``, with
  the reason as their note; and a majority vote of k samples leaves one verdict per pair and order, so
  its C (1.0) is not measured either, nor that of any remedy of a one-repetition cell: ``null``;
* the temperature effect reads the cells with C measured: on a one-repetition run there are none, so its
  temperatures are ``null`` (they were the run's 0.0 beside no line and no figure);
* the sentence of a one-repetition cell said C was "100% by construction" and gave T as a measured
  figure: it now says T is only an upper bound ("T ≤ 41%").

The typed report adds keys (``missing``, ``upper_bounds``, ``A_corrected``, ``n_orders``,
``n_labelled_judged``); nothing else may be new.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from _report_golden import (
    GOLDEN_PUBLISHED,
    GOLDEN_SIMULATED,
    POLICIES,
    SIMULATED,
    compared,
    write_published,
    write_simulated,
)

#: keys a cell of the typed report has that the old one did not
NEW_CELL_KEYS = {"missing", "upper_bounds", "A_corrected", "n_orders", "n_labelled_judged"}
#: C and what stands on it, not measured at one repetition
_ONE_REP_UNMEASURED = ("C", "C_lo", "C_hi", "C_boot_lo", "C_boot_hi", "self_consistency")
_REMEDY_FIGURES = ("A", "phi", "C", "T", "tie_rate", "dA", "dphi", "dT", "dtie_rate")


def _same(got: Any, want: Any, where: str) -> None:
    if isinstance(want, dict):
        assert isinstance(got, dict), where
        for k, v in want.items():
            assert k in got, f"{where}: no {k!r}"
            _same(got[k], v, f"{where}.{k}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), f"{where}: {got!r} != {want!r}"
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            _same(g, w, f"{where}[{i}]")
    elif isinstance(want, float) and not isinstance(got, bool):
        assert isinstance(got, int | float) and math.isclose(got, want, rel_tol=1e-12, abs_tol=1e-12), \
            f"{where}: {got!r} != {want!r}"
    else:
        assert got == want, f"{where}: {got!r} != {want!r}"


def _fixed_cell(cell: dict[str, Any]) -> dict[str, Any]:
    """An old cell with the named defects fixed (module docstring)."""
    out = dict(cell)
    if out.get("repetitions") == 1:
        out.update({k: None for k in _ONE_REP_UNMEASURED if k in out})
        out.pop("sentence", None)
        assert "T = " in cell["sentence"]
    agreement = out.get("agreement")
    if agreement and (agreement.get("test_retest") is None or agreement.get("position_bias") is None):
        out["agreement"] = {**agreement, "consistency_bias_paradox": None}
    return out


def _fixed_remedies(table: dict[str, Any], cells: list[dict[str, Any]]) -> dict[str, Any]:
    unread = {(c["judge"], c["protocol"], c["dataset"], c["temperature"], c["decoding"]) for c in cells
              if c.get("n_judgments") and c.get("n_judgments") == c.get("n_unparsed")}
    one_rep = {(c["judge"], c["protocol"], c["dataset"], c["temperature"], c["decoding"]) for c in cells
               if c.get("repetitions") == 1}
    cols = table["columns"]
    rows = []
    for row in table["rows"]:
        r = dict(zip(cols, row, strict=True))
        if (r["judge"], r["protocol"], r["dataset"], r["temperature"], r["decoding"]) in unread:
            r.update({k: None for k in _REMEDY_FIGURES if k in r})
            r["note"] = "no readable replies"
        elif str(r["remedy"]).startswith("majority@") or \
                (r["judge"], r["protocol"], r["dataset"], r["temperature"], r["decoding"]) in one_rep:
            r["C"] = None
        rows.append([r[c] for c in cols])
    return {**table, "rows": rows}


def _check(got: dict[str, Any], want: dict[str, Any], where: str) -> None:
    assert len(got["cells"]) == len(want["cells"]), where
    for g, w in zip(got["cells"], want["cells"], strict=True):
        _same(g, _fixed_cell(w), f"{where} cell {w['judge']} {w['protocol']} {w['temperature']} {w.get('decoding')}")
        if w.get("repetitions") == 1 and g["T"] is not None:
            assert "T ≤ " in g["sentence"] and "upper bound" in g["sentence"]
        assert set(g) - set(w) <= NEW_CELL_KEYS, set(g) - set(w)
    _same(got["format_dispersion"], want["format_dispersion"], f"{where} format_dispersion")
    across = want["across_cells"]
    if all(c.get("repetitions") == 1 for c in want["cells"]):
        assert across["temperature_effect"]["n_lines"] == 0
        across = {**across, "temperature_effect": {**across["temperature_effect"], "t_low": None, "t_high": None}}
    _same(got["across_cells"], across, f"{where} across_cells")
    assert set(got["analyses"]) == set(want["analyses"]), where
    for name, table in want["analyses"].items():
        if name == "remedies" and "rows" in table:
            table = _fixed_remedies(table, want["cells"])
        _same(got["analyses"][name], table, f"{where} analyses.{name}")


@pytest.mark.parametrize("run", sorted(SIMULATED))
def test_the_report_of_a_simulated_run_equals_the_old_report(run: str, tmp_path: Path) -> None:
    golden = json.loads(GOLDEN_SIMULATED.read_text(encoding="utf-8"))
    path = write_simulated(tmp_path / run, run)
    for policy in POLICIES:
        _check(compared(path, policy), golden[f"{run}/{policy}"], f"{run}/{policy}")


def test_the_report_of_every_published_log_equals_the_old_report(shared_data: Path, tmp_path: Path) -> None:
    golden = json.loads(GOLDEN_PUBLISHED.read_text(encoding="utf-8"))
    runs = write_published(tmp_path / "published", shared_data)
    for name, path in runs.items():
        for policy in POLICIES:
            got = compared(path, policy)
            _check(got, golden[f"{name}/{policy}"], f"{name}/{policy}")
            # one repetition in every published log: C not measured, T an upper bound, each with its reason
            for cell in got["cells"]:
                assert cell["C"] is None and cell["missing"]["C"] == "one repetition"
                if cell["T"] is not None:
                    assert cell["upper_bounds"]["T"] == "one repetition"
