"""The five pairwise protocols: ``direct``, ``vf-json``, ``vf-xml``, ``cot-json``, ``cot-xml``.

They share one system prompt and one user template (package data ``templates/pairwise.yaml``) and
differ only in the output format they ask for:

* ``direct``   -- one letter, ``A`` or ``B`` (label only, so a backend with log-probabilities
  can score it in one pass); no stop sequence; 2 tokens.
* ``vf-json``  -- ``{"winner": "A", "rationale": "..."}`` (verdict first); stop ``}``; 48 tokens.
* ``cot-json`` -- ``{"rationale": "...", "winner": "A"}`` (reasoning first); stop ``}``; 96 tokens.
* ``vf-xml``   -- ``<judgment><winner>A</winner><rationale>...</rationale></judgment>``;
  stop ``</judgment>``; 48 tokens.
* ``cot-xml``  -- ``<judgment><rationale>...</rationale><winner>A</winner></judgment>``;
  stop ``</judgment>``; 96 tokens.

"A" is always the response shown first.  None of them allows a tie.  Parsing rules are in
:mod:`verdictlab.protocols.parsing`.

Constrained decoding: :meth:`PairwiseProtocol.output_format` describes each format as fixed text,
a rationale slot and the verdict slot (:class:`verdictlab.protocols.output_format.OutputFormat`), the exact
shape the strict parsers accept.  The rationale slot is capped at ``CONSTRAINED_TEXT_TOKENS``:
12 tokens verdict-first (the "one short sentence" after a verdict already scored: every sampled token
costs a forward pass, and bench/local_judge_bench.py holds a constrained verdict-first judgment to
about 1.5x a free ``direct`` one), 48 reasoning-first (about the 30 words the instruction allows,
read before the verdict is scored).
"""

from __future__ import annotations

from dataclasses import replace
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from ..errors import InputError
from .base import ParseResult, Protocol, Template
from .output_format import Kind, OutputFormat
from .parsing import parse_json, parse_label, parse_xml

PAIRWISE_IDS: tuple[str, ...] = ("direct", "vf-json", "vf-xml", "cot-json", "cot-xml")
_TEMPLATE_KEYS = ("system", "user", "instruction", "max_tokens", "stop")
#: token cap of the rationale slot under constrained decoding, by verdict_first
CONSTRAINED_TEXT_TOKENS: dict[bool, int] = {True: 12, False: 48}


def _read_yaml(path: str | Path | None) -> dict[str, Any]:
    if path is None:
        text = resources.files("verdictlab.protocols").joinpath("templates/pairwise.yaml").read_text("utf-8")
        source = "package templates/pairwise.yaml"
    else:
        from ..core.guards import read_yaml_file

        # one-line errors (missing file, invalid YAML with line and column, no echoed file lines)
        data = read_yaml_file(path, what="protocol template") or {}
        source = str(path)
        if not isinstance(data, dict):
            raise InputError(f"{source}: a template file must be a YAML mapping")
        return data
    data = yaml.safe_load(text) or {}
    if not isinstance(data, dict):
        raise InputError(f"{source}: a template file must be a YAML mapping")
    return data


def load_pairwise_template(protocol_id: str, template_path: str | Path | None = None) -> Template:
    """The packaged template of ``protocol_id``, with any keys of ``template_path`` laid over it.

    A user file holds any of ``system``, ``user``, ``instruction``, ``max_tokens``, ``stop`` at top
    level (applied to this protocol), or the packaged layout (shared keys plus a ``protocols:``
    mapping by id).
    """
    base = _read_yaml(None)
    per = base["protocols"][protocol_id]
    merged: dict[str, Any] = {"system": base["system"], "user": base["user"], **per}
    if template_path is not None:
        user = _read_yaml(template_path)
        unknown = set(user) - set(_TEMPLATE_KEYS) - {"protocols"}
        if unknown:
            raise InputError(f"{template_path}: unknown template keys {sorted(unknown)} "
                             f"(allowed: {', '.join(_TEMPLATE_KEYS)}, protocols)")
        merged.update({k: v for k, v in user.items() if k in _TEMPLATE_KEYS})
        merged.update((user.get("protocols") or {}).get(protocol_id) or {})
    for key in ("{question}", "{response_first}", "{response_second}"):
        if key not in merged["user"]:
            raise InputError(f"template for {protocol_id!r}: user template lacks the placeholder {key}")
    return Template(system=str(merged["system"]).strip(), user=str(merged["user"]),
                    instruction=str(merged["instruction"]).strip(),
                    max_tokens=int(merged["max_tokens"]), stop=tuple(merged.get("stop") or ()))


class PairwiseProtocol(Protocol):
    """One of the five pairwise formats; ``fmt`` is ``label``, ``json`` or ``xml`` and
    ``verdict_first`` says whether the winner comes before the rationale."""

    allows_tie = False
    verdict_choices = ("A", "B")

    def __init__(self, protocol_id: str, template: Template) -> None:
        if protocol_id not in PAIRWISE_IDS:
            raise InputError(f"unknown pairwise protocol {protocol_id!r}; known: {', '.join(PAIRWISE_IDS)}")
        self.id = protocol_id
        self.template = template
        self.fmt = "label" if protocol_id == "direct" else protocol_id.split("-")[1]
        self.verdict_first = not protocol_id.startswith("cot")
        self.label_only = self.fmt == "label"
        self.fields: tuple[str, ...] = ("winner", "rationale") if self.verdict_first else ("rationale", "winner")

    @classmethod
    def from_package(cls, protocol_id: str, *, template_path: str | Path | None = None,
                     max_tokens: int | None = None) -> PairwiseProtocol:
        template = load_pairwise_template(protocol_id, template_path)
        if max_tokens is not None:
            template = replace(template, max_tokens=int(max_tokens))
        return cls(protocol_id, template)

    def __repr__(self) -> str:
        return f"PairwiseProtocol({self.id!r})"

    # -- prompting ------------------------------------------------------------------------------
    def messages(self, item: Any, order: str, *, step: str = "") -> list[dict[str, str]]:
        first, second = item.shown(order)
        user = self.template.user.format(question=item.question, response_first=first,
                                         response_second=second)
        return [{"role": "system", "content": self.template.system},
                {"role": "user", "content": f"{user.rstrip()}\n\n{self.template.instruction}"}]

    def max_tokens(self) -> int:
        return self.template.max_tokens

    def stop(self) -> tuple[str, ...]:
        return self.template.stop

    def output_format(self) -> OutputFormat:
        """This format as fixed text, rationale slot and verdict slot (constrained decoding)."""
        if self.label_only:
            return OutputFormat(kind="label", fields=("winner",), choices=self.verdict_choices)
        kind: Kind = "json" if self.fmt == "json" else "xml"
        return OutputFormat(kind=kind, fields=self.fields, choices=self.verdict_choices,
                            text_max_tokens=CONSTRAINED_TEXT_TOKENS[self.verdict_first])

    # -- reading --------------------------------------------------------------------------------
    def parse(self, text: str) -> ParseResult:
        if self.fmt == "label":
            return parse_label(text, allows_tie=self.allows_tie)
        if self.fmt == "json":
            return parse_json(text, fields=self.fields, stop=self.template.stop, allows_tie=self.allows_tie)
        return parse_xml(text, fields=self.fields, stop=self.template.stop, allows_tie=self.allows_tie)
