"""Display names: the short names a report shows for judges, protocols, datasets and configurations.

A name is the id itself when it is short enough; a longer id is shortened in steps, each applied only
while the name is still too long -- ``key=value`` specs keep the keys that tell the run's ids apart
(keys with the same value in every id of that provider are left out) under short unambiguous keys
(initials: ``position_lock`` -> ``pl``; keys whose initials collide get their shortest distinct
prefixes: ``skill`` -> ``sk``, ``seed`` -> ``se``), a base URL is dropped, a path keeps its last
part, and what is still too long is cut with an ellipsis.  A name given in the run config (a judge's
``label:``) wins.  Names are never ambiguous: two ids that would share a name are numbered
(``name #1``, ``name #2``, by id).  Reports show the full id beside every name (a legend, and a
tooltip in HTML).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["NAME_WIDTHS", "configuration_name", "display_names", "names_from_config", "shown_parts"]

#: how many characters a display name may have before it is shortened, per kind of id
NAME_WIDTHS: dict[str, int] = {"judge": 32, "protocol": 20, "dataset": 24}

_KV = re.compile(r"^[A-Za-z_][\w.-]*=[^,=]*(,[A-Za-z_][\w.-]*=[^,=]*)*$")
_URL = re.compile(r"@?[A-Za-z][A-Za-z0-9+.-]*://\S*")
_PATH = re.compile(r"[\w.~-]*(?:/[\w.~-]+)+/?")


def _kv_parts(judge_id: str) -> tuple[str, list[tuple[str, str]]] | None:
    """``provider:k=v,k=v`` -> (provider, [(k, v), ...]); None when the id is not of that shape."""
    head, sep, tail = judge_id.partition(":")
    if not sep or not _KV.match(tail):
        return None
    return head, [(k, v) for k, _, v in (kv.partition("=") for kv in tail.split(","))]


def _key_abbreviations(keys: Iterable[str]) -> dict[str, str]:
    """Each key's initials (``position_lock`` -> ``pl``), lengthened to the shortest distinct prefix
    where two keys would share one (``skill``/``seed`` -> ``sk``/``se``); a key that is a prefix of
    another stays whole."""
    keys = sorted(set(keys))
    abbr = {k: "".join(w[:1] for w in k.split("_") if w) or k for k in keys}
    for _ in range(max((len(k) for k in keys), default=0) + 1):
        seen: dict[str, list[str]] = {}
        for k, a in abbr.items():
            seen.setdefault(a, []).append(k)
        clashes = [ks for ks in seen.values() if len(ks) > 1]
        if not clashes:
            break
        for ks in clashes:
            for k in ks:
                others = [o for o in ks if o != k]
                n = next((n for n in range(2, len(k) + 1) if all(k[:n] != o[:n] for o in others)), len(k))
                abbr[k] = k[:n] if abbr[k] != k[:n] else k
    return abbr


def _kv_names(ids: Sequence[str]) -> dict[str, str]:
    """``provider:k=v,...`` ids shortened together, per provider: the keys whose value differs
    between the provider's ids, under their abbreviations."""
    parsed = {i: p for i in ids if (p := _kv_parts(i)) is not None}
    out: dict[str, str] = {}
    for provider in sorted({p[0] for p in parsed.values()}):
        group = {i: kv for i, (prov, kv) in parsed.items() if prov == provider}
        pairs = [set(kv) for kv in group.values()]
        common = set.intersection(*pairs) if len(group) > 1 else set()
        abbr = _key_abbreviations(k for kv in group.values() for k, _ in kv)
        for i, kv in group.items():
            spec = ",".join(f"{abbr[k]}={v}" for k, v in kv if (k, v) not in common)
            out[i] = f"{provider}:{spec}" if spec else provider
    return out


def _cut(name: str, width: int) -> str:
    """``name`` in ``width`` characters: whole ``,key=value`` parts are dropped from the end first
    (a value is never cut in the middle), then the text is cut; an ellipsis says so."""
    if len(name) <= width:
        return name
    head, sep, tail = name.partition(":")
    parts = tail.split(",") if sep and "=" in tail else []
    while len(parts) > 1:
        parts.pop()
        short = f"{head}:{','.join(parts)},…"
        if len(short) <= width:
            return short
    return name[: max(1, width - 1)] + "…"


def _last_part(match: re.Match[str]) -> str:
    parts = [p for p in match.group(0).split("/") if p]
    return parts[-1] if parts else match.group(0)


def _shortened(ident: str, kv_name: str | None, width: int) -> str:
    name = ident
    for step in (lambda s: kv_name or s, lambda s: _URL.sub("", s) or s, lambda s: _PATH.sub(_last_part, s)):
        if len(name) <= width:
            return name
        name = step(name)
    return _cut(name, width)


def _numbered(names: dict[str, str]) -> dict[str, str]:
    """Names shared by several ids get ``#k`` (k = the id's place among them, by id)."""
    for _ in range(len(names) + 1):
        by_name: dict[str, list[str]] = {}
        for ident, name in names.items():
            by_name.setdefault(name, []).append(ident)
        shared = {n: sorted(ids) for n, ids in by_name.items() if len(ids) > 1}
        if not shared:
            break
        for name, ids in shared.items():
            for k, ident in enumerate(ids, start=1):
                names[ident] = f"{name} #{k}"
    return names


def display_names(ids: Iterable[str], *, width: int, given: Mapping[str, str] | None = None) -> dict[str, str]:
    """id -> its display name (see the module docstring); ``given`` names (from the config) win."""
    ids = sorted({str(i) for i in ids})
    given = {str(k): str(v).strip() for k, v in (given or {}).items() if v is not None and str(v).strip()}
    long_kv = [i for i in ids if len(i) > width and i not in given and _kv_parts(i)]
    providers = {p[0] for i in long_kv if (p := _kv_parts(i))}
    kv = _kv_names([i for i in ids if (p := _kv_parts(i)) and p[0] in providers])
    names = {i: given.get(i) or _shortened(i, kv.get(i), width) for i in ids}
    return _numbered(names)


def names_from_config(meta: Mapping[str, Any]) -> dict[str, str]:
    """Judge id -> the ``label`` its entry in the run config gives it (the store's ``config`` meta)."""
    config = meta.get("config") if isinstance(meta, Mapping) else None
    judges = config.get("judges") if isinstance(config, Mapping) else None
    out: dict[str, str] = {}
    for entry in judges or []:
        if isinstance(entry, Mapping) and entry.get("id") and entry.get("label"):
            out[str(entry["id"])] = str(entry["label"])
    return out


def shown_parts(cells: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    """Which parts of a cell a configuration name needs beyond judge and protocol: ``temperature``,
    ``decoding`` and ``step`` where the cells differ in them."""
    return tuple(k for k in ("temperature", "decoding", "step")
                 if len({str(c.get(k) if c.get(k) is not None else "") for c in cells}) > 1)


def configuration_name(cell: Mapping[str, Any], names: Mapping[str, Mapping[str, str]],
                       parts: Sequence[str] = ()) -> str:
    """A cell's configuration as a reader names it: ``judge · protocol`` by display name, then the
    ``parts`` that tell it from the run's other cells (``t=0.7``, ``constrained``, ``[step]``)."""
    judge = names.get("judge", {}).get(str(cell["judge"]), str(cell["judge"]))
    protocol = names.get("protocol", {}).get(str(cell["protocol"]), str(cell["protocol"]))
    out = [judge, protocol]
    for k in parts:
        v = cell.get(k)
        if k == "temperature" and v is not None:
            out.append(f"t={float(v):g}")
        elif k == "step" and v:
            out.append(f"[{v}]")
        elif v:
            out.append(str(v))
    return " · ".join(out)
