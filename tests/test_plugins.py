"""Plugins: an installed package adds a judge, a protocol, an importer and an analysis through the
entry-point groups ``verdictlab.judges``, ``verdictlab.protocols``, ``verdictlab.importers`` and
``verdictlab.analyses``, and the command line uses them.  A broken plugin is named in one warning and the
others still load.

The two packages are built from local folders and installed with pip (``--no-build-isolation --no-deps
--no-index``: no network) into a folder of this test put on ``PYTHONPATH``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

from verdictlab.core.registry import PluginWarning, Registry

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

PLUGIN = '''
"""A toy verdictlab plugin: a judge that picks the response shown first, a protocol that asks for
1 or 2, a two-column TSV importer (its analysis is in tables.py)."""
from pathlib import Path

from verdictlab.core.items import PairItem
from verdictlab.core.vocab import first_shown
from verdictlab.importers import ImportBatch, judgment_row
from verdictlab.importers.options import ImporterOption
from verdictlab.judges import JudgeAPI, JudgeResponse
from verdictlab.protocols import ParseResult, Protocol


class FirstShown(JudgeAPI):
    provider = "toyfirst"

    async def generate(self, request):
        return JudgeResponse(text="1", tokens_in=1, tokens_out=1, cost_usd=0.0)


def make_first_shown(judge_id, spec):
    """always answers 1: the response shown first"""
    return FirstShown(judge_id, spec or "first")


class OneOrTwo(Protocol):
    id = "toy-1or2"
    label_only = True

    def messages(self, item, order, *, step=""):
        a, b = (item.response_a, item.response_b) if first_shown(order) == "A" else (item.response_b, item.response_a)
        return [{"role": "user", "content": f"{item.question} 1: {a} 2: {b} Answer 1 or 2."}]

    def parse(self, text):
        t = text.strip()
        if t in ("1", "2"):
            return ParseResult("A" if t == "1" else "B", "ok")
        return ParseResult(None, "failed", f"expected 1 or 2, got {t[:20]!r}")


def make_one_or_two(*, template_path=None, **options):
    """answer 1 or 2"""
    return OneOrTwo()


def import_toy_tsv(path, *, delimiter="\\t", **options):
    """item_id<TAB>winner lines"""
    rows, items = [], []
    for line in Path(path).read_text().splitlines():
        item_id, winner = line.split(delimiter)
        items.append(PairItem(item_id=item_id, dataset="toy", question="q", response_a="a", response_b="b",
                              label="A"))
        rows.append(judgment_row(judge="toy-log", dataset="toy", item_id=item_id, protocol="imported", order="AB",
                                 temperature=0.0, rep=0, verdict=winner, label="A", raw_output=line))
    return ImportBatch(format="toy-tsv", source=str(path), judgments=rows, items=items)


# the flags this importer adds to `verdictlab import`
import_toy_tsv.options = (ImporterOption("delimiter", help="the field separator (default: a tab)"),)
'''

TABLES = '''
import pandas as pd

from verdictlab import stats
from verdictlab.analyses import AnalysisInput, register
from verdictlab.core.vocab import CELL_KEY


@register("toy_judgments", title="Judgments per cell (toy plugin)", description="how many judgments each cell has")
def toy_judgments(inp: AnalysisInput):
    frame = stats.with_cell_columns(inp.pairs)
    return frame.groupby(list(CELL_KEY), as_index=False).size().rename(columns={"size": "n"})
'''

PYPROJECT = '''
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "{name}"
version = "0.1"

[tool.setuptools]
packages = ["{package}"]
{entry_points}
'''

TOY_ENTRY_POINTS = '''
[project.entry-points."verdictlab.judges"]
toyfirst = "verdictlab_toyplugin:make_first_shown"

[project.entry-points."verdictlab.protocols"]
toy-1or2 = "verdictlab_toyplugin:make_one_or_two"

[project.entry-points."verdictlab.importers"]
toy-tsv = "verdictlab_toyplugin:import_toy_tsv"

[project.entry-points."verdictlab.analyses"]
toy_judgments = "verdictlab_toyplugin.tables"
'''

BROKEN_ENTRY_POINTS = '''
[project.entry-points."verdictlab.judges"]
brokenjudge = "verdictlab_brokenplugin:make"
'''


def _package(root: Path, name: str, package: str, files: dict[str, str], entry_points: str) -> Path:
    src = root / name
    (src / package).mkdir(parents=True)
    for fname, text in files.items():
        (src / package / fname).write_text(textwrap.dedent(text))
    (src / "pyproject.toml").write_text(PYPROJECT.format(name=name, package=package, entry_points=entry_points))
    return src


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The toy plugin and a broken one, pip-installed into a folder of their own."""
    root = tmp_path_factory.mktemp("plugins")
    toy = _package(root, "verdictlab-toyplugin", "verdictlab_toyplugin",
                   {"__init__.py": PLUGIN, "tables.py": TABLES}, TOY_ENTRY_POINTS)
    broken = _package(root, "verdictlab-brokenplugin", "verdictlab_brokenplugin",
                      {"__init__.py": "raise ImportError('this plugin needs somelib, which is not installed')\n"},
                      BROKEN_ENTRY_POINTS)
    target = root / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-build-isolation", "--no-deps",
                    "--no-index", "--disable-pip-version-check", "--target", str(target), str(toy), str(broken)],
                   check=True, capture_output=True, timeout=300)
    return target


def _cli(args: list[str], plugin_path: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(plugin_path)}
    return subprocess.run([str(BIN / "verdictlab"), *args], capture_output=True, text=True, timeout=300, env=env,
                          cwd=cwd)


@pytest.mark.slow
def test_an_installed_plugin_adds_each_kind_and_a_broken_one_is_one_warning(plugin_path: Path,
                                                                          tmp_path: Path) -> None:
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("".join(json.dumps({"item_id": f"p{i}", "question": f"Q{i}", "response_a": "a",
                                         "response_b": "b", "label": "A"}) + "\n" for i in range(3)))
    (tmp_path / "audit.yaml").write_text(textwrap.dedent("""
        name: plug
        datasets: [{name: jsonl, path: pairs.jsonl}]
        judges: ["toyfirst:x"]
        protocols: [toy-1or2]
        repetitions: 2
    """))
    run = _cli(["run", "audit.yaml", "--run-dir", "runs/plug"], plugin_path, tmp_path)
    assert run.returncode == 0, run.stderr
    warned = [line for line in run.stderr.splitlines() if line.startswith("warning:")]
    assert len(warned) == 1, run.stderr
    assert "verdictlab-brokenplugin 0.1" in warned[0] and "brokenjudge" in warned[0]
    assert "ImportError: this plugin needs somelib" in warned[0]

    report = _cli(["report", "runs/plug", "--format", "json"], plugin_path, tmp_path)
    assert report.returncode == 0, report.stderr
    doc = json.loads(report.stdout)
    (cell,) = doc["cells"]
    # the judge always answers "1" (shown first) and the protocol reads it: C = 1, phi = 1, A = 1/2
    assert (cell["judge"], cell["protocol"], cell["C"], cell["phi"], cell["A"]) == ("toyfirst:x", "toy-1or2",
                                                                                   1.0, 1.0, 0.5)
    table = doc["run"]["analyses"]["toy_judgments"]
    assert table["title"] == "Judgments per cell (toy plugin)" and table["rows"][0][table["columns"].index("n")] == 12

    (tmp_path / "log.tsv").write_text("a1\tA\na2\tB\n")
    imported = _cli(["import", "toy-tsv", "log.tsv", "--run-dir", "runs/imported"], plugin_path, tmp_path)
    assert imported.returncode == 0, imported.stderr
    assert "imported 2 new judgment(s)" in imported.stderr
    (tmp_path / "log.csv").write_text("b1,A\nb2,A\nb3,B\n")      # the plugin's own flag
    imported = _cli(["import", "toy-tsv", "log.csv", "--delimiter", ",", "--run-dir", "runs/imported2"],
                    plugin_path, tmp_path)
    assert imported.returncode == 0, imported.stderr
    assert "imported 3 new judgment(s)" in imported.stderr
    helped = _cli(["import", "--help"], plugin_path, tmp_path)
    assert "--delimiter" in helped.stdout and "toy-tsv" in helped.stdout


def test_without_the_plugins_the_names_are_unknown(tmp_path: Path) -> None:
    """The same command without the plugin folder: the judge is unknown, listed with the known ones."""
    (tmp_path / "audit.yaml").write_text("name: x\ndatasets: [demo]\njudges: ['toyfirst:x']\nprotocols: [direct]\n")
    out = subprocess.run([str(BIN / "verdictlab"), "run", "audit.yaml", "--run-dir", "r"], capture_output=True,
                         text=True, timeout=300, cwd=tmp_path)
    assert out.returncode != 0 and "unknown judge provider 'toyfirst'" in out.stderr


# -- the registry's side, in this process ------------------------------------------------------------------
class _EntryPoint:
    def __init__(self, name: str, value: object, group: str = "verdictlab.test") -> None:
        self.name, self.value, self.group, self.dist = name, "module:attr", group, None
        self._value = value

    def load(self) -> object:
        if isinstance(self._value, Exception):
            raise self._value
        return self._value


def test_plugins_load_on_the_first_question_once_and_a_taken_name_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    from verdictlab.core import registry as reg

    def good() -> str:
        """a good plugin"""
        return "ok"

    eps = [_EntryPoint("bad", RuntimeError("boom")), _EntryPoint("builtin", good), _EntryPoint("good", good),
           _EntryPoint("notcallable", 3)]
    monkeypatch.setattr(reg, "plugin_entry_points", lambda group: eps if group == "verdictlab.test" else [])
    r: Registry[object] = Registry("thing", plugins="verdictlab.test")
    kept = object()
    r.register("builtin", kept)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert r.names() == ["builtin", "good"]          # found when first asked
        assert r.names() == ["builtin", "good"]          # and only then
    bad, taken, notcallable = (str(w.message) for w in caught if issubclass(w.category, PluginWarning))
    assert "plugin 'bad' of an installed package (verdictlab.test: bad = module:attr) could not be loaded" in bad
    assert bad.endswith("RuntimeError: boom")
    assert "'builtin' is already registered" in taken
    assert "must name a callable, got a int" in notcallable
    assert r.get("builtin") is kept and r.get("good") is good and r.describe()["good"] == "a good plugin"
