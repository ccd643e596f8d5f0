"""One figure policy (core/policy.py): validated once when built, passed as one argument, never compared as a
string; and the store reader fills the defaults of missing columns once."""

from __future__ import annotations

import ast
import math
import re
import sqlite3
from pathlib import Path

import pytest

from verdictlab.core.policy import DEFAULT_POLICY, FigurePolicy
from verdictlab.core.vocab import UnparsedPolicy
from verdictlab.store import open_store
from verdictlab.store.column_cache import figure_frame
from verdictlab.testing.synthetic_run import write_synthetic_run

SRC = Path(__file__).resolve().parents[1] / "src" / "verdictlab"
POLICY_WORDS = {p.value for p in UnparsedPolicy}


# -- the object ---------------------------------------------------------------------------------------

def test_the_policy_converts_its_word_once_and_answers_questions() -> None:
    p = FigurePolicy(unparsed="wrong", confidence=0.9, n_bootstrap=0, seed=7)
    assert p.unparsed is UnparsedPolicy.WRONG and not p.drops_unparsed
    assert DEFAULT_POLICY.unparsed is UnparsedPolicy.EXCLUDE and DEFAULT_POLICY.drops_unparsed
    assert math.isclose(p.alpha, 0.1) and p.as_dict() == {"unparsed": "wrong", "confidence": 0.9, "n_bootstrap": 0,
                                                           "seed": 7}
    assert p.but(seed=8) == FigurePolicy(unparsed=UnparsedPolicy.WRONG, confidence=0.9, n_bootstrap=0, seed=8)
    assert hash(p) == hash(FigurePolicy("wrong", 0.9, 0, 7))       # frozen: a cache key, shared safely


@pytest.mark.parametrize(("changes", "named"), [
    ({"unparsed": "drop"}, "unparsed"), ({"unparsed": None}, "unparsed"),
    ({"confidence": 0.0}, "confidence"), ({"confidence": 1.0}, "confidence"), ({"confidence": float("nan")}, "confidence"),
    ({"confidence": True}, "confidence"), ({"confidence": "0.9"}, "confidence"),
    ({"n_bootstrap": -1}, "n_bootstrap"), ({"n_bootstrap": 2.5}, "n_bootstrap"), ({"n_bootstrap": True}, "n_bootstrap"),
    ({"seed": -3}, "seed"), ({"seed": "1"}, "seed"),
])
def test_a_bad_setting_is_refused_when_the_policy_is_built(changes: dict[str, object], named: str) -> None:
    with pytest.raises(ValueError, match=named):
        FigurePolicy(**changes)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=named):
        DEFAULT_POLICY.but(**changes)


def test_numpy_integers_are_whole_numbers() -> None:
    import numpy as np

    assert FigurePolicy(n_bootstrap=np.int64(5), seed=np.int32(2)).n_bootstrap == 5


# -- never compared as a string -----------------------------------------------------------------------

def _policy_comparisons(source: str, *, where: str = "") -> list[str]:
    """Comparisons of a policy value: a compared string constant that is a policy word (``== "exclude"``,
    ``in ("exclude", "wrong")``), or an ``UnparsedPolicy.X`` member compared (the policy answers
    ``drops_unparsed`` instead)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare):
            continue
        for operand in (node.left, *node.comparators):
            consts = [operand] if isinstance(operand, ast.Constant) else (
                list(operand.elts) if isinstance(operand, ast.Tuple | ast.List | ast.Set) else [])
            if any(isinstance(c, ast.Constant) and c.value in POLICY_WORDS for c in consts):
                found.append(f"{where}:{node.lineno}: compares a policy word")
            if (isinstance(operand, ast.Attribute) and isinstance(operand.value, ast.Name)
                    and operand.value.id == "UnparsedPolicy"):
                found.append(f"{where}:{node.lineno}: compares an UnparsedPolicy member")
    return found


def test_the_checker_sees_a_string_comparison() -> None:
    assert _policy_comparisons('x = unparsed == "exclude"')
    assert _policy_comparisons('x = p in ("wrong", "x")')
    assert _policy_comparisons("x = unparsed is UnparsedPolicy.WRONG")
    assert not _policy_comparisons('x = policy.drops_unparsed\ny = {"exclude": 1}["exclude"]')


def test_no_module_compares_policy_values() -> None:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        if path == SRC / "core" / "policy.py":          # where the answers are given, once
            continue
        found += _policy_comparisons(path.read_text(encoding="utf-8"), where=str(path.relative_to(SRC)))
    assert not found, "compare the policy's answers (FigurePolicy.drops_unparsed), not its words:\n" + "\n".join(found)


_TEMPLATE_WORD = re.compile(r"""==\s*['"](?:exclude|wrong)['"]|['"](?:exclude|wrong)['"]\s*==""")


def test_no_template_decides_on_a_policy_word() -> None:
    assert _TEMPLATE_WORD.search('{{ "a" if report.unparsed == "exclude" else "b" }}')      # the checker sees one
    found = [str(p.relative_to(SRC)) for p in SRC.rglob("*") if p.suffix in (".j2", ".html")
             and _TEMPLATE_WORD.search(p.read_text(encoding="utf-8"))]
    assert not found, f"templates print the report's sentences, they never decide: {found}"


def _loose_unparsed(source: str, *, where: str = "") -> list[str]:
    """Functions with a parameter ``unparsed``: the unparsed policy travels inside one FigurePolicy."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            args = node.args
            if any(a.arg == "unparsed" for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)):
                out.append(f"{where}: {node.name}")
    return out


def test_the_policy_travels_as_one_argument() -> None:
    assert _loose_unparsed("def f(x, *, unparsed='exclude'): pass")                      # the checker sees one
    allowed = {("analyses/definitions.py", "register_definition")}   # a published source's own rule, in words
    found = []
    for path in sorted(SRC.rglob("*.py")):
        rel = str(path.relative_to(SRC))
        if rel.startswith("cli/"):                     # the command line's --unparsed option, turned into the policy
            continue
        found += [f for f in _loose_unparsed(path.read_text(encoding="utf-8"), where=rel)
                  if (rel, f.split(": ")[1]) not in allowed]
    assert not found, "pass policy: FigurePolicy, not unparsed=:\n" + "\n".join(found)


# -- the store fills the defaults once ---------------------------------------------------------------------

def test_the_store_reader_fills_a_missing_decoding_once(tmp_path: Path) -> None:
    write_synthetic_run(tmp_path / "run", n_items=3, protocols=("direct",), temperatures=(0.0,)).close()
    con = sqlite3.connect(tmp_path / "run" / "run.sqlite")
    con.execute("UPDATE judgments SET decoding = NULL WHERE rowid % 2 = 0")     # rows of an older writer
    con.commit()
    con.close()
    with open_store(tmp_path / "run") as st:
        for frame in (st.judgments(), st.judgments(["decoding"], compact=True), figure_frame(st),
                      figure_frame(st, cache=tmp_path / "cache"), figure_frame(st, cache=tmp_path / "cache")):
            assert frame["decoding"].astype(object).tolist() == ["free"] * len(frame)
        assert {r["decoding"] for r in st.judgments_at(range(1, 10))} == {"free"}


_FILLS_DECODING = re.compile(r"""fillna\((?:DEFAULT_DECODING|["']free["'])\)|get\(["']decoding["']\)\s+or\s+(?:DEFAULT_DECODING|["']free["'])""")


def test_no_reader_of_a_store_frame_fills_decoding_again() -> None:
    assert _FILLS_DECODING.search('df["decoding"].fillna("free")')                          # the checker sees one
    allowed = {"store/sqlite.py",            # the store reader: READ_DEFAULTS
               "stats/_frame.py",            # with_cell_columns: a frame a caller built by hand
               "core/judgment.py"}           # judgment_frame: rows built in memory, before any store
    found = [str(p.relative_to(SRC)) for p in SRC.rglob("*.py")
             if str(p.relative_to(SRC)) not in allowed and _FILLS_DECODING.search(p.read_text(encoding="utf-8"))]
    assert not found, f"a frame from the store has its defaults already (store.READ_DEFAULTS): {found}"


def test_every_public_name_of_the_package_resolves() -> None:
    import verdictlab

    for name in verdictlab.__all__:          # FigurePolicy among them; each imported when first used
        assert getattr(verdictlab, name) is not None
    assert verdictlab.FigurePolicy is FigurePolicy
