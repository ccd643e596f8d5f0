"""Prompts that ask a model to write a test case, and to validate one, and the parsers of the replies.

The model-written perturbation kinds (``verdictlab perturb``: ``paraphrase``, ``label_flip``,
``synthetic``) each have a generation prompt and a validation prompt, worded in the package template
``protocols/templates/perturbation.yaml`` (a user's file of the same shape replaces it).  A template is
identified by :attr:`WritingTemplate.template_id` (file, kind and the first 12 hex digits of the SHA-256
of its wording), stored with every case it wrote.

Replies
-------
A **written case** is the reply's text.  Strict (``ok``): any non-blank text.  Repairs (``repaired``,
each named in ``detail``): markdown code fences around the whole reply are dropped; a leading label
line naming the text (``Reworded response:``, ``Edited response:``, ``Response:``) is dropped; quotes
around the whole reply are dropped.  Failed: nothing left.

A **validation** is ``<reasoning>...</reasoning><result>VALID|INVALID</result>``.  Strict (``ok``):
exactly that (the closing ``</result>`` may be missing: it is the stop sequence).  Repairs
(``repaired``): one result tag elsewhere in the text or in another case, or a ``Result: VALID`` line.
Failed: no result, or both named.  A case whose validation failed to parse is not kept (counted).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from .base import ParseResult
from .parsing import strip_fences

__all__ = ["VALIDATION_RESULTS", "WRITING_KINDS", "WritingPrompt", "WritingTemplate", "Written", "WrittenText",
           "generation_prompt", "parse_validation", "parse_written", "scale_text", "validation_prompt",
           "validation_reply", "writing_template"]

#: the perturbation kinds a model writes, each with a template entry
WRITING_KINDS: tuple[str, ...] = ("paraphrase", "label_flip", "synthetic")
VALIDATION_RESULTS: tuple[str, ...] = ("VALID", "INVALID")
_PACKAGE_TEMPLATE = "templates/perturbation.yaml"
_STRICT = re.compile(r"^\s*<reasoning>(.*?)</reasoning>\s*<result>(VALID|INVALID)</result>\s*$", re.DOTALL)
_TAG = re.compile(r"<\s*result\s*>\s*\**\s*(valid|invalid)\s*\**\s*<\s*/\s*result\s*>", re.IGNORECASE)
_LINE = re.compile(r"(?:^|\n)\s*\**\s*(?:result|verdict|answer)\s*\**\s*[:=]\s*\**\s*(valid|invalid)\b",
                   re.IGNORECASE)
_LABEL_LINE = re.compile(r"^\s*\**\s*(?:reworded|rewritten|edited|new|synthetic)?\s*response\s*\**\s*:\s*\**\s*\n?",
                         re.IGNORECASE)


@dataclass(frozen=True)
class WritingTemplate:
    """The wording of one kind: ``system``, ``generate`` and ``validate`` prompts; ``template_id`` names
    the file, the kind and a hash of the wording."""

    kind: str
    system: str
    generate: str
    validate: str
    template_id: str


@dataclass(frozen=True)
class WritingPrompt:
    """One call that writes (or validates) text outside the trial grid: the chat ``messages``, the
    generation settings, ``rep`` (the variant: its own cache entry), the ``item`` the text is about
    (the simulated judge answers from it; a model backend sends only the messages), the sampling
    ``seed`` sent to backends that take one, and ``metadata``
    (``purpose`` and what the call is for; stored with the request)."""

    messages: tuple[dict[str, str], ...]
    temperature: float = 0.0
    max_tokens: int = 1024
    rep: int = 0
    seed: int | None = None
    item: Any = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Written:
    """What one writing call returned: the ``text`` (None when the call failed for good: ``error``),
    the attempts made, whether the cache answered, and the spend."""

    text: str | None
    error: str | None = None
    attempts: int = 0
    cache_hit: bool = False
    cost_usd: float | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None


@dataclass(frozen=True)
class WrittenText:
    """A written case read from its reply: ``text`` (None when nothing is left), parse ``status`` and
    the repairs applied (``detail``)."""

    text: str | None
    status: str
    detail: str = ""


@lru_cache(maxsize=8)
def _read_templates(path: str | None) -> tuple[str, dict[str, Any]]:
    if path is None:
        text = resources.files("verdictlab.protocols").joinpath(_PACKAGE_TEMPLATE).read_text("utf-8")
        where = f"package {_PACKAGE_TEMPLATE}"
    else:
        from ..core.guards import YamlFileError, read_yaml_file

        where = str(path)
        try:
            data = read_yaml_file(path, what="perturbation template file") or {}
        except YamlFileError as exc:
            raise ValueError(str(exc)) from None
        return where, data if isinstance(data, dict) else {}
    data = yaml.safe_load(text) or {}
    return where, data


def writing_template(kind: str, path: str | Path | None = None) -> WritingTemplate:
    """The wording of ``kind`` from the package template (or the YAML file ``path``); a ``ValueError``
    naming the file and the key when it is missing or incomplete."""
    if kind not in WRITING_KINDS:
        raise ValueError(f"no writing template for kind {kind!r}; kinds written by a model: {', '.join(WRITING_KINDS)}")
    where, data = _read_templates(None if path is None else str(Path(path).expanduser().resolve()))
    entry = data.get(kind)
    if not isinstance(entry, dict):
        raise ValueError(f"{where}: field '{kind}' must hold the prompts 'system', 'generate' and 'validate'")
    parts = {}
    for key in ("system", "generate", "validate"):
        value = entry.get(key)
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"{where}: field '{kind}.{key}' must be non-empty text")
        parts[key] = value
    digest = hashlib.sha256("\x1f".join(parts[k] for k in ("system", "generate", "validate")).encode()).hexdigest()
    name = "perturbation.yaml" if path is None else Path(path).name
    return WritingTemplate(kind=kind, template_id=f"{name}#{kind}@{digest[:12]}", **parts)


def scale_text(scale: Any) -> str:
    """The grades of a scale as the prompts show them, worst to best (``FAIL, PASS``; ``1, 2, 3, 4, 5``)."""
    return ", ".join(str(g) for g in scale)


def _fill(template: str, item: Any, *, case: str = "", label: Any = None, target: Any = None,
          scale: str = "") -> str:
    ref = getattr(item, "reference", None)
    reference = f"\nReference answer:\n{ref}\n" if ref else ""
    values = {"question": item.question, "response": item.response, "case": case, "label": label,
              "target": target, "scale": scale, "reference": reference}
    # str.format on the template only: the values are inserted as they are (a brace in a response is text)
    return template.format_map(values)


def generation_prompt(tpl: WritingTemplate, item: Any, *, label: Any = None, target: Any = None,
                      scale: str = "", temperature: float = 0.0, max_tokens: int = 1024, rep: int = 0,
                      seed: int | None = None, metadata: dict[str, Any] | None = None) -> WritingPrompt:
    """The call that writes a case of ``tpl.kind`` from ``item`` (``target``: the grade it should deserve)."""
    user = _fill(tpl.generate, item, label=label, target=target, scale=scale)
    meta = {"purpose": "perturb.generate", "kind": tpl.kind, "template": tpl.template_id, "target": target,
            **(metadata or {})}
    return WritingPrompt(({"role": "system", "content": tpl.system}, {"role": "user", "content": user}),
                         temperature=temperature, max_tokens=max_tokens, rep=rep, seed=seed, item=item,
                         metadata=meta)


def validation_prompt(tpl: WritingTemplate, item: Any, case: str, *, label: Any = None, target: Any = None,
                      scale: str = "", metadata: dict[str, Any] | None = None) -> WritingPrompt:
    """The second call: does the written ``case`` do what ``tpl.kind`` asks (temperature 0)?"""
    user = _fill(tpl.validate, item, case=case, label=label, target=target, scale=scale)
    meta = {"purpose": "perturb.validate", "kind": tpl.kind, "template": tpl.template_id, "target": target,
            **(metadata or {})}
    return WritingPrompt(({"role": "system", "content": "You check a written text against what it should be. "
                                                         "Reason first, then give your result."},
                          {"role": "user", "content": user}),
                         temperature=0.0, max_tokens=200, item=item, metadata=meta)


def parse_written(text: str | None) -> WrittenText:
    """A written case from its reply (rules in the module docstring)."""
    if text is None or not text.strip():
        return WrittenText(None, "failed", "empty reply")
    t = text.strip()
    repairs = []
    unfenced = strip_fences(t)
    if unfenced != t:
        repairs.append("code fences dropped")
        t = unfenced
    m = _LABEL_LINE.match(t)
    if m and t[m.end():].strip():
        repairs.append("label line dropped")
        t = t[m.end():].strip()
    quoted = (len(t) >= 2 and t[0] == t[-1] and t[0] in "\"'") or (t.startswith("\u201c") and t.endswith("\u201d"))
    if quoted:
        repairs.append("quotes dropped")
        t = t[1:-1].strip()
    if not t:
        return WrittenText(None, "failed", "nothing left after " + ", ".join(repairs))
    return WrittenText(t, "repaired" if repairs else "ok", "; ".join(repairs))


def parse_validation(text: str | None) -> ParseResult:
    """A validation verdict, ``VALID`` or ``INVALID`` (rules in the module docstring)."""
    if text is None or not text.strip():
        return ParseResult(None, "failed", "empty output")
    t = text.strip()
    restored = t if re.search(r"</result>\s*$", t) else t + "</result>"
    m = _STRICT.match(restored)
    if m:
        return ParseResult(m.group(2), "ok", "", scores={"reasoning": m.group(1).strip()[:500]})
    found = [x.upper() for x in _TAG.findall(restored)]
    how = "result tag read from a non-conforming reply"
    if not found:
        found = [x.upper() for x in _LINE.findall(t)]
        how = "result read from a 'Result:' line"
    if not found:
        return ParseResult(None, "failed", f"no VALID/INVALID result in {t[:40]!r}")
    if len(set(found)) > 1:
        return ParseResult(None, "failed", "both VALID and INVALID named")
    return ParseResult(found[0], "repaired", how)


def validation_reply(result: str, reasoning: str) -> str:
    """A well-formed validation reply (what :func:`parse_validation` reads strictly)."""
    if result not in VALIDATION_RESULTS:
        raise ValueError(f"a validation is VALID or INVALID, got {result!r}")
    return f"<reasoning>{reasoning}</reasoning><result>{result}</result>"
