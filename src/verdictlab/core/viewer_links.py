"""The viewer's addresses, built in one place for the viewer's own pages and the report's links to it.

``verdictlab view RUN`` serves ``/pairs`` (the pairs of a run, filtered by the query parameters
``judge, protocol, dataset, temperature, decoding, outcome, q, page``) and ``/pairs/<item_id>``
(one pair, ``?dataset=`` and a cell's section as ``#cell-...``).  This module knows those shapes and
nothing else: no web framework, so the report can link to the viewer without it installed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from ..errors import UsageError

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "DEFAULT_VIEWER_URL", "cell_anchor", "cell_list_url", "check_viewer_url",
           "pair_url"]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
#: where ``verdictlab view RUN`` serves by default
DEFAULT_VIEWER_URL = f"http://{DEFAULT_HOST}:{DEFAULT_PORT}"


def cell_anchor(judge: str, protocol: str, temperature: float, decoding: str, step: str) -> str:
    """The id of a cell's section on a pair page (stable, and free of the data's characters)."""
    text = "\x1f".join((judge, protocol, repr(float(temperature)), decoding, step))
    return "cell-" + hashlib.sha1(text.encode("utf-8")).hexdigest()[:12]


def pair_url(dataset: str, item_id: str, anchor: str | None = None) -> str:
    """A pair's page (the id quoted whole: ids may hold ``/``, ``?`` or ``#``), at a cell's section."""
    return f"/pairs/{quote(item_id, safe='')}?{urlencode({'dataset': dataset})}" + (f"#{anchor}" if anchor else "")


def cell_list_url(cell: Mapping[str, Any], **extra: str) -> str:
    """The list of one cell's pairs (``/pairs?judge=...&protocol=...``), with ``extra`` filters such as
    ``outcome="flipped"``."""
    params = {k: str(cell[k]) for k in ("judge", "protocol", "dataset", "decoding") if cell.get(k) not in (None, "")}
    if cell.get("temperature") is not None:
        params["temperature"] = repr(float(cell["temperature"]))
    params.update({k: v for k, v in extra.items() if v})
    return "/pairs?" + urlencode(params)


def check_viewer_url(url: str) -> str:
    """The viewer's base URL without a trailing ``/``; ``ValueError`` unless it is ``http(s)://host[:port]``
    (a report must never carry a ``javascript:`` or relative link)."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        raise UsageError(f"viewer URL must look like http://127.0.0.1:{DEFAULT_PORT}, got {url!r}")
    return url.strip().rstrip("/")
