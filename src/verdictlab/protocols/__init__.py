"""Prompt protocols and their parsers.  ``get_protocol("vf-json")``."""

from .base import ParseResult, Protocol, Template
from .pairwise import PAIRWISE_IDS, PairwiseProtocol
from .registry import get_protocol, protocol_ids, register_protocol

__all__ = [
    "PAIRWISE_IDS",
    "PairwiseProtocol",
    "ParseResult",
    "Protocol",
    "Template",
    "get_protocol",
    "protocol_ids",
    "register_protocol",
]
