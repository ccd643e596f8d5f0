"""Nothing the project ships points outside its repository.

A user's clone has nothing beside it: no benchmark folder next to the checkout, no design notes of the
people who wrote it.  So README.md, docs/, examples/ and src/ never name a path above the checkout
(``../shared``, ``shared/data``, an absolute path of a development machine, a Markdown link or a command
argument that climbs out, a config whose file lies outside) and never cite a document that is not in the
repository (``DESIGN.md``).  The only place that may know an external data folder is the tests' data
locator (tests/conftest.py, ``VERDICTLAB_SHARED_DATA``); the public benchmarks reach users through
``verdictlab datasets fetch``.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
SHIPPED = ("README.md", "docs", "examples", "src")
#: names of things outside the repository: the benchmark folder beside the checkout, a development
#: machine's absolute paths, and documents the repository does not hold
OUTSIDE = re.compile(r"\.\./shared|shared/data|/work/|~/shared|DESIGN\.md")
_TEXT = {".md", ".py", ".yaml", ".yml", ".jsonl", ".json", ".txt", ".j2", ".html", ".css", ".toml", ".cmake"}


def shipped_files() -> list[Path]:
    """The tracked files of README.md, docs/, examples/ and src/ (a clone's files: no build output such
    as ``*.egg-info``); the files on disk when this is not a git checkout."""
    try:
        out = subprocess.run(["git", "ls-files", "-z", *SHIPPED], cwd=REPO, capture_output=True, check=True)
        files = [REPO / p for p in out.stdout.decode().split("\0") if p]
    except (OSError, subprocess.CalledProcessError):
        files = [p for s in SHIPPED for p in ([REPO / s] if (REPO / s).is_file() else (REPO / s).rglob("*"))
                 if p.is_file() and ".egg-info" not in str(p) and "__pycache__" not in p.parts]
    return [p for p in files if p.suffix in _TEXT and p.exists()]


def _outside(text: str) -> list[str]:
    return [f"line {text[: m.start()].count(chr(10)) + 1}: {m.group(0)!r}" for m in OUTSIDE.finditer(text)]


def test_the_scan_sees_the_shipped_files() -> None:
    names = {p.relative_to(REPO).as_posix() for p in shipped_files()}
    assert {"README.md", "docs/datasets.md", "examples/running.yaml", "src/verdictlab/stats/reliability.py",
            "src/verdictlab/analyses/definitions.py"} <= names


@pytest.mark.parametrize("path", shipped_files(), ids=lambda p: p.relative_to(REPO).as_posix())
def test_no_shipped_file_names_a_place_outside_the_repository(path: Path) -> None:
    assert _outside(path.read_text(encoding="utf-8", errors="replace")) == []


def test_the_check_catches_each_kind() -> None:
    """The patterns above, each caught (a check that could not fail would prove nothing)."""
    for text in ("verdictlab import llmbar ../shared/data/samples/x", "path: ../../shared/data/llmbar",
                 "Normative definitions: DESIGN.md", "see /work/shared/data", "datasets: [{path: shared/data/x}]"):
        assert _outside(text), text
    assert _outside("fine: docs/definitions.md, ../examples/running.yaml") == []


# -- Markdown: links and commands stay in the checkout --------------------------------------------------------

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^ *```[\w+-]*\n(.*?)^ *```", re.S | re.M)
_CLIMB = re.compile(r"(?<![\w.])\.\./")       # "../" (not the "..." of an elided path)


def _inside(path: Path) -> bool:
    return path.resolve() == REPO or REPO in path.resolve().parents


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_links_resolve_inside_the_repository(doc: Path) -> None:
    bad = []
    for m in _LINK.finditer(doc.read_text(encoding="utf-8")):
        target = m.group(1).split("#", 1)[0]
        if not target or re.match(r"^[a-z]+:", target):            # an anchor, https:, mailto:
            continue
        if not _inside(doc.parent / target) or not (doc.parent / target).exists():
            bad.append(m.group(1))
    assert bad == [], f"{doc.name}: links outside the repository or to nothing: {bad}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_commands_never_climb_above_the_checkout(doc: Path) -> None:
    """Blocks run from the root of a checkout, so a ``../`` in one leaves it."""
    text = doc.read_text(encoding="utf-8")
    bad = [ln.strip() for m in _FENCE.finditer(text) for ln in m.group(1).splitlines() if _CLIMB.search(ln)]
    assert bad == []


def test_the_climb_pattern_catches_a_parent_path() -> None:
    assert _CLIMB.search("verdictlab import llmbar ../data/x") and _CLIMB.search("--path=../x")
    assert not _CLIMB.search("``.../Natural/dataset.json``")


# -- examples: every file a config names is in the repository -------------------------------------------------

EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))


def _strings(node: object) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [s for v in node.values() for s in _strings(v)]
    if isinstance(node, list):
        return [s for v in node for s in _strings(v)]
    return []


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_an_example_names_only_files_inside_the_repository(path: Path) -> None:
    from verdictlab.engine.config import load_config

    cfg = load_config(path)
    for spec in cfg.datasets:
        resolved = cfg.resolved_path(spec)
        if resolved is not None:
            assert _inside(Path(resolved)) and Path(resolved).exists(), (path.name, spec.path)
    # any other value written as a path (a template, a probe's file) that climbs or is absolute
    for s in _strings(yaml.safe_load(path.read_text(encoding="utf-8"))):
        if s.startswith(("../", "/", "~")) or "/../" in s:
            assert _inside(path.parent / s), (path.name, s)
