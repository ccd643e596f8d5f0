"""The decision (report/readings.py): which configurations to use, which to avoid and why, which are
below the best, what was not measured -- by the same rules as the cell sentences, on hand-made cells;
and the decision at the top of the terminal, Markdown and JSON reports of a real (synthetic) run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from _cells import cell_of, cells_of
from verdictlab.core.policy import FigurePolicy
from verdictlab.report import build_report, render_html, render_markdown, render_terminal, report_json
from verdictlab.report.readings import (
    avoid_rule,
    configuration_status,
    decision,
    region_phrase,
)
from verdictlab.testing.synthetic_run import write_synthetic_run


def _cell(name: str, **over: Any) -> dict[str, Any]:
    """A healthy cell of dataset d: C 95%, phi 5%, A 90% [80, 95], T 0.8, three repetitions, both orders."""
    base: dict[str, Any] = {
        "judge": f"j-{name}", "protocol": "direct", "dataset": "d", "temperature": 0.0, "decoding": "free", "step": "",
        "n_judgments": 240, "n_unparsed": 0, "parse_failure_rate": 0.0, "repetitions": 3, "n_pairs": 40,
        "n_order_pairs": 40, "n_labelled_pairs": 40, "C": 0.95, "C_lo": 0.9, "C_hi": 0.98, "phi": 0.05,
        "phi_lo": 0.01, "phi_hi": 0.15, "A": 0.9, "A_lo": 0.8, "A_hi": 0.95, "T": 0.8, "T_lo": 0.7, "T_hi": 0.9,
        "region": "trustworthy", "regions_possible": ["trustworthy"],
        "vs_best": {"best": False, "n_shared": 40, "n_better_best": 3, "n_better_cell": 1, "p": 0.6, "p_holm": 0.6,
                    "distinguishable": False},
        "display": {"configuration": name, "configuration_id": f"j-{name} · direct", "dataset": "d"},
    }
    base.update(over)
    return base


BEST = _cell("best", T=0.85, vs_best={"best": True, "n_shared": 40, "n_better_best": 0, "n_better_cell": 0,
                                      "p": None, "p_holm": None, "distinguishable": False})
TIED = _cell("tied", T=0.8)
BELOW = _cell("below", T=0.5, vs_best={"best": False, "n_shared": 40, "n_better_best": 20, "n_better_cell": 2,
                                       "p": 1e-4, "p_holm": 5e-4, "distinguishable": True})
ORDER = _cell("order", phi=0.8, T=0.2)
UNREADABLE = _cell("unreadable", parse_failure_rate=0.95, n_unparsed=228, T=None, C=None)
UNSTABLE = _cell("unstable", C=0.4, T=0.3)
CHANCE = _cell("chance", A=0.52, A_lo=0.4, A_hi=0.64, T=0.45)
WORSE = _cell("worse", A=0.3, A_lo=0.2, A_hi=0.42, T=0.2)
NO_LABELS = _cell("unlabelled", A=None, A_lo=None, A_hi=None, T=None, T_lo=None, T_hi=None, n_labelled_pairs=0)


def test_avoid_rules_in_the_order_of_the_cell_sentences() -> None:
    assert avoid_rule(cell_of(TIED)) is None and avoid_rule(cell_of(BEST)) is None
    assert avoid_rule(cell_of(UNREADABLE)) == ("unreadable format", "almost never gives a readable verdict in this "
                                                                    "format (5% of its outputs parsed)")
    assert avoid_rule(cell_of(ORDER)) == ("order-driven", "swapping the two answers reverses 80% of its verdicts: "
                                                          "they follow the layout, not the content")
    assert avoid_rule(cell_of(UNSTABLE)) == ("unstable",
                                             "re-asking changes its verdict on most pairs (only 40% reproducible)")
    assert avoid_rule(cell_of(CHANCE)) == ("inaccurate", "no better than chance (A = 52%; its interval contains 50%)")
    assert avoid_rule(cell_of(WORSE)) == ("inaccurate", "worse than chance: it prefers the wrong answer (A = 30%)")
    # order-driven wins over unstable and inaccurate (as in the sentences: "order-driven whatever its C")
    assert avoid_rule(cell_of({**UNSTABLE, "phi": 0.9, "A": 0.5, "A_lo": 0.4, "A_hi": 0.6}))[0] == "order-driven"
    # one repetition: C is not measured, so "unstable" cannot apply
    assert avoid_rule(cell_of({**UNSTABLE, "repetitions": 1})) is None
    # at the thresholds: phi 0.70 is order-driven, 0.69 not; C 0.50 is not unstable
    assert avoid_rule(cell_of({**TIED, "phi": 0.70}))[0] == "order-driven"
    assert avoid_rule(cell_of({**TIED, "phi": 0.69})) is None and avoid_rule(cell_of({**TIED, "C": 0.50})) is None


def test_status_of_each_configuration() -> None:
    assert configuration_status(cell_of(BEST)) == ("use", "best", "the best T of this dataset")
    group, rule, reason = configuration_status(cell_of(TIED))
    assert (group, rule) == ("use", "not distinguishable")
    assert reason == ("not distinguishable from the best: on the 40 pairs both judged, 3 favour the best and 1 this "
                      "one (sign test, Holm p = 0.6)")
    assert configuration_status(cell_of(BELOW))[:2] == ("below_best", "below the best")
    assert configuration_status(cell_of(NO_LABELS)) == ("not_measured", "no T",
                                               "no T: no labelled pair, so its accuracy is not measured")
    # told apart, but in the other direction: more often trustworthy than the best on the shared pairs
    better = _cell("better", T=0.82, vs_best={**BELOW["vs_best"], "n_better_best": 2, "n_better_cell": 20})
    assert configuration_status(cell_of(better))[:2] == ("use", "better on shared pairs")
    # no pair in common with the best: not compared, so not recommended either
    alone = _cell("alone", vs_best={"best": False, "n_shared": 0, "p": None, "p_holm": None})
    assert configuration_status(cell_of(alone))[:2] == ("not_measured", "not compared")
    # an avoid rule wins over the paired test: the best itself can be avoided
    assert configuration_status(cell_of({**BEST, "phi": 0.75}))[0] == "avoid"


def test_decision_groups_numbers_and_headline() -> None:
    cells = cells_of([TIED, BELOW, ORDER, BEST, NO_LABELS])
    (d,) = decision(cells, alpha=0.05, family_size=3)
    assert d.dataset == "d" and d.alpha == 0.05 and d.family_size == 3
    # numbered by T, highest first; a configuration without T last
    by_name = {e.configuration: e for g in ("use", "avoid", "below_best", "not_measured") for e in d.group(g)}
    assert {n: e.number for n, e in by_name.items()} == {"best": 1, "tied": 2, "below": 3, "order": 4,
                                                         "unlabelled": 5}
    assert [e.configuration for e in d.use] == ["best", "tied"]
    assert [e.configuration for e in d.avoid] == ["order"]
    assert [e.configuration for e in d.below_best] == ["below"]
    assert [e.configuration for e in d.not_measured] == ["unlabelled"]
    assert by_name["best"].cell_index == 3 and by_name["best"].brief == "the best T"
    assert by_name["tied"].brief == "3 vs 1 of 40 pairs, Holm p 0.6"
    assert d.headline == "Use best (T 85% [70, 90]) — or one more not distinguishable from it."
    assert [(m.figure, f"{m.reason}: {m.why}", m.configurations, m.every) for m in d.missing] == [
        ("A", "no labels: accuracy (and T) is not measured", ("unlabelled",), False)]


def test_headline_when_the_best_is_to_be_avoided() -> None:
    best_but_driven = {**BEST, "phi": 0.75}
    (d,) = decision(cells_of([best_but_driven, TIED]), alpha=0.05, family_size=1)
    assert d.headline == ("Use tied (T 80% [70, 90]). The best T, best (T 85% [70, 90]), is to be avoided: "
                             "swapping the two answers reverses 75% of its verdicts: they follow the layout, not the "
                             "content.")
    (d,) = decision(cells_of([best_but_driven, BELOW]), alpha=0.05, family_size=1)
    assert d.headline.startswith("No configuration to use: the best T, best (T 85% [70, 90]), is to be avoided")
    (d,) = decision(cells_of([NO_LABELS]), alpha=0.05, family_size=0)
    assert d.headline == "No configuration to use: no configuration has a T (see what was not measured)."


def test_what_was_not_measured() -> None:
    one_rep = {**TIED, "repetitions": 1}
    one_order = {**BEST, "phi": None, "phi_lo": None, "phi_hi": None, "n_order_pairs": 0, "T": None}
    (d,) = decision(cells_of([one_rep, {**one_order, "repetitions": 1}]), alpha=0.05, family_size=0)
    lines = [m.line for m in d.missing]
    assert lines == ["C not measured for every configuration: one repetition: re-asking was never tried, so "
                     "reproducibility is not measured",
                     "φ not measured for best: one order: the answers were never swapped, so the flip rate is not "
                     "measured"]
    # a one-repetition configuration that is used says so
    assert d.use[0].caution == "C not measured (one repetition): T is an upper bound"


def test_region_phrases() -> None:
    cell = {"C": 0.88, "phi": 0.5, "repetitions": 3, "region": "chaos", "regions_possible": ["chaos",
                                                                                             "confidently-biased"]}
    assert region_phrase(cell_of(cell)) == "chaos or confidently-biased: the interval spans both"
    assert region_phrase(cell_of(cell), short=True) == "chaos or confidently-biased"
    four = {**cell, "regions_possible": ["chaos", "trustworthy", "noisy-but-fair", "confidently-biased"]}
    assert region_phrase(cell_of(four)) == ("chaos, trustworthy, noisy-but-fair or confidently-biased: the interval "
                                            "spans all four")
    assert region_phrase(cell_of(four), short=True) == "any of the four regions"
    assert region_phrase(cell_of({**cell, "regions_possible": None})) == "chaos"
    assert region_phrase(cell_of({"C": 1.0, "phi": 0.1, "repetitions": 1})) is None


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Any:
    d = tmp_path_factory.mktemp("decision") / "run"
    st = write_synthetic_run(d, datasets=("d1", "d2"), protocols=("direct", "vf-json"), temperatures=(0.0,),
                             n_items=30, repetitions=3, seed=3)
    st.close()
    return build_report(Path(d), policy=FigurePolicy(n_bootstrap=50))


def test_the_decision_opens_every_rendering(report: Any) -> None:
    console = Console(width=200, record=True)
    render_terminal(report, console)
    text = console.export_text()
    lines = text.splitlines()
    assert lines[0].startswith("verdictlab report")
    assert lines[1].startswith("Decision — d1: Use ") and "Decision — d2: Use " in text
    assert text.index("Decision — d2") < text.index("Reliability per cell")
    md = render_markdown(report)
    assert md.index("### Decision — d1") < md.index("### Reliability per cell")
    doc = report_json(report)
    json.dumps(doc, allow_nan=False)
    assert [d["dataset"] for d in doc["run"]["decision"]] == ["d1", "d2"]
    assert all(d["use"] for d in doc["run"]["decision"])
    assert set(doc["run"]["display_names"]) == {"judge", "protocol", "dataset"}
    for cell in doc["cells"]:
        assert set(cell["display"]) == {"judge", "protocol", "dataset", "configuration", "configuration_id"}
        assert cell["regions_possible"] is None or cell["regions_possible"][0] == cell["region"]


def test_a_cell_whose_interval_spans_regions_says_so_in_every_rendering(report: Any) -> None:
    # 30 pairs per cell: wide intervals, so some cell's (C, phi) box reaches a second region
    spanning = [c for c in report.cells if c.regions_possible and 2 <= len(c.regions_possible) <= 3]
    assert spanning, [c.regions_possible for c in report.cells]
    cell = spanning[0]
    possible = list(cell.regions_possible or ())
    names = " or ".join(possible) if len(possible) == 2 else None
    # JSON: region kept, regions_possible beside it, the cell's own region first
    doc = report_json(report)
    (as_json,) = [c for c in doc["cells"] if c["judge"] == cell.key.judge and c["protocol"] == cell.key.protocol
                  and c["dataset"] == cell.key.dataset]
    assert as_json["region"] == cell.region == possible[0]
    assert as_json["regions_possible"] == possible
    # the cell's sentence names every region and says the interval spans them
    assert "the interval spans" in cell.sentence
    phrase = region_phrase(cell, short=True)
    assert phrase is not None and phrase != cell.region
    if names:
        assert phrase == names
    console = Console(width=250, record=True)
    render_terminal(report, console)
    assert phrase in console.export_text()
    assert phrase in render_markdown(report)
    page = render_html(report, embed_plots=False)
    shown = " or ".join(f'<span class="region region-{r}">{r}</span>' for r in possible)
    assert shown in page
