#!/usr/bin/env bash
# The test suite on real data (../shared/data unless SAFETYREPRO_TEST_DATA says otherwise) and the
# real embedded model, offline.
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_VERBOSITY=error TOKENIZERS_PARALLELISM=false
export SAFETYREPRO_TEST_DATA=${SAFETYREPRO_TEST_DATA:-$(cd .. && pwd)/shared/data}
# Two worker processes, each taking whole test files (a file's module fixtures -- a loaded model, a
# harness run -- are built once): much of the suite is single-threaded (interpreter starts,
# imports, model loads, harness indexing), so two overlap on two cores. Fixed at 2, not the
# machine's core count: each worker loads models, and results never depend on it.
exec .venv/bin/python -m pytest -q -p no:cacheprovider --timeout=900 -n 2 --dist loadfile "$@"
