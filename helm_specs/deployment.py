"""HELM model deployments for SafetyRepro models: writing them (``safetyrepro helm prod-env``) and
reading back which core model a HELM run used.

A deployment runs on HELM's stock ``HuggingFaceClient`` (HELM's own model loading, generation and
echo logprobs), serialised (``SerialHuggingFaceClient``, see ``client.py``), with
``apply_chat_template: false``: the scenario has already rendered the core's
chat-templated prompt, so the client must pass it through unchanged (see ``helm_specs/README.md``).
NF4 points the client at the core's pre-quantised checkpoint, so HELM, lm-eval and the reference
runner compute with the same weight bytes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from safetyrepro.adapters import ConfigError, ModelSpec
from safetyrepro.adapters.atomic import replace_file
from safetyrepro.adapters.config import EMBEDDED

CLIENT = "safetyrepro.helm_specs.client.SerialHuggingFaceClient"
STOCK_CLIENTS = (CLIENT, "helm.clients.huggingface_client.HuggingFaceClient")
TOKENIZER = "helm.tokenizers.huggingface_tokenizer.HuggingFaceTokenizer"
ORGANIZATION = "safetyrepro"
EMBEDDED_NAME = "smollm2-135m-instruct"
FILES = ("model_metadata.yaml", "tokenizer_configs.yaml", "model_deployments.yaml")
_SECTIONS = {"model_metadata.yaml": "models", "tokenizer_configs.yaml": "tokenizer_configs",
             "model_deployments.yaml": "model_deployments"}
_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*/[a-z0-9][a-z0-9._-]*$")


@dataclass(frozen=True)
class Deployment:
    """One model as HELM sees it: names plus the folder its weights load from."""

    name: str
    """HELM model name and deployment name (``safetyrepro/<model>``)."""
    spec: ModelSpec
    """The core's model spec (``embedded`` or a folder, and its quantization)."""
    weights: str
    """Folder HELM's client loads (the NF4 checkpoint for ``nf4``)."""
    tokenizer_path: str
    eos_token: str
    max_length: int
    stock_chat: bool = False
    """HELM's stock behaviour (crosspkg native runs): the client decides whether to apply the
    chat template, to the whole prompt as one user turn; SafetyRepro entries never use it."""
    bos_off: bool = False
    """The tokenizer adds a BOS to plain text; HELM's tokenizer is loaded with ``add_bos_token:
    false`` so its client does not put one before the chat template's own."""

    def entries(self) -> dict[str, dict[str, Any]]:
        """This model's entry in each of the three prod_env files."""
        display = self.name.split("/", 1)[1]
        return {
            "model_metadata.yaml": {
                "name": self.name, "display_name": f"{display} (SafetyRepro)",
                "description": f"SafetyRepro model {self.spec.model_dump_json()}",
                "creator_organization_name": ORGANIZATION, "access": "open",
                "tags": ["TEXT_MODEL_TAG", "FULL_FUNCTIONALITY_TEXT_MODEL_TAG"],
            },
            "tokenizer_configs.yaml": {
                "name": self.name,
                "tokenizer_spec": {"class_name": TOKENIZER, "args": {
                    "pretrained_model_name_or_path": self.tokenizer_path,
                    # Tokenizers converted from GGUF say model_max_length=1e30, which HELM rejects.
                    "model_max_length": self.max_length, **({"add_bos_token": False} if self.bos_off else {})}},
                "end_of_text_token": self.eos_token, "prefix_token": self.eos_token,
            },
            "model_deployments.yaml": {
                "name": self.name, "model_name": self.name, "tokenizer_name": self.name,
                "max_sequence_length": self.max_length,
                "client_spec": {"class_name": CLIENT, "args": {
                    "pretrained_model_name_or_path": self.weights, "device": "cpu",
                    # The prompt arrives chat-templated by the core; templating it again would
                    # wrap it (and on the logprob path the candidate) in a second user turn.
                    **({} if self.stock_chat else {"apply_chat_template": False}),
                    "torch_dtype": f"torch.{self.spec.dtype}"}},
            },
        }


def deployment_for(spec: ModelSpec, name: str | None = None) -> Deployment:
    """The deployment of one core model; converts the embedded model / writes the NF4 copy once."""
    from transformers import AutoConfig

    from safetyrepro.adapters import ChatFormatter
    from safetyrepro.adapters.models.hf import weights_path

    formatter = ChatFormatter(spec)
    if not formatter.chat:
        raise ConfigError(f"model {spec.name_or_path!r} has no chat template",
                          "HELM run entries render the core's chat prompt; use a chat (instruct) model")
    weights = weights_path(spec)
    config = AutoConfig.from_pretrained(formatter.path)
    max_length = int(min(getattr(config, "max_position_embeddings", None) or 2048,
                         formatter.tokenizer.model_max_length or 2048))
    if name is None:
        base = EMBEDDED_NAME if spec.name_or_path == EMBEDDED else Path(spec.name_or_path).name
        base = re.sub(r"[^a-z0-9._-]+", "-", base.lower()).strip("-") or "model"
        name = f"{ORGANIZATION}/{base}" + ("-nf4" if spec.quantization == "nf4" else "")
    if not _NAME.match(name):
        raise ConfigError(f"HELM model name {name!r} is not of the form organization/model",
                          "use lower-case letters, digits, '.', '_' or '-' on each side of one '/'")
    tok = formatter.tokenizer
    bos_off = False
    if _adds_tokens(tok):
        # HELM's client tokenises with special tokens, so a BOS would precede the template's own.
        from transformers import AutoTokenizer

        bos_off = not _adds_tokens(AutoTokenizer.from_pretrained(formatter.path, add_bos_token=False))
        if not bos_off:
            raise ConfigError(f"model {spec.name_or_path!r}: its tokenizer adds special tokens to every text, which "
                              "HELM's client would put before the chat template's own",
                              "use a model whose tokenizer adds none, or whose BOS can be turned off (add_bos_token)")
    return Deployment(name=name, spec=spec, weights=weights, tokenizer_path=formatter.path,
                      eos_token=str(tok.eos_token), max_length=max_length, bos_off=bos_off)


def _adds_tokens(tokenizer: Any) -> bool:
    return len(tokenizer("x")["input_ids"]) != len(tokenizer("x", add_special_tokens=False)["input_ids"])


def write_prod_env(out: Path, deployments: list[Deployment]) -> list[Path]:
    """Write (or merge into) the three prod_env files; an entry of the same name is replaced,
    every other entry is kept. Each file is replaced whole (``atomic.replace_file``)."""
    out.mkdir(parents=True, exist_ok=True)
    merged: dict[str, list[dict[str, Any]]] = {}
    for filename, section in _SECTIONS.items():
        path = out / filename
        existing: list[dict[str, Any]] = []
        if path.exists():
            try:
                loaded = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
            except (yaml.YAMLError, UnicodeDecodeError) as exc:
                raise ConfigError(f"{path} is not a readable YAML file ({type(exc).__name__})",
                                  "fix or remove it, or choose another --out folder") from None
            if not isinstance(loaded, dict) or not isinstance(loaded.get(section, []), list):
                raise ConfigError(f"{path} has no `{section}:` list", "fix or remove it, or choose another --out folder")
            existing = loaded.get(section, [])
        names = {d.name for d in deployments}
        merged[filename] = [e for e in existing if not (isinstance(e, dict) and e.get("name") in names)]
        merged[filename] += [d.entries()[filename] for d in deployments]
    written = []
    for filename, section in _SECTIONS.items():
        path = out / filename
        replace_file(path, yaml.safe_dump({section: merged[filename]}, sort_keys=False))
        written.append(path)
    return written


# ---- reading back: which model ran ---------------------------------------------------------

def spec_from_metadata(model_name: str) -> ModelSpec | None:
    """The core model spec ``prod-env`` wrote into the model's HELM metadata, if it did."""
    from helm.benchmark.model_metadata_registry import get_model_metadata

    try:
        description = get_model_metadata(model_name).description or ""
    except ValueError:
        return None
    prefix = "SafetyRepro model "
    if not description.startswith(prefix):
        return None
    return ModelSpec.model_validate_json(description[len(prefix):])


def run_model() -> tuple[str, str]:
    """(model name, deployment name) of the HELM run being executed.

    HELM gives a scenario no handle on the run's model; its own DSPy client reads the current run
    spec name the same way. ``helm-run`` names each run ``<entry>,model=<org>_<model>`` (and
    ``model_deployment=`` when one was given), with ``/`` written as ``_``."""
    from helm.benchmark import runner
    from helm.benchmark.model_deployment_registry import ALL_MODEL_DEPLOYMENTS

    from helm.benchmark.run_expander import RUN_EXPANDERS

    name = runner._get_current_run_spec_name() or ""
    args = dict(part.split("=", 1) for part in name.partition(":")[2].split(",") if "=" in part)
    expanders = [k for k in args if k in RUN_EXPANDERS and k not in ("model", "model_deployment")]
    if expanders:
        raise ConfigError(f"HELM run {name!r} applies HELM's {expanders[0]}= to a SafetyRepro entry, which would "
                          "change what the core asks",
                          "give safetyrepro run entries only their own arguments and model=")
    wanted_deployment, wanted_model = args.get("model_deployment"), args.get("model")
    for deployment in ALL_MODEL_DEPLOYMENTS:
        if wanted_deployment and deployment.name.replace("/", "_") == wanted_deployment:
            return str(deployment.model_name or deployment.name), deployment.name
    if wanted_model:
        from helm.benchmark.model_deployment_registry import get_default_model_deployment_for_model

        for deployment in ALL_MODEL_DEPLOYMENTS:
            model = deployment.model_name or deployment.name
            if model.replace("/", "_") == wanted_model:
                return model, get_default_model_deployment_for_model(model) or deployment.name
    raise ConfigError(f"cannot tell which model HELM run {name or '(none)'!r} uses",
                      "run SafetyRepro entries through helm-run with model=<a model from `safetyrepro helm prod-env`>")


def spec_for_deployment(model_name: str, deployment_name: str) -> ModelSpec:
    """The core model spec behind a HELM deployment: the one ``prod-env`` recorded, else the
    folder HELM's client loads (which must be a local HF chat model)."""
    from helm.benchmark.model_deployment_registry import get_model_deployment

    recorded = spec_from_metadata(model_name)
    if recorded is not None:
        return recorded
    deployment = get_model_deployment(deployment_name)
    path = (deployment.client_spec.args or {}).get("pretrained_model_name_or_path")
    if deployment.client_spec.class_name not in STOCK_CLIENTS or not path:
        raise ConfigError(f"HELM deployment {deployment_name!r} is not a local Hugging Face model",
                          "write one with `safetyrepro helm prod-env --model PATH` and pass --local-path")
    folder = Path(path)
    source = folder / "SAFETYREPRO_NF4_SOURCE"
    if source.is_file():
        return ModelSpec(name_or_path=source.read_text().strip(), quantization="nf4")
    return ModelSpec(name_or_path=str(folder))

