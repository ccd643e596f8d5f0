"""Helpers shared by the Ray executor and the Ray Data path (a leaf module: no engine imports)."""

from __future__ import annotations

from typing import Any

from ..items import PairItem, PointItem

Item = PairItem | PointItem


def import_ray() -> Any:
    try:
        import ray
    except ImportError:  # pragma: no cover - exercised only without the extra
        raise RuntimeError("the Ray executor needs Ray: pip install 'verdictlab[ray]'") from None
    return ray


def item_from(data: dict[str, Any]) -> Item:
    """An item back from :func:`item_payload` (mutates ``data``: the kind tag is removed)."""
    kind = data.pop("__kind__", "pair")
    return PointItem(**data) if kind == "point" else PairItem(**data)


def item_payload(item: Item) -> dict[str, Any]:
    """An item as plain data for a Ray task, tagged with its kind."""
    return {**item.model_dump(), "__kind__": "point" if isinstance(item, PointItem) else "pair"}


__all__ = ["import_ray", "item_from", "item_payload"]
