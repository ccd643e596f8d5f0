"""The packaged demo dataset: 28 short hand-written pairs with gold labels.

Categories: factual correctness, arithmetic, instruction following (format / length constraints),
verbose-but-wrong vs terse-and-right, and near-ties whose better answer is only slightly better
(the pairs where a position-biased judge shows it).  The better answer sits in position A in 14
pairs and in position B in the other 14.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

from .jsonl import load_jsonl
from .registry import DatasetLoad


def demo_path() -> str:
    return str(resources.files("verdictlab").joinpath("data/demo.jsonl"))


def load_demo(path: str | None = None, **options: Any) -> DatasetLoad:
    """Load the demo pairs (``path`` overrides the packaged file)."""
    options.setdefault("dataset", "demo")
    return load_jsonl(path or demo_path(), **options)
