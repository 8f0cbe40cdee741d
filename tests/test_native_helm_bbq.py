"""HELM's native BBQ at its own few-shot: the seeded scenario folder, read by HELM's own scenario
and its own downsampling, gives exactly the core's items as the evaluated instances and other BBQ
rows as its in-context pool (no model needed: HELM's steps before the model are run as they are)."""

from __future__ import annotations

from pathlib import Path

import pytest

from safetyrepro.adapters import build_config, prepare_cell
from safetyrepro.crosspkg.native_helm import HELM_BBQ_POOL, helm_bbq_layout, instance_key, seed_helm_bbq


@pytest.mark.parametrize("limit", [1, 7, 50])
def test_helm_reads_the_core_items_as_its_test_set_and_other_rows_as_its_pool(tmp_path: Path, limit: int) -> None:
    from helm.benchmark.runner import downsample_eval_instances
    from helm.benchmark.scenarios.bbq_scenario import BBQScenario
    from helm.benchmark.scenarios.scenario import TEST_SPLIT, TRAIN_SPLIT

    cell = prepare_cell(build_config({"benchmark": "bbq", "limit": limit}, source="test"))
    keys = seed_helm_bbq(cell, tmp_path)
    instances = BBQScenario(subject="all").get_instances(str(tmp_path / "bbq"))
    chosen = downsample_eval_instances(instances, limit, [TEST_SPLIT])
    evaluated = [i for i in chosen if i.split == TEST_SPLIT]
    pool = [i for i in chosen if i.split == TRAIN_SPLIT]
    found = sorted(str(keys.get(instance_key("bbq", i.input.text))) for i in evaluated)
    assert found == sorted(c.item.id for c in cell.items)  # every core item, nothing else
    assert len(pool) == HELM_BBQ_POOL
    texts = {c.item.fields["context"].strip() for c in cell.items}
    assert not any(instance_key("bbq", i.input.text).split("\n")[0] in texts for i in pool)  # the pool holds no evaluated item


def test_the_layout_replays_helms_own_shuffle_and_sample() -> None:
    items, pool = helm_bbq_layout(5, pool=20)
    assert len(items) == 5 and len(pool) == 20 and not set(items) & set(pool)
    assert helm_bbq_layout(5, pool=20) == (items, pool)  # a function of the counts alone
