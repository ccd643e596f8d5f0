"""`verdictlab debate CONFIG [RUN_DIR]` -- a structured debate between the config's two judges, every round
stored (:mod:`verdictlab.engine.debate`), then round-1 vs final figures
(:func:`verdictlab.analyses.debate.debate_summary`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def debate(
    config: Annotated[Path, typer.Argument(help="Run config: two judges, protocols [debate], datasets of pairs.")],
    run_dir: Annotated[Path | None, typer.Argument(help="Run directory (default runs/<name>).")] = None,
    rounds: Annotated[int, typer.Option(help="Most rounds (round 1 + rebuttals).")] = 3,
    fallback: Annotated[str, typer.Option(help="On a parse failure: none | previous | paper.")] = "none",
    final_rule: Annotated[str, typer.Option(help="Judges still disagree: tie | first-judge.")] = "tie",
    stop_on_agreement: Annotated[bool, typer.Option(help="Stop once both judges agree.")] = True,
) -> None:
    """Structured debate between the config's two judges; every round stored (see verdictlab.engine.debate)."""
    from rich.console import Console

    from ..analyses.debate import debate_summary
    from ..engine.debate import debate_config
    from ..export import judgments_frame

    res = debate_config(config, run_dir, rounds=rounds, fallback=fallback, final_rule=final_rule,
                        stop_on_agreement=stop_on_agreement)
    summ = debate_summary(judgments_frame(res.run_dir))
    out = Console(markup=False, highlight=False)
    out.print(f"{res.n_debates} debate(s) run; stored in {res.run_dir}/run.sqlite")
    for rec in summ.to_dict("records"):
        out.print(f"{rec['debate']} T={rec['temperature']:g}: round-1 accuracy {rec['round1_accuracy']:.3f}, "
                  f"final {rec['final_accuracy']:.3f} (n={rec['n_labelled']}), mean rounds {rec['mean_rounds']:.2f}, "
                  f"round fallbacks {rec['n_round_fallbacks']}, finals depending on a fallback "
                  f"{rec['n_final_depending_on_fallback']}")


def register(app: typer.Typer) -> None:
    app.command("debate")(debate)
