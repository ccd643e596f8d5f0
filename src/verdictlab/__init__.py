"""verdictlab: audit LLM judges -- are their verdicts reproducible, order-invariant and correct?

The public API in one place::

    from verdictlab import load_config, run_config, open_store, reliability, build_report

Submodules: ``verdictlab.stats`` (figures), ``verdictlab.analyses`` (registered tables: remedies,
juries, probes, debate, ...), ``verdictlab.datasets`` (loaders and probes), ``verdictlab.judges``
(backends), ``verdictlab.protocols`` (prompt formats and parsers), ``verdictlab.report`` (tables,
JSON, HTML, plots).
"""

__version__ = "0.1.0"  # before the submodules: engine records it in every run

from .config import RunConfig, load_config
from .datasets import DatasetLoad, load_dataset
from .design import Trial, expand_grid
from .engine import run_config
from .items import ItemError, PairItem, PointItem, to_canonical
from .judges import JudgeAPI, make_judge
from .protocols import ParseResult, Protocol, get_protocol
from .report import build_report
from .stats import reliability
from .store import RunStore, open_store

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
