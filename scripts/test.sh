#!/usr/bin/env bash
# The test suite on real data (../shared/data unless SAFETYREPRO_TEST_DATA says otherwise) and the
# real embedded model, offline.
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_VERBOSITY=error TOKENIZERS_PARALLELISM=false
export SAFETYREPRO_TEST_DATA=${SAFETYREPRO_TEST_DATA:-$(cd .. && pwd)/shared/data}
exec .venv/bin/python -m pytest -q -p no:cacheprovider --timeout=900 "$@"
