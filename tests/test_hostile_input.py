"""Issue 16: broken and hostile input gives one clear line, a documented non-zero exit and never
wrong data.  Each test feeds exactly the input the issue names (item numbers in the test names)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from verdictlab.core.guards import GuardError, expanded_size, input_limits, loads_json, nesting_depth
from verdictlab.core.items import ItemError, PairItem
from verdictlab.datasets import load_dataset
from verdictlab.engine.config import ConfigError, config_from_dict, load_config

PAIR = {"item_id": "a", "question": "q", "response_a": "x", "response_b": "y", "label": "A"}


def _yaml(tmp_path: Path, text: str, name: str = "audit.yaml") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def _base_config(extra: str = "") -> str:
    return ("name: t\ndatasets: [{name: jsonl, path: pairs.jsonl}]\njudges: ['sim:skill=0.9,seed=1']\n"
            "protocols: [direct]\n" + extra)


# -- item 1: a CSV row with more fields than the header ---------------------------------------------
def test_item1_csv_extra_fields_is_an_error_not_shifted_columns(tmp_path: Path) -> None:
    p = tmp_path / "extra.csv"
    p.write_text("item_id,question,response_a,response_b,label\ni0,What is 2+2?,4,5,A,oops,B\n")
    with pytest.raises(ItemError, match=r"extra.csv, row 2: 7 fields, but the header \(line 1\) has 5 columns"):
        load_dataset("csv", path=str(p))


def test_item1_csv_fewer_fields_is_an_error_too(tmp_path: Path) -> None:
    p = tmp_path / "short.csv"
    p.write_text("item_id,question,response_a,response_b,label\ni0,q,4,5\n")
    with pytest.raises(ItemError, match=r"row 2: 4 fields, but the header"):
        load_dataset("csv", path=str(p))


def test_item1_csv_duplicate_header_column(tmp_path: Path) -> None:
    p = tmp_path / "dup.csv"
    p.write_text("item_id,question,response_a,response_b,label,label\ni0,q,4,5,A,B\n")
    with pytest.raises(ItemError, match=r"row 1, field 'label': header names column 'label' twice"):
        load_dataset("csv", path=str(p))


def test_item1_csv_with_commas_quoted_loads_exactly(tmp_path: Path) -> None:
    p = tmp_path / "ok.csv"
    p.write_text('item_id,question,response_a,response_b,label\ni0,"What is 2+2, exactly?",4,5,A\n')
    (it,) = load_dataset("csv", path=str(p)).items
    assert isinstance(it, PairItem)
    assert (it.item_id, it.question, it.response_a, it.response_b, it.label) == \
        ("i0", "What is 2+2, exactly?", "4", "5", "A")


# -- item 12: row numbers after a multi-line CSV cell -----------------------------------------------
def test_item12_csv_row_number_is_the_file_line_after_a_multiline_cell(tmp_path: Path) -> None:
    p = tmp_path / "ml.csv"
    # line 1 header; the first record spans lines 2-4; the bad record starts on line 5
    p.write_text('item_id,question,response_a,response_b,label\ni0,"multi\nline\ncell",4,5,A\ni1,q,4,5,X\n')
    with pytest.raises(ItemError, match=r"ml.csv, row 5, field 'label'"):
        load_dataset("csv", path=str(p))


# -- item 2: temperatures [.nan] ---------------------------------------------------------------------
@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf"])
def test_item2_non_finite_temperature_refused(tmp_path: Path, value: str) -> None:
    p = _yaml(tmp_path, _base_config(f"temperatures: [{value}]\n"))
    with pytest.raises(ConfigError, match=r"audit.yaml: field 'temperatures': .*outside \[0, 2\]"):
        load_config(p)


def test_item2_nan_in_a_jsonl_record_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "nan.jsonl"
    p.write_text('{"item_id": "a", "question": "q", "response_a": "x", "response_b": "y", "score": NaN}\n')
    with pytest.raises(ItemError, match=r"nan.jsonl, row 1, field 'score': NaN is not valid JSON"):
        load_dataset("jsonl", path=str(p))
    p.write_text('{"item_id": "a", "question": "q", "response_a": "x", "response_b": "y", "score": 1e999}\n')
    with pytest.raises(ItemError, match=r"row 1, field 'score': number 1e999 is out of range"):
        load_dataset("jsonl", path=str(p))


# -- item 4: a 508-byte YAML with nested aliases inside judges[].params ------------------------------
BOMB = """name: bomb
datasets: [{name: jsonl, path: pairs.jsonl}]
protocols: [direct]
a: &a ["xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]
e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]
f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]
g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]
judges:
  - id: "sim:skill=0.9"
    params: {bomb: [*g, *g, *g, *g, *g, *g]}
"""


def test_item4_yaml_alias_bomb_is_refused_before_expansion(tmp_path: Path) -> None:
    assert len(BOMB.encode()) < 700
    p = _yaml(tmp_path, BOMB)
    with pytest.raises(ConfigError, match=r"audit.yaml: expands to about [\d,]+ bytes once its YAML aliases "
                                          r"are written out, more than the limit of 1,000,000 "
                                          r"\(raise it with VERDICTLAB_MAX_CONFIG_BYTES\)"):
        load_config(p)


def test_item4_limit_can_be_raised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    small = "name: t\nx: &x [aaaaaaaaaa, aaaaaaaaaa]\ny: [*x, *x, *x, *x]\n"
    p = _yaml(tmp_path, small)
    monkeypatch.setenv("VERDICTLAB_MAX_CONFIG_BYTES", "50")
    with pytest.raises(ConfigError, match="more than the limit of 50"):
        load_config(p)
    monkeypatch.setenv("VERDICTLAB_MAX_CONFIG_BYTES", "1000")
    with pytest.raises(ConfigError, match="field 'x': Extra inputs"):   # past the limit, to validation
        load_config(p)
    monkeypatch.setenv("VERDICTLAB_MAX_CONFIG_BYTES", "lots")
    with pytest.raises(ConfigError, match="VERDICTLAB_MAX_CONFIG_BYTES='lots': must be a positive integer"):
        load_config(p)


def test_item4_recursive_alias_refused(tmp_path: Path) -> None:
    p = _yaml(tmp_path, _base_config("x: &x [1, *x]\n"))
    with pytest.raises(ConfigError, match="audit.yaml: "):
        load_config(p)


def test_expanded_size_counts_shared_nodes_without_expanding() -> None:
    leaf = ["ab"] * 2                 # ["ab","ab"] -> 2 + 2*(4+1) = 12
    level = [leaf] * 10               # 2 + 10*(12+1) = 132
    top = {"k": [level] * 1000}       # list: 2 + 1000*(132+1) = 133002; dict: 2 + (3 + 133002 + 2)
    assert expanded_size(top) == 2 + 3 + 133_002 + 2
    loop: list = []
    loop.append(loop)
    with pytest.raises(GuardError, match="refers to itself"):
        expanded_size(loop)


# -- item 7: invalid UTF-8, JSON nested 5,000 deep, an extra field nested 300 deep -------------------
def test_item7_invalid_utf8_in_data_and_config(tmp_path: Path) -> None:
    p = tmp_path / "bad.jsonl"
    p.write_bytes(json.dumps(PAIR).encode() + b"\n" + b'{"item_id": "b\xff"}\n')
    with pytest.raises(ItemError, match=r"bad.jsonl, row 2: not UTF-8 text \(byte 0xff cannot be decoded\)"):
        load_dataset("jsonl", path=str(p))
    c = tmp_path / "bad.csv"
    c.write_bytes(b"item_id,question,response_a,response_b\ni0,q\xfe,a,b\n")
    with pytest.raises(ItemError, match=r"bad.csv, row 2: not UTF-8 text \(byte 0xfe"):
        load_dataset("csv", path=str(c))
    y = tmp_path / "audit.yaml"
    y.write_bytes(b"name: t\n# caf\xe9\n")
    with pytest.raises(ConfigError, match=r"audit.yaml, line 2: not UTF-8 text \(byte 0xe9"):
        load_config(y)


def test_item7_json_nested_5000_deep(tmp_path: Path) -> None:
    p = tmp_path / "deep.jsonl"
    rec = json.dumps(PAIR)[:-1] + ', "x": ' + "[" * 5000 + "]" * 5000 + "}\n"
    p.write_text(rec)
    with pytest.raises(ItemError, match=r"deep.jsonl, row 1: nested more than 64 levels deep"):
        load_dataset("jsonl", path=str(p))
    j = tmp_path / "deep.json"            # a JSON document (not lines) too
    j.write_text("[" * 5000 + "]" * 5000)
    with pytest.raises(ItemError, match="nested more than 64 levels"):
        load_dataset("json", path=str(j)) if _has_loader("json") else _read_records(j)


def test_item7_extra_field_nested_300_deep_refused_at_validate(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    p = tmp_path / "deep300.jsonl"
    p.write_text(json.dumps(PAIR)[:-1] + ', "x": ' + "[" * 300 + "]" * 300 + "}\n")
    with pytest.raises(ItemError, match=r"deep300.jsonl, row 1, field 'x': nested more than 64 levels deep "
                                        r"\(raise the limit with VERDICTLAB_MAX_DEPTH\)"):
        load_dataset("jsonl", path=str(p))
    from typer.testing import CliRunner

    from verdictlab.cli.main import app

    cfg = _yaml(tmp_path, "name: d\ndatasets: [{name: jsonl, path: deep300.jsonl}]\njudges: ['sim:skill=0.9']\n"
                          "protocols: [direct]\n")
    r = CliRunner().invoke(app, ["run", str(cfg), "--run-dir", str(tmp_path / "run")])
    assert r.exit_code == 3 and "field 'x': nested more than 64 levels" in r.stderr
    assert not (tmp_path / "run").exists()                   # no empty store left behind
    monkeypatch.setenv("VERDICTLAB_MAX_DEPTH", "400")       # a user can raise it
    assert nesting_depth(load_dataset("jsonl", path=str(p)).items[0].meta) == 301


def test_item7_deep_yaml_config(tmp_path: Path) -> None:
    p = _yaml(tmp_path, _base_config("x: " + "[" * 5000 + "]" * 5000 + "\n"))
    with pytest.raises(ConfigError, match="audit.yaml"):
        load_config(p)


def test_yaml_errors_do_not_echo_the_file(tmp_path: Path) -> None:
    secretish = "sk-test-should-not-be-echoed"
    p = _yaml(tmp_path, f"name: t\nnote: {secretish}\ndatasets: [\n  judges: : :\n")
    with pytest.raises(ConfigError) as info:
        load_config(p)
    assert secretish not in str(info.value) and "\n" not in str(info.value)


def test_duplicate_yaml_key_refused(tmp_path: Path) -> None:
    p = _yaml(tmp_path, _base_config("repetitions: 3\nrepetitions: 5\n"))
    with pytest.raises(ConfigError, match=r"line 6, column 1: invalid YAML \(duplicate key 'repetitions'\)"):
        load_config(p)
    ok = _yaml(tmp_path, "base: &b {concurrency: 2}\n", "merge.yaml")
    assert ok.exists()


def test_loads_json_limits() -> None:
    assert loads_json('{"a": [1, 2.5, "x"]}') == {"a": [1, 2.5, "x"]}
    for bad in ("NaN", "[Infinity]", "-Infinity", "1e400", "1" * 5000):
        with pytest.raises(GuardError):
            loads_json(bad)
    assert input_limits().max_depth == 64


def test_config_from_dict_applies_limits() -> None:
    deep: dict = {}
    node = deep
    for _ in range(100):
        node["x"] = {}
        node = node["x"]
    with pytest.raises(ConfigError, match="<config>: nested more than 64 levels deep"):
        config_from_dict({"name": "t", "datasets": ["demo"], "judges": [{"id": "sim:x", "params": deep}],
                          "protocols": ["direct"]})


def _has_loader(name: str) -> bool:
    from verdictlab.datasets import describe_loaders

    return name in describe_loaders()


def _read_records(p: Path) -> None:
    from verdictlab.datasets._common import read_records

    read_records(p)


# -- item 4 (second half): a huge response that flips in four cells --------------------------------
def test_item4_huge_flipping_response_keeps_the_html_report_small(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from verdictlab.cli.main import app
    from verdictlab.store import open_store

    big = "x" * 2_000_000           # the issue had 50 MB; 2 MB shows the same thing in a test's time
    (tmp_path / "pairs.jsonl").write_text(json.dumps({**PAIR, "response_a": big}) + "\n")
    cfg = _yaml(tmp_path, "name: big\ndatasets: [{name: jsonl, path: pairs.jsonl}]\n"
                          "judges: ['sim:skill=0.5,position_lock=1.0,seed=1']\nprotocols: [direct, vf-json]\n"
                          "temperatures: [0.0, 0.5]\nrepetitions: 1\n")
    rd = tmp_path / "run"
    runner = CliRunner()
    assert runner.invoke(app, ["run", str(cfg), "--run-dir", str(rd), "--no-progress"]).exit_code == 0
    r = runner.invoke(app, ["report", str(rd), "--format", "html", "--bootstrap", "0"])
    assert r.exit_code == 0, r.output
    html = (rd / "report.html").read_text()
    # four cells flip: the item is shown four times, each time cut to 20,000 characters
    assert html.count("more characters in run.sqlite") >= 4
    assert len(html.encode()) < 1_500_000, len(html.encode())
    with open_store(rd) as st:                   # the store keeps the whole text
        (item,) = st.items()
        assert isinstance(item, PairItem) and len(item.response_a) == len(big)
    monkeypatch.setenv("VERDICTLAB_HTML_MAX_BYTES", "1000")
    r = runner.invoke(app, ["report", str(rd), "--format", "html", "--bootstrap", "0"])
    assert r.exit_code == 3
    assert "more than the limit of 1,000 (raise it with VERDICTLAB_HTML_MAX_BYTES, or use --format json)" in r.stderr


# -- item 10: a template override file --------------------------------------------------------------
def _template_run(tmp_path: Path, template_text: str | None, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str]:
    from typer.testing import CliRunner

    from verdictlab.cli.main import app

    cfg_dir = tmp_path / "cfg"
    cfg_dir.mkdir(exist_ok=True)
    (cfg_dir / "pairs.jsonl").write_text(json.dumps(PAIR) + "\n")
    if template_text is not None:
        (cfg_dir / "wording.yaml").write_text(template_text)
    cfg = _yaml(cfg_dir, "name: tpl\ndatasets: [{name: jsonl, path: pairs.jsonl}]\njudges: ['sim:skill=0.9,seed=1']\n"
                         "protocols: ['direct@wording.yaml']\nrepetitions: 1\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(exist_ok=True)
    monkeypatch.chdir(elsewhere)                 # the working directory is NOT the config's folder
    r = CliRunner().invoke(app, ["run", str(cfg), "--run-dir", str(tmp_path / "run"), "--no-progress"])
    return r.exit_code, r.stderr + r.output


def test_item10_template_override_resolves_against_the_config_folder(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    code, out = _template_run(tmp_path, "instruction: 'Answer with A or B only, please.'\n", monkeypatch)
    assert code == 0, out
    from verdictlab.store import open_store

    with open_store(tmp_path / "run") as st:
        assert set(st.judgments()["protocol"]) == {"direct@wording.yaml"}     # the id stays as written


def test_item10_broken_or_missing_template_is_one_line_without_the_file_text(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    secretish = "sk-test-template-line-never-echoed"
    code, out = _template_run(tmp_path, f"system: {secretish}\nuser: [unclosed\n", monkeypatch)
    assert code == 3 and "Traceback" not in out
    assert "wording.yaml, line 3, column 1: invalid YAML" in out and secretish not in out
    (tmp_path / "cfg" / "wording.yaml").unlink()
    code, out = _template_run(tmp_path, None, monkeypatch)
    assert code == 3 and "Traceback" not in out and "wording.yaml: protocol template not found" in out


def test_duplicate_json_key_refused_and_non_regular_csv_path(tmp_path: Path) -> None:
    import os

    p = tmp_path / "dup.jsonl"
    p.write_text('{"item_id": "a", "question": "q", "response_a": "x", "response_b": "y", "label": "A", '
                 '"label": "B"}\n')
    with pytest.raises(ItemError, match=r"dup.jsonl, row 1: key 'label' is given twice in one object"):
        load_dataset("jsonl", path=str(p))
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)                      # reading it would block forever
    with pytest.raises(ItemError, match=r"pipe.csv: not a regular file"):
        load_dataset("csv", path=str(fifo))


def test_a_grid_of_a_billion_trials_per_item_is_refused_at_load(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    p = _yaml(tmp_path, _base_config("repetitions: 1000000000\n"))
    with pytest.raises(ConfigError, match=r"2,000,000,000 trials per item .* more than the limit of 100,000 "
                                          r"\(raise it with VERDICTLAB_MAX_TRIALS_PER_ITEM\)"):
        load_config(p)
    monkeypatch.setenv("VERDICTLAB_MAX_TRIALS_PER_ITEM", "3000000000")
    assert load_config(p).repetitions == 1_000_000_000
