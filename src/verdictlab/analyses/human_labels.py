"""Human labels: what the judge's verdicts say once a few human labels correct them.

Per cell (judge x protocol x dataset x temperature) and per quantity:

* ``win_rate_A`` (pair items): the share of pairs where humans prefer response A.  Human outcome y = 1 for
  label A, 0 for B; a human ``tie`` is neither and is left out (counted).
* ``accuracy`` (PASS/FAIL point items, items with correct answers): the share of responses humans mark
  PASS -- the accuracy of the system that wrote them.  UNKNOWN is left out like a tie.

The judge's prediction for an item is its P(A) (the ``p_a`` column, mean over orders and repetitions)
where the judge gives one, else the vote share across orders and repetitions (A = 1, B = 0, tie = 1/2;
PASS = 1, FAIL = 0, UNKNOWN = 1/2).  For judges that give P(A) the vote share is calibrated too
(``vote_calibration``, column ``ece_votes``).  Unparsed votes never enter the share; an item with no parsed vote is
left out under unparsed ``exclude`` and predicted 1/2 (no decision) under unparsed ``wrong``.

Items with a human label are the labelled set, the others the unlabelled set.  For each cell: the
judge-only estimate (judge predictions on every item taken as truth), the human-only estimate and the
PPI++ estimate (:func:`verdictlab.stats.ppi_mean`), calibration of the judge's top-label confidence
(max(p, 1 - p); correct = its verdict equals the human label; items predicted exactly 1/2 have no top
label and are left out of calibration, counted) before and after cross-fitted Platt and isotonic
recalibration, and the selective-evaluation threshold with its guarantee.  Every undefined
figure is None with a reason.  ``keep_labels=K`` keeps K human labels per cell (seeded) and hides the
rest: a what-if for "had I labelled only K items", with the all-label human estimate as ``reference``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..core.policy import DEFAULT_POLICY, FigurePolicy
from ..core.vocab import (
    CELL_KEY,
    DECISIVE,
    VERDICTS,
    Verdict,
)
from ..errors import InputError
from ..stats import with_cell_columns
from ..stats.calibration import Calibration, Recalibration, calibration, recalibrations
from ..stats.label_validation import (
    PAIR_VOTE_VALUES,
    POINT_VOTE_VALUES,
    group_kinds,
    item_predictions,
    label_split,
    top_label,
)
from ..stats.ppi import LabelBudget, MeanEstimate, classical_mean, judge_mean, label_budget, ppi_mean
from ..stats.selective import SelectiveResult, selective_threshold

if TYPE_CHECKING:
    from ..core.items import Problems
    from ..datasets.human_labels import HumanLabel, HumanLabels

__all__ = ["CELL", "KEY", "CellBudget", "CellValidation", "budget_cells", "apply_human_labels", "cell_notes", "human_label_keys", "human_label_rows", "reliability_rows",
           "reliability_figure", "validate_cells", "ITEM_KEY",
           "HUMAN_LABEL_COLUMNS", "RELIABILITY_BIN_COLUMNS"]

CELL: tuple[str, ...] = CELL_KEY
#: the key of a result: the cell, its decoding ('free' unless constrained) and its step ('' for one-call
#: protocols; rubric criteria of point items keep theirs, pair step rows are left out)
KEY: tuple[str, ...] = (*CELL, "step")

_PAIR_OUTCOME = dict(zip(DECISIVE, (1.0, 0.0), strict=True))
_POINT_OUTCOME = {"PASS": 1.0, "FAIL": 0.0}


@dataclass(frozen=True)
class CellValidation:
    """Everything ``verdictlab validate`` shows for one cell and quantity."""

    key: tuple[Any, ...]
    quantity: str
    source: str
    n_items: int
    n_labelled: int
    n_unlabelled: int
    n_excluded_labels: int
    n_no_verdict: int
    judge: MeanEstimate
    human: MeanEstimate
    ppi: MeanEstimate
    ppi_classic: MeanEstimate
    reference: MeanEstimate | None
    calibration: Calibration
    platt: Recalibration
    isotonic: Recalibration
    selective: SelectiveResult
    notes: tuple[str, ...] = ()
    #: for judges that give P(A): calibration of the vote share across orders and repetitions too
    vote_calibration: Calibration | None = None

    @property
    def cell(self) -> dict[str, Any]:
        return _cell_dict(self.key)


def _cell_dict(key: tuple[Any, ...]) -> dict[str, Any]:
    return dict(zip(KEY, key, strict=True))


#: what a cell's figures read of its rows (:func:`_item_frames`, :func:`_kinds`) beside the key
_ROW_COLUMNS: tuple[str, ...] = ("item_id", "verdict", "p_a", "label")


def _keyed(judgments: pd.DataFrame) -> pd.DataFrame:
    """The key and the columns a cell reads of the judgments, with ``decoding`` (free when absent:
    :func:`verdictlab.stats.with_cell_columns`) and ``step`` ('' when absent) filled in."""
    df = with_cell_columns(judgments[[c for c in (*KEY, *_ROW_COLUMNS) if c in judgments.columns]])
    df["decoding"] = _as_str(df["decoding"])
    df["step"] = _as_str(df["step"].fillna("")) if "step" in df else ""
    return df


def _as_str(col: pd.Series) -> pd.Series:
    """``col.astype(str)``; a categorical without a missing value as its categories' texts taken by its
    codes -- the same strings, the same dtype -- not one string made per row: the two columns of 5.4M
    rows cost 0.6 s of CPU that way, of human_labels' 8-11 s."""
    if isinstance(col.dtype, pd.CategoricalDtype) and len(col) and not col.isna().any():
        texts = pd.Series(col.dtype.categories, dtype=object).astype(str)
        return pd.Series(texts.array.take(col.cat.codes.to_numpy()), index=col.index, name=col.name)
    return col.astype(str)


def _cell_items(judgments: pd.DataFrame, policy: FigurePolicy) -> list[tuple[tuple[Any, ...], str, pd.DataFrame, int]]:
    """``(key, kind, items, n_none)`` per result -- pair rows of one-call protocols and PASS/FAIL point
    rows -- with the cell's item frame (:func:`_item_frames`), every cell from one grouping of the rows."""
    df = _keyed(judgments)
    if df.empty:
        return []
    gid = df.groupby(list(KEY), sort=True, dropna=False).ngroup().to_numpy(dtype=np.int64)
    first_rows = np.unique(gid, return_index=True)[1]
    keys = [tuple(k) for k in df.iloc[first_rows][list(KEY)].itertuples(index=False, name=None)]
    kinds = _kinds(df, gid, len(keys))
    keep = np.array([kind is not None and not (kind == "pair" and key[-1] != "")
                     for key, kind in zip(keys, kinds, strict=True)], dtype=bool)
    if not keep.any():
        return []
    frames = _item_frames(df, gid, np.array(kinds, dtype=object), keep, policy)
    return [(keys[g], str(kinds[g]), items, n_none) for g, (items, n_none) in frames.items()]


def _normalise_point(value: Any) -> str | None:
    from ..protocols.rubric import normalise_result

    return normalise_result(value)


def _per_value(values: pd.Series, fn: Any, missing: Any, dtype: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(codes, table)``: ``table[codes]`` is ``fn`` of each row's value, ``fn`` called once per distinct
    value; a missing value has code -1 (the table's last entry, ``missing``)."""
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    return codes, np.array([fn(u) for u in uniques] + [missing], dtype=dtype)


def _kinds(df: pd.DataFrame, gid: np.ndarray, n_groups: int) -> list[str | None]:
    """The kind of every group of rows (``gid``): ``pair`` when its parsed verdicts are all A / B / tie,
    ``point`` when they all read as PASS / FAIL / UNKNOWN, None (left out: graded verdicts) otherwise;
    a group without a parsed verdict takes the kind of its gold labels (None without any)."""
    v, v_pair = _per_value(df["verdict"], lambda u: u in VERDICTS, False, bool)
    _, v_point = _per_value(df["verdict"], lambda u: _normalise_point(u) is not None, False, bool)
    lab, l_pair = _per_value(df["label"], lambda u: u in VERDICTS, False, bool)
    return group_kinds(gid, n_groups, voted=v >= 0, pair_vote=v_pair[v], point_vote=v_point[v], labelled=lab >= 0,
                       pair_label=l_pair[lab])


def _item_codes(item_id: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """``(codes, texts)``: each row's item id as text (``texts[codes]``), the codes in the order of the
    texts -- the groups and the order of a groupby on ``item_id.astype(str)`` -- found per distinct id, not
    per row; a missing text (code -1) is no item."""
    codes, uniques = pd.factorize(item_id, use_na_sentinel=False)
    text = pd.Series(np.asarray(uniques, dtype=object)).astype(str)
    text_codes, texts = pd.factorize(text, sort=True, use_na_sentinel=True)
    return np.append(text_codes, -1)[codes], np.asarray(texts, dtype=object)


def _item_frames(df: pd.DataFrame, gid: np.ndarray, kinds: np.ndarray, keep: np.ndarray,
                 policy: FigurePolicy) -> dict[int, tuple[pd.DataFrame, int]]:
    """Per kept group: one row per item -- ``p`` (judge prediction), ``votes``, ``from_p_a`` and
    ``label`` -- and the count of items without any parsed vote that were left out; all groups from one
    ``groupby`` over (group, item), so each item's means sum its rows in the same order as alone."""
    rows = keep[gid]
    is_pair = kinds[gid] == "pair"
    v, pair_vote = _per_value(df["verdict"], lambda u: PAIR_VOTE_VALUES.get(u, np.nan), np.nan, float)
    _, point_vote = _per_value(df["verdict"], lambda u: POINT_VOTE_VALUES.get(_normalise_point(u) or "", np.nan),
                               np.nan, float)
    votes = np.where(is_pair, pair_vote[v], point_vote[v])
    p_a = pd.to_numeric(df["p_a"], errors="coerce").to_numpy(dtype=float) if "p_a" in df else np.full(len(df), np.nan)
    item, item_text = _item_codes(df["item_id"])
    rows &= item >= 0
    items, n_none = item_predictions(gid[rows], item[rows], votes[rows], np.where(is_pair, p_a, np.nan)[rows],
                                     df["label"].to_numpy()[rows], n_groups=len(keep), policy=policy)
    group_of = items.index.get_level_values("_g").to_numpy()
    items.index = pd.Index(item_text[items.index.get_level_values("_item").to_numpy()], name="item_id")
    bounds = np.searchsorted(group_of, np.arange(len(keep) + 1))
    return {int(k): (items.iloc[bounds[k]:bounds[k + 1]], int(n_none[k])) for k in np.flatnonzero(keep)}


def _outcomes(labels: pd.Series, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """Human outcome per item (NaN = unlabelled) and a mask of labels that are neither outcome (tie,
    UNKNOWN)."""
    if kind == "pair":
        norm = labels.where(labels.notna(), None)
        odd = norm.notna() & ~norm.isin(VERDICTS)
        if odd.any():
            raise InputError(f"item {labels.index[odd.to_numpy()][0]!r}: human label {norm[odd].iloc[0]!r} is not "
                             "a pair label (A, B or tie)")
        y = norm.map(_PAIR_OUTCOME)
    else:
        norm = labels.map(_normalise_point)
        y = norm.map(_POINT_OUTCOME)
    y_arr = y.astype(float).to_numpy()
    excluded = norm.notna().to_numpy() & np.isnan(y_arr)
    return y_arr, excluded


def _cell(key: tuple[Any, ...], kind: str, items: pd.DataFrame, n_none: int, *, policy: FigurePolicy,
          target: float, delta: float, keep_labels: int | None, n_bins: int) -> CellValidation:
    confidence, seed = policy.confidence, policy.seed
    y_all, excluded = _outcomes(items["label"], kind)
    p_all = items["p"].to_numpy(dtype=float)
    split = label_split(y_all, excluded, keep_labels=keep_labels, seed=seed)
    labelled, unlabelled = split.labelled, split.unlabelled
    reference = None
    notes: list[str] = []
    if split.n_hidden:
        reference = classical_mean(y_all[~np.isnan(y_all)], confidence=confidence)
        notes.append(f"what-if: {keep_labels} of {split.n_labels} human labels kept, {split.n_hidden} hidden")
    if labelled.any() and not unlabelled.any():
        notes.append("every judged item has a human label: PPI++ needs items without one "
                     "(validate --keep-labels K shows what K labels would give)")
    if excluded.any():
        word = Verdict.TIE.value if kind == "pair" else "UNKNOWN"
        notes.append(f"{split.n_excluded} human {word} label(s) left out: neither outcome")
    if n_none:
        notes.append(f"{n_none} item(s) without a parsed verdict "
                     + ("left out" if policy.drops_unparsed else "predicted 1/2 (unparsed = wrong)"))
    y, f, fu = y_all[labelled], p_all[labelled], p_all[unlabelled]
    top = top_label(f, y)
    conf, correct, decided = top.confidence, top.correct, top.decided
    if top.n_undecided:
        notes.append(f"{top.n_undecided} labelled item(s) with prediction exactly 1/2 (no top label) "
                     "left out of calibration; counted as disagreeing in selective evaluation")
    platt, isotonic = recalibrations(conf[decided], correct[decided], methods=("platt", "isotonic"), seed=seed,
                                     n_bins=n_bins)
    return CellValidation(
        key=key, quantity="win_rate_A" if kind == "pair" else "accuracy",
        source="p_a" if bool(items["from_p_a"].all()) and len(items) else
        ("votes" if not bool(items["from_p_a"].any()) else "p_a+votes"),
        n_items=len(items), n_labelled=split.n_labelled, n_unlabelled=split.n_unlabelled,
        n_excluded_labels=split.n_excluded, n_no_verdict=n_none,
        judge=judge_mean(p_all[~excluded], confidence=confidence),
        human=classical_mean(y, confidence=confidence),
        ppi=ppi_mean(y, f, fu, confidence=confidence),
        ppi_classic=ppi_mean(y, f, fu, confidence=confidence, power_tuning=False),
        reference=reference,
        calibration=calibration(conf[decided], correct[decided], n_bins=n_bins),
        platt=platt, isotonic=isotonic,
        selective=selective_threshold(conf, correct, target=target, delta=delta, seed=seed),
        notes=tuple(notes),
        vote_calibration=_vote_calibration(items, labelled, y, n_bins) if items["from_p_a"].any() else None)


def _vote_calibration(items: pd.DataFrame, labelled: np.ndarray, y: np.ndarray, n_bins: int) -> Calibration:
    """Calibration of the vote share (top label) on the labelled items that have parsed votes."""
    votes = items["votes"].to_numpy(dtype=float)[labelled]
    ok = ~np.isnan(votes) & (votes != 0.5)
    top = top_label(votes[ok], y[ok])
    return calibration(top.confidence, top.correct, n_bins=n_bins)


#: the full key of an item: dataset and id (ids repeat across datasets, e.g. two benchmarks' "0")
ITEM_KEY: tuple[str, str] = ("dataset", "item_id")


def _item_keys(judgments: pd.DataFrame) -> pd.Series:
    """``(dataset, item_id)`` per judgment row, the id as text."""
    return pd.Series(list(zip(judgments["dataset"].astype(str), judgments["item_id"].astype(str), strict=True)),
                     index=judgments.index, dtype=object)


def _dataset_kinds(judgments: pd.DataFrame) -> dict[str, str]:
    """``{dataset: "pair" | "point"}`` from the verdicts judged on it (else its gold labels): a dataset
    holds pairs or point items, never both.  Datasets without any verdict or label are left out."""
    from ..protocols.rubric import normalise_result

    out: dict[str, str] = {}
    for ds, rows in judgments.groupby(judgments["dataset"].astype(str), sort=False):
        for col in ("verdict", "label"):
            values = rows[col].dropna() if col in rows else pd.Series(dtype=object)
            if values.isin(VERDICTS).any():
                out[str(ds)] = "pair"
                break
            if values.map(normalise_result).notna().any():
                out[str(ds)] = "point"
                break
    return out


def _resolve(row: HumanLabel, by_id: Mapping[str, list[str]], labels: HumanLabels) -> tuple[str, str] | None:
    """The judged item a label row names (None: no judged item); an id without a dataset that names
    items of several datasets is refused."""
    from ..core.items import ItemError

    if row.dataset is not None:
        return (row.dataset, row.item_id) if row.dataset in by_id.get(row.item_id, ()) else None
    datasets = by_id.get(row.item_id, [])
    if len(datasets) > 1:
        shown = ", ".join(repr(d) for d in datasets[:3]) + (" ..." if len(datasets) > 3 else "")
        raise ItemError(f"item_id {row.item_id!r} names items of {len(datasets)} datasets in this run ({shown}); "
                        "add a 'dataset' column that says which (or name yours: --map dataset=COLUMN)",
                        path=labels.path, row=row.row, field=labels.column("item_id"))
    return (datasets[0], row.item_id) if datasets else None


def _check_kind(row: HumanLabel, key: tuple[str, str], kinds: dict[str, str], labels: HumanLabels) -> None:
    """A pair label on a point item, or a PASS / FAIL label on a pair, is refused with the row."""
    from ..core.items import ItemError

    kind = kinds.setdefault(key[0], row.kind) if row.kind is not None else None
    if kind is not None and row.kind != kind:
        want = "A, B or tie" if kind == "pair" else "PASS, FAIL or UNKNOWN"
        raise ItemError(f"{row.label!r} does not label a {'pair' if kind == 'pair' else 'point item'}: item "
                        f"{key[1]!r} of dataset {key[0]!r} takes {want}", path=labels.path, row=row.row,
                        field=labels.column("label"))


def human_label_keys(judgments: pd.DataFrame, labels: HumanLabels, *,
                     problems: Problems | None = None) -> dict[tuple[str, str], str | None]:
    """``{(dataset, item_id): label}`` for the judged items a label file names
    (:class:`verdictlab.datasets.human_labels.HumanLabels`), joined on the full item key.

    A row with a ``dataset`` names that dataset's item; a row without one names the one judged item
    with that id -- an id judged in several datasets is refused (:class:`~verdictlab.core.items.ItemError`
    naming file, row and field), never applied to all of them.  Also refused: rows naming no judged
    item, a label word of the other kind (a PASS label on a pair, A on a point item), and one item given
    two different labels by rows with and without its dataset.  Every problem of the file is listed at
    once (:class:`~verdictlab.core.items.ItemProblems`), each naming the file's column; with ``problems``
    (the reader's, :func:`~verdictlab.datasets.human_labels.read_human_labels`) they are recorded there
    beside the reader's, for the caller to raise, and the rows without a problem are joined."""
    from ..core.items import ItemError, Problems

    mine = problems is None
    problems = Problems(labels.path) if problems is None else problems
    keys = _item_keys(judgments)
    by_id: dict[str, list[str]] = {}
    for ds, iid in sorted(set(keys)):
        by_id.setdefault(iid, []).append(ds)
    kinds = _dataset_kinds(judgments)
    out: dict[tuple[str, str], str | None] = {}
    where: dict[tuple[str, str], int] = {}
    unknown = []
    for row in labels.rows:
        try:
            key = _resolve(row, by_id, labels)
            if key is None:
                unknown.append(row)
                continue
            _check_kind(row, key, kinds, labels)
        except ItemError as exc:
            problems.add(exc)
            continue
        if key in out and out[key] != row.label:
            problems.add(ItemError(f"item {key[1]!r} of dataset {key[0]!r} already labelled {out[key]!r} in row "
                                   f"{where[key]}, now {row.label!r}", path=labels.path, row=row.row,
                                   field=labels.column("label")))
            continue
        out[key], where[key] = row.label, row.row
    if unknown:
        first = unknown[0]
        name = f"{first.item_id!r}" + (f" of dataset {first.dataset!r}" if first.dataset is not None else "")
        rows = ", ".join(str(r.row) for r in unknown[:5]) + (" ..." if len(unknown) > 5 else "")
        problems.add(ItemError(f"{len(unknown)} labelled item(s) not in the run (never judged there; rows {rows}), "
                               f"the first {name}", path=labels.path, row=first.row, field=labels.column("item_id")))
    if mine:
        problems.raise_if_any()
    return out


def apply_human_labels(judgments: pd.DataFrame, human: Mapping[tuple[str, str], Any]) -> pd.DataFrame:
    """The judgments with the ``label`` column replaced by ``human[(dataset, item_id)]`` (None where
    the mapping has no label) -- the full item key, so an id shared by two datasets keeps each dataset's
    own label.  ``human`` is :func:`human_label_keys` of a label file."""
    out = judgments.copy()
    out["label"] = _item_keys(judgments).map(lambda k: human.get(k))
    return out


def validate_cells(judgments: pd.DataFrame, *, policy: FigurePolicy = DEFAULT_POLICY,
                   target: float = 0.9, delta: float = 0.1, keep_labels: int | None = None,
                   n_bins: int = 15) -> list[CellValidation]:
    """One :class:`CellValidation` per cell of pair items (win rate of A) and of PASS/FAIL point items
    (system accuracy).  Rows of multi-call steps (``step`` not empty) and graded verdicts are left out."""
    if judgments.empty or not judgments["label"].notna().any():
        return []  # no human label anywhere: nothing to validate against (and no per-cell work)
    return [_cell(key, kind, items, n_none, policy=policy, target=target, delta=delta, keep_labels=keep_labels,
                  n_bins=n_bins)
            for key, kind, items, n_none in _cell_items(judgments, policy)]


@dataclass(frozen=True)
class CellBudget:
    """The label budget of one cell: the pilot is the cell's labelled items, the pool every judged item."""

    key: tuple[Any, ...]
    quantity: str
    budget: LabelBudget

    @property
    def cell(self) -> dict[str, Any]:
        return _cell_dict(self.key)


def budget_cells(judgments: pd.DataFrame, *, halfwidth: float, policy: FigurePolicy = DEFAULT_POLICY,
                 n_strata: int = 4, pool: int | None = None) -> list[CellBudget]:
    """:func:`verdictlab.stats.label_budget` per cell: pilot = items with a human outcome (their labels and
    the judge's predictions), pool = the judge's predictions on every judged item of the cell (the items
    labels would be drawn from), or with ``pool=N`` just its size (assumed to look like the pilot)."""
    if judgments.empty:
        return []
    out = []
    for key, kind, items, _ in _cell_items(judgments, policy):
        y, excluded = _outcomes(items["label"], kind)
        p = items["p"].to_numpy(dtype=float)
        lab = ~np.isnan(y)
        out.append(CellBudget(key, "win_rate_A" if kind == "pair" else "accuracy",
                              label_budget(y[lab], p[lab], p[~excluded] if pool is None else pool,
                                           halfwidth=halfwidth,
                                           confidence=policy.confidence, n_strata=n_strata)))
    return out


# ---- flat tables for the report ---------------------------------------------------------------------

HUMAN_LABEL_COLUMNS: tuple[str, ...] = (
    *KEY, "quantity", "confidence_source", "n_labelled", "n_unlabelled",
    "judge_only", "judge_only_lo", "judge_only_hi", "human_only", "human_only_lo", "human_only_hi",
    "ppi", "ppi_lo", "ppi_hi", "lam", "ess", "ece", "ece_platt", "ece_isotonic", "brier", "ece_votes",
    "threshold", "coverage", "test_agreement", "test_coverage", "notes")

RELIABILITY_BIN_COLUMNS: tuple[str, ...] = (*KEY, "bin_lo", "bin_hi", "n", "mean_confidence", "accuracy")


def cell_notes(v: CellValidation) -> str:
    parts = list(v.notes)
    for name, reason in (("human-only", v.human.reason), ("PPI++", v.ppi.reason),
                         ("calibration", v.calibration.reason), ("recalibration", v.isotonic.reason),
                         ("selective", v.selective.reason)):
        if reason:
            parts.append(f"{name}: {reason}")
    return "; ".join(parts)


def _after(r: Recalibration) -> float | None:
    return None if r.after is None else r.after.ece


def human_label_rows(cells: list[CellValidation]) -> pd.DataFrame:
    """One row per cell and quantity: the three estimates side by side, calibration, selective result."""
    rows = []
    for v in cells:
        s = v.selective
        rows.append((*v.key, v.quantity, v.source, v.n_labelled, v.n_unlabelled,
                     v.judge.value, v.judge.lo, v.judge.hi, v.human.value, v.human.lo, v.human.hi,
                     v.ppi.value, v.ppi.lo, v.ppi.hi, v.ppi.lam, v.ppi.ess,
                     v.calibration.ece, _after(v.platt), _after(v.isotonic), v.calibration.brier,
                     None if v.vote_calibration is None else v.vote_calibration.ece,
                     s.threshold, s.coverage, s.test_agreement, s.test_coverage, cell_notes(v)))
    frame = pd.DataFrame(rows, columns=list(HUMAN_LABEL_COLUMNS))
    return frame.astype(object).where(frame.notna(), None)


def reliability_rows(cells: list[CellValidation]) -> pd.DataFrame:
    """Reliability-diagram bins per cell (non-empty bins of the judge's top-label confidence)."""
    rows = [(*v.key, b.lo, b.hi, b.n, b.mean_confidence, b.accuracy) for v in cells for b in v.calibration.bins]
    return pd.DataFrame(rows, columns=list(RELIABILITY_BIN_COLUMNS))


def reliability_figure(table: Mapping[str, Any], *, max_panels: int = 12) -> Any:
    """A reliability diagram (matplotlib Figure) from the ``human_labels_reliability`` table as the report
    JSON holds it (``{"columns": [...], "rows": [[...]]}``) or a DataFrame of :func:`reliability_rows`:
    one panel per cell (at most ``max_panels``), accuracy against mean confidence per bin with marker
    area ~ n, and the diagonal a calibrated judge sits on.  Renders only: every number comes from the
    table."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    frame = table if isinstance(table, pd.DataFrame) else pd.DataFrame(table["rows"], columns=table["columns"])
    keys = [c for c in KEY if c in frame.columns]
    groups = list(frame.groupby(keys, sort=True))[:max_panels]
    ncol = min(3, max(len(groups), 1))
    nrow = max(1, -(-len(groups) // ncol))
    fig, axes = plt.subplots(nrow, ncol, figsize=(3.4 * ncol, 3.2 * nrow), squeeze=False,
                             layout="constrained")
    for ax in axes.ravel()[len(groups):]:
        ax.set_visible(False)
    for ax, (key, g) in zip(axes.ravel(), groups, strict=False):
        ax.plot([0, 1], [0, 1], color="#999999", lw=1, ls="--")
        n = g["n"].to_numpy(dtype=float)
        ax.scatter(g["mean_confidence"], g["accuracy"], s=20 + 180 * n / max(n.max(), 1), color="#0072B2",
                   alpha=0.8, edgecolors="white")
        ax.plot(g["mean_confidence"], g["accuracy"], color="#0072B2", lw=1)
        k = dict(zip(keys, key if isinstance(key, tuple) else (key,), strict=True))
        extra = "".join(f" · {k[c]}" for c in ("decoding", "step") if k.get(c) not in (None, "", "free"))
        ax.set_title(f"{str(k['judge'])[:28]}\n{k['protocol']} · {k['dataset']} · T={k['temperature']}{extra}",
                     fontsize=8)
        ax.set_xlim(0.45, 1.02)
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("judge confidence (top label)", fontsize=8)
        ax.set_ylabel("agreement with humans", fontsize=8)
        ax.tick_params(labelsize=7)
    return fig


# ---- registration in the report ----------------------------------------------------------------------

_MEMO: list[tuple[Any, list[CellValidation]]] = []


def _cells_for(inp: Any) -> list[CellValidation]:
    """validate_cells for one report input, computed once for the two registered tables."""
    for seen, cells in _MEMO:
        if seen is inp:
            return cells
    cells = validate_cells(inp.judgments, policy=inp.policy, **inp.extra.get("human_labels", {}))
    _MEMO[:] = [(inp, cells)]
    return cells


def _register() -> None:
    from . import AnalysisInput, register

    @register("human_labels", title="Human labels: judge-only, human-only and PPI++ estimates",
              description=("Per cell: the win rate of A (pairs) or system accuracy (PASS/FAIL items) from the "
                           "judge alone, from human labels alone and from both (PPI++, lam = weight on the "
                           "judge, ess = human labels it is worth); ECE before/after cross-fitted "
                           "recalibration; the lowest confidence threshold that certifies the target agreement "
                           "(coverage = share the judge may decide). Empty = undefined, see notes."),
              order=90)
    def human_labels(inp: AnalysisInput) -> pd.DataFrame | None:
        cells = _cells_for(inp)
        return human_label_rows(cells) if cells else None

    @register("human_labels_reliability", title="Human labels: reliability diagram bins",
              description=("Per cell and confidence bin: the judge's mean top-label confidence and how often "
                           "its verdict matches the human label; a calibrated judge sits on the diagonal."),
              order=91, figure=reliability_figure, figure_title="Human labels: reliability diagram")
    def human_labels_reliability(inp: AnalysisInput) -> pd.DataFrame | None:
        bins = reliability_rows(_cells_for(inp))
        return bins if len(bins) else None


_register()
