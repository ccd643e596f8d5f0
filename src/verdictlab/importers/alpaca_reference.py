"""AlpacaEval's published ``df_gamed.csv`` read and checked: the values the length-controlled win rate
needs (``report --alpaca-reference FILE``; the leaderboard analysis makes it a
:class:`verdictlab.stats.AlpacaReference`).

The file is the gamed baselines' annotations AlpacaEval ships beside its length-controlled GLM: one row
per (gamed model, instruction) with ``index`` (the instruction), ``preference``, ``std_delta_len``,
``instruction_difficulty`` and ``not_gamed_baseline``.  A file of another shape is an
:class:`~verdictlab.errors.InputError` naming the file and what it lacks, never a silent LC figure."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..errors import InputError

__all__ = ["GAMED_COLUMNS", "read_alpaca_reference"]

#: the columns of AlpacaEval's df_gamed.csv the LC win rate reads
GAMED_COLUMNS: tuple[str, ...] = ("index", "preference", "std_delta_len", "instruction_difficulty",
                                  "not_gamed_baseline")
_NUMERIC: tuple[str, ...] = ("index", "preference", "std_delta_len", "instruction_difficulty")


def read_alpaca_reference(path: str | Path) -> pd.DataFrame:
    """Read ``path`` (AlpacaEval's ``df_gamed.csv``); an :class:`InputError` naming the file when it is
    missing, not a CSV, lacks a column of :data:`GAMED_COLUMNS`, or has a non-numeric value in one."""
    p = Path(path)
    what = f"{p}: not AlpacaEval's df_gamed.csv"
    try:
        frame = pd.read_csv(p)
    except FileNotFoundError:
        raise InputError(f"{p}: no such file (AlpacaEval's df_gamed.csv expected)") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, IsADirectoryError) as e:
        raise InputError(f"{what} ({type(e).__name__}: {str(e).strip()[:200]})") from None
    lacking = [c for c in GAMED_COLUMNS if c not in frame.columns]
    if lacking:
        raise InputError(f"{what}: it lacks the column(s) {', '.join(lacking)} (it has "
                         f"{', '.join(map(str, frame.columns[:8]))}{', ...' if len(frame.columns) > 8 else ''})")
    if frame.empty:
        raise InputError(f"{what}: it has no rows")
    for col in _NUMERIC:
        bad = pd.to_numeric(frame[col], errors="coerce").isna()
        if bad.any():
            row = int(bad.to_numpy().argmax())
            raise InputError(f"{what}: row {row + 2}, field {col}: {frame[col].iloc[row]!r} is not a number")
    return frame.astype({c: float for c in _NUMERIC[1:]})
