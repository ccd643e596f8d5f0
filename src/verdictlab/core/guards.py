"""Input guards: limits that protect the machine from hostile or careless input.

Every limit has a documented default that a user can raise through an environment variable
(see ``docs/errors.md``):

=================================  ================================  =========================
limit                              environment variable              default
=================================  ================================  =========================
config size after YAML aliases     VERDICTLAB_MAX_CONFIG_BYTES       1,000,000 bytes (as JSON)
nesting depth of a record/config   VERDICTLAB_MAX_DEPTH              64 levels
one text kept in the HTML report   VERDICTLAB_HTML_MAX_OUTPUT_CHARS  20,000 characters
HTML report size                   VERDICTLAB_HTML_MAX_BYTES         50,000,000 bytes
trials per item of a run config    VERDICTLAB_MAX_TRIALS_PER_ITEM    100,000
=================================  ================================  =========================

The store always keeps every raw output whole; only the HTML view is cut.

:func:`read_yaml_file` is the one way verdictlab reads a YAML file a user wrote (run configs,
template overrides): its errors are one line naming the file and the line, never the file's text.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..errors import InputError

_ENV = {
    "max_config_bytes": "VERDICTLAB_MAX_CONFIG_BYTES",
    "max_depth": "VERDICTLAB_MAX_DEPTH",
    "html_max_output_chars": "VERDICTLAB_HTML_MAX_OUTPUT_CHARS",
    "html_max_bytes": "VERDICTLAB_HTML_MAX_BYTES",
    "max_trials_per_item": "VERDICTLAB_MAX_TRIALS_PER_ITEM",
}


@dataclass(frozen=True)
class InputLimits:
    """The input limits in force.  Raise one with its environment variable (``_ENV``).  (The limits on
    judge calls -- rate, retries, budget -- are :mod:`verdictlab.engine.limits`.)"""

    max_config_bytes: int = 1_000_000
    max_depth: int = 64
    html_max_output_chars: int = 20_000
    html_max_bytes: int = 50_000_000
    max_trials_per_item: int = 100_000


DEFAULT_LIMITS = InputLimits()


class GuardError(InputError):
    """Input beyond a limit, or a limit set to a value that is not a positive integer."""


class YamlFileError(InputError):
    """A YAML file cannot be read: missing, not UTF-8, invalid YAML, too large or too deep.  The
    message is one line naming the file (and the line), never the file's content."""


def input_limits() -> InputLimits:
    """The input limits in force: the defaults, each overridden by its environment variable if set."""
    values: dict[str, int] = {}
    for field, var in _ENV.items():
        raw = os.environ.get(var)
        if raw is None or not raw.strip():
            continue
        try:
            value = int(raw.strip().replace("_", ""))
        except ValueError:
            value = 0
        if value < 1:
            raise GuardError(f"environment variable {var}={raw!r}: must be a positive integer")
        values[field] = value
    return InputLimits(**values) if values else DEFAULT_LIMITS


def env_name(field: str) -> str:
    """The environment variable that raises limit ``field`` (e.g. ``"max_depth"``)."""
    return _ENV[field]


# -- sizes and depths of parsed data, computed without expanding shared nodes ----------------------
def _scalar_size(obj: Any) -> int:
    if obj is None or isinstance(obj, bool):
        return 5
    if isinstance(obj, str):
        return len(obj) + 2
    if isinstance(obj, (bytes, bytearray)):
        return len(obj) + 2
    return len(repr(obj))


def expanded_size(obj: Any) -> int:
    """The size in bytes (roughly, as JSON) that ``obj`` takes once every shared node -- a YAML
    alias -- is written out in full, computed in time linear in the number of *distinct* nodes, so
    a "billion laughs" config is measured without being expanded.  Raises :class:`GuardError` on a
    structure that contains itself (a recursive alias)."""
    memo: dict[int, int] = {}
    active: set[int] = set()
    # iterative post-order walk: (node, children pushed?)
    stack: list[tuple[Any, bool]] = [(obj, False)]
    while stack:
        node, expanded = stack.pop()
        if not isinstance(node, (list, tuple, dict)):
            continue
        key = id(node)
        if expanded:
            active.discard(key)
            memo[key] = _container_size(node, memo)
            continue
        if key in memo:
            continue
        if key in active:
            raise GuardError("the data refers to itself (a recursive YAML alias)")
        active.add(key)
        stack.append((node, True))
        children = node.items() if isinstance(node, dict) else enumerate(node)
        for _, child in children:
            if isinstance(child, (list, tuple, dict)):
                if id(child) in active:
                    raise GuardError("the data refers to itself (a recursive YAML alias)")
                stack.append((child, False))
    return memo[id(obj)] if isinstance(obj, (list, tuple, dict)) else _scalar_size(obj)


def _container_size(node: Any, memo: Mapping[int, int]) -> int:
    def size(x: Any) -> int:
        return memo[id(x)] if isinstance(x, (list, tuple, dict)) else _scalar_size(x)

    if isinstance(node, dict):
        return 2 + sum(size(k) + size(v) + 2 for k, v in node.items())
    return 2 + sum(size(v) + 1 for v in node)


def nesting_depth(obj: Any, *, stop_at: int | None = None) -> int:
    """How deeply containers nest in ``obj`` (a scalar is 0, ``[]`` is 1, ``[[1]]`` is 2).  With
    ``stop_at`` the walk ends as soon as that depth is reached (cheap on hostile input)."""
    best = 0
    seen: dict[int, int] = {}
    stack: list[tuple[Any, int]] = [(obj, 0)]
    while stack:
        node, depth = stack.pop()
        if not isinstance(node, (list, tuple, dict)):
            continue
        depth += 1
        if seen.get(id(node), -1) >= depth:
            continue
        seen[id(node)] = depth
        best = max(best, depth)
        if stop_at is not None and best >= stop_at:
            return best
        if depth > 100_000:     # only a self-referring structure gets here
            raise GuardError("the data refers to itself (a recursive YAML alias)")
        stack.extend((v, depth) for v in (node.values() if isinstance(node, dict) else node))
    return best


def check_depth(obj: Any, *, max_depth: int | None = None) -> None:
    """Raise :class:`GuardError` when ``obj`` nests deeper than ``max_depth`` (default: the limit
    in force)."""
    limit = input_limits().max_depth if max_depth is None else max_depth
    if nesting_depth(obj, stop_at=limit + 1) > limit:
        raise GuardError(f"nested more than {limit} levels deep (raise the limit with "
                         f"{_ENV['max_depth']})")


def check_size(obj: Any, *, max_bytes: int | None = None) -> None:
    """Raise :class:`GuardError` when ``obj`` written out in full would exceed ``max_bytes``
    (default: the config limit in force)."""
    limit = input_limits().max_config_bytes if max_bytes is None else max_bytes
    size = expanded_size(obj)
    if size > limit:
        raise GuardError(f"expands to about {size:,} bytes once its YAML aliases are written out, more "
                         f"than the limit of {limit:,} (raise it with {_ENV['max_config_bytes']})")


# -- JSON -----------------------------------------------------------------------------------------
def _no_constant(name: str) -> Any:
    raise GuardError(f"{name} is not valid JSON (write null or a string)")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise GuardError(f"number {text[:20]} is out of range")
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):            # json.loads would silently keep the last value
        seen: set[str] = set()
        dup = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise GuardError(f"key {dup!r} is given twice in one object")
    return obj


_DECODER = json.JSONDecoder(parse_constant=_no_constant, parse_float=_finite_float, object_pairs_hook=_unique_keys)


def loads_json(text: str | bytes, *, max_depth: int | None = None) -> Any:
    """``json.loads`` for data a user supplied: ``NaN`` / ``Infinity`` and numbers that overflow
    to infinity are refused (they are not JSON, and a NaN in a record would be stored as NULL), so
    is a key given twice in one object (which value was meant?),
    and so is nesting deeper than ``max_depth`` (default: the limit in force) -- also when it is
    too deep for Python's parser.  Raises :class:`json.JSONDecodeError` for malformed JSON and
    :class:`GuardError` for the rest."""
    limit = input_limits().max_depth if max_depth is None else max_depth
    try:
        obj = _DECODER.decode(text.decode("utf-8") if isinstance(text, bytes) else text)
    except RecursionError:
        raise GuardError(f"nested more than {limit} levels deep (raise the limit with "
                         f"{_ENV['max_depth']})") from None
    except json.JSONDecodeError:
        raise
    except GuardError:
        raise
    except ValueError as exc:            # e.g. an integer of more than 4300 digits
        raise GuardError(f"invalid JSON ({exc})") from None
    # depth cannot exceed the number of '[' and '{' (in strings too): count them (fast, exact bound)
    # and walk the parsed value only when that bound is over the limit
    opener_count = text.count("[") + text.count("{") if isinstance(text, str) else \
        text.count(b"[") + text.count(b"{")
    if opener_count > limit:
        check_depth(obj, max_depth=limit)
    return obj


# -- YAML -----------------------------------------------------------------------------------------
class _UniqueKeyLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a mapping with the same key twice (PyYAML silently keeps
    the last one, so ``repetitions: 3`` followed by ``repetitions: 5`` would be read as 5)."""


def _construct_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> Any:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":    # '<<: *base' merges are not duplicates
            continue
        key = loader.construct_object(key_node, deep=True)
        try:
            dup = key in seen
        except TypeError:       # an unhashable key: let the base constructor report it
            break
        if dup:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark)
        seen.add(key)
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _yaml_error_line(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or getattr(exc, "context", None) or type(exc).__name__
    problem = " ".join(str(problem).split())
    if mark is not None:
        return f"line {mark.line + 1}, column {mark.column + 1}: invalid YAML ({problem})"
    return f"invalid YAML ({problem})"


def decode_utf8(data: bytes, where: str) -> str:
    """``data`` as text, or a :class:`ValueError` naming the line of the first invalid byte."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise YamlFileError(f"{where}, line {line}: not UTF-8 text (byte 0x{data[exc.start]:02x} "
                            "cannot be decoded)") from None


def parse_yaml_text(text: str, where: str) -> Any:
    """Parse YAML text from ``where`` with duplicate keys refused and the size/depth limits
    applied; errors are :class:`YamlFileError` naming ``where`` and the line."""
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise YamlFileError(f"{where}, {_yaml_error_line(exc)}") from None
    except RecursionError:
        raise YamlFileError(f"{where}: nested too deeply to read") from None
    try:
        check_depth(data)
        check_size(data)
    except GuardError as exc:
        raise YamlFileError(f"{where}: {exc}") from None
    return data


def read_yaml_file(path: str | Path, *, what: str = "YAML") -> Any:
    """Read and parse a YAML file a user wrote.  ``what`` names it in errors ("config file",
    "protocol template").  Raises :class:`YamlFileError` with one line: file not found, not a
    file, too large, not UTF-8, invalid YAML (line and column, without echoing the file),
    duplicate key, nested too deeply, or too large once aliases are expanded."""
    p = Path(path)
    if not p.exists():
        raise YamlFileError(f"{p}: {what} not found")
    if not p.is_file():
        raise YamlFileError(f"{p}: {what} is not a file")
    limit = input_limits().max_config_bytes
    try:
        size = p.stat().st_size
        if size > limit:
            raise YamlFileError(f"{p}: {what} is {size:,} bytes, more than the limit of {limit:,} "
                                f"(raise it with {_ENV['max_config_bytes']})")
        data = p.read_bytes()
    except OSError as exc:
        raise YamlFileError(f"{p}: cannot read {what} ({exc.strerror or exc})") from None
    return parse_yaml_text(decode_utf8(data, str(p)), str(p))
