"""The catalogue of published definitions: registered like analyses, each with its source and rules,
and one long table per run whose verdictlab rows equal the library's own figures."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from verdictlab.analyses import AnalysisInput
from verdictlab.analyses.definitions import (
    DEFINITIONS,
    DEFINITIONS_COLUMNS,
    definition_names,
    definitions_table,
    resolve_definitions,
)
from verdictlab.core.policy import FigurePolicy
from verdictlab.engine import run_config
from verdictlab.engine.config import config_from_dict
from verdictlab.stats import class_figures, reliability
from verdictlab.stats.definitions import accuracy_per_order, agreement_both_orders
from verdictlab.store import RunStore

# what the catalogue must hold (the published definitions asked for, and verdictlab's own for
# comparison); a definition added to the registry must be added here, and its test written
CATALOGUE = (
    "agreement-both-orders", "consistency-both-orders", "accuracy-per-order", "accuracy-per-order-no-ties",
    "agreement-with-ties", "agreement-without-ties", "accuracy-3class", "macro-f1", "both-orders-vote",
    "accuracy-mean-of-orders", "positional-agreement", "win-rate", "win-rate-discrete", "score-ratio",
    "C", "phi", "A", "T", "T_joint",
)
KEYS = ["judge", "protocol", "dataset", "temperature", "decoding"]


def test_every_definition_states_its_source_and_rules() -> None:
    assert definition_names() == list(CATALOGUE)
    for name in CATALOGUE:
        d = DEFINITIONS.get(name)
        for field in ("title", "source", "ties", "flips", "unparsed", "denominator", "interval", "note"):
            assert getattr(d, field).strip(), (name, field)
        assert "\n" not in d.note and len(d.note) < 160, name      # one line


def test_resolve_all_names_and_unknown() -> None:
    assert resolve_definitions("all") == list(CATALOGUE)
    assert resolve_definitions("A, agreement-both-orders") == ["agreement-both-orders", "A"]   # table order
    assert resolve_definitions(["phi"]) == ["phi"]
    with pytest.raises(KeyError, match="unknown definition 'agreement'; known: "):
        resolve_definitions("agreement")
    with pytest.raises(ValueError, match="'all' or a comma-separated list"):
        resolve_definitions(" , ")


@pytest.fixture(scope="module")
def sim_run(tmp_path_factory) -> pd.DataFrame:
    tmp = tmp_path_factory.mktemp("defs")
    rng = np.random.default_rng(4)
    labels = rng.choice(["A", "B", "tie"], size=30, p=[0.4, 0.4, 0.2])
    rows = [{"item_id": f"i{i}", "question": f"q{i}", "response_a": "x", "response_b": "y", "label": str(lab)}
            for i, lab in enumerate(labels)]
    (tmp / "p.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = config_from_dict({"name": "d", "datasets": [{"name": "jsonl", "path": str(tmp / "p.jsonl")}],
                            "judges": ["sim:skill=0.7,position_lock=0.3,noise=0.3,malformed=0.1,seed=2,probs=1"],
                            "protocols": ["direct"], "temperatures": [1.0], "repetitions": 3})
    run_config(cfg, tmp / "run", progress=False)
    with RunStore(tmp / "run") as st:
        return st.judgments()


@pytest.mark.parametrize("unparsed", ["exclude", "wrong"])
def test_table_rows_equal_the_library_figures(sim_run: pd.DataFrame, unparsed: str) -> None:
    inp = AnalysisInput(sim_run, policy=FigurePolicy(unparsed=unparsed, n_bootstrap=50, seed=1))
    t = definitions_table(inp)
    assert list(t.columns) == KEYS + list(DEFINITIONS_COLUMNS)
    assert (t["n"] > 0).all()
    got = t.set_index(["definition", "variant"])
    rel = reliability(sim_run, policy=FigurePolicy(unparsed=unparsed, n_bootstrap=50, seed=1)).iloc[0]
    for name, col, n in (("C", "C", "n_units"), ("phi", "phi", "n_order_pairs"), ("A", "A", "n_labelled_units"),
                         ("T", "T", "n_labelled_units"), ("T_joint", "T_joint", "n_joint_units")):
        assert got.loc[(name, ""), "value"] == pytest.approx(rel[col]), name
        assert got.loc[(name, ""), "n"] == rel[n]
    assert (got.loc[("A", ""), "lo"], got.loc[("T", ""), "hi"]) == (pytest.approx(rel["A_lo"]),
                                                                    pytest.approx(rel["T_hi"]))
    cls = class_figures(sim_run, policy=FigurePolicy(unparsed=unparsed, n_bootstrap=50, seed=1)).iloc[0]
    assert got.loc[("accuracy-3class", ""), "value"] == pytest.approx(cls["A_3class"])
    assert got.loc[("macro-f1", ""), "value"] == pytest.approx(cls["macro_f1"])
    assert got.loc[("agreement-both-orders", ""), "value"] == pytest.approx(
        agreement_both_orders(sim_run).iloc[0]["value"])
    assert got.loc[("accuracy-per-order", "BA"), "value"] == pytest.approx(
        accuracy_per_order(sim_run).set_index("variant").loc["BA", "value"])
    # the unparsed rule says whose it is: the source's, or the cell's policy where the source has none
    assert got.loc[("consistency-both-orders", ""), "unparsed_rule"] == f"cell policy ({unparsed})"
    assert got.loc[("positional-agreement", ""), "unparsed_rule"] == "a value: null = null agrees"
    # the sim judge gives P(A): the soft win rates apply; it gives no score pairs: no score ratio
    assert "win-rate" in set(t["definition"]) and "score-ratio" not in set(t["definition"])


def test_source_rules_do_not_move_with_the_policy_and_policy_rules_do(sim_run: pd.DataFrame) -> None:
    assert sim_run["verdict"].isna().any()      # malformed outputs: the policies differ
    ex = definitions_table(AnalysisInput(sim_run, policy=FigurePolicy(unparsed="exclude", n_bootstrap=0))).set_index(["definition", "variant"])
    wr = definitions_table(AnalysisInput(sim_run, policy=FigurePolicy(unparsed="wrong", n_bootstrap=0))).set_index(["definition", "variant"])
    for name in ("agreement-both-orders", "positional-agreement", "accuracy-mean-of-orders", "both-orders-vote"):
        assert ex.loc[(name, ""), "value"] == wr.loc[(name, ""), "value"], name
    # C counts a unit with an unparsed repetition as consistent only when unparsed ones are left out
    assert ex.loc[("C", ""), "value"] > wr.loc[("C", ""), "value"]


def _missing(t: pd.DataFrame) -> dict[str, set[str]]:
    """definition -> the reasons of its rows without a figure (rows with a figure: no reason)."""
    out: dict[str, set[str]] = {}
    for name, g in t.groupby("definition"):
        assert (g["missing"].isna() == g["value"].notna()).all(), name     # a figure or a reason, never both
        out[str(name)] = set(g["missing"].dropna())
    return out


def test_names_select_and_unsupported_cells_say_why(sim_run: pd.DataFrame) -> None:
    """A cell a definition cannot support has no figure there (never a number) and its row says why; it
    was left out without a word."""
    t = definitions_table(AnalysisInput(sim_run, policy=FigurePolicy(n_bootstrap=0)), "A,agreement-both-orders")
    assert list(t["definition"]) == ["agreement-both-orders", "A"]
    # no labels: label-based definitions have no figure, "no labels"; consistency and verdictlab's C have theirs
    unlabelled = _missing(definitions_table(AnalysisInput(sim_run.assign(label=None), policy=FigurePolicy(n_bootstrap=0))))
    assert all(unlabelled[n] == {"no labels"} for n in ("agreement-both-orders", "A", "accuracy-3class"))
    assert all(unlabelled[n] == set() for n in ("consistency-both-orders", "C", "phi", "win-rate"))
    # one order only: the both-order definitions have none, "one order"
    ab = definitions_table(AnalysisInput(sim_run[sim_run["order"] == "AB"], policy=FigurePolicy(n_bootstrap=0)))
    assert all(_missing(ab)[n] == {"one order"} for n in ("agreement-both-orders", "consistency-both-orders", "phi"))
    assert _missing(ab)["accuracy-per-order"] == {"one order"}        # its BA variant
    assert set(ab.loc[(ab["definition"] == "accuracy-per-order") & ab["value"].notna(), "variant"]) == {"AB"}
    assert _missing(ab)["A"] == set()
    assert definitions_table(AnalysisInput(sim_run.iloc[:0])).empty


def test_c_of_a_one_repetition_cell_is_not_measured(sim_run: pd.DataFrame) -> None:
    """One draw per (pair, order) unit agrees with itself: C read 1.00 [0.97, 1.00] on every published log
    (one repetition).  It has no figure, "one repetition"; the figures that do not need repetitions keep theirs."""
    one = _missing(definitions_table(AnalysisInput(sim_run[sim_run["rep"] == 0], policy=FigurePolicy(n_bootstrap=0))))
    assert one["C"] == {"one repetition"}
    assert all(one[n] == set() for n in ("phi", "A", "T", "consistency-both-orders"))
    assert _missing(definitions_table(AnalysisInput(sim_run, policy=FigurePolicy(n_bootstrap=0))))["C"] == set()


def test_docs_explain_every_definition() -> None:
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "definitions.md").read_text()
    missing = [n for n in definition_names() if f"`{n}`" not in doc]
    assert missing == []


def test_steps_of_a_multi_call_protocol_are_cells_of_their_own(sim_run: pd.DataFrame) -> None:
    """Regression: the table kept only the four cell columns, so the criteria of a multi-call protocol
    (one ``step`` each) came out as several rows of one cell under verdictlab's own figures."""
    two = pd.concat([sim_run.assign(step="clarity"), sim_run.assign(step="accuracy", label="B")], ignore_index=True)
    t = definitions_table(AnalysisInput(two, policy=FigurePolicy(n_bootstrap=0)), "A,agreement-both-orders")
    assert list(t.columns[:6]) == [*KEYS, "step"]
    by_step = t.set_index(["step", "definition"])["value"]
    rel = reliability(two, policy=FigurePolicy(n_bootstrap=0)).set_index("step")["A"]
    assert by_step[("clarity", "A")] == pytest.approx(rel["clarity"])
    assert by_step[("accuracy", "A")] == pytest.approx(rel["accuracy"])
    assert len(t) == 4
