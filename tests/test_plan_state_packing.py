"""The diagnose state carried between rounds is packed (gzip + base64 in a JSON string) because Argo stores it three
times a round; a state that does not decode stops the plan step instead of starting diagnose afresh."""

from __future__ import annotations

import base64
import gzip
import json

import pytest

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
