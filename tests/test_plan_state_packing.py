"""The diagnose state carried between rounds is packed (gzip + base64 in a JSON string) because Argo stores it three
times a round; a state that does not decode stops the plan step instead of starting diagnose afresh."""

from __future__ import annotations

import base64
import gzip
import json
import random

import pytest

from nvcre_hera.diagnose import near_miss_pack
from nvcre_hera.steps import packed_json
from nvcre_hera.steps.plan_step import STATE_PREFIX, pack_state, unpack_state


def test_packed_state_is_a_json_string_that_decodes_to_the_same_dict() -> None:
    state = {"planner": {"ev": [[0, 4096, 0.97]] * 40}, "jobs": {"created": 3}, "issued": ["r2-t0"]}
    packed = pack_state(state)
    text = json.loads(packed)  # what `nvcre-step plan --state` parses
    assert text.startswith(STATE_PREFIX)
    assert json.loads(gzip.decompress(base64.b64decode(text[len(STATE_PREFIX):]))) == state  # decoded by hand
    assert unpack_state(text) == state
    assert len(packed) < len(json.dumps(state)) / 2  # the repetition a planner state has compresses


def test_first_round_and_older_plain_states_still_load() -> None:
    assert unpack_state(None) == {}
    assert unpack_state({"issued": []}) == {"issued": []}


@pytest.mark.parametrize("bad", [STATE_PREFIX + "!!!", STATE_PREFIX + base64.b64encode(b"not gzip").decode(),
                                 STATE_PREFIX + base64.b64encode(gzip.compress(b"[1, 2]")).decode(), "plain text", 7])
def test_a_state_that_does_not_decode_is_an_error_not_a_fresh_start(bad: object) -> None:
    with pytest.raises(ValueError, match="diagnose state"):
        unpack_state(bad)


# --- the screens' near-miss record goes by columns (nvcre_hera/diagnose/near_miss_pack.py) ---------------------

def _near_misses(rng: random.Random, nodes: int, kinds: int) -> dict:
    """A record shaped as screens._keep_near_miss keeps it: per node, per kind, [test index, ratio‰, ...], the
    first screen in its kind's batch of ⌈N/16⌉ nodes, re-screens in later batches."""
    nm = {}
    for x in rng.sample(range(nodes), nodes // 2):
        entry = [[] for _ in range(kinds)]
        for k in range(kinds):
            for j in range(rng.choice([0, 0, 1, 1, 1, 2, 4])):
                test = k * 16 + x * 16 // nodes if j == 0 else 32 + 4 * j + rng.randrange(4)
                entry[k] += [test, round(1000 * rng.gauss(0.97, 0.04))]
        if any(entry):
            nm[str(x)] = entry
    return nm


@pytest.mark.parametrize("seed", range(6))
def test_near_miss_record_comes_back_exactly_in_sorted_key_order(seed: int) -> None:
    rng = random.Random(seed)
    nm = _near_misses(rng, rng.choice([64, 1024, 4096]), rng.choice([1, 2]))
    back = near_miss_pack.unpack(json.loads(json.dumps(near_miss_pack.pack(nm))))
    assert back == nm
    # the order the planner iterated before: the plain state's JSON round trip with sorted keys
    assert list(back) == list(json.loads(json.dumps(nm, sort_keys=True)))


def test_state_with_near_misses_packs_by_columns_and_unpacks_to_the_record() -> None:
    nm = _near_misses(random.Random(9), 4096, 2)
    state = {"planner": {"sc": {"nm": nm, "nt": ["r1-t0"], "ph": "s"}, "ok": "x"}, "jobs": {"created": 3}}
    packed = json.loads(pack_state(state))
    inner = json.loads(gzip.decompress(base64.b64decode(packed[len(STATE_PREFIX):])))
    assert "nm" not in inner["planner"]["sc"] and "nmc" in inner["planner"]["sc"]
    assert unpack_state(packed) == state
    # what it is for: the carried state is stored five times a round (this record: 0.70 of the plain packing;
    # the 4096-node scale run's, whose ratios spread less: 0.59)
    assert len(packed) < 0.75 * len(json.dumps(json.dumps(STATE_PREFIX + base64.b64encode(gzip.compress(
        json.dumps(state, separators=(",", ":"), sort_keys=True).encode(), 9, mtime=0)).decode())))


@pytest.mark.parametrize("bad", [{"x": [1, 0], "n": [[1, 1]], "t": [[1, 1]], "r": [[3, 4]]},  # a node twice
                                 {"x": [1], "n": [[2]], "t": [[1]], "r": [[3]]},  # a count with no screen
                                 {"x": [1], "n": [[1]]}, ["x"]])
def test_a_near_miss_record_that_does_not_decode_stops_the_plan_step(bad: object) -> None:
    raw = json.dumps({"planner": {"sc": {"nmc": bad}}}).encode()
    with pytest.raises(ValueError, match="diagnose state does not decode: the near-miss record"):
        unpack_state(STATE_PREFIX + base64.b64encode(gzip.compress(raw)).decode())


@pytest.mark.parametrize("nodes,kind,seeds", [(64, "slow-nic", range(0, 6)), (256, "flapping", range(0, 4)),
                                               (128, "mix", range(0, 4))])
def test_the_planner_decides_the_same_whether_its_state_goes_by_columns_or_as_plain_json(
        nodes: int, kind: str, seeds: range, monkeypatch: pytest.MonkeyPatch) -> None:
    """The workflow's path (every round's state through pack_state / unpack_state) against the plain state's
    JSON round trip that pack_state did before the columns: the same tests, suspects and verdict, round by round."""
    from nvcre_hera.diagnose import bench, oracle as oracle_module, planner

    near_misses_seen = 0

    def through(codec):
        def plan(state, results, config):
            nonlocal near_misses_seen
            if state is not None:
                near_misses_seen += bool((state.get("sc") or {}).get("nm"))
                state = codec(state)
            return planner.plan(state, results, config)
        return plan

    def plain(state):
        return json.loads(json.dumps(state, sort_keys=True))

    def columns(state):
        return unpack_state(json.loads(pack_state({"planner": state})))["planner"]

    for seed in seeds:
        traces = []
        for codec in (plain, columns):
            monkeypatch.setattr(oracle_module, "plan", through(codec))
            orc, _bad = bench.kind_oracle(nodes, 2, kind, 0.9, 0.03, random.Random(seed), 0.01)
            config = bench.planner_config("screened", nodes, 8, seed)
            trace = oracle_module.run(orc, config, random.Random(seed * 7919 + 17))
            traces.append((trace.rounds, trace.final))
        assert traces[0] == traces[1], seed
    assert near_misses_seen  # the record was there to pack


# --- the verdict goes up the recursion wrapped (nvcre_hera/steps/packed_json.py) --------------------------------

def test_a_wrapped_verdict_is_an_object_that_comes_back_the_same() -> None:
    verdict = {"suspects": [{"node": "gpu-node-0777"}], "unresolved": [{"nodes": [f"gpu-node-{i:04d}" for i in
                                                                                range(64)]}], "stats": {"rounds": 9}}
    wrapped = packed_json.wrap(verdict)
    # an object, so that Argo parses it in a fan-out's aggregated output (a JSON string would gain quotes a level)
    assert isinstance(json.loads(json.dumps(wrapped)), dict) and list(wrapped) == ["packed"]
    assert packed_json.unwrap(json.loads(json.dumps(wrapped))) == verdict
    assert len(json.dumps(wrapped)) < len(json.dumps(verdict)) / 2
    assert packed_json.unwrap({}) == {} and packed_json.unwrap({"stats": {}}) == {"stats": {}}  # not wrapped


@pytest.mark.parametrize("bad", ["nvcre-gz1:!!!", "nvcre-gz1:AAAA", "plain", 7, None])
def test_a_wrapper_that_does_not_decode_is_an_error(bad: object) -> None:
    with pytest.raises(ValueError):
        packed_json.unwrap({"packed": bad})
