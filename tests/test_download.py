"""Downloading the pinned files: a real HTTP fetch from a loopback mirror, hash-checked."""

from __future__ import annotations

import functools
import http.server
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from safetyrepro.adapters import DataError, get_benchmark
from safetyrepro.adapters.datafiles import download, ensure_files, resolve_data_dir


@pytest.fixture
def mirror(tmp_path: Path, data_dir: Path) -> Iterator[Path]:
    """A loopback HTTP server over a copy of the XSTest and CrowS files."""
    root = tmp_path / "mirror"
    for name in ("xstest", "crows_pairs"):
        for f in get_benchmark(name).files:
            (root / f.path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(data_dir / f.path, root / f.path)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *a, **k: None  # type: ignore[attr-defined]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield root, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


@pytest.fixture
def cache_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.delenv("SAFETYREPRO_DATA_DIR", raising=False)
    monkeypatch.setenv("SAFETYREPRO_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_download_into_cache_and_load(mirror, cache_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, url = mirror
    monkeypatch.setenv("SAFETYREPRO_DATA_MIRROR", url)
    source = resolve_data_dir(None)
    assert source.origin == "cache" and source.root == cache_env / "data"
    items = get_benchmark("xstest").load(source)  # downloads, verifies, parses
    assert len(items) == 450
    assert (cache_env / "data/xstest/xstest_prompts.csv").read_bytes() == (root / "xstest/xstest_prompts.csv").read_bytes()
    # A second load reuses the verified file: the mirror may go away.
    monkeypatch.setenv("SAFETYREPRO_DATA_MIRROR", "http://127.0.0.1:9")
    assert len(ensure_files(get_benchmark("xstest").files, source)) == 1


def test_tampered_download_is_rejected_and_not_kept(mirror, cache_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, url = mirror
    served = root / "crows_pairs/crows_pairs_anonymized.csv"
    served.write_bytes(served.read_bytes() + b"\n")
    monkeypatch.setenv("SAFETYREPRO_DATA_MIRROR", url)
    with pytest.raises(DataError, match=r"crows_pairs_anonymized.csv has sha256 .* expected dfb36986"):
        download(get_benchmark("crows_pairs").files, resolve_data_dir(None))
    folder = cache_env / "data/crows_pairs"
    assert not any(folder.iterdir())  # no partial or wrong file left behind


def test_unreachable_source_is_one_clear_error(cache_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SAFETYREPRO_DATA_MIRROR", "http://127.0.0.1:9")
    with pytest.raises(DataError, match=r"could not download http://127.0.0.1:9/xstest/xstest_prompts.csv.*--data-dir"):
        download(get_benchmark("xstest").files, resolve_data_dir(None))
