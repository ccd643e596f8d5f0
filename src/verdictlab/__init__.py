"""verdictlab: audit LLM judges -- are their verdicts reproducible, order-invariant and correct?

The public API in one place::

    import verdictlab

    @verdictlab.judge("mine")                  # any Python function is a judge: python:mine
    def mine(messages, *, temperature, max_tokens, seed):
        return "A"

    report = verdictlab.audit(judges=["python:mine"], data="demo", protocols=["direct"],
                              repetitions=3, run_dir="runs/mine")

    from verdictlab import load_config, run_config, open_store, reliability, build_report   # the plumbing

Submodules: ``verdictlab.stats`` (figures), ``verdictlab.analyses`` (registered tables: remedies,
juries, probes, debate, ...), ``verdictlab.datasets`` (loaders and probes), ``verdictlab.judges``
(backends), ``verdictlab.protocols`` (prompt formats and parsers), ``verdictlab.report`` (tables,
JSON, HTML, plots).
"""

__version__ = "0.1.0"  # before the submodules: engine records it in every run

from typing import TYPE_CHECKING, Any

# The public names are imported when first used (PEP 562), not when the package is: importing the
# engine, the statistics and the report pulls in numpy, pandas and scipy (seconds on a loaded
# machine), which every ``verdictlab.x`` import -- the command line's first one included -- would pay,
# and a Ctrl-C during those seconds could only end in a traceback.
# (full module names: tests/test_architecture.py reads them as imports and checks that each exists)
_PUBLIC = {
    "audit": "verdictlab.workflows.audit",
    "judge": "verdictlab.judges.python_function", "JudgeReply": "verdictlab.judges.python_function",
    "RunConfig": "verdictlab.engine.config", "load_config": "verdictlab.engine.config",
    "DatasetLoad": "verdictlab.datasets", "load_dataset": "verdictlab.datasets",
    "Trial": "verdictlab.core.design", "expand_grid": "verdictlab.core.design",
    "run_config": "verdictlab.engine",
    "ItemError": "verdictlab.core.items", "PairItem": "verdictlab.core.items", "PointItem": "verdictlab.core.items",
    "to_canonical": "verdictlab.core.items",
    "JudgeAPI": "verdictlab.judges", "make_judge": "verdictlab.judges",
    "ParseResult": "verdictlab.protocols", "Protocol": "verdictlab.protocols", "get_protocol": "verdictlab.protocols",
    "build_report": "verdictlab.report",
    "FigurePolicy": "verdictlab.core.policy",
    "reliability": "verdictlab.stats",
    "RunStore": "verdictlab.store", "open_store": "verdictlab.store",
}


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'verdictlab' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_PUBLIC})


if TYPE_CHECKING:
    from .core.design import Trial, expand_grid
    from .core.items import ItemError, PairItem, PointItem, to_canonical
    from .core.policy import FigurePolicy
    from .datasets import DatasetLoad, load_dataset
    from .engine import run_config
    from .engine.config import RunConfig, load_config
    from .judges import JudgeAPI, make_judge
    from .judges.python_function import JudgeReply, judge
    from .protocols import ParseResult, Protocol, get_protocol
    from .report import build_report
    from .stats import reliability
    from .store import RunStore, open_store
    from .workflows.audit import audit

__all__ = [
    "DatasetLoad",
    "FigurePolicy",
    "ItemError",
    "JudgeAPI",
    "JudgeReply",
    "PairItem",
    "ParseResult",
    "PointItem",
    "Protocol",
    "RunConfig",
    "RunStore",
    "Trial",
    "__version__",
    "audit",
    "build_report",
    "expand_grid",
    "get_protocol",
    "judge",
    "load_config",
    "load_dataset",
    "make_judge",
    "open_store",
    "reliability",
    "run_config",
    "to_canonical",
]
