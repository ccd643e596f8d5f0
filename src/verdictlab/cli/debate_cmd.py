"""`verdictlab debate CONFIG [--run-dir DIR]` -- a structured debate between the config's two judges, every
round stored (:mod:`verdictlab.engine.debate`), then round-1 vs final figures
(:func:`verdictlab.analyses.debate.debate_summary`)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from ._errors import EXIT_INPUT, EXIT_STORE
from .options import Command, RunDirOption, SetOption, exit_codes, legacy_spelling


class DebateFallback(StrEnum):
    """What a round does with a reply that cannot be parsed (``engine.debate.FALLBACKS``)."""

    none = "none"
    previous = "previous"
    paper = "paper"


class FinalRule(StrEnum):
    """The final verdict when the judges still disagree (``engine.debate.FINAL_RULES``)."""

    tie = "tie"
    first_judge = "first-judge"


def debate(
    config: Annotated[Path, typer.Argument(metavar="CONFIG", show_default=False,
                                           help="Run config: two judges, protocols [debate], datasets of pairs.")],
    run_dir: RunDirOption = None,
    rounds: Annotated[int, typer.Option(min=1, help="Most rounds (round 1 + rebuttals).")] = 3,
    fallback: Annotated[DebateFallback, typer.Option(
        help="A reply that cannot be parsed: none (no verdict that round), previous (the judge keeps its "
             "previous verdict) or paper (round 1 takes the response shown first, later rounds the previous "
             "verdict: the audited implementation's rule).")] = DebateFallback.none,
    final_rule: Annotated[FinalRule, typer.Option(
        help="Judges still disagree after the last round: tie, or the first judge's verdict.")] = FinalRule.tie,
    stop_on_agreement: Annotated[bool, typer.Option(help="Stop once both judges agree.")] = True,
    set_: SetOption = None,
    legacy_run_dir: Annotated[Path | None, typer.Argument(hidden=True, show_default=False)] = None,
) -> None:
    """Structured debate between the config's two judges; every round stored (see verdictlab.engine.debate).
    The round-1 vs final figures go to stdout."""
    from ..analyses.debate import debate_summary
    from ..engine.debate import debate_config
    from ..store.export import judgments_frame
    from ._errors import say
    from .output import data_console

    if legacy_run_dir is not None:
        run_dir = legacy_spelling(f"debate CONFIG {legacy_run_dir}", legacy_run_dir, "debate CONFIG --run-dir",
                                  run_dir)
    res = debate_config(config, run_dir, rounds=rounds, fallback=fallback.value, final_rule=final_rule.value,
                        stop_on_agreement=stop_on_agreement, overrides=set_ or ())
    summ = debate_summary(judgments_frame(res.run_dir))
    say(f"{res.n_debates} debate(s) run; stored in {res.run_dir}/run.sqlite")
    out = data_console(wide=False, markup=False, highlight=False)
    for rec in summ.to_dict("records"):
        out.print(f"{rec['debate']} T={rec['temperature']:g}: round-1 accuracy {rec['round1_accuracy']:.3f}, "
                  f"final {rec['final_accuracy']:.3f} (n={rec['n_labelled']}), mean rounds {rec['mean_rounds']:.2f}, "
                  f"round fallbacks {rec['n_round_fallbacks']}, finals depending on a fallback "
                  f"{rec['n_final_depending_on_fallback']}")


def register(app: typer.Typer) -> None:
    app.command("debate", cls=Command, epilog=exit_codes(EXIT_INPUT, EXIT_STORE))(debate)
