"""Protocol registry: ids -> factories.

Adding a protocol
-----------------
Call ``register_protocol(id, factory)`` once at import time (e.g. from
``verdictlab/protocols/__init__.py``).  ``factory`` is either

* a callable ``factory(*, template_path=None, **options) -> Protocol``, or
* a lazy ``"module:attr"`` string naming such a callable (imported on first use).

``get_protocol(id)`` returns one shared instance per id (protocols are stateless);
``get_protocol(id, template_path=..., **options)`` builds a fresh one with the user's wording or
options (e.g. ``max_tokens=8``).  Registering an id again replaces the earlier factory.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from ..core.registry import Registry, UnknownNameError
from .base import Protocol
from .pairwise import PAIRWISE_IDS, PairwiseProtocol

ProtocolFactory = Callable[..., Protocol]
PROTOCOLS: Registry[ProtocolFactory] = Registry("protocol", plugins="verdictlab.protocols")
_DEFAULT_INSTANCES: dict[str, Protocol] = {}


def register_protocol(protocol_id: str, factory: str | ProtocolFactory, *, description: str = "") -> None:
    """Register ``factory`` (callable or ``"module:attr"``) under ``protocol_id``."""
    if not protocol_id or not isinstance(protocol_id, str):
        raise ValueError("protocol id must be a non-empty string")
    PROTOCOLS.register(protocol_id, factory, description=description)
    _DEFAULT_INSTANCES.pop(protocol_id, None)


def protocol_ids() -> list[str]:
    """Registered protocol ids, the five pairwise ones first."""
    rest = sorted(p for p in PROTOCOLS.names() if p not in PAIRWISE_IDS)
    return [p for p in PAIRWISE_IDS if p in PROTOCOLS] + rest


def _factory(protocol_id: str) -> ProtocolFactory:
    if protocol_id not in PROTOCOLS:
        raise UnknownNameError(f"unknown protocol {protocol_id!r}; known: {', '.join(protocol_ids())}")
    return PROTOCOLS.get(protocol_id)


def get_protocol(protocol_id: str, *, template_path: str | Path | None = None, **options: Any) -> Protocol:
    """The protocol ``protocol_id``; with ``template_path`` (a YAML file) or options, a fresh
    instance using them, else the shared default instance."""
    if protocol_id not in PROTOCOLS and "@" in protocol_id and template_path is None:
        # "ID@ARG": protocol ID with ARG as its template_path (a wording / rubric / criteria file,
        # or a protocol-specific spec such as pointwise@0-2); one shared instance per full id
        base, _, arg = protocol_id.partition("@")
        if options:
            return _factory(base)(template_path=arg, **options)
        inst = _DEFAULT_INSTANCES.get(protocol_id)
        if inst is None:
            inst = _factory(base)(template_path=arg)
            inst.id = protocol_id
            _DEFAULT_INSTANCES[protocol_id] = inst
        return inst
    if template_path is None and not options:
        inst = _DEFAULT_INSTANCES.get(protocol_id)
        if inst is None:
            inst = _factory(protocol_id)()
            _DEFAULT_INSTANCES[protocol_id] = inst
        return inst
    return _factory(protocol_id)(template_path=template_path, **options)


for _pid in PAIRWISE_IDS:
    register_protocol(_pid, partial(PairwiseProtocol.from_package, _pid))

# rubric-based protocols, imported on first use
register_protocol("geval", "verdictlab.protocols.geval:make_geval")
register_protocol("geval-correctness", "verdictlab.protocols.geval:make_geval_correctness")
register_protocol("geval-instruction", "verdictlab.protocols.geval:make_geval_instruction")
register_protocol("flask", "verdictlab.protocols.flask:make_flask")
register_protocol("flask-correctness", "verdictlab.protocols.flask:make_flask_correctness")
register_protocol("flask-instruction", "verdictlab.protocols.flask:make_flask_instruction")
register_protocol("rubric", "verdictlab.protocols.rubric:make_rubric")
register_protocol("pointwise", "verdictlab.protocols.pointwise:make_pointwise")
register_protocol("debate", "verdictlab.protocols.debate:make_debate")
register_protocol("transcript", "verdictlab.protocols.transcript:make_transcript")
