"""A report runs its matrix products on one BLAS thread (``report.build.one_blas_thread``): OpenBLAS's
threads made reliability of the 5.4M-judgment run cost 20.1 s of CPU against 9.5 s with one thread, and
a figure from a BLAS fit (Platt scaling's ECE) changed in its last digits with the number of cores.  The
limit holds inside the report's jobs and is lifted after it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from verdictlab.report import build

threadpoolctl = pytest.importorskip("threadpoolctl")


def _blas_threads() -> list[int]:
    return [int(i["num_threads"]) for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]


def test_the_report_computes_its_figures_on_one_blas_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from verdictlab.testing.synthetic_run import write_synthetic_run

    if not _blas_threads():
        pytest.skip("numpy here links no BLAS library threadpoolctl can see")
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):   # a machine with two cores or more
        before = _blas_threads()
        seen: list[list[int]] = []
        real = build.reliability

        def watched(*args: Any, **kwargs: Any) -> pd.DataFrame:
            seen.append(_blas_threads())
            return real(*args, **kwargs)

        monkeypatch.setattr(build, "reliability", watched)
        write_synthetic_run(tmp_path / "run", datasets=("d1",), protocols=("direct",), temperatures=(0.0,),
                            n_items=6, seed=1).close()
        report = build.build_report(tmp_path / "run")
        assert report.cells
        assert seen and all(t == [1] * len(t) for t in seen), seen
        assert _blas_threads() == before                  # lifted once the report is built
