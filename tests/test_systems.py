"""Systems are first-class: a pair item's two responses carry the systems that wrote them
(``system_a`` / ``system_b``), and so does every judgment row, through the engine, the importers, the
store (and its migration of older stores), exports, the analyses' frames and the viewer's filters."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from verdictlab.analyses import AnalysisInput
from verdictlab.core.items import ItemError, PairItem, make_pair_item
from verdictlab.core.judgment import JUDGMENT_COLUMNS
from verdictlab.engine import run_config
from verdictlab.engine.config import config_from_dict
from verdictlab.importers import import_into
from verdictlab.store import open_store
from verdictlab.store.export import export_judgments, read_export

SYSTEMS = {"q1": {"alpha": "Paris.", "bravo": "Lyon.", "charlie": "Paris, France."},
           "q2": {"alpha": "4", "bravo": "5", "charlie": "four"}}


def _multi_run(tmp_path: Path) -> Path:
    with (tmp_path / "multi.jsonl").open("w") as fh:
        for qid, responses in SYSTEMS.items():
            fh.write(json.dumps({"item_id": qid, "question": f"question {qid}", "responses": responses}) + "\n")
    cfg = config_from_dict({"name": "s", "datasets": [{"name": "multi-jsonl", "path": "multi.jsonl"}],
                            "judges": ["sim:skill=0.8,seed=3"], "protocols": ["direct"], "orders": ["AB", "BA"],
                            "temperatures": [0.0], "repetitions": 1}, source=tmp_path / "cfg.yaml")
    run_config(cfg, tmp_path / "run", progress=False)
    return tmp_path / "run"


def test_an_item_of_an_earlier_verdictlab_reads_model_a_as_system_a() -> None:
    old = {"item_id": "1", "dataset": "d", "question": "?", "response_a": "a", "response_b": "b",
           "model_a": "gpt-4", "model_b": "vicuna", "meta": {}}
    it = PairItem.model_validate_json(json.dumps(old))
    assert (it.system_a, it.system_b) == ("gpt-4", "vicuna")
    assert "model_a" not in it.model_dump() and it.votes == () and it.label_rule is None
    with pytest.raises(ItemError, match="different systems"):
        make_pair_item({**old, "system_a": "claude"}, path="f.jsonl", row=3)


def test_the_engine_writes_the_systems_of_every_judgment(tmp_path: Path) -> None:
    run = _multi_run(tmp_path)
    with open_store(run) as st:
        items = {it.item_id: it for it in st.items()}
        df = st.judgments(["item_id", "system_a", "system_b"])
        compact = st.judgments(["system_a"], compact=True)
    assert len(df) == 2 * 3 * 2                       # 2 questions x 3 system pairs x 2 orders
    for row in df.itertuples():
        it = items[row.item_id]
        assert (row.system_a, row.system_b) == (it.system_a, it.system_b)
        assert {row.system_a, row.system_b} <= set(SYSTEMS["q1"]) and row.system_a != row.system_b
    assert str(compact["system_a"].dtype) == "category"
    # the analyses' frame carries them too (the report's AnalysisInput reads every judgment column)
    with open_store(run) as st:
        inp = AnalysisInput(st.judgments(), items=st.items())
    assert inp.pairs["system_a"].notna().all() and inp.votes.empty
    # exports: the two columns in every format, read back
    for fmt in ("csv", "jsonl", "parquet"):
        out = export_judgments(run, format=fmt, out=tmp_path / f"j.{fmt}")
        back = read_export(out)
        assert list(back.columns)[-2:] == ["system_a", "system_b"] and back["system_b"].notna().all(), fmt


def _previous_layout(db: Path, source: Path, *, item_field: str) -> None:
    """A store as verdictlab wrote it before systems were columns: no system_a / system_b in the
    judgments, the items' systems under ``item_field`` (``model_a`` / ``model_b`` of the old items)."""
    cols = [c for c in JUDGMENT_COLUMNS if c[0] not in ("system_a", "system_b")]
    con = sqlite3.connect(db)
    con.executescript(f"""
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE items (dataset TEXT NOT NULL, item_id TEXT NOT NULL, kind TEXT NOT NULL, data TEXT NOT NULL,
                            PRIMARY KEY (dataset, item_id));
        CREATE TABLE judgments ({", ".join(f'"{n}" {t}' + (" PRIMARY KEY" if n == "trial_id" else "")
                                           for n, t, _ in cols)});
        CREATE TABLE cache (key TEXT PRIMARY KEY, judge TEXT NOT NULL, response TEXT NOT NULL, created_at REAL NOT NULL);
        CREATE TABLE attempts (id INTEGER PRIMARY KEY AUTOINCREMENT, trial_id TEXT NOT NULL, judge TEXT NOT NULL,
                               attempt INTEGER NOT NULL, outcome TEXT NOT NULL, error_kind TEXT, error TEXT,
                               latency_s REAL, created_at REAL NOT NULL);
    """)
    con.execute("ATTACH DATABASE ? AS src", (str(source / "run.sqlite"),))
    names = ", ".join(f'"{n}"' for n, _, _ in cols)
    con.execute(f"INSERT INTO judgments ({names}) SELECT {names} FROM src.judgments")
    con.execute("INSERT INTO meta SELECT * FROM src.meta WHERE key = 'schema_version'")
    for dataset, item_id, kind, data in con.execute("SELECT * FROM src.items").fetchall():
        rec = {k: v for k, v in json.loads(data).items() if k not in ("votes", "label_rule")}
        for side in "ab":
            rec[f"{item_field}_{side}"] = rec.pop(f"system_{side}")
        con.execute("INSERT INTO items VALUES (?, ?, ?, ?)", (dataset, item_id, kind, json.dumps(rec)))
    con.commit()
    con.close()


def test_an_older_store_gets_its_systems_from_its_items(tmp_path: Path) -> None:
    run = _multi_run(tmp_path)
    with open_store(run) as st:
        want = st.judgments(["trial_id", "system_a", "system_b"]).sort_values("trial_id", ignore_index=True)
    old = tmp_path / "old"
    old.mkdir()
    _previous_layout(old / "run.sqlite", run, item_field="model")
    # read-only (report, export): the columns come from the items, nothing written
    with open_store(old) as st:
        got = st.judgments(["trial_id", "system_a", "system_b"]).sort_values("trial_id", ignore_index=True)
        assert all(it.system_a is not None for it in st.items())      # model_a read as system_a
    pd.testing.assert_frame_equal(got, want)
    con = sqlite3.connect(old / "run.sqlite")
    assert "system_a" not in {r[1] for r in con.execute('PRAGMA table_info("judgments")')}
    con.close()
    # a writable open migrates: the columns are added and filled from the items, once
    with open_store(old, read_only=False) as st:
        pass
    con = sqlite3.connect(old / "run.sqlite")
    stored = pd.read_sql_query("SELECT trial_id, system_a, system_b FROM judgments", con)
    con.close()
    pd.testing.assert_frame_equal(stored.sort_values("trial_id", ignore_index=True), want)


def _rows(**over: Any) -> list[dict[str, Any]]:
    base = {"judge": "j", "protocol": "p", "dataset": "d", "rep": 0, "temperature": 0.0}
    rows = []
    for iid, (sa, sb) in {"1": ("alpha", "bravo"), "2": ("bravo", "charlie")}.items():
        for order, verdict in (("AB", "A"), ("BA", "B")):
            rows.append({**base, "item_id": iid, "order": order, "verdict": verdict, "system_a": sa, "system_b": sb})
    rows[-1].update(over)
    return rows


def test_a_table_import_stores_the_systems_and_refuses_two_for_one_item(tmp_path: Path) -> None:
    src = tmp_path / "j.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in _rows()))
    import_into("jsonl", src, run_dir=tmp_path / "run")
    with open_store(tmp_path / "run") as st:
        df = st.judgments(["item_id", "system_a", "system_b"])
    assert set(map(tuple, df[["item_id", "system_a", "system_b"]].to_numpy().tolist())) == {
        ("1", "alpha", "bravo"), ("2", "bravo", "charlie")}
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(json.dumps(r) + "\n" for r in _rows(system_a="delta")))
    with pytest.raises(ItemError, match="has system_a 'delta' here but 'bravo' on row 3"):
        import_into("jsonl", bad, run_dir=tmp_path / "run2")


def test_the_viewer_filters_pairs_by_system(tmp_path: Path) -> None:
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from verdictlab.view import Filters, PairIndex, create_app

    run = _multi_run(tmp_path)
    with open_store(run) as st:
        ix = PairIndex.from_store(st)
        items = {it.item_id: it for it in st.items()}
    assert ix.choices["system"] == ["alpha", "bravo", "charlie"]
    page = ix.page(Filters(system="charlie"))
    ids = {r.item_id for r in page.rows}
    assert ids == {i for i, it in items.items() if "charlie" in (it.system_a, it.system_b)} and len(ids) == 4
    assert ix.page(Filters(system="nobody")).n_matching == 0
    client = TestClient(create_app(run), base_url="http://127.0.0.1")
    html = client.get("/pairs", params={"system": "alpha"}).text
    assert 'id="f-system"' in html and '<option value="alpha" selected>' in html
    one = next(iter(ids))
    pair = client.get(f"/pairs/{one}", params={"dataset": items[one].dataset}).text
    assert f'id="system-a">({items[one].system_a})' in pair
