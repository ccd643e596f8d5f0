"""verdictlab: audit LLM judges -- are their verdicts reproducible, order-invariant and correct?"""

from .design import Trial, expand_grid
from .items import ItemError, PairItem, PointItem, to_canonical
from .store import RunStore, open_store

__version__ = "0.1.0"

__all__ = [
    "ItemError",
    "PairItem",
    "PointItem",
    "RunStore",
    "Trial",
    "__version__",
    "expand_grid",
    "open_store",
    "to_canonical",
]
