"""Where the upstream benchmark files come from and how they are found and verified.

Every file is pinned by commit-pinned URL and SHA-256 (the values in ``shared/data/README.md``);
each benchmark module declares its own (``Benchmark.files``), and this module takes those
:class:`DataFile` s, never benchmark names.
A run reads a data folder given by ``--data-dir`` / ``SAFETYREPRO_DATA_DIR`` laid out like the
upstream snapshot; without one it downloads the pinned files into the user cache and verifies each
hash before first use.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .errors import DataError
from .hashing import sha256_file

DATA_DIR_ENV = "SAFETYREPRO_DATA_DIR"
MIRROR_ENV = "SAFETYREPRO_DATA_MIRROR"
"""Base URL that replaces every pinned URL's host+commit prefix (a local mirror, or tests)."""


@dataclass(frozen=True)
class DataFile:
    """One upstream file: its path in the data folder, its pinned URL and its SHA-256."""

    path: str
    url: str
    sha256: str


def github_raw(repo: str, commit: str, path: str) -> str:
    """A file's URL at a pinned commit of a GitHub repository."""
    return f"https://raw.githubusercontent.com/{repo}/{commit}/{path}"


def cache_root() -> Path:
    """The user cache for downloaded data and converted models."""
    base = os.environ.get("SAFETYREPRO_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "safetyrepro"
    )
    return Path(base)


def sha256_of(path: Path) -> str:
    """A data file's SHA-256 (``hashing.sha256_file``)."""
    return sha256_file(path)


def _url(data_file: DataFile) -> str:
    """The pinned URL, or the same file on the mirror (laid out like the data folder)."""
    mirror = os.environ.get(MIRROR_ENV)
    return mirror.rstrip("/") + "/" + data_file.path if mirror else data_file.url


@dataclass(frozen=True)
class DataSource:
    """A resolved data folder and whether its files are checked against the pinned hashes."""

    root: Path
    origin: str  # "folder" (user-given) or "cache" (downloaded)

    def file(self, data_file: DataFile) -> Path:
        path = self.root / data_file.path
        if not path.is_file():
            raise DataError(
                f"data file {path} is missing",
                f"point --data-dir / {DATA_DIR_ENV} at a folder laid out like the upstream "
                f"snapshot (it must contain {data_file.path}), or omit it to download the pinned files",
            )
        return path

    def verify(self, data_file: DataFile) -> Path:
        path = self.file(data_file)
        actual = sha256_of(path)
        if actual != data_file.sha256:
            raise DataError(
                f"data file {path} has sha256 {actual}, expected {data_file.sha256} "
                f"(upstream {data_file.url})",
                "replace it with the pinned upstream file; a modified copy would silently change every score",
            )
        return path


def resolve_data_dir(data_dir: str | os.PathLike[str] | None = None) -> DataSource:
    """The data folder from the argument, then ``SAFETYREPRO_DATA_DIR``, else the download cache."""
    given = data_dir if data_dir is not None else os.environ.get(DATA_DIR_ENV)
    if given:
        root = Path(given).expanduser()
        if root.exists() and not root.is_dir():
            raise DataError(
                f"data folder {root} is a file, not a folder",
                f"pass a folder laid out like the upstream snapshot to --data-dir / {DATA_DIR_ENV}",
            )
        if not root.is_dir():
            raise DataError(
                f"data folder {root} does not exist",
                f"pass an existing folder laid out like the upstream snapshot to --data-dir / {DATA_DIR_ENV}",
            )
        return DataSource(root.resolve(), "folder")
    return DataSource(cache_root() / "data", "cache")


def download(files: Sequence[DataFile], source: DataSource) -> None:
    """Fetch the pinned files (a benchmark's ``files``) into ``source.root`` and verify each hash.

    A file is written to a temporary name first and renamed only after its hash matches, so a
    broken download never leaves a partial file where a good one is expected.
    """
    for data_file in files:
        target = source.root / data_file.path
        if target.is_file() and sha256_of(target) == data_file.sha256:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        url = _url(data_file)
        fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=".download-")
        tmp = Path(tmp_name)
        try:
            with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=60) as response:
                shutil.copyfileobj(response, out)
            actual = sha256_of(tmp)
            if actual != data_file.sha256:
                raise DataError(
                    f"download of {url} has sha256 {actual}, expected {data_file.sha256}",
                    "the upstream file changed or the mirror is wrong; use --data-dir with verified files",
                )
            os.replace(tmp, target)
        except (urllib.error.URLError, OSError) as exc:
            raise DataError(
                f"could not download {url} ({exc})",
                f"check the network, or pass --data-dir / {DATA_DIR_ENV} with the files already on disk",
            ) from None
        finally:
            tmp.unlink(missing_ok=True)


def ensure_files(files: Sequence[DataFile], source: DataSource) -> dict[str, Path]:
    """Paths of the files (a benchmark's ``files``), each checked against its pinned SHA-256.

    User-given folders are verified too: a file that differs from upstream would change scores.
    """
    if source.origin == "cache":
        download(files, source)
    return {f.path: source.verify(f) for f in files}
