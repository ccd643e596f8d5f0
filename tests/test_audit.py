"""``verdictlab.audit(...)``: the ten-line audit from a script or a notebook -- every form of data and
judge it takes, resume, errors naming the argument, the run in a thread of its own where an event loop
already runs (a notebook's cell), and a notebook's interrupt stopping that run cleanly."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import verdictlab
from verdictlab.core.items import ItemError
from verdictlab.engine.config import ConfigError
from verdictlab.errors import InputError
from verdictlab.judges.python_function import FUNCTIONS
from verdictlab.report.model import Report
from verdictlab.store import open_store
from verdictlab.workflows.audit import dataset_entry

REPO = Path(__file__).resolve().parents[1]
RECORDS = [{"item_id": f"p{i}", "question": f"Q{i}?", "response_a": f"right {i}", "response_b": f"wrong {i}",
            "label": "A" if i % 2 else "B"} for i in range(4)]
SIM = "sim:skill=0.9,seed=3"


@pytest.fixture(autouse=True)
def _forget_functions() -> Iterator[None]:
    before = set(FUNCTIONS.names())
    yield
    for name in set(FUNCTIONS.names()) - before:
        FUNCTIONS.unregister(name)


def always_a(messages: list[dict[str, str]], *, temperature: float, max_tokens: int, seed: int | None) -> str:
    return "A"


def test_every_public_name_resolves() -> None:
    for name in verdictlab.__all__:
        assert getattr(verdictlab, name) is not None, name
    assert verdictlab.audit.__module__ == "verdictlab.workflows.audit"


def test_a_function_audited_in_one_call(tmp_path: Path) -> None:
    report = verdictlab.audit(judges=[always_a, SIM], data=RECORDS, protocols=["direct", "vf-json"],
                              repetitions=2, run_dir=tmp_path / "run")
    assert isinstance(report, Report)
    cells = {(c.key.judge, c.key.protocol): c for c in report.cells}
    assert set(cells) == {(j, p) for j in ("python:always_a", SIM) for p in ("direct", "vf-json")}
    # always "A": consistent, flips with every order, right on the half of the pairs labelled A
    assert cells[("python:always_a", "direct")].value("C") == 1.0 and cells[("python:always_a", "direct")].value("phi") == 1.0
    assert cells[("python:always_a", "direct")].value("A") == 0.5
    assert cells[("python:always_a", "vf-json")].value("n_unparsed") == 16      # "A" is no JSON: counted, not guessed
    assert report.decision and report.decision[0].dataset == "data"
    assert (tmp_path / "run" / "data.jsonl").read_text().count("\n") == len(RECORDS)


def test_a_second_call_resumes_and_judges_nothing_twice(tmp_path: Path) -> None:
    calls = [0]

    def counted(messages: Any, **_: Any) -> str:
        calls[0] += 1
        return "B"

    for _ in range(2):
        verdictlab.audit(counted, RECORDS, run_dir=tmp_path / "run", repetitions=2)
    assert calls[0] == len(RECORDS) * 2 * 2


def test_data_as_a_file_a_dataset_name_a_frame_or_records_gives_the_same_items(tmp_path: Path) -> None:
    jsonl = tmp_path / "pairs.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    csv = tmp_path / "pairs.csv"
    pd.DataFrame(RECORDS).to_csv(csv, index=False)
    frame = pd.DataFrame(RECORDS)
    frame.loc[0, "label"] = None                    # a missing label in a frame is NaN: stored as null
    stored = {}
    for name, data in {"jsonl": jsonl, "csv": str(csv), "frame": frame, "records": RECORDS}.items():
        verdictlab.audit(SIM, data, run_dir=tmp_path / name, repetitions=1)
        with open_store(tmp_path / name) as st:
            stored[name] = {it.item_id: (it.question, it.response_a, it.response_b, it.label) for it in st.items()}
    assert stored["jsonl"] == stored["csv"] == stored["records"]
    assert stored["frame"]["p0"][3] is None and {k: v for k, v in stored["frame"].items() if k != "p0"} == \
        {k: v for k, v in stored["records"].items() if k != "p0"}
    report = verdictlab.audit(SIM, "demo", run_dir=tmp_path / "demo", repetitions=1)
    assert {c.key.dataset for c in report.cells} == {"demo"}


def test_bad_data_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"'nope' is neither a file nor a dataset name \(known: .*demo"):
        dataset_entry("nope", tmp_path)
    (tmp_path / "x.txt").write_text("hello")
    with pytest.raises(InputError, match=r"no loader for \.txt"):
        dataset_entry(str(tmp_path / "x.txt"), tmp_path)
    with pytest.raises(ItemError, match="data, row 2: a record must be a mapping"):
        dataset_entry([RECORDS[0], "not a record"], tmp_path)
    with pytest.raises(ItemError, match="data, row 1: cannot be written as JSON"):
        dataset_entry([{**RECORDS[0], "label": float("nan")}], tmp_path)
    with pytest.raises(TypeError, match="got a int"):
        dataset_entry(3, tmp_path)
    with pytest.raises(ItemError, match="row 1.*response_b"):          # the loader's own check, row named
        verdictlab.audit(SIM, [{"item_id": "x", "question": "q", "response_a": "a"}], run_dir=tmp_path / "r")


def test_the_figure_policy_reaches_the_report(tmp_path: Path) -> None:
    wide = verdictlab.audit(SIM, RECORDS, repetitions=2, run_dir=tmp_path / "run",
                            policy=verdictlab.FigurePolicy(confidence=0.99, n_bootstrap=0))
    narrow = verdictlab.audit(SIM, RECORDS, repetitions=2, run_dir=tmp_path / "run",
                              policy=verdictlab.FigurePolicy(confidence=0.5, n_bootstrap=0))
    (w,), (n,) = wide.cells, narrow.cells
    wc, nc = w.figure("C"), n.figure("C")
    assert wc.point == nc.point and wc.high - wc.low > nc.high - nc.low  # type: ignore[operator]
    with pytest.raises(TypeError, match="policy is a verdictlab.FigurePolicy, got a dict"):
        verdictlab.audit(SIM, RECORDS, run_dir=tmp_path / "run", policy={"confidence": 0.9})  # type: ignore[arg-type]


def test_a_bad_argument_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"verdictlab.audit\(\): field 'repetitions'"):
        verdictlab.audit(SIM, RECORDS, repetitions=0, run_dir=tmp_path / "r")
    with pytest.raises(TypeError, match="a judge is an id, a config entry or a function"):
        verdictlab.audit([3], RECORDS, run_dir=tmp_path / "r")


def test_judges_as_ids_entries_and_declared_functions(tmp_path: Path) -> None:
    @verdictlab.judge("declared-b")
    def declared(messages: Any, **_: Any) -> str:
        return "B"

    report = verdictlab.audit([declared, {"id": SIM, "concurrency": 2, "label": "sim"}], RECORDS,
                              temperatures=0.7, run_dir=tmp_path / "run")
    assert {c.key.judge for c in report.cells} == {"python:declared-b", SIM}
    assert {c.key.temperature for c in report.cells} == {0.7}


def test_a_run_stopped_early_warns_and_reports_what_was_judged(tmp_path: Path) -> None:
    with pytest.warns(UserWarning, match="stopped early: budget"):
        report = verdictlab.audit(always_a, RECORDS, budget={"max_calls": 3}, run_dir=tmp_path / "run")
    assert report.totals["n_judgments"] == 3


def test_inside_an_event_loop_the_run_has_a_thread_of_its_own(tmp_path: Path) -> None:
    threads = set()

    async def which_thread(messages: Any, **_: Any) -> str:
        threads.add(threading.current_thread().name)
        return "A"

    async def cell() -> Report:       # what a notebook's cell is: code inside a running loop
        return verdictlab.audit(which_thread, RECORDS, run_dir=tmp_path / "run", repetitions=1)

    report = asyncio.run(cell())
    assert len(report.cells) == 1 and {t.split("_")[0] for t in threads} == {"verdictlab-run"}

    async def plumbing() -> Any:      # the public run_config too (it used to fail: asyncio.run in a loop)
        from verdictlab.engine import run_config
        from verdictlab.engine.config import config_from_dict

        cfg = config_from_dict({"name": "p", "datasets": ["demo"], "judges": [SIM], "protocols": ["direct"],
                                "repetitions": 1})
        return run_config(cfg, tmp_path / "plumbing", progress=False)

    assert asyncio.run(plumbing()).n_written == 28 * 2


@pytest.mark.slow
def test_an_interrupt_inside_an_event_loop_stops_the_run_cleanly(tmp_path: Path) -> None:
    """A kernel interrupt is a KeyboardInterrupt in the cell's thread: the run in its own thread stops
    within a second, keeps what it judged, and the call returns the report of it."""
    script = textwrap.dedent(f"""
        import asyncio, os, signal, threading, time, warnings
        import verdictlab

        calls = []

        def slow(messages, **_):
            calls.append(1)
            if len(calls) == 20:             # the user interrupts the kernel mid-run
                threading.Timer(0.01, os.kill, (os.getpid(), signal.SIGINT)).start()
            time.sleep(0.02)
            return "A"

        async def cell():
            signal.signal(signal.SIGINT, signal.default_int_handler)   # as a Jupyter kernel has it
            t0 = time.monotonic()
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                report = verdictlab.audit({{"id": slow, "concurrency": 1}}, "demo", repetitions=5,
                                          run_dir={str(tmp_path / "run")!r})
            print("judged", report.totals["n_judgments"], "of", 28 * 2 * 5)
            print("seconds", round(time.monotonic() - t0, 1))
            print("warned", [str(x.message) for x in w])

        asyncio.run(cell())
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(REPO / "src")}, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    lines = dict(line.split(" ", 1) for line in out.stdout.splitlines())
    judged = int(lines["judged"].split()[0])
    assert 20 <= judged < 280
    assert "stopped early: interrupted" in lines["warned"]


def test_the_report_shows_itself_and_gives_frames(tmp_path: Path) -> None:
    import html
    import re

    report = verdictlab.audit([always_a, SIM], RECORDS, repetitions=2, run_dir=tmp_path / "run")
    assert repr(report) == f"Report(run_dir={str(tmp_path / 'run')!r}, 2 cells, 32 judgments)"
    frame = report._repr_html_()
    page = html.unescape(re.fullmatch(r'<iframe srcdoc="(.*?)" sandbox="allow-scripts".*</iframe>', frame,
                                      re.S).group(1))
    assert re.findall(r'<section id="([\w-]+)"', page)[0] == "decision"
    assert "127.0.0.1:8765" not in page                        # no links to a viewer that is not running
    assert re.search(r'(?:src|href)="(?:https?:)?//', page) is None          # self-contained: nothing fetched
    cells = report.to_pandas()
    assert list(cells.columns[:5]) == ["judge", "protocol", "dataset", "temperature", "decoding"]
    assert {"C", "C_lo", "C_hi", "phi", "A", "T", "T_lo", "T_hi", "n_pairs", "agreement.kappa"} <= set(cells.columns)
    assert sorted(cells["judge"]) == ["python:always_a", SIM] and cells["n_judgments"].tolist() == [16, 16]
    judgments = report.to_pandas("judgments")
    assert len(judgments) == 32 and {"raw_output", "parse_status", "attempts", "error"} <= set(judgments.columns)
    with pytest.raises(ValueError, match="'cells' or 'judgments', not 'items'"):
        report.to_pandas("items")


def _stderr_on_a_terminal(script: str, cwd: Path) -> str:
    """What ``script`` writes to its stderr when that is a terminal (a pseudo-terminal read here)."""
    import pty

    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=follower, cwd=cwd, env={**os.environ, "PYTHONPATH": str(REPO / "src"),
                                                           "COLUMNS": "120", "TERM": "xterm"})
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:               # EIO: the process closed its end
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert proc.wait(timeout=120) == 0, b"".join(chunks).decode(errors="replace")
    return b"".join(chunks).decode(errors="replace")


@pytest.mark.slow
def test_the_terminal_bar_outside_a_notebook(tmp_path: Path) -> None:
    """On a terminal audit() draws the terminal bar; IPython imported outside a kernel is no notebook;
    with neither (a pipe) nothing is drawn."""
    script = textwrap.dedent(f"""
        import IPython, verdictlab
        from verdictlab.engine.trial_runner import in_notebook
        assert not in_notebook()
        verdictlab.audit({SIM!r}, "demo", repetitions=1, run_dir="run")
    """)
    drawn = _stderr_on_a_terminal(script, tmp_path)
    assert "judging" in drawn and "56/56" in drawn                 # 28 demo pairs x 2 orders
    piped = subprocess.run([sys.executable, "-c", script.replace('"run"', '"run2"')], capture_output=True,
                           text=True, timeout=120, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    assert piped.returncode == 0, piped.stderr
    assert "judging" not in piped.stderr
