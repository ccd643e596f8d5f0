"""What ``verdictlab demo`` shows after its run, gathered from the run directory: the report's cells in
protocol order, one plain sentence per cell (with the commonest parse failure of its cell), and the
free-vs-constrained comparison with its reading (:mod:`verdictlab.report.readings`) and the constraint
mechanisms.  It gathers; the command prints.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.vocab import DEFAULT_DECODING

#: the five pairwise protocols in the order the demo shows them
DEMO_PROTOCOLS: tuple[str, ...] = ("direct", "vf-json", "vf-xml", "cot-json", "cot-xml")


@dataclass(frozen=True)
class DemoResults:
    """The demo's figures: ``report`` (:func:`~verdictlab.report.build_report`), its ``cells`` in protocol
    order (free before constrained) with ``top_parse_failure``, ``(label, sentence)`` per cell, the
    ``decoding`` rows (:func:`verdictlab.stats.decoding.decoding_effect`, protocol order, each with its
    ``reading``; empty with one decoding mode) and the constraint ``mechanisms`` ``{name: output kinds}``."""

    report: Any
    cells: list[dict[str, Any]]
    sentences: list[tuple[str, str]]
    decoding: list[dict[str, Any]] = field(default_factory=list)
    mechanisms: dict[str, list[str]] = field(default_factory=dict)


def _sorted(cells: Sequence[dict[str, Any]], order: Sequence[str]) -> list[dict[str, Any]]:
    rank = {p: i for i, p in enumerate(order)}
    return sorted(cells, key=lambda c: (rank.get(str(c.get("protocol")), 99), str(c.get("protocol")),
                                        str(c["decoding"]) != DEFAULT_DECODING))


def cell_sentences(cells: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """``(label, sentence)`` per cell; the label names the decoding mode when the cells have two."""
    from ..report.readings import protocol_sentences

    sentences = protocol_sentences(cells)
    if len({str(c["decoding"]) for c in cells}) < 2:
        return sentences
    return [(f"{label} ({c['decoding']})", text)
            for (label, text), c in zip(sentences, cells, strict=True)]


def with_parse_failures(judgments: Any, cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Cells with the commonest parse failure of their cell (:func:`verdictlab.stats.top_parse_failures`,
    on the full cell key) added as ``top_parse_failure`` (a ``(reason, count)`` pair, or None)."""
    from ..core.vocab import CellKey
    from ..stats import top_parse_failures

    reasons = top_parse_failures(judgments)
    return [{**c, "top_parse_failure": reasons.get(CellKey.of(c).as_tuple())} for c in cells]


def _mechanisms(names: Sequence[str]) -> dict[str, list[str]]:
    """``{mechanism: [output kinds]}`` from recorded mechanisms such as ``"grammar (json)"``."""
    kinds: dict[str, list[str]] = {}
    for m in names:
        base, sep, kind = m.rpartition(" (")
        name, k = (base, kind.rstrip(")")) if sep else (m, "")
        found = kinds.setdefault(name, [])
        if k and k not in found:
            found.append(k)
    return kinds


def demo_results(run_dir: str | Path, *, n_bootstrap: int = 500,
                 protocols: Sequence[str] = DEMO_PROTOCOLS) -> DemoResults:
    """The demo's figures of the run in ``run_dir`` (:class:`DemoResults`)."""
    from ..core.policy import FigurePolicy
    from ..report.build import build_report
    from ..report.readings import decoding_reading
    from ..stats.decoding import decoding_effect
    from ..store import open_store

    rep = build_report(run_dir, policy=FigurePolicy(n_bootstrap=n_bootstrap))
    with open_store(run_dir) as store:
        judgments = store.judgments()
    cells = _sorted(with_parse_failures(judgments, list(rep["cells"])), protocols)
    effect = decoding_effect(judgments, policy=FigurePolicy(n_bootstrap=n_bootstrap))
    rank = {p: i for i, p in enumerate(protocols)}
    rows = sorted(({**r, "reading": decoding_reading(r)} for r in effect.to_dict("records")),
                  key=lambda r: rank.get(r["protocol"], 99)) if len(effect) else []
    mechanisms = _mechanisms([str(m) for m in effect["mechanism"].dropna()]) if len(effect) else {}
    return DemoResults(report=rep, cells=cells, sentences=cell_sentences(cells), decoding=rows,
                       mechanisms=mechanisms)


__all__ = ["DEMO_PROTOCOLS", "DemoResults", "cell_sentences", "demo_results", "with_parse_failures"]
