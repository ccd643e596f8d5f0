"""The spine of issue 10: domain words (vocab), the judgment row built in one place, the one registry
mechanism and the one secret scrubber."""

from __future__ import annotations

import json
import uuid

import pytest

from verdictlab.core import vocab
from verdictlab.core.design import Trial, trial_id
from verdictlab.core.judgment import (
    JUDGMENT_COLUMN_NAMES,
    JudgmentError,
    from_shown,
    judgment_frame,
    make_judgment,
)
from verdictlab.core.policy import FigurePolicy
from verdictlab.core.redact import REDACTED, redact_text, redact_value
from verdictlab.core.registry import MissingExtraError, Registry
from verdictlab.store import RunStore


def test_swap_is_the_ab_ba_rule_and_its_own_inverse() -> None:
    # order AB shows response_a first: shown terms = canonical terms
    assert [vocab.swap(v, "AB") for v in ("A", "B", "tie", None)] == ["A", "B", "tie", None]
    # order BA shows response_b first: shown A is canonical B and back; tie / no verdict unchanged
    assert [vocab.swap(v, "BA") for v in ("A", "B", "tie", None)] == ["B", "A", "tie", None]
    for order in vocab.ORDERS:
        for v in (*vocab.VERDICTS, None):
            assert vocab.swap(vocab.swap(v, order), order) == v
    with pytest.raises(ValueError, match="order must be 'AB' or 'BA'"):
        vocab.swap("A", "ab")
    assert vocab.first_shown("AB") == "A" and vocab.first_shown("BA") == "B"
    # canonical B shown in order BA was shown first -> the first-shown response won
    assert vocab.canonical_first_won("B", "BA") == 1 and vocab.canonical_first_won("B", "AB") == 0
    assert vocab.canonical_first_won("tie", "BA") is None


def test_enums_are_their_strings() -> None:
    assert vocab.Order.BA == "BA" and vocab.Verdict.TIE == "tie" and vocab.ParseStatus.FALLBACK == "fallback"
    assert json.dumps([vocab.Order.AB, vocab.UnparsedPolicy.WRONG]) == '["AB", "wrong"]'
    assert vocab.PARSE_STATUSES == ("ok", "repaired", "fallback", "failed")
    # the unparsed policy is checked once, where a FigurePolicy is built (tests/test_figure_policy.py)
    with pytest.raises(ValueError, match="unparsed must be one of"):
        FigurePolicy(unparsed="drop")


def test_cell_key() -> None:
    row = {"judge": "j", "protocol": "direct", "dataset": "d", "temperature": 0, "item_id": "x"}
    key = vocab.CellKey.of(row)
    assert key == vocab.CellKey("j", "direct", "d", 0.0, "free")
    # the full cell key includes the decoding mode; a row without one is free decoding
    assert key.as_tuple() == ("j", "direct", "d", 0.0, "free") and vocab.CELL_KEY[-1] == "decoding"
    assert vocab.CellKey.of({**row, "decoding": "constrained"}).as_tuple()[-1] == "constrained"
    assert vocab.CellKey.of({**row, "decoding": float("nan")}).decoding == "free"     # a NULL read from a frame
    assert key.as_dict() == dict(zip(vocab.CELL_KEY, key.as_tuple(), strict=True))
    assert key.label() == "j / direct / d / T=0"


def test_free_trials_keep_their_ids_constrained_ones_differ() -> None:
    # the id of a free trial is the sha1 of the eight pre-decoding key fields, as before issue 17
    import hashlib

    old = hashlib.sha1("\x1f".join(["j", "d", "1", "direct", "AB", "0", "0", ""]).encode()).hexdigest()
    assert Trial("j", "d", "1", "direct", "AB", 0.0, 0).trial_id == old
    assert trial_id("j", "d", "1", "direct", "AB", 0.0, 0, decoding="free") == old
    assert Trial("j", "d", "1", "direct", "AB", 0.0, 0, decoding="constrained").trial_id != old


def test_make_judgment_derives_id_and_first_won_and_validates() -> None:
    j = from_shown(shown_verdict="A", order="BA", judge="j", dataset="d", item_id="1", protocol="direct",
                   temperature=0.0, rep=0, label="B", scores={"x": 1})
    # shown A in order BA = canonical B, and the first-shown response won
    assert (j.verdict, j.shown_first_won, j.parse_status) == ("B", 1, "ok")
    assert j.trial_id == trial_id("j", "d", "1", "direct", "BA", 0.0, 0) and j.scores == '{"x": 1}'
    assert tuple(j.as_dict()) == JUDGMENT_COLUMN_NAMES and j.decoding == "free"
    failed = make_judgment(judge="j", dataset="d", item_id="1", protocol="direct", order="AB", temperature=0.0,
                           rep=1, verdict=None)
    assert (failed.parse_status, failed.shown_first_won) == ("failed", None)
    base = {"judge": "j", "dataset": "d", "item_id": "1", "protocol": "p", "temperature": 0.0, "rep": 0}
    with pytest.raises(JudgmentError, match="verdict must be A, B, tie or null"):
        make_judgment(order="AB", verdict="C", **base)
    with pytest.raises(JudgmentError, match="a failed parse has no verdict"):
        make_judgment(order="AB", verdict="A", parse_status="failed", **base)
    with pytest.raises(JudgmentError, match="unknown judgment column 'colour'"):
        make_judgment(order="AB", verdict="A", colour="red", **base)
    with pytest.raises(JudgmentError, match="derived"):
        make_judgment(order="AB", verdict="A", trial_id="mine", **base)
    with pytest.raises(ValueError, match="order must be"):
        make_judgment(order="ba", verdict="A", **base)
    # pointwise rows keep the protocol's own vocabulary and have no first-shown winner
    p = make_judgment(order="AB", verdict="PASS", pair=False, **base)
    assert (p.verdict, p.shown_first_won) == ("PASS", None)


def test_store_takes_judgments_and_old_stores_gain_the_decoding_column(tmp_path) -> None:
    import sqlite3

    j = from_shown(shown_verdict="B", order="AB", judge="j", dataset="d", item_id="1", protocol="direct",
                   temperature=0.0, rep=0)
    with RunStore(tmp_path / "a") as st:
        assert st.add_judgments([j]) == 1 and st.add_judgments([j]) == 0
        df = st.judgments()
    assert list(df.columns) == list(JUDGMENT_COLUMN_NAMES) and df["decoding"].tolist() == ["free"]
    assert df["created_at"].notna().all()
    # a store written before the decoding column existed: the column is added on open, 'free'
    old = tmp_path / "b"
    with RunStore(old) as st:
        st.add_judgments([j])
    con = sqlite3.connect(old / "run.sqlite")
    con.execute("ALTER TABLE judgments DROP COLUMN decoding")
    con.commit()
    con.close()
    with RunStore(old) as st:
        assert st.judgments()["decoding"].tolist() == ["free"]
    frame = judgment_frame([{"judge": "j", "verdict": "A"}])
    assert list(frame.columns) == list(JUDGMENT_COLUMN_NAMES) and frame["decoding"].tolist() == ["free"]


def test_registry_is_lazy_and_names_the_missing_extra() -> None:
    reg: Registry[object] = Registry("widget")
    reg.register("json", "json:dumps", description="lazy")
    reg.register("now", len)
    assert reg.names() == ["json", "now"] and reg.describe()["json"] == "lazy"
    assert not reg.entry("json").loaded and reg.get("json") is json.dumps and reg.entry("json").loaded
    with pytest.raises(KeyError, match="unknown widget 'nope'; known: json, now"):
        reg.get("nope")
    missing = f"no_such_package_{uuid.uuid4().hex[:8]}"
    reg.register("gpu", f"{missing}.mod:thing", extra="gpu")
    with pytest.raises(MissingExtraError, match=r"widget 'gpu' needs the optional package .*pip install 'verdictlab\[gpu\]'"):
        reg.get("gpu")


def test_registries_share_the_mechanism() -> None:
    from verdictlab.datasets.registry import DATASETS
    from verdictlab.importers import IMPORTERS
    from verdictlab.judges import JUDGES
    from verdictlab.protocols.registry import PROTOCOLS

    for reg in (DATASETS, IMPORTERS, JUDGES, PROTOCOLS):
        assert isinstance(reg, Registry) and len(reg) > 0
    assert JUDGES.entry("llamacpp").extra == "local"


def test_one_scrubber() -> None:
    key = f"sk-test-{uuid.uuid4().hex}"
    text = redact_text(f"401 for {key}; Bearer abcdefghij12345; api_key=zzzzzzzzzz", limit=200)
    assert key[:12] not in text and "abcdefghij12345" not in text and "zzzzzzzzzz" not in text
    assert text.count(REDACTED) == 3
    assert redact_text("x" * 50, limit=10) == "x" * 7 + "..."
    assert redact_text(f"a {key} b", [key]) == f"a {REDACTED} b"
    assert redact_value({"api_key": "v", "nested": [{"note": f"used {key}"}]}) == {"nested": [{"note": f"used {REDACTED}"}]}
    # the old names are thin aliases of the one scrubber
    from verdictlab.engine import redact

    assert redact(f"k {key}") == f"k {REDACTED}"
