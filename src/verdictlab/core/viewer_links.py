"""The viewer's addresses, built in one place for the viewer's own pages and the report's links to it.

``verdictlab view RUN`` serves ``/pairs`` (the pairs of a run, filtered by the query parameters
``judge, protocol, dataset, temperature, decoding, outcome, q, page``) and ``/pairs/<item_id>``
(one pair, ``?dataset=`` and a cell's section as ``#cell-...``).  This module knows those shapes and
nothing else: no web framework, so the report can link to the viewer without it installed.
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
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


_HOST_LABEL = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)")


def _host_ok(host: str) -> bool:
    """A host name (labels of letters, digits and inner hyphens, 253 characters at most), an IPv4 address
    or a bracketed IPv6 address."""
    if host.startswith("[") and host.endswith("]"):
        try:
            return ipaddress.ip_address(host[1:-1]).version == 6
        except ValueError:
            return False
    if len(host) > 253:
        return False
    return all(_HOST_LABEL.fullmatch(label) for label in host.removesuffix(".").split("."))


def check_viewer_url(url: str) -> str:
    """The viewer's base URL without a trailing ``/``; ``ValueError`` unless it is exactly
    ``http(s)://host[:port]`` (a report must never carry a ``javascript:`` or relative link): no space,
    quote, control or non-ASCII character, no user, path (but a final ``/``), query or fragment, a port in
    1..65535 and a host that is a host name or an IP address."""
    bad = UsageError(f"viewer URL must be http(s)://host[:port], e.g. {DEFAULT_VIEWER_URL}, got {url!r}")
    if not url or any(not (0x21 <= ord(c) <= 0x7E) or c in "\"'<>`\\^{|}" for c in url):
        raise bad
    if "?" in url or "#" in url or "@" in url:
        raise bad
    try:
        parts = urlsplit(url)
    except ValueError:          # e.g. an unclosed [IPv6 address
        raise bad from None
    if parts.scheme not in ("http", "https") or parts.path not in ("", "/"):
        raise bad
    host, sep, port = parts.netloc.rpartition(":") if not parts.netloc.endswith("]") else (parts.netloc, "", "")
    if not sep:
        host, port = parts.netloc, ""
    if not _host_ok(host) or (sep and not (port.isdigit() and 1 <= int(port) <= 65535)):
        raise bad
    return url.rstrip("/")
