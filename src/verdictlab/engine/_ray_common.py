"""Helpers shared by the Ray executor and the Ray Data path (a leaf module: of the engine it imports only
the error type)."""

from __future__ import annotations

import contextlib
import signal
import socket
from typing import Any

from ..core.items import PairItem, PointItem
from ..core.registry import MissingExtraError
from ..core.stopping import Stopped
from .summary import EngineError

Item = PairItem | PointItem


def import_ray() -> Any:
    try:
        import ray
    except ImportError:  # pragma: no cover - exercised only without the extra
        raise MissingExtraError("the Ray executor needs Ray: pip install 'verdictlab[ray]'") from None
    return ray


def unreachable(address: str | None, *, timeout_s: float = 3.0) -> str | None:
    """Why the Ray cluster at ``address`` (``HOST:PORT``) cannot be reached, or None when it accepts a
    TCP connection (or the address is None / ``auto`` / ``local``: Ray finds or starts the cluster).

    Asked before ``ray.init``: given a port where nothing listens, Ray retries for a minute or more
    inside native code that neither returns nor lets a signal through."""
    if address is None or address in ("auto", "local"):
        return None
    host, _, port = address.rpartition(":")
    host = host.strip("[]")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s):
            return None
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        return (f"cannot reach the Ray cluster at {address} ({why.lower()}): start it with `ray start --head` "
                "there, or leave --ray-address out to start a local cluster")


def init_ray(ray: Any, address: str | None) -> None:
    """``ray.init`` under the run's own stop handling.  ray.init installs a SIGTERM handler of its own
    (``sys.exit(15)``: exit code 15, no summary) and leaves it in place; ours is put back, and a SIGTERM
    during the init is the run's stop (exit 143, what was judged kept).  Ray's words for a bad or absent
    cluster become an :class:`EngineError` (exit 3)."""
    previous = signal.getsignal(signal.SIGTERM)
    try:
        ray.init(address=address, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    except SystemExit as exc:
        if exc.code == signal.SIGTERM:
            raise Stopped(signal.SIGTERM) from None
        raise
    except (ValueError, ConnectionError) as exc:
        raise EngineError(f"cannot connect to the Ray cluster at {address or 'a new local cluster'}: {exc}") from None
    finally:
        if previous is not None and signal.getsignal(signal.SIGTERM) is not previous:
            with contextlib.suppress(ValueError):      # not the main thread: nothing was replaced
                signal.signal(signal.SIGTERM, previous)


def item_from(data: dict[str, Any]) -> Item:
    """An item back from :func:`item_payload` (mutates ``data``: the kind tag is removed)."""
    kind = data.pop("__kind__", "pair")
    return PointItem(**data) if kind == "point" else PairItem(**data)


def item_payload(item: Item) -> dict[str, Any]:
    """An item as plain data for a Ray task, tagged with its kind."""
    return {**item.model_dump(), "__kind__": "point" if isinstance(item, PointItem) else "pair"}


__all__ = ["import_ray", "init_ray", "item_from", "item_payload", "unreachable"]
