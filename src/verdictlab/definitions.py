"""The catalogue of published figure definitions (every paper's "agreement" on one run) lives in
:mod:`verdictlab.analyses.definitions`, its figures in :mod:`verdictlab.stats.definitions`; this module
re-exports the catalogue under the short name."""

from .analyses.definitions import (
    DEFINITIONS,
    DEFINITIONS_COLUMNS,
    Definition,
    DefinitionInput,
    definition_names,
    definitions_table,
    register_definition,
    resolve_definitions,
)

__all__ = ["DEFINITIONS", "DEFINITIONS_COLUMNS", "Definition", "DefinitionInput", "definition_names",
           "definitions_table", "register_definition", "resolve_definitions"]
