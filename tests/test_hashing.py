"""Golden hashes: every plan, configuration, request key, batch, log anchor and chain hash a run
frozen before the one-engine refactor computed, computed the same way now.

The values were computed by the code at commit a722f80 (before ``hashing.py``, the scoring-path
contract and ``gridplan.RequestPlan`` existed). A run frozen then must still resume and verify, so
any change here is a change of every existing plan's identity: never edit a value to make this pass.

Deliberate changes, recorded here: extraction v3 to v18 (issue 28) changed what the regex path
reads from a generation, so every configuration that reads with the rules carries its
``extraction_version`` and a new hash -- otherwise a run frozen under an older version would resume
with cells read by two rule sets. ``GOLDEN_BEFORE`` keeps the values each
replaced. Nothing else moved: the request bodies, batches
and seeds are the same, and a plan without regex cells keeps its hash (``NON_REGEX_PLAN``).
"""

from __future__ import annotations

import json

from safetyrepro.adapters import build_config
from safetyrepro.adapters.grid import build_grid, plan
from safetyrepro.adapters.gridplan import GridPlan, run_anchor
from safetyrepro.adapters.hashing import canonical, derived_seed, sha256_json, sha256_text

# Every built-in scoring path, a reasoning style, sampling, symmetric's mirrored askings, a repeat gate.
GRID = {"models": [{"name": "m"}], "benchmarks": ["bbq", "crows_pairs"], "templates": ["minimal", "cot"],
        "scorings": ["logprob", "regex", "symmetric"], "fewshots": [0, 3], "decodings": ["greedy", "t0.7"],
        "limit": 3, "exclusions": [{"template": "cot", "scoring": "symmetric"}],
        "gates": {"repeat": {"configs": [{"template": "minimal"}]}}}
GOLDEN = {
    "config": "415e2c796d219788f1b00bc2786d3e68fd9517319e4b4f36f4e9127a0201cf46",  # regex: v18
    "config2": "617b4f2f68617e285e2bcbecb6755a8032855679fbcd664f3f10cec5bc989cde",
    "plan": "91133233046380a0477696b5a3d24b623f741f9406480a570f277090eb0d87a8",  # has regex cells: v18
    "keys": "5da67f45d5dafceecbc848623c43dab9949342e5d2c5be51b105cf6b9d3e65cf",
    "batches": "8d26145ed2b74f8d00ed8468311b1c84194041b4c216eb4930c7217f1cf10140",
    # which batches are decoded together (issue 30, engine context-states/3): moving it moves a
    # run's bits, so it is pinned like the batches
    "decode_groups": "e0e21ee5de0780730c169e8c9a5d762d0619360fea6f8b503e79eddb005b600e",
    "anchor": "2b3225de00acbbfbe12292395cd3bffa672f24a952712840f12b31febb86b479",  # covers the plan: v18
    "header": "53a9e9630085f808625ec3aa70f982fda9b0fe28c1a390edfbf74ef8f87009a4",
    "entry": "e859e3a3edd94256ca87352a57968ab7ce77ccc112ab4003c42e0551e0ca5bb7",
    "seed": (1902167275, "8585c8f232358bc1560d59aa4595554620600bee43ce9b081f1a1e58c41f7687"),
}
GOLDEN_BEFORE = {
    # extraction version -> the config, plan and anchor values it replaced (the earlier version's, and
    # the commits that computed them)
    # extraction v2: commit a722f80 through 4aeae9f
    3: {"config": "301ad7c62c1f9007023dbf2b38855885c1c9d6487ab2d97be48049ae670b9495",
         "plan": "ee6e95e38c9e0d278b002b2f0eb9da27449e4867fbe904d5c5a3e1a0873ff3f4",
         "anchor": "637f1bd4a01f33603d45f5f157580d9701f2a5de0e13986d6af40b73885445f2"},
    # extraction v3: commit 4aeae9f's successors through 2807987
    4: {"config": "49002314d20612b54a08ed095a9cb5b6d1bcf1a847486d57421de256f906c4df",
         "plan": "3d861c2cac691e7c9d5453a99d600c66f68147d219ff03c3aed4dcdc4e5e142e",
         "anchor": "e333f6dcb092e9d7201c0e96105a4f29ba04f5ddfb0b51214546362901f62675"},
    # extraction v4: commit d8dd0ae through b65def6
    5: {"config": "d366b0697d19fd215963b3a973cc29d09e427235541720c56d911a67e9963ebb",
         "plan": "22106aef8b9b4e133ff3d37f105f6a1a17a97097a43b1cff2579ff40e92bb6dd",
         "anchor": "b054d906eaa6de8ed15da22a7097381843243781ec35977c2b941522adbf75df"},
    # extraction v5: commit 444855b through 06edf7e
    6: {"config": "12e96b6006e2dc67f0107a028209f0d890df0db0752cc23bcb7cdbffc1862ed1",
         "plan": "ed218b5829664dd6512f754edbd9880a8ec413c78a3a37df44fe4f00adfec2ca",
         "anchor": "f157eec0cb59e9df5ab4c8a5bb52642f46ae3fcd86c6887bbad2c5aaabf31a96"},
    # extraction v6: commit e32343f through 8fbe73f
    7: {"config": "e1befe8f80ddf5b8090944ffab8591d9e19f89fd81eca5424d63483ff50af8d5",
         "plan": "1c09e7954dbfbd7c364fa409b54d1ba52aaed37a200fd78a599e000d3b33c3a6",
         "anchor": "63411030f6fb1a3ac62b840be1fede4d953b9dbb7ccacc1a06d549c1ddaa6d5e"},
    # extraction v7: commit bd2e379 through 98fb8f7
    8: {"config": "ee6fd96f67ed63a41e84a13129d6b3511a76db1bcb375034e5b962613ec889c3",
         "plan": "a4b1c361a433c1a7765ad127588a5b6d09ca80d4aed1c7fa9a026ef449fc087d",
         "anchor": "a6489a3d8e86a05a77eecdbe2da4db96b2d0d584764c6f8d38cb3f0189e460b7"},
    # extraction v8: commit 3dec53f through a98e77d
    9: {"config": "53ef5a96a9be92b43499b2c41fd5e00f7f73334383bc51a7b0a40e72083ac534",
         "plan": "625cd304ba70ed94ff3ce4ff16b9b06d293e694b1418731b7045c7f94e4bd3b1",
         "anchor": "1ff10cf84b5b41a471e6ef274cd6e0056921d57c52c3448ea9a018282489c205"},
    # extraction v9: commit 313f6c2 through 17168f6
    10: {"config": "0d983d0c63d1f7e3a179d6fc3449b8028bfa0041b022cde66e913e2fd7dcb3db",
         "plan": "f1f0fccd0d0103fa9710512f33139619f7a16857e734c24351f32c0b2d0be029",
         "anchor": "8463efd5c74b51a6c0e3882cc9ddfebe9557f686b547a27a5ae644475d864a91"},
    # extraction v10: commit a4b1aeb through 03c0fbb
    11: {"config": "350fdee424aad0fcdc38b6ccff4112db421d08cf567c9f765f417c91df9ba186",
         "plan": "37b3c303ff9c5f324cea9e7127c257e1bbf776de91f96806689eac0323314ba3",
         "anchor": "6805d28d6b16313eb412f7c221175d29ed9b82cdb3c4c9a6cd16ebc3b25ed7e9"},
    # extraction v11: commit 833af8a through 15775bb
    12: {"config": "1efa0730ccd6c27a414023ad4bb8602a89d7889642324f19698b3e00717e67a8",
         "plan": "3c97d4e9490095122b337265972797ad8bbf2164081aee0575d5b2d26fc3b177",
         "anchor": "633d71c29d47d7bd1be3091e26c5c8deae279f4c30822437f4a9dbb19d76b30a"},
    # extraction v12: commit a51fc03 through 0901f95
    13: {"config": "f33560b3cff67e71f6894ae0a59a268075740e791ebb132f936da9e19fe1ce8d",
         "plan": "ac944b76dabc20b1169280e98ac54449e5e52959738af6799735fb43c6280bf5",
         "anchor": "4336be154d170dadfe8e557c5ec0d7fab3dc8a359ac8ca599bf1e4cffb06bb74"},
    # extraction v13: commit 1f10871 through 8a0b8a6
    14: {"config": "092d633f11ea89521361f3e6b13fada99e8b188ba905857b99dd777a36ed7d05",
         "plan": "f8c465df79966383b694761b36d0b4507f4ea8fdb8dde7e2ec71e22d8532c3dc",
         "anchor": "00bfa28eb3d1b1c10a497db45a0e51bea10bc28ca98f9740de3fac3ff1011ba2"},
    # extraction v14: commit eb1dfce through c0ca89a
    15: {"config": "c51198bf3714cc18b02f0da0f2c3063216da1961649d50f1ba76107d3a1499c0",
         "plan": "6b881b4b6ceed4c2d6fa71bfbb3c3f33bc5287cf9093b55b183c7de790afe2b4",
         "anchor": "eef01de78a1df7fbe6a4be435857798dafbdfd82a3f180586ac52d121e8517bd"},
    # extraction v15: commit 7ef305a through 723c62f
    16: {"config": "1c25aede4e985d02c8c02d06c7a85fcec9af005476b7e572ab1f561152cd18bc",
         "plan": "71cb833541280f065a8310816e570a327ae3692e050793b8cb95a7bde9211244",
         "anchor": "0f8139eb33f21292c806e8fde8abb6d330cb2d290e303553ea9cbd3c1f74c82d"},
    # extraction v16: commit 9674593 through 0c03901
    17: {"config": "5f3095bb2ca695d26fa39ac2b4cc281647e060d1d309be1259994d47fe5c0a21",
         "plan": "4b061bfba1e159455c2d01fa71ed9165958d3f68d0ffa017565772eaab87ae14",
         "anchor": "365ffdec2c876db92852afef311b37a68cde15f99039c909a1c39b1d9ade7e50"},
    # extraction v17: commit 3090247 through 1f20ccc
    18: {"config": "ab9e1258639647a0acba52a4f26a865537ffd0a28321ce5186ea2243248035cc",
         "plan": "f559c5a1ef323a2ea915942e7b58568b21b84761c3d06c86bd9d5f0551ce8101",
         "anchor": "9d600c7e606f60ad4ed781f29029d534ff448da5bb12fa4dc8ae52fe7b47f37e"},
}
"""Every value a rule change moved, kept: regex cells' hashes move with the extraction version, and no
two versions share one."""
NON_REGEX_PLAN = "a51bfda8bc90a1261a83d3fba8ee04d5a3b78d0a58d0b192aa5be05799212365"
"""``GRID`` with scorings logprob and symmetric only, computed by commit 4aeae9f (extraction v2)."""


def test_a_rule_change_moves_only_the_cells_it_reads() -> None:
    assert plan(build_grid({**GRID, "scorings": ["logprob", "symmetric"]}))["plan_sha256"] == NON_REGEX_PLAN
    logprob = build_config({"benchmark": "bbq", "scoring": "logprob", "extraction_version": 18})
    assert '"extraction_version":2' in logprob.canonical_json()  # never read with the rules: stays 2
    assert '"extraction_version":18' in build_config({"benchmark": "bbq", "scoring": "regex"}).canonical_json()
    assert sorted(GOLDEN_BEFORE) == list(range(3, 19))
    assert len({before["config"] for before in GOLDEN_BEFORE.values()} | {GOLDEN["config"]}) == 17


def test_configuration_hashes() -> None:
    config = build_config({"benchmark": "bbq", "template": "cot", "scoring": "regex", "fewshot": 3, "decoding": "t0.7"})
    assert config.config_hash() == GOLDEN["config"]
    config = build_config({"benchmark": "xstest", "scoring": "symmetric", "extraction": "standard",
                           "model": {"name_or_path": "embedded", "quantization": "nf4", "dtype": "bfloat16"}})
    assert config.config_hash() == GOLDEN["config2"]


def test_plan_requests_batches_seeds_and_log_hashes() -> None:
    grid = build_grid(GRID)
    frozen = plan(grid)
    prepared = GridPlan(frozen, grid, None)
    assert frozen["plan_sha256"] == GOLDEN["plan"]
    assert sha256_json(prepared.keys) == GOLDEN["keys"]  # every request body, in plan order
    assert sha256_text(json.dumps(prepared.batches)) == GOLDEN["batches"]
    assert len(prepared.decode_groups) == 8
    assert sha256_text(json.dumps(prepared.decode_groups)) == GOLDEN["decode_groups"]
    identities = {"m": {"name": "m", "path": "embedded", "quantization": "none", "weights_sha256": "0" * 64,
                        "runtime": {"device": "cpu", "engine": "context-states/1"}}}
    assert run_anchor(frozen, prepared, identities, {"torch": "2.13.0"}) == GOLDEN["anchor"]
    header = {"format": "safetyrepro-journal/1", "anchor": "a" * 64,
              "plan_sha256": sha256_json({"plan": prepared.keys[:3]})}
    assert sha256_json({"header": header}) == GOLDEN["header"]
    entry = {"seq": 0, "key": prepared.keys[0], "prev": "b" * 64,
             "body": {"response": [-1.25, True], "utc": "2026-12-02T00:00:00.000+00:00"}}
    assert sha256_json(entry) == GOLDEN["entry"]
    sampled = next(prepared.requests[k] for k in prepared.keys if prepared.requests[k].seed is not None)
    assert (sampled.seed, sampled.key) == GOLDEN["seed"]
    unseeded = sampled.body() | {"seed": None}
    assert sampled.seed == derived_seed(f"{grid.seed}|{sha256_json({k: v for k, v in unseeded.items() if v is not None})}")


def test_canonical_json_is_sorted_and_compact() -> None:
    assert canonical({"b": 1, "a": [1.5, None, "é"]}) == '{"a":[1.5,null,"\\u00e9"],"b":1}'
    assert sha256_text("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
