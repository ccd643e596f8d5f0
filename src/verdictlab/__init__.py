"""verdictlab: audit LLM judges -- are their verdicts reproducible, order-invariant and correct?

The public API in one place::

    from verdictlab import load_config, run_config, open_store, reliability, build_report

Submodules: ``verdictlab.stats`` (figures), ``verdictlab.analyses`` (registered tables: remedies,
juries, probes, debate, ...), ``verdictlab.datasets`` (loaders and probes), ``verdictlab.judges``
(backends), ``verdictlab.protocols`` (prompt formats and parsers), ``verdictlab.report`` (tables,
JSON, HTML, plots).
"""

__version__ = "0.1.0"  # before the submodules: engine records it in every run

# The public names, imported on first use (PEP 562): ``import verdictlab`` -- and every ``verdictlab``
# command, down to ``--version`` and ``--help`` -- does not pay for pandas, scipy and the engine until a
# name that needs them is used.
_PUBLIC = {
    "RunConfig": "config", "load_config": "config", "DatasetLoad": "datasets", "load_dataset": "datasets",
    "Trial": "design", "expand_grid": "design", "run_config": "engine", "ItemError": "items",
    "PairItem": "items", "PointItem": "items", "to_canonical": "items", "JudgeAPI": "judges",
    "make_judge": "judges", "ParseResult": "protocols", "Protocol": "protocols", "get_protocol": "protocols",
    "build_report": "report", "reliability": "stats", "RunStore": "store", "open_store": "store",
}


def __getattr__(name: str) -> object:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'verdictlab' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "DatasetLoad",
    "ItemError",
    "JudgeAPI",
    "PairItem",
    "ParseResult",
    "PointItem",
    "Protocol",
    "RunConfig",
    "RunStore",
    "Trial",
    "__version__",
    "build_report",
    "expand_grid",
    "get_protocol",
    "load_config",
    "load_dataset",
    "make_judge",
    "open_store",
    "reliability",
    "run_config",
    "to_canonical",
]
