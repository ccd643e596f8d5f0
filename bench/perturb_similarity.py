"""Which text similarity the near-duplicate filter of ``verdictlab perturb`` should use: three measures on
texts built the way model writers fail (a copy behind a lead-in, a one-word change, an exact repeat) and
succeed (a reworded text, a reordering of the same sentences), and their cost per pair of 200-word
responses, measured in one process.  Prints the similarity of each pair under each measure and the time
per pair with the ratio to the word-sequence ratio; does not assert.

    .venv/bin/python bench/perturb_similarity.py [--pairs 300]
"""

from __future__ import annotations

import argparse
import os
import random
import re
import time
from difflib import SequenceMatcher

from verdictlab.datasets.near_duplicates import similarity as word_ratio

_WORD = re.compile(r"\w+")
SYNONYMS = {"answer": "reply", "because": "since", "large": "big", "uses": "employs", "quickly": "rapidly",
            "shows": "displays", "gets": "obtains", "needs": "requires", "many": "numerous", "often": "frequently",
            "important": "significant", "makes": "creates", "finds": "locates", "gives": "provides",
            "the": "this", "a": "one", "is": "remains", "it": "this", "and": "plus", "of": "from"}


def jaccard(a: str, b: str) -> float:
    sa, sb = set(_WORD.findall(a.casefold())), set(_WORD.findall(b.casefold()))
    return len(sa & sb) / len(sa | sb) if sa | sb else 1.0


def char_ratio(a: str, b: str) -> float:
    return SequenceMatcher(None, a.casefold(), b.casefold(), autojunk=False).ratio()


MEASURES = {"word-sequence ratio (chosen)": word_ratio, "token-set Jaccard": jaccard, "character ratio": char_ratio}


def response(rng: random.Random, n_words: int = 200) -> str:
    vocab = [*SYNONYMS, "model", "value", "grader", "result", "test", "number", "step", "method", "data", "case",
             "error", "file", "system", "user", "time", "part", "point", "line", "rule", "list"]
    out, sentence = [], []
    for _ in range(n_words):
        sentence.append(rng.choice(vocab))
        if len(sentence) >= rng.randint(8, 16):
            out.append(" ".join(sentence).capitalize() + ".")
            sentence = []
    if sentence:
        out.append(" ".join(sentence).capitalize() + ".")
    return " ".join(out)


def cases(text: str, rng: random.Random) -> dict[str, str]:
    sentences = re.split(r"(?<=\.)\s+", text)
    words = text.split()
    i = rng.randrange(len(words))
    one_word = " ".join([*words[:i], "changed", *words[i + 1:]])
    reworded = " ".join(SYNONYMS.get(w.lower(), w) for w in words)
    shuffled = sentences[:]
    rng.shuffle(shuffled)
    return {"exact repeat": text, "copy behind a lead-in": "In other words: " + text, "one word changed": one_word,
            "reworded (synonyms)": reworded, "sentences reordered": " ".join(shuffled),
            "reordered and reworded": " ".join(SYNONYMS.get(w.lower(), w) for w in " ".join(shuffled).split())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=300)
    args = ap.parse_args()
    rng = random.Random(0)
    base = response(rng)
    print(f"load {os.getloadavg()[0]:.1f}; one 200-word response against each variant")
    print(f"{'variant':<26}" + "".join(f"{m:>30}" for m in MEASURES))
    for name, other in cases(base, rng).items():
        print(f"{name:<26}" + "".join(f"{fn(base, other):>30.2f}" for fn in MEASURES.values()))
    pairs = [(response(rng), response(rng)) for _ in range(args.pairs)]
    times = {}
    for m, fn in MEASURES.items():
        t0 = time.perf_counter()
        for a, b in pairs:
            fn(a, b)
        times[m] = (time.perf_counter() - t0) / len(pairs)
    ref = times["word-sequence ratio (chosen)"]
    for m, t in times.items():
        print(f"{m:<30} {t * 1e3:8.3f} ms per pair   x{t / ref:5.1f}")


if __name__ == "__main__":
    main()
