"""Display names (report/names.py): short, never ambiguous, the full id kept beside them.

The defect this guards: judge ids were cut to ``sim:s=0.75,pl=0.25,n=…`` in every table, where ``s``
stood for both skill and seed and a value could be cut in two.  The class: any two keys whose
initials collide, any two ids that shorten to the same text."""

from __future__ import annotations

from itertools import combinations

import pytest

from verdictlab.engine.config import ConfigError, config_from_dict
from verdictlab.report.names import configuration_name, display_names, names_from_config, shown_parts

SIMS = ["sim:skill=0.85,position_lock=0.05,noise=0.03,seed=1", "sim:skill=0.8,position_lock=0.3,noise=0.05,seed=2",
        "sim:skill=0.6,position_lock=0.1,noise=0.3,seed=3"]


def test_colliding_initials_get_distinct_keys() -> None:
    # skill and seed both have the initial s: they become sk and se; position_lock keeps pl, noise n
    names = display_names(SIMS, width=32)
    assert names == {SIMS[0]: "sim:sk=0.85,pl=0.05,n=0.03,se=1", SIMS[1]: "sim:sk=0.8,pl=0.3,n=0.05,se=2",
                     SIMS[2]: "sim:sk=0.6,pl=0.1,n=0.3,se=3"}


def test_keys_equal_in_every_id_are_left_out() -> None:
    # noise and seed are the same for both judges: the names keep what tells them apart
    a, b = "sim:skill=0.8,position_lock=0.2,noise=0.05,seed=1", "sim:skill=0.6,position_lock=0.2,noise=0.05,seed=1"
    assert display_names([a, b], width=24) == {a: "sim:sk=0.8", b: "sim:sk=0.6"}
    # ... only when a name has to be shortened: short ids stay whole
    assert display_names(["sim:skill=0.8", "sim:skill=0.6"], width=24) == {"sim:skill=0.8": "sim:skill=0.8",
                                                                          "sim:skill=0.6": "sim:skill=0.6"}


@pytest.mark.parametrize("keys", [("skill", "seed", "scale"), ("position_lock", "p_lock", "pl"),
                                  ("n", "noise", "nudge"), ("a_b", "ab", "a_bc")])
def test_no_two_keys_share_an_abbreviation(keys: tuple[str, ...]) -> None:
    ids = [",".join(f"{k}={i * 10 + j}" for j, k in enumerate(keys)) for i in range(1, 3)]
    ids = [f"x:{spec},padding_to_make_it_long=1" for spec in ids]
    names = display_names(ids, width=20)
    assert len(set(names.values())) == len(ids)
    full = display_names(ids, width=200)
    assert full == {i: i for i in ids}


def test_never_ambiguous_whatever_the_ids() -> None:
    ids = [f"openai-compatible:Qwen/Qwen2.5-7B-Instruct@http://host{k}:8000/v1" for k in range(3)]
    ids += ["llamacpp:/home/u/models/qwen2.5-0.5b-instruct-q4_k_m.gguf", "openai:gpt-4o-mini"]
    ids += [f"backend:{'a' * 30}-{k}" for k in range(3)]
    for width in (8, 12, 24, 32):
        names = display_names(ids, width=width)
        assert set(names) == set(ids)
        assert all(n1 != n2 for (_, n1), (_, n2) in combinations(names.items(), 2)), names
    names = display_names(ids, width=32)
    assert names["openai:gpt-4o-mini"] == "openai:gpt-4o-mini"
    # a base URL is dropped, a path keeps its last part, and the three Qwen judges are numbered
    assert names["llamacpp:/home/u/models/qwen2.5-0.5b-instruct-q4_k_m.gguf"].startswith("llamacpp:qwen2.5-0.5b")
    assert sorted(names[i][-2:] for i in ids[:3]) == ["#1", "#2", "#3"]


def test_a_protocol_template_path_keeps_its_file_name() -> None:
    assert display_names(["direct@/a/b/templates/mine.yaml", "direct"], width=20) == {
        "direct@/a/b/templates/mine.yaml": "direct@mine.yaml", "direct": "direct"}


def test_hostile_text_is_cut_not_rewritten() -> None:
    evil = "evil<script>document.title='PWNED'</script>"
    assert display_names([evil], width=20) == {evil: "evil<script>documen…"}


def test_a_label_from_the_config_wins_and_stays_unique() -> None:
    given = {SIMS[0]: "steady", SIMS[1]: "steady"}
    names = display_names(SIMS, width=32, given=given)
    # numbered by id: "sim:skill=0.8," sorts before "sim:skill=0.85"
    assert names[SIMS[1]] == "steady #1" and names[SIMS[0]] == "steady #2"
    assert names[SIMS[2]] == "sim:sk=0.6,pl=0.1,n=0.3,se=3"


def test_the_config_takes_a_judge_label_and_the_report_reads_it() -> None:
    cfg = config_from_dict({"name": "x", "datasets": ["demo"], "protocols": ["direct"],
                            "judges": [{"id": SIMS[0], "label": "steady"}, SIMS[1]]})
    meta = {"config": cfg.public_dict()}
    assert names_from_config(meta) == {SIMS[0]: "steady"}
    with pytest.raises(ConfigError, match="judge labels contain duplicates: same"):
        config_from_dict({"name": "x", "datasets": ["demo"], "protocols": ["direct"],
                          "judges": [{"id": SIMS[0], "label": "same"}, {"id": SIMS[1], "label": "same"}]})
    with pytest.raises(ConfigError, match="label"):
        config_from_dict({"name": "x", "datasets": ["demo"], "protocols": ["direct"],
                          "judges": [{"id": SIMS[0], "label": ""}]})


def test_configuration_names_show_what_tells_cells_apart() -> None:
    cells = [{"judge": SIMS[0], "protocol": "direct", "temperature": 0.0, "decoding": "free", "step": ""},
             {"judge": SIMS[0], "protocol": "direct", "temperature": 0.7, "decoding": "free", "step": ""}]
    parts = shown_parts(cells)
    assert parts == ("temperature",)
    names = {"judge": {SIMS[0]: "steady"}, "protocol": {"direct": "direct"}}
    assert [configuration_name(c, names, parts) for c in cells] == ["steady · direct · t=0", "steady · direct · t=0.7"]
    assert configuration_name({**cells[0], "decoding": "constrained", "step": "accuracy"}, {},
                              ("decoding", "step")) == f"{SIMS[0]} · direct · constrained · [accuracy]"
