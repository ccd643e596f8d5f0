"""The public benchmarks ``verdictlab datasets fetch`` downloads, each pinned to one upstream commit and
each of its files to a SHA-256 and a size.

A pinned dataset is a name (the loader or importer that reads it), the upstream it comes from, the
commit its files are read at, their licence, and a manifest: ``pins/<name>.txt`` in this package, one
line per file, ``<sha256> <size> <path>``, where ``path`` is the file's path in the upstream repository
(the same path in the local cache, under ``--to DIR/<name>/`` and on a mirror under ``<mirror>/<name>/``).
The manifests were written from snapshots of the upstream repositories at the pinned commits
(``git show <commit>:<path> | sha256sum``; the MT-Bench file's hash is the one its Git LFS pointer
publishes at the pinned revision).  Only benchmarks whose licence allows redistribution are listed.

``source`` is what a loader or importer is given when the dataset's name is used in place of a path
(``verdictlab datasets show llmbar``, ``verdictlab import llmbar llmbar-results``): a file or folder
under the fetched files, or the whole folder when ``None``.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from urllib.parse import quote

GITHUB_RAW = "https://raw.githubusercontent.com/{repo}/{pin}/"
HF_DATASET = "https://huggingface.co/datasets/{repo}/resolve/{pin}/"


@dataclass(frozen=True)
class PinnedFile:
    """One file of a pinned dataset: its path in the upstream repository, SHA-256 and size in bytes."""

    path: str
    sha256: str
    size: int


@dataclass(frozen=True)
class PinnedDataset:
    """A benchmark verdictlab can fetch: where it comes from, at which commit, under which licence."""

    name: str
    what: str                   # one line: what the files are
    reads: str                  # the command that reads them, e.g. "loader llmbar" or "import llmbar"
    upstream: str               # the repository's page
    base_url: str               # the files' paths are appended to it (the raw-file host at the pin)
    pin: str                    # the upstream commit the files are read at
    licence: str
    files: tuple[PinnedFile, ...]
    source: str | None = None   # the file or folder a loader / importer reads, relative to the files

    @property
    def size(self) -> int:
        """Bytes of all the files."""
        return sum(f.size for f in self.files)

    def url(self, file: PinnedFile, base: str | None = None) -> str:
        """Where ``file`` is downloaded from: ``base`` (a mirror's folder of this dataset) or upstream."""
        root = base if base is not None else self.base_url
        return root.rstrip("/") + "/" + quote(file.path)


def read_manifest(text: str, *, name: str) -> tuple[PinnedFile, ...]:
    """The files of a manifest: lines ``<sha256> <size> <path>`` (blank lines and ``#`` comments skipped)."""
    files = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        digest, size, path = line.split(" ", 2)
        if len(digest) != 64 or not size.isdigit() or not path or path.startswith("/") or ".." in path.split("/"):
            raise ValueError(f"pins/{name}.txt, line {n}: expected '<sha256> <size> <relative path>'")
        files.append(PinnedFile(path=path, sha256=digest.lower(), size=int(size)))
    return tuple(files)


def _manifest(name: str) -> tuple[PinnedFile, ...]:
    text = resources.files(__package__).joinpath("pins", f"{name}.txt").read_text(encoding="utf-8")
    return read_manifest(text, name=name)


def _github(name: str, repo: str, pin: str, *, what: str, reads: str, licence: str,
            source: str | None) -> PinnedDataset:
    return PinnedDataset(name=name, what=what, reads=reads, upstream=f"https://github.com/{repo}",
                         base_url=GITHUB_RAW.format(repo=repo, pin=pin), pin=pin, licence=licence,
                         files=_manifest(name), source=source)


_LLMBAR = ("princeton-nlp/LLMBar", "900616bff90b6c6c8e1681f7d079250637c55992")
_PANDALM = ("WeOpenML/PandaLM", "3871806e72b4832f815ecafd24d3503c73403f48")

#: every dataset ``datasets fetch`` knows, by name (tests may add their own with :func:`register_pinned`)
PINNED: dict[str, PinnedDataset] = {}


def register_pinned(dataset: PinnedDataset) -> None:
    """Add (or replace) a pinned dataset."""
    PINNED[dataset.name] = dataset


for _ds in (
    _github("llmbar", *_LLMBAR, what="LLMBar: the Natural split and the four adversarial ones (419 pairs)",
            reads="loader llmbar", licence="MIT", source="Dataset/LLMBar"),
    _github("llmbar-results", *_LLMBAR,
            what="two published LLMBar judge runs on Natural (GPT-4 Vanilla, ChatGPT CoT), both orders",
            reads="import llmbar", licence="MIT", source="Dataset/LLMBar/Natural/evaluators"),
    _github("pandalm", *_PANDALM, what="PandaLM test set v1 (999 pairs, three annotators each)",
            reads="loader pandalm", licence="Apache-2.0", source="data/testset-v1.json"),
    _github("pandalm-results", *_PANDALM,
            what="PandaLM's published verdict files on test set v1 (GPT-3.5, PandaLM-7B)",
            reads="import pandalm", licence="Apache-2.0", source="data"),
    _github("judgebench", "ScalerLab/JudgeBench", "e2c52c284e735e139b3daa61c206ee208f36c461",
            what="JudgeBench pairs: GPT-4o responses (350, read by default) and Claude-3.5-Sonnet responses (270)",
            reads="loader judgebench",
            licence="MIT (the dataset card of ScalerLab/JudgeBench on the Hugging Face hub)",
            source="data/dataset=judgebench,response_model=gpt-4o-2024-05-13.jsonl"),
    _github("prd", "bcdnlp/PRD", "35fb99e5d5c7a2f3535811f1edbe417da7563957",
            what="the Peer Rank and Discussion study's Vicuna-80 release: reviews by five LLMs, crowd votes, "
                 "answers, prompts, and the authors' notebook",
            reads="import prd", licence="MIT", source="data"),
    _github("halueval", "RUCAIBox/HaluEval", "b7253db3cdaa0ab2c382f92b26b390109174f77e",
            what="HaluEval general: 4,507 ChatGPT responses to user queries, each judged by people for hallucination",
            reads="loader halueval", licence="MIT", source="data/general_data.json"),
    _github("summeval", "DAMO-NLP-SG/LLM_summeval", "bd7dde15817a88940c17574973ff03e750356daa",
            what="SummEval expert ratings: 1,200 CNN/DM summaries by 12 abstractive systems, 3 experts x 4 "
                 "attributes 1-5, with the source articles",
            reads="loader summeval",
            licence="MIT (SummEval's annotations, Yale-LILY/SummEval; the processing repository has no licence "
                    "file of its own; the article text is CNN/DailyMail's)",
            source="model_output_annotations"),
    PinnedDataset(name="mtbench-human", upstream="https://huggingface.co/datasets/lmsys/mt_bench_human_judgments",
                  pin="61a35fc4ccb7094b60562bf3d82341080ea68201",
                  base_url=HF_DATASET.format(repo="lmsys/mt_bench_human_judgments",
                                             pin="61a35fc4ccb7094b60562bf3d82341080ea68201"),
                  what="MT-Bench expert pairwise votes (3,355 votes, human split)", reads="loader mtbench-human",
                  licence="CC-BY-4.0", files=_manifest("mtbench-human"),
                  source="data/human-00000-of-00001-25f4910818759289.parquet"),
):
    register_pinned(_ds)


def pinned(name: str) -> PinnedDataset | None:
    """The pinned dataset called ``name``, if there is one."""
    return PINNED.get(name)


__all__ = ["PINNED", "PinnedDataset", "PinnedFile", "pinned", "read_manifest", "register_pinned"]
