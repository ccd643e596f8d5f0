"""Issue 17: constrained decoding -- the output format description, the sim judge's knob, the
fake server honouring response_format, and the free-vs-constrained effect table."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pandas as pd
import pytest

from verdictlab.core.policy import FigurePolicy
from verdictlab.datasets import load_dataset
from verdictlab.judges import JudgeRequest, make_judge
from verdictlab.protocols import get_protocol
from verdictlab.protocols.output_format import OutputFormat
from verdictlab.protocols.pairwise import PAIRWISE_IDS
from verdictlab.report.readings import decoding_reading
from verdictlab.stats.decoding import decoding_effect


# -- the format --------------------------------------------------------------------------------
@pytest.mark.parametrize("pid", PAIRWISE_IDS)
def test_every_pairwise_format_renders_what_its_strict_parser_accepts(pid: str) -> None:
    p = get_protocol(pid)
    fmt = p.output_format()
    for verdict in ("A", "B"):
        text = fmt.render(verdict, {"rationale": 'quotes " and <tags> & \\ backslash'})
        parsed = p.parse(text)
        assert (parsed.verdict, parsed.status) == (verdict, "ok"), text


def test_segments_regex_schema_and_grammar_of_a_reasoning_first_json_format() -> None:
    fmt = get_protocol("cot-json").output_format()
    kinds = [s.kind for s in fmt.segments()]
    assert kinds == ["fixed", "text", "fixed", "verdict", "fixed"]
    assert [s.text for s in fmt.segments() if s.kind == "fixed"] == ['{"rationale": "', '", "winner": "', '"}']
    import re

    assert re.fullmatch(fmt.regex(), '{"rationale": "B is right", "winner": "B"}')
    assert not re.fullmatch(fmt.regex(), '{"rationale": "B is right", "winner": "tie"}')
    schema = fmt.json_schema()
    assert list(schema["properties"]) == ["rationale", "winner"]
    assert schema["properties"]["winner"] == {"type": "string", "enum": ["A", "B"]}
    assert schema["additionalProperties"] is False and schema["required"] == ["rationale", "winner"]
    assert fmt.gbnf().splitlines()[0] == 'root ::= "{\\"rationale\\": \\"" text "\\", \\"winner\\": \\"" verdict "\\"}"'


def test_render_values_does_not_coerce_a_bad_verdict() -> None:
    fmt = get_protocol("vf-xml").output_format()
    text = fmt.render_values({"winner": "C", "rationale": "x"})
    assert get_protocol("vf-xml").parse(text).status == "failed"
    with pytest.raises(ValueError):
        fmt.render("C")
    with pytest.raises(ValueError, match="verdict field"):
        OutputFormat(kind="json", fields=("rationale",))


# -- the simulated judge's knob ----------------------------------------------------------------
def _sim_verdicts(judge_id: str, decoding: str, *, pairs: int = 40, rep: int = 0) -> list[str | None]:
    judge = make_judge(judge_id)
    items = load_dataset("demo").items[:pairs]
    p = get_protocol("vf-json")
    out = []

    async def run() -> None:
        for it in items:
            for order in ("AB", "BA"):
                req = JudgeRequest(messages=tuple(p.messages(it, order)), decoding=decoding,
                                   output_format=p.output_format() if decoding == "constrained" else None,
                                   item=it,
                                   metadata={"dataset": "demo", "item_id": it.item_id, "protocol": "vf-json",
                                             "order": order, "temperature": 0.0, "rep": rep, "step": ""})
                resp = await judge.generate(req)
                out.append(p.parse(resp.text).verdict)

    asyncio.run(run())
    return out


def test_sim_constrained_with_all_outputs_malformed_and_forced_first_is_order_driven() -> None:
    # M = 1: every free output is unreadable; F = 1: every forced verdict is the first-shown one,
    # so in shown terms every constrained verdict is "A": C = 1, phi = 1, A = 1/2, T = 0.
    free = _sim_verdicts("sim:skill=1,malformed=1,forced_first=1", "free")
    forced = _sim_verdicts("sim:skill=1,malformed=1,forced_first=1", "constrained")
    assert set(free) == {None}
    assert set(forced) == {"A"}


def test_sim_constrained_with_forced_first_zero_equals_a_judge_without_malformed_outputs() -> None:
    forced = _sim_verdicts("sim:skill=0.7,position_lock=0.2,noise=0.1,malformed=0.5,forced_first=0", "constrained")
    clean = _sim_verdicts("sim:skill=0.7,position_lock=0.2,noise=0.1,malformed=0,forced_first=0", "free")
    assert forced == clean
    # and the calls that were readable free keep their verdict under the constraint
    free = _sim_verdicts("sim:skill=0.7,position_lock=0.2,noise=0.1,malformed=0.5,forced_first=0.7", "free")
    forced_f = _sim_verdicts("sim:skill=0.7,position_lock=0.2,noise=0.1,malformed=0.5,forced_first=0.7",
                             "constrained")
    assert all(f == c for f, c in zip(free, forced_f, strict=True) if f is not None)
    assert None in free and None not in forced_f


def test_sim_records_its_mechanism_and_rejects_a_bad_knob() -> None:
    from verdictlab.judges.base import JudgeConfigError

    judge = make_judge("sim:forced_first=0.25")
    assert "forced_first" in (judge.constraint_mechanism(get_protocol("direct").output_format()) or "")
    assert judge.constraint_mechanism(None) is None
    with pytest.raises(JudgeConfigError, match="forced_first"):
        make_judge("sim:forced_first=2")


# -- the fake OpenAI server and the OpenAI / Anthropic backends ---------------------------------
def _key(monkeypatch) -> str:
    import uuid

    key = f"sk-test-{uuid.uuid4()}"
    monkeypatch.setenv("VERDICTLAB_API_KEY", key)
    return key


def test_openai_backend_sends_a_strict_json_schema_and_the_fake_server_honours_it(monkeypatch) -> None:
    import uuid

    from verdictlab.testing.fake_openai import FakeConfig, FakeOpenAIServer

    key = f"sk-test-{uuid.uuid4()}"
    monkeypatch.setenv("VERDICTLAB_API_KEY", key)
    p = get_protocol("cot-json")
    item = load_dataset("demo", pairs=1).items[0]
    # every free reply is truncated (unreadable); the constrained one is forced into the schema
    with FakeOpenAIServer(FakeConfig(api_key=key, p_truncated=1.0)) as srv:
        judge = make_judge(f"openai-compatible:fake-judge@{srv.base_url}#key_env=VERDICTLAB_API_KEY")
        fmt = p.output_format()
        assert judge.constraint_mechanism(fmt).startswith("response_format json_schema")

        def req(decoding: str) -> JudgeRequest:
            return JudgeRequest(messages=tuple(p.messages(item, "AB")), max_tokens=96, stop=p.stop(),
                                decoding=decoding, output_format=fmt if decoding == "constrained" else None)

        async def both():
            try:
                return await judge.generate(req("free")), await judge.generate(req("constrained"))
            finally:
                await judge.aclose()

        free, forced = asyncio.run(both())
        body = srv.bodies[-1]
    assert p.parse(free.text).status == "failed"
    assert p.parse(forced.text).status == "ok"
    rf = body["response_format"]
    assert rf["type"] == "json_schema" and rf["json_schema"]["strict"] is True
    assert rf["json_schema"]["schema"] == fmt.json_schema()
    assert any(n.startswith("constrained: response_format json_schema") for n in forced.notes)


def test_openai_label_and_xml_formats_are_not_constrainable_without_guided_decoding(monkeypatch) -> None:
    from verdictlab.judges.base import JudgeCallError
    from verdictlab.testing.fake_openai import FakeConfig, FakeOpenAIServer

    key = _key(monkeypatch)
    p = get_protocol("vf-xml")
    item = load_dataset("demo", pairs=1).items[0]
    with FakeOpenAIServer(FakeConfig(api_key=key)) as srv:
        plain = make_judge(f"openai-compatible:fake-judge@{srv.base_url}")
        vllm = make_judge(f"openai-compatible:fake-judge@{srv.base_url}#guided=vllm")
        assert plain.constraint_mechanism(p.output_format()) is None
        assert plain.constraint_mechanism(get_protocol("direct").output_format()) is None
        assert "guided_regex" in vllm.constraint_mechanism(p.output_format())
        assert "guided_choice" in vllm.constraint_mechanism(get_protocol("direct").output_format())
        req = JudgeRequest(messages=tuple(p.messages(item, "AB")), decoding="constrained",
                           output_format=p.output_format())
        n_before = len(srv.bodies)
        with pytest.raises(JudgeCallError, match="not constrainable"):
            plain.build_params(req)
        assert len(srv.bodies) == n_before          # never sent unconstrained
        params, _ = vllm.build_params(req)
        assert params["extra_body"]["guided_regex"] == p.output_format().regex()
        dreq = JudgeRequest(messages=tuple(get_protocol("direct").messages(item, "AB")), decoding="constrained",
                            output_format=get_protocol("direct").output_format(), max_tokens=2)

        async def one():
            try:
                return await vllm.generate(dreq)
            finally:
                await vllm.aclose()

        resp = asyncio.run(one())
        assert srv.bodies[-1]["guided_choice"] == ["A", "B"] and resp.text in ("A", "B")


def test_openai_server_rejecting_response_format_fails_the_call_instead_of_running_free(monkeypatch) -> None:
    from verdictlab.judges.base import JudgeCallError
    from verdictlab.testing.fake_openai import FakeConfig, FakeOpenAIServer

    key = _key(monkeypatch)
    p = get_protocol("vf-json")
    item = load_dataset("demo", pairs=1).items[0]
    with FakeOpenAIServer(FakeConfig(api_key=key, reject_response_format_models=("old-*",))) as srv:
        judge = make_judge(f"openai-compatible:old-model@{srv.base_url}")
        req = JudgeRequest(messages=tuple(p.messages(item, "AB")), decoding="constrained",
                           output_format=p.output_format())

        async def one():
            try:
                return await judge.generate(req)
            finally:
                await judge.aclose()

        with pytest.raises(JudgeCallError, match="response_format"):
            asyncio.run(one())
        assert all("response_format" in b for b in srv.bodies)


def test_anthropic_constrained_call_is_a_forced_tool_rendered_into_the_format(monkeypatch) -> None:
    pytest.importorskip("anthropic")
    import uuid
    from types import SimpleNamespace

    from verdictlab.judges import anthropic_api

    monkeypatch.setenv("ANTHROPIC_API_KEY", f"sk-test-{uuid.uuid4()}")
    judge = make_judge("anthropic:claude-test")
    p = get_protocol("cot-xml")
    item = load_dataset("demo", pairs=1).items[0]
    req = JudgeRequest(messages=tuple(p.messages(item, "AB")), stop=p.stop(), decoding="constrained",
                       output_format=p.output_format())
    params, notes = judge.build_params(req)
    assert params["tool_choice"] == {"type": "tool", "name": anthropic_api.TOOL_NAME}
    assert params["tools"][0]["input_schema"] == p.output_format().json_schema()
    assert "stop_sequences" not in params and any(n.startswith("constrained: forced tool use") for n in notes)
    sent = {}

    async def create(**kw):
        sent.update(kw)
        block = SimpleNamespace(type="tool_use", name=anthropic_api.TOOL_NAME,
                                input={"rationale": "B < A? no", "winner": "B"})
        return SimpleNamespace(content=[block], stop_reason="tool_use",
                               usage=SimpleNamespace(input_tokens=10, output_tokens=5))

    judge._client = SimpleNamespace(messages=SimpleNamespace(create=create))
    resp = asyncio.run(judge.generate(req))
    parsed = p.parse(resp.text)
    assert (parsed.verdict, parsed.status) == ("B", "ok") and "&lt;" in resp.text


# -- the effect table ----------------------------------------------------------------------------
def _frame() -> pd.DataFrame:
    rows = []

    def add(decoding: str, item: str, label: str, order: str, verdicts: list[str | None]) -> None:
        for r, v in enumerate(verdicts):
            rows.append({"judge": "j", "protocol": "vf-json", "dataset": "d", "temperature": 0.7, "item_id": item,
                         "order": order, "rep": r, "verdict": v, "label": label, "decoding": decoding,
                         "parse_detail": "backend notes: constrained: slots (json)" if decoding == "constrained"
                         else ""})

    add("free", "i1", "A", "AB", ["A", None])
    add("free", "i1", "A", "BA", ["A", "A"])
    add("free", "i2", "B", "AB", [None, None])
    add("free", "i2", "B", "BA", ["B", "A"])
    # constrained: always the response shown first (AB -> canonical A, BA -> canonical B)
    for item, label in (("i1", "A"), ("i2", "B")):
        add("constrained", item, label, "AB", ["A", "A"])
        add("constrained", item, label, "BA", ["B", "B"])
    return pd.DataFrame(rows)


def test_decoding_effect_hand_worked() -> None:
    # free, unparsed excluded: units i1AB {A} N=1, i1BA {A,A} N=1, i2AB dropped, i2BA {B,A} split N=0
    #   C = 2/3; phi over pairs with both orders (i1 only): A == A -> phi = 0;
    #   A = (1 + 1 + 0)/3 = 2/3; T = 2/3 (2/3 - 0) = 4/9; unparsed rows 3 of 8 = 0.375
    # constrained: every unit N = 1 -> C = 1; both pairs flip -> phi = 1;
    #   A = (1 + 0 + 0 + 1)/4 = 1/2; T = 1 (1/2 - 1/2) = 0; unparsed 0
    out = decoding_effect(_frame(), policy=FigurePolicy(n_bootstrap=200, seed=1))
    assert len(out) == 1
    r = out.iloc[0]
    assert r["n_pairs"] == 2 and r["n_judgments_free"] == 8 and r["n_judgments_constrained"] == 8
    assert r["C_free"] == pytest.approx(2 / 3) and r["phi_free"] == 0 and r["A_free"] == pytest.approx(2 / 3)
    assert r["T_free"] == pytest.approx(4 / 9)
    assert (r["C_constrained"], r["phi_constrained"], r["A_constrained"], r["T_constrained"]) == (1, 1, 0.5, 0)
    assert r["dC"] == pytest.approx(1 / 3) and r["dphi"] == 1 and r["dA"] == pytest.approx(-1 / 6)
    assert r["dT"] == pytest.approx(-4 / 9)
    assert r["unparsed_free"] == 0.375 and r["unparsed_constrained"] == 0 and r["unparsed_removed"] == 1
    for f in ("C", "phi", "A", "T"):
        assert r[f"d{f}_lo"] <= r[f"d{f}"] + 1e-12 and r[f"d{f}"] <= r[f"d{f}_hi"] + 1e-12
    assert r["mechanism"] == "slots (json)"
    # what the row means in words is the report's reading of it
    assert decoding_reading(r.to_dict()).startswith("forcing the format removed 100% of unparsed outputs (38% -> 0%); "
                                   "the forced verdicts are order-driven: phi 1.00; dT -0.44")


def test_decoding_effect_point_figures_match_reliability_per_mode() -> None:
    from verdictlab.stats.reliability import reliability

    frame = _frame()
    out = decoding_effect(frame, policy=FigurePolicy(n_bootstrap=0)).iloc[0]
    for mode in ("free", "constrained"):
        cell = reliability(frame[frame["decoding"] == mode].drop(columns="decoding"), policy=FigurePolicy(n_bootstrap=0)).iloc[0]
        for f in ("C", "phi", "A", "T"):
            assert out[f"{f}_{mode}"] == pytest.approx(cell[f]), (mode, f)


def test_paired_interval_is_zero_when_both_modes_agree_on_every_item() -> None:
    frame = _frame()
    same = frame[frame["decoding"] == "constrained"]
    both = pd.concat([same, same.assign(decoding="free")])
    r = decoding_effect(both, policy=FigurePolicy(n_bootstrap=300)).iloc[0]
    for f in ("C", "phi", "A", "T"):
        assert (r[f"d{f}"], r[f"d{f}_lo"], r[f"d{f}_hi"]) == (0, 0, 0)
    assert decoding_reading(r.to_dict()).startswith("every output was readable in both modes")


def test_decoding_effect_needs_both_modes_and_pairs_items() -> None:
    frame = _frame()
    assert decoding_effect(frame[frame["decoding"] == "free"]).empty
    assert decoding_effect(frame.drop(columns="decoding")).empty
    # an item judged in one mode only is left out of both (paired on the same items)
    extra = frame[(frame["item_id"] == "i1") & (frame["decoding"] == "free")].assign(item_id="i3")
    r = decoding_effect(pd.concat([frame, extra]), policy=FigurePolicy(n_bootstrap=0)).iloc[0]
    assert r["n_pairs"] == 2


def test_reading_says_when_the_constraint_added_unparsed_outputs_and_when_t_moved() -> None:
    row = {"unparsed_free": 0.0, "unparsed_constrained": 0.1, "phi_constrained": 0.1, "C_constrained": 0.9,
           "A_constrained": 0.8, "dT": 0.2, "dT_lo": 0.1, "dT_hi": 0.3}
    text = decoding_reading(row)
    assert text == ("forcing the format left 10% unparsed (free: none); the forced verdicts are right 80% of "
                    "the time (phi 0.10, C 0.90); dT +0.20 [+0.10, +0.30] (interval excludes 0)")
    assert "noisy: C 0.30" in decoding_reading({**row, "C_constrained": 0.3})
    assert np.isnan(decoding_effect(_frame(), policy=FigurePolicy(n_bootstrap=0)).iloc[0]["dT_lo"])
    json.dumps(decoding_effect(_frame(), policy=FigurePolicy(n_bootstrap=10)).iloc[0].to_dict(), default=str)


def test_registered_analysis_gives_the_table_and_skips_single_mode_runs() -> None:
    from verdictlab.analyses import AnalysisInput, registered

    fn = {a.name: a for a in registered()}["decoding"].fn
    out = fn(AnalysisInput(judgments=_frame(), policy=FigurePolicy(n_bootstrap=50)))
    assert out is not None and len(out) == 1 and out.iloc[0]["dT"] == pytest.approx(-4 / 9)
    assert fn(AnalysisInput(judgments=_frame().query("decoding == 'free'"))) is None


def test_constraint_table_marks_what_a_judge_cannot_constrain(monkeypatch) -> None:
    from verdictlab.protocols.output_format import constrainable, constraint_table

    _key(monkeypatch)
    protocols = {pid: get_protocol(pid) for pid in ("direct", "vf-json", "vf-xml")}

    class NoMechanism:      # a backend without constraint_mechanism: never run constrained
        pass

    judges = {"sim:": make_judge("sim:"), "oa": make_judge("openai-compatible:m@http://127.0.0.1:9/v1"),
              "x": NoMechanism()}
    table = constraint_table(judges, protocols)
    assert all(constrainable(table, "sim:", p) for p in protocols)
    assert constrainable(table, "oa", "vf-json") and not constrainable(table, "oa", "vf-xml")
    assert table["oa"]["direct"] == "not constrainable: oa has no mechanism for label output"
    assert not any(constrainable(table, "x", p) for p in protocols)
    assert not constrainable(table, "unknown", "direct")


def test_template_file_errors_are_one_line_without_the_file_text(tmp_path) -> None:
    """Issue 16 item (H16's request): a user template file is read through guards.read_yaml_file."""
    from verdictlab.protocols.pairwise import load_pairwise_template

    with pytest.raises(ValueError, match="protocol template not found"):
        load_pairwise_template("direct", tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("system: [unclosed\nsecret line that must not be echoed\n", encoding="utf-8")
    with pytest.raises(ValueError) as exc:
        load_pairwise_template("direct", bad)
    assert "secret line" not in str(exc.value) and "\n" not in str(exc.value)


def test_a_refused_connection_is_named_not_reported_as_a_timeout(monkeypatch) -> None:
    """Issue 16 item 12 (H16's request, openai_api.py is H17's): a server that refuses the connection."""
    import socket

    from verdictlab.judges.base import JudgeCallError

    monkeypatch.delenv("VERDICTLAB_API_KEY", raising=False)
    with socket.socket() as s:          # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    judge = make_judge(f"openai-compatible:m@http://127.0.0.1:{port}/v1")

    async def one():
        try:
            return await judge.generate(JudgeRequest(messages=({"role": "user", "content": "x"},)))
        finally:
            await judge.aclose()

    with pytest.raises(JudgeCallError, match=rf"connection refused: cannot connect to http://127.0.0.1:{port}/v1"):
        asyncio.run(one())


def test_engine_never_runs_a_not_constrainable_protocol_free(monkeypatch, tmp_path) -> None:
    """Through the engine: a plain OpenAI-compatible server constrains the JSON protocol with
    response_format but cannot constrain `direct`: those constrained trials are not run (not run free)
    and the run's meta says why; every constrained vf-json row names its mechanism."""
    from verdictlab.engine import run_config
    from verdictlab.engine.config import RunConfig
    from verdictlab.store import RunStore
    from verdictlab.testing.fake_openai import FakeConfig, FakeOpenAIServer

    key = _key(monkeypatch)
    with FakeOpenAIServer(FakeConfig(api_key=key, p_truncated=1.0, truncate_at=0.1)) as srv:
        jid = f"openai-compatible:fake-judge@{srv.base_url}"
        cfg = RunConfig.model_validate({
            "name": "t", "datasets": [{"name": "demo", "pairs": 4}], "judges": [jid],
            "protocols": ["direct", "vf-json"], "temperatures": [0.0], "repetitions": 1,
            "decoding": ["free", "constrained"]})
        summary = run_config(cfg, tmp_path / "run", progress=False)
    with RunStore(tmp_path / "run") as st:
        df = st.judgments()
        mechs = st.get_meta("decoding_mechanisms")
    # 4 pairs x 2 orders: direct free, vf-json free, vf-json constrained (direct constrained not run)
    assert summary.n_written == 24 and len(df) == 24
    assert set(zip(df["protocol"], df["decoding"], strict=True)) == {
        ("direct", "free"), ("vf-json", "free"), ("vf-json", "constrained")}
    assert mechs[jid]["direct"].startswith("not constrainable")
    assert mechs[jid]["vf-json"].startswith("response_format json_schema")
    forced = df[df["decoding"] == "constrained"]
    assert forced["verdict"].notna().all() and (forced["parse_status"] == "ok").all()
    assert forced["parse_detail"].str.contains("constrained: response_format json_schema").all()
    free = df[(df["decoding"] == "free") & (df["protocol"] == "vf-json")]
    assert free["verdict"].isna().all()          # the truncation fault hits free replies only
