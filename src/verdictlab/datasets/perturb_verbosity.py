"""Verbosity perturbations: the response padded with text that adds no content (meaning-preserving,
written by a rule).

``verbosity.pad`` appends a new paragraph of neutral sentences (:data:`PADDING_SENTENCES`: courtesy and
filler that make no claim about the answer or its quality), drawn without repetition in a seeded order
until at least ``chars`` characters were added (default :data:`DEFAULT_PAD_CHARS`), then the whole set
again in a new order if more are needed.  Stored parameters: the size asked for (``requested_chars``),
the size added (``chars``) and the sentences used (their positions in :data:`PADDING_SENTENCES`), so the
padding can be rebuilt exactly.
"""

from __future__ import annotations

import random

from .perturb_cases import Edit

__all__ = ["DEFAULT_PAD_CHARS", "PADDING_SENTENCES", "pad"]

DEFAULT_PAD_CHARS = 200
PADDING_SENTENCES: tuple[str, ...] = (
    "I hope this is useful.",
    "Let me know if you would like more detail on any part of it.",
    "Questions like this come up often, and it is worth taking a moment over them.",
    "Thank you for asking.",
    "Feel free to follow up with another question.",
    "There are many ways to put an answer like this one into words.",
    "If anything here is unclear, I am happy to go over it again.",
    "It can help to read the answer through once more before using it.",
)


def pad(text: str, rng: random.Random, *, chars: int = DEFAULT_PAD_CHARS) -> Edit:
    if chars < 1:
        raise ValueError(f"verbosity.pad: the padding size must be at least 1 character, got {chars}")
    used: list[int] = []
    added = ""
    while len(added) < chars:
        order = list(range(len(PADDING_SENTENCES)))
        rng.shuffle(order)
        for i in order:
            added = f"{added} {PADDING_SENTENCES[i]}" if added else PADDING_SENTENCES[i]
            used.append(i)
            if len(added) >= chars:
                break
    new = f"{text.rstrip()}\n\n{added}"
    return Edit(response=new, params={"requested_chars": chars, "chars": len(new) - len(text), "sentences": used})
