"""A Python function as a judge (``python:module:function``, ``@verdictlab.judge``): the signature checked
when it is built, sync and async calls, and everything the engine's caller does for an API judge --
retries on the declared exceptions, concurrency, budget, cache, resume, accounting -- with an exception of
the user's code recorded as a failed attempt (type and scrubbed message), never a crash or a key."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import verdictlab
from verdictlab.engine import run_config
from verdictlab.engine.config import config_from_dict
from verdictlab.judges import JudgeConfigError, JudgeRequest, make_judge
from verdictlab.judges.python_function import (
    FUNCTIONS,
    SIGNATURE,
    JudgeReply,
    pick_label,
    reply_response,
)
from verdictlab.store import open_store

N_PAIRS = 4


#: shaped like a provider key (built here so no key-like literal is in the repository); must never be stored
FAKE_KEY = "sk-" + "".join(chr(ord("a") + i) for i in range(21))


@pytest.fixture(autouse=True)

def _forget_functions() -> Iterator[None]:
    """The registry of judge functions is global: each test starts and ends without its own."""
    before = set(FUNCTIONS.names())
    yield
    for name in set(FUNCTIONS.names()) - before:
        FUNCTIONS.unregister(name)


@pytest.fixture
def pairs(tmp_path: Path) -> Path:
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps({"item_id": f"p{i}", "question": f"Q{i}?", "response_a": f"good {i}",
                                        "response_b": f"bad {i}", "label": "A"}) + "\n" for i in range(N_PAIRS)))
    return path


def _run(pairs: Path, run_dir: Path, judges: list[Any], **extra: Any) -> Any:
    cfg = config_from_dict({"name": "t", "datasets": [{"name": "jsonl", "path": str(pairs)}], "judges": judges,
                            "protocols": extra.pop("protocols", ["direct"]), "repetitions": extra.pop("repetitions", 1),
                            **extra})
    return run_config(cfg, run_dir, progress=False)


def _first(messages: list[dict[str, str]], *, temperature: float, max_tokens: int, seed: int | None) -> str:
    return "A"


# -- the signature ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [
    lambda messages: "A",                                     # no generation settings
    lambda: "A",                                              # nothing at all
    lambda messages, *, temperature, max_tokens, seed, rubric: "A",   # one more required argument
])
def test_a_wrong_signature_is_one_error_showing_the_expected_one(bad: Any) -> None:
    with pytest.raises(JudgeConfigError) as exc:
        verdictlab.judge("bad")(bad)
    assert SIGNATURE in str(exc.value) and "'bad'" in str(exc.value)
    assert "bad" not in FUNCTIONS


def test_a_wrong_signature_behind_an_import_path_fails_when_the_judge_is_built(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "userjudges_sig.py").write_text("def judge(prompt):\n    return 'A'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(JudgeConfigError) as exc:
        make_judge("python:userjudges_sig:judge")
    assert SIGNATURE in str(exc.value) and "(prompt)" in str(exc.value)


def test_flexible_signatures_are_accepted() -> None:
    verdictlab.judge("kw")(lambda messages, **settings: "A")
    verdictlab.judge("defaults")(lambda messages, temperature=0.0, max_tokens=1, seed=None, extra=1: "A")
    assert {"kw", "defaults"} <= set(FUNCTIONS.names())


@pytest.mark.parametrize("name", ["a:b", "", "has space"])
def test_a_name_that_cannot_be_a_judge_id_is_refused(name: str) -> None:
    with pytest.raises(JudgeConfigError, match="python:NAME"):
        verdictlab.judge(name)(_first)


def test_unknown_names_and_modules_say_what_to_do(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with pytest.raises(JudgeConfigError, match=r"no judge function 'nobody' is registered.*@verdictlab.judge"):
        make_judge("python:nobody")
    with pytest.raises(JudgeConfigError, match="cannot import 'no_such_module_xyz'.*PYTHONPATH"):
        make_judge("python:no_such_module_xyz:f")
    (tmp_path / "userjudges_here.py").write_text("def f(messages, **_):\n    return 'A'\n")
    monkeypatch.chdir(tmp_path)             # beside the module, but not on the path: say so
    with pytest.raises(JudgeConfigError, match="it is in the working directory.*PYTHONPATH=."):
        make_judge("python:userjudges_here:f")
    (tmp_path / "userjudges_raise.py").write_text("raise RuntimeError('broken at import')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(JudgeConfigError, match="importing 'userjudges_raise' raised RuntimeError: broken at import"):
        make_judge("python:userjudges_raise:f")
    with pytest.raises(JudgeConfigError, match="has no attribute 'nope'"):
        make_judge("python:json:nope")


# -- calls through the engine -------------------------------------------------------------------------------
def test_an_import_path_judge_runs_with_its_declaration(pairs: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "userjudges_ok.py").write_text(textwrap.dedent("""
        import verdictlab
        seen = []

        @verdictlab.judge("declared-elsewhere", label_probs=True)
        def picks_first(messages, *, temperature, max_tokens, seed):
            seen.append((messages, temperature, max_tokens, seed))
            return verdictlab.JudgeReply("A", label_probs={"A": 0.9, "B": 0.1}, tokens_in=7, tokens_out=1,
                                         cost_usd=0.002)
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    summary = _run(pairs, tmp_path / "run", ["python:userjudges_ok:picks_first"], temperatures=[0.5])
    assert summary.n_written == 2 * N_PAIRS and summary.n_failed == 0
    # accounting from the reply: 8 calls x (7 + 1) tokens, 8 x $0.002
    assert (summary.calls, summary.tokens_in + summary.tokens_out) == (8, 64)
    assert summary.cost_usd == pytest.approx(0.016)
    seen = sys.modules["userjudges_ok"].seen
    messages, temperature, max_tokens, seed = seen[0]
    assert messages[-1]["role"] == "user" and "Q" in messages[-1]["content"]     # the rendered prompt
    assert temperature == 0.5 and max_tokens > 0 and isinstance(seed, int)
    assert len({s for *_, s in seen}) == len(seen)             # a seed per trial
    with open_store(tmp_path / "run") as st:
        j = st.judgments()
        meta = st.get_meta("judges")["python:userjudges_ok:picks_first"]
    assert set(j["parse_status"]) == {"ok"} and j["tokens_in"].eq(7).all()
    # shown "A" with P = 0.9: canonical A when shown AB, canonical B (P(A) = 0.1) when shown BA
    assert sorted(j["p_a"].round(3).unique()) == [0.1, 0.9]
    assert meta["provider"] == "python" and meta["function"] == "userjudges_ok:picks_first"
    assert meta["label_probs"] is True and meta["async"] is False


def test_sync_functions_run_in_a_pool_bounded_by_the_concurrency(pairs: Path, tmp_path: Path) -> None:
    lock, now, peak, threads = threading.Lock(), [0], [0], set()

    @verdictlab.judge("slow")
    def slow(messages: Any, *, temperature: float, max_tokens: int, seed: int | None) -> str:
        with lock:
            now[0] += 1
            peak[0] = max(peak[0], now[0])
            threads.add(threading.current_thread().name)
        time.sleep(0.05)
        with lock:
            now[0] -= 1
        return "A"

    _run(pairs, tmp_path / "run", [{"id": "python:slow", "concurrency": 3}], repetitions=3)
    assert peak[0] == 3                      # 24 calls of 50 ms: three at a time, never more
    assert threads and all(t.startswith("verdictlab-judge-slow") for t in threads)

    peak[0] = 0
    verdictlab.judge("slow2", concurrency=2)(slow)        # the function's own cap wins over the spec's
    _run(pairs, tmp_path / "run2", [{"id": "python:slow2", "concurrency": 8}], repetitions=3)
    assert peak[0] == 2


def test_the_request_limit_paces_the_calls(pairs: Path, tmp_path: Path) -> None:
    started: list[float] = []

    @verdictlab.judge("paced")
    def paced(messages: Any, *, temperature: float, max_tokens: int, seed: int | None) -> str:
        started.append(time.monotonic())
        return "A"

    # 8 calls at 240 requests a minute = 4 a second, with a burst of one second's worth (4): the last
    # call starts at least (8 - 4) / 4 = 1 s after the first (a loaded machine only makes it later)
    summary = _run(pairs, tmp_path / "run", [{"id": "python:paced", "requests_per_minute": 240}])
    assert summary.n_written == 2 * N_PAIRS and len(started) == 2 * N_PAIRS
    assert max(started) - min(started) >= 0.95


def test_async_functions_are_awaited(pairs: Path, tmp_path: Path) -> None:
    loops = set()

    @verdictlab.judge("async-b")
    async def async_b(messages: Any, *, temperature: float, max_tokens: int, seed: int | None) -> str:
        loops.add(id(asyncio.get_running_loop()))
        await asyncio.sleep(0)
        return "B"

    _run(pairs, tmp_path / "run", ["python:async-b"])
    with open_store(tmp_path / "run") as st:
        j = st.judgments()
    assert len(loops) == 1 and set(j["parse_status"]) == {"ok"}
    assert (j["shown_first_won"] == 0).all()             # "B" is always the second shown


def test_declared_exceptions_are_retried_others_recorded_never_raised(pairs: Path, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "tok-0123456789abcdefXYZ"
    monkeypatch.setenv("MY_SERVICE_TOKEN", secret)
    attempts: dict[str, int] = {}

    class Busy(Exception):
        pass

    @verdictlab.judge("flaky", retry_on=(Busy, TimeoutError))
    def flaky(messages: Any, *, temperature: float, max_tokens: int, seed: int | None) -> str:
        key = messages[-1]["content"] + str(seed)
        attempts[key] = attempts.get(key, 0) + 1
        if attempts[key] == 1:
            raise Busy("busy, retry")
        return "A"

    @verdictlab.judge("buggy")
    def buggy(messages: Any, *, temperature: float, max_tokens: int, seed: int | None) -> str:
        raise KeyError(f"no field, key {FAKE_KEY}, token {secret}")

    @verdictlab.judge("exits")
    def exits(messages: Any, *, temperature: float, max_tokens: int, seed: int | None) -> str:
        sys.exit(3)

    summary = _run(pairs, tmp_path / "run", [{"id": "python:flaky", "backoff_base_s": 0.001},
                                              "python:buggy", "python:exits"])
    assert summary.n_written == 3 * 2 * N_PAIRS                      # every trial stored, the run finished
    with open_store(tmp_path / "run") as st:
        j = st.judgments().set_index("judge")
        att = st.attempts()
    assert set(j.loc["python:flaky", "attempts"]) == {2} and j.loc["python:flaky", "error"].isna().all()
    flaky_att = att[att["judge"] == "python:flaky"]
    assert sorted(flaky_att["outcome"].value_counts().items()) == [("ok", 8), ("retry", 8)]
    assert set(flaky_att.loc[flaky_att["outcome"] == "retry", "error"]) == {"Busy: busy, retry"}
    errors = set(j.loc["python:buggy", "error"])
    assert len(errors) == 1 and next(iter(errors)).startswith("KeyError: ")
    assert secret not in next(iter(errors)) and "sk-abcdef" not in next(iter(errors))
    assert set(j.loc["python:buggy", "attempts"]) == {1}        # not declared retryable: one attempt
    assert set(j.loc["python:exits", "error"]) == {"RuntimeError: the judge function raised SystemExit(3)"}
    with sqlite3.connect(tmp_path / "run" / "run.sqlite") as db:      # every table: rows, attempts, meta
        everything = "\n".join(db.iterdump())
    assert secret not in everything and FAKE_KEY not in everything


def test_an_async_functions_exceptions_are_recorded_and_retried_like_a_sync_ones(pairs: Path, tmp_path: Path) -> None:
    seen: dict[int | None, int] = {}

    @verdictlab.judge("async-flaky", retry_on=ConnectionError)
    async def async_flaky(messages: Any, *, temperature: float, max_tokens: int, seed: int | None) -> str:
        seen[seed] = seen.get(seed, 0) + 1
        if seen[seed] == 1:
            raise ConnectionError("reset by peer")
        return "A"

    @verdictlab.judge("async-buggy")
    async def async_buggy(messages: Any, *, temperature: float, max_tokens: int, seed: int | None) -> str:
        raise ZeroDivisionError("division by zero")

    summary = _run(pairs, tmp_path / "run", [{"id": "python:async-flaky", "backoff_base_s": 0.001},
                                              "python:async-buggy"], orders=["AB"])
    assert summary.n_written == 2 * N_PAIRS
    with open_store(tmp_path / "run") as st:
        j = st.judgments().set_index("judge")
    assert set(j.loc["python:async-flaky", "attempts"]) == {2} and j.loc["python:async-flaky", "error"].isna().all()
    assert set(j.loc["python:async-buggy", "error"]) == {"ZeroDivisionError: division by zero"}
    assert set(j.loc["python:async-buggy", "attempts"]) == {1}


def test_a_timeout_is_a_transient_failure_of_the_call(pairs: Path, tmp_path: Path) -> None:
    @verdictlab.judge("sleepy")
    def sleepy(messages: Any, *, temperature: float, max_tokens: int, seed: int | None) -> str:
        time.sleep(0.3)
        return "A"

    _run(pairs, tmp_path / "run", [{"id": "python:sleepy", "timeout_s": 0.05, "max_retries": 1,
                                    "backoff_base_s": 0.001}], orders=["AB"])
    with open_store(tmp_path / "run") as st:
        att = st.attempts()
        j = st.judgments()
    assert list(att["outcome"].value_counts().sort_index().items()) == [("failed", N_PAIRS), ("retry", N_PAIRS)]
    assert j["error"].str.startswith("timeout after").all()


@pytest.mark.parametrize(("returned", "error"), [
    (3, "returned int; expected str or verdictlab.JudgeReply"),
    (None, "returned NoneType"),
    (JudgeReply(text=None), "returned a JudgeReply whose text is NoneType"),  # type: ignore[arg-type]
])
def test_a_reply_of_the_wrong_type_is_a_recorded_failure(returned: Any, error: str, pairs: Path,
                                                        tmp_path: Path) -> None:
    verdictlab.judge("wrong")(lambda messages, **_: returned)
    summary = _run(pairs, tmp_path / "run", ["python:wrong"], orders=["AB"])
    assert summary.n_failed == N_PAIRS
    with open_store(tmp_path / "run") as st:
        errors = set(st.judgments()["error"])
    assert errors == {f"TypeError: judge function 'wrong' {error}" + ("" if "expected" in error else
                                                                       "; expected str or verdictlab.JudgeReply")}


@pytest.mark.parametrize(("probs", "note"), [
    ({"A": float("nan"), "B": 0.5}, "label_probs ignored: 'A': nan is not a non-negative finite number"),
    ({"A": -0.1, "B": 1.1}, "label_probs ignored: 'A': -0.1 is not a non-negative finite number"),
    ({"A": 0, "B": 0}, "label_probs ignored: they are all zero"),
    ([0.5, 0.5], "label_probs ignored: not a non-empty mapping of label -> probability (list)"),
])
def test_bad_label_probabilities_are_left_out_with_a_note(probs: Any, note: str) -> None:
    resp = reply_response(JudgeReply("A", label_probs=probs), name="f")
    assert resp.text == "A" and resp.choice_probs is None and resp.notes == [note]


def test_resume_cache_and_budget_apply(pairs: Path, tmp_path: Path) -> None:
    calls = [0]

    @verdictlab.judge("counted")
    def counted(messages: Any, *, temperature: float, max_tokens: int, seed: int | None) -> str:
        calls[0] += 1
        return "A"

    first = _run(pairs, tmp_path / "run", ["python:counted"], budget={"max_calls": 5})
    assert calls[0] == 5 and first.stopped and "budget" in first.stopped
    _run(pairs, tmp_path / "run", ["python:counted"])              # resumes: only what is missing
    assert calls[0] == 2 * N_PAIRS
    _run(pairs, tmp_path / "run", ["python:counted"])
    assert calls[0] == 2 * N_PAIRS                                  # nothing judged twice


def test_the_cache_answers_a_request_again_and_is_keyed_by_the_function(pairs: Path, tmp_path: Path) -> None:
    calls = [0]

    @verdictlab.judge("cached")
    def cached(messages: Any, *, temperature: float, max_tokens: int, seed: int | None) -> str:
        calls[0] += 1
        return "A"

    verdictlab.judge("other")(lambda messages, **_: "B")
    judges = ["python:cached", "python:other"]
    _run(pairs, tmp_path / "run", judges, cache="on")
    assert calls[0] == 2 * N_PAIRS
    with sqlite3.connect(tmp_path / "run" / "run.sqlite") as db:      # the rows lost, the cache kept
        db.execute("DELETE FROM judgments")
    _run(pairs, tmp_path / "run", judges, cache="on")
    assert calls[0] == 2 * N_PAIRS                                   # answered from the cache
    with open_store(tmp_path / "run") as st:
        j = st.judgments().set_index("judge")
    assert j["cache_hit"].eq(1).all()
    # the key holds the function's name: the other function is never served this one's answers
    assert set(j.loc["python:other", "raw_output"]) == {"B"} and set(j.loc["python:cached", "raw_output"]) == {"A"}


def test_constrained_decoding_draws_the_verdict_from_the_label_probabilities(pairs: Path, tmp_path: Path) -> None:
    @verdictlab.judge("probs", label_probs=True)
    def probs(messages: Any, *, temperature: float, max_tokens: int, seed: int | None) -> JudgeReply:
        return JudgeReply("I think the first one", label_probs={"A": 0.2, "B": 0.8})

    verdictlab.judge("plain")(lambda messages, **_: "A")
    _run(pairs, tmp_path / "run", ["python:probs", "python:plain"], protocols=["vf-json"],
         decoding=["free", "constrained"])
    with open_store(tmp_path / "run") as st:
        j = st.judgments()
        mechanisms = st.get_meta("decoding_mechanisms")
    con = j[j["decoding"] == "constrained"]
    assert set(con["judge"]) == {"python:probs"}                         # never a silently free one
    assert mechanisms["python:plain"]["vf-json"].startswith("not constrainable")
    # temperature 0: the argmax, shown "B", in the protocol's own format, parsed strictly
    assert set(con["raw_output"]) == {'{"winner": "B", "rationale": ""}'} and set(con["parse_status"]) == {"ok"}
    assert (con["shown_first_won"] == 0).all()
    free = j[(j["decoding"] == "free") & (j["judge"] == "python:probs")]
    assert set(free["parse_status"]) == {"failed"}                       # its free text is no verdict


def test_constrained_without_probabilities_fails_with_the_reason() -> None:
    from verdictlab.protocols import get_protocol

    verdictlab.judge("lies", label_probs=True)(lambda messages, **_: "A")
    judge = make_judge("python:lies")
    fmt = get_protocol("vf-json").output_format()
    request = JudgeRequest(messages=({"role": "user", "content": "?"},), decoding="constrained", output_format=fmt)
    with pytest.raises(ValueError, match="needs the judge function's label probabilities over A, B; 'lies' gave none"):
        asyncio.run(judge.generate(request))


def test_pick_label_known_values() -> None:
    # temperature 0: the argmax; an exact tie goes to the first label
    assert pick_label([0.3, 0.7], temperature=0.0, seed=1)[0] == 1
    assert pick_label([0.5, 0.5], temperature=0.0, seed=1)[0] == 0
    # a label with probability 0 is never drawn, whatever the seed
    assert {pick_label([0.0, 1.0], temperature=1.0, seed=s)[0] for s in range(50)} == {1}
    # weights p^(1/T): at T = 1 P(first) = 0.8; at T = 0.5 P(first) = 0.64 / (0.64 + 0.04) = 0.941
    draws = [pick_label([0.8, 0.2], temperature=1.0, seed=s)[0] for s in range(4000)]
    assert abs(draws.count(0) / 4000 - 0.8) < 0.03
    draws = [pick_label([0.8, 0.2], temperature=0.5, seed=s)[0] for s in range(4000)]
    assert abs(draws.count(0) / 4000 - 0.941) < 0.02
    assert pick_label([0.8, 0.2], temperature=1.0, seed=7) == pick_label([0.8, 0.2], temperature=1.0, seed=7)


def test_the_expected_figures_stand_on_the_functions_probabilities(pairs: Path, tmp_path: Path) -> None:
    from verdictlab.core.policy import FigurePolicy
    from verdictlab.report import build_report

    @verdictlab.judge("prob-judge")
    def prob_judge(messages: Any, *, temperature: float, max_tokens: int, seed: int | None) -> JudgeReply:
        return JudgeReply("A", label_probs={"A": 0.75, "B": 0.25})

    verdictlab.judge("no-probs")(lambda messages, **_: "A")
    _run(pairs, tmp_path / "run", ["python:prob-judge", "python:no-probs"], repetitions=2, temperatures=[1.0])
    cells = {c.key.judge: c for c in build_report(tmp_path / "run", policy=FigurePolicy(n_bootstrap=0)).cells}
    # P(shown A) = 3/4 in both orders: per (pair, order) both of R = 2 draws agree with
    # probability 0.75^2 + 0.25^2 = 0.625 = C_expected
    assert cells["python:prob-judge"].value("C_expected") == pytest.approx(0.625)
    assert cells["python:no-probs"].value("C_expected") is None


@pytest.mark.slow
def test_an_import_path_judge_given_on_the_command_line(tmp_path: Path) -> None:
    """``--judge python:module:function`` (examples/my_judges.py, its folder on PYTHONPATH): every trial
    judged and read, with the declaration made beside the function."""
    import os
    import subprocess

    repo = Path(__file__).resolve().parents[1]
    out = subprocess.run([str(Path(sys.executable).parent / "verdictlab"), "demo", "--judge",
                          "python:my_judges:shorter", "--pairs", "6", "--repetitions", "2", "--protocols", "direct",
                          "--bootstrap", "0", "--no-progress", "--run-dir", "run"], capture_output=True, text=True,
                         timeout=300, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(repo / "examples")})
    assert out.returncode == 0, out.stderr
    with open_store(tmp_path / "run") as st:
        j = st.judgments()
        meta = st.get_meta("judges")["python:my_judges:shorter"]
    assert len(j) == 6 * 2 * 2 and set(j["parse_status"]) == {"ok"} and j["error"].isna().all()
    assert meta["function"] == "my_judges:shorter" and meta["retry_on"] == ["Busy"]
