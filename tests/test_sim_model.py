"""The performance model: each test sees what it exercises, groups run at their slowest member (§4.2)."""

from __future__ import annotations

import random

import pytest

from nvcre_hera.sim import model
from nvcre_hera.sim.faults import ActiveFaults, NodeCaps, active_faults
from nvcre_hera.sim.spec import FaultSpec

HEALTHY = ActiveFaults()


def _faults(**caps: NodeCaps) -> ActiveFaults:
    return ActiveFaults(caps={k.replace("_", "-"): v for k, v in caps.items()})


def test_healthy_baselines_match_public_figures():
    intra = model.expected_busbw("all_reduce", ["a"], 8, "h100", "azure", HEALTHY).busbw
    assert 450 <= intra <= 480
    for n in (2, 4, 16, 64):
        ring = model.expected_busbw("all_reduce", [f"n{i}" for i in range(n)], 8, "h100", "azure", HEALTHY).busbw
        assert 330 <= ring <= 390, (n, ring)
    cliques = {f"t{i}": "c0" for i in range(16)}
    mnnvl = model.expected_busbw("all_reduce", list(cliques), 4, "gb300", "oci", HEALTHY, cliques, True)
    assert mnnvl.path == "clique" and 925 <= mnnvl.busbw <= 940
    fabric = model.expected_busbw("all_reduce", list(cliques), 4, "gb300", "oci", HEALTHY, cliques, False)
    assert fabric.path == "net" and 170 <= fabric.busbw <= 210


def test_cross_clique_group_is_scale_out_bound():
    cliques = {"a": "c0", "b": "c1"}
    est = model.expected_busbw("all_reduce", ["a", "b"], 4, "gb200", "oci", HEALTHY, cliques, True)
    assert est.path == "net" and est.busbw < 210


@pytest.mark.parametrize(
    ("test", "nodes", "caps", "slowed"),
    [
        # single-node all-reduce: NVLink and GPUs, not the NIC
        ("all_reduce", ["x"], NodeCaps(nic=0.5), False),
        ("all_reduce", ["x"], NodeCaps(gpu=0.5), True),
        ("all_reduce", ["x"], NodeCaps(nvlink=0.5), True),
        # loopback: the NICs, not NVLink or the GPU rate
        ("loopback", ["x"], NodeCaps(nic=0.5), True),
        ("loopback", ["x"], NodeCaps(gpu=0.5), False),
        ("loopback", ["x"], NodeCaps(nvlink=0.5), False),
        # loopback_nvswitch: NVLink only
        ("loopback_nvswitch", ["x"], NodeCaps(nic=0.5), False),
        ("loopback_nvswitch", ["x"], NodeCaps(nvlink=0.5), True),
        # multi-node: the min over members
        ("all_reduce", ["x", "y"], NodeCaps(nic=0.5), True),
        ("all_reduce", ["x", "y"], NodeCaps(gpu=0.5), True),
        ("all_reduce", ["x", "y"], NodeCaps(nvlink=0.9), False),  # 0.9 x 470 > 370: masked by the network
        ("all_gather", ["x", "y"], NodeCaps(nic=0.5), True),
        ("alltoall", ["x", "y"], NodeCaps(nic=0.5), True),
    ],
)
def test_each_test_sees_what_it_exercises(test, nodes, caps, slowed):
    healthy = model.expected_busbw(test, nodes, 8, "h100", "onprem", HEALTHY).busbw
    faulty = model.expected_busbw(test, nodes, 8, "h100", "onprem", ActiveFaults(caps={"x": caps})).busbw
    assert (faulty < healthy * 0.95) is slowed, (healthy, faulty)


def test_group_is_bounded_by_slowest_member_and_link():
    nodes = [f"n{i}" for i in range(8)]
    healthy = model.expected_busbw("all_reduce", nodes, 8, "h100", "onprem", HEALTHY).busbw
    slow = model.expected_busbw("all_reduce", nodes, 8, "h100", "onprem",
                                ActiveFaults(caps={"n3": NodeCaps(nic=0.6), "n5": NodeCaps(nic=0.8)}))
    assert slow.busbw == pytest.approx(healthy * 0.6) and slow.bottleneck == "n3 nic"
    link = ActiveFaults(links=[("n1", "n2", 0.5)])
    assert model.expected_busbw("all_reduce", nodes, 8, "h100", "onprem", link).busbw == pytest.approx(healthy * 0.5)
    # a group holding one end of the link only is not affected
    assert model.expected_busbw("all_reduce", ["n1", "n3"], 8, "h100", "onprem", link).busbw > 360


def test_socket_fallback_is_a_few_gbps_on_network_paths_only():
    faults = ActiveFaults(socket={"x"})
    assert model.expected_busbw("all_reduce", ["x", "y"], 8, "h100", "aws", faults).path == "socket"
    assert model.expected_busbw("all_reduce", ["x", "y"], 8, "h100", "aws", faults).busbw < 5
    assert model.expected_busbw("loopback", ["x"], 8, "h100", "aws", faults).busbw < 5
    assert model.expected_busbw("all_reduce", ["x"], 8, "h100", "aws", faults).busbw > 400


def test_bus_factor_and_sizes():
    assert model.bus_factor("all_reduce", 16) == pytest.approx(2 * 15 / 16)
    assert model.bus_factor("all_gather", 16) == pytest.approx(15 / 16)
    assert model.bus_factor("alltoall", 64) == pytest.approx(63 / 64)
    sweep = model.sizes(16 << 30)
    assert sweep[0] == 8 and sweep[-1] == 16 << 30 and len(sweep) == 32
    capped = model.sizes(1 << 50)
    assert len(capped) == 40 and capped[-1] == 1 << 50


def test_durations():
    sched, launch, init = model.startup_s(64)
    assert 5 <= sched <= 30 and 5 <= launch <= 40 and 1 <= init <= 6
    sweep = model.sizes(16 << 30)
    measure = model.nccl_measure_s(sweep, 350.0, 1.875, 80.0, 20, 1)
    assert 10 <= measure <= 120
    assert model.nccl_measure_s(sweep, 3.0, 1.875, 80.0, 100, 10) == model.MAX_MEASURE_S
    assert 2400 <= model.DCGM_LEVEL4_S <= 3600


def test_training_rate_min_and_amdahl():
    healthy = model.training_rate("h100", ["a", "b"], HEALTHY, 350.0, 350.0)
    slow_gpu = model.training_rate("h100", ["a", "b"], ActiveFaults(caps={"b": NodeCaps(gpu=0.6)}), 350.0, 350.0)
    slow_net = model.training_rate("h100", ["a", "b"], HEALTHY, 175.0, 350.0)
    assert slow_gpu == pytest.approx(healthy * 0.6)
    assert healthy * 0.8 < slow_net < healthy * 0.95
    assert model.model_params("training/nemotron5-56b") == 56e9
    assert 1.0 < model.training_step_s(8e9, healthy) < 3.0


def test_active_faults_probability_and_membership():
    faults = [FaultSpec(kind="flapping", node="a", probability=0.5), FaultSpec(kind="crash", node="z")]
    hits = sum(bool(active_faults(faults, ["a", "b"], random.Random(i)).caps) for i in range(400))
    assert 150 < hits < 250
    assert not active_faults(faults, ["a", "b"], random.Random(0)).crash  # z is not in the group
