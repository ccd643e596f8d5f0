"""Downloading a pinned dataset (:mod:`.pins`): resumable, verified and atomic.

Each file is written to ``<final name>.part`` beside its final place, flushed to disk (``fsync``), its
size and SHA-256 checked against the manifest, and only then renamed to its final name (``os.replace``,
atomic on one file system).  So a killed fetch never leaves a half file under a final name, and a
dataset is fetched exactly when all its final names exist (:func:`.fetched.is_fetched`).

* **Resume.**  A ``.part`` left by an interrupted fetch (killed, a dropped connection, a timeout) is
  continued with an HTTP ``Range`` request; a server that answers the whole file instead (200) starts
  it over.  A ``.part`` as long as the file is checked without a request.
* **Verified.**  A file whose SHA-256 (or size) differs from the manifest is deleted and reported
  (:class:`ChecksumError`): a corrupted download or a mirror that holds another version.
* **Where from.**  Upstream (the pinned commit's raw files), or ``mirror``: an ``http(s)://`` base URL
  or a local folder holding ``<name>/<upstream path>`` for each dataset -- the layout ``fetch(...,
  to=DIR)`` writes, so a folder fetched once can serve as the mirror of a machine without network -- or
  a local copy of the upstream repository itself (``<upstream path>``).
  ``VERDICTLAB_DATASETS_MIRROR`` gives the mirror when none is passed.
* **Errors**, one line each, kinds of :mod:`verdictlab.errors`: :class:`DownloadError` (a 404 or other
  HTTP error, a truncated body, a server that sends nothing for ``timeout`` seconds, no network; exit 7)
  and :class:`ChecksumError` (exit 8); ``docs/errors.md`` lists them.

HTTP goes through httpx (a dependency already), which follows redirects (the Hugging Face hub answers
with one) and honours the usual proxy variables.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import ChecksumError, DownloadError, UsageError
from .fetched import MIRROR_ENV, cache_dir
from .pins import PINNED, PinnedDataset, PinnedFile

if TYPE_CHECKING:
    import httpx

#: seconds without a byte (or a connection) before a download is given up
DEFAULT_TIMEOUT = 30.0
_CHUNK = 1 << 16

#: what a fetch raises: a file that could not be downloaded (exit 7; what arrived is kept in its
#: ``.part`` file, and the next fetch resumes from it), or one that is not the pinned file (exit 8; deleted)
FetchError = (DownloadError, ChecksumError)


@dataclass(frozen=True)
class FetchResult:
    """What a fetch did for one dataset."""

    name: str
    pin: str
    directory: Path         # the dataset's files are under it, at their upstream paths
    downloaded: int         # files downloaded (or completed) now
    present: int            # files that were already there, verified again
    bytes_read: int         # bytes received now


class FetchProgress(Protocol):
    """What a fetch reports as it goes (a terminal bar in the CLI); the methods here report nothing."""

    def begin(self, dataset: PinnedDataset, total: int, done: int) -> None:
        """``dataset`` starts: ``total`` bytes in all, ``done`` of them already here."""
        return None

    def advance(self, n: int) -> None:
        """``n`` more bytes arrived (negative: a partial file was started over)."""
        return None

    def end(self, result: FetchResult) -> None:
        """The dataset is fetched."""
        return None


class _Silent(FetchProgress):
    pass


def default_mirror() -> str | None:
    """The mirror named by ``VERDICTLAB_DATASETS_MIRROR``, if any."""
    return os.environ.get(MIRROR_ENV) or None


def fetch_datasets(names: Sequence[str], *, to: str | Path | None = None, mirror: str | Path | None = None,
                   timeout: float = DEFAULT_TIMEOUT, progress: FetchProgress | None = None) -> list[FetchResult]:
    """Fetch each named dataset into the cache (or ``to/<name>/``), from upstream or ``mirror``
    (default :func:`default_mirror`).  An unknown name raises :class:`UsageError` before anything is
    downloaded; a failed file raises :class:`DownloadError` or :class:`ChecksumError` (files finished
    before it are kept)."""
    unknown = [n for n in names if n not in PINNED]
    if unknown:
        raise UsageError(f"unknown dataset {unknown[0]!r}; verdictlab can fetch: {', '.join(sorted(PINNED))}")
    mirror = default_mirror() if mirror is None else mirror
    progress = progress or _Silent()
    with _origin(mirror, timeout) as origin:
        return [_fetch_one(PINNED[n], origin, Path(to) / n if to is not None else cache_dir(PINNED[n]), progress)
                for n in dict.fromkeys(names)]


def _fetch_one(dataset: PinnedDataset, origin: _Origin, directory: Path, progress: FetchProgress) -> FetchResult:
    directory.mkdir(parents=True, exist_ok=True)
    with _locked(directory):
        present = [f for f in dataset.files if _verified_in_place(directory / f.path, f)]
        todo = [f for f in dataset.files if f not in present]
        parts = sum(min(_size(_part(directory / f.path)), f.size) for f in todo)
        progress.begin(dataset, sum(f.size for f in todo), parts)
        got = sum(_download(origin, dataset, f, directory / f.path, progress) for f in todo)
    result = FetchResult(dataset.name, dataset.pin, directory, len(todo), len(present), got)
    progress.end(result)
    return result


# -- one file ---------------------------------------------------------------------------------------------

def _part(dest: Path) -> Path:
    return dest.with_name(dest.name + ".part")


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _verified_in_place(dest: Path, file: PinnedFile) -> bool:
    """``dest`` holds the pinned file; a final file that does not (changed on disk since) is removed."""
    if not dest.is_file():
        return False
    if dest.stat().st_size == file.size and _sha256(dest) == file.sha256:
        return True
    dest.unlink()
    return False


def _download(origin: _Origin, dataset: PinnedDataset, file: PinnedFile, dest: Path,
              progress: FetchProgress) -> int:
    """Download ``file`` to ``dest`` through its ``.part`` file (resumed when there is one), verify it and
    give it its final name.  Returns the bytes received."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = _part(dest)
    have = _size(part)
    if have > file.size:                        # longer than the file: not a beginning of it
        part.unlink()
        progress.advance(-file.size)
        have = 0
    where = origin.where(dataset, file)
    got = 0
    if have < file.size:
        got = origin.copy(dataset, file, part, have, progress)
    _place(part, dest, file, where)
    return got


def _place(part: Path, dest: Path, file: PinnedFile, where: str) -> None:
    """Check the finished ``.part`` against the manifest and rename it to ``dest`` (atomic)."""
    size = _size(part)
    if size < file.size:
        raise DownloadError(f"{where}: {size:,} of {file.size:,} bytes arrived (truncated); rerun to resume")
    digest = _sha256(part)
    if size != file.size or digest != file.sha256:
        part.unlink()
        raise ChecksumError(f"{where}: SHA-256 {digest[:16]}... ({size:,} bytes) is not the pinned "
                            f"{file.sha256[:16]}... ({file.size:,} bytes): a corrupted download or another "
                            f"version of the file; it was deleted")
    os.replace(part, dest)
    _fsync_dir(dest.parent)


def _fsync_dir(directory: Path) -> None:
    """Make a rename in ``directory`` durable (where the platform can open a folder)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write(part: Path, append: bool, chunks: Iterator[bytes], progress: FetchProgress) -> int:
    """Write ``chunks`` to ``part`` (appended, or from the start) and flush them to disk, also when the
    source fails half-way: what arrived is kept for the next fetch to resume from."""
    n = 0
    with open(part, "ab" if append else "wb") as out:
        try:
            for chunk in chunks:
                out.write(chunk)
                n += len(chunk)
                progress.advance(len(chunk))
        finally:
            out.flush()
            os.fsync(out.fileno())
    return n


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    """One fetch at a time per dataset folder (two would append to the same ``.part`` files)."""
    try:
        import fcntl
    except ImportError:                          # not POSIX: no lock
        yield
        return
    with open(directory / ".fetch.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


# -- where the bytes come from ----------------------------------------------------------------------------

class _Origin:
    def where(self, dataset: PinnedDataset, file: PinnedFile) -> str:
        raise NotImplementedError

    def copy(self, dataset: PinnedDataset, file: PinnedFile, part: Path, offset: int,
             progress: FetchProgress) -> int:
        """Append the bytes of ``file`` from ``offset`` to ``part`` (or rewrite it from the start when
        the source cannot begin there); the bytes received."""
        raise NotImplementedError


@contextlib.contextmanager
def _origin(mirror: str | Path | None, timeout: float) -> Iterator[_Origin]:
    text = None if mirror is None else os.fspath(mirror)
    if text is not None and not text.startswith(("http://", "https://")):
        yield _FolderOrigin(Path(text.removeprefix("file://")).expanduser())
        return
    from importlib.metadata import version

    import httpx

    with httpx.Client(follow_redirects=True, timeout=timeout,
                      headers={"User-Agent": f"verdictlab/{version('verdictlab')}"}) as client:
        yield _HttpOrigin(client, text, timeout)


class _FolderOrigin(_Origin):
    """A local mirror: ``<folder>/<name>/<upstream path>`` (what ``to=`` writes), or a copy of the upstream
    repository itself, ``<folder>/<upstream path>`` (a clone of it, or its files unpacked)."""

    def __init__(self, folder: Path) -> None:
        if not folder.is_dir():
            raise DownloadError(f"mirror {folder}: no such folder")
        self.folder = folder

    def _source(self, dataset: PinnedDataset, file: PinnedFile) -> Path | None:
        return next((p for p in (self.folder / dataset.name / file.path, self.folder / file.path) if p.is_file()),
                    None)

    def where(self, dataset: PinnedDataset, file: PinnedFile) -> str:
        return str(self._source(dataset, file) or self.folder / dataset.name / file.path)

    def copy(self, dataset: PinnedDataset, file: PinnedFile, part: Path, offset: int,
             progress: FetchProgress) -> int:
        src = self._source(dataset, file)
        if src is None:
            raise DownloadError(f"{self.folder / dataset.name / file.path}: not in the mirror (a mirror folder holds "
                                f"<name>/<upstream path>, or is a copy of the upstream repository)")
        with open(src, "rb") as f:
            f.seek(offset)
            return _write(part, offset > 0, iter(lambda: f.read(_CHUNK), b""), progress)


class _HttpOrigin(_Origin):
    """Upstream, or an HTTP mirror: ``<base>/<name>/<upstream path>``."""

    def __init__(self, client: httpx.Client, mirror: str | None, timeout: float) -> None:
        self.client, self.mirror, self.timeout = client, mirror, timeout

    def where(self, dataset: PinnedDataset, file: PinnedFile) -> str:
        base = None if self.mirror is None else self.mirror.rstrip("/") + "/" + dataset.name
        return dataset.url(file, base)

    def copy(self, dataset: PinnedDataset, file: PinnedFile, part: Path, offset: int,
             progress: FetchProgress) -> int:
        import httpx

        url = self.where(dataset, file)
        # the file's own bytes (no gzip on the way: Range offsets and the SHA-256 are the file's)
        headers = {"Accept-Encoding": "identity", **({"Range": f"bytes={offset}-"} if offset else {})}
        try:
            with self.client.stream("GET", url, headers=headers) as response:
                resumed = _check_status(response, url, offset)
                if resumed is None:              # 416: the server's file ends before the part does
                    part.unlink()
                    raise ChecksumError(f"{url}: the server has no bytes after {offset:,}, the pinned file has "
                                        f"{file.size:,}: another version of the file; the partial download "
                                        f"was deleted")
                if offset and not resumed:
                    progress.advance(-offset)
                # as they arrive (no re-chunking: a partial last chunk is kept when the body is cut short)
                return _write(part, resumed, response.iter_raw(), progress)
        except httpx.TimeoutException:
            raise DownloadError(f"{url}: no answer for {self.timeout:g} s (timed out); rerun to resume") from None
        except httpx.RemoteProtocolError:
            raise DownloadError(f"{url}: the connection closed after {_size(part):,} of {file.size:,} bytes "
                                f"(truncated body); rerun to resume") from None
        except httpx.ConnectError as exc:
            host = httpx.URL(url).host
            if self.mirror is not None:
                raise DownloadError(f"cannot connect to the mirror {self.mirror} ({_reason(exc)})") from None
            raise DownloadError(f"cannot connect to {host} ({_reason(exc)}): no network? Fetch from a copy "
                                f"with --mirror URL|DIR") from None
        except httpx.HTTPError as exc:
            raise DownloadError(f"{url}: {type(exc).__name__}: {_reason(exc)}") from None


def _check_status(response: Any, url: str, offset: int) -> bool | None:
    """Whether the body continues the part at ``offset`` (a 206 from there) or starts the file over
    (200); ``None`` for 416 (the server's file ends before ``offset``).  An error status raises :class:`DownloadError`."""
    code = response.status_code
    if code == 416 and offset:
        return None
    if code == 404:
        raise DownloadError(f"{url}: not found (HTTP 404)")
    if code >= 400 or code not in (200, 206):
        raise DownloadError(f"{url}: HTTP {code} {response.reason_phrase}".rstrip())
    if code == 206:
        start = response.headers.get("content-range", "").removeprefix("bytes ").split("-", 1)[0]
        if start != str(offset):
            raise DownloadError(f"{url}: asked for the bytes from {offset:,}, the server sent "
                                f"{response.headers.get('content-range')!r}")
        return True
    return False


def _reason(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return " ".join(text.split())


__all__ = ["DEFAULT_TIMEOUT", "ChecksumError", "DownloadError", "FetchError",
           "FetchProgress", "FetchResult", "default_mirror", "fetch_datasets"]
