"""What lm-eval's ``!function binding.<name>`` loads.

lm-eval executes this file anew for every ``!function`` reference in every task YAML, so it holds
nothing but a forward to the imported :mod:`safetyrepro.lm_eval_tasks.translate` (one module:
one registry, one cache of prepared cells). A generated task folder for plugins gets a copy.
"""

from safetyrepro.lm_eval_tasks.translate import *  # noqa: F401,F403
from safetyrepro.lm_eval_tasks.translate import CotLogprobTask, load_docs  # noqa: F401


def __getattr__(name: str):  # agg_<metric> functions are resolved by name in translate
    from safetyrepro.lm_eval_tasks import translate

    return getattr(translate, name)
