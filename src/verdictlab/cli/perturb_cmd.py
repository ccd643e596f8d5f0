"""`verdictlab perturb DATASET --kind K ... --run-dir DIR` -- a perturbation suite to curate and grade."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ._errors import EXIT_INPUT, EXIT_INTERRUPTED, EXIT_STORE, say
from .datasets_cmd import OptionList, parse_options
from .options import SEED_DEFAULT, OutOption, Seed, exit_codes, output_format

if TYPE_CHECKING:
    from ..workflows.perturb import PerturbResult


class PerturbationKind(StrEnum):
    """The perturbation kinds (``datasets.perturb.KINDS``; tests/test_cli_grammar.py holds them equal)."""

    format_whitespace = "format.whitespace"
    format_markdown = "format.markdown"
    format_list_style = "format.list_style"
    format_casing = "format.casing"
    verbosity_pad = "verbosity.pad"
    transcript_reformat_message = "transcript.reformat_message"
    transcript_drop_tool_result = "transcript.drop_tool_result"
    transcript_wrong_answer = "transcript.wrong_answer"
    paraphrase = "paraphrase"
    label_flip = "label_flip"
    synthetic = "synthetic"


class SuiteFormat(StrEnum):
    """The suite file's form: JSON Lines, one item per line (the ``perturbations`` loader)."""

    jsonl = "jsonl"


def _unit_interval(value: float) -> float:
    if not 0 < value <= 1:
        raise typer.BadParameter(f"must be in (0, 1], got {value}")
    return value


def perturb(
    dataset: Annotated[str, typer.Argument(metavar="DATASET", show_default=False,
                                           help="Dataset loader of point items (see `verdictlab datasets list`).")],
    kind: Annotated[list[PerturbationKind], typer.Option(
        "--kind", case_sensitive=False, show_default=False,
        help="A perturbation kind; repeatable.  Written by a rule: format.*, verbosity.pad, transcript.*; by a "
             "model (needs --writer): paraphrase, label_flip, synthetic.")],
    run_dir: Annotated[Path | None, typer.Option(
        "--run-dir", metavar="DIR", show_default=False,
        help="Run directory to write the suite into (created if needed; required): its items, the writing "
             "calls and the audit trail; `verdictlab view DIR` curates the cases.")] = None,
    path: Annotated[str | None, typer.Option("--path", "-p", help="Source file or folder of the dataset.")] = None,
    option: OptionList = None,
    writer: Annotated[str | None, typer.Option(metavar="JUDGE",
                                               help="Judge id that writes the model-written cases.")] = None,
    validator: Annotated[str | None, typer.Option(
        metavar="JUDGE", help="Judge id of the second call that validates each written case (default: the writer).")
    ] = None,
    variants: Annotated[int, typer.Option(min=1, max=20, help="Cases a model writes per source and kind.")] = 1,
    temperature: Annotated[float, typer.Option(min=0.0, max=2.0, help="Sampling temperature of the writing "
                                                                    "calls (validation calls use 0).")] = 0.7,
    similarity: Annotated[float, typer.Option(
        callback=_unit_interval, metavar="THRESHOLD",
        help="Near-duplicate filter: a written case whose word-sequence similarity to a text it is compared with "
             "reaches this is dropped, in (0, 1].")] = 0.9,
    pad_chars: Annotated[int, typer.Option("--pad-chars", min=1, help="verbosity.pad: characters of padding.")] = 200,
    template: Annotated[Path | None, typer.Option(
        metavar="FILE", help="YAML file with the wording of the model-written kinds (the package template's "
                             "shape) instead of the package's.")] = None,
    max_calls: Annotated[int | None, typer.Option("--max-calls", min=0, help="Budget: writing calls at most.")] = None,
    max_usd: Annotated[float | None, typer.Option("--max-usd", min=0.0, help="Budget: dollars at most.")] = None,
    no_cache: Annotated[bool, typer.Option(
        "--no-cache", help="Write every case anew instead of reading replies stored by an earlier suite.")] = False,
    seed: Seed = SEED_DEFAULT,
    out: OutOption = None,
    fmt: Annotated[SuiteFormat | None, typer.Option(
        "--format", case_sensitive=False, show_default=False,
        help="Form of the suite file (default: DIR/suite-<dataset>.jsonl).")] = None,
) -> None:
    """Write a perturbation suite: the dataset's point items and, per item and kind, a perturbed copy that
    keeps the meaning (the grade must stay) or changes it (the grade must follow).  Model-written cases
    are validated by a second call and filtered for near duplicates; they count once a person accepts
    them in `verdictlab view DIR`.  The summary goes to stderr."""
    from ..workflows.perturb import perturb_dataset

    if run_dir is None:
        raise typer.BadParameter("the run directory to write the suite into is required", param_hint="'--run-dir'")
    output_format(out, fmt, SuiteFormat, SuiteFormat.jsonl)
    kinds = [str(k.value) for k in kind]
    from ..datasets.perturb import KINDS

    model_kinds = [k for k in kinds if KINDS[k].origin == "model"]
    if model_kinds and writer is None:
        raise typer.BadParameter(f"the kind(s) {', '.join(model_kinds)} are written by a model: name it",
                                 param_hint="'--writer'")
    result = perturb_dataset(dataset, kinds=kinds, run_dir=run_dir, path=path, options=parse_options(option),
                             out=out, writer=writer, validator=validator, seed=seed, variants=variants,
                             temperature=temperature, similarity=similarity, pad_chars=pad_chars,
                             cache=not no_cache, max_calls=max_calls, max_usd=max_usd,
                             template=None if template is None else str(template))
    for line in summary_lines(result):
        say(line)


def summary_lines(r: PerturbResult) -> list[str]:
    """The summary printed on stderr."""
    lines = [f"suite of {r.dataset!r}: {r.n_sources} source item(s), {r.n_cases} case(s) in {r.out}"]
    for kind, counts in r.counts.items():
        dropped = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()) if k != "kept")
        lines.append(f"  {kind}: {counts.get('kept', 0)} kept" + (f"; dropped: {dropped}" if dropped else ""))
    steps = r.spend.get("by_step") or {}
    prompts = sum(s["prompts"] for s in steps.values())
    hits = sum(s["cache_hits"] for s in steps.values())
    if prompts:
        lines.append(f"  writing calls: {r.spend['calls']} made for {prompts} prompt(s) ({hits} answered by replies "
                     f"stored earlier), {r.spend['tokens_in']} tokens in, {r.spend['tokens_out']} out, "
                     f"${r.spend['cost_usd']:.4f}")
    if r.n_kept_curated:
        lines.append(f"  {r.n_kept_curated} case(s) a person curated kept as curated")
    if r.stopped:
        lines.append(f"  stopped early: {r.stopped} (rerun to write the rest; stored replies are reused)")
    lines.append(f"next: verdictlab view {r.run_dir} (curate the model-written cases); grade the suite with "
                 f"`verdictlab run CONFIG --run-dir {r.run_dir}`, the config's dataset "
                 f"{{name: perturbations, path: {r.out}}}")
    return lines


def register(app: typer.Typer) -> None:
    app.command("perturb", epilog=exit_codes(EXIT_INPUT, EXIT_STORE, EXIT_INTERRUPTED))(perturb)
