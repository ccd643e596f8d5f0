"""The data contract of a perturbed point item: ``PointItem.meta["perturbation"]`` read and checked by
:func:`verdictlab.core.items.perturbation_of`, kept through the run store."""

from __future__ import annotations

import pytest

from verdictlab.core.items import ItemError, Perturbation, PointItem, perturbation_of
from verdictlab.core.vocab import CurationStatus, PerturbationClass


def _item(meta: dict, label="PASS") -> PointItem:
    return PointItem(item_id="q1~pad", dataset="d", question="Q?", response="R.", label=label, meta=meta)


def test_fields_and_which_cases_count():
    det = Perturbation.model_validate({"source_id": 7, "kind": "format.whitespace", "class": "preserving",
                                       "origin": "deterministic"})
    assert (det.source_id, det.perturbation_class, det.status) == ("7", PerturbationClass.PRESERVING,
                                                                   CurationStatus.GENERATED)
    assert det.counts()                                   # a rule wrote it: counts as generated
    flip = {"source_id": "q1", "kind": "label_flip", "class": "changing", "origin": "model", "source_label": "PASS"}
    assert not Perturbation.model_validate(flip).counts()                     # generated, not curated
    assert Perturbation.model_validate({**flip, "status": "accepted"}).counts()
    for status in ("rejected", "edited"):
        assert not Perturbation.model_validate({**flip, "status": status}).counts()
    assert det.as_meta() == {"source_id": "7", "kind": "format.whitespace", "class": "preserving",
                             "origin": "deterministic", "status": "generated"}


def test_unperturbed_item_has_none_and_a_bad_one_names_item_and_field():
    assert perturbation_of(_item({})) is None
    with pytest.raises(ItemError, match=r"item d/q1~pad.*meta.perturbation.class"):
        perturbation_of(_item({"perturbation": {"source_id": "q1", "kind": "paraphrase", "class": "neutral",
                                                "origin": "model"}}))
    with pytest.raises(ItemError, match=r"meta.perturbation.kind"):
        perturbation_of(_item({"perturbation": {"source_id": "q1", "kind": "Not A Kind", "class": "changing",
                                                "origin": "model"}}))
    with pytest.raises(ItemError, match=r"meta.perturbation.origin"):
        perturbation_of(_item({"perturbation": {"source_id": "q1", "kind": "paraphrase", "class": "changing"}}))


def test_contract_survives_the_store(tmp_path):
    from verdictlab.store import RunStore

    meta = {"perturbation": Perturbation.model_validate(
        {"source_id": "q1", "kind": "verbosity.pad", "class": "preserving", "origin": "deterministic",
         "template": "pad-200"}).as_meta()}
    with RunStore(tmp_path, create=True) as store:
        store.write_items([_item(meta)])
        (back,) = store.items()
    p = perturbation_of(back)
    assert p is not None and p.kind == "verbosity.pad" and p.counts()
    assert back.meta["perturbation"]["template"] == "pad-200"     # generator's extra fields are kept
