"""The drift page: one self-contained HTML file from the dict :func:`verdictlab.workflows.drift.drift_report`
builds (``verdictlab drift ... --format html -o PATH``).  It renders only -- every number comes from the dict.

Pair mode: a forest plot of delta A with its paired-bootstrap interval and the equivalence margin,
the per-cell table (kappa, flip rate, McNemar p and Holm p, delta A / delta T, equivalence) and the
protocol-ranking change.  Series mode: per cell, the accuracy per run and the CUSUM / EWMA chart
with the first flagged run marked.  All run text is escaped; no script, no external resource.
"""

from __future__ import annotations

import html
import io
from collections.abc import Mapping
from typing import Any

_CSS = """body{font-family:system-ui,sans-serif;margin:2rem;max-width:72rem;color:#222}
table{border-collapse:collapse;margin:1rem 0;font-size:.9rem}th,td{border-bottom:1px solid #ddd;padding:.3rem .6rem;
text-align:right}th:first-child,td:first-child,td.l{text-align:left}.yes{color:#1a7f37}.no{color:#b42318}
.inconclusive{color:#9a6700}small{color:#555}"""


def _e(v: Any) -> str:
    return html.escape(str(v), quote=True)


def _f(v: Any, spec: str = ".3f") -> str:
    return "–" if v is None else format(v, spec)


def _svg(fig: Any) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    text = buf.getvalue()
    return text[text.find("<svg"):]   # drop the XML prologue: inline SVG


def _forest(cells: list[Mapping[str, Any]], margin: float) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [c for c in cells if c.get("delta_A") is not None]
    if not rows:
        return ""
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(rows) + 1.2))
    for i, c in enumerate(rows):
        lo, hi = c.get("delta_A_lo"), c.get("delta_A_hi")
        if lo is not None and hi is not None:
            ax.plot([lo, hi], [i, i], color="#555")
        ax.plot([c["delta_A"]], [i], "o", color={"yes": "#1a7f37", "no": "#b42318"}.get(c["equivalent"], "#9a6700"))
    ax.axvspan(-margin, margin, color="#1a7f37", alpha=0.12, label=f"±{margin:g} margin")
    ax.axvline(0, color="#999", lw=0.8)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"{c['protocol']} · {c['dataset']}"[:40] for c in rows])
    ax.set_xlabel("ΔA (b − a) with 95% paired-bootstrap interval")
    ax.legend(loc="best", fontsize=8)
    return _svg(fig)


def _chart(c: Mapping[str, Any]) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = list(range(1, len(c["accuracy"]) + 1))
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9, 3))
    a1.plot(runs, c["accuracy"], "o-")
    a1.axhline(c["baseline_accuracy"], color="#999", ls="--", label="baseline")
    a1.set_xlabel("run")
    a1.set_ylabel("accuracy on the anchor set")
    a1.legend(fontsize=8)
    if c["method"] == "cusum":
        a2.plot(runs, c["upper"], "o-", label="S+")
        a2.plot(runs, c["lower"], "o-", label="S−")
        a2.axhline(c["params"]["h"], color="#b42318", ls="--", label="h")
    else:
        a2.plot(runs, c["upper"], "o-", label="EWMA z")
        a2.plot(runs, c["lower"], "--", color="#b42318", label="+limit")
        a2.plot(runs, [-x for x in c["lower"]], "--", color="#b42318", label="−limit")
    if c.get("first_flagged_index") is not None:
        a2.axvline(c["first_flagged_index"] + 1, color="#b42318", alpha=0.4)
    a2.set_xlabel("run")
    a2.legend(fontsize=8)
    return _svg(fig)


def _item_note(rep: Mapping[str, Any]) -> str:
    check = rep.get("item_check") or {}
    if not check.get("n_changed"):
        return ""
    shown = ", ".join(f"{d['dataset']}/{d['item_id']}" for d in check.get("excluded", []))
    return (f"<p>{_e(check['n_changed'])} item(s) whose content differs between the runs were left out on both "
            f"sides: {_e(shown)}.</p>")


def _pair_body(rep: Mapping[str, Any]) -> list[str]:
    out = [f"<p>{_e(rep['equivalence'])}. McNemar p-values Holm-adjusted across all {len(rep['cells'])} cells.</p>",
           _item_note(rep),
           _forest(rep["cells"], float(rep["margin"])), "<table><tr>"]
    heads = ["a → b", "protocol", "dataset", "T", "units", "κ", "flip rate [95%]", "A a", "A b", "ΔA [95%]",
             "ΔT [95%]", "McNemar p", "Holm p", "equivalent"]
    out.append("".join(f"<th>{_e(h)}</th>" for h in heads) + "</tr>")
    for r in rep["cells"]:
        vals = [f"{r['judge_a']} → {r['judge_b']}", r["protocol"], r["dataset"], _f(r["temperature"], "g"),
                r["n_units"], _f(r["kappa"]), f"{_f(r['flip_rate'])} [{_f(r['flip_lo'])}, {_f(r['flip_hi'])}]",
                _f(r["A_a"]), _f(r["A_b"]),
                f"{_f(r['delta_A'], '+.3f')} [{_f(r['delta_A_lo'], '+.3f')}, {_f(r['delta_A_hi'], '+.3f')}]",
                f"{_f(r['delta_T'], '+.3f')} [{_f(r['delta_T_lo'], '+.3f')}, {_f(r['delta_T_hi'], '+.3f')}]",
                _f(r["mcnemar_p"], ".3g"), _f(r["mcnemar_p_holm"], ".3g")]
        out.append("<tr>" + "".join(f"<td class=l>{_e(v)}</td>" if i < 3 else f"<td>{_e(v)}</td>"
                                     for i, v in enumerate(vals))
                   + f"<td class={_e(r['equivalent'])}>{_e(r['equivalent'])}</td></tr>")
    out.append("</table><h2>Protocol ranking</h2><table><tr><th>a → b</th><th>dataset</th><th>by</th>"
               "<th>ranking a</th><th>ranking b</th><th>τ</th><th>top changed</th></tr>")
    for r in rep["ranking_change"]:
        out.append(f"<tr><td class=l>{_e(r['judge_a'])} → {_e(r['judge_b'])}</td><td class=l>{_e(r['dataset'])}</td>"
                   f"<td>{_e(r['figure'])}</td><td class=l>{_e(' > '.join(r['ranking_a']))}</td>"
                   f"<td class=l>{_e(' > '.join(r['ranking_b']))}</td><td>{_e(_f(r['tau'], '.2f'))}</td>"
                   f"<td>{'yes' if r['top_changed'] else 'no'}</td></tr>")
    out.append("</table>")
    return out


def _series_body(rep: Mapping[str, Any]) -> list[str]:
    out = [f"<p>Runs in order: {_e(', '.join(rep['runs']))}. Baseline: the first {_e(rep['baseline_runs'])} run(s). "
           "Accuracy per run weighs each labelled anchor item once.</p>", _item_note(rep)]
    for c in rep["charts"]:
        flag = (f"first flagged at run {c['first_flagged_index'] + 1} ({c['first_flagged_run']}); the shift began "
                f"at run {c['onset_index'] + 1}" if c["first_flagged_index"] is not None else "no shift flagged")
        out.append(f"<h2>{_e(c['protocol'])} · {_e(c['dataset'])} · T={_e(_f(c['temperature'], 'g'))}</h2>"
                   f"<p>{_e(c['method'].upper())}: {_e(flag)}.</p>{_chart(c)}")
    return out


def render_drift_html(rep: Mapping[str, Any]) -> str:
    """The drift page for a ``pair`` or ``series`` report dict."""
    body = _pair_body(rep) if rep["mode"] == "pair" else _series_body(rep)
    title = "Judge drift" if rep["mode"] == "pair" else "Judge drift over a series of runs"
    return ("<!doctype html><html lang=en><head><meta charset=utf-8>"
            "<meta http-equiv=Content-Security-Policy content=\"default-src 'none'; style-src 'unsafe-inline'; "
            "img-src data:\">"
            f"<title>{_e(title)}</title><style>{_CSS}</style></head><body><h1>{_e(title)}</h1>"
            f"<p><small>runs: {_e(' | '.join(rep['runs']))}; unparsed verdicts: {_e(rep['unparsed'])}</small></p>"
            + "\n".join(body) + "</body></html>")
