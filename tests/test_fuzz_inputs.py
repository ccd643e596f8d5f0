"""Issue 16, must-be-true 7: a seeded, time-bounded fuzz of the JSONL and CSV readers and the config
loader.  Every input either loads exactly what it says or fails with one clear line (an ItemError /
ConfigError naming the file, no newline) -- or, for a data file with several problems, one line per
problem after a first line naming the file (they are all listed at once) -- never another exception,
never other data.

Seeded (``derandomize=True``: the same examples every run) and bounded (``max_examples`` per test and
a pytest timeout), so it runs in CI in about 15 seconds."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from _clear_errors import one_clear_line as _one_clear_line  # noqa: E402
from verdictlab.core.items import ItemError  # noqa: E402
from verdictlab.datasets import load_dataset  # noqa: E402
from verdictlab.engine.config import ConfigError, load_config  # noqa: E402

# VERDICTLAB_FUZZ_EXAMPLES=2000 for a deeper (still seeded) run
FUZZ = settings(derandomize=True, max_examples=int(os.environ.get("VERDICTLAB_FUZZ_EXAMPLES", "60")), deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
pytestmark = pytest.mark.timeout(120)

# any text, including U+2028/U+2029, NUL, CR, quotes, commas, markup and bidi controls
TEXT = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=40)
SPICY = st.sampled_from(["", "a,b", 'say "hi"', "line\nbreak", "cr\rlf\r\n", "\u2028", "[/b]", "=1+1",
                         "\x00", "\ufeffbom", "  padded  ", "tab\there", "é", "NaN", "null"])
CELL = st.one_of(TEXT, SPICY)
LABEL = st.sampled_from(["A", "B", "tie", None])


def _record(i: int, q: str, a: str, b: str, label: str | None) -> dict[str, Any]:
    return {"item_id": f"id{i}", "question": q, "response_a": a, "response_b": b, "label": label}


RECORDS = st.lists(st.tuples(CELL, CELL, CELL, LABEL), min_size=1, max_size=6).map(
    lambda rows: [_record(i, *r) for i, r in enumerate(rows)])


def _expect_items(load: Any, records: list[dict[str, Any]]) -> None:
    got = [(it.item_id, it.question, getattr(it, "response_a", None), getattr(it, "response_b", None), it.label)
           for it in load.items]
    want = [(r["item_id"], r["question"], r["response_a"], r["response_b"], r["label"]) for r in records]
    assert got == want


def _tmp(name: str) -> Path:
    return Path(tempfile.mkdtemp(prefix="vl-fuzz-")) / name


# -- JSON Lines -----------------------------------------------------------------------------------
@FUZZ
@given(records=RECORDS, ascii_only=st.booleans(), crlf=st.booleans())
def test_jsonl_loads_exactly_what_it_says(records: list[dict[str, Any]], ascii_only: bool, crlf: bool) -> None:
    p = _tmp("pairs.jsonl")
    nl = "\r\n" if crlf else "\n"
    p.write_text("".join(json.dumps(r, ensure_ascii=ascii_only) + nl for r in records), encoding="utf-8",
                 newline="")
    _expect_items(load_dataset("jsonl", path=str(p)), records)


def _valid_jsonl_bytes(records: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode()


MUTATION = st.tuples(st.integers(0, 10_000), st.sampled_from(["flip", "insert", "delete"]),
                     st.binary(min_size=1, max_size=4))


def _mutate(data: bytes, mutations: list[tuple[int, str, bytes]]) -> bytes:
    buf = bytearray(data)
    for pos, kind, chunk in mutations:
        i = pos % (len(buf) + 1)
        if kind == "flip" and i < len(buf):
            buf[i] ^= chunk[0] or 1
        elif kind == "insert":
            buf[i:i] = chunk
        elif i < len(buf):
            del buf[i]
    return bytes(buf)


def _jsonl_truth(data: bytes) -> list[dict[str, Any]] | None:
    """What a mutated JSON Lines file says, decoded independently (None: it is not valid)."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None
    out = []
    for line in text.split("\n"):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            return None
        if not isinstance(rec, dict):
            return None
        out.append(rec)
    return out


@FUZZ
@given(records=RECORDS, mutations=st.lists(MUTATION, min_size=1, max_size=4))
def test_jsonl_mutated_bytes_load_exactly_or_fail_with_one_line(records: list[dict[str, Any]],
                                                                mutations: list[tuple[int, str, bytes]]) -> None:
    p = _tmp("pairs.jsonl")
    data = _mutate(_valid_jsonl_bytes(records), mutations)
    p.write_bytes(data)
    try:
        load = load_dataset("jsonl", path=str(p))
    except ItemError as exc:
        _one_clear_line(exc, p)
        return
    truth = _jsonl_truth(data)
    assert truth is not None, "loaded a file that is not valid JSON Lines"
    got = [(it.question, getattr(it, "response_a", None), getattr(it, "response_b", None)) for it in load.items]
    assert got == [(r["question"], r["response_a"], r["response_b"]) for r in truth]
    for r in truth:          # nothing a strict reader would refuse was let through
        assert all(not (isinstance(v, float) and not math.isfinite(v)) for v in r.values())


# -- CSV ------------------------------------------------------------------------------------------
def _csv_text(records: list[dict[str, Any]]) -> str:
    buf = io.StringIO(newline="")
    w = csv.writer(buf)
    w.writerow(["item_id", "question", "response_a", "response_b", "label"])
    for r in records:
        w.writerow([r["item_id"], r["question"], r["response_a"], r["response_b"], r["label"] or ""])
    return buf.getvalue()


@FUZZ
@given(records=RECORDS)
def test_csv_loads_exactly_what_it_says(records: list[dict[str, Any]]) -> None:
    p = _tmp("pairs.csv")
    p.write_text(_csv_text(records), encoding="utf-8", newline="")
    try:
        load = load_dataset("csv", path=str(p))
    except ItemError as exc:
        _one_clear_line(exc, p)
        # the only refusal allowed for a well-formed file: an empty required cell (CSV has no null)
        for problem in getattr(exc, "problems", [exc]):
            assert "missing required field" in str(problem), str(exc)
        assert any("" in (r["question"], r["response_a"], r["response_b"]) for r in records)
        return
    _expect_items(load, records)


@FUZZ
@given(records=RECORDS, mutations=st.lists(MUTATION, min_size=1, max_size=4))
def test_csv_mutated_bytes_load_exactly_or_fail_with_one_line(records: list[dict[str, Any]],
                                                              mutations: list[tuple[int, str, bytes]]) -> None:
    p = _tmp("pairs.csv")
    data = _mutate(_csv_text(records).encode(), mutations)
    p.write_bytes(data)
    try:
        load = load_dataset("csv", path=str(p))
    except ItemError as exc:
        _one_clear_line(exc, p)
        return
    # loaded: it must be exactly what the standard csv module reads from the same bytes, row by row
    rows = [r for r in csv.reader(io.StringIO(data.decode("utf-8-sig"), newline=""), strict=True) if r]
    header, body = rows[0], rows[1:]
    assert all(len(r) == len(header) for r in body)
    want = [dict(zip(header, r, strict=True)) for r in body]
    assert [it.question for it in load.items] == [w.get("question") for w in want]
    assert [getattr(it, "response_b", None) for it in load.items] == [w.get("response_b") for w in want]


# -- config -------------------------------------------------------------------------------------------
SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), TEXT,
                   st.floats(allow_nan=False, allow_infinity=False, width=32))
PARAMS = st.dictionaries(st.text("abcdefghij_", min_size=1, max_size=8).filter(lambda k: k not in
                                                                                 ("max_tokens", "seed")),
                         st.recursive(SCALAR, lambda kids: st.lists(kids, max_size=3)
                                      | st.dictionaries(st.text("xyz", min_size=1, max_size=3), kids, max_size=3),
                                      max_leaves=10), max_size=4)
CONFIG = st.fixed_dictionaries({
    "name": st.text("abcdefghijklmnopqrstuvwxyz0123456789-_", min_size=1, max_size=12).filter(
        lambda s: s not in (".", "..")),
    "datasets": st.just([{"name": "jsonl", "path": "pairs.jsonl"}]),
    "judges": st.lists(st.builds(lambda i, params, c: {"id": f"sim:seed={i}", "params": params, "concurrency": c},
                                 st.integers(0, 9), PARAMS, st.integers(1, 64)),
                       min_size=1, max_size=3, unique_by=lambda j: j["id"]),
    "protocols": st.lists(st.sampled_from(["direct", "vf-json", "cot-xml"]), min_size=1, max_size=3, unique=True),
    "temperatures": st.lists(st.floats(0, 2, allow_nan=False), min_size=1, max_size=3, unique=True),
    "repetitions": st.integers(1, 20),
    "seed": st.integers(0, 2**31),          # a negative seed is refused (numpy's generators take >= 0)
})


@FUZZ
@given(cfg=CONFIG)
def test_config_loads_exactly_what_it_says(cfg: dict[str, Any]) -> None:
    p = _tmp("audit.yaml")
    text = yaml.safe_dump(cfg, allow_unicode=True)
    p.write_text(text, encoding="utf-8")
    got = load_config(p)
    # what the file says, read by the stock parser (PyYAML's emitter writes some characters, e.g. a
    # raw U+0085, that YAML then reads as a line break: the file says what the parser reads)
    says = yaml.safe_load(text)
    assert got.name == says["name"] and got.protocols == says["protocols"]
    assert got.temperatures == says["temperatures"] and got.repetitions == says["repetitions"]
    assert got.seed == says["seed"]
    assert [(j.id, j.params, j.concurrency) for j in got.judges] == \
        [(j["id"], j["params"], j["concurrency"]) for j in says["judges"]]


@FUZZ
@given(cfg=CONFIG, mutations=st.lists(MUTATION, min_size=1, max_size=4))
def test_config_mutated_bytes_load_exactly_or_fail_with_one_line(cfg: dict[str, Any],
                                                                 mutations: list[tuple[int, str, bytes]]) -> None:
    p = _tmp("audit.yaml")
    data = _mutate(yaml.safe_dump(cfg, allow_unicode=True).encode(), mutations)
    p.write_bytes(data)
    try:
        got = load_config(p)
    except ConfigError as exc:
        _one_clear_line(exc, p)
        return
    truth = yaml.safe_load(data.decode("utf-8-sig"))     # loaded: it says what an independent parse says
    assert got.name == truth["name"] and got.protocols == truth["protocols"]
    assert got.repetitions == truth.get("repetitions", 3)


@FUZZ
@given(text=st.text(max_size=200))
def test_config_arbitrary_text_fails_with_one_line(text: str) -> None:
    p = _tmp("audit.yaml")
    p.write_text(text, encoding="utf-8")
    try:
        load_config(p)
    except ConfigError as exc:
        _one_clear_line(exc, p)


# -- the table importer's own-data options: value maps and derived ids ------------------------------
# raw verdict cells a log may hold (codes, words, padding, junk) and value maps a user may give
RAW_VERDICT = st.sampled_from(["0", "1", "2", "A", "B", "tie", "", "x", " 1 ", "2.0", "Tie", "b"])
RAW_ORDER = st.sampled_from(["AB", "BA", " AB", "BA ", "ba", "A B"])
JUDGMENT = st.fixed_dictionaries({"question": CELL, "response_a": CELL, "response_b": CELL,
                                  "verdict": RAW_VERDICT, "order": RAW_ORDER})
VALUE_MAP = st.dictionaries(st.sampled_from(["0", "1", "2", "x"]), st.sampled_from(["A", "B", "tie", ""]),
                            max_size=4)
_WORDS = {"A": "A", "B": "B", "a": "A", "b": "B", "tie": "tie", "Tie": "tie", "TIE": "tie"}


def _expected_verdict(raw: str, vmap: dict[str, str]) -> tuple[bool, str | None]:
    """(readable, canonical verdict) of a raw cell under a value map, worked out independently."""
    key = raw.strip()               # text cells are looked up as written, stripped ("2.0" is not "2")
    if key in vmap:
        return True, vmap[key] or None
    if not raw.strip():
        return True, None
    return raw.strip() in _WORDS, _WORDS.get(raw.strip())


@FUZZ
@given(rows=st.lists(JUDGMENT, min_size=1, max_size=6), vmap=VALUE_MAP, id_from=st.sampled_from(["hash", "row"]),
       as_csv=st.booleans())
def test_table_import_with_value_maps_and_derived_ids_reads_exactly_what_it_says(
        rows: list[dict[str, Any]], vmap: dict[str, str], id_from: str, as_csv: bool) -> None:
    from verdictlab.core.items import derived_item_id
    from verdictlab.importers.tabular import import_table

    p = _tmp("log.csv" if as_csv else "log.jsonl")
    if as_csv:
        buf = io.StringIO(newline="")
        w = csv.DictWriter(buf, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
        p.write_text(buf.getvalue(), encoding="utf-8", newline="")
    else:
        p.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    try:
        batch = import_table(p, judge="j", protocol="p", dataset="d", id_from=id_from,
                             value_map={"verdict": vmap} if vmap else None)
    except ItemError as exc:
        _one_clear_line(exc, p)
        return
    assert len(batch.judgments) == len(rows)
    for index, (raw, got) in enumerate(zip(rows, batch.judgments, strict=True), start=1):
        readable, verdict = _expected_verdict(raw["verdict"], vmap)
        assert readable, f"read an unreadable verdict {raw['verdict']!r} as {got['verdict']!r}"
        assert got["verdict"] == verdict
        assert got["order"] == raw["order"].strip()
        # CSV has no null: an empty text cell is a missing text, and hash ids need all three
        texts = [None if as_csv and raw[k] == "" else raw[k] for k in ("question", "response_a", "response_b")]
        want_id = str(index) if id_from == "row" else derived_item_id(*texts)   # type: ignore[arg-type]
        assert got["item_id"] == want_id
