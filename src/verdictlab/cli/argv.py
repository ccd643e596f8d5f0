"""The command line as typed, rewritten before parsing where the parser alone cannot follow the grammar
(``docs/cli.md``):

* ``--debug`` is accepted anywhere -- before or after the command -- and moved to the front, where the
  root command reads it;
* two old spellings that an option of the same name now spells differently, accepted for one release
  with a one-line notice: ``review --unparsed`` as a bare flag (now ``--unparsed wrong``: unparsed
  verdicts count as disagreements, so they are exported) and ``demo --decoding free,constrained`` (now
  one ``--decoding`` per mode).

Nothing after a ``--`` is touched.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core.vocab import UNPARSED_POLICIES
from .options import deprecated

DEBUG = "--debug"


def _command(words: Sequence[str]) -> str | None:
    """The first word that is not an option: the command's name."""
    return next((w for w in words if not w.startswith("-")), None)


def _review_unparsed(words: list[str]) -> list[str]:
    out: list[str] = []
    for i, w in enumerate(words):
        out.append(w)
        nxt = words[i + 1] if i + 1 < len(words) else None
        if w == "--unparsed" and (nxt is None or nxt.lower() not in UNPARSED_POLICIES):
            deprecated("review --unparsed (a flag)", "review --unparsed wrong")
            out.append("wrong")
    return out


def _demo_decoding(words: list[str]) -> list[str]:
    out: list[str] = []
    it = iter(words)
    for w in it:
        value = None
        if w == "--decoding":
            value = next(it, None)
        elif w.startswith("--decoding="):
            value = w.partition("=")[2]
        else:
            out.append(w)
            continue
        if value is None:
            out.append(w)
            continue
        modes = [m.strip() for m in value.split(",") if m.strip()]
        if len(modes) > 1:
            deprecated(f"--decoding {value}", " ".join(f"--decoding {m}" for m in modes))
        for m in modes or [value]:
            out += ["--decoding", m]
    return out


def rewrite(args: Sequence[str]) -> list[str]:
    """``args`` (without the program name) as the parser should read them."""
    words = list(args)
    tail: list[str] = []
    if "--" in words:
        cut = words.index("--")
        words, tail = words[:cut], words[cut:]
    debug = DEBUG in words
    words = [w for w in words if w != DEBUG]
    command = _command(words)
    if command == "review":
        words = _review_unparsed(words)
    elif command == "demo":
        words = _demo_decoding(words)
    return ([DEBUG] if debug else []) + words + tail
