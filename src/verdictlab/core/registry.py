"""One registry mechanism for everything looked up by name: judges, protocols, datasets, importers,
analyses.

An entry is either the object itself or a lazy ``"module:attr"`` string, imported on first
:meth:`Registry.get` (so an optional dependency is only imported when its entry is used).  When
that import fails because an optional package is missing, :class:`MissingExtraError` (an
``ImportError``) says which entry needs what and how to install it (``extra=`` names the
``pip install 'verdictlab[EXTRA]'`` extra).

    JUDGES = Registry("judge provider")
    JUDGES.register("sim", "verdictlab.judges.sim:make_sim_judge", description="simulated judge")
    factory = JUDGES.get("sim")

Unknown names raise :class:`UnknownNameError` (an input error that is also a ``KeyError``):
``unknown judge provider 'x'; known: a, b``.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

from ..errors import InputError

T = TypeVar("T")


class MissingExtraError(InputError, ImportError):
    """A registered entry needs an optional package that is not installed."""


class UnknownNameError(InputError, KeyError):
    """A name no entry of the registry has; the message lists the known ones.  Also a ``KeyError``
    (a lookup by name), printed as its message rather than quoted."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


@dataclass
class Entry(Generic[T]):
    name: str
    target: T | str
    description: str = ""
    extra: str | None = None        # the pip extra that provides the entry's dependencies

    @property
    def loaded(self) -> bool:
        return not isinstance(self.target, str)


def install_hint(extra: str | None, package: str | None = None) -> str:
    if extra:
        return f"pip install 'verdictlab[{extra}]'"
    return f"pip install {package}" if package else "install the missing package"


def load_target(ref: str, *, what: str = "", extra: str | None = None) -> Any:
    """Import ``"module:attr"``; a missing third-party module becomes :class:`MissingExtraError`."""
    mod_name, sep, attr = ref.partition(":")
    if not sep or not mod_name or not attr:
        raise ValueError(f"lazy registry entry must look like 'module:attr', got {ref!r}")
    try:
        module = importlib.import_module(mod_name)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if missing.split(".")[0] == "verdictlab" and not extra:
            raise
        label = f"{what} needs" if what else f"{ref} needs"
        raise MissingExtraError(f"{label} the optional package {missing!r}: "
                                f"{install_hint(extra, missing.split('.')[0])}") from exc
    try:
        return getattr(module, attr)
    except AttributeError:
        raise ImportError(f"{mod_name} has no attribute {attr!r} (registry entry {ref!r})") from None


class Registry(Generic[T]):
    """Names -> objects (or lazy ``"module:attr"`` references to them).  ``kind`` names what is
    registered, for messages ("dataset", "protocol", "import format", ...)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, Entry[T]] = {}

    def register(self, name: str, target: T | str, *, description: str = "", extra: str | None = None) -> None:
        """Add or replace ``name``.  ``target`` is the object or ``"module:attr"``."""
        if not name or not isinstance(name, str):
            raise ValueError(f"{self.kind} name must be a non-empty string")
        self._entries[name] = Entry(name, target, description, extra)

    def unregister(self, name: str) -> None:
        self._entries.pop(name, None)

    def names(self) -> list[str]:
        return sorted(self._entries)

    def describe(self) -> dict[str, str]:
        return {n: self._entries[n].description for n in self.names()}

    def entry(self, name: str) -> Entry[T]:
        try:
            return self._entries[name]
        except KeyError:
            raise UnknownNameError(f"unknown {self.kind} {name!r}; known: {', '.join(self.names())}") from None

    def get(self, name: str) -> T:
        """The registered object (importing a lazy entry once)."""
        e = self.entry(name)
        if isinstance(e.target, str):
            e.target = load_target(e.target, what=f"{self.kind} {name!r}", extra=e.extra)
        return cast(T, e.target)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._entries)


__all__ = ["Entry", "MissingExtraError", "Registry", "UnknownNameError", "install_hint", "load_target"]
