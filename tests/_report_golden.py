"""The runs of the report-equality test and the parts of a report it compares, shared by the test and by
the script that wrote its golden files.

The golden files (``data/report_golden_simulated.json``, ``data/report_golden_published.json``) were written
by the report *before* it was typed -- the code of ``main`` at the merge base of that work -- so the test
compares the typed report with what the old one printed, not with itself::

    git archive <pre-typed commit> src | tar -x -C /tmp/pre
    PYTHONPATH=/tmp/pre/src .venv/bin/python tests/_report_golden.py <shared data folder>

Only this module knows how the runs are made; it uses nothing the old and the new report do not both have
(``build_report``, ``report_json``, the importers and the synthetic run).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data"
GOLDEN_SIMULATED = DATA / "report_golden_simulated.json"
GOLDEN_PUBLISHED = DATA / "report_golden_published.json"
POLICIES = ("exclude", "wrong")

#: the simulated runs: a small grid, ties with one-order pairs and parse failures, two temperatures with
#: several judges, constrained beside free decoding, and one repetition
SIMULATED: dict[str, dict[str, Any]] = {
    "small": dict(datasets=("d1",), protocols=("direct", "vf-json"), temperatures=(0.0,), n_items=8, seed=3),
    "ties": dict(datasets=("d1",), protocols=("direct",), temperatures=(0.7,), n_items=8, seed=5,
                 judge_tie_rate=0.15, one_order_share=0.25, fail_rate=0.2),
    "grid": dict(datasets=("d1", "d2"), protocols=("direct", "cot-json"), temperatures=(0.0, 0.7), n_items=10,
                 seed=11),
    "decoding": dict(datasets=("d1",), protocols=("vf-json",), temperatures=(0.0,), n_items=8, seed=13,
                     decodings=("free", "constrained")),
    "one-rep": dict(datasets=("d1",), protocols=("direct", "vf-json"), temperatures=(0.0,), n_items=10, seed=17,
                    repetitions=1),
}
#: the bootstrap of the compared reports (small: the figures, not the intervals' accuracy, are compared)
N_BOOTSTRAP, SEED = 40, 4


def write_simulated(run_dir: Path, name: str) -> Path:
    from verdictlab.testing.synthetic_run import write_synthetic_run

    write_synthetic_run(run_dir, **SIMULATED[name]).close()
    return run_dir


def _prd_rows(shared: Path) -> list[dict[str, Any]]:
    """The GPT-4 and Claude reviewers' three-class files of PRD as judgment rows (both orders; no labels)."""
    rows = []
    for reviewer in ("gpt4", "claude"):
        for f in sorted((shared / "prd" / "vicuna80" / f"ratings-{reviewer}").glob("*.jsonl")):
            first, second = f.name.split(f"-{reviewer}-reviewer")[0].split("-vs-")
            a, b = sorted([first, second])
            for line in f.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    r = json.loads(line)
                    s = r.get("score")
                    verdict = {1: "A", 2: "B", 0: "tie", 3: "tie"}.get(s if isinstance(s, int) else -9, "")
                    rows.append({"item_id": f"{r['question_id']}-{a}-{b}", "judge": reviewer, "dataset": "vicuna80",
                                 "protocol": "prd-threeclass", "order": "AB" if first == a else "BA",
                                 "verdict": verdict})
    return rows


def write_published(base: Path, shared: Path) -> dict[str, Path]:
    """The published logs as runs: LLMBar's processed judge logs, a PandaLM verdict file over the real test
    set (with unreadable verdicts and ties), the PRD reviewers' three-class files."""
    from verdictlab.datasets.pandalm import load_pandalm
    from verdictlab.importers import import_into

    base.mkdir(parents=True, exist_ok=True)
    runs = {"llmbar": base / "llmbar", "pandalm": base / "pandalm", "prd": base / "prd"}
    import_into("llmbar", shared / "samples" / "llmbar_results", run_dir=runs["llmbar"])
    testset = shared / "pandalm" / "testset-v1.json"
    gold = {it.item_id: it.label for it in load_pandalm(str(testset)).items}
    plan = {"A": [("1", 300), ("2", 100), ("garbage", 22)], "B": [("2", 400), ("1", 50), ("Tie", 22)],
            "tie": [("Tie", 40), ("1", 40), ("garbage", 25)]}
    queue = {lab: [v for v, n in plan[lab] for _ in range(n)] for lab in plan}
    verdicts = base / "gpt-3.5-turbo.json"
    verdicts.write_text(json.dumps([{"idx": int(i), "gpt-3.5-turbo_result": queue[str(lab)].pop(0)}
                                    for i, lab in gold.items()]))
    import_into("pandalm", verdicts, run_dir=runs["pandalm"], items_path=str(testset))
    prd = base / "prd.jsonl"
    prd.write_text("\n".join(json.dumps(r) for r in _prd_rows(shared)) + "\n")
    import_into("jsonl", prd, run_dir=runs["prd"], verdicts="positional")
    return runs


def compared(run_dir: Path, policy: str) -> dict[str, Any]:
    """The parts of a run's JSON report the test compares: every cell, the format dispersion, the figures
    across cells and every registered analysis' table."""
    from verdictlab.core.policy import FigurePolicy
    from verdictlab.report import build_report, report_json

    doc = report_json(build_report(run_dir, policy=FigurePolicy(unparsed=policy, n_bootstrap=N_BOOTSTRAP,
                                                                seed=SEED)))
    run = doc["run"]
    return {"cells": doc["cells"], "format_dispersion": run["format_dispersion"],
            "across_cells": run["across_cells"], "analyses": run["analyses"]}


def main(shared: Path) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        sim = {f"{name}/{p}": compared(write_simulated(base / name, name), p) for name in SIMULATED
               for p in POLICIES}
        GOLDEN_SIMULATED.write_text(json.dumps(sim, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        runs = write_published(base / "published", shared)
        pub = {f"{name}/{p}": compared(path, p) for name, path in runs.items() for p in POLICIES}
        GOLDEN_PUBLISHED.write_text(json.dumps(pub, indent=1, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
