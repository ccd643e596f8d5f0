"""Format perturbations: the same words in another presentation (meaning-preserving, written by a rule).

Each rule takes the response and a seeded draw and returns the new text with the parameters that
reproduce it; a rule that would leave the text as it is raises :class:`NotApplicable`.

``format.whitespace``
    one of three layouts, tried in a seeded order until one changes the text: ``double_space`` (two
    spaces after each sentence end), ``sentence_lines`` (each sentence on its own line), ``blank_lines``
    (every line break doubled, a paragraph per line).
``format.markdown``
    a response with Markdown loses it (``strip``: emphasis markers, heading hashes, inline backticks);
    one without gains it (``add``: a ``## Answer`` heading and the first sentence in bold).
``format.list_style``
    a list changes its markers (``-`` bullets <-> ``1.`` numbers); prose of two or more sentences
    becomes a bulleted list of its sentences.
``format.casing``
    the text in upper or lower case (a seeded choice), code (fenced blocks, inline code) and web
    addresses left as they are.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable

from .perturb_cases import Edit, NotApplicable

__all__ = ["FORMAT_RULES", "casing", "list_style", "markdown", "whitespace"]

_SENTENCE_END = re.compile(r"(?<=[.!?])[ \t]+(?=\S)")
_MARKDOWN = re.compile(r"(\*\*|__|^#{1,6}\s|`|^\s*[-*+]\s|^\s*\d+[.)]\s)", re.MULTILINE)
_BULLET = re.compile(r"^(\s*)[-*+\u2022]\s+", re.MULTILINE)
_NUMBERED = re.compile(r"^(\s*)\d+[.)]\s+", re.MULTILINE)
_PROTECTED = re.compile(r"```.*?```|`[^`\n]*`|https?://\S+|www\.\S+", re.DOTALL)


def _sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE_END.split(text.strip()) if s.strip()]


def _layout(text: str, name: str) -> str:
    if name == "double_space":
        return _SENTENCE_END.sub("  ", text)
    if name == "sentence_lines":
        return _SENTENCE_END.sub("\n", text)
    return re.sub(r"\n+", "\n\n", text.strip()) + ("\n" if "\n" in text else "\n\n")


def whitespace(text: str, rng: random.Random) -> Edit:
    layouts = ["double_space", "sentence_lines", "blank_lines"]
    rng.shuffle(layouts)
    for name in layouts:
        new = _layout(text, name)
        if new != text:
            return Edit(response=new, params={"layout": name})
    raise NotApplicable("no layout changes this text")


def markdown(text: str, rng: random.Random) -> Edit:
    if _MARKDOWN.search(text):
        new = re.sub(r"\*\*|__|`", "", text)
        new = re.sub(r"^#{1,6}\s+", "", new, flags=re.MULTILINE)
        if new != text:
            return Edit(response=new, params={"direction": "strip"})
    sentences = _sentences(text)
    if not sentences:
        raise NotApplicable("no text to format")
    first = sentences[0]
    body = text.strip()
    rest = body[len(first):] if body.startswith(first) else body
    return Edit(response=f"## Answer\n\n**{first}**{rest}", params={"direction": "add"})


def list_style(text: str, rng: random.Random) -> Edit:
    if _BULLET.search(text):
        counter = iter(range(1, 10_000))
        new = _BULLET.sub(lambda m: f"{m.group(1)}{next(counter)}. ", text)
        return Edit(response=new, params={"from": "bullets", "to": "numbers"})
    if _NUMBERED.search(text):
        return Edit(response=_NUMBERED.sub(lambda m: f"{m.group(1)}- ", text), params={"from": "numbers", "to": "bullets"})
    sentences = _sentences(text)
    if len(sentences) < 2:
        raise NotApplicable("neither a list nor two sentences to list")
    return Edit(response="\n".join(f"- {s.strip()}" for s in sentences), params={"from": "prose", "to": "bullets"})


def casing(text: str, rng: random.Random) -> Edit:
    case = rng.choice(["upper", "lower"])
    for choice in (case, "lower" if case == "upper" else "upper"):
        change: Callable[[str], str] = str.upper if choice == "upper" else str.lower
        parts, pos = [], 0
        for m in _PROTECTED.finditer(text):
            parts.append(change(text[pos:m.start()]))
            parts.append(m.group(0))
            pos = m.end()
        parts.append(change(text[pos:]))
        new = "".join(parts)
        if new != text:
            return Edit(response=new, params={"case": choice})
    raise NotApplicable("the text has no letters to change outside code")


FORMAT_RULES: dict[str, Callable[[str, random.Random], Edit]] = {
    "format.whitespace": whitespace, "format.markdown": markdown, "format.list_style": list_style,
    "format.casing": casing}
