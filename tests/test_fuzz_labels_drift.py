"""A seeded, time-bounded fuzz of the human-label reader, its join on the full item key, and the drift
pairing -- as tests/test_fuzz_inputs.py fuzzes the JSONL and CSV dataset readers.  Every input either
reads exactly what it says or fails with one clear line naming the file (a HumanLabelError / ItemError,
no newline -- or one line per problem after it when a file has several, tests/_clear_errors.py); the join never labels an item the file does not name; drift never pairs an item whose
content differs between the runs."""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from _clear_errors import one_clear_line as _one_clear_line  # noqa: E402
from verdictlab.analyses.human_labels import human_label_keys  # noqa: E402
from verdictlab.core.items import ItemError, PairItem  # noqa: E402
from verdictlab.core.policy import FigurePolicy  # noqa: E402
from verdictlab.datasets.human_labels import (  # noqa: E402
    HumanLabel,
    HumanLabelError,
    HumanLabels,
    read_human_labels,
)
from verdictlab.workflows.drift import DriftError, DriftItemsError, DriftRun, drift_pair_report  # noqa: E402

FUZZ = settings(derandomize=True, max_examples=int(os.environ.get("VERDICTLAB_FUZZ_EXAMPLES", "60")), deadline=None,
                database=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
pytestmark = pytest.mark.timeout(120)

TEXT = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12)
SPICY = st.sampled_from(["", "a,b", 'say "hi"', "line\nbreak", "\u2028", "[/b]", "=1+1", "\x00", " pad ",
                         "tab\there", "é", "NaN", "null", "0", "d1", "x;y"])
ID = st.one_of(TEXT, SPICY)
WORDS = {"a": "A", "b": "B", "tie": "tie", "pass": "PASS", "fail": "FAIL", "unknown": "UNKNOWN"}
LABEL = st.one_of(st.sampled_from(["A", "b", "Tie", "PASS", "fail", "UNKNOWN", "", " a "]), TEXT)
DATASET = st.one_of(st.none(), st.sampled_from(["d1", "d2"]), TEXT)


def _tmp(name: str) -> Path:
    return Path(tempfile.mkdtemp(prefix="vl-fuzz-")) / name




def _expected(rows: list[tuple[str, str, str | None]]) -> list[tuple[str, str | None, str | None]] | None:
    """What a correct reader returns for ``(item_id, label, dataset)`` cells, or None when it must refuse
    (an empty id, a label outside the words, one item labelled twice differently, no label at all)."""
    out, seen = [], {}
    for iid, label, ds in rows:
        word = WORDS.get(label.strip().lower()) if label.strip() else None
        if not iid.strip() or (label.strip() and word is None):
            return None
        key = (ds if ds and ds.strip() else None, iid)
        if seen.setdefault(key, word) != word:
            return None
        out.append((iid, word, key[0]))
    return out if out and any(w is not None for _, w, _ in out) else None


ROWS = st.lists(st.tuples(ID, LABEL, DATASET), min_size=1, max_size=6)


def _check(path: Path, rows: list[tuple[str, str, str | None]]) -> None:
    want = _expected(rows)
    try:
        got = read_human_labels(path)
    except HumanLabelError as exc:
        _one_clear_line(exc, path)
        return
    assert want is not None, (rows, got)
    assert [(r.item_id, r.label, r.dataset) for r in got.rows] == want


@FUZZ
@given(rows=ROWS)
def test_jsonl_label_files_read_exactly_or_fail_with_one_line(rows: list[tuple[str, str, str | None]]) -> None:
    p = _tmp("labels.jsonl")
    p.write_text("".join(json.dumps({"item_id": i, "label": lab, **({"dataset": ds} if ds is not None else {})},
                                    ensure_ascii=False) + "\n" for i, lab, ds in rows), encoding="utf-8")
    _check(p, rows)


@FUZZ
@given(rows=ROWS, with_dataset=st.booleans())
def test_csv_label_files_read_exactly_or_fail_with_one_line(rows: list[tuple[str, str, str | None]],
                                                            with_dataset: bool) -> None:
    p = _tmp("labels.csv")
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["item_id", "label", "dataset"] if with_dataset else ["item_id", "label"])
    for i, lab, ds in rows:
        w.writerow([i, lab, ds or ""] if with_dataset else [i, lab])
    p.write_text(buf.getvalue(), encoding="utf-8", newline="")
    # a CSV cell is text: '' is no value; without the column there is no dataset
    cells = [(i, lab, (ds or None) if with_dataset else None) for i, lab, ds in rows]
    if any("\x00" in c for i, lab, _ in cells for c in (i, lab)) or any("\r" in i for i, _, _ in cells):
        try:                          # NUL / a lone CR: the csv module may refuse the line -- never garble it
            read_human_labels(p)
        except HumanLabelError as exc:
            _one_clear_line(exc, p)
        return
    _check(p, cells)


@FUZZ
@given(rows=ROWS, cut=st.integers(0, 400), junk=st.binary(max_size=6))
def test_mutated_label_files_read_or_fail_with_one_line(rows: list[tuple[str, str, str | None]], cut: int,
                                                        junk: bytes) -> None:
    for name in ("labels.jsonl", "labels.csv"):
        p = _tmp(name)
        good = "".join(json.dumps({"item_id": i, "label": lab}) + "\n" for i, lab, _ in rows).encode()
        if name.endswith(".csv"):
            buf = io.StringIO()
            csv.writer(buf, lineterminator="\n").writerows([["item_id", "label"], *[[i, lab] for i, lab, _ in rows]])
            good = buf.getvalue().encode()
        p.write_bytes(good[:cut] + junk + good[cut:])
        try:
            read_human_labels(p)
        except HumanLabelError as exc:
            _one_clear_line(exc, p)


# -- the join on the full item key ----------------------------------------------------------------------------
JUDGED = st.dictionaries(st.sampled_from(["d1", "d2", "d3"]), st.sets(st.sampled_from(["0", "1", "2", "3"]),
                                                                        min_size=1), min_size=1)
LABEL_ROWS = st.lists(st.tuples(st.sampled_from(["0", "1", "2", "3", "9"]), st.sampled_from(["A", "B", "PASS"]),
                                st.sampled_from([None, "d1", "d2", "d3"])), min_size=1, max_size=6)


@FUZZ
@given(judged=JUDGED, rows=LABEL_ROWS)
def test_the_join_labels_only_the_items_a_row_names(judged: dict[str, set[str]],
                                                    rows: list[tuple[str, str, str | None]]) -> None:
    frame = pd.DataFrame([{"dataset": ds, "item_id": i, "verdict": "A", "label": None}
                          for ds, ids in judged.items() for i in sorted(ids)])
    labels = HumanLabels("f.csv", tuple(HumanLabel(k + 2, i, lab, ds) for k, (i, lab, ds) in enumerate(rows)))
    try:
        got = human_label_keys(frame, labels)
    except ItemError as exc:
        _one_clear_line(exc, Path("f.csv"))
        return
    for (ds, iid), lab in got.items():
        assert iid in judged[ds] and lab in ("A", "B")
        named = [r for r in labels.rows if r.item_id == iid and r.dataset in (None, ds)]
        assert named and all(r.label == lab for r in named)
        for r in named:     # a row without a dataset names only an id judged in one dataset
            assert r.dataset is not None or [d for d, ids in judged.items() if iid in ids] == [ds]


# -- drift pairing ------------------------------------------------------------------------------------------
def _items(n: int, edits: dict[int, str]) -> list[PairItem]:
    out = []
    for i in range(n):
        fields: dict[str, Any] = {"question": f"q{i}", "response_a": f"a{i}", "response_b": f"b{i}", "label": "A"}
        what = edits.get(i)
        if what == "label":
            fields["label"] = "B"
        elif what is not None:
            fields[what] = fields[what] + " (edited)"
        out.append(PairItem(item_id=f"x{i}", dataset="anchor", **fields))
    return out


COLUMNS = ["judge", "dataset", "item_id", "protocol", "order", "temperature", "rep", "step", "label", "verdict",
           "parse_status"]


def _side(name: str, items: list[PairItem], verdicts: list[str], keep: set[int]) -> DriftRun:
    rows = [{"judge": "sim:j", "dataset": it.dataset, "item_id": it.item_id, "protocol": "direct", "order": o,
             "temperature": 0.0, "rep": 0, "step": "", "label": it.label, "verdict": verdicts[k % len(verdicts)],
             "parse_status": "ok"} for k, it in enumerate(items) if k in keep for o in ("AB", "BA")]
    return DriftRun(name, pd.DataFrame(rows, columns=COLUMNS), tuple(items))


@FUZZ
@given(n=st.integers(2, 12), edits=st.dictionaries(st.integers(0, 11), st.sampled_from(
    ["question", "response_a", "response_b", "label"]), max_size=4),
       verdicts=st.lists(st.sampled_from(["A", "B"]), min_size=1, max_size=5),
       keep_a=st.sets(st.integers(0, 11), min_size=1), keep_b=st.sets(st.integers(0, 11), min_size=1),
       exclude=st.booleans())
def test_drift_never_pairs_an_item_whose_content_differs(n: int, edits: dict[int, str], verdicts: list[str],
                                                        keep_a: set[int], keep_b: set[int], exclude: bool) -> None:
    a = _side("a", _items(n, {}), verdicts, keep_a)
    b = _side("b", _items(n, edits), verdicts[::-1], keep_b)
    shared = {i for i in keep_a & keep_b if i < n}
    changed = {i for i in shared if i in edits}
    try:
        rep = drift_pair_report([a, b], policy=FigurePolicy(n_bootstrap=5), changed_items="exclude" if exclude else "refuse")
    except DriftItemsError as exc:
        _one_clear_line(exc, Path("b"))
        assert not exclude and changed and any(f"'x{i}'" in str(exc) for i in changed)
        return
    except DriftError as exc:          # nothing left to compare: said in one line
        assert "\n" not in str(exc) and not (shared - changed)
        return
    assert not changed or exclude
    assert {d["item_id"] for d in rep["item_check"]["excluded"]} == {f"x{i}" for i in changed}
    (cell,) = rep["cells"]
    assert cell["n_units"] == 2 * len(shared - changed)        # both orders of every unchanged shared item
