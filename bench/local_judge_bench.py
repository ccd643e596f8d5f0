"""Speed of the embedded local judge (llamacpp:smollm2-135m) on the demo protocols.

Two comparisons (``--compare``):

``decoding`` (default; issue 17) -- judgments/s per protocol with FREE decoding and with CONSTRAINED
decoding (the default ``slots`` mechanism: fixed format text supplied, rationale sampled and capped,
verdict scored over the labels in one pass; ``--grammar`` adds the GBNF-grammar mechanism), the cost
of each constrained judgment relative to a free ``direct`` one (the aim: verdict-first constrained
<= 1.5x), and how many outputs each mode left unparsed.  Prefix reuse on, as in a run.

``reuse`` -- for each protocol it judges a few demo pairs in both orders with R repetitions back to back (the
engine's trial order), twice in the same process:

* baseline -- prefix reuse OFF: the KV cache is cleared before every call, so every call reads its
  whole prompt;
* reuse    -- prefix reuse ON (the default): consecutive calls keep the KV cache of their common
  prompt prefix (all of it between repetitions, the system prompt and question between orders).

It prints prompt tokens/s (prompt tokens submitted / wall time) and judgments/s for both, and the
ratio reuse / baseline.  Ratios, not absolute numbers, are the result: the machine and its load
change the absolute speed.

    .venv/bin/python bench/local_judge_bench.py [--compare decoding|reuse] [--grammar] [--pairs 2]
        [--repetitions 3] [--protocols direct,vf-json] [--temperature 0.7]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Callable
from typing import Any


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=2)
    ap.add_argument("--repetitions", type=int, default=3)
    ap.add_argument("--compare", choices=("decoding", "reuse"), default="decoding")
    ap.add_argument("--grammar", action="store_true", help="decoding: also time the GBNF-grammar mechanism")
    ap.add_argument("--rationale-tokens", type=int, default=None,
                    help="decoding: override the constrained rationale cap (judge parameter rationale_tokens)")
    ap.add_argument("--temperature", type=float, default=None,
                    help="default 0.7 for decoding (the demo's), 0 for reuse (identical outputs in both "
                         "modes, so only prompt reading differs)")
    ap.add_argument("--rounds", type=int, default=3, help="timed rounds per mode; the fastest counts")
    ap.add_argument("--protocols", default="direct,vf-json,vf-xml,cot-json,cot-xml")
    args = ap.parse_args(argv)
    if args.temperature is None:
        args.temperature = 0.7 if args.compare == "decoding" else 0.0

    from verdictlab.datasets import load_dataset
    from verdictlab.judges import JudgeConfigError, JudgeRequest, make_judge
    from verdictlab.protocols import get_protocol

    try:
        judge: Any = make_judge("llamacpp:smollm2-135m")
    except JudgeConfigError as exc:
        print(f"local_judge_bench: skipped ({exc})")
        return 0
    items = load_dataset("demo", pairs=args.pairs).items
    protocols = [p.strip() for p in args.protocols.split(",") if p.strip()]

    def requests(pid: str, decoding: str = "free") -> list[JudgeRequest]:
        p = get_protocol(pid)
        out = []
        for it in items:
            for order in ("AB", "BA"):
                for rep in range(args.repetitions):
                    out.append(JudgeRequest(
                        messages=tuple(p.messages(it, order)), temperature=args.temperature,
                        max_tokens=p.max_tokens(), stop=p.stop(), seed=rep, logprobs=p.label_only,
                        verdict_choices=p.verdict_choices, decoding=decoding,
                        output_format=p.output_format() if decoding == "constrained" else None,
                        params={} if args.rationale_tokens is None else {"rationale_tokens": args.rationale_tokens},
                        metadata={"dataset": "demo", "item_id": it.item_id, "protocol": pid, "order": order,
                                  "temperature": args.temperature, "rep": rep, "step": ""}))
        return out

    async def measure(reqs: list[JudgeRequest], reuse: bool) -> tuple[float, int, int]:
        runs = [await timed_calls(judge, reqs, reuse=reuse) for _ in range(max(1, args.rounds))]
        secs, tin, tout, _ = min(runs)
        return secs, tin, tout

    # load the model and warm up outside the timings
    asyncio.run(measure(requests(protocols[0])[:1], True))
    if args.compare == "decoding":
        return compare_decoding(args, judge, items, protocols, requests, get_protocol)
    print(f"llamacpp:smollm2-135m, {len(items)} pairs x 2 orders x {args.repetitions} repetitions per protocol, "
          f"T={args.temperature:g}, threads={judge.n_threads}")
    header = (f"{'protocol':<9} {'calls':>5} {'prompt tok/s':>13} {'(reuse)':>9} {'judgments/s':>12} "
              f"{'(reuse)':>9} {'ratio reuse/baseline':>21} {'out tokens':>11} {'(reuse)':>8}")
    print(header)
    print("-" * len(header))
    for pid in protocols:
        reqs = requests(pid)
        base_t, tin, tout = asyncio.run(measure(reqs, False))
        reuse_t, tin2, tout2 = asyncio.run(measure(reqs, True))
        print(f"{pid:<9} {len(reqs):>5} {tin / base_t:>13.0f} {tin2 / reuse_t:>9.0f} {len(reqs) / base_t:>12.2f} "
              f"{len(reqs) / reuse_t:>9.2f} {base_t / reuse_t:>20.2f}x {tout:>11} {tout2:>8}")
    print("prompt tok/s = prompt tokens submitted / wall time (with reuse most of them are not re-read); "
          "out tokens differing between modes would mean the timings compare different outputs")
    judge.reuse_prefix = True
    return 0


async def timed_calls(judge: Any, reqs: list[Any], *, reuse: bool = True,
                      parse: Callable[[str], Any] | None = None) -> tuple[float, int, int, int]:
    """The requests one after another from an empty KV cache: (seconds, prompt tokens submitted,
    tokens generated, outputs without a verdict -- counted when ``parse`` gives the protocols)."""
    judge.reuse_prefix = reuse
    judge.llama().reset()
    t0 = time.perf_counter()
    tin = tout = unparsed = 0
    for r in reqs:
        resp = await judge.generate(r)
        tin += resp.tokens_in or 0
        tout += resp.tokens_out or 0
        if parse is not None:
            unparsed += parse(r.metadata["protocol"]).parse(resp.text).verdict is None
    judge.reuse_prefix = True
    return time.perf_counter() - t0, tin, tout, unparsed


def compare_decoding(args: argparse.Namespace, judge: Any, items: list[Any], protocols: list[str],
                     requests: Callable[[str, str], list[Any]], get_protocol: Callable[[str], Any]) -> int:
    """Free vs constrained judgments/s per protocol (prefix reuse on, the fastest of --rounds)."""
    import os

    mechanisms = ["slots", "grammar"] if args.grammar else ["slots"]
    print(f"llamacpp:smollm2-135m, {len(items)} pairs x 2 orders x {args.repetitions} repetitions per protocol, "
          f"T={args.temperature:g}, threads={judge.n_threads}, {args.rounds} rounds, load average "
          f"{os.getloadavg()[0]:.1f}")
    header = f"{'protocol':<9} {'mode':<21} {'calls':>5} {'judgments/s':>12} {'s/judgment':>11} " \
             f"{'x free direct':>14} {'(per round)':>20} {'out tok/call':>13} {'unparsed':>9}"
    print(header)
    print("-" * len(header))
    modes = ["free", *(f"constrained/{m}" for m in mechanisms)]
    cells = [(pid, mode) for pid in ("direct", *(p for p in protocols if p != "direct")) for mode in modes]
    # every round times every cell, free `direct` first: a load change on a shared machine hits the
    # baseline and the cells of that round alike; the fastest round of each cell counts, and the
    # per-round ratios (cell / that round's free direct) show the spread
    rounds: list[dict[tuple[str, str], tuple[float, int, int, int]]] = []
    n_calls = len(requests(protocols[0], "free"))
    for _ in range(max(1, args.rounds)):
        got: dict[tuple[str, str], tuple[float, int, int, int]] = {}
        for pid, mode in cells:
            decoding, _, how = mode.partition("/")
            judge.constrain_with = how or "slots"
            got[(pid, mode)] = asyncio.run(timed_calls(judge, requests(pid, decoding), parse=get_protocol))
        rounds.append(got)
    base = min(r[("direct", "free")][0] for r in rounds) / n_calls
    for pid, mode in cells:
        secs, _, tokens_out, unparsed = min(r[(pid, mode)] for r in rounds)
        per = secs / n_calls
        spread = ", ".join(f"{r[(pid, mode)][0] / r[('direct', 'free')][0]:.2f}" for r in rounds)
        print(f"{pid:<9} {mode:<21} {n_calls:>5} {n_calls / secs:>12.2f} {per:>11.3f} {per / base:>13.2f}x "
              f"{spread:>20} {tokens_out / n_calls:>13.1f} {unparsed:>4}/{n_calls:<4}", flush=True)
    judge.constrain_with = "slots"
    print("x free direct = seconds per judgment / seconds per free `direct` judgment (aim for verdict-first "
          "constrained: <= 1.5x); unparsed = outputs without a readable verdict. Each cell alone, from an "
          "empty cache: every cell reads its prompts itself.")
    in_run = in_run_order(args, judge, items, protocols, requests, modes, n_calls)
    alone = {c: min(r[c][0] for r in rounds) / n_calls / base for c in cells}
    vf = [p for p in protocols if p.startswith("vf-")]
    if vf:
        cell = "constrained/slots"
        print("verdict-first constrained vs the aim (<= 1.5x a free `direct` judgment): "
              + "; ".join(f"{p} alone {alone[(p, cell)]:.2f}x, in a run's order {in_run[(p, cell)]:.2f}x" for p in vf))
    print(f"load average now {os.getloadavg()[0]:.1f}")
    return 0


def in_run_order(args: argparse.Namespace, judge: Any, items: list[Any], protocols: list[str],
                 requests: Callable[[str, str], list[Any]], modes: list[str],
                 n_calls: int) -> dict[tuple[str, str], float]:
    """The same calls in the order a run makes them (engine.prepare.prompt_order: per item and order,
    every protocol and decoding, repetitions back to back), each call's wall time charged to its cell.
    A prompt is read by the first cell that shows it; the cells after it pay only what differs."""
    cells = [(pid, mode) for pid in ("direct", *(p for p in protocols if p != "direct")) for mode in modes
             if mode in ("free", "constrained/slots")]
    by_cell = {c: requests(c[0], c[1].partition("/")[0]) for c in cells}
    per_prompt = args.repetitions   # calls per (item, order) in each cell (requests() yields item > order > rep)
    seq = [(c, by_cell[c][k * per_prompt + r]) for k in range(len(items) * 2) for c in cells
           for r in range(per_prompt)]
    best: dict[tuple[str, str], float] = {}
    for _ in range(max(1, args.rounds)):
        judge.constrain_with = "slots"
        judge.llama().reset()
        spent = dict.fromkeys(cells, 0.0)

        async def go(spent: dict[tuple[str, str], float]) -> None:
            for cell, req in seq:
                t0 = time.perf_counter()
                await judge.generate(req)
                spent[cell] += time.perf_counter() - t0

        asyncio.run(go(spent))
        for c in cells:
            best[c] = min(best.get(c, spent[c]), spent[c])
    base = best[("direct", "free")] / n_calls
    print(f"in a run's order ({len(seq)} calls: per item and order, every protocol x decoding, repetitions back "
          f"to back; each call's time charged to its cell; the fastest of {max(1, args.rounds)} passes):")
    for pid, mode in cells:
        per = best[(pid, mode)] / n_calls
        print(f"{pid:<9} {mode:<21} {n_calls:>5} {1 / per:>12.2f} {per:>11.3f} {per / base:>13.2f}x")
    return {c: best[c] / n_calls / base for c in cells}


if __name__ == "__main__":
    sys.exit(main())
