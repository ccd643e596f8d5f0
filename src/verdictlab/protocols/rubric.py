"""``rubric``: pointwise PASS / FAIL / UNKNOWN, one criterion per call, reasoning first.

For :class:`~verdictlab.core.items.PointItem` datasets.  Criteria come from a YAML file the user writes
(``rubric@path/to/criteria.yaml`` in a run config -- a relative path is read from the current
directory; default: package ``rubrics/pointwise_default.yaml``)::

    use_reference: true
    criteria:
      - name: grounded
        pass_if: every price or date in the response appears in the sources
        fail_if: it states a price or date the sources do not support

Each criterion call is its own judgment row (``step`` = criterion name).  The reply is
``<reasoning>...</reasoning><result>PASS|FAIL|UNKNOWN</result>``; the verdict column holds
``PASS``, ``FAIL`` or ``UNKNOWN``.  UNKNOWN is a real answer -- "the material given is not enough to
decide" -- counted on its own, never folded into pass or fail (see :func:`rubric_agreement`).
The item's ``reference`` answer is shown when it has one (``use_reference: true``).

Human labels: ``item.meta["labels"][criterion]`` when given per criterion, else ``item.label``;
``pass``/``fail``/``unknown`` in any case, or booleans / 1 / 0.  A human critique for the review
export (``verdictlab review``) is read from ``item.meta["critique"]`` (or ``meta["critiques"][criterion]``).

Parse rules: strict (``ok``) = exactly a reasoning block followed by one result tag (the closing
``</result>`` may be missing: it is the stop sequence).  Repairs (``repaired``): a single result tag
elsewhere in the text, different case, or a final ``Result: PASS`` line.  Failed: no result, or
different results named.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from ..errors import InputError
from .base import ParseResult, Protocol

RESULTS: tuple[str, ...] = ("PASS", "FAIL", "UNKNOWN")
_STRICT = re.compile(r"^\s*<reasoning>(.*?)</reasoning>\s*<result>(PASS|FAIL|UNKNOWN)</result>\s*$", re.DOTALL)
_TAG = re.compile(r"<\s*result\s*>\s*\**\s*(pass|fail|unknown)\s*\**\s*<\s*/\s*result\s*>", re.IGNORECASE)
_LINE = re.compile(r"(?:^|\n)\s*\**\s*(?:result|verdict|final answer|answer)\s*\**\s*[:=]\s*\**\s*(pass|fail|unknown)\b",
                   re.IGNORECASE)
_REASONING = re.compile(r"<reasoning>(.*?)(?:</reasoning>|$)", re.DOTALL | re.IGNORECASE)


class CriteriaError(InputError):
    """A criteria file is missing or malformed (names the file and the key)."""


@lru_cache(maxsize=16)
def _read_criteria(path: str | None) -> dict[str, Any]:
    if path is None:
        text = resources.files("verdictlab.protocols.rubrics").joinpath("pointwise_default.yaml").read_text("utf-8")
        where = "package rubrics/pointwise_default.yaml"
        data = yaml.safe_load(text) or {}
    else:
        from ..core.guards import YamlFileError, read_yaml_file

        where = str(path)
        try:    # one line: missing file, invalid YAML with line and column, never the file's text
            data = read_yaml_file(path, what="criteria file") or {}
        except YamlFileError as exc:
            raise CriteriaError(str(exc)) from None
    crits = data.get("criteria") if isinstance(data, dict) else None
    if not isinstance(crits, list) or not crits:
        raise CriteriaError(f"{where}: field 'criteria' must be a non-empty list")
    names = []
    for i, c in enumerate(crits):
        for key in ("name", "pass_if", "fail_if"):
            if not isinstance(c, dict) or not str(c.get(key) or "").strip():
                raise CriteriaError(f"{where}: field 'criteria[{i}].{key}' is required")
        names.append(str(c["name"]))
    if len(set(names)) != len(names):
        raise CriteriaError(f"{where}: criterion names must be unique, got {names}")
    return {"use_reference": bool(data.get("use_reference", True)), "criteria": crits}


def load_criteria(path: str | Path | None = None) -> dict[str, Any]:
    """``{"use_reference": bool, "criteria": [{name, pass_if, fail_if, ...}]}`` from a YAML file."""
    return _read_criteria(None if path is None else str(Path(path).expanduser().resolve()))


def normalise_result(value: Any) -> str | None:
    """Human or judge pass/fail labels -> ``PASS`` / ``FAIL`` / ``UNKNOWN`` (None when missing)."""
    if value is None or (isinstance(value, float) and value != value):
        return None
    if isinstance(value, bool):
        return "PASS" if value else "FAIL"
    if isinstance(value, int | float):
        return {1: "PASS", 0: "FAIL"}.get(int(value)) if float(value) in (0.0, 1.0) else None
    v = str(value).strip().upper()
    aliases = {"PASS": "PASS", "PASSED": "PASS", "YES": "PASS", "TRUE": "PASS", "1": "PASS",
               "FAIL": "FAIL", "FAILED": "FAIL", "NO": "FAIL", "FALSE": "FAIL", "0": "FAIL",
               "UNKNOWN": "UNKNOWN", "UNSURE": "UNKNOWN", "N/A": "UNKNOWN"}
    return aliases.get(v)


def parse_pass_fail(text: str) -> ParseResult:
    """Parse a rubric reply (rules in the module docstring)."""
    if text is None or not text.strip():
        return ParseResult(None, "failed", "empty output")
    t = text.strip()
    restored = t if re.search(r"</result>\s*$", t) else t + "</result>"
    m = _STRICT.match(restored)
    if m:
        return ParseResult(m.group(2), "ok", "", scores={"reasoning_chars": len(m.group(1).strip())})
    found = [x.upper() for x in _TAG.findall(restored)]
    how = "result tag read from a non-conforming reply"
    if not found:
        found = [x.upper() for x in _LINE.findall(t)]
        how = "result read from a 'Result:' line"
    if not found:
        return ParseResult(None, "failed", f"no PASS/FAIL/UNKNOWN result in {t[:40]!r}")
    if len(set(found)) > 1:
        return ParseResult(None, "failed", f"different results named: {', '.join(sorted(set(found)))}")
    return ParseResult(found[0], "repaired", how)


def extract_reasoning(raw_output: str | None) -> str:
    """The judge's reasoning from a raw rubric/pointwise reply (the whole text if no tag/field)."""
    if not raw_output:
        return ""
    m = _REASONING.search(raw_output)
    if m:
        return m.group(1).strip()
    try:
        obj = json.loads(raw_output if raw_output.rstrip().endswith("}") else raw_output + "}")
        if isinstance(obj, dict) and isinstance(obj.get("rationale"), str):
            return obj["rationale"].strip()
    except ValueError:
        pass
    return raw_output.strip()


def human_label(item: Any, step: str) -> str | None:
    """The human PASS/FAIL/UNKNOWN label of ``item`` for criterion ``step``."""
    meta = getattr(item, "meta", None) or {}
    per = meta.get("labels")
    if isinstance(per, dict) and step in per:
        return normalise_result(per[step])
    return normalise_result(getattr(item, "label", None))


def human_critique(item: Any, step: str) -> str:
    meta = getattr(item, "meta", None) or {}
    per = meta.get("critiques")
    if isinstance(per, dict) and step in per:
        return str(per[step])
    return str(meta.get("critique") or "")


class RubricProtocol(Protocol):
    """Pointwise PASS / FAIL / UNKNOWN per criterion (options: ``criteria`` file, ``use_reference``)."""

    id = "rubric"
    label_only = False
    allows_tie = False
    verdict_choices = RESULTS

    def __init__(self, *, criteria: str | Path | None = None, use_reference: bool | None = None,
                 max_tokens: int = 200, protocol_id: str = "rubric") -> None:
        self.id = protocol_id
        self.criteria_path = None if criteria is None else str(criteria)
        spec = load_criteria(self.criteria_path)
        self.criteria = {str(c["name"]): c for c in spec["criteria"]}
        self.use_reference = spec["use_reference"] if use_reference is None else bool(use_reference)
        self._max_tokens = int(max_tokens)

    def __repr__(self) -> str:
        return f"RubricProtocol(criteria={self.criteria_path or 'default'!r})"

    def steps(self, item: Any) -> tuple[str, ...]:
        return tuple(self.criteria)

    def messages(self, item: Any, order: str, *, step: str = "") -> list[dict[str, str]]:
        if not hasattr(item, "response"):
            raise InputError("the rubric protocol is pointwise: it needs PointItem datasets (one response each)")
        if step not in self.criteria:
            raise ValueError(f"rubric: unknown criterion {step!r}; criteria: {', '.join(self.criteria)}")
        c = self.criteria[step]
        system = ("You check one response against one criterion. Reason first, then give your result. "
                  "Answer UNKNOWN when the material given is not enough to decide; do not guess.")
        parts = [f"Question:\n{item.question}"]
        if self.use_reference and getattr(item, "reference", None):
            parts.append(f"Reference answer:\n{item.reference}")
        parts.append(f"Response:\n{item.response}")
        parts.append(f"Criterion: {c['name']}\nPASS if: {c['pass_if']}\nFAIL if: {c['fail_if']}")
        parts.append("Write your reasoning (at most 60 words) inside <reasoning></reasoning>, then the result "
                     "inside <result></result>: PASS, FAIL or UNKNOWN.")
        return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(parts)}]

    def max_tokens(self) -> int:
        return self._max_tokens

    def stop(self) -> tuple[str, ...]:
        return ("</result>",)

    def parse(self, text: str) -> ParseResult:
        return parse_pass_fail(text)


def make_rubric(*, template_path: str | Path | None = None, **options: Any) -> RubricProtocol:
    """Registry factory: ``template_path`` (``rubric@FILE``) is the criteria file."""
    if template_path is not None and "criteria" not in options:
        options["criteria"] = template_path
    return RubricProtocol(**options)
