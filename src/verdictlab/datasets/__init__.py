"""Dataset loaders by name.  ``load_dataset("jsonl", path=...)``; ``dataset_names()`` lists them."""

from .registry import (
    DatasetLoad,
    dataset_names,
    describe_loaders,
    get_loader,
    load_dataset,
    register_loader,
    reorder_fixed_pairs,
)

register_loader("jsonl", "verdictlab.datasets.jsonl:load_jsonl",
                "generic JSON Lines: item_id, question, response_a, response_b, label")
register_loader("csv", "verdictlab.datasets.tabular:load_csv",
                "generic CSV, one pair per row: item_id, question, response_a, response_b, label "
                "(field_map renames columns)")
register_loader("parquet", "verdictlab.datasets.tabular:load_parquet",
                "generic Parquet, one pair per row (same columns as csv; field_map renames columns)")
register_loader("llmbar", "verdictlab.datasets.llmbar:load_llmbar",
                "LLMBar: Natural + 4 adversarial splits (419 pairs), objective label, no ties")
register_loader("pandalm", "verdictlab.datasets.pandalm:load_pandalm",
                "PandaLM testset-v1: 999 pairs, gold = majority of 3 annotators (ties kept; "
                "tie_policy=drop leaves 894)")
register_loader("judgebench", "verdictlab.datasets.judgebench:load_judgebench",
                "JudgeBench: hard pairs labelled by objective correctness (path or hub "
                "ScalerLab/JudgeBench)")
register_loader("mtbench-human", "verdictlab.datasets.mtbench_human:load_mtbench_human",
                "MT-Bench expert votes, one item per question x model pair x turn, votes aggregated "
                "(vote_rule=majority|unanimous)")
register_loader("alpacafarm", "verdictlab.datasets.alpacafarm:load_alpacafarm",
                "AlpacaFarm human preference pairs (preference 1|2)")
register_loader("rewardbench", "verdictlab.datasets.rewardbench:load_rewardbench",
                "RewardBench chosen/rejected pairs; fixed order re-ordered per item with a seeded RNG")
register_loader("arena", "verdictlab.datasets.arena:load_arena",
                "Chatbot Arena conversations with crowd votes (sample=N with seed 42)")
register_loader("judges-verdict", "verdictlab.datasets.judges_verdict:load_judges_verdict",
                "Judge's Verdict: pointwise answers with graded human labels (PointItem)")
register_loader("helpsteer2", "verdictlab.datasets.helpsteer2:load_helpsteer2",
                "HelpSteer2: responses with human 0-4 ratings (helpfulness, ...), for an ordinal grader (PointItem)")
register_loader("summeval", "verdictlab.datasets.summeval:load_summeval",
                "SummEval: CNN/DM summaries with 3 experts' 1-5 ratings (coherence, ...), for an ordinal grader "
                "(PointItem)")
register_loader("ragtruth", "verdictlab.datasets.ragtruth:load_ragtruth",
                "RAGTruth: RAG responses with human hallucination spans -> PASS/FAIL faithfulness (PointItem)")
register_loader("halueval", "verdictlab.datasets.halueval:load_halueval",
                "HaluEval general: ChatGPT responses with human hallucination verdicts -> PASS/FAIL (PointItem)")
register_loader("multi-jsonl", "verdictlab.datasets.multi:load_multi_jsonl",
                "multi-response JSON Lines: one question, K >= 3 responses keyed by system, expanded into pairs")
register_loader("mtbench-answers", "verdictlab.datasets.multi:load_mtbench_answers",
                "MT-Bench-style question.jsonl + model_answer/*.jsonl, expanded into all pairs of models")
register_loader("perturbations", "verdictlab.datasets.perturbation_suite:load_perturbations",
                "a perturbation suite written by `verdictlab perturb` (point items and their perturbed cases)")
register_loader("inspect-transcripts", "verdictlab.datasets.inspect_transcripts:load_inspect_transcripts",
                "an inspect_ai log's samples as agent transcripts (label_scorer: the scorer whose grade is the "
                "label)", extra="inspect")
register_loader("demo", "verdictlab.datasets.demo:load_demo", "28 short packaged demo pairs (no path needed)")

__all__ = [
    "DatasetLoad",
    "dataset_names",
    "describe_loaders",
    "get_loader",
    "load_dataset",
    "register_loader",
    "reorder_fixed_pairs",
]
