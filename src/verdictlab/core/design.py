"""The trial grid: judge x dataset x protocol x order x temperature x repetition (x step x decoding).

A :class:`Trial` is the unit of work, of caching and of resume.  Its key is
``(judge, dataset, item_id, protocol, order, temperature, rep, step, decoding)``; ``step`` is empty
for single-call protocols and names the criterion or debate round for multi-call ones; ``decoding``
is ``free`` (the default) or ``constrained``.  The trial id of a ``free`` trial is the
hash of the first eight fields only -- exactly the id of the same trial before ``decoding`` existed,
so stores written earlier resume.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from .vocab import DEFAULT_DECODING, ORDERS, check_decoding, check_order

TRIAL_KEY: tuple[str, ...] = (
    "judge",
    "dataset",
    "item_id",
    "protocol",
    "order",
    "temperature",
    "rep",
    "step",
    "decoding",
)


def format_temperature(t: float) -> str:
    """Canonical text form of a temperature for ids (``0.0`` -> ``"0"``, ``0.70`` -> ``"0.7"``)."""
    return f"{float(t):.6g}"


@dataclass(frozen=True, slots=True)
class Trial:
    judge: str
    dataset: str
    item_id: str
    protocol: str
    order: str
    temperature: float
    rep: int
    step: str = ""
    decoding: str = DEFAULT_DECODING

    @property
    def trial_id(self) -> str:
        """A stable id for the trial key (sha1 of the key fields joined by a unit separator)."""
        return trial_id(self.judge, self.dataset, self.item_id, self.protocol, self.order,
                        self.temperature, self.rep, self.step, decoding=self.decoding)

    def key(self) -> dict[str, object]:
        return {k: getattr(self, k) for k in TRIAL_KEY}


def trial_id(judge: str, dataset: str, item_id: str, protocol: str, order: str,
             temperature: float, rep: int, step: str = "", *, decoding: str | None = None) -> str:
    """sha1 of the trial key.  ``decoding`` enters the hash only when it is not the default
    (``free``), so ``free`` trials keep the ids they had before the field existed."""
    parts = [judge, dataset, str(item_id), protocol, order, format_temperature(temperature),
             str(int(rep)), step or ""]
    if decoding and decoding != DEFAULT_DECODING:
        parts.append(check_decoding(decoding))
    return hashlib.sha1("\x1f".join(parts).encode("utf-8")).hexdigest()


def trial_ids(judge: Sequence[str], dataset: Sequence[str], item_id: Sequence[str], protocol: Sequence[str],
              order: Sequence[str], temperature: Sequence[float], rep: Sequence[int], step: Sequence[str], *,
              decoding: str | None = None) -> list[str]:
    """:func:`trial_id` of every row of these columns (one decoding for all), for bulk imports:
    each distinct temperature formatted once, no call per row."""
    temps = {t: format_temperature(t) for t in set(temperature)}
    tail = "\x1f" + check_decoding(decoding) if decoding and decoding != DEFAULT_DECODING else ""
    sha1 = hashlib.sha1
    return [sha1(("\x1f".join((j, d, str(i), p, o, temps[t], str(int(r)), s or "")) + tail).encode("utf-8"))
            .hexdigest()
            for j, d, i, p, o, t, r, s in zip(judge, dataset, item_id, protocol, order, temperature, rep, step,
                                              strict=True)]


def expand_grid(*, judges: Sequence[str], items_by_dataset: dict[str, Sequence[str]],
                protocols: Sequence[str], orders: Sequence[str] = ORDERS,
                temperatures: Sequence[float] = (0.0,), repetitions: int = 1,
                steps_by_protocol: dict[str, Sequence[str]] | None = None,
                decodings: Sequence[str] = (DEFAULT_DECODING,)) -> Iterator[Trial]:
    """Yield every trial of the full factorial grid.

    Repetitions of one (judge, item, protocol, order, temperature) are yielded back to back so a
    local judge can reuse its prompt cache between them.
    """
    if repetitions < 1:
        raise ValueError("repetitions must be >= 1")
    for o in orders:
        check_order(o)
    for d in decodings:
        check_decoding(d)
    steps_by_protocol = steps_by_protocol or {}
    for judge in judges:
        for dataset, item_ids in items_by_dataset.items():
            for protocol in protocols:
                steps: Iterable[str] = steps_by_protocol.get(protocol) or ("",)
                for decoding in decodings:
                    yield from _item_trials(judge, dataset, item_ids, protocol, temperatures, orders,
                                            steps, repetitions, decoding)


def _item_trials(judge: str, dataset: str, item_ids: Sequence[str], protocol: str,
                 temperatures: Sequence[float], orders: Sequence[str], steps: Iterable[str],
                 repetitions: int, decoding: str) -> Iterator[Trial]:
    steps = tuple(steps)
    for item_id in item_ids:
        for temperature in temperatures:
            for order in orders:
                for step in steps:
                    for rep in range(repetitions):
                        yield Trial(judge, dataset, str(item_id), protocol, order, float(temperature), rep,
                                    step, decoding)
