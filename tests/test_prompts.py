"""Templates render every benchmark x style x shot count into chat messages and plain text."""

from __future__ import annotations

import pytest

from safetyrepro.adapters import ConfigError, build_config, get_benchmark, get_style
from safetyrepro.adapters._registry import template_file
from safetyrepro.adapters.prompts import ANSWER_PREFIX, benchmark_blocks, render_prompt
from safetyrepro.adapters.subsets import select

BENCHMARKS = ["truthfulqa", "bbq", "toxigen", "crows_pairs", "xstest"]
STYLES = ["minimal", "persona", "detailed", "cot"]


@pytest.mark.parametrize("name", BENCHMARKS)
@pytest.mark.parametrize("style_name", STYLES)
@pytest.mark.parametrize("k", [0, 3, 5])
def test_render_matrix(name: str, style_name: str, k: int, all_items: dict) -> None:
    bench, style = get_benchmark(name), get_style(style_name)
    evals, pool, _ = select(bench, all_items[name])
    item = evals[0]
    shots = [(shot, bench.answer_string(shot, bench.shot_answer(shot, n))) for n, shot in enumerate(pool[:k])]
    prompt = render_prompt(benchmark_blocks(str(template_file(bench))), style, item, shots, where=name)
    roles = [m["role"] for m in prompt.messages]
    assert roles[-1] == "user"
    assert roles.count("assistant") == k and roles.count("user") == k + 1
    assert (roles[0] == "system") == (style.system is not None)
    final = prompt.messages[-1]["content"]
    for value in item.fields.values():
        assert value in final
    if name in ("truthfulqa", "bbq", "crows_pairs"):
        for label, option in zip(item.labels, item.options):
            assert f"{label}. {option}" in final
    assert ("step by step" in final) == (style_name == "cot")
    assert "{{" not in prompt.text and "{%" not in prompt.text
    for shot, answer in shots:
        assert f"{ANSWER_PREFIX} {answer}" in prompt.text
    assert prompt.text.endswith(final + "\n")


def test_answer_strings_follow_the_benchmark(source) -> None:
    crows = get_benchmark("crows_pairs")
    from safetyrepro.adapters.items import Item

    item = Item(id="c/1", benchmark="crows_pairs", fields={"sentence_a": "x", "sentence_b": "y"},
                options=("He is poor.", "He is rich."), labels=("A", "B"), gold=None, meta={"stereo_index": 0})
    assert crows.answer_string(item, 1) == "He is rich."
    # Over four exemplars: two stereotypical and two other choices (no net push).
    assert [crows.shot_answer(item, n) for n in range(4)] == [0, 1, 1, 0]
    pool = select(crows, crows.load(source))[1]
    answers = [crows.shot_answer(shot, n) for n, shot in enumerate(pool[:4])]
    assert sorted(answers) == [0, 0, 1, 1]  # positions A, A, B, B
    assert sum(a == shot.meta["stereo_index"] for a, shot in zip(answers, pool)) == 2
    bbq = get_benchmark("bbq")
    assert bbq.answer_string(item, 1) == "B"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"benchmark": "bbq", "fewshot": 2}, r"fewshot: .*one of \(0, 3, 5\)"),
        ({"benchmark": "bbq", "decoding": "hot"}, r"decoding: "),
        ({"benchmark": "bbq", "limit": 0}, r"limit: "),
        ({"benchmark": "bbq", "colour": "red"}, r"colour: Extra inputs"),
        ({"benchmark": "bbq", "model": {"quantization": "int3"}}, r"model.quantization"),
        ({"benchmark": "bbq", "scoring": "regex", "extraction": "xstest-strmatch"}, r"xstest-strmatch applies to"),
        ({"benchmark": "bbq", "scoring": "regex", "extraction_version": 3}, r"extracts with rules version 18"),
    ],
)
def test_bad_config_values_name_the_field(data: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        build_config(data)


def test_unknown_names_list_the_choices() -> None:
    with pytest.raises(ConfigError, match=r"unknown template 'fancy'.*choose one of \['cot', 'detailed'"):
        get_style("fancy")
    with pytest.raises(ConfigError, match=r"unknown benchmark 'mmlu'"):
        get_benchmark("mmlu")


def test_config_hash_is_stable_and_sensitive() -> None:
    a = build_config({"benchmark": "bbq"})
    assert a.config_hash() == build_config({"benchmark": "bbq", "template": "minimal"}).config_hash()
    assert a.config_hash() != build_config({"benchmark": "bbq", "decoding": "t0.7"}).config_hash()
    # The extraction rules' version is part of every hash (2 on paths that never read with them).
    assert '"extraction_version":2' in a.canonical_json()
    assert '"extraction_version":18' in build_config({"benchmark": "bbq", "scoring": "regex"}).canonical_json()
    with pytest.raises(Exception):
        a.benchmark = "xstest"  # frozen
