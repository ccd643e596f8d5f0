"""`verdictlab datasets fetch`: pinned, verified, resumable, atomic downloads (verdictlab.datasets.fetch).

The machinery is tested on a small dataset registered here only (``tiny``: two files of a few hundred
kilobytes, its manifest written from their bytes), served by a local HTTP server on 127.0.0.1
(tests/_mirror.py) that can fail in each way a download fails: a 404, a corrupted body, a body cut short,
a server too slow to answer, one that stalls half-way (to kill a fetch mid-file), one that ignores
``Range``.  The real pinned datasets are fetched from a mirror of the shared benchmark data (skipped with
the reason where it is absent), which also checks that every pinned SHA-256 is the one of the unmodified
upstream copies there.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from _mirror import BenchmarkMirror, Fault, MirrorServer, build_mirror
from verdictlab import errors as _errors
from verdictlab.cli.datasets_cmd import FETCH_TIMEOUT
from verdictlab.cli.main import app
from verdictlab.datasets import fetch as fetch_mod
from verdictlab.datasets.fetch import ChecksumError, DownloadError, fetch_datasets
from verdictlab.datasets.fetched import cache_dir, cache_home, is_fetched, resolve_source
from verdictlab.datasets.pins import PINNED, PinnedDataset, PinnedFile, read_manifest, register_pinned

runner = CliRunner()
REPO = Path(__file__).resolve().parents[1]
A_BYTES = bytes(range(256)) * 1200           # 307,200 bytes: several chunks of the 64 KiB reads
B_BYTES = b'{"item": 1, "note": "a small second file in a sub-folder"}\n'


def _pinned_file(path: str, data: bytes) -> PinnedFile:
    return PinnedFile(path=path, sha256=hashlib.sha256(data).hexdigest(), size=len(data))


TINY = PinnedDataset(
    name="tiny", what="two files for the fetch tests", reads="loader jsonl", upstream="http://127.0.0.1:9/tiny",
    base_url="http://127.0.0.1:9/nowhere/", pin="0123456789abcdef0123456789abcdef01234567", licence="CC0",
    files=(_pinned_file("data/a.bin", A_BYTES), _pinned_file("data/sub/b.json", B_BYTES)), source="data")

#: registers TINY in a subprocess (the kill test) the way the fixture does in this one
_REGISTER = f"""
import hashlib
from verdictlab.datasets.pins import PinnedDataset, PinnedFile, register_pinned
A = bytes(range(256)) * 1200
B = {B_BYTES!r}
f = lambda p, d: PinnedFile(path=p, sha256=hashlib.sha256(d).hexdigest(), size=len(d))
register_pinned(PinnedDataset(name="tiny", what="", reads="", upstream="", base_url="http://127.0.0.1:9/",
    pin={TINY.pin!r}, licence="", files=(f("data/a.bin", A), f("data/sub/b.json", B)), source="data"))
"""


@pytest.fixture
def tiny(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """TINY registered, an empty cache of this test, and a mirror folder holding its files (returned)."""
    monkeypatch.setenv("VERDICTLAB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("VERDICTLAB_DATASETS_MIRROR", raising=False)
    register_pinned(TINY)
    mirror = tmp_path / "mirror"
    (mirror / "tiny" / "data" / "sub").mkdir(parents=True)
    (mirror / "tiny" / "data" / "a.bin").write_bytes(A_BYTES)
    (mirror / "tiny" / "data" / "sub" / "b.json").write_bytes(B_BYTES)
    yield mirror
    PINNED.pop("tiny", None)


def _final(name: str = "tiny") -> Path:
    return cache_dir(PINNED[name])


def _fetch_cli(*args: str) -> tuple[int, str, str]:
    r = runner.invoke(app, ["datasets", "fetch", *args])
    return r.exit_code, r.stdout, r.stderr


def _one_error_line(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    return lines[0]


# -- the happy paths ----------------------------------------------------------------------------------------

def test_fetch_over_http_verifies_and_the_name_then_stands_for_the_files(tiny: Path) -> None:
    assert _listed_as("tiny") == "no"                                     # `datasets list` says which are fetched
    with MirrorServer(tiny) as srv:
        code, out, err = _fetch_cli("tiny", "--mirror", srv.url, "--format", "json")
    assert code == 0, err
    d = _final()
    assert d == cache_home() / "tiny" / TINY.pin
    assert (d / "data" / "a.bin").read_bytes() == A_BYTES and (d / "data" / "sub" / "b.json").read_bytes() == B_BYTES
    assert not list(d.rglob("*.part"))
    result = json.loads(out)["datasets"][0]
    assert result["downloaded"] == 2 and result["bytes_read"] == len(A_BYTES) + len(B_BYTES)
    assert "tiny: 2 file(s) downloaded" in err
    assert is_fetched(TINY) and _listed_as("tiny") == "yes"
    assert resolve_source("tiny") == str(d / "data")                      # the name: its source folder
    assert resolve_source("tiny/data/sub/b.json") == str(d / "data" / "sub" / "b.json")
    # the loader of a config entry without a path ... here jsonl, through --path NAME/PATH
    r = runner.invoke(app, ["datasets", "validate", "jsonl", "--path", "tiny/data/sub/b.json", "--format", "json"])
    assert r.exit_code == 3 and "response_a" in r.stdout                   # read (and found lacking): resolved
    # again: nothing downloaded, every file verified again
    with MirrorServer(tiny) as srv:
        code, out, err = _fetch_cli("tiny", "--mirror", srv.url, "--format", "json")
        assert srv.requests == []
    assert code == 0 and json.loads(out)["datasets"][0] == {**result, "downloaded": 0, "present": 2, "bytes_read": 0}
    assert "tiny: already fetched" in err


def test_a_folder_mirror_and_to_dir_write_the_layout_a_mirror_reads(tiny: Path, tmp_path: Path) -> None:
    code, _, err = _fetch_cli("tiny", "--mirror", str(tiny), "--to", str(tmp_path / "copy"))
    assert code == 0, err
    assert (tmp_path / "copy" / "tiny" / "data" / "a.bin").read_bytes() == A_BYTES
    assert not is_fetched(TINY)                                           # --to is not the cache
    code, _, err = _fetch_cli("tiny", "--mirror", str(tmp_path / "copy"))  # that copy serves as a mirror
    assert code == 0 and is_fetched(TINY), err


def test_a_copy_of_the_upstream_repository_is_a_mirror_too(tiny: Path, tmp_path: Path) -> None:
    """``--mirror DIR`` where DIR is the upstream repository itself (its files at their paths, no NAME/)."""
    code, _, err = _fetch_cli("tiny", "--mirror", str(tiny / "tiny"))
    assert code == 0 and is_fetched(TINY), err


def test_the_mirror_variable_is_the_default_mirror(tiny: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with MirrorServer(tiny) as srv:
        monkeypatch.setenv("VERDICTLAB_DATASETS_MIRROR", srv.url + "/")
        code, _, err = _fetch_cli("tiny")
        assert code == 0, err
        assert {path for path, _ in srv.requests} == {"tiny/data/a.bin", "tiny/data/sub/b.json"}


def test_a_run_configs_path_may_name_a_fetched_dataset(tiny: Path, tmp_path: Path) -> None:
    """``path: NAME/PATH`` in a run config reads a file of the fetched dataset (the only way to reach a
    file that is not the dataset's default, e.g. JudgeBench's Claude split); a file of that name beside
    the config still wins, and a name not fetched says which fetch to run."""
    pairs = (REPO / "examples" / "pairs.jsonl").read_bytes()
    register_pinned(PinnedDataset(name="tinypairs", what="", reads="loader jsonl", upstream="", licence="CC0",
                                  base_url="http://127.0.0.1:9/", pin=TINY.pin, source="data/pairs.jsonl",
                                  files=(_pinned_file("data/pairs.jsonl", pairs),)))
    try:
        mirror = tmp_path / "pairs-mirror"
        (mirror / "tinypairs" / "data").mkdir(parents=True)
        (mirror / "tinypairs" / "data" / "pairs.jsonl").write_bytes(pairs)
        cfg = tmp_path / "cfg" / "audit.yaml"
        cfg.parent.mkdir()
        cfg.write_text("name: t\ndatasets: [{name: jsonl, path: tinypairs/data/pairs.jsonl}, "
                       "{name: jsonl, path: tinypairs, dataset: whole}]\njudges: ['sim:skill=0.8,seed=1']\n"
                       "protocols: [direct]\nrepetitions: 1\n", encoding="utf-8")
        plan = ["run", str(cfg), "--run-dir", str(tmp_path / "run"), "--plan"]
        r = runner.invoke(app, plan)
        assert r.exit_code == 3 and "datasets fetch tinypairs" in r.stderr, r.output
        assert _fetch_cli("tinypairs", "--mirror", str(mirror))[0] == 0
        r = runner.invoke(app, plan)
        assert r.exit_code == 0, r.output
        assert "trials: 32 " in r.stdout             # 2 datasets x 8 pairs x 2 orders, read from the cache
        beside = cfg.parent / "tinypairs" / "data"   # a file beside the config wins over the name
        beside.mkdir(parents=True)
        (beside / "pairs.jsonl").write_text("not json\n", encoding="utf-8")
        r = runner.invoke(app, plan)
        assert r.exit_code == 3 and str(beside / "pairs.jsonl") in r.stderr, r.output
        # verdictlab.audit(data=...) takes the same NAME/PATH, as a string or in a config entry
        from verdictlab import audit, open_store

        for n, data in enumerate(("tinypairs/data/pairs.jsonl", {"name": "jsonl", "path": "tinypairs"})):
            audit("sim:skill=0.8,seed=1", data, repetitions=1, run_dir=tmp_path / f"audit{n}", progress=False)
            assert len(open_store(tmp_path / f"audit{n}").judgments()) == 16, data   # 8 pairs x 2 orders
    finally:
        PINNED.pop("tinypairs", None)


def test_upstream_urls_are_the_pinned_commits_raw_files() -> None:
    ds = PINNED["llmbar"]
    assert ds.url(ds.files[0]) == ("https://raw.githubusercontent.com/princeton-nlp/LLMBar/"
                                   f"{ds.pin}/Dataset/LLMBar/Natural/dataset.json")
    jb = PINNED["judgebench"]
    assert jb.url(jb.files[0]).endswith(f"/{jb.pin}/data/dataset%3Djudgebench%2Cresponse_model%3Dgpt-4o-2024-05-13.jsonl")
    mt = PINNED["mtbench-human"]
    assert mt.url(mt.files[0]).startswith(f"https://huggingface.co/datasets/lmsys/mt_bench_human_judgments/resolve/{mt.pin}/")
    assert ds.url(ds.files[0], "http://m/llmbar") == "http://m/llmbar/Dataset/LLMBar/Natural/dataset.json"


def test_the_cache_honours_xdg_cache_home_and_the_override(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("VERDICTLAB_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir(PINNED["llmbar"]) == tmp_path / "xdg" / "verdictlab" / "llmbar" / PINNED["llmbar"].pin
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_home() == tmp_path / "home" / ".cache" / "verdictlab"
    monkeypatch.setenv("VERDICTLAB_CACHE_DIR", str(tmp_path / "mine"))
    assert cache_home() == tmp_path / "mine"


# -- each failure: one line, a documented code, no half file under a final name -----------------------------

def test_a_corrupted_file_is_deleted_and_exits_8(tiny: Path) -> None:
    with MirrorServer(tiny, faults={"tiny/data/a.bin": Fault("corrupt")}) as srv:
        code, _, err = _fetch_cli("tiny", "--mirror", srv.url)
    assert code == _errors.EXIT_CORRUPT == 8
    line = _one_error_line(err)
    assert "tiny/data/a.bin: SHA-256" in line and "is not the pinned" in line and "deleted" in line
    assert not (_final() / "data" / "a.bin").exists() and not (_final() / "data" / "a.bin.part").exists()


def test_a_missing_file_exits_7_naming_the_url(tiny: Path) -> None:
    with MirrorServer(tiny, faults={"tiny/data/sub/b.json": Fault("404")}) as srv:
        code, _, err = _fetch_cli("tiny", "--mirror", srv.url)
    assert code == _errors.EXIT_DOWNLOAD == 7
    assert _one_error_line(err) == f"error: {srv.url}/tiny/data/sub/b.json: not found (HTTP 404)"
    assert (_final() / "data" / "a.bin").exists()                          # the file before it is kept
    assert not (_final() / "data" / "sub" / "b.json").exists() and not is_fetched(TINY)


def test_a_truncated_body_keeps_its_bytes_and_the_next_fetch_resumes_with_a_range(tiny: Path) -> None:
    with MirrorServer(tiny, faults={"tiny/data/a.bin": Fault("truncate", times=1)}) as srv:
        code, _, err = _fetch_cli("tiny", "--mirror", srv.url)
        assert code == 7
        line = _one_error_line(err)
        assert "tiny/data/a.bin: the connection closed after 153,600 of 307,200 bytes (truncated body)" in line
        part = _final() / "data" / "a.bin.part"
        assert part.read_bytes() == A_BYTES[:153_600] and not (_final() / "data" / "a.bin").exists()
        code, out, err = _fetch_cli("tiny", "--mirror", srv.url, "--format", "json")
        assert code == 0, err
        assert ("tiny/data/a.bin", "bytes=153600-") in srv.requests           # resumed, not started over
    assert (_final() / "data" / "a.bin").read_bytes() == A_BYTES and not part.exists()
    assert json.loads(out)["datasets"][0]["bytes_read"] == len(A_BYTES) - 153_600 + len(B_BYTES)


def test_a_server_that_ignores_range_is_read_from_the_start(tiny: Path) -> None:
    part = _final() / "data" / "a.bin.part"
    part.parent.mkdir(parents=True)
    part.write_bytes(b"\0" * 1000)                        # a wrong beginning: the 200 answer replaces it
    with MirrorServer(tiny, faults={"tiny/data/a.bin": Fault("no-range")}) as srv:
        code, _, err = _fetch_cli("tiny", "--mirror", srv.url)
        assert ("tiny/data/a.bin", "bytes=1000-") in srv.requests
    assert code == 0, err
    assert (_final() / "data" / "a.bin").read_bytes() == A_BYTES


def test_a_slow_server_times_out_with_one_line(tiny: Path) -> None:
    with MirrorServer(tiny, faults={"tiny/data/a.bin": Fault("slow", delay=3.0)}) as srv:
        t0 = time.monotonic()
        code, _, err = _fetch_cli("tiny", "--mirror", srv.url, "--timeout", "0.3")
        took = time.monotonic() - t0
    assert code == 7 and took < 2.5, (code, took)
    assert _one_error_line(err) == f"error: {srv.url}/tiny/data/a.bin: no answer for 0.3 s (timed out); rerun to resume"
    assert not (_final() / "data" / "a.bin").exists()


def test_no_network_is_one_line_and_exit_7(tiny: Path) -> None:
    with MirrorServer(tiny) as srv:
        url = srv.url                                   # a port nothing listens on once the server is gone
    code, _, err = _fetch_cli("tiny", "--mirror", url)
    assert code == 7
    line = _one_error_line(err)
    assert line.startswith(f"error: cannot connect to the mirror {url}") and "refused" in line.lower()
    # upstream itself (the pinned base URL) unreachable: the line says what to do without network
    with pytest.raises(DownloadError, match=r"cannot connect to 127\.0\.0\.1 .*no network\? Fetch from a copy with --mirror"):
        fetch_datasets(["tiny"], mirror=None)


def test_a_missing_file_in_a_folder_mirror_and_an_unknown_name(tiny: Path) -> None:
    (tiny / "tiny" / "data" / "sub" / "b.json").unlink()
    code, _, err = _fetch_cli("tiny", "--mirror", str(tiny))
    assert code == 7 and "tiny/data/sub/b.json: not in the mirror (a mirror folder holds" in _one_error_line(err)
    code, _, err = _fetch_cli("tiny", "nosuch", "--mirror", str(tiny))
    assert code == 2 and "unknown dataset 'nosuch'" in _one_error_line(err) and "llmbar" in err
    with pytest.raises(ChecksumError):                  # the API raises the same errors the CLI words
        (tiny / "tiny" / "data" / "sub" / "b.json").write_bytes(B_BYTES[::-1])
        fetch_datasets(["tiny"], mirror=tiny)


def test_a_killed_fetch_leaves_no_final_file_and_the_next_one_resumes(tiny: Path, tmp_path: Path) -> None:
    """SIGKILL while the server stalls half-way through the first file: its bytes are in ``a.bin.part``
    and nothing is under ``a.bin``; the next fetch asks for the rest and completes."""
    with MirrorServer(tiny, faults={"tiny/data/a.bin": Fault("stall", delay=30.0, times=1)}) as srv:
        code = _REGISTER + f"from verdictlab.datasets.fetch import fetch_datasets\nfetch_datasets(['tiny'], mirror={srv.url!r})\n"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
        proc = subprocess.Popen([sys.executable, "-c", code], env=env)
        part = _final() / "data" / "a.bin.part"
        deadline = time.monotonic() + 60
        while not (part.exists() and part.stat().st_size >= 153_600) and time.monotonic() < deadline:
            assert proc.poll() is None, "the fetch ended before it was killed"
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        assert part.stat().st_size == 153_600
        assert not (_final() / "data" / "a.bin").exists() and not is_fetched(TINY)
        [result] = fetch_datasets(["tiny"], mirror=srv.url)
        assert ("tiny/data/a.bin", "bytes=153600-") in srv.requests
    assert result.downloaded == 2 and (_final() / "data" / "a.bin").read_bytes() == A_BYTES


def test_the_progress_hears_every_byte(tiny: Path) -> None:
    class Count(fetch_mod.FetchProgress):
        def __init__(self) -> None:
            self.total = self.done = self.got = 0

        def begin(self, dataset: PinnedDataset, total: int, done: int) -> None:
            self.total, self.done = total, done

        def advance(self, n: int) -> None:
            self.got += n

    p = Count()
    fetch_datasets(["tiny"], mirror=tiny, progress=p)
    assert (p.total, p.done, p.got) == (len(A_BYTES) + len(B_BYTES), 0, len(A_BYTES) + len(B_BYTES))


# -- the pin table ------------------------------------------------------------------------------------------

def test_every_pinned_dataset_is_well_formed() -> None:
    from verdictlab.datasets import dataset_names

    assert {"llmbar", "llmbar-results", "pandalm", "judgebench", "mtbench-human", "prd"} <= set(PINNED)
    for name, ds in PINNED.items():
        assert name not in ("columns", "view"), name       # the cache's other folders
        assert len(ds.pin) == 40 and all(c in "0123456789abcdef" for c in ds.pin), name
        assert ds.files and ds.licence and ds.upstream.startswith("https://"), name
        assert len({f.path for f in ds.files}) == len(ds.files), name
        if ds.reads.startswith("loader "):
            assert ds.reads.removeprefix("loader ") == name and name in dataset_names(), name
        if ds.source is not None:                          # the source is a file of it, or a folder of its files
            assert any(f.path == ds.source or f.path.startswith(ds.source + "/") for f in ds.files), name


def test_a_manifest_line_must_say_hash_size_and_a_relative_path() -> None:
    good = "f" * 64 + " 12 data/x.json\n# a comment\n\n"
    assert read_manifest(good, name="x") == (PinnedFile("data/x.json", "f" * 64, 12),)
    for bad in ("abc 12 x.json", "f" * 64 + " twelve x.json", "f" * 64 + " 12 /etc/x", "f" * 64 + " 12 a/../../x"):
        with pytest.raises(ValueError, match="pins/x.txt, line 1"):
            read_manifest(bad, name="x")


def test_the_cli_and_the_library_agree_on_codes_and_timeout() -> None:
    assert DownloadError.exit_code == _errors.EXIT_DOWNLOAD == 7 and ChecksumError.exit_code == _errors.EXIT_CORRUPT == 8
    assert DownloadError is _errors.DownloadError and fetch_mod.FetchError == (DownloadError, ChecksumError)
    assert FETCH_TIMEOUT == fetch_mod.DEFAULT_TIMEOUT


# -- the real datasets, from a mirror of the shared benchmark data -----------------------------------------

def _need(mirror: BenchmarkMirror, *names: str) -> str:
    reason = mirror.unfetchable(names)
    if reason is not None:
        pytest.skip(reason)
    assert mirror.url is not None
    return mirror.url


def test_every_pin_matches_the_unmodified_upstream_copies(shared_data: Path, tmp_path: Path) -> None:
    """The pinned SHA-256 of every file of LLMBar, its published runs, PandaLM's test set and the PRD
    release is the one of the upstream copy in the shared data (a wrong pin would leave it out)."""
    built = build_mirror(shared_data, tmp_path / "m")
    assert {"llmbar", "llmbar-results", "pandalm", "prd"} <= set(built), built


def test_fetch_llmbar_then_show_and_list_it_by_name(benchmark_mirror: BenchmarkMirror, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    url = _need(benchmark_mirror, "llmbar")
    monkeypatch.setenv("VERDICTLAB_CACHE_DIR", str(tmp_path / "cache"))
    r = runner.invoke(app, ["datasets", "show", "llmbar", "--n", "1"])
    assert r.exit_code == 3 and "datasets fetch llmbar" in r.stderr, r.output
    assert _listed_as("llmbar") == "no"
    code, _, err = _fetch_cli("llmbar", "--mirror", url)
    assert code == 0, err
    r = runner.invoke(app, ["datasets", "show", "llmbar", "--n", "1", "--format", "json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["summary"]["n_items"] == 419 and out["items"][0]["item_id"] == "Natural-0"
    assert _listed_as("llmbar") == "yes" and _listed_as("pandalm") == "no"
    assert is_fetched(PINNED["llmbar"])
    r = runner.invoke(app, ["datasets", "show", "llmbar-results"])       # not fetched: says how
    assert r.exit_code == 0 and "datasets fetch llmbar-results" in r.stdout


def _listed_as(name: str) -> str:
    """The "fetched" cell of ``name`` in `datasets list`'s table of public benchmarks."""
    r = runner.invoke(app, ["datasets", "list"])
    assert r.exit_code == 0, r.output
    table = r.stdout.split("public benchmarks", 1)[1]
    row = next(ln for ln in table.splitlines() if ln.startswith(f"│ {name} "))
    return row.split("│")[2].strip()


def test_fetched_llmbar_results_reproduce_llmbars_figures(benchmark_mirror: BenchmarkMirror, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """``import llmbar llmbar-results``: the repository's evaluators/<judge>/<strategy>/result.json layout
    gives LLMBar's published accuracy and positional agreement (GPT-4 Vanilla 0.955 / 0.95)."""
    from verdictlab import FigurePolicy, open_store
    from verdictlab.stats import reliability

    url = _need(benchmark_mirror, "llmbar-results")
    monkeypatch.setenv("VERDICTLAB_CACHE_DIR", str(tmp_path / "cache"))
    assert _fetch_cli("llmbar-results", "--mirror", url)[0] == 0
    r = runner.invoke(app, ["import", "llmbar", "llmbar-results", "--run-dir", str(tmp_path / "run")])
    assert r.exit_code == 0, r.output
    cells = reliability(open_store(tmp_path / "run").judgments(), policy=FigurePolicy(unparsed="wrong")).set_index("judge")
    assert cells.loc["GPT-4", "A"] == pytest.approx(0.955) and cells.loc["GPT-4", "phi"] == pytest.approx(0.05)
    assert cells.loc["ChatGPT", "A"] == pytest.approx(0.74) and cells.loc["ChatGPT", "phi"] == pytest.approx(0.36)


def test_show_describes_a_dataset_only_import_reads(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("VERDICTLAB_CACHE_DIR", str(tmp_path / "cache"))
    r = runner.invoke(app, ["datasets", "show", "prd", "--format", "json"])
    assert r.exit_code == 0, r.output
    info = json.loads(r.stdout)["summary"]
    assert info["fetched"] is False and info["path"] is None and info["licence"] == "MIT"
    assert info["upstream"] == "https://github.com/bcdnlp/PRD" and info["files"] == len(PINNED["prd"].files)
    r = runner.invoke(app, ["import", "llmbar", "llmbar-results", "--run-dir", str(tmp_path / "run")])
    assert r.exit_code == 3 and "dataset 'llmbar-results' is not fetched; run `verdictlab datasets fetch" in r.stderr


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_a_terminal_sees_a_progress_bar_and_a_pipe_one_line(tiny: Path) -> None:
    import select

    with MirrorServer(tiny, faults={"tiny/data/a.bin": Fault("slow", delay=0.6)}) as srv:
        code = _REGISTER + ("import sys\nfrom verdictlab.cli import entry_point\n"
                            f"sys.argv = ['verdictlab', 'datasets', 'fetch', 'tiny', '--mirror', {srv.url!r}]\n"
                            "entry_point()\n")
        env = {**os.environ, "COLUMNS": "100", "TERM": "xterm",
               "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
        main, sub = os.openpty()
        proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=sub, env=env)
        os.close(sub)
        seen = b""
        while select.select([main], [], [], 60)[0]:
            try:
                chunk = os.read(main, 65536)
            except OSError:                      # the terminal closed: the command ended
                break
            if not chunk:
                break
            seen += chunk
        os.close(main)
        assert proc.wait(timeout=60) == 0
        err = seen.decode(errors="replace")
        assert "fetching tiny" in err and "kB" in err, err              # the bar: bytes and the rate
        assert "tiny: already fetched" not in err and "tiny: 2 file(s) downloaded" in err
        piped = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert piped.returncode == 0 and "fetching tiny" not in piped.stderr
    assert piped.stderr.strip().startswith("tiny: already fetched")
