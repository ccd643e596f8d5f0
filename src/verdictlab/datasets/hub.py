"""Reading a Hugging Face hub dataset as plain records (optional; needs the network).

``load_hub_records("lmsys/mt_bench_human_judgments", split="human")`` returns ``[(row, record)]``
like :func:`verdictlab.datasets._common.read_records`, so each loader maps hub rows and file rows
with the same code.  The ``datasets`` library is imported only here, only when called.
"""

from __future__ import annotations

from typing import Any

from ..core.items import ItemError

INSTALL_HINT = ("loading from the Hugging Face hub needs network access and the optional 'hub' extra: "
                "pip install 'verdictlab[hub]' (or pip install datasets); "
                "alternatively download the file and pass path=...")


class HubUnavailableError(ItemError):
    """The hub cannot be used here (library missing or network unreachable)."""


def _import_datasets() -> Any:
    try:
        import datasets  # noqa: PLC0415  (optional dependency, imported lazily)
    except ImportError:
        raise HubUnavailableError(INSTALL_HINT, field="hub") from None
    return datasets


def load_hub_records(hub_id: str, *, split: str, config: str | None = None,
                     revision: str | None = None) -> list[tuple[int, dict[str, Any]]]:
    """Rows of one split of a hub dataset as ``(row, record)`` pairs (row = 1-based position)."""
    if not hub_id or not isinstance(hub_id, str):
        raise ItemError("hub must be a dataset id such as 'owner/name'", field="hub")
    datasets = _import_datasets()
    try:
        ds = datasets.load_dataset(hub_id, config, split=split, revision=revision)
    except Exception as exc:  # network errors, unknown ids/splits: report them with the id
        raise HubUnavailableError(f"could not load hub dataset {hub_id!r} (split {split!r}): "
                                  f"{type(exc).__name__}: {exc}. {INSTALL_HINT}", path=hub_id,
                                  field="hub") from None
    return [(i, dict(rec)) for i, rec in enumerate(ds, start=1)]


def source_rows(path: str | None, hub: str | None, *, loader: str, split: str,
                config: str | None = None) -> tuple[str, list[tuple[int, dict[str, Any]]]]:
    """Rows from ``path`` (a JSON / JSON Lines file) or from ``hub``; returns ``(source, rows)``."""
    from ._common import read_records, require_path

    if path and hub:
        raise ItemError(f"the {loader} dataset takes either 'path' or 'hub', not both", field="hub")
    if hub:
        return f"hf://{hub}" + (f"/{config}" if config else "") + f"[{split}]", \
            load_hub_records(hub, split=split, config=config)
    p = require_path(path, loader)
    if p.suffix.lower() == ".parquet":
        from .tabular import read_table_rows

        return str(p), read_table_rows(p)
    return str(p), read_records(p)
