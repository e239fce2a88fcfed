"""A screen batch's values travel packed (nvcre_hera/steps/screen_values.py): exact for the tenths the run step
rounds to, nulls kept, a plain list where 16 bits cannot hold a value, and what does not decode reaches the planner
as a batch with no values (no evidence either way), never as values."""

from __future__ import annotations

import json
import random

import pytest

from nvcre_hera.steps import screen_values
from nvcre_hera.steps.plan_step import compact_results


def test_values_in_tenths_and_nulls_come_back_exactly() -> None:
    rng = random.Random(5)
    values = [round(rng.gauss(320, 12), 1) for _ in range(256)]
    values[3] = values[200] = None
    values[7], values[8] = 0.0, 6553.4  # both ends of what 16 bits of tenths hold
    packed = screen_values.pack(values)
    assert isinstance(packed, str) and packed.startswith(screen_values.PREFIX)
    assert screen_values.unpack(packed) == values
    # the reason for it: a 256-node batch as the Workflow stores it, about a third of the JSON list
    assert len(json.dumps(packed)) < 0.4 * len(json.dumps(values))


def test_a_value_16_bits_cannot_hold_stays_a_plain_list() -> None:
    for odd in (6553.5, 9000.0, -1.0):
        values = [310.2, odd, None]
        assert screen_values.pack(values) == values
        assert screen_values.unpack(values) == values


@pytest.mark.parametrize("bad", ["plain text", screen_values.PREFIX + "!!!", screen_values.PREFIX + "AAAA",
                                 7, {"values": []}, None])
def test_values_that_do_not_decode_are_none(bad: object) -> None:
    assert screen_values.unpack(bad) is None


def test_the_plan_step_gives_the_planner_decoded_values_and_drops_undecodable_ones() -> None:
    runs = [[{"id": "r1-t0", "kind": "loopback", "status": "ok", "values": screen_values.pack([301.5, None])}],
            [{"id": "r1-t1", "kind": "intra", "status": "ok", "values": screen_values.PREFIX + "garbage"}],
            [{"id": "r1-t2", "kind": "intra", "status": "ok", "values": [480.0, 479.9]}]]
    got = {r["id"]: r for r in compact_results(runs)}
    assert got["r1-t0"]["values"] == [301.5, None]
    assert "values" not in got["r1-t1"] and got["r1-t1"]["status"] == "ok"
    assert got["r1-t2"]["values"] == [480.0, 479.9]
