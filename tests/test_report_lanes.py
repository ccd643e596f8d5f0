"""A report split over two processes (verdictlab.report.lanes: the agreement, the broken items, the remedies and
the juries, and half the figures, in a forked second process) is the report one process gives: the same
JSON document, the same HTML page, the same failing analysis shown the same way."""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path
from typing import Any

import pytest

from verdictlab import analyses
from verdictlab.core.policy import FigurePolicy
from verdictlab.report import build_report, render_html, report_json
from verdictlab.report.build import FIRST_JOBS
from verdictlab.report.lanes import ENV_WORKERS
from verdictlab.testing.synthetic_run import write_synthetic_run

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the second lane needs os.fork")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two temperatures, a tie rate, one-order pairs and unparsed verdicts: every job of the lane has rows."""
    d = tmp_path_factory.mktemp("lanes") / "run"
    write_synthetic_run(d, n_items=10, protocols=("direct", "vf-json"), judge_tie_rate=0.1, one_order_share=0.2,
                        fail_rate=0.05).close()
    return d


def _forks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    forked: list[int] = []
    real = os.fork

    def counted() -> int:
        pid = real()
        if pid:
            forked.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", counted)
    return forked


def _both(monkeypatch: pytest.MonkeyPatch, make: Any) -> tuple[Any, Any, list[int]]:
    monkeypatch.setenv(ENV_WORKERS, "1")
    forked = _forks(monkeypatch)
    one = make()
    assert forked == []
    monkeypatch.setenv(ENV_WORKERS, "2")
    two = make()
    return one, two, forked


@pytest.mark.parametrize("unparsed", ["exclude", "wrong"])
def test_two_processes_give_the_json_of_one(run_dir: Path, monkeypatch: pytest.MonkeyPatch, unparsed: str) -> None:
    one, two, forked = _both(monkeypatch, lambda: report_json(build_report(run_dir, policy=FigurePolicy(unparsed=unparsed, n_bootstrap=40, seed=3))))
    assert len(forked) == 1
    assert two == one
    analysed = one["run"]["analyses"]
    lane_tables = {n.split(":", 1)[1] for n in FIRST_JOBS if n.startswith("analysis:")}
    assert lane_tables <= set(analysed)                       # the lane's first analyses have rows here
    assert list(two["run"]["analyses"]) == list(analysed)    # in the registered order
    assert one["run"]["n_judgments"] > 0 and any(c["agreement"] for c in one["cells"])


def test_two_processes_draw_the_html_of_one(run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_WORKERS, "1")
    rep = build_report(run_dir, policy=FigurePolicy(n_bootstrap=40))
    one, two, forked = _both(monkeypatch, lambda: render_html(rep))
    assert len(forked) == 1                                    # the figures' lane (the report was built before)
    stamp = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC")
    assert stamp.sub("", two) == stamp.sub("", one)
    assert one.count("data:image/png;base64,") >= 4


def test_an_analysis_failing_in_the_lane_is_reported_as_in_one_process(run_dir: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The lane's analyses catch their own errors (a report never fails for one): the same error row."""
    remedies = analyses.get("remedies")

    def broken(inp: analyses.AnalysisInput) -> Any:
        raise ValueError("no pairs judged in both orders")

    analyses.ANALYSES.register("remedies", dataclasses.replace(remedies, fn=broken), description=remedies.title)
    try:
        one, two, forked = _both(monkeypatch, lambda: report_json(build_report(run_dir, policy=FigurePolicy(n_bootstrap=20))))
    finally:
        analyses.ANALYSES.register("remedies", remedies, description=remedies.title)
    assert len(forked) == 1
    assert two == one
    assert one["run"]["analyses"]["remedies"]["error"] == "ValueError: no pairs judged in both orders"


def test_a_workers_value_other_than_1_or_2_is_an_input_error_naming_the_variable(run_dir: Path) -> None:
    from typer.testing import CliRunner

    from verdictlab.cli.main import app

    res = CliRunner().invoke(app, ["report", str(run_dir), "--format", "json"], env={ENV_WORKERS: "3"})
    assert res.exit_code == 3, res.output
    assert "VERDICTLAB_WORKERS='3': must be 1 or 2" in res.stderr
    assert "internal error" not in res.stderr
