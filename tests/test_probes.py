"""Bias probes: dataset transforms (padding, injection, labels, granularity) and their figures."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from verdictlab.analyses.probes import probe_table
from verdictlab.core.items import PairItem
from verdictlab.datasets.probes import INJECTION_TEXT, PADDING_TEXT, apply_probe
from verdictlab.datasets.registry import DatasetLoad, load_dataset
from verdictlab.protocols.geval import GEvalProtocol


def _load() -> DatasetLoad:
    items = [PairItem(item_id=f"p{i}", dataset="base", question="q", response_a=f"a{i}", response_b=f"b{i}",
                      label=lab) for i, lab in enumerate(["A", "B", "tie", None])]
    return DatasetLoad(name="base", items=items, seed=7)


def test_padding_goes_to_the_loser_and_is_recorded() -> None:
    out = apply_probe(_load(), "padding")
    assert out.name == "base+padding" and all(it.dataset == "base+padding" for it in out.items)
    a, b, tie, unl = out.items
    assert a.response_b == "b0" + PADDING_TEXT and a.response_a == "a0" and a.meta["probe_side"] == "B"
    assert b.response_a == "a1" + PADDING_TEXT and b.meta["probe_side"] == "A"
    # tie / unlabelled: a seeded coin, recorded
    for it in (tie, unl):
        side = it.meta["probe_side"]
        assert getattr(it, "response_a" if side == "A" else "response_b").endswith(PADDING_TEXT)
    assert a.meta["base_dataset"] == "base" and [it.item_id for it in out.items] == ["p0", "p1", "p2", "p3"]
    inj = apply_probe(_load(), {"name": "injection", "side": "a"})
    assert all(it.response_a.endswith(INJECTION_TEXT) for it in inj.items)
    with pytest.raises(ValueError, match="unknown probe"):
        apply_probe(_load(), "shouting")
    with pytest.raises(ValueError, match="unknown option"):
        apply_probe(_load(), "padding", colour="red")


def test_labels_and_granularity_change_the_geval_prompt() -> None:
    lab = apply_probe(_load(), "labels", labels="pq")
    assert lab.name == "base+labels=pq"
    user = GEvalProtocol().messages(lab.items[0], "AB")[1]["content"]
    assert "Response P:\na0" in user and '"winner": "P or Q"' in user
    gr = apply_probe(_load(), "granularity", scale=3)
    assert gr.name == "base+scale=3"
    assert "from 1 (poor) to 3 (excellent)" in GEvalProtocol().messages(gr.items[0], "AB")[1]["content"]


def test_registry_hook(tmp_path: Path) -> None:
    f = tmp_path / "pairs.jsonl"
    f.write_text(json.dumps({"item_id": "1", "question": "q", "response_a": "x", "response_b": "y", "label": "A"}) + "\n")
    load = load_dataset("jsonl", path=str(f), probe="injection", probe_options={"side": "winner"})
    assert load.name == "pairs+injection" and load.items[0].response_a.endswith(INJECTION_TEXT)
    assert any("probe injection" in n for n in load.notes)
    assert load_dataset("jsonl", path=str(f)).items[0].response_a == "x"


def test_probe_table_by_hand() -> None:
    items = [PairItem(item_id=f"i{k}", dataset="d+padding", question="q", response_a="a", response_b="b", label="A",
                      meta={"probe": "padding", "base_dataset": "d", "probe_side": s})
             for k, s in enumerate(["B", "A", "B", "A"], start=1)]
    base_v = ["A", "A", "B", "B"]
    probe_v = ["B", "A", "A", "A"]
    rows = [{"judge": "j", "protocol": "vf-json", "temperature": 0.0, "order": "AB", "rep": 0, "step": "",
             "item_id": f"i{k}", "label": "A", "dataset": ds, "verdict": v}
            for ds, vs in (("d", base_v), ("d+padding", probe_v)) for k, v in enumerate(vs, start=1)]
    t = probe_table(pd.DataFrame(rows), items).iloc[0]
    # i1: A -> B, side B: toward.  i2: A -> A, side A: stays.  i3: B -> A, side B: away.  i4: B -> A, side A: toward
    assert (t["n_matched"], t["changed"]) == (4, 0.75)
    assert (t["moved_toward"], t["moved_away"], t["bias"]) == (0.5, 0.25, 0.25)
    # side share: base i2, i3 -> 2/4; probe i1, i2, i4 -> 3/4; the rise equals the bias
    assert (t["side_share_base"], t["side_share_probe"]) == (0.5, 0.75)
    assert (t["A_base"], t["A_probe"]) == (0.5, 0.75)


def _write(path: Path, n: int) -> None:
    with path.open("w") as fh:
        for i in range(n):
            fh.write(json.dumps({"item_id": f"p{i}", "question": "q", "response_a": "short", "response_b": "brief",
                                 "label": "A" if i % 2 else "B"}) + "\n")


def test_sim_judge_shows_no_verbosity_bias(tmp_path: Path) -> None:
    from verdictlab.engine import run_config
    from verdictlab.engine.config import config_from_dict
    from verdictlab.store import open_store

    data = tmp_path / "pairs.jsonl"
    _write(data, 60)
    cfg = config_from_dict({
        "name": "probe", "judges": ["sim:skill=0.7,position_lock=0.2,noise=0.1,seed=9"],
        "protocols": ["vf-json", "geval"], "repetitions": 2,
        "datasets": [{"name": "jsonl", "path": str(data)}, {"name": "jsonl", "path": str(data), "probe": "padding"},
                     {"name": "jsonl", "path": str(data), "probe": "labels"}]})
    run_config(cfg, tmp_path / "run", progress=False)
    with open_store(tmp_path / "run") as st:
        df, items = st.judgments(), st.items()
    t = probe_table(df, items).set_index(["probe", "protocol"])
    pad = t.loc[("padding", "vf-json")]
    assert pad["n_matched"] == 60 * 2 * 2
    # the sim judge never reads the text: only per-call noise (10%, a fair coin) moves verdicts, in
    # both directions alike, so the verbosity bias is near 0
    assert abs(pad["bias"]) < 0.05
    assert pad["moved_toward"] < 0.1 and pad["changed"] < 0.15
    assert t.loc[("labels", "vf-json"), "note"].startswith("protocol 'vf-json' ignores")
    assert t.loc[("labels", "geval"), "note"] == ""
    # geval under labels 1/2 still parses every answer
    lab_rows = df[(df["dataset"] == "pairs+labels=12") & (df["protocol"] == "geval")]
    assert len(lab_rows) == 240 and lab_rows["verdict"].notna().all()
