"""Bench: import N judgments from JSON Lines into a fresh run store (issue 11: 500,000 in < 60 s on
2 cores).  Writes a synthetic JSONL (N rows: pairs x both orders x reps, canonical verdicts, labels,
raw outputs of ~80 characters, some unparsed), then times ``import_into("jsonl", ...)`` end to end,
its phases (read + row building, store write) and a re-import of the same file (the identical-row
no-op path).  With ``--parquet`` it also writes the same rows as Parquet and times the bulk path
(``import_into("parquet", ...)`` into an empty store) against the per-row Parquet import of the same
file, CPU time of this process for each, and prints the ratio.  Prints the machine load so the figure
can be read against it.

    .venv/bin/python bench/import_bench.py --rows 500000 [--parquet]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time
from pathlib import Path


def write_source(path: Path, n_rows: int, *, reps: int = 5, seed: int = 0) -> None:
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as fh:
        for k in range(n_rows):
            pair, rest = divmod(k, 2 * reps)
            order, rep = ("AB", "BA")[rest // reps], rest % reps
            v = rng.choice(("A", "B", "A", "B", "tie", None))
            fh.write(json.dumps({"item_id": f"item-{pair}", "judge": "gpt-x", "protocol": "vf-json",
                                 "dataset": "bench", "order": order, "rep": rep, "temperature": 0.7,
                                 "verdict": v, "label": "A" if pair % 3 else "B",
                                 "raw_output": f'{{"verdict": "{v}", "rationale": "because\u2028reasons {k}"}}',
                                 "latency_s": 0.5, "tokens_in": 420, "tokens_out": 31},
                                ensure_ascii=False) + "\n")


def parquet_paths(src: Path, root: Path) -> tuple[tuple[float, float], tuple[float, float]]:
    """(wall, CPU) of the bulk Parquet import and of the per-row Parquet import of the same rows."""
    import pyarrow.json as pj
    import pyarrow.parquet as pq

    from verdictlab.importers import get_importer, import_into
    from verdictlab.importers._batch import write_batch

    table = root / "judgments.parquet"
    pq.write_table(pj.read_json(src), table)
    out = []
    for name, run in (("bulk", lambda: import_into("parquet", table, run_dir=root / "run-bulk")),
                      ("rows", lambda: write_batch(get_importer("parquet")(table), root / "run-rows"))):
        t0, c0 = time.perf_counter(), time.process_time()
        res = run()
        out.append((time.perf_counter() - t0, time.process_time() - c0))
        assert res.n_inserted == res.n_rows, name
    return out[0], out[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=500_000)
    ap.add_argument("--keep", type=Path, default=None, help="write the source and run here (kept)")
    ap.add_argument("--parquet", action="store_true", help="also time the Parquet bulk path against per-row")
    args = ap.parse_args()

    from verdictlab.importers import get_importer, import_into
    from verdictlab.importers._batch import write_batch

    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        src = root / "judgments.jsonl"
        t0 = time.perf_counter()
        write_source(src, args.rows)
        t_gen = time.perf_counter() - t0
        load_before = os.getloadavg()
        t0, c0 = time.perf_counter(), time.process_time()
        batch = get_importer("jsonl")(src)
        t_read = time.perf_counter() - t0
        t1 = time.perf_counter()
        res = write_batch(batch, root / "run")
        t_write = time.perf_counter() - t1
        total = t_read + t_write
        cpu = time.process_time() - c0
        t0 = time.perf_counter()
        again = import_into("jsonl", src, run_dir=root / "run")
        t_again = time.perf_counter() - t0
        parquet = parquet_paths(src, root) if args.parquet else None
        load_after = os.getloadavg()
    print(f"rows: {res.n_rows:,} (inserted {res.n_inserted:,}, unparsed {res.n_unparsed:,}); "
          f"source written in {t_gen:.1f} s")
    print(f"import: {total:.1f} s  = read+build {t_read:.1f} s + store write {t_write:.1f} s "
          f"-> {res.n_rows / total:,.0f} rows/s; CPU time of this process {cpu:.1f} s  "
          f"(target: 500,000 in < 60 s)")
    print(f"re-import of the same file (identical -> no-op): {t_again:.1f} s, "
          f"n_identical={again.n_identical:,}, n_inserted={again.n_inserted}")
    if parquet:
        (bulk_s, bulk_cpu), (rows_s, rows_cpu) = parquet
        print(f"parquet, {res.n_rows:,} rows: bulk path {bulk_s:.1f} s ({bulk_cpu:.1f} s CPU), per-row path "
              f"{rows_s:.1f} s ({rows_cpu:.1f} s CPU): {rows_cpu / bulk_cpu:.1f}x less CPU")
    print(f"machine: {os.cpu_count()} CPU(s) visible; load average before {load_before[0]:.2f}, "
          f"after {load_after[0]:.2f} (1 min)")


if __name__ == "__main__":
    main()
