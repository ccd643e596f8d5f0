"""The decision panel's leaderboard block: a simulated tournament (examples/leaderboard.yaml's five
systems and two ``sim:`` judges, run under two protocols) gets one block per judge configuration in every
output -- the ranking, which systems are distinguishable, whether the order, a repetition, the humans or
the protocol change it -- and a run whose pairs name no systems gets none."""

from __future__ import annotations

import html
import io
import json
import shutil
from pathlib import Path

import pytest
import yaml
from rich.console import Console

from verdictlab.core.policy import FigurePolicy
from verdictlab.engine.config import load_config
from verdictlab.engine.run import run_config
from verdictlab.report import build_report, render_html, render_markdown, render_terminal, report_json
from verdictlab.report.model import Report
from verdictlab.report.readings import leaderboard_distinguishable
from verdictlab.stats.intervals import Interval
from verdictlab.stats.ranking_audit import LeaderboardAudit, RankedSystem
from verdictlab.testing.synthetic_run import write_synthetic_run

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
SKILLED = "sim:skill=0.9,noise=0.05,seed=1"
LOCKED = "sim:skill=0.6,position_lock=0.4,noise=0.1,seed=2"


@pytest.fixture(scope="module")
def tournament_report(tmp_path_factory: pytest.TempPathFactory) -> Report:
    tmp = tmp_path_factory.mktemp("tournament")
    shutil.copy(EXAMPLES / "leaderboard.jsonl", tmp)
    cfg = yaml.safe_load((EXAMPLES / "leaderboard.yaml").read_text())
    cfg["protocols"] = ["direct", "vf-json"]
    (tmp / "leaderboard.yaml").write_text(yaml.safe_dump(cfg))
    run_config(load_config(tmp / "leaderboard.yaml"), tmp / "run", progress=False)
    return build_report(tmp / "run", policy=FigurePolicy(n_bootstrap=100))


def _terminal(report: Report) -> str:
    buf = io.StringIO()
    render_terminal(report, Console(file=buf, width=300, color_system=None))
    return buf.getvalue()


def test_one_block_per_configuration_with_ranking_tiers_and_changes(tournament_report: Report) -> None:
    blocks = tournament_report.leaderboards
    assert len(blocks) == 4                                  # 2 judges x 2 protocols
    for b in blocks:
        assert sorted(b.systems) == [f"sys0{i}" for i in range(5)]
        assert sorted(s for t in b.tiers for s in t) == sorted(b.systems)
        assert b.ranking.startswith("Ranking (Bradley–Terry") and "1. " in b.ranking
        assert "pairs separable by a sign test over shared prompts" in b.distinguishable
        kinds = [line.split(":")[0] for line in b.changes]
        # order, the two repetitions, the humans' labels, and the other protocol
        assert kinds[:3] == ["Swapping the order of the answers", "Asking again (rep 1)", "The humans' labels"]
        other = "vf-json" if "· direct ·" in b.configuration else "direct"
        assert kinds[3] == f"Protocol {other} instead"
    names = tournament_report.display_names["judge"]
    skilled = [b for b in blocks if b.configuration.startswith(names.get(SKILLED, SKILLED) + " · direct")]
    assert len(skilled) == 1
    # the judge that follows the gold scores puts the strongest system first and keeps it under the swap
    assert skilled[0].systems[0] == "sys00" and skilled[0].ranking.split("; ")[0].endswith(")")
    assert "the top stays sys00" in skilled[0].changes[0]
    locked = [b for b in blocks if b.configuration.startswith(names.get(LOCKED, LOCKED) + " · direct")]
    # the judge that often picks the first answer: its ranking moves with the order
    assert "the top changes from" in locked[0].changes[0]


def test_every_output_shows_the_block(tournament_report: Report) -> None:
    b = tournament_report.leaderboards[0]
    md = render_markdown(tournament_report)
    assert md.count("### Leaderboard — ") == 4 and "No two systems are distinguishable" in md
    term = _terminal(tournament_report)
    assert term.count("Leaderboard — ") == 4 and b.changes[0] in term
    page = render_html(tournament_report, embed_plots=False)
    assert page.count('<article class="ds leaderboard">') == 4
    assert html.escape(b.ranking) in page and html.escape(b.changes[-1]) in page
    doc = json.loads(json.dumps(report_json(tournament_report)))
    got = doc["run"]["leaderboards"]
    assert len(got) == 4 and got[0]["systems"] == list(b.systems) and got[0]["changes"] == list(b.changes)
    assert got[0]["tiers"] == [list(t) for t in b.tiers]


def test_a_run_without_systems_has_no_block(tmp_path: Path) -> None:
    st = write_synthetic_run(tmp_path, datasets=("d1",), protocols=("direct",), temperatures=(0.0,),
                             n_items=12, repetitions=2)
    report = build_report(st, policy=FigurePolicy(n_bootstrap=50))
    assert report.cells and report.leaderboards == []
    assert "Leaderboard — " not in render_markdown(report) and "Leaderboard — " not in _terminal(report)
    assert 'class="ds leaderboard"' not in render_html(report, embed_plots=False)
    assert report_json(report)["run"]["leaderboards"] == []


def _audit(tiers: tuple[tuple[str, ...], ...], n_sep: int) -> LeaderboardAudit:
    ranked = tuple(RankedSystem(s, Interval(1000.0, 950.0, 1050.0, 10, 0.95, "bootstrap-pairs"), i + 1, i + 1, i + 1, 1)
                   for i, s in enumerate(s for t in tiers for s in t))
    return LeaderboardAudit(ranked, tiers, (), n_sep, 3)


@pytest.mark.parametrize(("tiers", "n_sep", "words"), [
    ((("a", "b", "c"),), 0, "No two systems are distinguishable (0 of 3"),
    ((("a",), ("b",), ("c",)), 3, "Every system is distinguishable from the next (3 of 3"),
    ((("a",), ("b", "c")), 2, "Distinguishable tiers, best first: {a} > {b, c}; within a tier"),
])
def test_distinguishable_in_plain_words(tiers: tuple[tuple[str, ...], ...], n_sep: int, words: str) -> None:
    assert leaderboard_distinguishable(_audit(tiers, n_sep)).startswith(words)
