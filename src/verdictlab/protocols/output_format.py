"""The shape of a verdict format, for constrained decoding.

A protocol that can be constrained describes its output as an :class:`OutputFormat`: a sequence of
*segments* -- fixed text supplied by us, a free-text slot (the rationale) the model writes, and the
verdict slot that may hold only one of the allowed labels.  Backends turn that description into
their own mechanism (llama.cpp: fixed text supplied + verdict scored from next-token
log-probabilities, or a GBNF grammar; OpenAI: a strict JSON schema or vLLM guided decoding;
Anthropic: a forced tool call; the simulated judge: a documented knob).  This module is a lower room
that both :mod:`verdictlab.protocols` and :mod:`verdictlab.judges` import; it knows neither.

The fixed text is exactly what the strict parsers of the pairwise protocols accept
(``json.dumps`` spacing for JSON, no whitespace between XML tags), so a constrained output always
parses with status ``ok``.

Example (``vf-json``)::

    {"winner": "  <verdict>  ", "rationale": "  <text, stops at '"'>  "}
    fixed          verdict     fixed               text             fixed
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal
from xml.sax.saxutils import escape

Kind = Literal["label", "json", "xml"]
SegmentKind = Literal["fixed", "text", "verdict"]

DECODING_MODES: tuple[str, ...] = ("free", "constrained")


@dataclass(frozen=True)
class Segment:
    """One piece of a format: ``fixed`` text, a free ``text`` slot (``stop`` ends it, at most
    ``max_tokens`` tokens) or the ``verdict`` slot."""

    kind: SegmentKind
    text: str = ""             # the fixed text (kind 'fixed')
    name: str = ""             # the field name of a slot ('rationale', 'winner')
    stop: str = ""             # the character that ends a text slot ('"' in JSON, '<' in XML)
    max_tokens: int = 0        # cap of a text slot


@dataclass(frozen=True)
class OutputFormat:
    """A verdict format: ``kind`` label/json/xml, ``fields`` in their order (``winner`` is the
    verdict slot, any other field is free text), the allowed ``choices`` and the token cap of a
    free-text field."""

    kind: Kind
    fields: tuple[str, ...] = ("winner",)
    choices: tuple[str, ...] = ("A", "B")
    text_max_tokens: int = 32
    verdict_field: str = "winner"
    root: str = "judgment"     # the XML root element

    def __post_init__(self) -> None:
        if self.kind not in ("label", "json", "xml"):
            raise ValueError(f"unknown output format kind {self.kind!r}")
        if self.verdict_field not in self.fields:
            raise ValueError(f"output format fields {self.fields} lack the verdict field {self.verdict_field!r}")
        if not self.choices:
            raise ValueError("an output format needs at least one allowed verdict")

    # -- description -----------------------------------------------------------------------------
    @property
    def verdict_first(self) -> bool:
        return self.fields[0] == self.verdict_field

    @property
    def has_text(self) -> bool:
        return any(f != self.verdict_field for f in self.fields)

    def key(self) -> dict[str, Any]:
        """A JSON-able description (for request hashes and the audit trail)."""
        return {"kind": self.kind, "fields": list(self.fields), "choices": list(self.choices),
                "text_max_tokens": self.text_max_tokens}

    def segments(self) -> tuple[Segment, ...]:
        """The format as fixed text, text slots and the verdict slot, in output order."""
        if self.kind == "label":
            return (Segment("verdict", name=self.verdict_field),)
        out: list[Segment] = []
        pending = "{" if self.kind == "json" else f"<{self.root}>"
        for i, f in enumerate(self.fields):
            if self.kind == "json":
                pending += ("" if i == 0 else ", ") + f'"{f}": "'
            else:
                pending += f"<{f}>"
            out.append(Segment("fixed", text=pending))
            if f == self.verdict_field:
                out.append(Segment("verdict", name=f))
            else:
                out.append(Segment("text", name=f, stop='"' if self.kind == "json" else "<",
                                   max_tokens=self.text_max_tokens))
            pending = '"' if self.kind == "json" else f"</{f}>"
        out.append(Segment("fixed", text=pending + ("}" if self.kind == "json" else f"</{self.root}>")))
        return tuple(out)

    # -- rendering -------------------------------------------------------------------------------
    def escape_text(self, text: str) -> str:
        """A free-text value as it appears inside the format (JSON string body / XML text)."""
        if self.kind == "json":
            return json.dumps(text, ensure_ascii=False)[1:-1]
        if self.kind == "xml":
            return escape(text)
        return text

    def render(self, verdict: str, texts: dict[str, str] | None = None) -> str:
        """The full output with ``verdict`` in the verdict slot and ``texts`` in the text slots."""
        if verdict not in self.choices:
            raise ValueError(f"verdict {verdict!r} is not one of {self.choices}")
        texts = texts or {}
        parts = []
        for s in self.segments():
            if s.kind == "fixed":
                parts.append(s.text)
            elif s.kind == "verdict":
                parts.append(verdict)
            else:
                parts.append(self.escape_text(texts.get(s.name, "")))
        return "".join(parts)

    def render_values(self, values: dict[str, Any]) -> str:
        """The format written from field ``values`` as a backend returned them (e.g. a tool call's
        input), *without* validating them: the protocol's parser then judges the result, so a
        verdict outside the choices fails to parse instead of being coerced."""
        if self.kind == "label":
            return str(values.get(self.verdict_field, ""))
        if self.kind == "json":
            return json.dumps({f: values.get(f, "") for f in self.fields}, ensure_ascii=False)
        inner = "".join(f"<{f}>{escape(str(values.get(f, '')))}</{f}>" for f in self.fields)
        return f"<{self.root}>{inner}</{self.root}>"

    def clean_text(self, generated: str, segment: Segment) -> str:
        """A generated free text cut at its stop character, one line, stripped."""
        text = generated.split(segment.stop, 1)[0] if segment.stop else generated
        return " ".join(text.split())

    # -- mechanisms --------------------------------------------------------------------------------
    def json_schema(self) -> dict[str, Any]:
        """A strict JSON schema (OpenAI ``response_format`` / Anthropic tool input) for json kinds;
        for others the same object shape (a backend may still use it through a tool call)."""
        props: dict[str, Any] = {}
        for f in self.fields:
            props[f] = ({"type": "string", "enum": list(self.choices)} if f == self.verdict_field
                        else {"type": "string"})
        return {"type": "object", "properties": props, "required": list(self.fields),
                "additionalProperties": False}

    def regex(self) -> str:
        """A regular expression every constrained output matches (vLLM ``guided_regex``)."""
        choice = "(" + "|".join(re.escape(c) for c in self.choices) + ")"
        parts = []
        for s in self.segments():
            if s.kind == "fixed":
                parts.append(re.escape(s.text))
            elif s.kind == "verdict":
                parts.append(choice)
            else:
                parts.append(r'[^"\\]{0,400}' if self.kind == "json" else r"[^<]{0,400}")
        return "".join(parts)

    def gbnf(self) -> str:
        """A llama.cpp GBNF grammar for the format (verdict slot: the choices; text slots: any
        characters but the stop character, at most :attr:`text_max_chars` of them, so a generation
        of :meth:`max_output_chars` tokens always completes the format)."""
        rules = []
        body = []
        for s in self.segments():
            if s.kind == "fixed":
                body.append(json.dumps(s.text))
            elif s.kind == "verdict":
                body.append("verdict")
            else:
                body.append("text")
        rules.append("root ::= " + " ".join(body))
        rules.append("verdict ::= " + " | ".join(json.dumps(c) for c in self.choices))
        if self.has_text:
            stop_class = r'[^"\\\n]' if self.kind == "json" else r"[^<\n]"
            rules.append(f"text ::= {stop_class}{{0,{self.text_max_chars}}}")
        return "\n".join(rules) + "\n"

    @property
    def text_max_chars(self) -> int:
        """The grammar's bound on a text slot: four characters per token of ``text_max_tokens`` (about
        what a token holds in English), so the bound rarely cuts a rationale the token cap would not."""
        return 4 * self.text_max_tokens

    def max_output_chars(self) -> int:
        """The longest output the grammar allows, in characters -- a token holds at least one, so a
        cap of this many tokens can never stop a grammar-constrained generation mid-format (which
        left 4 of 12 ``cot-xml`` outputs unreadable under the old token estimate)."""
        segs = self.segments()
        fixed = sum(len(s.text) for s in segs if s.kind == "fixed")
        verdict = max((len(c) for c in self.choices), default=1)
        return fixed + verdict + self.text_max_chars * sum(s.kind == "text" for s in segs)




NOT_CONSTRAINABLE = "not constrainable"


def constraint_table(judges: dict[str, Any], protocols: dict[str, Any]) -> dict[str, dict[str, str]]:
    """``{judge id: {protocol id: mechanism | "not constrainable: why"}}`` -- how each judge would
    constrain each protocol's format.  A protocol without an output format, or a judge that cannot
    constrain it (its ``constraint_mechanism(fmt)`` returns ``None`` or it has none), is "not
    constrainable": the engine runs no constrained trial for it (never silently free) and stores this
    table in the run's meta (``decoding_mechanisms``) for the report."""
    out: dict[str, dict[str, str]] = {}
    for jid, judge in judges.items():
        row: dict[str, str] = {}
        how = getattr(judge, "constraint_mechanism", None)
        for pid, protocol in protocols.items():
            get_fmt = getattr(protocol, "output_format", None)
            fmt = get_fmt() if callable(get_fmt) else None
            if fmt is None:
                row[pid] = f"{NOT_CONSTRAINABLE}: protocol {pid!r} declares no output format"
                continue
            mech = how(fmt) if callable(how) else None
            row[pid] = mech if mech else f"{NOT_CONSTRAINABLE}: {jid} has no mechanism for {fmt.kind} output"
        out[jid] = row
    return out


def constrainable(table: dict[str, dict[str, str]], judge: str, protocol: str) -> bool:
    """Whether ``table`` (from :func:`constraint_table`) lets ``judge`` run ``protocol`` constrained."""
    return not table.get(judge, {}).get(protocol, NOT_CONSTRAINABLE).startswith(NOT_CONSTRAINABLE)


__all__ = ["OutputFormat", "Segment", "DECODING_MODES", "NOT_CONSTRAINABLE", "constraint_table", "constrainable"]
