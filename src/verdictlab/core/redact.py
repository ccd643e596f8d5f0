"""The one secret scrubber: error texts, audit-trail values and report metadata go through here.

* :func:`redact_text` masks, in a text: the given secret values, the values of environment
  variables named like ``*KEY*`` / ``*TOKEN*`` / ``*SECRET*`` / ``*PASSWORD*``, anything shaped like a
  provider key (``sk-...``, ``sk-proj-...``, ``hf_...``, ``gsk_...``, ``AIza...``), bearer tokens and
  ``api_key=...`` / ``"token": "..."`` assignments; optionally shortens the result.
* :func:`redact_value` walks dicts and lists: keys named like a secret (``api_key``, ``secret``,
  ``password``, ``authorization``, ``token``, ...) are dropped, strings are masked as above.

Every mask is :data:`REDACTED`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

REDACTED = "[redacted]"
#: characters of an error text kept (after scrubbing) in a stored row, an attempt row or a batch result
ERROR_LIMIT = 500

_VALUE_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?i:bearer)\s+[A-Za-z0-9._\-]{8,}"), REDACTED),
    (re.compile(r"\b(?:sk|pk|rk|sess|key)-[A-Za-z0-9_\-]{8,}"), REDACTED),
    (re.compile(r"\b(?:hf|gsk)_[A-Za-z0-9]{8,}"), REDACTED),
    (re.compile(r"\bAIza[0-9A-Za-z_\-]{20,}"), REDACTED),
    (re.compile(r"(?i)((?:api[_-]?key|token|secret|authorization|password)[\"']?\s*[:=]\s*[\"']?)"
                r"(?!\[redacted\])[^\s\"',}]{6,}"), r"\1" + REDACTED),
)
_SECRET_KEY = re.compile(r"(api[_-]?key|secret|passw|authoriz|credential|bearer|access[_-]?token|"
                         r"auth[_-]?token|session[_-]?token|^token$|private[_-]?key)", re.IGNORECASE)
_SECRET_ENV_NAMES = ("KEY", "TOKEN", "SECRET", "PASSWORD")


_ENV_CACHE: list[Any] = [None, []]     # [snapshot of the environment, its secret values]


def _env_secrets() -> list[str]:
    """Values (8+ characters) of environment variables named like a secret; recomputed only when the
    environment changed (a comparison of its raw mapping, about a microsecond)."""
    data = getattr(os.environ, "_data", None)
    if data is not None and _ENV_CACHE[0] == data:
        return list(_ENV_CACHE[1])
    found = [v for k, v in os.environ.items()
             if v and len(v) >= 8 and any(s in k.upper() for s in _SECRET_ENV_NAMES)]
    _ENV_CACHE[0], _ENV_CACHE[1] = (dict(data) if data is not None else None), found
    return list(found)


def redact_text(text: object, secrets: Iterable[str | None] = (), *, limit: int | None = None,
                environment: bool = True) -> str:
    """``text`` (any object, as ``str``) with every secret masked; cut to ``limit`` characters
    (ending in ``...``) when given.  ``secrets`` are extra values to mask (4+ characters);
    ``environment`` also masks the values of secret-named environment variables."""
    s = str(text)
    values = [v for v in secrets if v and len(v) >= 4]
    if environment:
        values += _env_secrets()
    for v in sorted(set(values), key=len, reverse=True):
        s = s.replace(v, REDACTED)
    for pat, repl in _VALUE_PATTERNS:
        s = pat.sub(repl, s)
    if limit is not None and len(s) > limit:
        s = s[: max(0, limit - 3)] + "..."
    return s


# key shapes and bearer tokens in one pass, not "name: value" prose
_SHAPES = re.compile("|".join(p.pattern for p, _ in _VALUE_PATTERNS[:4]))
_SHAPE_MARKERS = ("bearer", "sk-", "pk-", "rk-", "sess-", "key-", "hf_", "gsk_", "aiza")


def redact_answer(text: str) -> str:
    """A judge's answer with secrets masked: values of secret-named environment variables and
    provider-key shapes (``sk-...``, ``Bearer ...``).  Unlike :func:`redact_text` it leaves prose such
    as "secret: the answer" alone, so a verdict text is only changed where it carries a credential."""
    s = text
    for v in _env_secrets():
        if v in s:
            s = s.replace(v, REDACTED)
    low = s.lower()
    if any(m in low for m in _SHAPE_MARKERS):    # the regex only where a key shape can start
        s = _SHAPES.sub(REDACTED, s)
    return s


def is_secret_key(name: str) -> bool:
    """True for mapping keys that name a secret (``api_key``, ``Authorization``, ``token``...)."""
    return bool(_SECRET_KEY.search(name))


def redact_value(value: Any) -> Any:
    """Drop secret-named keys and mask secret-looking strings, recursively (dicts, lists, tuples)."""
    if isinstance(value, Mapping):
        return {str(k): redact_value(v) for k, v in value.items() if not is_secret_key(str(k))}
    if isinstance(value, list | tuple):
        return [redact_value(v) for v in value]
    if isinstance(value, str):
        return redact_text(value)
    return value


__all__ = ["REDACTED", "is_secret_key", "redact_answer", "redact_text", "redact_value"]
