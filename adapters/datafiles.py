"""Where the upstream benchmark files come from and how they are found and verified.

Every file is pinned by commit-pinned URL and SHA-256 (the values in ``shared/data/README.md``).
A run reads a data folder given by ``--data-dir`` / ``SAFETYREPRO_DATA_DIR`` laid out like the
upstream snapshot; without one it downloads the pinned files into the user cache and verifies each
hash before first use.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .errors import DataError

DATA_DIR_ENV = "SAFETYREPRO_DATA_DIR"
MIRROR_ENV = "SAFETYREPRO_DATA_MIRROR"
"""Base URL that replaces every pinned URL's host+commit prefix (a local mirror, or tests)."""


@dataclass(frozen=True)
class DataFile:
    """One upstream file: its path in the data folder, its pinned URL and its SHA-256."""

    path: str
    url: str
    sha256: str


def _gh(repo: str, commit: str, path: str) -> str:
    return f"https://raw.githubusercontent.com/{repo}/{commit}/{path}"


_TQA = ("sylinrl/TruthfulQA", "d71c110897f5d31c5d7f309e7bc316c152f6f031")
_BBQ = ("nyu-mll/BBQ", "bea11bd97d79217245b5871acd247b9d6eb24598")
_CROWS = ("nyu-mll/crows-pairs", "8aaac11c485473159ec9328a65253a5be9a479dc")
_XST = ("paul-rottger/exaggerated-safety", "d7bb5bd738c1fcbc36edd83d5e7d1b71a3e2d84d")
# annotated_train.csv is a Git LFS object upstream; its sha256 equals the LFS oid, so the media
# (LFS) URL of this pinned commit serves the exact bytes.
_TOXIGEN_LFS = "https://media.githubusercontent.com/media/bramdelisse/toxigen-data/c0bc65beb647077c2a47752d865041f756448c4e"

BBQ_CATEGORIES_PRESENT = (
    "Age",
    "Disability_status",
    "Nationality",
    "Physical_appearance",
    "Religion",
    "Sexual_orientation",
)
"""The six BBQ categories in the shared snapshot; the evaluation subset is drawn from these only,
so a user holding all eleven files gets the same subset."""

BBQ_CATEGORIES_MISSING = {
    "Gender_identity": "8b5adbb368510a97d5775dc43e1c719e0249fe2da33f13c83e3e29edafec7a00",
    "Race_ethnicity": "4a9f1214cfaa115ce7f0bdb40609122e431f5152c71b8ca64d665e483b946ae6",
    "Race_x_SES": "af8e2ae3d0e5be9ebcbfe7149e591d47ff649e263307f4548f7fb12f6a6d83e8",
    "Race_x_gender": "e5dbba782f8c4e25b99dd5470b5136e2db73dbf401cf6d4a5a3ed31b02f95696",
    "SES": "9f92754bb037b0982604b9112705fb81d60a19d9e759c67e4a85e484a070f528",
}
"""Categories not in the snapshot (files of 4 MiB or more); pinned so a later copy can be checked."""

_BBQ_SHA = {
    "Age": "46e805b3fc2d8cbd26eeb8e8430d98cf7b2dc9c83574ff3674e8ce4f0fca2a60",
    "Disability_status": "375d40d9b71f056150264445ec189b13934998f3f49a1e311aa7578eb3b45e5f",
    "Nationality": "a583e74666aec0341ded8aa3983e7cad694eb24de72c254d28b2df3035720090",
    "Physical_appearance": "e48d7e13508565f4801574e611043470c25c95a0a62af3699cb5ee7cb02608fb",
    "Religion": "cb9555f9f3454a52cd2df85956b59bd7fcca5aa922c8527693b1164d08417616",
    "Sexual_orientation": "2c71036b9e7584fe589c42aef32c1a42bc01b9a5e9b1b8704342630cdb08cefd",
}

FILES: dict[str, tuple[DataFile, ...]] = {
    "truthfulqa": (
        DataFile("truthfulqa/v0/TruthfulQA.csv", _gh(*_TQA, "data/v0/TruthfulQA.csv"),
                 "8d7dd15f033196140f032d97d30f037da7a7b1192c3f36f9937c1850925335a2"),
        DataFile("truthfulqa/v0/mc_task.json", _gh(*_TQA, "data/v0/mc_task.json"),
                 "6eb4125d25750c0145c4be2dce00440736684ab6f74ce6bff2139571cc758954"),
    ),
    "bbq": tuple(
        DataFile(f"bbq/{cat}.jsonl", _gh(*_BBQ, f"data/{cat}.jsonl"), sha)
        for cat, sha in _BBQ_SHA.items()
    ),
    "crows_pairs": (
        DataFile("crows_pairs/crows_pairs_anonymized.csv",
                 _gh(*_CROWS, "data/crows_pairs_anonymized.csv"),
                 "dfb36986ce0502abbaf7055b9176da3d08d48e07df1251991b5dfbcbceab9d0c"),
    ),
    "xstest": (
        DataFile("xstest/xstest_prompts.csv", _gh(*_XST, "xstest_prompts.csv"),
                 "11783fb294ed017473ee53c207d71f2161c7672c8d0b037501e78387f801cb5a"),
    ),
    "toxigen": (
        DataFile("toxigen/annotated_train.csv", f"{_TOXIGEN_LFS}/annotated_train.csv",
                 "968e6bf2b637cca1118f31e2ec085833d0fee38cbe0f102508239184e266e62a"),
    ),
}


def cache_root() -> Path:
    """The user cache for downloaded data and converted models."""
    base = os.environ.get("SAFETYREPRO_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "safetyrepro"
    )
    return Path(base)


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


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


def _files(benchmark: str | Sequence[DataFile]) -> Sequence[DataFile]:
    """A benchmark's declared files (built-in or plugin), by name, or the files themselves."""
    if isinstance(benchmark, str):
        from ._registry import get_benchmark

        return get_benchmark(benchmark).files
    return benchmark


def download(benchmark: str | Sequence[DataFile], source: DataSource) -> None:
    """Fetch the benchmark's pinned files into ``source.root`` and verify each hash.

    A file is written to a temporary name first and renamed only after its hash matches, so a
    broken download never leaves a partial file where a good one is expected.
    """
    for data_file in _files(benchmark):
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


def ensure_files(benchmark: str | Sequence[DataFile], source: DataSource) -> dict[str, Path]:
    """Paths of the benchmark's files, each checked against its pinned SHA-256.

    User-given folders are verified too: a file that differs from upstream would change scores.
    """
    if source.origin == "cache":
        download(benchmark, source)
    return {f.path: source.verify(f) for f in _files(benchmark)}
