"""Helpers shared by the analyses that derive judgment rows (remedies, the FLASK aggregate): a leaf
module, so the analyses import it and never each other in a circle."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from ..design import trial_id
from ..judgment import JUDGMENT_COLUMN_NAMES, judgment_frame
from ..vocab import DEFAULT_DECODING, VERDICTS


def _prep(judgments: pd.DataFrame) -> pd.DataFrame:
    df = judgments.copy()
    for c in JUDGMENT_COLUMN_NAMES:
        if c not in df.columns:
            df[c] = None
    df["step"] = df["step"].fillna("").astype(str)
    df["decoding"] = df["decoding"].fillna(DEFAULT_DECODING).astype(str)
    return df


def _finish(df: pd.DataFrame) -> pd.DataFrame:
    if len(df):
        df["trial_id"] = [trial_id(j, d, i, p, o, t, r, s, decoding=dec) for j, d, i, p, o, t, r, s, dec in
                          zip(df["judge"], df["dataset"], df["item_id"], df["protocol"], df["order"],
                              df["temperature"], df["rep"], df["step"], df["decoding"], strict=True)]
    return judgment_frame(df).reset_index(drop=True)


def _empty() -> pd.DataFrame:
    return judgment_frame(pd.DataFrame({c: pd.Series(dtype=object) for c in JUDGMENT_COLUMN_NAMES}))


def pointwise_mask(judgments: pd.DataFrame, items: Sequence[object] | None = None) -> pd.Series:
    """True for rows of pointwise items (rubric / graded verdicts), which pairwise statistics such as
    :func:`verdictlab.stats.reliability` must not see.  With ``items`` (``RunStore.items()``) the item
    kind decides; without, a verdict outside A / B / tie / null does."""
    if items is not None:
        from ..items import PointItem

        point = {(it.dataset, str(it.item_id)) for it in items if isinstance(it, PointItem)}
        if point:
            return pd.Series([(d, str(i)) in point for d, i in zip(judgments["dataset"], judgments["item_id"],
                                                                   strict=True)], index=judgments.index)
        return pd.Series(False, index=judgments.index)
    v = judgments["verdict"]
    return v.notna() & ~v.isin(VERDICTS)
