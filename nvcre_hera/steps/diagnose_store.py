"""The diagnose store: one ConfigMap per diagnose category that carries the planner's state from round to round and
each test's result to the next plan step, instead of Argo parameters.

Argo stores a parameter once per node that takes or gives it: the state five times a round (the plan pod's output
and its Retry parent's, the next level's input, the next plan pod's input and its Retry parent's) and a result six
times (the run pod's output and its Retry parent's, the round's aggregate, the next level's input, the plan pod's
and its Retry parent's), in the Workflow object, for the whole run (argo-workflows v4.0.5
`workflow/controller/operator.go` L2318, L2339, L2357, L2780-2786). Here each is written once, and the plan step
removes what no step will read again, so the ConfigMap holds two levels at most: the Workflow carries only the
state's key (`nvcre-cm:state.<level>`) and the tests' items.

Keys (ConfigMap data keys: `[-._a-zA-Z0-9]+`):
- `setup`: discovery's setup (the node index and the planner's config), written by the first plan step;
- `state.<level>`: the state the plan step of `level` reads (`plan_step.pack_state`'s text);
- `test.<test id>`: a test's item (its node ranges, and a screen's kind), written by the plan step that issued it;
  the Workflow carries only `{"id"}`;
- `result.<test id>`: what the run step of that test measured (`run.diagnose_result`, or a screen batch's result).

Retried steps are safe: a plan step reads `state.<level>` and the results of the tests it was handed, writes
`state.<level + 1>` and its tests' items, and removes only what the plan step before it read (its state, and the
items and results of its tests); a retried run step writes the same key again. A key that is missing is never a
fresh start: a missing setup or state stops the plan step, a test whose item is missing fails, and a missing
result is a test that sent none (failed, `plan_step.with_missing`).

The plan step of level 0 creates the ConfigMap, owned by the Workflow (deleted with it) and labelled with it; the
Workflow's exit handler deletes it (`steps/cleanup.py`). Pure here but `read`: names, keys and the manifest.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from nvcre_hera.cluster.base import MANAGED_BY_LABEL, MANAGED_BY_VALUE, WORKFLOW_LABEL, Cluster

REF_PREFIX = "nvcre-cm:"
SETUP_KEY = "setup"
STATE_KEY = "state."
TEST_KEY = "test."
RESULT_KEY = "result."
NAME_SUFFIX = "-diagnose-"
NAME_MAX = 253  # a ConfigMap's name is a DNS subdomain


@dataclass(frozen=True)
class Store:
    """Where one diagnose category's store lives, and the Workflow that owns it."""

    name: str
    namespace: str
    workflow_name: str
    workflow_uid: str


class StoreUnreadable(ValueError):
    """The store, or a key a step needs in it, is gone: that step gives no result, never a fresh start."""


def read(cluster: Cluster, store: Store, required: tuple[str, ...]) -> dict[str, str]:
    """The store's data, holding every `required` key; StoreUnreadable naming what is missing."""
    data = cluster.read_configmap(store.name)
    if data is None:
        raise StoreUnreadable(f"the diagnose store ConfigMap {store.name} does not exist")
    for key in required:
        if key not in data:
            raise StoreUnreadable(f"the diagnose store ConfigMap {store.name} has no {key}")
    return data


def store_name(workflow_name: str, category_index: int | str) -> str:
    """`<workflow>-diagnose-<index>`: the compiled Workflow passes `{{workflow.name}}` as the workflow."""
    suffix = f"{NAME_SUFFIX}{category_index}"
    return workflow_name[: NAME_MAX - len(suffix)] + suffix


def manifest(store: Store) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": store.name, "namespace": store.namespace,
                         "labels": {MANAGED_BY_LABEL: MANAGED_BY_VALUE, WORKFLOW_LABEL: store.workflow_name},
                         "ownerReferences": [{"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow",
                                              "name": store.workflow_name, "uid": store.workflow_uid}]},
            "data": {}}


def encode(value: Any) -> str:
    """A value as a ConfigMap data value: compact JSON, keys sorted."""
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def state_key(level: int) -> str:
    return f"{STATE_KEY}{level}"


def test_key(test_id: str) -> str:
    return f"{TEST_KEY}{test_id}"


def result_key(test_id: str) -> str:
    return f"{RESULT_KEY}{test_id}"


def ref(level: int) -> str:
    """What the Workflow carries in place of the state: the key of the level's state."""
    return f"{REF_PREFIX}{state_key(level)}"


def is_ref(value: Any) -> bool:
    return isinstance(value, str) and value.startswith(REF_PREFIX)


def level_of(value: str) -> int:
    """The level a `ref` names; ValueError for any other text."""
    key = value[len(REF_PREFIX):] if is_ref(value) else ""
    number = key[len(STATE_KEY):] if key.startswith(STATE_KEY) else ""
    if not number.isdigit():
        raise ValueError(f"not a diagnose store reference: {str(value)[:60]!r}")
    return int(number)


__all__ = ["REF_PREFIX", "SETUP_KEY", "Store", "StoreUnreadable", "encode", "is_ref", "level_of", "manifest", "read",
           "ref", "result_key", "state_key", "store_name", "test_key"]
