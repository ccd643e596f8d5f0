"""What the simulated judge writes when it is asked to write instead of to judge.

A request says what it is for in ``metadata["purpose"]``; the simulated judge answers these from the
request's ``item`` (and never from the prompt's wording), deterministically from its seed:

``paraphrase`` (the paraphrase probe)
    the question (``metadata["question"]``) with a fixed set of word substitutions (:data:`SYNONYMS`) after the lead-in
    "Put differently, ".
``perturb.generate`` (``verdictlab perturb``), by ``metadata["kind"]``
    * ``paraphrase``: one of three rewrites of the response, picked by a draw from the seed, the case and
      its variant -- ``0`` the response after the lead-in "In other words: " (a near copy), ``1`` its
      sentences in reverse order with the substitutions, ``2`` the substitutions after "Put differently, ".
      A small repertoire on purpose: two variants of one source can coincide, so a run of the simulated
      writer exercises the near-duplicate filter the way a real model's repeats do;
    * ``label_flip``: the response with one edit -- its first number raised by one, else the first
      " is " made " is not ", else the sentence "This is not correct." appended;
    * ``synthetic``: a response written for the target grade: the lowest grade gets "I do not know.",
      the others one more sentence of an answer per grade above the lowest (the reference answer, when
      the item has one, opens the top grade's response).
``perturb.validate``
    ``VALID`` with probability ``skill``, else ``INVALID``, drawn from the seed and the prompt (the same
    prompt gets the same answer, as from a model at temperature 0, so a cached reply is the reply it would
    give); with probability ``malformed`` a reply that names no result (unparsed).
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from ..protocols.writing import validation_reply

__all__ = ["PURPOSES", "SYNONYMS", "written_text"]

PURPOSES: frozenset[str] = frozenset({"paraphrase", "perturb.generate", "perturb.validate"})
SYNONYMS: dict[str, str] = {
    "because": "since", "also": "as well", "large": "big", "small": "little", "fast": "quick",
    "answer": "reply", "use": "employ", "help": "assist", "show": "display", "start": "begin",
    "buy": "purchase", "get": "obtain", "need": "require", "about": "roughly", "very": "really",
    "many": "numerous", "often": "frequently", "maybe": "perhaps", "important": "significant",
    "correct": "right", "however": "but", "therefore": "so", "first": "initially", "make": "create",
    "find": "locate", "think": "believe", "give": "provide", "tell": "inform", "simple": "plain",
    "method": "approach", "result": "outcome", "quickly": "rapidly",
}
_WORD = re.compile(r"[A-Za-z]+")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_NUMBER = re.compile(r"-?\d+")
_LEVEL_SENTENCES = ("It addresses the question asked.", "It states the main point clearly.",
                    "It gives the details that matter.", "It is accurate throughout.",
                    "It is complete and easy to follow.")


def _uniform(*parts: Any) -> float:
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def _substituted(text: str) -> str:
    def swap(m: re.Match[str]) -> str:
        w = m.group(0)
        new = SYNONYMS.get(w.lower())
        if new is None:
            return w
        return new.capitalize() if w[0].isupper() else new

    return _WORD.sub(swap, text)


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:] if text[:1].isupper() and not text[1:2].isupper() else text


def _paraphrase(response: str, pick: int) -> str:
    text = response.strip()
    if pick == 0:
        return f"In other words: {text}"
    if pick == 1:
        sentences = [s for s in _SENTENCE.split(text) if s]
        return _substituted(" ".join(reversed(sentences)) if len(sentences) > 1 else text)
    return f"Put differently, {_lower_first(_substituted(text))}"


def _label_flip(response: str) -> str:
    m = _NUMBER.search(response)
    if m:
        return f"{response[:m.start()]}{int(m.group(0)) + 1}{response[m.end():]}"
    if " is " in response:
        return response.replace(" is ", " is not ", 1)
    return f"{response.rstrip()} This is not correct."


def _synthetic(item: Any, target: Any) -> str:
    scale = [str(g) for g in (getattr(item, "scale", None) or ("FAIL", "PASS"))]
    level = scale.index(str(target)) if str(target) in scale else 0
    if level == 0:
        return "I do not know."
    body = " ".join(_LEVEL_SENTENCES[i % len(_LEVEL_SENTENCES)] for i in range(level))
    ref = getattr(item, "reference", None)
    return f"{ref.strip()} {body}" if ref and level == len(scale) - 1 else body


def _validation(params: Any, prompt: str) -> str:
    u_valid = _uniform("sim-validate", params.seed, prompt)
    u_bad = _uniform("sim-validate-malformed", params.seed, prompt)
    if u_bad < params.malformed:
        return "I could not decide whether the text does what it should."
    result = "VALID" if u_valid < params.skill else "INVALID"
    return validation_reply(result, f"The simulated validator finds the case {result.lower()}.")


def written_text(params: Any, metadata: dict[str, Any], item: Any, prompt: str = "") -> str:
    """The text the simulated judge (parameters ``params``) writes for a writing request (module
    docstring; ``prompt``: the request's messages as text); a ``ValueError`` for a purpose or kind it
    does not write."""
    purpose = metadata.get("purpose")
    if purpose == "paraphrase":
        question = metadata.get("question") or getattr(item, "question", "")
        return f"Put differently, {_lower_first(_substituted(str(question).strip()))}"
    if purpose == "perturb.validate":
        return _validation(params, prompt)
    if purpose != "perturb.generate":
        raise ValueError(f"the simulated judge writes nothing for purpose {purpose!r}")
    kind = metadata.get("kind")
    if kind == "paraphrase":
        u = _uniform("sim-write", params.seed, metadata.get("dataset", ""), metadata.get("source_id", ""),
                     metadata.get("variant", 0))
        return _paraphrase(item.response, min(int(u * 3), 2))
    if kind == "label_flip":
        return _label_flip(item.response)
    if kind == "synthetic":
        return _synthetic(item, metadata.get("target"))
    raise ValueError(f"the simulated judge writes no case of kind {kind!r}")
