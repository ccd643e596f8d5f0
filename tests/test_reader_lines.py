"""The shared JSON Lines reader splits records on "\\n" only (issue 11).

``str.splitlines()`` also splits on U+2028 / U+2029 (and \\x1c-\\x1e, \\x85, \\v, \\f), which
``json.dumps(..., ensure_ascii=False)`` writes raw inside strings: a valid file was rejected with
"invalid JSON (Unterminated string starting at at column 197)".  Every loader and importer reads
through ``datasets._common.read_records`` / ``split_lines``, so one test per hostile character here,
plus one loader and one importer end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from verdictlab.core.items import ItemError
from verdictlab.datasets import load_dataset
from verdictlab.datasets._common import read_records, split_lines
from verdictlab.importers import get_importer

HOSTILE = {
    "u2028": "line\u2028separator",
    "u2029": "paragraph\u2029separator",
    "nel_vt_ff_fs": "a\x85b\x0bc\x0cd\x1ce",
}


def _pair(i: int, text: str) -> dict:
    return {"item_id": f"p{i}", "question": f"q {text}", "response_a": text, "response_b": "plain",
            "label": "A"}


def _write(path: Path, records: list[dict], *, newline: str = "\n", bom: bool = False) -> Path:
    body = newline.join(json.dumps(r, ensure_ascii=False) for r in records) + newline
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + body.encode("utf-8"))
    return path


def test_split_lines_only_on_newline():
    text = 'a\u2028b\u2029c\x85d\x0be\x0cf\r\nsecond\nthird\n'
    assert split_lines(text) == [(1, "a\u2028b\u2029c\x85d\x0be\x0cf"), (2, "second"), (3, "third")]
    assert split_lines("x") == [(1, "x")]
    assert split_lines("") == []


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_read_records_keeps_separators_inside_strings(tmp_path, name):
    text = HOSTILE[name]
    p = _write(tmp_path / "d.jsonl", [_pair(1, text), _pair(2, "ok")])
    assert "\u2028" not in name or "\u2028" in p.read_text(encoding="utf-8")  # written raw, not escaped
    rows = read_records(p)
    assert [r for r, _ in rows] == [1, 2]
    assert rows[0][1]["response_a"] == text


def test_crlf_and_bom_read_the_same(tmp_path):
    recs = [_pair(1, HOSTILE["u2028"]), _pair(2, "two")]
    plain = read_records(_write(tmp_path / "a.jsonl", recs))
    crlf = read_records(_write(tmp_path / "b.jsonl", recs, newline="\r\n", bom=True))
    assert plain == crlf
    # a BOM in front of a JSON document (not JSON Lines) too
    doc = tmp_path / "c.json"
    doc.write_bytes(b"\xef\xbb\xbf" + json.dumps(recs, ensure_ascii=False).encode())
    assert [r for _, r in read_records(doc)] == recs


def test_nul_escaped_is_kept_raw_is_a_clear_error(tmp_path):
    p = _write(tmp_path / "n.jsonl", [_pair(1, "nul\x00inside")])   # json.dumps escapes it: \u0000
    assert read_records(p)[0][1]["response_a"] == "nul\x00inside"
    raw = tmp_path / "raw.jsonl"
    raw.write_bytes(b'{"item_id": "p1"}\n{"item_id": "p\x002"}\n')   # a raw control character is not JSON
    with pytest.raises(ItemError) as err:
        read_records(raw)
    msg = str(err.value)
    assert "row 2" in msg and "Invalid control character" in msg and "at at" not in msg


def test_unterminated_string_message_has_no_double_at(tmp_path):
    p = tmp_path / "bad.jsonl"
    p.write_text('{"item_id": "p1"}\n{"item_id": "p2\n', encoding="utf-8")
    with pytest.raises(ItemError) as err:
        read_records(p)
    msg = str(err.value)
    assert "at at" not in msg
    assert "row 2" in msg and "Unterminated string starting (column 13)" in msg


def test_loader_and_importer_read_u2028(tmp_path):
    """The issue's defect end to end: a dataset loader and an importer on the same kind of file."""
    recs = [_pair(i, HOSTILE["u2028"] + " " * 200) for i in range(3)]
    d = load_dataset("jsonl", path=str(_write(tmp_path / "items.jsonl", recs, bom=True)))
    assert [it.response_a for it in d.items] == [r["response_a"] for r in recs]
    rows = [{"item_id": "p1", "judge": "j", "protocol": "p", "dataset": "d", "order": "AB", "rep": 0,
             "temperature": 0, "verdict": "A", "label": "A", "raw_output": "why\u2028because\u2029."}]
    batch = get_importer("jsonl")(_write(tmp_path / "j.jsonl", rows, newline="\r\n"))
    assert batch.judgments[0]["raw_output"] == "why\u2028because\u2029."
