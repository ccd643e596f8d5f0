"""What a call costs: a price table (US dollars per million tokens) per provider and model.

The packaged table ``verdictlab/data/prices.yaml`` holds public list prices at a stated date.
Users extend or override it with their own YAML files of the same shape, named in the
``VERDICTLAB_PRICES`` environment variable (several separated by ``os.pathsep``) or merged in
code with :meth:`PriceTable.merge` / :meth:`PriceTable.from_file`.

Rules
-----
* Local and simulated providers (``sim``, ``llamacpp``, ``vllm``) cost 0.
* A hosted model missing from the table costs ``None`` -- *unknown*, never silently 0.
* Model keys are exact names or glob patterns; an exact name wins, then the longest pattern.
* Batch jobs (``batch: true`` judges) cost ``batch_rate[provider]`` times the list price
  (the file's ``batch_rate`` mapping; 0.5 for OpenAI and Anthropic); a provider without a batch
  rate has no batch price (``None``).
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Mapping
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import InputError

#: providers whose packaged backends run locally: the table prices them at 0 when asked by name.  A backend
#: says it is free itself (:attr:`verdictlab.judges.base.JudgeAPI.free`), which is what a run asks.
FREE_PROVIDERS = frozenset({"sim", "llamacpp", "vllm"})
PRICES_ENV = "VERDICTLAB_PRICES"

Price = tuple[float, float]   # (input, output) USD per 1M tokens


class PriceTableError(InputError):
    """A price file is malformed; the message names the file and the field."""


def _parse_price(value: Any, source: str, field: str) -> Price:
    where = f"{source}: field '{field}'"
    if isinstance(value, Mapping):
        if set(value) - {"input", "output"} or "input" not in value or "output" not in value:
            raise PriceTableError(f"{where}: expected {{input: X, output: Y}} (USD per 1M tokens), "
                                  f"got {dict(value)!r}")
        pair = (value["input"], value["output"])
    elif isinstance(value, list | tuple) and len(value) == 2:
        pair = (value[0], value[1])
    else:
        raise PriceTableError(f"{where}: expected [input, output] USD per 1M tokens, got {value!r}")
    out = []
    for name, v in zip(("input", "output"), pair, strict=True):
        if isinstance(v, bool) or not isinstance(v, int | float) or v < 0:
            raise PriceTableError(f"{source}: field '{field}.{name}': price must be a number >= 0, got {v!r}")
        out.append(float(v))
    return out[0], out[1]


def _is_pattern(key: str) -> bool:
    return any(c in key for c in "*?[")


class PriceTable:
    """Prices per ``(provider, model)``; :meth:`cost` turns token counts into dollars.

    ``PriceTable()`` is the packaged table plus any user files named in ``VERDICTLAB_PRICES``.
    ``PriceTable(prices)`` uses only ``prices``: either ``{(provider, model): (in, out)}`` or the
    nested file shape ``{provider: {model: [in, out]}}``.
    """

    def __init__(self, prices: Mapping[Any, Any] | None = None, *, source: str = "<mapping>") -> None:
        self._exact: dict[tuple[str, str], Price] = {}
        self._patterns: dict[str, list[tuple[str, Price]]] = {}
        self.sources: list[str] = []
        self.batch_rates: dict[str, float] = {}
        if prices is None:
            base = default_price_table()
            self._exact = dict(base._exact)
            self._patterns = {k: list(v) for k, v in base._patterns.items()}
            self.sources = list(base.sources)
            self.batch_rates = dict(base.batch_rates)
        else:
            self._add(prices, source)

    # -- building -----------------------------------------------------------------------------
    def _set(self, provider: str, model: str, price: Price) -> None:
        if _is_pattern(model):
            pats = [p for p in self._patterns.get(provider, []) if p[0] != model]
            pats.append((model, price))
            # longest (most specific) pattern first
            pats.sort(key=lambda p: -len(p[0]))
            self._patterns[provider] = pats
        else:
            self._exact[(provider, model)] = price

    def _add(self, prices: Mapping[Any, Any], source: str) -> None:
        if "prices" in prices and isinstance(prices.get("prices"), Mapping):
            prices = prices["prices"]
        for key, value in prices.items():
            if isinstance(key, tuple):
                if len(key) != 2:
                    raise PriceTableError(f"{source}: key {key!r} must be (provider, model)")
                self._set(str(key[0]), str(key[1]), _parse_price(value, source, f"{key[0]}.{key[1]}"))
                continue
            if not isinstance(value, Mapping):
                raise PriceTableError(f"{source}: field 'prices.{key}' must map model names to prices")
            for model, price in value.items():
                self._set(str(key), str(model), _parse_price(price, source, f"prices.{key}.{model}"))
        self.sources.append(source)

    @classmethod
    def from_file(cls, path: str | Path) -> PriceTable:
        """Read a YAML (or JSON) price file."""
        import yaml

        p = Path(path).expanduser()
        if not p.is_file():
            raise PriceTableError(f"{p}: price file not found")
        try:
            data = yaml.safe_load(p.read_text(encoding="utf-8"))
        except yaml.YAMLError as exc:
            raise PriceTableError(f"{p}: invalid YAML ({exc})") from None
        if not isinstance(data, Mapping):
            raise PriceTableError(f"{p}: a price file must be a mapping with a 'prices' field")
        unit = data.get("unit", "usd_per_million_tokens")
        if unit != "usd_per_million_tokens":
            raise PriceTableError(f"{p}: field 'unit' must be 'usd_per_million_tokens', got {unit!r}")
        if "prices" not in data or not isinstance(data["prices"], Mapping):
            raise PriceTableError(f"{p}: field 'prices' is missing or not a mapping")
        table = cls(data["prices"], source=str(p))
        table.batch_rates = _batch_rates(data.get("batch_rate"), str(p))
        return table

    def merge(self, other: PriceTable | Mapping[Any, Any] | str | Path) -> PriceTable:
        """A new table: this one overridden by ``other`` (a table, mapping or file path)."""
        if isinstance(other, str | Path):
            other = PriceTable.from_file(other)
        elif not isinstance(other, PriceTable):
            other = PriceTable(other)
        out = PriceTable({})
        out.sources = []
        for t in (self, other):
            for (prov, model), price in t._exact.items():
                out._set(prov, model, price)
            for prov, pats in t._patterns.items():
                for model, price in reversed(pats):
                    out._set(prov, model, price)
            out.sources.extend(t.sources)
            out.batch_rates.update(t.batch_rates)
        return out

    # -- lookup -------------------------------------------------------------------------------
    def lookup(self, provider: str, model: str) -> Price | None:
        """``(input, output)`` USD per 1M tokens, or ``None`` when unknown."""
        if provider in FREE_PROVIDERS:
            return (0.0, 0.0)
        hit = self._exact.get((provider, model))
        if hit is not None:
            return hit
        for pattern, price in self._patterns.get(provider, ()):
            if fnmatch.fnmatchcase(model, pattern):
                return price
        return None

    def cost(self, provider: str, model: str, tokens_in: int | None, tokens_out: int | None) -> float | None:
        """Dollars for one call; ``None`` if the model's price is unknown.  Missing token counts
        count as 0 (the call's usage was not reported)."""
        price = self.lookup(provider, model)
        if price is None:
            return None
        return ((tokens_in or 0) * price[0] + (tokens_out or 0) * price[1]) / 1e6

    def batch_cost(self, provider: str, model: str, tokens_in: int | None, tokens_out: int | None) -> float | None:
        """Dollars for one request of a batch job: the list price times the provider's batch rate;
        ``None`` when the model's price or the provider's batch rate is unknown."""
        if provider in FREE_PROVIDERS:
            return 0.0
        rate = self.batch_rates.get(provider)
        cost = self.cost(provider, model, tokens_in, tokens_out)
        return None if rate is None or cost is None else cost * rate

    def __contains__(self, key: tuple[str, str]) -> bool:
        return self.lookup(*key) is not None

    def __repr__(self) -> str:
        n = len(self._exact) + sum(len(v) for v in self._patterns.values())
        return f"PriceTable({n} entries from {self.sources})"


def packaged_price_table() -> PriceTable:
    """Only the table shipped with verdictlab."""
    import yaml

    text = resources.files("verdictlab").joinpath("data/prices.yaml").read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    table = PriceTable(data["prices"], source="verdictlab/data/prices.yaml")
    table.batch_rates = _batch_rates(data.get("batch_rate"), "verdictlab/data/prices.yaml")
    return table


def _batch_rates(value: Any, source: str) -> dict[str, float]:
    """The ``batch_rate`` mapping of a price file: provider -> fraction of the list price in (0, 1]."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise PriceTableError(f"{source}: field 'batch_rate' must map providers to a fraction of the list price")
    out: dict[str, float] = {}
    for prov, rate in value.items():
        if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 < rate <= 1:
            raise PriceTableError(f"{source}: field 'batch_rate.{prov}': must be a number in (0, 1], got {rate!r}")
        out[str(prov)] = float(rate)
    return out


@lru_cache(maxsize=8)
def _default_for(env_value: str) -> PriceTable:
    table = packaged_price_table()
    for part in env_value.split(os.pathsep):
        if part.strip():
            table = table.merge(PriceTable.from_file(part.strip()))
    return table


def default_price_table() -> PriceTable:
    """The packaged table merged with the user files named in ``VERDICTLAB_PRICES``."""
    return _default_for(os.environ.get(PRICES_ENV, ""))


__all__ = ["FREE_PROVIDERS", "PRICES_ENV", "PriceTable", "PriceTableError", "default_price_table",
           "packaged_price_table"]
