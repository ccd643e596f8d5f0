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

__all__ = [
    "DatasetLoad",
    "dataset_names",
    "describe_loaders",
    "get_loader",
    "load_dataset",
    "register_loader",
    "reorder_fixed_pairs",
]
