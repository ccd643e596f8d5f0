"""Dataset registry: loaders by name, each turning a source into items plus a summary of what it read.

A loader is a function ``(path: str | None, **options) -> DatasetLoad``.  It either loads the whole
source or raises :class:`verdictlab.core.items.ItemError` naming file, row and field -- nothing is ever
half-loaded.  Loaders register lazily as ``"module:function"`` strings so optional dependencies are
only imported when used.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core.registry import Registry
from .load import DatasetLoad, reorder_fixed_pairs

Loader = Callable[..., DatasetLoad]
DATASETS: Registry[Loader] = Registry("dataset")


def register_loader(name: str, loader: str | Loader, description: str = "", *, extra: str | None = None) -> None:
    DATASETS.register(name, loader, description=description, extra=extra)


def dataset_names() -> list[str]:
    return DATASETS.names()


def describe_loaders() -> dict[str, str]:
    return DATASETS.describe()


def get_loader(name: str) -> Loader:
    return DATASETS.get(name)


def load_dataset(name: str, *, path: str | None = None, **options: Any) -> DatasetLoad:
    """Load a dataset by registry name (``jsonl``, ``llmbar``, ``pandalm``, ``demo`` ...).

    ``probe`` (with optional ``probe_options``) turns the loaded items into a bias probe
    (padding, injection, labels, granularity; see :mod:`verdictlab.datasets.probes`).  With a probe,
    ``dataset`` names the probe's dataset (default ``<base>+<probe>``) and the base keeps its own name,
    so two probes of one kind on one base can be told apart and each still finds its base.

    ``path`` may be the name of a fetched dataset (``verdictlab datasets fetch``), and without a path
    (and no ``hub``) a loader reads the fetched dataset of its own name (:mod:`.fetched`).

    ``file_pattern`` (a regular expression with named groups) reads every file of the folder ``path`` with
    the loader, each file's items given the keys of its name (:mod:`.file_pattern`)."""
    from .fetched import loader_source

    path = loader_source(name, path, hub=options.get("hub")) if name in DATASETS else path
    probe = options.pop("probe", None)
    probe_options = dict(options.pop("probe_options", None) or {})
    probe_name = options.pop("dataset", None) if probe is not None else None
    file_pattern = options.pop("file_pattern", None)
    if file_pattern is not None:        # every file of a folder, each with its name's keys (.file_pattern)
        from .file_pattern import load_files

        load = load_files(get_loader(name), path, str(file_pattern), options)
    else:
        load = get_loader(name)(path, **options)
    if probe is not None:
        from .probes import apply_probe

        probe_options.setdefault("seed", options.get("seed", load.seed if load.seed is not None else 42))
        load = apply_probe(load, probe, **probe_options)
        if probe_name:
            load = load.renamed(str(probe_name))
    return load


__all__ = ["DATASETS", "DatasetLoad", "Loader", "dataset_names", "describe_loaders", "get_loader", "load_dataset",
           "register_loader", "reorder_fixed_pairs"]
