"""The Markdown docs as tests: every ```bash / ```sh / ```console and ```python block of README.md and
docs/*.md, in the order it appears, run in a workspace per file.

A block that needs network, a GPU, a key, a long set-up or that starts a blocking server is marked on the
line before its fence::

    <!-- doc-test: skip REASON -->

and skipped with that reason (counted, and the count printed at the end of the session).

The workspace of a file is a fresh directory ``work/`` whose ``examples`` is the repository's examples
folder, so ``examples/x.yaml`` resolves as it does from a checkout -- and nothing above the checkout is
reachable: a block runs as it would for a reader of a fresh clone.  The blocks of one file share it, one
after the other; ``verdictlab`` and ``python`` are the test session's, with the checkout's ``src`` first on
``PYTHONPATH``.  A ```console block runs its ``$ `` lines; the other lines are output and are not checked.

A block that fetches a public benchmark (``verdictlab datasets fetch NAME``, :func:`fetched_names`) runs
against a local mirror of the shared benchmark data (``VERDICTLAB_DATASETS_MIRROR``, set by the runner),
into the session's cache; where that data is absent the block is skipped with the reason (it needs the
network).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RUN_LANGS = {"bash": "bash", "sh": "bash", "console": "console", "python": "python"}
_FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>[\w+-]*)[^\n]*$")
_SKIP = re.compile(r"^\s*<!--\s*doc-test:\s*skip\s+(?P<reason>.+?)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    """One runnable block: where it is, what it runs, and why it is skipped (if it is)."""

    doc: str             # path relative to the repository, e.g. "docs/report.md"
    line: int            # line of the opening fence (1-based)
    lang: str            # bash | console | python
    code: str
    skip: str | None = None

    @property
    def id(self) -> str:
        return f"{self.doc}:{self.line}"


def doc_files() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def blocks(path: Path) -> list[Block]:
    """The runnable blocks of one Markdown file, in order (indented fences, as in list items, included)."""
    lines = path.read_text(encoding="utf-8").split("\n")
    out: list[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, lang, start = len(m.group("indent")), m.group("lang").lower(), i
        i += 1
        body: list[str] = []
        while i < len(lines) and not re.match(rf"^ {{0,{indent}}}```\s*$", lines[i]):
            body.append(lines[i][indent:] if lines[i][:indent].strip() == "" else lines[i])
            i += 1
        i += 1
        if lang in RUN_LANGS:
            skip = _SKIP.match(lines[start - 1]) if start else None
            out.append(Block(str(path.relative_to(REPO)), start + 1, RUN_LANGS[lang], "\n".join(body) + "\n",
                             skip.group("reason") if skip else None))
    return out


def skip_markers_without_a_block(path: Path) -> list[int]:
    """Lines of skip markers that are not directly followed by a runnable block's fence (a marker that
    skips nothing is a typo)."""
    lines = path.read_text(encoding="utf-8").split("\n")
    bad = []
    for n, line in enumerate(lines):
        if _SKIP.match(line):
            nxt = _FENCE.match(lines[n + 1]) if n + 1 < len(lines) else None
            if not nxt or nxt.group("lang").lower() not in RUN_LANGS:
                bad.append(n + 1)
    return bad


def workspace(root: Path) -> Path:
    """A fresh working directory with ``examples/`` reachable."""
    work = root / "work"
    work.mkdir(parents=True)
    (work / "examples").symlink_to(REPO / "examples", target_is_directory=True)
    return work


def environment(mirror: str | None = None) -> dict[str, str]:
    """The session's interpreter and ``verdictlab`` first on PATH, the checkout's ``src`` first on
    PYTHONPATH, no debug, no progress bar colours; ``mirror`` the datasets mirror (else none at all: a
    block never reaches upstream)."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), *filter(None, [env.get("PYTHONPATH")])])
    env.pop("VERDICTLAB_DEBUG", None)
    env["VERDICTLAB_DATASETS_MIRROR"] = mirror or "http://127.0.0.1:9/no-mirror-in-the-tests"
    env.update({"NO_COLOR": "1", "TERM": "dumb", "COLUMNS": "160"})
    return env


#: options of ``datasets fetch`` that take a value (the value is not a dataset name)
_FETCH_VALUED = {"--to", "--mirror", "--timeout", "--format"}


def fetched_names(block: Block) -> list[str]:
    """The datasets a block fetches: the NAME arguments of its ``verdictlab datasets fetch`` commands."""
    names: list[str] = []
    for line in block.code.splitlines():
        line = line.removeprefix("$ ") if block.lang == "console" else line
        try:
            words = shlex.split(line, comments=True)
        except ValueError:
            continue
        for i in range(len(words) - 2):
            if words[i:i + 3] != ["verdictlab", "datasets", "fetch"]:
                continue
            rest = words[i + 3:]
            skip = False
            for w in rest:
                if w in ("&&", "||", ";", "|"):
                    break
                if skip:
                    skip = False
                elif w in _FETCH_VALUED:
                    skip = True
                elif not w.startswith("-"):
                    names.append(w)
    return list(dict.fromkeys(names))


def command(block: Block) -> list[str]:
    if block.lang == "python":
        return [sys.executable, "-c", block.code]
    code = block.code
    if block.lang == "console":
        code = "\n".join(ln[2:] for ln in code.splitlines() if ln.startswith("$ ")) + "\n"
    return ["bash", "-e", "-o", "pipefail", "-c", code]


def run(block: Block, cwd: Path, *, mirror: str | None = None,
        timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command(block), cwd=cwd, env=environment(mirror), capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


#: what the session saw: (block id, reason) of every skipped block, and the ids of the blocks run
SKIPPED: list[tuple[str, str]] = []
RAN: list[str] = []


def summary_line() -> str | None:
    if not SKIPPED and not RAN:
        return None
    reasons: dict[str, int] = {}
    for _, reason in SKIPPED:
        reasons[reason] = reasons.get(reason, 0) + 1
    listed = "; ".join(f"{n} x {r}" for r, n in sorted(reasons.items(), key=lambda kv: -kv[1]))
    return f"doc blocks: {len(RAN)} run, {len(SKIPPED)} skipped" + (f" ({listed})" if listed else "")
