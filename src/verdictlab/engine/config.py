"""Run configuration: what to judge, with which judges and protocols, how often, within what budget.

A run config is a small YAML file::

    name: quick
    datasets: [{name: jsonl, path: pairs.jsonl}]      # other keys are loader options (seed, split...)
    judges: ["sim:skill=0.8,position_lock=0.2,noise=0.05,seed=1"]
    protocols: [direct, vf-json]
    orders: [AB, BA]
    temperatures: [0.0]
    repetitions: 5
    decoding: [free]        # or [free, constrained]: constrained decoding as a factor
    budget: {max_calls: null, max_tokens: null, max_usd: null}
    cache: auto
    seed: 42

A judge may also be a mapping with its call settings::

    judges:
      - id: openai:gpt-4o-mini
        concurrency: 32
        requests_per_minute: 500
        tokens_per_minute: 200000
        timeout_s: 60
        max_retries: 6          # retries with exponential backoff + jitter (backoff_base_s, backoff_cap_s)
        params: {max_tokens: 300, seed: 7}

Relative dataset paths resolve against the folder of the config file.  :func:`load_config` raises
:class:`ConfigError` naming the file and the offending field.

Cache policy
------------
``auto`` (default) serves a call from the response cache only when that cannot distort a
consistency measurement: temperature-0 calls, keyed by the full request *including* the repetition
index, so repetition r is never answered with repetition r' 's output.  ``on`` caches every call
(still per repetition); ``off`` never reads or writes the cache.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..core.ranges import CONFIDENCE, COST_USD, HALF_WIDTH, REPETITIONS, SEED, TEMPERATURE, RangeError
from ..errors import InputError, UsageError

CachePolicy = Literal["auto", "on", "off"]


class ConfigError(InputError):
    """A run config is missing, malformed or invalid.  The message names the file and field."""


class DatasetSpec(BaseModel):
    """One dataset: a registered loader ``name``, an optional ``path`` and loader ``options``."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    name: str = Field(min_length=1)
    path: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _collect_options(cls, data: Any) -> Any:
        if isinstance(data, str):
            return {"name": data}
        if isinstance(data, dict):
            data = dict(data)
            opts = dict(data.pop("options", None) or {})
            for key in list(data):
                if key not in ("name", "path"):
                    opts[key] = data.pop(key)
            data["options"] = opts
        return data


class JudgeSpec(BaseModel):
    """One judge and how to call it.  ``params`` are generation parameters passed to every
    request (``max_tokens`` and ``seed`` are recognised; anything else goes to the backend)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    id: str = Field(min_length=1)
    # the short name reports show for this judge (the full id beside it); default: derived from the id
    label: str | None = Field(default=None, min_length=1, max_length=40)
    concurrency: int = Field(default=8, ge=1)
    requests_per_minute: float | None = Field(default=None, gt=0)
    tokens_per_minute: float | None = Field(default=None, gt=0)
    timeout_s: float = Field(default=120.0, gt=0)
    max_retries: int = Field(default=5, ge=0)
    backoff_base_s: float = Field(default=0.5, gt=0)    # first retry waits up to this (x2 for rate limits)
    backoff_cap_s: float = Field(default=30.0, gt=0)    # no retry waits longer (unless Retry-After says so)
    params: dict[str, Any] = Field(default_factory=dict)
    batch: bool = False   # OpenAI / Anthropic judges: submit the trials as batch jobs at batch prices

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, data: Any) -> Any:
        if isinstance(data, str):
            return {"id": data}
        return data

    @field_validator("id")
    @classmethod
    def _id_shape(cls, v: str) -> str:
        if ":" not in v:
            raise ValueError(f"judge id {v!r} must look like PROVIDER:SPEC (e.g. 'sim:skill=0.8')")
        return v

    @field_validator("params")
    @classmethod
    def _params(cls, v: dict[str, Any]) -> dict[str, Any]:
        mt = v.get("max_tokens")
        if mt is not None and (not isinstance(mt, int) or isinstance(mt, bool) or mt < 1):
            raise ValueError("params.max_tokens must be a positive integer")
        seed = v.get("seed")
        if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
            raise ValueError("params.seed must be an integer")
        return v


class BudgetSpec(BaseModel):
    """Limits for the whole run (counted across resumes).  ``None`` = no limit."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    max_calls: int | None = Field(default=None, ge=0)
    max_tokens: int | None = Field(default=None, ge=0)
    max_usd: float | None = Field(default=None, ge=COST_USD.low)


class PrecisionSpec(BaseModel):
    """``precision:`` -- an adaptive design: target half-widths for any of C, phi, A, T at
    ``confidence``, a pilot of ``pilot_pairs`` pairs at full R (``repetitions``, also written
    ``{max: R}``).  See :mod:`verdictlab.engine.adaptive`."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, allow_inf_nan=False)

    C: float | None = Field(default=None, gt=HALF_WIDTH.low, lt=HALF_WIDTH.high)
    phi: float | None = Field(default=None, gt=HALF_WIDTH.low, lt=HALF_WIDTH.high)
    A: float | None = Field(default=None, gt=HALF_WIDTH.low, lt=HALF_WIDTH.high)
    T: float | None = Field(default=None, gt=HALF_WIDTH.low, lt=HALF_WIDTH.high)
    confidence: float = Field(default=0.95, gt=CONFIDENCE.low, lt=CONFIDENCE.high)
    pilot_pairs: int = Field(default=100, ge=10)

    @model_validator(mode="after")
    def _some_target(self) -> PrecisionSpec:
        if not self.targets():
            raise ValueError("precision needs at least one target half-width among C, phi, A, T (e.g. T: 0.03)")
        return self

    def targets(self) -> dict[str, float]:
        return {k: float(v) for k, v in (("C", self.C), ("phi", self.phi), ("A", self.A), ("T", self.T))
                if v is not None}


_HOST_PORT = re.compile(r"(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):([0-9]{1,5})")


def check_ray_address(address: str) -> str:
    """A Ray cluster address the executor can connect to as a driver: ``HOST:PORT`` (the cluster's
    GCS address, as ``ray start --head`` prints it), ``auto`` (the cluster this machine belongs to) or
    ``local`` (start one); anything else is a :class:`~verdictlab.errors.UsageError` (a ``ValueError``)
    saying what to give instead."""
    a = address.strip()
    if a in ("auto", "local"):
        return a
    if "://" in a:
        scheme = a.split("://", 1)[0].lower()
        if scheme in ("http", "https"):
            raise UsageError(f"Ray address {address!r} is an HTTP address (the dashboard or job API); give the "
                             "cluster's GCS address HOST:PORT instead (e.g. 10.0.0.5:6379, as `ray start --head` "
                             "prints it)")
        raise UsageError(f"Ray address {address!r}: {scheme}:// addresses are not supported (the executor "
                         "connects as a driver, not through Ray Client); give the GCS address HOST:PORT "
                         "(e.g. 10.0.0.5:6379), or run verdictlab on a node of the cluster with 'auto'")
    m = _HOST_PORT.fullmatch(a)
    if m is None or not 1 <= int(m.group(1)) <= 65535:
        raise UsageError(f"Ray address {address!r} is not HOST:PORT (e.g. 127.0.0.1:6379, port 1-65535), "
                         "'auto' or 'local'")
    return a


class RaySpec(BaseModel):
    """``ray:`` -- settings of the Ray executor: a cluster ``address`` (None: start a local one),
    ``workers`` (actors judging chunks; default the cluster's CPUs), ``chunk_size`` (trials per chunk)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    address: str | None = None
    workers: int | None = Field(default=None, ge=1)
    chunk_size: int | None = Field(default=None, ge=1)

    @field_validator("address")
    @classmethod
    def _address(cls, v: str | None) -> str | None:
        return None if v is None else check_ray_address(v)


class RunConfig(BaseModel):
    """A validated run config.  ``source`` is the YAML file it came from (if any)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    name: str = Field(min_length=1)
    datasets: list[DatasetSpec] = Field(min_length=1)
    judges: list[JudgeSpec] = Field(min_length=1)
    protocols: list[str] = Field(min_length=1)
    orders: list[Literal["AB", "BA"]] = Field(default_factory=lambda: list[Literal["AB", "BA"]](["AB", "BA"]),
                                              min_length=1)
    temperatures: list[float] = Field(default_factory=lambda: [0.0], min_length=1)
    repetitions: int = Field(default=3, ge=REPETITIONS.low)
    # decoding modes to run: 'free' (the model writes its answer) and/or 'constrained' (the format is
    # forced by the backend's mechanism; see verdictlab.protocols.output_format); part of the trial key and the cell
    decoding: list[Literal["free", "constrained"]] = Field(
        default_factory=lambda: list[Literal["free", "constrained"]](["free"]), min_length=1)
    # an adaptive design instead of the full grid; repetitions is then the R estimated
    precision: PrecisionSpec | None = None
    # where trials run: 'local' (asyncio in this process) or 'ray' (a Ray cluster)
    executor: Literal["local", "ray"] = "local"
    ray: RaySpec = Field(default_factory=lambda: RaySpec())
    batch_poll_s: float = Field(default=30.0, gt=0)   # seconds between batch status polls (batch: true judges)
    budget: BudgetSpec = Field(default_factory=BudgetSpec)
    cache: CachePolicy = "auto"
    seed: int = Field(default=42, ge=SEED.low)   # numpy's generators (seeded re-ordering, sampling) take >= 0
    source: str | None = Field(default=None, exclude=True)

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if "/" in v or "\\" in v or v in (".", ".."):
            raise ValueError("name must not contain path separators (it names the default run dir)")
        bad = next((c for c in v if not c.isprintable()), None)
        if bad is not None:
            # a NUL byte cannot be in a file name; newlines and escapes would garble every line that shows it
            raise ValueError(f"name must be printable text (it names the default run dir), got the control "
                             f"character {bad!r}")
        return v

    @field_validator("repetitions", mode="before")
    @classmethod
    def _reps(cls, v: Any) -> Any:
        # ``repetitions: {max: 10}``: the R of the fixed design an adaptive run estimates
        if isinstance(v, dict):
            if set(v) != {"max"}:
                raise ValueError("repetitions must be a number or {max: N}")
            return v["max"]
        return v

    @field_validator("cache", mode="before")
    @classmethod
    def _cache(cls, v: Any) -> Any:
        # YAML reads bare on/off as booleans
        if v is True:
            return "on"
        if v is False:
            return "off"
        return v

    @field_validator("temperatures", mode="before")
    @classmethod
    def _temps_in_range(cls, v: Any) -> Any:
        # before pydantic's own float check (which would say "should be a finite number" without the range)
        for t in v if isinstance(v, list) else ():
            if isinstance(t, int | float):
                try:
                    TEMPERATURE.check(t)
                except RangeError:
                    raise ValueError(f"temperature {t} is outside [{TEMPERATURE.low:g}, {TEMPERATURE.high:g}]") from None
        return v

    @field_validator("temperatures")
    @classmethod
    def _temps(cls, v: list[float]) -> list[float]:
        if len(set(v)) != len(v):
            raise ValueError("temperatures contain duplicates")
        return v

    @model_validator(mode="after")
    def _grid_size(self) -> RunConfig:
        """A careless ``repetitions: 1000000000`` would build the grid until memory runs out: refuse
        more trials per item than the limit in force (``VERDICTLAB_MAX_TRIALS_PER_ITEM``)."""
        from ..core.guards import env_name, input_limits

        per_item = (len(self.judges) * len(self.protocols) * len(self.orders) * len(self.temperatures)
                    * len(self.decoding) * self.repetitions)
        limit = input_limits().max_trials_per_item
        if per_item > limit:
            raise ValueError(f"the design asks for {per_item:,} trials per item (judges x protocols x orders x "
                             f"temperatures x decodings x repetitions), more than the limit of {limit:,} "
                             f"(raise it with {env_name('max_trials_per_item')})")
        return self

    @model_validator(mode="after")
    def _adaptive(self) -> RunConfig:
        """An adaptive design needs repetitions to save (R >= 2), and a phi or T target needs both orders
        (phi compares the verdicts of the two orders; T contains phi)."""
        if self.precision is None:
            return self
        if self.repetitions < 2:
            raise ValueError(f"precision: needs repetitions of at least 2 (got {self.repetitions}): the adaptive "
                             "design decides how many of R repetitions to spend; with R = 1 use the fixed design "
                             "(drop precision:)")
        needs_orders = [k for k in ("phi", "T") if k in self.precision.targets()]
        if needs_orders and len(self.orders) < 2:
            raise ValueError(f"a precision target for {' and '.join(needs_orders)} needs both orders (orders: [AB, BA]): "
                             "the flip rate phi compares the verdicts of the two orders")
        return self

    @model_validator(mode="after")
    def _unique(self) -> RunConfig:
        named: tuple[tuple[str, list[str]], ...] = (
            ("judges", [j.id for j in self.judges]), ("judge labels", [j.label for j in self.judges if j.label]),
            ("protocols", list(self.protocols)),
            ("orders", [str(o) for o in self.orders]), ("decoding", [str(d) for d in self.decoding]))
        for field, values in named:
            dup = sorted({v for v in values if values.count(v) > 1})
            if dup:
                raise ValueError(f"{field} contain duplicates: {', '.join(dup)}")
        return self

    def resolved_path(self, spec: DatasetSpec) -> str | None:
        """A dataset path, resolved against the config file's folder when relative -- unless nothing is
        there and it names a fetched public benchmark (``judgebench``, ``pandalm-results/data/x.json``):
        then it is kept as written, for the loader to read the fetched files
        (:func:`verdictlab.datasets.fetched.resolve_source`)."""
        if spec.path is None:
            return None
        resolved = self.resolved_file(spec.path)
        if not Path(spec.path).is_absolute() and not Path(resolved).exists():
            from ..datasets.pins import PINNED

            if Path(spec.path).parts[:1] and Path(spec.path).parts[0] in PINNED:
                return spec.path
        return resolved

    def resolved_file(self, path: str) -> str:
        """A file named in the config (a dataset, a probe's file), resolved against the config file's
        folder when relative."""
        p = Path(path).expanduser()
        if not p.is_absolute() and self.source is not None:
            p = Path(self.source).resolve().parent / p
        return str(p)

    def resolve_protocol_arg(self, protocol_id: str) -> tuple[str, str | None]:
        """``"ID@ARG"`` -> ``(ID, ARG)`` with a relative ARG that names a file next to the config
        file made absolute (a template override resolves against the config's folder, not the
        working directory); ``(protocol_id, None)`` for an id without ``@``.  The stored protocol id
        stays as written."""
        base, sep, arg = protocol_id.partition("@")
        if not sep:
            return protocol_id, None
        p = Path(arg).expanduser()
        if not p.is_absolute() and self.source is not None:
            beside = Path(self.source).resolve().parent / p
            if beside.exists():
                return base, str(beside)
        return base, str(p) if p.is_absolute() else arg

    def judge_ids(self) -> list[str]:
        return [j.id for j in self.judges]

    def public_dict(self) -> dict[str, Any]:
        """The config as plain data for the run store's ``meta`` (holds no secrets: keys only ever
        come from the environment)."""
        d = self.model_dump(mode="json")
        d["source"] = self.source
        return d


def _format_errors(exc: ValidationError, where: str) -> str:
    lines = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err.get("loc", ()))
        msg = err.get("msg", "invalid")
        lines.append(f"{where}: field '{loc}': {msg}" if loc else f"{where}: {msg}")
    return "; ".join(lines)


def config_from_dict(data: dict[str, Any], *, source: str | Path | None = None) -> RunConfig:
    """Validate a config mapping; ``source`` (the file it came from) anchors relative paths.

    The mapping must stay within the input limits (:mod:`verdictlab.core.guards`): nesting depth and
    size once shared nodes (YAML aliases) are written out."""
    from ..core.guards import GuardError, check_depth, check_size

    where = str(source) if source is not None else "<config>"
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: a run config must be a mapping, got {type(data).__name__}")
    try:
        check_depth(data)
        check_size(data)
    except GuardError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    try:
        cfg = RunConfig.model_validate({k: v for k, v in data.items() if k != "source"})
    except ValidationError as exc:
        raise ConfigError(_format_errors(exc, where)) from None
    cfg.source = str(source) if source is not None else None
    return cfg


def load_config(path: str | Path, *, overrides: Sequence[str] = ()) -> RunConfig:
    """Read and validate a YAML run config.  Every problem is a :class:`ConfigError` with one
    line naming the file (and line or field): missing file, not UTF-8, invalid YAML, a key given
    twice, too deep or too large after alias expansion, or an invalid setting.  ``overrides``
    (``--set KEY=VALUE``) change settings of the file before it is checked (:func:`apply_overrides`)."""
    from ..core.guards import GuardError, YamlFileError, read_yaml_file

    p = Path(path)
    try:
        data = read_yaml_file(p, what="config file")
    except (YamlFileError, GuardError) as exc:
        raise ConfigError(str(exc)) from None
    if data is None:
        raise ConfigError(f"{p}: config file is empty")
    return config_from_dict(apply_overrides(data, overrides, where=str(p)), source=p)


def _set_path(data: Any, parts: list[str], value: Any, *, key: str, where: str) -> None:
    """Set ``value`` at the dotted path ``parts`` of ``data`` (:func:`apply_overrides`)."""
    node = data
    for depth, part in enumerate(parts):
        last = depth == len(parts) - 1
        here = ".".join(parts[:depth]) or "the config"
        if isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                raise ConfigError(f"{where}: --set {key}: {here} is a list of {len(node)}; give an index "
                                  f"0..{len(node) - 1}, not {part!r}")
            index: Any = int(part)
        elif isinstance(node, dict):
            if part not in node and not last:
                raise ConfigError(f"{where}: --set {key}: {here} has no {part!r} "
                                  f"(it has {', '.join(map(str, node)) or 'nothing'})")
            index = part
        else:
            raise ConfigError(f"{where}: --set {key}: {here} is {type(node).__name__} {str(node)[:60]!r}, not a "
                              f"mapping or a list; set it whole: --set {here}=NEW")
        if last:
            node[index] = value
        else:
            node = node[index]


def apply_overrides(data: Any, overrides: Sequence[str], *, where: str = "<config>") -> Any:
    """``data`` (a config mapping, changed in place and returned) with each ``KEY=VALUE`` of ``overrides``
    set: ``KEY`` a dotted path whose numbers index lists (``judges.0.id``, ``repetitions``), ``VALUE`` read
    as YAML (``5`` a number, ``[direct, vf-json]`` a list, a URL text).  The path must lead through
    existing mappings and lists (its last key may be new in a mapping); :class:`ConfigError` naming the
    ``--set`` otherwise."""
    import yaml

    for item in overrides:
        key, sep, raw = item.partition("=")
        parts = key.strip().split(".") if key.strip() else []
        if not sep or not parts or any(not part for part in parts):
            raise ConfigError(f"--set {item!r}: expected KEY=VALUE with a dotted KEY, e.g. judges.0.id=...")
        try:
            value = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError:
            value = raw
        _set_path(data, parts, value, key=key, where=where)
    return data
