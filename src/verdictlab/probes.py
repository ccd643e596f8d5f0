"""Bias probes are dataset transforms: they live in :mod:`verdictlab.datasets.probes` (this name is kept
for existing imports)."""

from .datasets.probes import (  # noqa: F401
    ANCHOR_TEXT,
    INJECTION_TEXT,
    META_AWARE_PROTOCOLS,
    PADDING_TEXT,
    PARAPHRASE_PROMPT,
    PROBES,
    SIDES,
    anchoring_probe,
    apply_probe,
    paraphrase_probe,
)

__all__ = ["ANCHOR_TEXT", "INJECTION_TEXT", "META_AWARE_PROTOCOLS", "PADDING_TEXT", "PARAPHRASE_PROMPT", "PROBES",
           "SIDES", "anchoring_probe", "apply_probe", "paraphrase_probe"]
