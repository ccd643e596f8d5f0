"""One small example of each extension point, added the way docs/architecture.md says.

Each block below is what a contributor writes: the new code (in the package it would be ONE new
module: judges/<name>.py, protocols/<name>.py, stats/<name>.py, analyses/<name>.py or
importers/<name>.py) plus its registration through the public registry, and a test.  Nothing else in
the package is edited -- the engine, store and report pick the new thing up by name.  The toy judge
always picks the response shown first; the toy protocol asks for "1" or "2"; the toy statistic is the
share of decisive verdicts won by the first-shown response; the toy analysis shows it per cell; the
toy importer reads a two-column TSV log.  Together they run through the real engine, store and report.
The toy batch provider declares a batch API (Message Batches over plain HTTP), its own prices and its
assumed latency on the backend: ``batch: true`` runs it through the batch executor against the fake
batch server of ``verdictlab.testing``, with no engine code naming it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pandas as pd
import pytest

from verdictlab.analyses import ANALYSES, AnalysisInput, register
from verdictlab.core.items import PairItem
from verdictlab.core.policy import FigurePolicy
from verdictlab.core.vocab import CELL_KEY, first_shown, swap
from verdictlab.engine import run_config
from verdictlab.engine.config import config_from_dict
from verdictlab.importers import (
    IMPORTERS,
    ImportBatch,
    ImporterOption,
    import_into,
    judgment_row,
    register_importer,
)
from verdictlab.judges import (
    JUDGES,
    JudgeAPI,
    JudgeCallError,
    JudgeRequest,
    JudgeResponse,
    RetryDecision,
    make_judge,
    register_judge,
)
from verdictlab.judges.batch import Outcome
from verdictlab.protocols import ParseResult, Protocol, get_protocol
from verdictlab.protocols.registry import PROTOCOLS, register_protocol
from verdictlab.report import build_report, report_json
from verdictlab.store import open_store


# -- 1. a provider (judges/<name>.py + one register_judge line) ------------------------------------
class FirstShownJudge(JudgeAPI):
    """Answers "1" to every request: a judge with total position bias, no network, no key."""

    provider = "toy"

    async def generate(self, request: JudgeRequest) -> JudgeResponse:
        prompt = "".join(m["content"] for m in request.messages)
        return JudgeResponse(text="1", tokens_in=len(prompt) // 4, tokens_out=1, cost_usd=0.0, latency_s=0.0)


def make_first_shown_judge(judge_id: str, spec: str) -> FirstShownJudge:
    return FirstShownJudge(judge_id, spec or "first-shown")


# -- 2. a protocol (protocols/<name>.py + one register_protocol line) -------------------------------
class OneOrTwoProtocol(Protocol):
    """Shows the two responses as 1 and 2 and reads a bare "1" / "2" (verdict in SHOWN terms)."""

    id = "toy-1or2"
    label_only = True

    def messages(self, item: Any, order: str, *, step: str = "") -> list[dict[str, str]]:
        first, second = ((item.response_a, item.response_b) if first_shown(order) == "A"
                         else (item.response_b, item.response_a))
        return [{"role": "system", "content": "Answer with 1 or 2 only."},
                {"role": "user", "content": f"{item.question}\n\n1: {first}\n\n2: {second}\n\nBetter:"}]

    def parse(self, text: str) -> ParseResult:
        answer = text.strip()
        if answer in ("1", "2"):
            return ParseResult("A" if answer == "1" else "B", "ok")
        return ParseResult(None, "failed", f"expected 1 or 2, got {answer[:20]!r}")

    def max_tokens(self) -> int:
        return 2


def make_one_or_two(*, template_path: str | None = None, **options: Any) -> OneOrTwoProtocol:
    return OneOrTwoProtocol()


# -- 3. a statistic (stats/<name>.py, exported from stats/__init__; a pure function) -----------------
def first_shown_win_share(judgments: pd.DataFrame) -> tuple[float, int]:
    """Share of decisive parsed verdicts won by the response shown first, and the N it stands on.

    Reads the stored ``shown_first_won`` column (1 / 0 / missing for tie or unparsed); NaN with N = 0
    when no verdict was decisive."""
    won = pd.to_numeric(judgments["shown_first_won"], errors="coerce").to_numpy(float)
    won = won[~np.isnan(won)]
    return (float(won.mean()) if len(won) else float("nan")), int(len(won))


# -- 4. an analysis (analyses/<name>.py; the package imports every public module itself) ------------
def first_shown_table(inp: AnalysisInput) -> pd.DataFrame | None:
    rows = []
    for key, cell in inp.pairs.groupby(list(CELL_KEY), sort=True):
        share, n = first_shown_win_share(cell)
        rows.append({**dict(zip(CELL_KEY, key, strict=True)), "first_shown_share": share, "n": n})
    return pd.DataFrame(rows) if rows else None


# -- 5. an importer (importers/<name>.py + one register_importer line declaring its options) -----------
def import_toy_tsv(path: str | Path, *, judge: str = "toy-log", sep: str = "\t", **options: Any) -> ImportBatch:
    """A log with lines ``item_id<SEP>winner`` (canonical A/B, both orders not known: shown AB)."""
    rows, items = [], []
    for line in Path(path).read_text().splitlines():
        item_id, winner = line.split(sep)
        items.append(PairItem(item_id=item_id, dataset="toy", question=f"q{item_id}", response_a="a",
                              response_b="b", label="A"))
        rows.append(judgment_row(judge=judge, dataset="toy", item_id=item_id, protocol="imported", order="AB",
                                 temperature=0.0, rep=0, verdict=winner, label="A", raw_output=line))
    return ImportBatch(format="toy-tsv", source=str(path), judgments=rows, items=items)


# -- 6. a provider with a batch API (judges/<name>.py + one register_judge line; no engine code) ----------
TOY_KEY = "sk-toy-batch-key-0001"


class ToyBatches:
    """The toy's batch API: Message Batches over plain HTTP (the fake server answers them).  Small batches,
    so a run needs several."""

    max_requests = 5
    offline_file = False

    def __init__(self, judge: ToyBatchJudge) -> None:
        self.judge = judge
        self.headers = {"x-api-key": TOY_KEY}

    def body(self, request: JudgeRequest) -> tuple[dict[str, Any], list[str]]:
        system = "\n".join(m["content"] for m in request.messages if m["role"] == "system")
        return {"model": self.judge.model, "max_tokens": request.max_tokens, "temperature": request.temperature,
                "system": system, "messages": [m for m in request.messages if m["role"] != "system"]}, []

    async def submit(self, bodies: Sequence[tuple[str, dict[str, Any]]], key: str) -> str:
        async with httpx.AsyncClient(base_url=self.judge.base_url, headers=self.headers) as http:
            r = await http.post("/v1/messages/batches",
                                json={"requests": [{"custom_id": cid, "params": b} for cid, b in bodies]})
        return str(r.raise_for_status().json()["id"])

    async def find(self, key: str) -> str | None:
        return None

    async def status(self, batch_id: str) -> tuple[bool, str]:
        async with httpx.AsyncClient(base_url=self.judge.base_url, headers=self.headers) as http:
            state = (await http.get(f"/v1/messages/batches/{batch_id}")).raise_for_status().json()
        return state["processing_status"] == "ended", state["processing_status"]

    async def results(self, batch_id: str) -> dict[str, Outcome]:
        async with httpx.AsyncClient(base_url=self.judge.base_url, headers=self.headers) as http:
            text = (await http.get(f"/v1/messages/batches/{batch_id}/results")).raise_for_status().text
        out = {}
        for line in filter(None, text.splitlines()):
            r = json.loads(line)
            ok = r["result"]["type"] == "succeeded"
            out[r["custom_id"]] = Outcome(answer=r["result"]["message"]) if ok else Outcome(error="errored")
        return out

    def response(self, answer: Any, request: JudgeRequest, body: dict[str, Any], notes: list[str]) -> JudgeResponse:
        return JudgeResponse(answer["content"][0]["text"], tokens_in=answer["usage"]["input_tokens"],
                             tokens_out=answer["usage"]["output_tokens"])

    def line_outcome(self, line: Any) -> Outcome:
        raise NotImplementedError


class ToyBatchJudge(JudgeAPI):
    """A provider whose only way in is its batch API; $1 / $2 per 1M tokens in / out, half in batches."""

    provider = "toy-batch"
    assumed_latency_s = 5.0
    sdk = "httpx"

    def __init__(self, judge_id: str, model: str, base_url: str) -> None:
        super().__init__(judge_id, model)
        self.base_url = base_url

    async def generate(self, request: JudgeRequest) -> JudgeResponse:
        raise JudgeCallError("the toy answers in batches only", RetryDecision.fatal())

    def batch_adapter(self) -> ToyBatches:
        return ToyBatches(self)

    def cost(self, prices: Any, tokens_in: int | None, tokens_out: int | None, *, batch: bool = False) -> float:
        return ((tokens_in or 0) * 1.0 + (tokens_out or 0) * 2.0) / 1e6 * (0.5 if batch else 1.0)


def make_toy_batch_judge(judge_id: str, spec: str) -> ToyBatchJudge:
    model, _, url = spec.partition("@")
    return ToyBatchJudge(judge_id, model, url.removesuffix("/v1"))


@pytest.fixture
def registered() -> Iterator[None]:
    """Register the five toys the public way, and take them out again (the registries are global)."""
    register_judge("toy", make_first_shown_judge, description="always picks the response shown first")
    register_judge("toy-batch", make_toy_batch_judge, description="answers through its batch API only")
    register_protocol("toy-1or2", make_one_or_two, description="answer 1 or 2")
    register("toy_first_shown", title="First-shown wins (toy)",
             description="share of decisive verdicts won by the response shown first")(first_shown_table)
    register_importer("toy-tsv", import_toy_tsv, "item_id<TAB>winner lines",
                      options=(ImporterOption("sep", help="the column separator", default="tab"),))
    yield
    JUDGES.unregister("toy")
    JUDGES.unregister("toy-batch")
    PROTOCOLS.unregister("toy-1or2")
    ANALYSES.unregister("toy_first_shown")
    IMPORTERS.unregister("toy-tsv")


def test_statistic_known_value() -> None:
    # shown_first_won = 1, 1, 0, missing (tie), 1: decisive 4, won first 3 -> 3/4 = 0.75, N = 4
    frame = pd.DataFrame({"shown_first_won": [1, 1, 0, None, 1]})
    assert first_shown_win_share(frame) == (0.75, 4)
    share, n = first_shown_win_share(pd.DataFrame({"shown_first_won": [None, None]}))
    assert math.isnan(share) and n == 0


def test_protocol_parses_in_shown_terms() -> None:
    p = OneOrTwoProtocol()
    assert p.parse(" 1\n") == ParseResult("A", "ok")
    assert p.parse("2").verdict == "B"
    assert p.parse("both").status == "failed"            # never guessed
    item = PairItem(item_id="x", dataset="d", question="Q?", response_a="alpha", response_b="beta", label="A")
    assert "1: beta" in p.messages(item, "BA")[1]["content"]  # BA shows response_b first


def test_toys_run_through_engine_store_report_and_import(tmp_path: Path, registered: None) -> None:
    assert isinstance(make_judge("toy:x"), FirstShownJudge)
    assert isinstance(get_protocol("toy-1or2"), OneOrTwoProtocol)
    data = tmp_path / "pairs.jsonl"
    data.write_text("".join(json.dumps({"item_id": i, "question": f"q{i}", "response_a": f"a{i}",
                                        "response_b": f"b{i}", "label": "AB"[i % 2]}) + "\n" for i in range(4)))
    cfg = config_from_dict({"name": "toy", "datasets": [{"name": "jsonl", "path": "pairs.jsonl"}],
                            "judges": ["toy:first"], "protocols": ["toy-1or2"], "orders": ["AB", "BA"],
                            "temperatures": [0.0], "repetitions": 1}, source=tmp_path / "cfg.yaml")
    run_config(cfg, tmp_path / "run", progress=False)

    store = open_store(tmp_path / "run")
    try:
        judgments = store.judgments()
    finally:
        store.close()
    assert len(judgments) == 8                                        # 4 pairs x 2 orders
    # the judge always answered "1": canonical verdict = the side shown first (A in AB, B in BA)
    expected = [swap("A", o) for o in judgments["order"]]
    assert list(judgments["verdict"]) == expected
    assert first_shown_win_share(judgments) == (1.0, 8)

    table = report_json(build_report(tmp_path / "run", policy=FigurePolicy(n_bootstrap=50)))["run"]["analyses"]
    toy = table["toy_first_shown"]
    assert toy["title"] == "First-shown wins (toy)"
    row = dict(zip(toy["columns"], toy["rows"][0], strict=True))
    assert row["judge"] == "toy:first" and row["first_shown_share"] == 1.0 and row["n"] == 8

    log = tmp_path / "log.tsv"
    log.write_text("1\tA\n2\tB\n")
    result = import_into("toy-tsv", log, run_dir=tmp_path / "imported")
    assert (result.n_rows, result.n_inserted) == (2, 2)
    store = open_store(tmp_path / "imported")
    try:
        imported = store.judgments().sort_values("item_id")
    finally:
        store.close()
    assert list(imported["verdict"]) == ["A", "B"] and list(imported["judge"]) == ["toy-log"] * 2


def test_a_toy_importers_option_is_a_flag_of_the_import_command(tmp_path: Path, registered: None) -> None:
    """The option declared in the registration line is a ``verdictlab import`` flag, with its help, for
    that format only: no command-line code was written for it."""
    from typer.testing import CliRunner

    from verdictlab.cli.main import app

    runner = CliRunner()
    shown = " ".join(runner.invoke(app, ["import", "--help"]).stdout.split())
    assert "--sep <str> toy-tsv: the column separator Default: tab." in shown
    log = tmp_path / "log.csv"
    log.write_text("1,A\n2,B\n")
    r = runner.invoke(app, ["import", "toy-tsv", str(log), "--run-dir", str(tmp_path / "run"), "--sep", ","])
    assert r.exit_code == 0, r.stderr
    assert r.stderr.startswith("imported 2 new judgment(s)")
    r = runner.invoke(app, ["import", "csv", str(log), "--run-dir", str(tmp_path / "other"), "--sep", ","])
    assert r.exit_code == 2 and "Invalid value for --sep: applies to the toy-tsv format" in r.stderr


def test_a_toy_provider_with_a_batch_api_runs_through_the_batch_executor(tmp_path: Path, registered: None) -> None:
    """``batch: true`` on a provider the engine has never heard of: its trials go out in batches of the size
    its adapter declares, come back through the caller at the batch price the backend's own price lookup
    gives, and the plan assumes its declared latency.  No engine module names the provider."""
    from verdictlab.testing import FakeConfig, FakeOpenAIServer

    data = tmp_path / "pairs.jsonl"
    data.write_text("".join(json.dumps({"item_id": i, "question": f"Question {i}?", "response_a": f"first {i}",
                                        "response_b": f"second {i}", "label": "AB"[i % 2]}) + "\n" for i in range(6)))
    with FakeOpenAIServer(FakeConfig(api_key=TOY_KEY, batch_polls=2)) as srv:
        cfg = config_from_dict({"name": "toy-batch", "datasets": [{"name": "jsonl", "path": "pairs.jsonl"}],
                                "judges": [{"id": f"toy-batch:fake-judge@{srv.base_url}", "batch": True}],
                                "protocols": ["direct"], "orders": ["AB", "BA"], "temperatures": [0.0],
                                "repetitions": 1, "batch_poll_s": 0.01}, source=tmp_path / "cfg.yaml")
        plan = run_config(cfg, tmp_path / "run", progress=False, plan_only=True).plan
        summary = run_config(cfg, tmp_path / "run", progress=False)
        stats = dict(srv.stats)
    assert plan is not None and plan.judges[0].latency_s == 5.0 and plan.judges[0].duration_bound == "batch"
    assert summary.complete and summary.n_written == 12
    assert stats["batches_created"] == 3                     # 12 requests, 5 per batch (the adapter's size)
    store = open_store(tmp_path / "run")
    try:
        df = store.judgments()
        versions = store.get_meta("versions")
    finally:
        store.close()
    assert df.verdict.notna().all()
    row = df.iloc[0]
    # the backend's price at its batch rate: (tokens_in * $1 + tokens_out * $2) / 1M, halved
    assert row.cost_usd == pytest.approx((row.tokens_in * 1.0 + row.tokens_out * 2.0) / 1e6 / 2)
    assert "httpx" in versions                               # the SDK it declares is recorded with its version
