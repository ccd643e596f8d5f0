"""The analyses room: built-in analyses are registered with a title, take the figure policy, and the
old shim modules are gone."""

from __future__ import annotations

import pandas as pd
import pytest

from verdictlab import analyses
from verdictlab.core.policy import FigurePolicy

BUILT_IN = ("remedies", "juries", "flask", "geval", "probes", "debate", "rubric", "pointwise")


def test_built_in_analyses_are_registered_with_titles() -> None:
    names = [a.name for a in analyses.registered()]
    assert set(BUILT_IN) <= set(names)
    for name in BUILT_IN:
        a = analyses.get(name)
        assert a.title and a.description
    # report order: the built-ins in the order the report always showed them
    order = [n for n in names if n in BUILT_IN]
    assert order == list(BUILT_IN)
    with pytest.raises(KeyError, match="unknown analysis 'nope'; known: "):
        analyses.get("nope")


def test_analysis_input_checks_and_splits() -> None:
    rows = pd.DataFrame({"judge": "j", "dataset": "d", "item_id": ["1", "2", "3"], "protocol": ["direct", "debate", "rubric"],
                         "order": "AB", "temperature": 0.0, "rep": 0, "step": "", "label": ["A", "A", "PASS"],
                         "verdict": ["A", "B", "PASS"]})
    inp = analyses.AnalysisInput(rows, policy=FigurePolicy(unparsed="wrong", confidence=0.9, n_bootstrap=5, seed=3))
    assert inp.policy.as_dict() == {"unparsed": "wrong", "confidence": 0.9, "n_bootstrap": 5, "seed": 3}
    assert list(inp.pairs["item_id"]) == ["1"] and list(inp.debate["item_id"]) == ["2"]
    assert list(inp.points["item_id"]) == ["3"]  # a verdict outside A / B / tie: a pointwise row
    with pytest.raises(ValueError, match="unparsed"):
        analyses.AnalysisInput(rows, policy=FigurePolicy(unparsed="guess"))
    with pytest.raises(ValueError, match="confidence"):
        analyses.AnalysisInput(rows, policy=FigurePolicy(confidence=1.0))


def test_the_old_shim_modules_are_gone() -> None:
    """jury.py, remedies.py and probes.py re-exported their real homes (stats.juries / analyses.juries,
    analyses.remedies, datasets.probes); the shims are removed, every import names the real home."""
    import importlib

    for old in ("verdictlab.jury", "verdictlab.remedies", "verdictlab.probes", "verdictlab.report.verdicts_text"):
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(old)
    # the protocols' table names are gone (they pointed protocols at analyses: an import cycle)
    from verdictlab.protocols import flask as pflask

    with pytest.raises(AttributeError):
        pflask.flask_table  # noqa: B018
