"""The trial grid: judge x dataset x protocol x order x temperature x repetition (x step).

A :class:`Trial` is the unit of work, of caching and of resume.  Its key is
``(judge, dataset, item_id, protocol, order, temperature, rep, step)``; ``step`` is empty for
single-call protocols and names the criterion or debate round for multi-call ones.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

TRIAL_KEY: tuple[str, ...] = (
    "judge",
    "dataset",
    "item_id",
    "protocol",
    "order",
    "temperature",
    "rep",
    "step",
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

    @property
    def trial_id(self) -> str:
        """A stable id for the trial key (sha1 of the key fields joined by a unit separator)."""
        return trial_id(self.judge, self.dataset, self.item_id, self.protocol, self.order,
                        self.temperature, self.rep, self.step)

    def key(self) -> dict[str, object]:
        return {k: getattr(self, k) for k in TRIAL_KEY}


def trial_id(judge: str, dataset: str, item_id: str, protocol: str, order: str,
             temperature: float, rep: int, step: str = "") -> str:
    parts = [judge, dataset, str(item_id), protocol, order, format_temperature(temperature),
             str(int(rep)), step or ""]
    return hashlib.sha1("\x1f".join(parts).encode("utf-8")).hexdigest()


def expand_grid(*, judges: Sequence[str], items_by_dataset: dict[str, Sequence[str]],
                protocols: Sequence[str], orders: Sequence[str] = ("AB", "BA"),
                temperatures: Sequence[float] = (0.0,), repetitions: int = 1,
                steps_by_protocol: dict[str, Sequence[str]] | None = None) -> Iterator[Trial]:
    """Yield every trial of the full factorial grid.

    Repetitions of one (judge, item, protocol, order, temperature) are yielded back to back so a
    local judge can reuse its prompt cache between them.
    """
    if repetitions < 1:
        raise ValueError("repetitions must be >= 1")
    for o in orders:
        if o not in ("AB", "BA"):
            raise ValueError(f"order must be 'AB' or 'BA', got {o!r}")
    steps_by_protocol = steps_by_protocol or {}
    for judge in judges:
        for dataset, item_ids in items_by_dataset.items():
            for protocol in protocols:
                steps: Iterable[str] = steps_by_protocol.get(protocol) or ("",)
                for item_id in item_ids:
                    for temperature in temperatures:
                        for order in orders:
                            for step in steps:
                                for rep in range(repetitions):
                                    yield Trial(judge, dataset, str(item_id), protocol, order,
                                                float(temperature), rep, step)
