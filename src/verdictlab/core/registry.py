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

Plugins.  A registry built with ``plugins="verdictlab.judges"`` (an entry-point group) also holds what
installed packages declare in that group, found the first time the registry is asked anything (not at
import): each entry point ``NAME = "module:attr"`` is loaded and handed to the registry's ``adopt``
(default: registered as ``NAME``).  A plugin that fails to load, or whose name is already taken, is
named in one :class:`PluginWarning` and skipped; the others load.  Groups: ``verdictlab.judges``,
``verdictlab.protocols``, ``verdictlab.importers``, ``verdictlab.analyses``.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import inspect
import warnings
from collections.abc import Callable, Iterator
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


class PluginWarning(UserWarning):
    """An installed plugin could not be loaded (or its name is taken): it is skipped, the others load."""


@functools.cache
def _all_entry_points() -> Any:
    """Every installed entry point, read once per process: one scan of the installed packages' metadata
    (23 ms for 174 packages at load 11, against 50 ms for one scan per group).  ``EntryPoints`` on
    Python 3.12, ``SelectableGroups`` on 3.11; both ``select(group=...)``."""
    return importlib.metadata.entry_points()


def plugin_entry_points(group: str) -> list[importlib.metadata.EntryPoint]:
    """The entry points installed packages declare in ``group``, by name."""
    return sorted(_all_entry_points().select(group=group), key=lambda ep: ep.name)


def _plugin_label(ep: importlib.metadata.EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    owner = f"{dist.name} {dist.version}" if dist is not None else "an installed package"
    return f"plugin {ep.name!r} of {owner} ({ep.group}: {ep.name} = {ep.value})"


def first_doc_line(obj: Any) -> str:
    """The first line of ``obj``'s docstring, or ''."""
    return (inspect.getdoc(obj) or "").strip().split("\n", 1)[0]


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

    def __init__(self, kind: str, *, plugins: str | None = None,
                 adopt: Callable[[Registry[T], str, Any], None] | None = None) -> None:
        self.kind = kind
        self._entries: dict[str, Entry[T]] = {}
        self.plugin_group = plugins
        # what a loaded plugin object becomes: by default the entry itself (a factory, an importer...)
        self._adopt = adopt or _adopt_callable
        self._plugins_loaded = plugins is None

    def load_plugins(self) -> None:
        """Load the plugins of this registry's entry-point group, once (module docstring)."""
        if self._plugins_loaded:
            return
        self._plugins_loaded = True           # first: a plugin that asks this registry while loading
        assert self.plugin_group is not None
        for ep in plugin_entry_points(self.plugin_group):
            if ep.name in self._entries:
                warnings.warn(f"verdictlab: {_plugin_label(ep)} is skipped: the {self.kind} {ep.name!r} is "
                              "already registered", PluginWarning, stacklevel=2)
                continue
            try:
                self._adopt(self, ep.name, ep.load())
            except Exception as exc:  # noqa: BLE001 - one broken plugin must not stop the others
                warnings.warn(f"verdictlab: {_plugin_label(ep)} could not be loaded and is skipped: "
                              f"{type(exc).__name__}: {exc}", PluginWarning, stacklevel=2)

    def register(self, name: str, target: T | str, *, description: str = "", extra: str | None = None) -> None:
        """Add or replace ``name``.  ``target`` is the object or ``"module:attr"``."""
        if not name or not isinstance(name, str):
            raise ValueError(f"{self.kind} name must be a non-empty string")
        self._entries[name] = Entry(name, target, description, extra)

    def unregister(self, name: str) -> None:
        self._entries.pop(name, None)

    def names(self) -> list[str]:
        self.load_plugins()
        return sorted(self._entries)

    def describe(self) -> dict[str, str]:
        return {n: self._entries[n].description for n in self.names()}

    def entry(self, name: str) -> Entry[T]:
        self.load_plugins()
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
        self.load_plugins()
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        self.load_plugins()
        return len(self._entries)


def _adopt_callable(registry: Registry[Any], name: str, obj: Any) -> None:
    """The default for a loaded plugin: a callable (a factory, an importer) registered under its name."""
    if not callable(obj):
        raise TypeError(f"a {registry.kind} plugin must name a callable, got a {type(obj).__name__}")
    registry.register(name, obj, description=first_doc_line(obj))


__all__ = ["Entry", "MissingExtraError", "PluginWarning", "Registry", "UnknownNameError", "first_doc_line", "install_hint",
           "load_target", "plugin_entry_points"]
