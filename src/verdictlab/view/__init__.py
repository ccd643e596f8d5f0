"""The local viewer: read-only pages over every judgment of a run (``verdictlab view RUN``).

>>> app = create_app("runs/demo")                    # doctest: +SKIP  (a Starlette application)
>>> serve("runs/demo", port=8765)                    # doctest: +SKIP  (blocks until Ctrl-C)

* :mod:`.outcomes` -- what happened to each pair in each cell (flipped, unstable, wrong, disagree,
  unparsed), from :func:`verdictlab.stats.modal_verdicts` under the report's unparsed policy.
* :mod:`.index` -- the in-memory index built once at start-up: filters and pages in memory;
  :mod:`.index_cache` keeps it between start-ups, beside the store (never inside it).
* :mod:`.pages` -- what a pair page shows (judgments with their audit trail) and the links.
* :mod:`.app` -- the Starlette application and its templates; :mod:`.server` -- uvicorn.
"""

from .app import LOOPBACK_HOSTS, Viewer, create_app
from .index import Filters, Page, PairIndex, PairRow, ViewError
from .outcomes import OUTCOMES, PAIR_KEY, pair_outcomes
from .server import DEFAULT_HOST, DEFAULT_PORT, AddressError, serve

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "LOOPBACK_HOSTS", "OUTCOMES", "PAIR_KEY", "AddressError", "Filters",
           "Page", "PairIndex", "PairRow", "ViewError", "Viewer", "create_app", "pair_outcomes", "serve"]
