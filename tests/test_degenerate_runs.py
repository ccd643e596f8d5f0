"""The degenerate-run matrix: every shape real judge logs come in, through every registered analysis,
every ``--definitions`` name and every renderer (terminal, Markdown, JSON, HTML).

Axes (every combination is built):

* labels: none (a reviewer log, a soft-preference log), 2-class (A / B), 3-class with tie labels;
* orders: one (AB only: most published logs), both;
* repetitions: 1 (every published log), 3 (>= 2; 3 also seats a homogeneous jury);
* replies: all readable, some unreadable, none readable, unread score pairs (FastChat's ``[-1, -1]``);
* verdict kind: labels (a verdict column), soft preferences (``p_a``, the verdict derived), score pairs
  (``score_first`` / ``score_second``, the verdict derived);
* cells: one, many.

Pruned, because it cannot exist: "unread score pairs" with any verdict kind but score pairs (``[-1, -1]`` is
a score pair; an unreadable label or preference is the "some" / "none readable" case).  That leaves
3 labels x 2 orders x 2 repetitions x (3 + 3 + 4) reply/kind shapes = 120 combinations, each with
one cell and among many.

Stores are shared across parametrisations, and each report runs once per renderer and is checked for
everything at once:

* **many cells**: one store per (labels, kind) holds every (orders, repetitions, replies) combination as
  cells of its own judge, 12 or 16 cells beside each other, as a run of several judges does (9 stores);
* **one cell**: one store per combination, that combination its only cell (120 stores): every renderer
  on the barest published shape (no labels, one order, one repetition; all 10 reply/kind shapes), the JSON
  on the others (see :func:`formats`: it runs every analysis and definition the other renderers show).

Each store is built by the ``jsonl`` importer (the way a published log arrives) and reported through the
command line only (``verdictlab report RUN --format F --definitions all``), so the test does not depend on
the report's insides.  Checked on every output: exit 0 and no internal error; no ``nan`` / ``NaN`` /
``None`` / ``inf`` text; in the JSON no analysis that failed, no NaN, and every definition row without a
value says why (``missing``) while every row with a value has none, and C, phi, A and T are missing
exactly where the combination makes them so, with its real cause (:func:`expected_reasons`).  Every registered analysis and
cell-column analysis is also called directly (the registry, so a new one is covered without editing this
test) and must not raise.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from verdictlab.analyses import AnalysisInput, registered, registered_cell_columns
from verdictlab.analyses.definitions import definition_names
from verdictlab.core.policy import FigurePolicy
from verdictlab.importers import import_into
from verdictlab.store import open_store

pytestmark = pytest.mark.slow

runner = CliRunner()

LABELS = ("none", "2-class", "3-class")
ORDERS = ("one", "both")
REPS = (1, 3)
KIND_REPLIES = {"labels": ("all", "some", "none"), "soft": ("all", "some", "none"),
                "scores": ("all", "some", "none", "unread")}
FORMATS = ("table", "markdown", "json", "html")
N_ITEMS = 6

Combo = tuple[str, str, int, str, str]        # labels, orders, reps, kind, replies


def combinations() -> list[Combo]:
    return [(lab, orders, reps, kind, replies) for lab, orders, reps in itertools.product(LABELS, ORDERS, REPS)
            for kind, shapes in KIND_REPLIES.items() for replies in shapes]


def _label(labels: str, i: int) -> str | None:
    if labels == "none":
        return None
    return ("A", "B")[i % 2] if labels == "2-class" else ("A", "B", "tie")[i % 3]


def _verdict(i: int, order: str, rep: int, salt: int) -> str:
    """A canonical verdict that flips with the order on some items and with the repetition on others (so
    C, phi and A are neither all 0 nor all 1), and is a tie on some."""
    if i % 5 == 4:
        return "tie"
    flip = (order == "BA") * (i % 2) + rep * (i % 3 == 1) + salt
    return ("A", "B")[(i + flip) % 2]


def _unreadable(replies: str, k: int) -> bool:
    return replies == "none" or (replies in ("some", "unread") and k % 3 == 0)


def _reply(kind: str, replies: str, verdict: str, order: str, unread: bool) -> dict[str, Any]:
    """The columns one reply gives for its kind: a verdict, a soft preference, or a score pair."""
    if kind == "labels":
        return {"verdict": "" if unread else verdict,
                "raw_output": "I cannot decide." if unread else f"Verdict: {verdict}"}
    if kind == "soft":
        return {"p_a": None if unread else {"A": 0.8, "B": 0.3, "tie": 0.5}[verdict]}
    a, b = {"A": (8, 5), "B": (4, 7), "tie": (6, 6)}[verdict]
    first, second = (a, b) if order == "AB" else (b, a)
    if unread:      # an empty score pair, or FastChat's "could not read the review" pair
        unread_pair = -1 if replies in ("unread", "none") else None
        return {"score_first": unread_pair, "score_second": unread_pair}
    return {"score_first": first, "score_second": second}


def rows(combo: Combo, judge: str, salt: int) -> Iterator[dict[str, Any]]:
    labels, orders, reps, kind, replies = combo
    k = 0
    for i in range(N_ITEMS):
        for order in ("AB",) if orders == "one" else ("AB", "BA"):
            for rep in range(reps):
                k += 1
                row: dict[str, Any] = {"item_id": f"q{i}", "judge": judge, "protocol": "review", "dataset": "d",
                                       "order": order, "rep": rep, "temperature": 0.0, "question": f"Question {i}?",
                                       "response_a": f"First answer {i}.", "response_b": f"Second answer {i}."}
                label = _label(labels, i)
                if label is not None:
                    row["label"] = label
                row.update(_reply(kind, replies, _verdict(i, order, rep, salt), order, _unreadable(replies, k)))
                yield row


def combo_name(combo: Combo) -> str:
    labels, orders, reps, kind, replies = combo
    return f"{labels}-{orders}order-{reps}rep-{kind}-{replies}"


def _write(run_dir: Path, records: list[dict[str, Any]]) -> Path:
    src = run_dir.with_suffix(".jsonl")
    src.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    import_into("jsonl", src, run_dir=run_dir)
    return run_dir


class Stores:
    """The module's stores, each built on first use (by :func:`build`) and shared by every test of it."""

    def __init__(self, root: Path) -> None:
        self.root, self.built = root, dict[str, Path]()

    def __getitem__(self, key: str) -> Path:
        if key not in self.built:
            self.built[key] = build(self.root, key)
        return self.built[key]


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Stores:
    return Stores(tmp_path_factory.mktemp("degenerate"))


def build(root: Path, key: str) -> Path:
    """The store ``one:<combination>`` (its only cell) or ``many:<labels>/<kind>`` (a cell per judge)."""
    records = [row for judge, combo in judges(key).items()
               for row in rows(combo, judge, salt=sorted(judges(key)).index(judge) % 2)]
    return _write(root / key.replace(":", "-").replace("/", "-"), records)


def judges(key: str) -> dict[str, Combo]:
    """The combination each judge of the store ``key`` was given."""
    kind, _, rest = key.partition(":")
    if kind == "one":
        return {"judge": next(c for c in combinations() if combo_name(c) == rest)}
    return {combo_name(c): c for c in combinations() if f"{c[0]}/{c[3]}" == rest}


def store_keys() -> list[str]:
    many = [f"many:{lab}/{kind}" for lab in LABELS for kind in KIND_REPLIES]
    return many + [f"one:{combo_name(c)}" for c in combinations()]


def formats(key: str) -> tuple[str, ...]:
    """Every renderer on the many-cell stores and on the one-cell stores of the barest published shape
    (no labels, one order, one repetition: every reply/kind shape); the JSON alone on the other one-cell
    stores -- it runs every analysis and definition the other renderers show, and a report takes seconds
    on this machine, so 4 renderers x 120 stores would take many minutes."""
    if key.startswith("many:") or "-oneorder-1rep-" in key and key.startswith("one:none-"):
        return FORMATS
    return ("json",)


BAD_WORDS = re.compile(r"\b(nan|NaN|NAN|None|inf|-inf)\b")
DATA_URI = re.compile(r"data:[a-z/+]+;base64,[A-Za-z0-9+/=]+")


def _bad_text(text: str) -> list[str]:
    text = DATA_URI.sub("", text)
    return sorted({m.group(0) + " in …" + text[max(0, m.start() - 60):m.end() + 20].replace("\n", "⏎") + "…"
                   for m in BAD_WORDS.finditer(text)})[:5]


def _no_nan(value: str) -> float:
    raise AssertionError(f"{value} in the JSON")


def expected_reasons(combo: Combo) -> dict[str, str | None]:
    """The reason each of verdictlab's own figures has none in a cell of ``combo`` (None: it has a value),
    the first cause in the order the one decider (:mod:`verdictlab.stats.missing`) names them: nothing
    readable, one order, one repetition, no labels."""
    labels, orders, reps, _, replies = combo
    if replies == "none":
        return dict.fromkeys(("C", "phi", "A", "T"), "no readable replies")
    return {"C": "one repetition" if reps == 1 else None, "phi": "one order" if orders == "one" else None,
            "A": "no labels" if labels == "none" else None,
            "T": "one order" if orders == "one" else "no labels" if labels == "none" else None}


def _check_json(text: str, combos: dict[str, Combo]) -> list[str]:
    doc = json.loads(text, parse_constant=_no_nan)
    problems = [f"analysis {name} failed: {t['error']}" for name, t in doc["run"].get("analyses", {}).items()
                if "error" in t]
    problems += _check_remedies(doc["run"].get("analyses", {}).get("remedies"), combos)
    for cell in doc["cells"]:
        seen = {d["definition"] for d in cell.get("definitions", [])}
        problems += [f"definition {n} has no row for {cell['judge']}" for n in _always_rowed() if n not in seen]
        expected = expected_reasons(combos[cell["judge"]])
        for d in cell.get("definitions", []):
            where = f"{cell['judge']}: {d['definition']} {d['variant']}".strip()
            if d["definition"] in expected and d["missing"] != expected[d["definition"]]:
                problems.append(f"{where}: missing {d['missing']!r} (value {d['value']}), the cause is "
                                f"{expected[d['definition']]!r}")
            if d["value"] is None and not d["missing"]:
                problems.append(f"{where}: no value and no reason")
            if d["value"] is not None and d["missing"]:
                problems.append(f"{where}: value {d['value']} beside the reason {d['missing']!r}")
            if d["value"] is not None and not math.isfinite(d["value"]):
                problems.append(f"{where}: value {d['value']}")
    return problems


def _check_remedies(table: dict[str, Any] | None, combos: dict[str, Combo]) -> list[str]:
    """A cell with no readable reply has no remedy figure (both-orders-vote made C 1, tie rate 1 of
    nothing), and each of its rows says why."""
    if table is None:
        return []
    problems = []
    for values in table["rows"]:
        row = dict(zip(table["columns"], values, strict=True))
        if combos[row["judge"]][4] != "none":
            continue
        numbers = {f: row[f] for f in ("A", "phi", "C", "T", "tie_rate") if row[f] is not None}
        if numbers or not row["note"]:
            problems.append(f"remedies {row['judge']} {row['remedy']}: {numbers}, note {row['note']!r}")
    return problems


@cache
def _always_rowed() -> tuple[str, ...]:
    """The definitions every pairwise cell has a row of (a value or a reason): all but the ones for data a
    run may not have at all (soft preferences, score pairs), which leave the table when no cell has any."""
    return tuple(n for n in definition_names() if n not in ("win-rate", "win-rate-discrete", "score-ratio"))


def _report(run: Path, fmt: str) -> str:
    r = runner.invoke(app_(), ["report", str(run), "--format", fmt, "-o", "-", "--definitions", "all",
                               "--bootstrap", "0"])
    assert r.exit_code == 0 and "internal error" not in r.stderr, f"{fmt}: exit {r.exit_code}\n{r.stderr[-2000:]}"
    return r.stdout


@cache
def app_() -> Any:
    from verdictlab.cli.main import app

    return app


@pytest.mark.parametrize("key", store_keys())
def test_every_analysis_definition_and_renderer(key: str, stores: Stores) -> None:
    run = stores[key]
    problems: list[str] = []
    for fmt in formats(key):
        out = _report(run, fmt)
        problems += [f"{fmt}: {p}" for p in _bad_text(out)]
        if fmt == "json":
            problems += _check_json(out, judges(key))
        if fmt == "markdown":       # the definitions table says each missing figure's reason in words
            reasons = {r for c in judges(key).values() for r in expected_reasons(c).values() if r}
            problems += [f"markdown: no '— ({r})'" for r in sorted(reasons) if f"— ({r})" not in out]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("key", [k for k in store_keys() if k.startswith("many:")] + [
    "one:none-oneorder-1rep-scores-unread", "one:2-class-bothorder-1rep-labels-none",
    "one:3-class-bothorder-3rep-soft-some"])
def test_every_registered_analysis_directly(key: str, stores: Stores) -> None:
    """Each analysis of the registry called on its own (the report would show a failure as a table
    with an error): none raises."""
    store = open_store(stores[key])
    try:
        inp = AnalysisInput(store.judgments(), items=store.items(), items_frame=store.items_frame(),
                            policy=FigurePolicy(n_bootstrap=0))
    finally:
        store.close()
    failed = []
    fns: list[tuple[str, Callable[[AnalysisInput], object]]] = [
        *((a.name, a.fn) for a in registered()), *((c.name, c.fn) for c in registered_cell_columns())]
    for name, fn in fns:
        try:
            fn(inp)
        except Exception as e:  # noqa: BLE001 - every failure listed at once
            failed.append(f"{name}: {type(e).__name__}: {e}")
    assert not failed, "\n".join(failed)
