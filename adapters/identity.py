"""What a model's responses depend on, as the request log records it: its weights (SHA-256 of the
weight files), the runtime that computes with them, and the library versions."""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path
from typing import Any

from .config import ModelSpec
from .errors import ConfigError

__all__ = ["analysis_versions", "identity", "identity_of", "library_versions", "weights_sha256"]


def library_versions() -> dict[str, str]:
    """The versions of the libraries a response's bytes depend on (``not installed`` where absent)."""
    return _versions(("safetyrepro", "torch", "transformers", "tokenizers", "bitsandbytes"))


def _versions(names: tuple[str, ...]) -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in names:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not installed"
    return out


ANALYSIS_LIBRARIES = ("safetyrepro", "numpy", "scipy", "pandas", "pyarrow", "pydantic")
"""What turns logged responses into results (metrics, intervals, tables, JSON): recorded in the
manifest, so ``verify`` elsewhere can tell a library's different last digit from an edit."""


def analysis_versions() -> dict[str, str]:
    """The versions of :data:`ANALYSIS_LIBRARIES` here, Python's, and the revision of the metric
    definitions (``metrics.METRIC_DEFINITIONS``: safetyrepro's own version does not move with them)."""
    import platform

    from .metrics import METRIC_DEFINITIONS

    return {"python": platform.python_version(), **_versions(ANALYSIS_LIBRARIES),
            "safetyrepro-metrics": METRIC_DEFINITIONS}


def weights_sha256(folder: str) -> str:
    """SHA-256 over the model folder's weight files (name and bytes, sorted): the model's identity.
    An HF id is resolved to its local snapshot; one that cannot be is identified by name only
    (``id:`` prefix), which the log then says. Hashed once per process while the files' sizes and
    times are unchanged (a grid and every ``safetyrepro run`` hash the same weights)."""
    root = Path(folder)
    if not root.is_dir():
        try:
            from huggingface_hub import snapshot_download

            root = Path(snapshot_download(folder, local_files_only=True))
        except Exception:  # noqa: BLE001 - any failure means: not resolvable to bytes here
            return "id:" + folder
    files = tuple(sorted(p for p in root.iterdir() if p.suffix in (".safetensors", ".bin", ".gguf") and p.is_file()))
    # The cache key is what identifies the bytes without reading them: the file each name resolves
    # to (device, inode) and its size and change times (ctime moves on any write, even one that
    # restores mtime), so a swapped link or a file rewritten in place is hashed again.
    stamps = []
    for p in files:
        st = p.stat()
        stamps.append((str(p.resolve()), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    return _hash_files(files, tuple(stamps))


@functools.lru_cache(maxsize=16)
def _hash_files(files: tuple[Path, ...], stamps: tuple[tuple[Any, ...], ...]) -> str:
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.name.encode())
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def identity(model: Any) -> dict[str, Any]:
    """A grid model's identity (:func:`identity_of` its name and spec)."""
    return identity_of(model.name, model.spec)


def identity_of(name: str, spec: ModelSpec) -> dict[str, Any]:
    """What a model's responses depend on: its weights and the runtime that computes with them
    (NF4 on CPU depends on the CPU's kernel path; thread count moves nothing measurable)."""
    from .models.base import runtime_facts
    from .models.hf import weights_path

    path = spec.name_or_path
    if spec.endpoint is not None:  # what the observer knows of a server, by its identity level
        e = spec.endpoint
        weights = f"id:{e.model}@{e.url}"
        if e.identity == "L2":
            weights = weights_sha256(weights_path(spec))
            if weights.startswith("id:") or weights == hashlib.sha256().hexdigest():
                raise ConfigError(f"model {name} claims identity L2, and {path!r} holds no weight files "
                                  "here to hash", "set path to the local folder the server was started from, "
                                  "or claim identity L0 / L1")
        # (concurrency is the plan's, not the model's: a replay may run at another one)
        return {"name": name, "path": path, "quantization": "server", "dtype": "server",
                "weights_sha256": weights,
                "runtime": {"endpoint": e.url, "served_model": e.model, "api": e.api, "identity": e.identity}
                | ({"mirrors": list(e.mirrors)} if e.mirrors else {})}
    from .models.prefix import ENGINE

    facts = runtime_facts(spec.quantization, "cpu")
    found = {"name": name, "path": path, "quantization": spec.quantization,
             "weights_sha256": weights_sha256(weights_path(spec)),
             "runtime": {k: v for k, v in facts.items() if k != "torch_threads"} | {"engine": ENGINE}}
    # Same weights at another precision are another instrument; the default stays implicit so
    # logs written before the field existed keep their anchor. (Likewise the chat-template switch,
    # which a grid model leaves at its default.)
    return found | ({"dtype": spec.dtype} if spec.dtype != "float32" else {}) | (
        {"chat": spec.chat} if spec.chat is not None else {})
