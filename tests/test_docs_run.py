"""Docs that run: every shell and Python block of README.md and docs/*.md is executed, in order, in one
workspace per file (tests/_doc_blocks.py).  A block that needs network, a GPU, a key, a long set-up or
starts a blocking server carries ``<!-- doc-test: skip REASON -->`` on the line before its fence; it is
skipped with that reason and counted in the session's last lines.  A block that fetches a public benchmark
(``verdictlab datasets fetch NAME``) runs against the local mirror of the shared benchmark data, and is
skipped with the reason (it needs the network) where that data is absent."""

from __future__ import annotations

from pathlib import Path

import pytest

import _doc_blocks as docs
from _mirror import BenchmarkMirror

BLOCKS = [b for f in docs.doc_files() for b in docs.blocks(f)]
_WORK: dict[str, Path] = {}
_BROKEN: dict[str, str] = {}


@pytest.fixture(scope="session")
def docs_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("docs-run")


def test_every_doc_has_its_blocks_found() -> None:
    found = {b.doc for b in BLOCKS}
    assert {"README.md", "docs/api-judges.md", "docs/report.md", "docs/cli.md"} <= found, sorted(found)


@pytest.mark.parametrize("path", docs.doc_files(), ids=lambda p: p.name)
def test_skip_markers_sit_on_the_line_before_a_block(path: Path) -> None:
    assert docs.skip_markers_without_a_block(path) == []


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: b.id)
def test_doc_block_runs(block: docs.Block, docs_root: Path, benchmark_mirror: BenchmarkMirror) -> None:
    if block.skip is not None:
        docs.SKIPPED.append((block.id, block.skip))
        pytest.skip(f"doc-test: skip {block.skip}")
    reason = benchmark_mirror.unfetchable(docs.fetched_names(block))
    if reason is not None:
        docs.SKIPPED.append((block.id, reason))
        pytest.skip(reason)
    if block.doc in _BROKEN:
        pytest.skip(f"an earlier block of {block.doc} failed ({_BROKEN[block.doc]})")
    if block.doc not in _WORK:
        _WORK[block.doc] = docs.workspace(docs_root / block.doc.replace("/", "_"))
    docs.RAN.append(block.id)
    res = docs.run(block, _WORK[block.doc], mirror=benchmark_mirror.url)
    if res.returncode != 0:
        _BROKEN[block.doc] = block.id
        pytest.fail(f"{block.id} exited {res.returncode}\n--- block\n{block.code}--- stdout (end)\n"
                    f"{res.stdout[-3000:]}\n--- stderr (end)\n{res.stderr[-3000:]}", pytrace=False)
