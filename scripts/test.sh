#!/usr/bin/env bash
# The test suite on real data (../shared/data unless SAFETYREPRO_TEST_DATA says otherwise) and the
# real embedded model, offline.
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_VERBOSITY=error TOKENIZERS_PARALLELISM=false
# One torch (OpenMP) thread per process: two workers at two threads each on two cores spin-wait on
# each other (measured: a 2-worker suite at the default threads took 41.5 min, the 1-worker 31).
# Results do not depend on it (a thread count never enters a hash; tests that need another pin it).
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
export SAFETYREPRO_TEST_DATA=${SAFETYREPRO_TEST_DATA:-$(cd .. && pwd)/shared/data}
# Two workers, a file each at a time (--dist loadfile keeps a module's fixtures in one process; the
# heaviest files go first, tests/conftest.py says why): one process left a core idle. Extra
# arguments pass through; -n 0 runs in this process.
exec .venv/bin/python -m pytest -q -p no:cacheprovider --timeout=900 \
  -n 2 --dist loadfile --no-loadscope-reorder "$@"
