"""`verdictlab drift RUN_A RUN_B` (two versions, dates or vendors of a judge; or two judges of one run
with ``--judge-a/--judge-b``) and `verdictlab drift RUN_1 ... RUN_n` (a control chart over a series of
runs on a fixed anchor set).  Figures: :mod:`verdictlab.stats.drift`."""

from __future__ import annotations

import json
import math
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer


class Chart(StrEnum):
    cusum = "cusum"
    ewma = "ewma"


class UnparsedPolicy(StrEnum):
    exclude = "exclude"
    wrong = "wrong"


class DriftError(ValueError):
    """The runs cannot be compared as asked (exit code 2 with the message)."""


def _clean(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_clean(x) for x in v]
    if hasattr(v, "tolist"):
        return _clean(v.tolist())
    if isinstance(v, float) and math.isnan(v):
        return None
    return v


def load_run(run_dir: Path) -> Any:
    """The pairwise judgments of one run directory (debate rows left out)."""
    from ..store import open_store

    with open_store(run_dir) as store:
        df = store.judgments()
    return df[df["protocol"] != "debate"]


def _one_judge(df: Any, run: str, judge: str | None) -> tuple[str, Any]:
    judges = sorted(df["judge"].dropna().unique())
    if judge is not None:
        if judge not in judges:
            raise DriftError(f"{run}: no judgments by judge {judge!r}; judges there: {', '.join(judges) or 'none'}")
        return judge, df[df["judge"] == judge]
    if len(judges) != 1:
        raise DriftError(f"{run} holds {len(judges)} judges ({', '.join(judges) or 'none'}); say which with "
                         "--judge-a / --judge-b")
    return judges[0], df


def sides(run_dirs: list[Path], judge_a: str | None, judge_b: str | None) -> list[tuple[str, str, Any, Any]]:
    """``[(judge_a, judge_b, frame_a, frame_b)]`` for a two-side comparison: one run with two
    judges, two runs with one judge each (or chosen), or two runs with the same judges (each judge
    against itself)."""
    frames = [load_run(d) for d in run_dirs]
    if len(frames) == 1:
        if not (judge_a and judge_b):
            raise DriftError("one run: name the two judges to compare with --judge-a and --judge-b")
        ja, fa = _one_judge(frames[0], str(run_dirs[0]), judge_a)
        jb, fb = _one_judge(frames[0], str(run_dirs[0]), judge_b)
        return [(ja, jb, fa, fb)]
    fa_all, fb_all = frames
    same = sorted(fa_all["judge"].unique()) == sorted(fb_all["judge"].unique())
    if judge_a is None and judge_b is None and same and fa_all["judge"].nunique() > 1:
        return [(j, j, fa_all[fa_all["judge"] == j], fb_all[fb_all["judge"] == j])
                for j in sorted(fa_all["judge"].unique())]
    ja, fa = _one_judge(fa_all, str(run_dirs[0]), judge_a)
    jb, fb = _one_judge(fb_all, str(run_dirs[1]), judge_b or (judge_a if judge_a in set(fb_all["judge"]) else None))
    return [(ja, jb, fa, fb)]


def pair_report(run_dirs: list[Path], *, judge_a: str | None, judge_b: str | None, margin: float, alpha: float,
                n_boot: int, seed: int, unparsed: str) -> dict[str, Any]:
    """The drift figures of a two-side comparison as a JSON-ready dict."""
    import pandas as pd

    from ..stats.drift import drift_pair, ranking_change
    from ..stats.significance import holm_adjust

    tables = []
    for ja, jb, fa, fb in sides(run_dirs, judge_a, judge_b):
        t = drift_pair(fa, fb, margin=margin, alpha=alpha, n_boot=n_boot, seed=seed, unparsed=unparsed)
        tables.append(t.assign(judge_a=ja, judge_b=jb))
    cells = pd.concat(tables, ignore_index=True) if tables else pd.DataFrame()
    if cells.empty:
        raise DriftError("no cell (protocol x dataset x temperature) was judged on both sides")
    cells["mcnemar_p_holm"] = holm_adjust(cells["mcnemar_p"].to_numpy(float))   # one family over all cells
    rank_rows = []
    for (ja, jb), g in cells.groupby(["judge_a", "judge_b"], sort=False):
        for fig in ("A", "T"):
            rank_rows += [{"judge_a": ja, "judge_b": jb, **r} for r in ranking_change(g, figure=fig).to_dict("records")]
    front = ["judge_a", "judge_b"]
    cells = cells[front + [c for c in cells.columns if c not in front]]
    return {"mode": "pair", "runs": [str(d) for d in run_dirs], "margin": margin, "alpha": alpha,
            "unparsed": unparsed, "n_boot": n_boot, "correction": "holm over all cells",
            "equivalence": f"TOST at alpha={alpha}: {100 * (1 - 2 * alpha):g}% paired-bootstrap interval of "
                           f"delta_A inside +-{margin:g} -> yes; wholly outside -> no; else inconclusive",
            "cells": [_clean(r) for r in cells.to_dict("records")],
            "ranking_change": [_clean(r) for r in rank_rows]}


def series_report(run_dirs: list[Path], *, judge: str | None, chart: str, baseline: int, unparsed: str,
                  params: dict[str, float]) -> dict[str, Any]:
    """A control chart of agreement with the anchor labels per (protocol, dataset, temperature)
    cell over the runs, in the order given."""
    from ..stats.drift import drift_series

    frames = []
    judges = []
    for d in run_dirs:
        j, f = _one_judge(load_run(d), str(d), judge if judge is not None else None)
        judges.append(j)
        frames.append(f)
    keys = ["protocol", "dataset", "temperature"]
    common = set.intersection(*[set(map(tuple, f[keys].drop_duplicates().to_numpy().tolist())) for f in frames])
    if not common:
        raise DriftError("no cell (protocol x dataset x temperature) was judged in every run")
    charts = []
    for cell in sorted(common, key=str):
        sel = [f[(f["protocol"] == cell[0]) & (f["dataset"] == cell[1]) & (f["temperature"] == cell[2])]
               for f in frames]
        ch = drift_series(sel, method=chart, baseline=baseline, unparsed=unparsed, **params)
        charts.append(_clean({
            "protocol": cell[0], "dataset": cell[1], "temperature": cell[2], "method": ch.method,
            "baseline_accuracy": ch.baseline, "accuracy": ch.accuracy, "n_items": ch.n, "z": ch.z,
            "upper": ch.upper, "lower": ch.lower, "flagged": ch.flagged,
            "first_flagged_run": None if ch.first_flagged is None else str(run_dirs[ch.first_flagged]),
            "first_flagged_index": ch.first_flagged,
            "onset_run": None if ch.onset is None else str(run_dirs[ch.onset]), "onset_index": ch.onset,
            "params": ch.params}))
    return {"mode": "series", "runs": [str(d) for d in run_dirs], "judges": judges, "chart": chart,
            "baseline_runs": baseline, "unparsed": unparsed, "charts": charts}


def _f(v: Any, spec: str = ".3f") -> str:
    return "–" if v is None else format(v, spec)


def _print_pair(rep: dict[str, Any]) -> None:
    from rich.console import Console

    con = Console(highlight=False)
    con.print(f"Drift: {' vs '.join(rep['runs'])} (margin ±{rep['margin']:g}; McNemar Holm-adjusted over "
              f"{len(rep['cells'])} cells)", markup=False)
    pairs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rep["cells"]:
        pairs.setdefault((r["judge_a"], r["judge_b"]), []).append(r)
    for (ja, jb), rows in pairs.items():
        con.print(f"a = {ja}\nb = {jb}", markup=False)
        for r in rows:
            con.print(f"  {r['protocol']} · {r['dataset']} · T={r['temperature']:g}: {r['n_units']} units, "
                      f"κ {_f(r['kappa'], '.2f')}, flip rate {_f(r['flip_rate'], '.3f')} "
                      f"[{_f(r['flip_lo'], '.3f')}, {_f(r['flip_hi'], '.3f')}]\n"
                      f"    A {_f(r['A_a'])} → {_f(r['A_b'])}, ΔA {_f(r['delta_A'], '+.3f')} "
                      f"[{_f(r['delta_A_lo'], '+.3f')}, {_f(r['delta_A_hi'], '+.3f')}], ΔT {_f(r['delta_T'], '+.3f')} "
                      f"[{_f(r['delta_T_lo'], '+.3f')}, {_f(r['delta_T_hi'], '+.3f')}]\n"
                      f"    McNemar p {_f(r['mcnemar_p'], '.3g')} (Holm {_f(r['mcnemar_p_holm'], '.3g')}); "
                      f"equivalent within ±{rep['margin']:g}: {r['equivalent']}", markup=False)
    for r in rep["ranking_change"]:
        if r["n_protocols"] >= 2:
            con.print(f"protocol ranking by {r['figure']} ({r['dataset']}, T={r['temperature']:g}): "
                      f"{' > '.join(r['ranking_a'])}  →  {' > '.join(r['ranking_b'])}  (τ = {_f(r['tau'], '.2f')}"
                      f"{', top changed' if r['top_changed'] else ''})", markup=False)
    con.print(rep["equivalence"], markup=False)


def _print_series(rep: dict[str, Any]) -> None:
    from rich.console import Console

    con = Console()
    for c in rep["charts"]:
        accs = "  ".join(f"{a:.3f}{'*' if fl else ''}" for a, fl in zip(c["accuracy"], c["flagged"], strict=True))
        flag = (f"first flagged: run {c['first_flagged_index'] + 1} ({c['first_flagged_run']}), shift began at run "
                f"{c['onset_index'] + 1}" if c["first_flagged_index"] is not None else "no shift flagged")
        con.print(f"{c['protocol']} · {c['dataset']} · T={c['temperature']:g} [{c['method']}]: accuracy per run "
                  f"{accs}\n  baseline {c['baseline_accuracy']:.3f}; {flag}")


def drift(
    run_dirs: Annotated[list[Path], typer.Argument(help="Run directories: one (with --judge-a/--judge-b), two "
                                                   "(a vs b), or three or more (a series on a fixed anchor set).")],
    judge_a: Annotated[str | None, typer.Option("--judge-a", help="Judge id on side a (or of the series).")] = None,
    judge_b: Annotated[str | None, typer.Option("--judge-b", help="Judge id on side b.")] = None,
    margin: Annotated[float, typer.Option(help="Equivalence margin on delta A (0.02 = ±2 pp).")] = 0.02,
    alpha: Annotated[float, typer.Option(help="Level of each one-sided test (TOST).")] = 0.05,
    unparsed: Annotated[UnparsedPolicy, typer.Option(help="'exclude' or 'wrong' for unparsed verdicts.")
                        ] = UnparsedPolicy.exclude,
    n_boot: Annotated[int, typer.Option("--n-boot", help="Paired bootstrap resamples.")] = 1000,
    seed: Annotated[int, typer.Option(help="Bootstrap seed (>= 0).", min=0)] = 0,
    chart: Annotated[Chart, typer.Option(help="Series: CUSUM or EWMA chart.")] = Chart.cusum,
    baseline: Annotated[int, typer.Option(help="Series: runs pooled as the baseline.")] = 1,
    series: Annotated[bool, typer.Option("--series", help="Treat two runs as a series (chart) too.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    html: Annotated[Path | None, typer.Option("--html", help="Write a drift page (HTML) to this file.")] = None,
) -> None:
    """Did the judge's verdicts change between runs, by how much, and is the replacement equivalent?"""
    from ..store import StoreError
    from ._errors import EXIT_STORE, EXIT_USAGE, fail, say

    if margin <= 0 or not 0 < alpha < 0.5 or n_boot < 1 or baseline < 1:
        raise typer.BadParameter("need --margin > 0, 0 < --alpha < 0.5, --n-boot >= 1 and --baseline >= 1")
    try:
        if len(run_dirs) >= 3 or series:
            rep = series_report(run_dirs, judge=judge_a, chart=chart.value, baseline=baseline,
                                unparsed=unparsed.value, params={})
        else:
            rep = pair_report(run_dirs, judge_a=judge_a, judge_b=judge_b, margin=margin, alpha=alpha,
                              n_boot=n_boot, seed=seed, unparsed=unparsed.value)
    except StoreError as e:
        fail(str(e), EXIT_STORE)
    except (DriftError, ValueError) as e:
        fail(str(e), EXIT_USAGE)
    if html is not None:
        from ..drift_page import render_drift_html

        html.write_text(render_drift_html(rep), encoding="utf-8")
    if as_json:
        typer.echo(json.dumps(rep, indent=2, ensure_ascii=False, allow_nan=False, default=str))
    elif rep["mode"] == "pair":
        _print_pair(rep)
    else:
        _print_series(rep)
    if html is not None and not as_json:
        say(f"drift page written to {html}")


def register(app: typer.Typer) -> None:
    app.command("drift")(drift)
