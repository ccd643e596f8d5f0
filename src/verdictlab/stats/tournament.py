"""A tournament: the judgments of one judge configuration coded as matches between systems, and the
per-system win rate with its pair-bootstrap interval.

Input frame (one judge configuration): ``system_a``, ``system_b`` (the systems behind canonical
``response_a`` / ``response_b``), ``verdict`` (canonical ``A | B | tie``; missing = unparsed) and
``item_id`` (the pair item: all its judgments -- both orders, every repetition -- are one bootstrap
unit); optionally ``dataset`` (part of the unit's key) and ``prompt`` (the question the pair answers:
several pair items of one prompt share it; without the column every pair item is its own prompt).
An unparsed verdict is no match (counted in ``n_unparsed``); a row without both systems is no match
(counted in ``n_without_system``); a row whose two systems are the same is refused.

Matches are stored with the pair's two systems in code order (``first < second``) and the outcome
from ``first``'s side: 0 = first won, 1 = tie, 2 = second won.

Tie rules (normative; :data:`WIN_RATE_TIE_RULES`)
----------------------------------------
``half``  a tie is half a win and half a loss for each side (FastChat's Elo and MLE, AlpacaEval);
``drop``  ties are left out of the figure (the denominator is the decisive matches);
``loss``  a tie counts as a match neither side won (win rate only: it is a loss for both).

Pair bootstrap
--------------
A figure of the tournament depends on the units (pair items) only through how many units of each
*pattern* there are: a pattern is (system pair, wins of first, ties, wins of second) over the unit's
judgments.  Drawing N units with replacement is therefore a multinomial draw of the pattern counts
with probabilities (units of the pattern) / N -- the same distribution, drawn in O(patterns) per
resample instead of O(units) (the trick FastChat's MLE bootstrap uses on unique battle outcomes).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ._frame import UNPARSED, group_codes, require_columns, verdict_codes
from .intervals import percentile_bounds

__all__ = ["WIN_RATE_TIE_RULES", "Tournament", "TournamentPatterns", "tournament", "tournament_patterns", "pattern_draws",
           "win_rates", "WIN_RATE_COLUMNS", "common_opponent", "unit_preferences"]

WIN_RATE_TIE_RULES: tuple[str, ...] = ("half", "drop", "loss")
WIN_RATE_COLUMNS: tuple[str, ...] = ("system", "win_rate", "lo", "hi", "n", "wins", "losses", "ties", "n_units",
                                     "tie_rule")


def check_tie_rule(tie_rule: str, allowed: tuple[str, ...] = WIN_RATE_TIE_RULES) -> str:
    if tie_rule not in allowed:
        raise ValueError(f"tie_rule must be one of {allowed}, got {tie_rule!r}")
    return tie_rule


@dataclass(frozen=True)
class Tournament:
    """The matches of one judge configuration: per match the two systems' codes (``first < second``),
    the outcome from ``first``'s side (0 won, 1 tie, 2 lost), the unit (pair item) and prompt codes;
    ``systems`` / ``prompts`` name the codes; ``unit_rows[u]`` is the position in the coded frame of
    unit ``u``'s first row."""

    systems: tuple[str, ...]
    prompts: tuple[str, ...]
    first: np.ndarray
    second: np.ndarray
    outcome: np.ndarray
    unit: np.ndarray
    prompt: np.ndarray
    n_units: int
    n_unparsed: int
    n_without_system: int
    unit_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    @property
    def n_systems(self) -> int:
        return len(self.systems)

    @property
    def n_matches(self) -> int:
        return len(self.outcome)

    def subset(self, keep: np.ndarray) -> Tournament:
        """The matches where ``keep`` is true (same systems, prompts and unit codes)."""
        keep = np.asarray(keep, dtype=bool)
        return Tournament(self.systems, self.prompts, self.first[keep], self.second[keep], self.outcome[keep],
                          self.unit[keep], self.prompt[keep], self.n_units, self.n_unparsed, self.n_without_system,
                          self.unit_rows)


def _name_codes(values: pd.Series) -> tuple[np.ndarray, list[str]]:
    """Codes of a name column (-1 = missing) and its distinct names as text (one str() per name)."""
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    return codes.astype(np.int64), [str(u) for u in uniques]


def tournament(frame: pd.DataFrame, *, systems: tuple[str, ...] | None = None) -> Tournament:
    """Code ``frame`` (module docstring) as a :class:`Tournament`.  ``systems``: the system names to
    code against (e.g. the union over several configurations, so their codes agree); default: the
    systems of ``frame``, sorted.  Vectorised: every column is factorised once."""
    require_columns(frame, ["system_a", "system_b", "verdict", "item_id"], who="tournament")
    ca, na = _name_codes(frame["system_a"])
    cb, nb = _name_codes(frame["system_b"])
    if systems is None:
        systems = tuple(sorted(set(na) | set(nb)))
    index = pd.Index(systems)
    # a row's system code: its name's position in ``systems`` (-1 = missing)
    ta = np.append(index.get_indexer(na), -1)
    tb = np.append(index.get_indexer(nb), -1)
    if (ta[:-1] < 0).any() or (tb[:-1] < 0).any():
        raise ValueError("tournament: a system of the frame is not among the given systems")
    a, b = ta[ca], tb[cb]
    known = (a >= 0) & (b >= 0)
    same = known & (a == b)
    if same.any():
        pos = int(np.flatnonzero(same)[0])
        raise ValueError(f"tournament: row {pos} has system_a == system_b == {systems[a[pos]]!r}; "
                         "a match needs two systems")
    out = verdict_codes(frame["verdict"], what="tournament: verdict")   # A 0, B 1, tie 2, unparsed 3
    parsed = out != UNPARSED
    keep = known & parsed
    unit_key = ["dataset", "item_id"] if "dataset" in frame.columns else ["item_id"]
    unit_all, _ = group_codes(frame, unit_key)
    a, b, out = a[keep], b[keep], np.array([0, 2, 1, 3])[out[keep]]   # -> A 0, tie 1, B 2
    swap = a > b
    first, second = np.where(swap, b, a), np.where(swap, a, b)
    outcome = np.where(swap, 2 - out, out)
    unit_codes, n_units = _dense(unit_all[keep])
    if "prompt" in frame.columns:
        pc, pnames = _name_codes(frame["prompt"])
        if (pc < 0).any():
            raise ValueError(f"tournament: row {int(np.flatnonzero(pc < 0)[0])} has no prompt")
        prompt, _ = _dense(pc[keep])
        prompts = tuple(pnames[k] for k in np.unique(pc[keep]))
    else:
        prompt, prompts = unit_codes, tuple(str(i) for i in range(n_units))
    rows = np.flatnonzero(keep)
    unit_rows = np.zeros(n_units, dtype=np.int64)
    unit_rows[unit_codes[::-1]] = rows[::-1]          # the first row of each unit (the last write wins)
    return Tournament(tuple(systems), prompts, first, second, outcome.astype(np.int64), unit_codes, prompt,
                      n_units, n_unparsed=int((known & ~parsed).sum()), n_without_system=int((~known).sum()),
                      unit_rows=unit_rows)


def _dense(codes: np.ndarray) -> tuple[np.ndarray, int]:
    if len(codes) == 0:
        return codes.astype(np.int64), 0
    present = np.zeros(int(codes.max()) + 1, dtype=bool)
    present[codes] = True
    rank = np.cumsum(present) - 1
    return rank[codes].astype(np.int64), int(present.sum())


@dataclass(frozen=True)
class TournamentPatterns:
    """The units of a tournament grouped by pattern (module docstring): per pattern the two systems,
    the counts (first won, tie, second won) of one unit, and how many units have it."""

    first: np.ndarray
    second: np.ndarray
    counts: np.ndarray        # (G, 3)
    units: np.ndarray         # (G,) units with this pattern
    n_systems: int

    @property
    def n_units(self) -> int:
        return int(self.units.sum())


def tournament_patterns(t: Tournament) -> TournamentPatterns:
    """Group the units of ``t`` by pattern (vectorised: one bincount over unit x outcome, one unique
    over a packed integer key)."""
    S = t.n_systems
    if t.n_matches == 0:
        z = np.zeros(0, dtype=np.int64)
        return TournamentPatterns(z, z, np.zeros((0, 3), dtype=np.int64), z, S)
    n = t.n_units
    per_unit = np.bincount(t.unit * 3 + t.outcome, minlength=3 * n).reshape(n, 3)
    played = per_unit.sum(axis=1) > 0
    pair = np.zeros(n, dtype=np.int64)
    pair[t.unit] = t.first * S + t.second
    base = int(per_unit.max()) + 1
    key = ((pair * base + per_unit[:, 0]) * base + per_unit[:, 1]) * base + per_unit[:, 2]
    uniq, mult = np.unique(key[played], return_counts=True)
    c2 = uniq % base
    c1 = uniq // base % base
    c0 = uniq // base // base % base
    pr = uniq // base // base // base
    return TournamentPatterns(pr // S, pr % S, np.column_stack([c0, c1, c2]), mult.astype(np.int64), S)


def pattern_draws(p: TournamentPatterns, *, n_bootstrap: int, rng: np.random.Generator) -> np.ndarray:
    """(n_bootstrap, G) unit counts per pattern of resamples of the units with replacement: a
    multinomial draw over patterns, the same distribution as drawing the units themselves."""
    n = p.n_units
    if n == 0 or n_bootstrap <= 0:
        return np.zeros((max(n_bootstrap, 0), len(p.units)), dtype=np.int64)
    return rng.multinomial(n, p.units / n, size=n_bootstrap)


def _system_counts(p: TournamentPatterns, weights: np.ndarray) -> np.ndarray:
    """(..., S, 3) wins, ties, losses per system under pattern ``weights`` (..., G)."""
    S = p.n_systems
    c = p.counts.astype(float)
    # a pattern gives first (c0 wins, c1 ties, c2 losses) and second (c2 wins, c1 ties, c0 losses)
    own = np.zeros((len(p.units), S, 3))
    idx = np.arange(len(p.units))
    own[idx, p.first] += c
    own[idx, p.second] += c[:, ::-1]
    return np.tensordot(weights, own, axes=([-1], [0]))


def _rate(counts: np.ndarray, tie_rule: str) -> tuple[np.ndarray, np.ndarray]:
    wins, ties, losses = counts[..., 0], counts[..., 1], counts[..., 2]
    if tie_rule == "half":
        num, den = wins + ties / 2.0, wins + ties + losses
    elif tie_rule == "drop":
        num, den = wins, wins + losses
    else:
        num, den = wins, wins + ties + losses
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan), den


def win_rates(t: Tournament, *, tie_rule: str = "half", n_bootstrap: int = 1000, seed: int = 0,
              confidence: float = 0.95) -> pd.DataFrame:
    """Per-system win rate over every match the system played (either side), best first.

    win rate = (wins + ties/2) / matches (``half``), wins / (wins + losses) (``drop``) or
    wins / matches (``loss``); ``n`` = the matches in the denominator; ``lo``/``hi`` = percentile
    pair-bootstrap bounds (module docstring); ``n_units`` = pair items the system played in.
    A system with no match in the denominator has NaN."""
    check_tie_rule(tie_rule)
    p = tournament_patterns(t)
    counts = _system_counts(p, p.units.astype(float))
    rate, den = _rate(counts, tie_rule)
    lo = hi = np.full(t.n_systems, np.nan)
    if n_bootstrap > 0 and p.n_units:
        draws = pattern_draws(p, n_bootstrap=n_bootstrap, rng=np.random.default_rng(seed))
        boot, _ = _rate(_system_counts(p, draws.astype(float)), tie_rule)
        lo, hi = percentile_bounds(boot, confidence=confidence)
    units = np.bincount(p.first, weights=p.units, minlength=t.n_systems) + np.bincount(
        p.second, weights=p.units, minlength=t.n_systems)
    out = pd.DataFrame({"system": list(t.systems), "win_rate": rate, "lo": lo, "hi": hi,
                        "n": den.astype(np.int64), "wins": counts[:, 0].astype(np.int64),
                        "losses": counts[:, 2].astype(np.int64), "ties": counts[:, 1].astype(np.int64),
                        "n_units": units.astype(np.int64), "tie_rule": tie_rule}, columns=list(WIN_RATE_COLUMNS))
    out = out.sort_values(["win_rate", "system"], ascending=[False, True], kind="stable", na_position="last")
    return out.reset_index(drop=True)


def common_opponent(t: Tournament) -> str | None:
    """The system that plays in every unit of ``t`` (the baseline of a design where every system meets
    one baseline, as AlpacaEval's and the Vicuna evaluation's do), or None when there is none or the
    tournament has fewer than three systems."""
    if t.n_matches == 0 or t.n_systems < 3:
        return None
    unit_has = np.zeros((t.n_units, t.n_systems), dtype=bool)
    unit_has[t.unit, t.first] = True
    unit_has[t.unit, t.second] = True
    everywhere = np.flatnonzero(unit_has[np.unique(t.unit)].all(axis=0))
    return t.systems[int(everywhere[0])] if len(everywhere) == 1 else None


def unit_preferences(t: Tournament, baseline: str) -> pd.DataFrame:
    """Per unit played against ``baseline``: ``system`` (the other side), ``unit`` (code),
    ``preference`` = the mean over the unit's matches of the system's score (won 1, tie 1/2, lost 0)
    and ``n`` (matches).  One row per unit: AlpacaEval's one annotation per instruction."""
    if baseline not in t.systems:
        raise ValueError(f"baseline {baseline!r} is not among the systems")
    b = t.systems.index(baseline)
    vs = (t.first == b) | (t.second == b)
    first_score = (2 - t.outcome[vs]) / 2.0
    own = np.where(t.first[vs] == b, 1.0 - first_score, first_score)
    other = np.where(t.first[vs] == b, t.second[vs], t.first[vs])
    unit, n_units = _dense(t.unit[vs])
    n = np.bincount(unit, minlength=n_units)
    total = np.bincount(unit, weights=own, minlength=n_units)
    sys_of = np.zeros(n_units, dtype=np.int64)
    sys_of[unit] = other
    orig = np.zeros(n_units, dtype=np.int64)
    orig[unit] = t.unit[vs]
    return pd.DataFrame({"system": np.asarray(t.systems, dtype=object)[sys_of], "unit": orig,
                         "preference": total / np.maximum(n, 1), "n": n})
