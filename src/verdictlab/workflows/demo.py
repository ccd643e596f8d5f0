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
    order (free before constrained), each with its commonest parse failure (``top_parse_failure``) and the
    sentence that names it, ``(label, sentence)`` per cell, the ``decoding`` rows
    (:func:`verdictlab.stats.decoding.decoding_effect`, protocol order, each with its ``reading``; empty
    with one decoding mode) and the constraint ``mechanisms`` ``{name: output kinds}``."""

    report: Any
    cells: list[Any]
    sentences: list[tuple[str, str]]
    decoding: list[dict[str, Any]] = field(default_factory=list)
    mechanisms: dict[str, list[str]] = field(default_factory=dict)


def _sorted(cells: Sequence[Any], order: Sequence[str]) -> list[Any]:
    rank = {p: i for i, p in enumerate(order)}
    return sorted(cells, key=lambda c: (rank.get(c.key.protocol, 99), c.key.protocol,
                                        c.key.decoding != DEFAULT_DECODING))


def cell_sentences(cells: list[Any]) -> list[tuple[str, str]]:
    """``(label, sentence)`` per cell; the label names the decoding mode when the cells have two."""
    from ..report.readings import protocol_sentences

    sentences = protocol_sentences(cells)
    if len({c.key.decoding for c in cells}) < 2:
        return sentences
    return [(f"{label} ({c.key.decoding})", text) for (label, text), c in zip(sentences, cells, strict=True)]


def with_parse_failures(judgments: Any, cells: list[Any]) -> list[Any]:
    """The cells with the commonest parse failure of their cell (:func:`verdictlab.stats.top_parse_failures`,
    on the full cell key) as ``top_parse_failure`` (a ``(reason, count)`` pair, or None), and their
    sentence read again with it."""
    from ..report.readings import cell_sentence
    from ..stats import top_parse_failures

    reasons = top_parse_failures(judgments)
    for c in cells:
        c.top_parse_failure = reasons.get(c.key.as_tuple())
        c.sentence = cell_sentence(c)
    return cells


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

    policy = FigurePolicy(n_bootstrap=n_bootstrap)
    rep = build_report(run_dir, policy=policy)
    with open_store(run_dir) as store:
        judgments = store.judgments()
    cells = _sorted(with_parse_failures(judgments, list(rep.cells)), protocols)
    effect = decoding_effect(judgments, policy=policy)
    rank = {p: i for i, p in enumerate(protocols)}
    rows = sorted(({**r, "reading": decoding_reading(r)} for r in effect.to_dict("records")),
                  key=lambda r: rank.get(r["protocol"], 99)) if len(effect) else []
    mechanisms = _mechanisms([str(m) for m in effect["mechanism"].dropna()]) if len(effect) else {}
    return DemoResults(report=rep, cells=cells, sentences=cell_sentences(cells), decoding=rows,
                       mechanisms=mechanisms)


__all__ = ["DEMO_PROTOCOLS", "DemoResults", "cell_sentences", "demo_results", "with_parse_failures"]
