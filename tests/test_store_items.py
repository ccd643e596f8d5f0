"""The store's items read back (``RunStore.items`` / ``RunStore.items_frame``): the objects pydantic validates from
each stored row, and a frame of their ``model_dump`` s, whichever way they are built (pairs column by column,
with or without the objects passed in)."""

from __future__ import annotations

import gc
import json
from pathlib import Path

import pandas as pd

from verdictlab.core.items import PairItem, PointItem, Vote
from verdictlab.store import RunStore


def _pairs() -> list[PairItem]:
    return [
        PairItem(item_id="p1", dataset="d", question="q1", response_a="a", response_b="b", label="A"),
        PairItem(item_id="p2", dataset="d", question="q2", response_a="a2", response_b="b2", label=None,
                 category="coding", meta={"src": [1, {"x": None}], "n": 2.5}, system_a="m1", system_b="m2",
                 votes=(Vote(annotator="h1", vote="B"), Vote(annotator="h2", vote="tie")), label_rule="majority"),
        PairItem(item_id="p3", dataset="e", question="", response_a="", response_b="x", label="tie", reference="r"),
    ]


def _reference_frame(items: list[PairItem | PointItem]) -> pd.DataFrame:
    """How the frame was built before it was built column by column."""
    return pd.DataFrame.from_records([{**it.model_dump(), "kind": "pair" if isinstance(it, PairItem) else "point"}
                                      for it in items])


def _stored_rows(st: RunStore) -> list[tuple[str, str]]:
    return list(st.conn.execute("SELECT kind, data FROM items"))


def test_pair_items_and_their_frame_equal_a_validation_and_dump_per_row(tmp_path: Path) -> None:
    st = RunStore(tmp_path / "run")
    st.write_items(_pairs())
    # an item of an earlier verdictlab: its systems under model_a / model_b
    old = {"item_id": "p0", "dataset": "d", "question": "q", "response_a": "a", "response_b": "b", "label": "b",
           "model_a": "old-a", "model_b": None, "system_b": "new-b"}
    st.conn.execute("INSERT INTO items(dataset, item_id, kind, data) VALUES ('d', 'p0', 'pair', ?)", (json.dumps(old),))
    expected = [PairItem.model_validate_json(data) for _, data in _stored_rows(st)]
    items = st.items()
    assert items == expected and [it.model_fields_set for it in items] == [it.model_fields_set for it in expected]
    assert any(it.item_id == "p0" and it.system_a == "old-a" and it.system_b == "new-b" for it in items)
    assert st.items("e") == [it for it in expected if it.dataset == "e"]
    reference = _reference_frame(list(expected))
    for frame in (st.items_frame(), st.items_frame(items)):
        pd.testing.assert_frame_equal(frame, reference, check_exact=True)
        assert list(frame["votes"]) == list(reference["votes"]) and list(frame["meta"]) == list(reference["meta"])
        # the frame holds copies of the items' containers (as model_dump gives them), never the items' own
        assert all(m is not it.meta for m, it in zip(frame["meta"], items, strict=True))
    assert gc.isenabled()
    st.close()


def test_mixed_and_empty_stores_give_the_frame_of_the_dumps(tmp_path: Path) -> None:
    st = RunStore(tmp_path / "run")
    assert st.items() == [] and st.items_frame().equals(_reference_frame([]))
    point = PointItem(item_id="t1", dataset="d", question="q", response="r", label=3, scale=(1, 5), meta={"k": "v"})
    st.write_items([*_pairs(), point])
    items = st.items()
    assert items == [PairItem.model_validate_json(d) if k == "pair" else PointItem.model_validate_json(d)
                     for k, d in _stored_rows(st)]
    pd.testing.assert_frame_equal(st.items_frame(items), _reference_frame(items), check_exact=True)
    st.close()
