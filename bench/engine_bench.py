"""Throughput of the run engine against the fake OpenAI-compatible server, as ratios.

The fake server runs in a child process with a fixed latency and no faults, so its CPU does not
count; the engine (``run_trials``: request building, rate limits, retries, budget, parsing,
canonical mapping, SQLite writes) drives the real ``openai-compatible`` judge (``AsyncOpenAI``).

1. Concurrency sweep at a fixed latency L (default 50 ms): achieved calls/s against the ideal
   concurrency / L, as a ratio -- end to end, and in steady state (10th to 90th percentile of
   completions, without start-up and tail) -- and the client process's CPU time per call.
2. Near-zero latency: the same at concurrency 64 (and 16), where the client's CPU is the limit.
   Baselines in the same process: (a) the bare SDK -- ``chat.completions.create`` with its
   default transport under a semaphore, nothing else; (b) our judge's ``generate`` alone under a
   semaphore (its default client for ``http://``: the body posted on an aiohttp session,
   :func:`verdictlab.judges.openai_api.choose_transport`), and the same judge on the SDK's aiohttp
   and httpx clients; (c) the engine with the simulated judge (no HTTP at all), the engine's own cost per trial.
   The split says whether the engine or the HTTP client is the bottleneck.
3. ``--profile``: cProfile of the engine at near-zero latency, top functions by own time.

    .venv/bin/python bench/engine_bench.py [--latency 0.05] [--quick] [--profile]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import io
import os
import pstats
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

KEY = f"bench-{uuid.uuid4().hex}"  # generated: the fake server only compares it
KEY_ENV = "VL_BENCH_KEY"


@contextlib.contextmanager
def forced_transport(transport: str) -> Iterator[None]:
    """Judges built inside use ``transport`` (``VERDICTLAB_HTTP_TRANSPORT``)."""
    before = os.environ.get("VERDICTLAB_HTTP_TRANSPORT")
    os.environ["VERDICTLAB_HTTP_TRANSPORT"] = transport
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("VERDICTLAB_HTTP_TRANSPORT", None)
        else:
            os.environ["VERDICTLAB_HTTP_TRANSPORT"] = before


def server_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) of a child process, from /proc (Linux); 0 elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def make_items(n_items: int) -> dict[tuple[str, str], Any]:
    from verdictlab.core.items import PairItem

    out = {}
    for i in range(n_items):
        it = PairItem(item_id=f"b{i}", dataset="bench", question=f"Which answer to question {i} is better? " * 3,
                      response_a=f"The first answer, number {i}. " * 8,
                      response_b=f"The second answer, number {i}. " * 8, label=("A", "B")[i % 2])
        out[("bench", it.item_id)] = it
    return out


def run_engine(judge_id: str, n_trials: int, concurrency: int, folder: Path, *,
               profile: cProfile.Profile | None = None, executor: Any = None) -> dict[str, float]:
    """Judge ``n_trials`` (direct protocol, both orders) through ``run_trials``; wall, CPU, rows."""
    from verdictlab.core.design import expand_grid
    from verdictlab.engine import run_trials
    from verdictlab.engine.config import JudgeSpec
    from verdictlab.judges import make_judge
    from verdictlab.protocols import get_protocol
    from verdictlab.store import RunStore

    items = make_items((n_trials + 1) // 2)
    trials = list(expand_grid(judges=[judge_id], items_by_dataset={"bench": [k[1] for k in items]},
                              protocols=["direct"], orders=("AB", "BA")))[:n_trials]
    judge = make_judge(judge_id)
    done_at: list[float] = []
    inner = judge.generate

    async def timed(request: Any) -> Any:      # completion times, for the steady-state rate
        resp = await inner(request)
        done_at.append(time.perf_counter())
        return resp

    judge.generate = timed  # type: ignore[method-assign]
    spec = JudgeSpec(id=judge_id, concurrency=concurrency, timeout_s=60, max_retries=3)
    run_dir = Path(tempfile.mkdtemp(dir=folder))
    with RunStore(run_dir) as store:
        store.write_items(items.values())

        async def go() -> Any:
            try:
                return await run_trials(trials, store=store, items=items, judges={judge_id: judge},
                                        protocols={"direct": get_protocol("direct")},
                                        judge_specs={judge_id: spec}, cache="off", executor=executor)
            finally:
                await judge.aclose()

        t0, c0 = time.perf_counter(), time.process_time()
        if profile is not None:
            profile.enable()
        summary = asyncio.run(go())
        if profile is not None:
            profile.disable()
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        rows = store.count()
    assert rows == n_trials, (rows, n_trials, summary.stopped)
    return {"n": n_trials, "wall": wall, "cpu": cpu, "calls": summary.calls, "failed": summary.n_failed,
            "steady": steady_rate(done_at)}


def steady_rate(done_at: list[float]) -> float | None:
    """Calls/s between the 10th and 90th percentile completion: the rate once the run is going,
    without start-up (client, connections, store) and the tail of the last calls."""
    if len(done_at) < 20:
        return None
    t = sorted(done_at)
    i, j = len(t) // 10, (9 * len(t)) // 10
    return (j - i) / (t[j] - t[i]) if t[j] > t[i] else None


def _messages(n_calls: int) -> list[list[dict[str, str]]]:
    from verdictlab.protocols import get_protocol

    proto = get_protocol("direct")
    items = list(make_items((n_calls + 1) // 2).values())
    return [proto.messages(it, o) for it in items for o in ("AB", "BA")][:n_calls]


def run_bare_sdk(base_url: str, n_calls: int, concurrency: int) -> dict[str, float]:
    """Baseline: the same requests with nothing but ``AsyncOpenAI.chat.completions.create`` and
    its default transport under a semaphore -- what a hand-written client does."""
    from openai import AsyncOpenAI

    msgs = _messages(n_calls)

    async def go() -> None:
        client = AsyncOpenAI(api_key=KEY, base_url=base_url, max_retries=0)
        sem = asyncio.Semaphore(concurrency)

        async def one(m: list[dict[str, str]]) -> None:
            async with sem:
                await client.chat.completions.create(model="fake-judge", messages=m, max_tokens=2,  # type: ignore[arg-type]
                                                     temperature=0.0, logprobs=True, top_logprobs=5)

        await asyncio.gather(*(one(m) for m in msgs))
        await client.close()

    asyncio.run(go())   # warm-up
    t0, c0 = time.perf_counter(), time.process_time()
    asyncio.run(go())
    return {"n": n_calls, "wall": time.perf_counter() - t0, "cpu": time.process_time() - c0}


def run_bare_judge(judge_id: str, n_calls: int, concurrency: int) -> dict[str, float]:
    """Baseline: our judge's ``generate`` under a semaphore, without the engine around it."""
    from verdictlab.judges import JudgeRequest, make_judge

    reqs = [JudgeRequest(messages=tuple(m), max_tokens=2, logprobs=True, top_logprobs=5,
                         verdict_choices=("A", "B")) for m in _messages(n_calls)]

    async def go() -> None:
        judge = make_judge(judge_id)
        sem = asyncio.Semaphore(concurrency)

        async def one(r: Any) -> None:
            async with sem:
                await judge.generate(r)

        try:
            await asyncio.gather(*(one(r) for r in reqs))
        finally:
            await judge.aclose()

    asyncio.run(go())   # warm-up
    t0, c0 = time.perf_counter(), time.process_time()
    asyncio.run(go())
    return {"n": n_calls, "wall": time.perf_counter() - t0, "cpu": time.process_time() - c0}


def line(label: str, r: dict[str, float], *, ideal: float | None = None, server_cpu: float | None = None) -> str:
    rate = r["n"] / r["wall"]
    out = f"  {label:<34} {int(r['n']):>5} calls  {r['wall']:6.2f}s  {rate:8.1f} calls/s"
    if ideal is not None:
        out += f"  ideal {ideal:7.1f}/s  ratio {rate / ideal:5.2f}"
        if r.get("steady"):
            out += f" (steady state {r['steady'] / ideal:4.2f})"
    out += f"  client CPU {1000 * r['cpu'] / r['n']:.2f} ms/call"
    if server_cpu is not None:
        out += f"  server CPU {1000 * server_cpu / r['n']:.2f} ms/call"
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--latency", type=float, default=0.05, help="fixed server latency (s)")
    ap.add_argument("--jitter", type=float, default=0.0,
                    help="extra uniform(0, JITTER) s per answer; the ideal uses the mean latency. With "
                         "no jitter all workers start together and stay in lockstep, so each round's "
                         "answers arrive at once and queue for the client's CPU (about concurrency/2 "
                         "calls each)")
    ap.add_argument("--concurrency", type=int, nargs="*", default=[1, 8, 16, 32, 64])
    ap.add_argument("--transports", nargs="*", default=["aiohttp-direct", "aiohttp"],
                    help="HTTP transports of section 1, each concurrency in turns (VERDICTLAB_HTTP_TRANSPORT; "
                         "aiohttp-direct is the default for http:// judges, aiohttp the SDK's aiohttp client)")
    ap.add_argument("--rounds", type=int, default=30, help="trials per run = rounds x concurrency")
    ap.add_argument("--fast-calls", type=int, default=3000, help="calls in the near-zero-latency runs")
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    ap.add_argument("--profile", action="store_true", help="cProfile the near-zero-latency engine run")
    ap.add_argument("--executor", choices=("local", "ray"), default="local",
                    help="ray: compare the Ray executor (1 and 2 workers) with the local one at --ray-concurrency")
    ap.add_argument("--ray-concurrency", type=int, default=128, help="total concurrency of the Ray comparison")
    ap.add_argument("--ray-rounds", type=int, default=3, help="turns of local / 1 worker / 2 workers (medians)")
    args = ap.parse_args(argv)
    if args.quick:
        args.rounds, args.fast_calls, args.ray_rounds = 8, 600, 1

    from verdictlab.testing import FakeConfig, FakeOpenAIProcess

    os.environ[KEY_ENV] = KEY
    load = " / ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"
    print(f"engine throughput vs ideal (fake server in a child process; {os.cpu_count()} CPUs; "
          f"load average before the run {load})")
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAIProcess(FakeConfig(api_key=KEY, latency_s=args.latency,
                                                                           jitter_s=args.jitter)) as srv:
        folder = Path(tmp)
        judge_id = f"openai-compatible:fake-judge@{srv.base_url}#key_env={KEY_ENV}"
        assert srv.proc is not None
        pid = srv.proc.pid
        run_engine(judge_id, 64, 16, folder)          # warm-up: imports, first connections
        mean_latency = args.latency + args.jitter / 2
        if args.executor == "ray":
            ray_section(judge_id, folder, args, mean_latency, pid)
            return 0
        print(f"1. latency {args.latency * 1000:.0f} ms per call"
              + (f" + uniform(0, {args.jitter * 1000:.0f}) ms" if args.jitter else ""))
        for c in args.concurrency:
            n = max(60, args.rounds * c)
            for transport in args.transports:
                with forced_transport(transport):
                    s0 = server_cpu_s(pid)
                    r = run_engine(judge_id, n, c, folder)
                print(line(f"engine, c={c}, {transport}", r, ideal=c / mean_latency,
                           server_cpu=server_cpu_s(pid) - s0) + f"  load {os.getloadavg()[0]:.2f}")

        srv.configure(latency_s=0.0, jitter_s=0.0)
        print("2. near-zero latency (the client's CPU is the limit)")
        for c in (16, 64):
            s0 = server_cpu_s(pid)
            r = run_engine(judge_id, args.fast_calls, c, folder)
            print(line(f"engine + openai SDK, concurrency {c}", r, server_cpu=server_cpu_s(pid) - s0))
        bare = run_bare_sdk(srv.base_url, args.fast_calls, 64)
        print(line("baseline: bare SDK create(), httpx, c=64", bare))
        judge_only = run_bare_judge(judge_id, args.fast_calls, 64)
        print(line("baseline: our judge alone, c=64", judge_only))
        for transport in ("aiohttp", "httpx"):     # the same judge on the SDK's own HTTP clients
            try:
                with forced_transport(transport):
                    other = run_bare_judge(judge_id, args.fast_calls, 64)
                print(line(f"  same, SDK's {transport} client", other))
            except Exception as exc:  # noqa: BLE001 - a missing optional client is reported, not fatal
                print(f"  same, SDK's {transport} client: not available ({type(exc).__name__})")
        eng = run_engine(judge_id, args.fast_calls, 64, folder)
        print(line("engine + our judge, c=64 (again)", eng))
        sim = run_engine("sim:skill=0.8,position_lock=0.1,noise=0.1,seed=1", args.fast_calls, 64, folder)
        print(line("engine + sim judge (no HTTP), c=64", sim))

        def rate(x: dict[str, float]) -> float:
            return x["n"] / x["wall"]

        def ms(x: dict[str, float]) -> float:
            return 1000 * x["cpu"] / x["n"]

        print(f"  throughput ratios: engine / our judge alone {rate(eng) / rate(judge_only):.2f}; "
              f"engine / bare SDK {rate(eng) / rate(bare):.2f}")
        print(f"  client CPU per call: judge alone {ms(judge_only):.2f} ms + engine "
              f"{ms(eng) - ms(judge_only):.2f} ms = {ms(eng):.2f} ms (bare SDK {ms(bare):.2f} ms; "
              f"engine with the sim judge {ms(sim):.2f} ms/trial)")

        if args.profile:
            prof = cProfile.Profile()
            run_engine(judge_id, args.fast_calls, 64, folder, profile=prof)
            buf = io.StringIO()
            pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(25)
            print("3. profile (engine + SDK, near-zero latency, top 25 by own time)")
            print(buf.getvalue())
    return 0


def _worker_cpu_s() -> float:
    """CPU seconds of the Ray judge workers alive now (processes titled ``ray::_JudgeWorkerImpl``)."""
    total = 0.0
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if b"_JudgeWorkerImpl" in (proc / "cmdline").read_bytes():
                total += server_cpu_s(int(proc.name))
        except OSError:
            continue
    return total


def ray_section(judge_id: str, folder: Path, args: Any, mean_latency: float, server_pid: int) -> None:
    """Local executor vs the Ray executor with 1 and 2 workers at the same total concurrency: calls/s,
    ratio to ideal, client CPU per call (driver + workers), and whether a worker more lowers throughput.

    The three are measured in turns (local, 1 worker, 2 workers), ``--ray-rounds`` times, with Ray
    up and both pools started and warmed first, and compared by their medians: on a small shared
    machine one run of a few seconds varies by 30% from one minute to the next."""
    import statistics

    import ray

    from verdictlab.engine.ray_executor import RayExecutor

    c = args.ray_concurrency
    n = max(600, args.rounds * c)
    ideal = c / mean_latency
    print(f"4. Ray executor vs local, total concurrency {c}, latency {args.latency * 1000:.0f} ms "
          f"(ideal {ideal:.0f} calls/s); server, driver and workers share {os.cpu_count()} CPUs")
    ray.init(num_cpus=os.cpu_count() or 2, include_dashboard=False, log_to_driver=False)
    pools = {w: RayExecutor(workers=w, cache="off", keep_workers=True) for w in (1, 2)}
    results: dict[str, list[dict[str, float]]] = {"local": [], "ray1": [], "ray2": [], "local_half": []}
    try:
        for w, ex in pools.items():
            t0 = time.perf_counter()
            run_engine(judge_id, 2 * c, c, folder, executor=ex)   # pool start: actors, imports, connections
            print(f"  pool of {w} worker(s) started and warmed on {2 * c} calls in {time.perf_counter() - t0:.2f}s")
        time.sleep(2)       # let Ray's start-up work settle
        for _ in range(args.ray_rounds):
            s0 = server_cpu_s(server_pid)
            r = run_engine(judge_id, n, c, folder)
            r["server"] = server_cpu_s(server_pid) - s0
            results["local"].append(r)
            r = run_engine(judge_id, n, c // 2, folder)   # what each of 2 workers runs: half the concurrency
            r["server"] = 0.0
            results["local_half"].append(r)
            for w, ex in pools.items():
                w0, s0 = _worker_cpu_s(), server_cpu_s(server_pid)
                r = run_engine(judge_id, n, c, folder, executor=ex)
                r["cpu"] += _worker_cpu_s() - w0          # client CPU = driver + workers
                r["server"] = server_cpu_s(server_pid) - s0
                results[f"ray{w}"].append(r)
    finally:
        for ex in pools.values():
            ex.close()
        ray.shutdown()
    labels = {"local": "local executor", "ray1": "ray executor, 1 worker", "ray2": "ray executor, 2 workers",
              "local_half": f"(local at concurrency {c // 2})"}
    med: dict[str, dict[str, float]] = {}
    for key, runs in results.items():
        rates = [x["n"] / x["wall"] for x in runs]
        mid = runs[rates.index(statistics.median_low(rates))]
        med[key] = {"rate": statistics.median(rates), "cpu": statistics.median(1000 * x["cpu"] / x["n"] for x in runs)}
        print(line(f"{labels[key]} (median run)", mid, ideal=ideal if key != "local_half" else None,
                   server_cpu=mid["server"] if key != "local_half" else None))
        cpus = ", ".join(f"{1000 * x['cpu'] / x['n']:.2f}" for x in runs)
        print(f"    calls/s per round: {', '.join(f'{r:.0f}' for r in rates)}; client CPU ms/call: {cpus}")
    lr, lc = med["local"]["rate"], med["local"]["cpu"]
    r1, r2 = med["ray1"]["rate"], med["ray2"]["rate"]
    print(f"  medians: calls/s local {lr:.0f}, ray 1 worker {r1:.0f} ({r1 / lr:.2f}x local, {r1 / ideal:.2f} of ideal), "
          f"2 workers {r2:.0f} ({r2 / lr:.2f}x local, {r2 / ideal:.2f} of ideal); the second worker "
          f"{'did not lower' if r2 >= r1 * 0.97 else 'LOWERED'} throughput ({r2 / r1:.2f}x)")
    print(f"  client CPU per call (medians): local {lc:.2f} ms; ray 1 worker {med['ray1']['cpu']:.2f} ms "
          f"({med['ray1']['cpu'] / lc:.2f}x), 2 workers {med['ray2']['cpu']:.2f} ms ({med['ray2']['cpu'] / lc:.2f}x); "
          f"the local executor itself at concurrency {c // 2} (each of 2 workers' share) "
          f"{med['local_half']['cpu']:.2f} ms ({med['local_half']['cpu'] / lc:.2f}x): fewer calls in flight per "
          f"process cost more CPU per call")
    load = " / ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"
    print(f"  load average after: {load}")


if __name__ == "__main__":
    raise SystemExit(main())
