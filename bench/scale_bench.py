"""Bench: one run of 54 thousand, 540 thousand and 5.4 million judgments on this machine.

For each size it writes a synthetic judgment log (vectorised with numpy and pyarrow: a Parquet file of
one judgment per row and a JSON Lines file of the items), then times, each as a child process (wall
time, CPU time and peak memory of the child -- ``/usr/bin/time``'s maximum resident set size):

- ``verdictlab import parquet LOG --run-dir RUN --items jsonl --items-path ITEMS`` (the real importer and
  store writer),
- ``verdictlab report RUN --json`` (every figure, interval and registered analysis),
- ``verdictlab report RUN --html OUT`` (and the size of the HTML file),
- ``verdictlab export RUN --format parquet --partition-by judge,dataset``.

Sizes (the seed audit's grid is 3 judges x 3 protocols x 2 orders x 3 repetitions = 54 judgments per pair):

====== ============================================================================== ==========
size   grid                                                                           judgments
====== ============================================================================== ==========
54k    1,000 pairs x 3 judges x 3 protocols x 1 temperature x 2 orders x 3 reps          54,000
540k   10,000 pairs, the same grid                                                      540,000
5.4M   1,000 pairs x 18 judges x 5 protocols x 3 temperatures x 2 orders x 10 reps   5,400,000
5.4Mp  100,000 pairs, the 54k grid (same cells as 540k, ten times the pairs)          5,400,000
====== ============================================================================== ==========

Memory is measured as a user's machine feels it: :class:`MemorySampler` reads ``/proc/<pid>/smaps_rollup`` of
the command and every process it forks at 20 Hz and keeps the peak of their summed PSS (proportional set
size: a page two processes share counts half in each) and of their summed anonymous memory, beside
``/usr/bin/time``'s peak RSS of the largest process.  Those reads cost the kernel a walk of every page
table (0.77 of a core at 20 Hz over the two processes of a 5.4M report), so each step but the import runs
twice: timed with only a cheap RSS reading (for ``--max-rss-gb``), then again for its memory
(``--one-pass``: one run for both, its times then include the sampler's cost).

It prints every figure, its ratio to the 540k run of the same invocation (same machine), the growth
exponent ``log(t / t_540k) / log(n / n_540k)`` (1.0 = linear) of wall time and of CPU time (the one to
read on a shared, loaded machine), and the machine load (1-minute load average before and after each
step).  A child whose memory passes ``--max-rss-gb`` is stopped and
reported as such (the figure is then "over the limit", not a time).  Prints, never asserts.

    python bench/scale_bench.py                       # 54k and 540k
    python bench/scale_bench.py --sizes 540k,5.4M     # the issue's targets: 5.4M import < 5 min,
                                                      # report --json and --html < 60 s, < 4 GB each
    python bench/scale_bench.py --sizes 5.4Mp --steps "report --json" --root DIR --baseline-src OLD/src
                                                      # before / after in one run: each step first with
                                                      # the tree on PYTHONPATH, then with this one
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

BASELINE = "540k"
STEPS = ("import", "report --json", "report --html", "export --partition-by")


@dataclass(frozen=True)
class Grid:
    pairs: int
    judges: int
    protocols: int
    temperatures: int
    reps: int
    datasets: int = 1

    @property
    def n(self) -> int:
        return self.pairs * self.datasets * self.judges * self.protocols * self.temperatures * 2 * self.reps


GRIDS = {
    "54k": Grid(pairs=1_000, judges=3, protocols=3, temperatures=1, reps=3),
    "540k": Grid(pairs=10_000, judges=3, protocols=3, temperatures=1, reps=3),
    "5.4M": Grid(pairs=1_000, judges=18, protocols=5, temperatures=3, reps=10),
    "5.4Mp": Grid(pairs=100_000, judges=3, protocols=3, temperatures=1, reps=3),
}
PROTOCOLS = ("direct", "vf-json", "vf-xml", "cot-json", "cot-xml")
TEMPERATURES = (0.0, 0.7, 1.0)


# -- the synthetic log ------------------------------------------------------------------------------

def judgment_table(grid: Grid, *, seed: int = 0):  # -> pyarrow.Table
    """Every judgment of ``grid`` as an Arrow table in the tabular importer's columns.

    Per (judge, protocol): skill, position bias, noise (growing with temperature) and a parse-failure
    rate; per (judge, protocol, temperature, item, order) the judge settles on an answer (right with
    probability skill, else the first-shown one with probability bias, else wrong); each repetition flips
    it with probability noise; 1% of verdicts are ties and a few are unparsed (no verdict)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    rng = np.random.default_rng(seed)
    n_items = grid.pairs * grid.datasets
    J, P, T, R = grid.judges, grid.protocols, grid.temperatures, grid.reps
    shape = (J, P, T, n_items, 2, R)
    j, p, t, i, o, r = (a.ravel() for a in np.indices(shape, dtype=np.int32))
    label_a = rng.random(n_items) < 0.5
    skill = rng.uniform(0.6, 0.9, (J, P))
    bias = rng.uniform(0.0, 0.35, (J, P))
    noise = rng.uniform(0.0, 0.1, (J, P))[:, :, None] + 0.15 * np.asarray(TEMPERATURES[:T])[None, None, :]
    fail = rng.uniform(0.0, 0.03, (J, P))
    settle = (J, P, T, n_items, 2)
    right = rng.random(settle) < skill[:, :, None, None, None]
    first = rng.random(settle) < bias[:, :, None, None, None]
    shown_first_is_a = np.array([True, False])[None, None, None, None, :]          # AB shows A first
    settled_a = np.where(right, label_a[None, None, None, :, None], ~label_a[None, None, None, :, None])
    settled_a = np.where(first & ~right, shown_first_is_a, settled_a)
    flip = rng.random(j.shape, dtype=np.float32) < noise[j, p, t]
    a_won = settled_a[j, p, t, i, o] ^ flip
    verdict = np.where(a_won, 0, 1).astype(np.int8)                                # 0 A, 1 B, 2 tie, 3 none
    verdict[rng.random(j.shape, dtype=np.float32) < 0.01] = 2
    verdict[rng.random(j.shape, dtype=np.float32) < fail[j, p]] = 3
    words = pa.array(["A", "B", "tie", None])
    verdict_col = pc.take(words, pa.array(verdict))
    datasets = [f"bench{d}" for d in range(grid.datasets)]
    item_ids = pa.array([f"{datasets[k // grid.pairs]}-{k % grid.pairs}" for k in range(n_items)])
    judges = pa.array([f"sim:bench-judge-{k:02d}" for k in range(J)])
    raw = pc.binary_join_element_wise(
        pc.take(pa.array(['{"winner": "A", "why": "', '{"winner": "B", "why": "', '{"winner": "tie", "why": "',
                          "I cannot decide between these two answers, "]), pa.array(verdict)),
        pc.cast(pa.array(np.arange(len(j), dtype=np.int64) * 7919 % 1_000_003), pa.string()),
        pa.scalar(' -- the first answer is more precise"}'), "")
    table = pa.table({
        "item_id": pc.take(item_ids, pa.array(i)),
        "dataset": pc.take(pa.array(datasets), pa.array(i // grid.pairs)),
        "judge": pc.take(judges, pa.array(j)),
        "protocol": pc.take(pa.array(PROTOCOLS[:P]), pa.array(p)),
        "temperature": pc.take(pa.array(TEMPERATURES[:T], pa.float64()), pa.array(t)),
        "order": pc.take(pa.array(["AB", "BA"]), pa.array(o)),
        "rep": pa.array(r.astype(np.int64)),
        "verdict": verdict_col,
        "label": pc.take(pa.array(["A", "B"]), pa.array((~label_a).astype(np.int8)[i])),
        "raw_output": raw,
        "latency_s": pa.array(rng.uniform(0.2, 2.0, len(j)).astype(np.float64)),
        "tokens_in": pa.array(rng.integers(300, 900, len(j))),
        "tokens_out": pa.array(rng.integers(5, 60, len(j))),
    })
    return table


def items_lines(grid: Grid, table) -> list[str]:  # noqa: ANN001 - pyarrow.Table
    """One JSON line per item (question, responses of varied length, label), for ``--items jsonl``."""
    rng = np.random.default_rng(1)
    first = table.slice(0, grid.pairs * grid.datasets * 2 * grid.reps)      # judge 0, protocol 0, temp 0
    ids = first.column("item_id").to_pylist()[:: 2 * grid.reps]
    labels = first.column("label").to_pylist()[:: 2 * grid.reps]
    lengths = rng.integers(20, 400, (len(ids), 2))
    return [json.dumps({"item_id": k, "question": f"Which answer to question {k} is better?",
                        "response_a": "a" * int(la), "response_b": "b" * int(lb), "label": lab,
                        "category": ("coding", "writing", "reasoning")[n % 3]})
            for n, (k, lab, (la, lb)) in enumerate(zip(ids, labels, lengths, strict=True))]


# -- timing children ------------------------------------------------------------------------------------

@dataclass
class Figure:
    wall: float
    cpu: float
    peak_gb: float
    rc: int
    note: str = ""
    #: peak of the summed proportional set size of the command and every process it forks (a large report
    #: forks a second lane; shared pages counted once, as a user's machine feels them), sampled at
    #: :data:`PSS_HZ` from /proc/<pid>/smaps_rollup
    tree_gb: float = math.nan
    #: peak of the summed anonymous memory of those processes (private or shared, counted in each)
    anon_gb: float = math.nan
    #: how many samples the peak was taken over, and the sampling rate reached
    samples: int = 0
    hz: float = math.nan

    @property
    def ok(self) -> bool:
        return self.rc == 0


def _load() -> float:
    return os.getloadavg()[0]


def run_child(cmd: list[str], *, max_rss_gb: float, stdout_path: Path | None = None,
              env: dict[str, str] | None = None, pss: bool = True) -> Figure:
    """Run ``cmd`` under ``/usr/bin/time`` (peak RSS, CPU) while :class:`MemorySampler` samples the PSS of it
    and every process it forks (``pss=False``: only their RSS, a few times a second, for the limit); stop
    it when its RSS passes the limit."""
    fmt = "%e %U %S %M"
    time_out = Path(tempfile.mkstemp(prefix="scale-time-")[1])
    full = ["/usr/bin/time", "-f", fmt, "-o", str(time_out), *cmd]
    with tempfile.TemporaryFile() as err, (stdout_path.open("wb") if stdout_path else open(os.devnull, "wb")) as out:
        proc = subprocess.Popen(full, stdout=out, stderr=err, env=env)
        sampler = MemorySampler(proc.pid, max_rss_gb=max_rss_gb, pss=pss)
        sampler.start()
        rc = proc.wait()
        sampler.stop()
        err.seek(0)
        lines = err.read().decode(errors="replace").strip().splitlines()
    parts = time_out.read_text().split()[-4:]
    time_out.unlink()
    wall, user, sys_, kb = (float(x) for x in parts) if len(parts) == 4 else (math.nan,) * 4
    note = ""
    if sampler.killed_at:
        note = f"stopped at {sampler.killed_at:.1f} GB (over --max-rss-gb)"
    elif rc != 0:
        note = next((ln for ln in reversed(lines) if not ln.startswith("Command exited")), "")[:200]
    return Figure(wall=wall, cpu=user + sys_, peak_gb=kb / 1e6, rc=rc, note=note,
                  tree_gb=sampler.peak_pss / 1e9 if pss else math.nan,
                  anon_gb=sampler.peak_anon / 1e9 if pss else math.nan, samples=sampler.samples, hz=sampler.rate)


def measure(cmd: list[str], *, max_rss_gb: float, stdout_path: Path | None = None,
            env: dict[str, str] | None = None, two_pass: bool = True) -> Figure:
    """Time and memory of ``cmd``: with ``two_pass``, the time from a run that samples nothing but RSS and
    the memory from a second run sampling PSS at :data:`PSS_HZ` -- reading ``smaps_rollup`` of two 2.5 GB
    processes 20 times a second took the sampler 0.77 of a core (5.4M ``report --format json``: 61.0 s of
    wall with it at load 2.6 against 36.7 s without, at load 1), so a run sampling PSS is not timed."""
    if not two_pass:
        return run_child(cmd, max_rss_gb=max_rss_gb, stdout_path=stdout_path, env=env)
    timed = run_child(cmd, max_rss_gb=max_rss_gb, stdout_path=stdout_path, env=env, pss=False)
    if not timed.ok:
        return timed
    mem = run_child(cmd, max_rss_gb=max_rss_gb, env=env)
    if not mem.ok:
        return mem
    return Figure(wall=timed.wall, cpu=timed.cpu, peak_gb=timed.peak_gb, rc=0, tree_gb=mem.tree_gb,
                  anon_gb=mem.anon_gb, samples=mem.samples, hz=mem.hz)


#: samples a second of the memory of a command's processes (the issue's "as a user's machine feels it")
PSS_HZ = 20.0
#: samples a second of a timed run's RSS (for --max-rss-gb only: /proc/<pid>/statm costs next to nothing)
RSS_HZ = 5.0


def statm_rss(pid: int) -> int:
    """Resident set size of one process in bytes from /proc/<pid>/statm (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, IndexError, ValueError):
        return 0


def smaps_rollup(pid: int) -> tuple[int, int, int]:
    """``(PSS, anonymous, RSS)`` of one process in bytes, from /proc/<pid>/smaps_rollup ((0, 0, 0) when it
    is gone)."""
    pss = anon = rss = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            for ln in f:
                if ln.startswith(b"Rss:"):
                    rss = int(ln.split()[1]) * 1024
                elif ln.startswith(b"Pss:"):
                    pss = int(ln.split()[1]) * 1024
                elif ln.startswith(b"Anonymous:"):
                    anon = int(ln.split()[1]) * 1024
    except OSError:
        return 0, 0, 0
    return pss, anon, rss


def process_tree(pid: int) -> list[int]:
    """``pid`` and every process below it, from each thread's ``/proc/<pid>/task/<tid>/children`` (Linux):
    a few small reads: 0.06 ms a listing, against 7.3 ms for psutil's ``children(recursive=True)``, which
    reads every process of the machine (122 on the shared one measured) -- a sample's budget is 50 ms."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            tids = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{p}/task/{tid}/children", "rb") as f:
                    todo.extend(int(c) for c in f.read().split())
            except OSError:
                continue
    return out


class MemorySampler:
    """Samples, at :data:`PSS_HZ`, the summed PSS and anonymous memory of process ``pid`` and every process it
    forks (:func:`process_tree`), keeping the peaks; kills them all when their summed RSS passes
    ``max_rss_gb``.  A sample reads a few small files per process; its own cost is in ``rate`` (the rate it
    reached) beside the peak."""

    def __init__(self, pid: int, *, max_rss_gb: float, hz: float = PSS_HZ, pss: bool = True) -> None:
        self.pid, self.max_rss_gb, self.pss = pid, max_rss_gb, pss
        self.period = 1.0 / (hz if pss else RSS_HZ)
        self.peak_pss = self.peak_anon = 0
        self.samples = 0
        self.killed_at = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._t0 = self._t1 = 0.0

    @property
    def rate(self) -> float:
        return self.samples / (self._t1 - self._t0) if self._t1 > self._t0 else math.nan

    def start(self) -> None:
        self._t0 = time.perf_counter()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        self._t1 = time.perf_counter()

    def _run(self) -> None:
        # the sampler ahead of the measured command on a loaded machine: at load 5 on 2 cores it reached
        # 9 Hz at the default priority (a 2.5 GB process's smaps_rollup takes the kernel a few ms to sum)
        with contextlib.suppress(OSError):            # not permitted: the rate printed beside the peak says so
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), -10)
        while not self._stop.is_set():
            start = time.perf_counter()
            pids = process_tree(self.pid)
            figures = [smaps_rollup(p) if self.pss else (0, 0, statm_rss(p)) for p in pids]
            pss, anon, rss = (sum(f[k] for f in figures) for k in range(3))
            self.peak_pss, self.peak_anon = max(self.peak_pss, pss), max(self.peak_anon, anon)
            self.samples += 1
            if rss > self.max_rss_gb * 1e9:
                self.killed_at = rss / 1e9
                for p in pids[1:]:
                    with contextlib.suppress(OSError):
                        os.kill(p, signal.SIGKILL)
                return
            self._stop.wait(max(0.0, self.period - (time.perf_counter() - start)))


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "verdictlab.cli.main", *args]


@dataclass
class SizeResult:
    name: str
    n: int
    gen_s: float
    figures: dict[str, Figure]
    html_mb: float
    loads: dict[str, tuple[float, float]]


def bench_size(name: str, root: Path, *, max_rss_gb: float, bootstrap: int,
               steps_wanted: tuple[str, ...] = STEPS, baseline_src: Path | None = None,
               two_pass: bool = True) -> SizeResult:
    import pyarrow.parquet as pq

    grid = GRIDS[name]
    work = root / name
    run = work / "run"
    gen_s = 0.0
    if "import" not in steps_wanted and (run / "run.sqlite").exists():
        print(f"[{name}] reusing the run imported in {run}", flush=True)   # e.g. --steps "report --json"
    else:
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        t0 = time.perf_counter()
        table = judgment_table(grid)
        pq.write_table(table, work / "judgments.parquet")
        (work / "items.jsonl").write_text("\n".join(items_lines(grid, table)) + "\n")
        del table
        gen_s = time.perf_counter() - t0
        print(f"[{name}] {grid.n:,} judgments generated in {gen_s:.1f} s", flush=True)
    steps = {
        "import": cli("import", "parquet", str(work / "judgments.parquet"), "--run-dir", str(run),
                      "--items", "jsonl", "--items-path", str(work / "items.jsonl")),
        "report --json": cli("report", str(run), "--format", "json", "--bootstrap", str(bootstrap)),
        "report --html": cli("report", str(run), "--format", "html", "-o", str(work / "report.html"),
                             "--bootstrap", str(bootstrap)),
        "export --partition-by": cli("export", str(run), "--format", "parquet", "--partition-by",
                                     "judge,dataset", "--out", str(work / "export")),
    }
    figures: dict[str, Figure] = {}
    loads: dict[str, tuple[float, float]] = {}
    for step, cmd in steps.items():
        if step not in steps_wanted:
            continue
        out_path = work / "report.json" if step == "report --json" else None
        if baseline_src is not None and step != "import":
            base = measure(cmd, max_rss_gb=max_rss_gb, stdout_path=out_path, two_pass=two_pass,
                           env={**os.environ, "PYTHONPATH": str(baseline_src)})
            print(f"[{name}] {step} with {baseline_src}: {base.wall:.1f} s wall, {base.cpu:.1f} s CPU, peak PSS "
                  f"{base.tree_gb:.2f} GB ({base.hz:.0f} Hz)", flush=True)
            figures[f"{step} (baseline)"] = base
        before = _load()
        fig = measure(cmd, max_rss_gb=max_rss_gb, stdout_path=out_path, two_pass=two_pass and step != "import")
        loads[step] = (before, _load())
        figures[step] = fig
        if f"{step} (baseline)" in figures:
            base = figures[f"{step} (baseline)"]
            print(f"[{name}] {step} against {baseline_src}: wall x{fig.wall / base.wall:.2f}, CPU "
                  f"x{fig.cpu / base.cpu:.2f}, peak PSS x{fig.tree_gb / base.tree_gb:.2f}", flush=True)
        status = "" if fig.ok else f"  FAILED rc={fig.rc}: {fig.note}"
        print(f"[{name}] {step}: {fig.wall:.1f} s wall, {fig.cpu:.1f} s CPU, peak RSS {fig.peak_gb:.2f} GB (largest "
              f"process); all its processes: peak PSS {fig.tree_gb:.2f} GB, anonymous {fig.anon_gb:.2f} GB "
              f"({fig.samples} samples, {fig.hz:.0f} Hz); load {before:.2f} -> {loads[step][1]:.2f}{status}",
              flush=True)
        if step == "import" and not fig.ok:
            break
    html = work / "report.html"
    html_mb = html.stat().st_size / 1e6 if html.exists() else math.nan
    return SizeResult(name, grid.n, gen_s, figures, html_mb, loads)


def exponent(a: float, b: float, na: int, nb: int) -> float:
    """Growth exponent k in t ~ n^k between two sizes (1.0 = linear)."""
    if not (a > 0 and b > 0) or na == nb:
        return math.nan
    return math.log(b / a) / math.log(nb / na)


def print_summary(results: list[SizeResult]) -> None:
    base = next((r for r in results if r.name == BASELINE), None)
    print("\nsize    judgments   step                    wall s   ratio   exponent  CPU s   ratio  exponent"
          "  RSS GB  PSS GB (all)  load")
    for r in results:
        for step in STEPS:
            f = r.figures.get(step)
            if f is None:
                continue
            bf = base.figures.get(step) if base else None
            both = bool(bf and base and bf.ok and f.ok)
            ratio = f.wall / bf.wall if both else math.nan  # type: ignore[union-attr]
            k = exponent(bf.wall, f.wall, base.n, r.n) if both else math.nan  # type: ignore[union-attr]
            cpu_ratio = f.cpu / bf.cpu if both else math.nan  # type: ignore[union-attr]
            cpu_k = exponent(bf.cpu, f.cpu, base.n, r.n) if both else math.nan  # type: ignore[union-attr]
            lo, hi = r.loads[step]
            flag = "" if f.ok else f"  ({f.note or 'failed'})"
            print(f"{r.name:<7} {r.n:>10,}  {step:<22} {f.wall:>7.1f} {ratio:>7.2f} {k:>9.2f} {f.cpu:>7.1f} "
                  f"{cpu_ratio:>6.2f} {cpu_k:>9.2f} {f.peak_gb:>8.2f} {f.tree_gb:>12.2f}  {lo:.1f}-{hi:.1f}{flag}")
        print(f"{r.name:<7} {r.n:>10,}  {'HTML size':<22} {r.html_mb:>7.1f} MB; log generated in {r.gen_s:.1f} s")
    print(f"\nratios and exponents against the {BASELINE} run of this invocation; machine: {os.cpu_count()} "
          f"CPU(s), 1-minute load average now {_load():.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--sizes", default="54k,540k", help=f"comma-separated, of {', '.join(GRIDS)}")
    ap.add_argument("--root", type=Path, default=None,
                    help="work directory (kept); default a temporary one.  Without the import step, a run already "
                         "imported in ROOT/SIZE/run is reused")
    ap.add_argument("--max-rss-gb", type=float, default=8.0, help="stop a child whose memory passes this")
    ap.add_argument("--bootstrap", type=int, default=1000, help="resamples per interval (the report default)")
    ap.add_argument("--steps", default=",".join(STEPS), help=f"comma-separated, of {', '.join(STEPS)}")
    ap.add_argument("--baseline-src", type=Path, default=None,
                    help="a verdictlab source tree (its src/ folder) to run each step with first, on PYTHONPATH, "
                         "for a ratio before / after measured in one invocation")
    ap.add_argument("--one-pass", action="store_true",
                    help="time each step in the run that samples its PSS (half the time; the sampler's reads "
                         "slow the command down)")
    args = ap.parse_args()
    steps = tuple(s.strip() for s in args.steps.split(",") if s.strip())
    if set(steps) - set(STEPS):
        ap.error(f"--steps must name only {list(STEPS)}")
    if "import" not in steps and args.root is None:
        ap.error("without the import step --root must name where the runs were imported (ROOT/SIZE/run)")
    sizes = [s.strip() for s in args.sizes.split(",") if s.strip()]
    unknown = [s for s in sizes if s not in GRIDS]
    if unknown:
        ap.error(f"unknown size(s) {unknown}; known: {list(GRIDS)}")
    if BASELINE not in sizes and any(s != BASELINE for s in sizes):
        print(f"note: without {BASELINE} there are no ratios or exponents")
    root = args.root or Path(tempfile.mkdtemp(prefix="scale-bench-"))
    results = [bench_size(s, root, max_rss_gb=args.max_rss_gb, bootstrap=args.bootstrap, steps_wanted=steps,
                          baseline_src=args.baseline_src, two_pass=not args.one_pass) for s in sizes]
    print_summary(results)
    if args.root is None:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
