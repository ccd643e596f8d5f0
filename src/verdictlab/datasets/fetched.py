"""Where fetched benchmarks live, and a dataset's name read as a path.

``verdictlab datasets fetch NAME`` puts the files of a pinned dataset (:mod:`.pins`) in the user's cache,
``<cache>/<name>/<pin>/<upstream path>``, where ``<cache>`` is ``VERDICTLAB_CACHE_DIR``, else
``$XDG_CACHE_HOME/verdictlab``, else ``~/.cache/verdictlab`` (the cache folder the rest of verdictlab
uses).  A dataset is fetched when every file of its manifest is there under its final name: a file only
gets that name once its SHA-256 was checked (:mod:`.fetch`), so presence is enough here.

Wherever a loader or importer takes a path, the name of a fetched dataset may stand for it
(:func:`resolve_source`): ``llmbar`` is the fetched LLMBar folder, ``pandalm-results/data/x.json`` a file
in it.  A path that exists always wins over a name.
"""

from __future__ import annotations

import os
from pathlib import Path

from .pins import PINNED, PinnedDataset

#: the environment variables read here and by the fetch
CACHE_ENV = "VERDICTLAB_CACHE_DIR"
MIRROR_ENV = "VERDICTLAB_DATASETS_MIRROR"


def cache_home() -> Path:
    """The verdictlab cache folder: ``VERDICTLAB_CACHE_DIR``, else ``$XDG_CACHE_HOME/verdictlab``, else
    ``~/.cache/verdictlab``."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "verdictlab"


def cache_dir(dataset: PinnedDataset) -> Path:
    """Where ``dataset`` is fetched to: ``<cache>/<name>/<pin>``."""
    return cache_home() / dataset.name / dataset.pin


def is_fetched(dataset: PinnedDataset, directory: Path | None = None) -> bool:
    """Every file of ``dataset`` is in ``directory`` (default: its cache folder) under its final name."""
    d = cache_dir(dataset) if directory is None else directory
    return all((d / f.path).is_file() for f in dataset.files)


def fetched_source(dataset: PinnedDataset) -> Path:
    """The file or folder a loader or importer reads for ``dataset``; an :class:`ItemError` saying how to
    fetch it when it is not fetched."""
    if not is_fetched(dataset):
        from ..core.items import ItemError

        raise ItemError(f"dataset {dataset.name!r} is not fetched; run `verdictlab datasets fetch {dataset.name}` "
                        f"(or give the path of a copy)")
    d = cache_dir(dataset)
    return d / dataset.source if dataset.source else d


def resolve_source(value: str | os.PathLike[str] | None) -> str | None:
    """``value`` as given, unless nothing exists there and it names a pinned dataset (``NAME``, or
    ``NAME/PATH`` for a file in it): then the fetched files (an :class:`ItemError` when not fetched)."""
    if value is None:
        return None
    text = os.fspath(value)
    if not text or Path(text).exists():
        return text
    head, _, rest = text.replace(os.sep, "/").partition("/")
    dataset = PINNED.get(head)
    if dataset is None:
        return text
    if not rest:
        return str(fetched_source(dataset))
    fetched_source(dataset)                     # says how to fetch it when it is not
    return str(cache_dir(dataset) / rest)


def loader_source(loader: str, path: str | None, *, hub: object = None) -> str | None:
    """The path a loader reads: ``path`` resolved by :func:`resolve_source`; without a path (and no hub
    source), the fetched dataset of the loader's name when there is one."""
    if path is not None or hub is not None:
        return resolve_source(path)
    dataset = PINNED.get(loader)
    if dataset is None:
        return None
    if not is_fetched(dataset):
        from ..core.items import ItemError

        raise ItemError(f"the {loader} dataset needs a 'path', or its files fetched once: run `verdictlab datasets "
                        f"fetch {loader}`", field="path")
    return str(fetched_source(dataset))


__all__ = ["CACHE_ENV", "MIRROR_ENV", "cache_dir", "cache_home", "fetched_source", "is_fetched", "loader_source",
           "resolve_source"]
