"""`verdictlab compare RUN_DIR [RUN_DIR ...] --by judge|protocol` -- paired exact McNemar tests on
parse-shared items, Holm-corrected across the family."""

from __future__ import annotations

import json
import math
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer


class CompareBy(StrEnum):
    judge = "judge"
    protocol = "protocol"


class UnparsedPolicy(StrEnum):
    exclude = "exclude"
    wrong = "wrong"


def _config_order(meta: dict[str, Any], by: str) -> list[str]:
    cfg = meta.get("config") or {}
    entries = cfg.get("judges" if by == "judge" else "protocols") or []
    out = []
    for e in entries:
        if isinstance(e, dict):
            e = e.get("id")
        if isinstance(e, str):
            out.append(e)
    return out


def load_runs(run_dirs: list[Path], by: str) -> tuple[Any, list[str]]:
    """Judgments of all runs (one frame) and the entity order (config order, run by run).

    When the same judge/protocol id occurs in more than one run it is labelled ``<run>/<id>`` so the
    two are compared, not merged."""
    import pandas as pd

    from ..store import open_store

    frames, orders = [], []
    for d in run_dirs:
        with open_store(d) as store:
            df = store.judgments()
            order = _config_order(store.all_meta(), by)
        df["run"] = d.name or str(d)
        frames.append(df)
        seen = list(pd.unique(df[by]))
        orders.append([e for e in order if e in seen] + [e for e in seen if e not in order])
    allj = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    counts: dict[str, int] = {}
    for o in orders:
        for e in o:
            counts[e] = counts.get(e, 0) + 1
    if any(c > 1 for c in counts.values()):
        dup = allj[by].map(counts).fillna(1) > 1
        allj.loc[dup, by] = allj.loc[dup, "run"] + "/" + allj.loc[dup, by].astype(str)
        orders = [[(f"{(run_dirs[i].name or str(run_dirs[i]))}/{e}" if counts[e] > 1 else e) for e in o]
                  for i, o in enumerate(orders)]
    flat = [e for o in orders for e in o]
    return allj, list(dict.fromkeys(flat))


def _clean(v: Any) -> Any:
    if isinstance(v, float) and math.isnan(v):
        return None
    if hasattr(v, "item"):
        return _clean(v.item())
    return v


def compare(
    run_dirs: Annotated[list[Path], typer.Argument(help="One or more run directories (run.sqlite).")],
    by: Annotated[CompareBy, typer.Option(help="Compare judges or protocols.")] = CompareBy.judge,
    all_pairs: Annotated[bool, typer.Option("--all-pairs", help="Test every pair, not only neighbours "
                                            "in config order.")] = False,
    unparsed: Annotated[UnparsedPolicy, typer.Option(
        help="'exclude': a unit unparsed for either side is dropped (parse-shared items only); "
             "'wrong': an unparsed verdict counts as wrong.")] = UnparsedPolicy.exclude,
    alpha: Annotated[float, typer.Option(help="Significance level for the Holm-adjusted p.")] = 0.05,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """Paired exact McNemar tests (per dataset; one modal verdict per item and order), Holm-corrected."""
    from rich import box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from ..stats import paired_mcnemar
    from ..store import StoreError
    from ._errors import EXIT_INPUT, EXIT_STORE, fail, plain

    if not 0 < alpha < 1:
        raise typer.BadParameter(f"--alpha must be in (0, 1), got {alpha}")
    try:
        judgments, order = load_runs(run_dirs, by.value)
    except StoreError as e:
        fail(e, EXIT_STORE)
    if judgments.empty:
        fail("no judgments in the given run(s)", EXIT_INPUT)
    res = paired_mcnemar(judgments, by=by.value, order=order, all_pairs=all_pairs,
                         unparsed=unparsed.value, alpha=alpha)
    if as_json:
        payload = {"by": by.value, "pairs": res.attrs["pairs"], "unparsed": unparsed.value,
                   "alpha": alpha, "family_size": len(res), "correction": "holm",
                   "test": "exact McNemar on parse-shared (item, order) units, modal verdict over reps",
                   "order": order,
                   "comparisons": [{k: _clean(v) for k, v in rec.items()} for rec in res.to_dict("records")]}
        typer.echo(json.dumps(payload, indent=2, ensure_ascii=False, allow_nan=False))
        return
    con = Console(markup=False, highlight=False)
    if res.empty:
        con.print(f"Nothing to compare: fewer than two {by.value}s share a dataset in these runs.")
        return
    strata = [c for c in res.columns if c in ("dataset", "protocol", "judge", "temperature", "step")]
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False,
              title=f"Paired exact McNemar by {by.value}: {res.attrs['pairs']} pairs, Holm over {len(res)} "
                    f"tests, unparsed={unparsed.value}")
    t.add_column("stratum", overflow="fold")
    t.add_column("x vs y", overflow="fold")
    for c in ("N", "acc x/y", "only x/y", "p", "p Holm", ""):
        t.add_column(c, justify="right", no_wrap=True)
    for rec in res.to_dict("records"):
        stratum = " · ".join(f"T={rec[c]:g}" if c == "temperature" else str(rec[c]) for c in strata)
        t.add_row(Text(plain(stratum)), Text(plain(f"{rec[f'{by.value}_x']} vs {rec[f'{by.value}_y']}")),
                  str(rec["n_shared"]),
                  f"{rec['acc_x']:.3f}/{rec['acc_y']:.3f}", f"{rec['only_x']}/{rec['only_y']}",
                  f"{rec['p']:.3g}", f"{rec['p_holm']:.3g}", "*" if rec["significant"] else "")
    con.print(t)
    con.print(f"* Holm-adjusted p < {alpha}.  Units are (item, order) with a label; items a side could "
              "not parse are left out (n dropped per row in --json).")


def register(app: typer.Typer) -> None:
    app.command("compare")(compare)
