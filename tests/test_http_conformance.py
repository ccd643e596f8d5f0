"""The HTTP client under every ``http://`` judge against replies a real server, proxy or load balancer may
legally send (``verdictlab.testing.raw_http`` writes them byte for byte): interim 1xx responses before
the answer, bodies that end when the server closes, gzip, chunk extensions and trailers, 307/308
redirects, ``Connection: close`` and replies written one byte at a time.

The hand-written HTTP/1.1 client that used to be the default for ``http://`` judges took an interim
``100 Continue`` / ``103 Early Hints`` for the answer (of 24 trials, 12 failed with "HTTP 100" and 6 were
stored with the previous trial's answer, parse status ok: the real 200 stayed in the buffer of a pooled
connection and was read by the next request) and failed every call on gzip bodies, HTTP/1.0 bodies ended
by close and 307/308 redirects.  aiohttp (posting the body itself, the default for ``http://``) and the
SDK's own clients (aiohttp, httpx) replace it; this suite holds the default and all three to every
case, through a judge, through the engine and through the CLI.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

pytest.importorskip("openai")

from verdictlab.cli.main import app  # noqa: E402
from verdictlab.engine import run_config  # noqa: E402
from verdictlab.engine.config import config_from_dict  # noqa: E402
from verdictlab.judges import JudgeRequest, make_judge  # noqa: E402
from verdictlab.judges.openai_api import TRANSPORT_ENV  # noqa: E402
from verdictlab.store import RunStore  # noqa: E402
from verdictlab.testing.raw_http import RawHTTPServer, RawReply  # noqa: E402

TRANSPORTS = ["default", "aiohttp-direct", "aiohttp", "httpx"]
DEFAULT = "aiohttp-direct"      # an http:// judge: the body posted straight on an aiohttp session
CASES = {
    "100 Continue": RawReply(interim=(100,)),
    "103 Early Hints": RawReply(interim=(103,)),
    "gzip": RawReply(framing="gzip"),
    "HTTP/1.0 body ended by close": RawReply(framing="http10"),
    "chunk extensions and trailers": RawReply(framing="chunked"),
    "Connection: close": RawReply(framing="close"),
    "307 redirect": RawReply(redirect=307),
    "308 redirect": RawReply(redirect=308),
    "1-byte writes": RawReply(byte_writes=True),
    "all at once": RawReply(interim=(100, 103), framing="chunked", redirect=307, byte_writes=True),
}


@pytest.fixture(params=TRANSPORTS)
def transport(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("VERDICTLAB_API_KEY", raising=False)
    if request.param == "default":
        monkeypatch.delenv(TRANSPORT_ENV, raising=False)
    else:
        monkeypatch.setenv(TRANSPORT_ENV, request.param)
    return str(request.param)


def _ask_each_its_own(base_url: str, n: int = 6) -> tuple[list[tuple[str, str]], str]:
    """``n`` requests one after another (each reuses the pooled connection of the one before), then
    ``n`` at once: (sent nonce, answer) pairs, and the judge's transport."""
    judge = make_judge(f"openai-compatible:raw@{base_url}")
    judge.timeout_s = 5

    async def one(nonce: str) -> tuple[str, str]:
        resp = await judge.generate(JudgeRequest(messages=({"role": "user", "content": nonce},)))
        return nonce, resp.text

    async def go() -> list[tuple[str, str]]:
        try:
            out = [await one(f"sequential-{i}") for i in range(n)]
            out += await asyncio.gather(*(one(f"concurrent-{i}") for i in range(n)))
            return out
        finally:
            await judge.aclose()

    return asyncio.run(go()), str(judge.describe()["transport"])


@pytest.mark.parametrize("case", list(CASES))
def test_every_request_gets_its_own_answer(transport: str, case: str) -> None:
    with RawHTTPServer(CASES[case]) as srv:
        answers, used = _ask_each_its_own(srv.base_url)
        if CASES[case].redirect:
            assert srv.redirected == len(answers)          # every redirected request carried its body again
    assert [nonce for nonce, _ in answers] == [text for _, text in answers]
    assert used == (DEFAULT if transport == "default" else transport)


@pytest.mark.parametrize("interim", [(100,), (102,), (103,), (104,), (150,), (199,), (100, 103, 102, 199, 103)],
                         ids=lambda s: "+".join(map(str, s)))
def test_any_interim_response_any_number_in_a_row_is_skipped(transport: str, interim: tuple[int, ...]) -> None:
    """The class of the defect: whatever 1xx status (other than 101, which switches protocols) and
    however many precede the answer, one byte at a time or not, the answer is the final response's."""
    for byte_writes in (False, True):
        with RawHTTPServer(RawReply(interim=interim, byte_writes=byte_writes)) as srv:
            answers, _ = _ask_each_its_own(srv.base_url, n=3)
        assert [nonce for nonce, _ in answers] == [text for _, text in answers]


# -- through the engine: the 24 trials ---------------------------------------------------------
N_ITEMS = 6


def perfect_judge(body: dict[str, Any]) -> str:
    """A vf-json answer naming the shown response that starts with "right", with a rationale that says
    which request it answers (the question and the response shown first)."""
    user = str(body["messages"][-1]["content"])
    question = re.search(r"Question:\n(.*)\n", user)
    first = re.search(r"Response A:\n(.*)\n", user)
    assert question and first
    winner = "A" if first.group(1).startswith("right") else "B"
    return json.dumps({"winner": winner, "rationale": f"{question.group(1)} | first shown: {first.group(1)}"})


def _pairs(tmp: Path) -> Path:
    path = tmp / "pairs.jsonl"
    with path.open("w") as fh:
        for i in range(N_ITEMS):
            a, b = (f"right answer {i}", f"wrong answer {i}") if i % 2 else (f"wrong answer {i}", f"right answer {i}")
            fh.write(json.dumps({"item_id": f"q{i}", "question": f"Question q{i}?", "response_a": a,
                                 "response_b": b, "label": "A" if i % 2 else "B"}) + "\n")
    return path


@pytest.mark.parametrize("interim", [(100,), (103,)], ids=["100", "103"])
def test_24_trials_behind_an_interim_response_are_all_right_and_their_own(tmp_path: Path, transport: str,
                                                                           interim: tuple[int, ...]) -> None:
    """Regression: 24 trials (6 items x 2 orders x 2 repetitions, temperature 1: no cache) against a
    server that sends an interim response before every answer: all 24 stored with their own answer."""
    with RawHTTPServer(RawReply(interim=interim, answer=perfect_judge)) as srv:
        judge_id = f"openai-compatible:raw@{srv.base_url}"
        cfg = config_from_dict({"name": "interim", "datasets": [{"name": "jsonl", "path": str(_pairs(tmp_path))}],
                                "judges": [{"id": judge_id, "concurrency": 4, "max_retries": 0, "timeout_s": 10}],
                                "protocols": ["vf-json"], "repetitions": 2, "temperatures": [1.0]})
        summary = run_config(cfg, tmp_path / "run", progress=False)
        assert srv.requests == 24
    assert summary.complete and summary.n_failed == 0
    with RunStore(tmp_path / "run") as st:
        df = st.judgments()
        items = {it.item_id: it for it in st.items()}
        meta = st.get_meta("judges")
    assert len(df) == 24
    assert (df.parse_status == "ok").all() and (df.verdict == df.label).all()
    for row in df.itertuples():
        item = items[row.item_id]
        first = item.response_a if row.order == "AB" else item.response_b
        assert json.loads(row.raw_output)["rationale"] == f"{item.question} | first shown: {first}", row
    assert meta[judge_id]["transport"] == (DEFAULT if transport == "default" else transport)


@pytest.mark.parametrize("case", ["gzip", "HTTP/1.0 body ended by close", "307 redirect", "308 redirect"])
def test_run_succeeds_where_the_hand_written_client_halted_the_judge(tmp_path: Path, transport: str,
                                                                     case: str) -> None:
    """Regression: on gzip bodies, HTTP/1.0 close-delimited bodies and 307/308 redirects every call
    failed, the judge halted and the run exited 4; and the run meta named "httpx" for that client."""
    (tmp_path / "pairs.jsonl").write_text("".join(
        json.dumps({"item_id": f"i{i}", "question": f"q{i}", "response_a": "a", "response_b": "b",
                    "label": "A"}) + "\n" for i in range(4)))
    with RawHTTPServer(dataclasses.replace(CASES[case], answer=lambda body: "A")) as srv:
        cfg = tmp_path / "audit.yaml"
        cfg.write_text(f"name: srv\ndatasets: [{{name: jsonl, path: pairs.jsonl}}]\n"
                       f"judges:\n  - id: openai-compatible:m@{srv.base_url}\n    max_retries: 0\n"
                       f"protocols: [direct]\nrepetitions: 1\ntemperatures: [0.0]\n")
        r = CliRunner().invoke(app, ["run", str(cfg), "--run-dir", str(tmp_path / "run"), "--no-progress"])
    assert r.exit_code == 0, r.output
    with RunStore(tmp_path / "run") as st:
        df = st.judgments()
        meta = st.get_meta("judges")
    # the server always names the response shown first: canonical A in order AB, B in order BA
    assert len(df) == 8 and (df.parse_status == "ok").all() and df.error.isna().all()
    assert (df.verdict == df.order.map({"AB": "A", "BA": "B"})).all()
    assert [j["transport"] for j in meta.values()] == [DEFAULT if transport == "default" else transport]
