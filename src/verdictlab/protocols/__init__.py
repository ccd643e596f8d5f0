"""Prompt protocols and their parsers.  ``get_protocol("vf-json")``."""

from .base import ParseResult, Protocol, Template

__all__ = ["ParseResult", "Protocol", "Template"]
