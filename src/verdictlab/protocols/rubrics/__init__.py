"""Rubrics as package data: one YAML file per benchmark family, user-overridable.

Families
--------
``correctness``  correctness-first, for objective sets (math, code, factual QA, JudgeBench-like).
``instruction``  instruction-adherence-first, for instruction-following sets, especially the
                 adversarial ones (LLMBar) where a fluent answer that bends the instruction must lose.

Each file holds a ``geval`` section (system prompt, ordered criteria, scoring guidance) and a
``flask`` section (system prompt and one criterion per call).  A user file may hold any subset of
these keys; ``family:`` in it names the packaged family it starts from (default ``correctness``),
and the keys it gives replace the packaged ones section by section.

``rubric="auto"`` picks the family from the dataset name with :func:`family_for_dataset`.
"""

from __future__ import annotations

import copy
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from ...errors import InputError

FAMILIES: tuple[str, ...] = ("correctness", "instruction")

#: dataset-name fragments of objective sets -> correctness-first; everything else is judged
#: instruction-first (LLMBar, PandaLM, MT-Bench, Arena, AlpacaEval ... are instruction-following sets).
OBJECTIVE_MARKERS: tuple[str, ...] = ("judgebench", "math", "gsm", "code", "mmlu", "techqa", "science",
                                      "reasoning", "factual", "correctness")


class RubricError(InputError):
    """A rubric file is missing or malformed (the message names the file and the key)."""


def family_for_dataset(dataset: str | None) -> str:
    """``correctness`` for names that look like objective sets, else ``instruction``."""
    name = (dataset or "").lower()
    return "correctness" if any(m in name for m in OBJECTIVE_MARKERS) else "instruction"


@lru_cache(maxsize=8)
def _package_family(family: str) -> dict[str, Any]:
    if family not in FAMILIES:
        raise RubricError(f"unknown rubric family {family!r}; known: {', '.join(FAMILIES)} "
                          "(or give a path to a YAML file)")
    text = resources.files("verdictlab.protocols.rubrics").joinpath(f"{family}.yaml").read_text("utf-8")
    return yaml.safe_load(text)


@lru_cache(maxsize=32)
def _user_file(path: str) -> dict[str, Any]:
    from ...core.guards import YamlFileError, read_yaml_file

    p = Path(path)
    try:    # one line: missing file, invalid YAML with line and column, never the file's text
        data = read_yaml_file(p, what="rubric file") or {}
    except YamlFileError as exc:
        raise RubricError(str(exc)) from None
    if not isinstance(data, dict):
        raise RubricError(f"{p}: a rubric file must be a YAML mapping")
    unknown = set(data) - {"family", "description", "geval", "flask", "rubric"}
    if unknown:
        raise RubricError(f"{p}: unknown key(s) {sorted(unknown)} (allowed: family, description, geval, flask)")
    return data


def load_rubric(spec: str | Path | None = "auto", *, dataset: str | None = None) -> dict[str, Any]:
    """The rubric for ``spec``: ``"auto"`` (family from ``dataset``), a family name, or a YAML path.

    Returns a fresh dict ``{"family", "description", "geval": {...}, "flask": {...}}``; it is
    validated so a malformed user file fails here, naming the file and the key.
    """
    if spec is None or spec == "auto":
        return copy.deepcopy(_package_family(family_for_dataset(dataset)))
    s = str(spec)
    if s in FAMILIES:
        return copy.deepcopy(_package_family(s))
    user = _user_file(str(Path(s).expanduser().resolve()))
    base = copy.deepcopy(_package_family(str(user.get("family") or "correctness")))
    for section in ("geval", "flask"):
        if section in user:
            if not isinstance(user[section], dict):
                raise RubricError(f"{s}: key '{section}' must be a mapping")
            base[section].update(copy.deepcopy(user[section]))
    if "description" in user:
        base["description"] = user["description"]
    base["source"] = s
    _validate(base, s)
    return base


def _validate(r: dict[str, Any], where: str) -> None:
    g = r["geval"]
    if not isinstance(g.get("criteria"), list) or not g["criteria"]:
        raise RubricError(f"{where}: geval.criteria must be a non-empty list")
    for i, c in enumerate(g["criteria"]):
        if not isinstance(c, dict) or not c.get("name"):
            raise RubricError(f"{where}: geval.criteria[{i}] needs a 'name' (and a 'description')")
    f = r["flask"]
    if not isinstance(f.get("criteria"), list) or not f["criteria"]:
        raise RubricError(f"{where}: flask.criteria must be a non-empty list")
    names = []
    for i, c in enumerate(f["criteria"]):
        if not isinstance(c, dict) or not c.get("name") or not c.get("question"):
            raise RubricError(f"{where}: flask.criteria[{i}] needs 'name' and 'question'")
        names.append(str(c["name"]))
    if len(set(names)) != len(names):
        raise RubricError(f"{where}: flask criterion names must be unique, got {names}")


#: protocol options a user rubric file may set in ``geval.options`` / ``flask.options``
OPTION_KEYS: tuple[str, ...] = ("scale", "allows_tie", "on_contradiction", "max_tokens")


def protocol_options(spec: str | Path | None, section: str) -> dict[str, Any]:
    """The ``options`` mapping of ``section`` (``geval`` or ``flask``) in a user rubric file, so a
    run config can choose them through ``geval@FILE`` (e.g. ``on_contradiction: scores``)."""
    if spec is None or str(spec) == "auto" or str(spec) in FAMILIES:
        return {}
    opts = load_rubric(spec)[section].get("options") or {}
    if not isinstance(opts, dict):
        raise RubricError(f"{spec}: key '{section}.options' must be a mapping")
    unknown = set(opts) - set(OPTION_KEYS)
    if unknown:
        raise RubricError(f"{spec}: unknown key(s) {sorted(unknown)} in '{section}.options' "
                          f"(allowed: {', '.join(OPTION_KEYS)})")
    return dict(opts)


def build_rubric_protocol(cls: Any, section: str, *, template_path: str | Path | None = None,
                          family: str | None = None, **options: Any) -> Any:
    """Shared registry factory of the rubric protocols (``geval``, ``flask`` and their
    ``-correctness`` / ``-instruction`` variants).  ``template_path`` is an alias of ``rubric`` (a
    YAML file); ``family`` presets the built-in rubric when no file is given; the file's
    ``SECTION.options`` are defaults that explicit options override."""
    if template_path is None and family is not None:
        options.setdefault("rubric", family)
    if template_path is not None and "rubric" not in options:
        options["rubric"] = template_path
    return cls(**{**protocol_options(options.get("rubric"), section), **options})
