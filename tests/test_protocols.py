"""Pairwise protocols: templates, messages, strict parsing, documented repairs, failures."""

from __future__ import annotations

import pytest

from verdictlab.core.items import PairItem
from verdictlab.protocols import (
    PAIRWISE_IDS,
    Protocol,
    get_protocol,
    protocol_ids,
    register_protocol,
)

ITEM = PairItem(item_id="1", dataset="toy", question="What is 2 + 2?", response_a="4", response_b="five",
                label="A")


def test_registry_lists_the_five_pairwise_protocols_first() -> None:
    assert protocol_ids()[:5] == list(PAIRWISE_IDS)
    assert get_protocol("vf-json") is get_protocol("vf-json")  # shared default instance
    with pytest.raises(KeyError, match="unknown protocol 'nope'"):
        get_protocol("nope")


def test_register_protocol_accepts_callables_and_lazy_strings(monkeypatch) -> None:
    from verdictlab.protocols import registry

    monkeypatch.setattr(registry.PROTOCOLS, "_entries", dict(registry.PROTOCOLS._entries))
    monkeypatch.setattr(registry, "_DEFAULT_INSTANCES", dict(registry._DEFAULT_INSTANCES))

    class Echo(Protocol):
        id = "echo-test"

        def __init__(self, *, template_path=None, **options) -> None:
            self.options = options

    register_protocol("echo-test", Echo)
    assert isinstance(get_protocol("echo-test"), Echo)
    assert get_protocol("echo-test", flavour=1).options == {"flavour": 1}
    register_protocol("lazy-test", "verdictlab.judges.sim:SimParams")   # resolved on first use only
    assert "lazy-test" in protocol_ids()
    assert registry.PROTOCOLS.entry("lazy-test").target == "verdictlab.judges.sim:SimParams"   # not imported yet


def test_messages_show_the_order_and_share_system_and_user_template() -> None:
    systems = set()
    for pid in PAIRWISE_IDS:
        p = get_protocol(pid)
        ab, ba = p.messages(ITEM, "AB"), p.messages(ITEM, "BA")
        systems.add(ab[0]["content"])
        assert [m["role"] for m in ab] == ["system", "user"]
        assert ab[1]["content"].index("4") < ab[1]["content"].index("five")
        assert ba[1]["content"].index("five") < ba[1]["content"].index("4")
        assert ab[1]["content"].endswith(p.template.instruction)
        assert len(ab[0]["content"]) + len(ab[1]["content"]) < 900   # short prompts for the local judge
    assert len(systems) == 1
    assert get_protocol("direct").label_only and get_protocol("direct").verdict_choices == ("A", "B")
    assert get_protocol("direct").max_tokens() <= 4
    assert get_protocol("vf-json").stop() == ("}",) and get_protocol("cot-xml").stop() == ("</judgment>",)
    assert get_protocol("cot-json").max_tokens() > get_protocol("vf-json").max_tokens()


def test_template_override_from_a_user_file(tmp_path) -> None:
    f = tmp_path / "mine.yaml"
    f.write_text('system: "Be a fair judge."\nprotocols:\n  vf-json:\n    max_tokens: 20\n', "utf-8")
    p = get_protocol("vf-json", template_path=f)
    assert p.messages(ITEM, "AB")[0]["content"] == "Be a fair judge."
    assert p.max_tokens() == 20 and p.stop() == ("}",)
    assert get_protocol("vf-json").max_tokens() == 48   # the shared default is untouched
    assert get_protocol("cot-xml", max_tokens=12).max_tokens() == 12
    bad = tmp_path / "bad.yaml"
    bad.write_text("user: 'no placeholders here'\n", "utf-8")
    with pytest.raises(ValueError, match="placeholder"):
        get_protocol("direct", template_path=bad)
    typo = tmp_path / "typo.yaml"
    typo.write_text("sytem: x\n", "utf-8")
    with pytest.raises(ValueError, match="unknown template keys"):
        get_protocol("direct", template_path=typo)


def _vs(pid: str, text: str) -> tuple[str | None, str]:
    r = get_protocol(pid).parse(text)
    return r.verdict, r.status


@pytest.mark.parametrize("text,expected", [
    ("A", ("A", "ok")),
    (" B\n", ("B", "ok")),
    ("b", ("B", "repaired")),
    ("Response A", ("A", "repaired")),
    ("**B**", ("B", "repaired")),
    ("(A)", ("A", "repaired")),
    ("B.", ("B", "repaired")),
    ("A. It is correct.", ("A", "repaired")),
    ("Answer: B", ("B", "repaired")),
    ("The better response is A", ("A", "repaired")),
    ("Response B is better", ("B", "repaired")),
    ("A good answer", (None, "failed")),           # article, not a verdict
    ("Response A is better than Response B. Answer: B", (None, "failed")),   # both designated
    ("A or B", (None, "failed")),
    ("tie", (None, "failed")),
    ("", (None, "failed")),
    ("Response", (None, "failed")),                # truncated by max_tokens
    ("I cannot tell", (None, "failed")),
])
def test_direct_parse(text: str, expected: tuple) -> None:
    assert _vs("direct", text) == expected


@pytest.mark.parametrize("pid,text,expected", [
    ("vf-json", '{"winner": "B", "rationale": "x"}', ("B", "ok")),
    ("vf-json", '{"winner": "B", "rationale": "x"', ("B", "ok")),                    # stop cut the brace
    ("vf-json", '```json\n{"winner": "A", "rationale": "x"', ("A", "repaired")),    # fence (R1)
    ("vf-json", 'Sure! {"winner": "A", "rationale": "x"}', ("A", "repaired")),      # prose (R2)
    ("vf-json", "{'winner': 'B', 'rationale': 'x'}", ("B", "repaired")),            # quotes (R3)
    ("vf-json", '{"winner": "a", "rationale": "x"}', ("A", "repaired")),            # case (R4)
    ("vf-json", '{"winner": "Response B", "rationale": "x"}', ("B", "repaired")),   # prefix (R4)
    ("vf-json", '{"winner": "B", "rationale": "the first one is wro', ("B", "repaired")),  # truncated (R5)
    ("vf-json", '{"rationale": "x", "winner": "A"}', ("A", "repaired")),            # wrong field order
    ("vf-json", '{"winner": "', (None, "failed")),                                  # winner incomplete
    ("vf-json", '{"winner": "A or B", "rationale": "x"}', (None, "failed")),
    ("vf-json", '{"winner": "tie", "rationale": "x"}', (None, "failed")),           # ties not allowed
    ("vf-json", '{"rationale": "x"}', (None, "failed")),
    ("vf-json", '{"winner": "A", "winner": "B", "rationale": "x', (None, "failed")),  # conflicting (R5)
    ("vf-json", "I prefer A.", (None, "failed")),
    ("cot-json", '{"rationale": "B is right.", "winner": "B"', ("B", "ok")),
    ("cot-json", '{"rationale": "B is right because', (None, "failed")),
    ("cot-json", '{"rationale": "ok", "winner": B}', ("B", "repaired")),             # unquoted value
])
def test_json_parse(pid: str, text: str, expected: tuple) -> None:
    assert _vs(pid, text) == expected


@pytest.mark.parametrize("pid,text,expected", [
    ("vf-xml", "<judgment><winner>A</winner><rationale>x</rationale></judgment>", ("A", "ok")),
    ("vf-xml", "<judgment><winner>B</winner><rationale>x</rationale>", ("B", "ok")),
    ("vf-xml", "<judgment>\n  <winner>B</winner>\n  <rationale>x</rationale>\n</judgment>", ("B", "ok")),
    ("vf-xml", "```xml\n<judgment><winner>b</winner><rationale>x", ("B", "repaired")),
    ("vf-xml", "<Winner> Response A </Winner>", ("A", "repaired")),
    ("vf-xml", "<judgment><winner>A</winner><rationale>truncated", ("A", "repaired")),
    ("vf-xml", "<judgment><winner>A", (None, "failed")),           # incomplete winner tag
    ("vf-xml", "<judgment><winner>A</winner><winner>B</winner>", (None, "failed")),
    ("vf-xml", "<judgment><winner>tie</winner>", (None, "failed")),
    ("cot-xml", "<judgment><rationale>x</rationale><winner>B</winner>", ("B", "ok")),
    ("cot-xml", "<judgment><rationale>x</rationale>", (None, "failed")),
    ("cot-xml", "", (None, "failed")),
])
def test_xml_parse(pid: str, text: str, expected: tuple) -> None:
    assert _vs(pid, text) == expected


def test_failures_say_why() -> None:
    r = get_protocol("vf-json").parse('{"winner": "tie", "rationale": "x"}')
    assert r.verdict is None and "tie" in r.detail
    r = get_protocol("vf-xml").parse("<winner>A</winner><winner>B</winner>")
    assert "conflicting" in r.detail
    r = get_protocol("direct").parse("Answer: A. Answer: B")
    assert "both" in r.detail


