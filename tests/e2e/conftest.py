"""The e2e tests' control plane: the one recorded in NVCRE_E2E_STATE (default .e2e/run) when it is healthy, left
running; otherwise a fresh one in a temporary directory, stopped at the end. Needs the binaries from
e2e/build.sh (`make e2e-up` builds them); these tests run only with `-m e2e`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nvcre_hera.controlplane import State, down, ensure_up, health, load_state

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def cp(tmp_path_factory) -> State:
    recorded = Path(os.environ.get("NVCRE_E2E_STATE") or REPO / ".e2e" / "run")
    st = load_state(recorded)
    if st is not None and not health(st):
        yield ensure_up(recorded)  # healthy: returns it (re-minting tokens if near expiry)
        return
    sd = tmp_path_factory.mktemp("controlplane") / "run"
    st = ensure_up(sd)
    try:
        yield st
    finally:
        down(sd)
