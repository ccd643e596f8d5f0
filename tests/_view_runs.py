"""Small run stores with outcomes worked out by hand, for the viewer's tests (fast and browser)."""

from __future__ import annotations

import uuid
from pathlib import Path

from verdictlab.core.items import PairItem
from verdictlab.core.judgment import make_judgment
from verdictlab.store import RunStore

JUDGE = "sim:known"
OTHER_JUDGE = "sim:other"

# item -> (label, verdicts of the AB order, verdicts of the BA order), canonical terms, 3 repetitions,
# judged by JUDGE with protocol "direct" at T=0.  Worked out under unparsed="exclude":
#   p1: A,A,A | A,A,A  label A   modal AB=A, BA=A: order-invariant, consistent, right   -> nothing
#   p2: A,A,A | B,B,B  label A   modal A vs B: flipped; BA's mode B != A: wrong, disagree
#   p3: B,A,B | B,B,B  label B   AB's repetitions disagree: unstable; modes B = B: not flipped
#   p4: A,A,A | A,A,A  label tie  a tie label is not counted for A: not wrong; A != tie: disagree
#   p5: -,-,- | A,A,A  label A   AB has no verdict: unparsed; its unit drops out (exclude), so the pair
#                                 has one order only: not flipped, not wrong
#   p6: A,B,- | A,A,A  label None  AB is split 1-1 (the unparsed one excluded): unstable, and a split
#                                 mode is never order-invariant: flipped; unlabelled: not wrong; unparsed
# Under unparsed="wrong" p5's AB mode is "unparsed" (a value of its own): flipped, wrong, disagree; p6's
# AB counts are A 1, B 1, unparsed 1: still split -> flipped, unstable.
KNOWN: dict[str, tuple[str | None, list[str | None], list[str | None]]] = {
    "p1": ("A", ["A", "A", "A"], ["A", "A", "A"]),
    "p2": ("A", ["A", "A", "A"], ["B", "B", "B"]),
    "p3": ("B", ["B", "A", "B"], ["B", "B", "B"]),
    "p4": ("tie", ["A", "A", "A"], ["A", "A", "A"]),
    "p5": ("A", [None, None, None], ["A", "A", "A"]),
    "p6": (None, ["A", "B", None], ["A", "A", "A"]),
}
EXPECTED_EXCLUDE: dict[str, set[str]] = {
    "flipped": {"p2", "p6"}, "unstable": {"p3", "p6"}, "wrong": {"p2"}, "disagree": {"p2", "p4"},
    "unparsed": {"p5", "p6"},
}
EXPECTED_WRONG: dict[str, set[str]] = {
    "flipped": {"p2", "p5", "p6"}, "unstable": {"p3", "p6"}, "wrong": {"p2", "p5"}, "disagree": {"p2", "p4", "p5"},
    "unparsed": {"p5", "p6"},
}
#: judgments of one pair in the run: JUDGE x direct (6) + OTHER_JUDGE x vf-json (6)
JUDGMENTS_PER_PAIR = 12
#: a key-shaped string made at import, so no key-like literal is tracked; the viewer must scrub it
SECRET = f"sk-{uuid.uuid4().hex}"


def write_known_run(run_dir: Path) -> Path:
    """The run of :data:`KNOWN`: dataset ``ds1`` judged by JUDGE/direct as above and by OTHER_JUDGE/vf-json
    always right and steady; dataset ``ds2`` holds a second pair with id ``p1`` (ids are unique only within
    a dataset) and a pair whose id holds ``/``, ``?`` and ``#``.  One judgment carries an error text with a
    key-shaped secret."""
    store = RunStore(run_dir)
    items = [PairItem(item_id=i, dataset="ds1", question=f"Question {i}: which is better?",
                      response_a=f"First answer of {i}", response_b=f"Second answer of {i}", label=lab)
             for i, (lab, _, _) in KNOWN.items()]
    items += [PairItem(item_id="p1", dataset="ds2", question="Another question with the id p1",
                       response_a="x", response_b="y", label="B"),
              PairItem(item_id="odd/id?x#y", dataset="ds2", question="An id with a slash",
                       response_a="left", response_b="right", label="A")]
    store.write_items(items)
    rows = []
    for it in items:
        lab = it.label
        ab, ba = KNOWN[it.item_id][1:] if it.dataset == "ds1" else ([lab] * 3, [lab] * 3)
        for order, verdicts in (("AB", ab), ("BA", ba)):
            for rep, v in enumerate(verdicts):
                rows.append(make_judgment(judge=JUDGE, dataset=it.dataset, item_id=it.item_id, protocol="direct",
                                          order=order, temperature=0.0, rep=rep, verdict=v, label=lab,
                                          raw_output=f"Verdict: {v or '???'} (order {order}, rep {rep})",
                                          latency_s=0.25, tokens_in=100, tokens_out=5, cost_usd=0.0001,
                                          attempts=1, cache_hit=0,
                                          error=f"401 invalid key {SECRET}" if (it.item_id, order, rep) == ("p5", "AB", 0)
                                          else None))
            for rep in range(3):
                right = lab if lab in ("A", "B") else "A"
                rows.append(make_judgment(judge=OTHER_JUDGE, dataset=it.dataset, item_id=it.item_id,
                                          protocol="vf-json", order=order, temperature=0.7, rep=rep, verdict=right,
                                          label=lab, raw_output=f'{{"verdict": "{right}"}}', p_a=0.9 if right == "A" else 0.1))
    store.add_judgments(rows)
    store.close()
    return run_dir
