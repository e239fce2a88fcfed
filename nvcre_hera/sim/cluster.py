"""`SimCluster`: the `Cluster` protocol (nvcre_hera/cluster/base.py) over a simulated GPU cluster, in simulated time.

A job object is read for its `metadata.name`, the `nvcre-hera.dev/test-spec` annotation (docs/internals.md),
and its GPU pod templates, which a stand-in scheduler checks against the nodes' taints, allocatable resources and
RDMA devices (sim/placement.py). Its whole run — duration, exit code, timed log lines — is decided at `create_job` from the
spec's seed, the job's name and `repeat`, so runs are reproducible. `wait_for_job` then moves the clock: to the
job's end, to the moment a watched node turns Unschedulable/NotReady, to a stall, or to the timeout.
The caller (the local executor) sets the clock to the pod's simulated start before each step (`set_clock`).
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from dataclasses import dataclass, field
from pathlib import Path

from nvcre_hera.catalog import platform_settings
from nvcre_hera.cluster.base import TEST_SPEC_ANNOTATION, ConfigMapMissing, JobOutcome, StallCheck
from nvcre_hera.nics import RDMA_FABRICS
from nvcre_hera.sim import model
from nvcre_hera.sim.faults import ActiveFaults, NodeCaps, active_faults, first_health_event, health_at, health_events
from nvcre_hera.sim.logs import NcclRun, TimedLine, TrainingRun, dcgm_lines, nccl_lines, render, training_lines
from nvcre_hera.sim.noise import noisy
from nvcre_hera.sim.placement import PodFit, check_pods
from nvcre_hera.sim.nodes import CLIQUE_LABEL, DEVICE_NAMES, PCI_DEVICE_IDS, build_nodes, node_gpus, with_health
from nvcre_hera.sim.spec import SCHEDULING_KINDS, STEP_KINDS, SimulatedClusterSpec, load_spec

NCCL_TESTS = frozenset({"all_reduce", "all_gather", "alltoall", "loopback", "loopback_nvswitch"})
NETWORK_NAMES = {"efa": "AWS Libfabric", "tcpxo": "FasTrak", "ib": "IB", "roce": "IB"}
LOTTERY_SIGMA = 0.005  # per-node static offset ("silicon lottery", §4.6)
STALL_CHECKS_MAX = 300
WORKLOAD_S = 120.0  # simulated run time of a measurement-less WorkloadRun (stand-in: no workload model)
DEPENDENCY_KINDS = frozenset({"TrainingRuntime"})  # created before a job, deleted after it; never run


STEP_STALL_S = 86_400.0


class SimulatedPodKilled(RuntimeError):
    """Raised inside a test step by a `step-crash` fault: the pod's process dies (exit 1, traceback in its log)."""


@dataclass
class SimJob:
    """One job object and its pre-computed run (offsets in seconds after `start`)."""

    name: str
    labels: dict[str, str]
    spec: dict
    start: float
    lines: list[TimedLine]
    end: float  # math.inf for a hang (or a job that can never be scheduled)
    exit_code: int | None
    failure: str | None = None
    kind: str = ""
    values: dict = field(default_factory=dict)  # what the job measured (busBandwidthGBps, avgTFLOPsPerGPU, ...)
    outcome: JobOutcome | None = None
    deleted: bool = False
    # seconds after `start` the pods stay Pending unschedulable (math.inf: never placed), and the scheduler's message
    pending_s: float = 0.0
    pending_message: str = ""

    @property
    def nodes(self) -> list[str]:
        return list(self.spec.get("nodes") or [])


def _seed(*parts: object) -> int:
    return int(hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest()[:16], 16)


class SimCluster:
    """A simulated GPU cluster with injectable faults (see nvcre_hera.sim.faults for the catalog)."""

    def __init__(self, spec: SimulatedClusterSpec) -> None:
        self.spec = spec
        self.body = spec.spec
        self.clock = 0.0
        self.jobs_created = 0
        self.jobs_deleted = 0
        self._nodes = build_nodes(spec)
        self._gpus = node_gpus(self.body)
        self._cliques = {n["metadata"]["name"]: n["metadata"]["labels"].get(CLIQUE_LABEL) for n in self._nodes}
        # name -> position, so that a job's nodes are found without a scan of the cluster (25 000 single-node
        # screen jobs of a 4096-node diagnose with screens scanned 4096 nodes each: 29.5 s of real time, 21.1 now)
        self._position = {n["metadata"]["name"]: i for i, n in enumerate(self._nodes)}
        self._events = health_events(self.body.faults)
        self._offsets = {name: max(-3 * LOTTERY_SIGMA, min(3 * LOTTERY_SIGMA, random.Random(
            _seed(self.body.seed, "lottery", name)).gauss(0.0, LOTTERY_SIGMA))) for name in self._gpus}
        self._jobs: dict[str, SimJob] = {}
        # Objects a job depends on (a TrainJob's TrainingRuntime): name -> labels, while they exist.
        self._dependencies: dict[str, dict[str, str]] = {}
        self._dependency_manifests: dict[str, dict] = {}  # their pod templates, for the scheduling stand-in
        # by name: what the judge wrote (NVSentinel node lists), and the diagnose store (steps/diagnose_store.py)
        self.configmaps: dict[str, dict] = {}
        self.configmap_peak_bytes: dict[str, int] = {}
        self.pod_deadline: float | None = None  # set_pod_deadline

    @classmethod
    def from_spec(cls, spec: SimulatedClusterSpec) -> SimCluster:
        return cls(spec)

    # --- clock and nodes ------------------------------------------------------------------------------------------
    def now(self) -> float:
        return self.clock

    def set_clock(self, t: float) -> None:
        self.clock = float(t)

    def sleep(self, seconds: float) -> None:
        """Simulated waiting: the clock moves, nothing sleeps."""
        self.clock += max(0.0, float(seconds))

    def node_health(self, name: str, t: float | None = None) -> list[str]:
        """Bad states ("NotReady", "Unschedulable") of a node at `t` (default: now)."""
        return health_at(self._events, name, self.clock if t is None else t)

    def list_nodes(self) -> list[dict]:
        out = []
        for node in self._nodes:
            for state in self.node_health(node["metadata"]["name"]):
                node = with_health(node, state)
            out.append(json.loads(json.dumps(node)))  # callers may mutate their copy
        return out

    def apply_configmap(self, manifest: dict) -> str:
        """Create or replace a ConfigMap (the API's create, then replace on 409), kept as the API would store it."""
        name = (manifest.get("metadata") or {}).get("name")
        if not name:
            raise ValueError("ConfigMap manifest has no metadata.name")
        self.configmaps[name] = json.loads(json.dumps(manifest))
        return name

    def set_pod_deadline(self, t: float | None) -> None:
        """When the pod now running a step is killed (None: never). A step runs to its end in process, so a write
        it would make after that time must not land: a killed pod makes none (`check_pod_alive`)."""
        self.pod_deadline = None if t is None else float(t)

    def check_pod_alive(self) -> None:
        """SimulatedPodKilled when the running step's pod is past its deadline (e.g. a `step-stall` moved the clock
        a day on): a ConfigMap write from it would be one a real cluster never saw."""
        if self.pod_deadline is not None and self.clock >= self.pod_deadline:
            raise SimulatedPodKilled("simulated: the pod was killed at its deadline before this write")

    def create_configmap(self, manifest: dict) -> bool:
        self.check_pod_alive()
        name = (manifest.get("metadata") or {}).get("name")
        if not name:
            raise ValueError("ConfigMap manifest has no metadata.name")
        if name in self.configmaps:
            return False
        self.configmaps[name] = json.loads(json.dumps(manifest))
        self._measure_configmap(name)
        return True

    def read_configmap(self, name: str) -> dict[str, str] | None:
        cm = self.configmaps.get(name)
        return None if cm is None else dict(cm.get("data") or {})

    def patch_configmap(self, name: str, data: dict[str, str | None]) -> None:
        """A JSON merge patch of `data` (a None value removes its key), as the API server applies it."""
        self.check_pod_alive()
        cm = self.configmaps.get(name)
        if cm is None:
            raise ConfigMapMissing(f"ConfigMap {name} does not exist")
        merged = dict(cm.get("data") or {})
        for key, value in data.items():
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = str(value)
        cm["data"] = merged
        self._measure_configmap(name)

    def delete_configmap(self, name: str) -> bool:
        self.check_pod_alive()
        return self.configmaps.pop(name, None) is not None

    def _measure_configmap(self, name: str) -> None:
        """The largest each ConfigMap grew (bytes of its data's keys and values): the diagnose store's size."""
        size = sum(len(k) + len(v) for k, v in (self.configmaps[name].get("data") or {}).items())
        self.configmap_peak_bytes[name] = max(self.configmap_peak_bytes.get(name, 0), size)

    # --- jobs -----------------------------------------------------------------------------------------------------
    def create_job(self, manifest: dict) -> str:
        meta = manifest.get("metadata") or {}
        name = meta.get("name")
        if not name:
            raise ValueError("job manifest has no metadata.name")
        if manifest.get("kind") in DEPENDENCY_KINDS:
            if name in self._dependencies:
                raise ValueError(f"{manifest['kind']} {name} already exists")
            self._dependencies[name] = dict(meta.get("labels") or {})
            self._dependency_manifests[name] = manifest
            return name
        if manifest.get("kind") == "TrainJob":
            # Stand-in for Kubeflow Trainer: without its runtime a TrainJob never gets a JobSet, so refuse it here
            # rather than simulate a run no cluster would do.
            ref = ((manifest.get("spec") or {}).get("runtimeRef") or {}).get("name")
            if ref not in self._dependencies:
                raise ValueError(f"TrainJob {name}: runtimeRef.name {ref!r} names no existing TrainingRuntime")
        raw = (meta.get("annotations") or {}).get(TEST_SPEC_ANNOTATION)
        if raw is None:
            raise ValueError(f"job {name}: no {TEST_SPEC_ANNOTATION} annotation; the simulator cannot tell what it runs")
        if name in self._jobs and not self._jobs[name].deleted:
            raise ValueError(f"job {name} already exists")
        test_spec = json.loads(raw) if isinstance(raw, str) else dict(raw)
        self._step_faults(name, test_spec.get("nodes") or [])
        fit = self._fit(manifest, test_spec.get("nodes") or [])
        job = self._plan(name, dict(meta.get("labels") or {}), test_spec, fit)
        job.kind = str(manifest.get("kind") or "")
        self._jobs[name] = job
        self.jobs_created += 1
        return name

    def _fit(self, manifest: dict, nodes: list[str]) -> PodFit:
        """Taints, resources and RDMA devices of the job's GPU pods on its nodes (sim.placement)."""
        ref = ((manifest.get("spec") or {}).get("runtimeRef") or {}).get("name")
        manifests = [manifest, *([self._dependency_manifests[ref]] if ref in self._dependency_manifests else [])]
        at = sorted({self._position[n] for n in nodes if n in self._position})  # in the cluster's order, as before
        return check_pods(manifests, [self._nodes[i] for i in at])

    def _step_faults(self, name: str, nodes: list[str]) -> None:
        """`step-crash` / `step-stall` (sim.spec.STEP_KINDS): the test pod itself dies or blocks."""
        kinds = {f.kind for f in self.body.faults if f.kind in STEP_KINDS and set(f.members) & set(nodes)}
        if "step-crash" in kinds:
            raise SimulatedPodKilled(f"simulated: the test pod creating {name} was killed (step-crash fault)")
        if "step-stall" in kinds:
            self.clock += STEP_STALL_S

    def wait_for_job(
        self, name: str, nodes: list[str], timeout_s: float, stall_check: StallCheck | None = None,
        scheduling_timeout_s: float | None = None,
    ) -> JobOutcome:
        job = self._live(name)
        if job.outcome is not None:
            return job.outcome
        pending = job.pending_s
        # With a scheduling timeout, Pending time is kept off timeoutPerJob (NVCRE ADR-083) and bounded by it instead
        off_clock = pending if scheduling_timeout_s is not None else 0.0
        blocked_out = scheduling_timeout_s is not None and pending > scheduling_timeout_s
        limit = float(scheduling_timeout_s) if blocked_out else min(job.end, timeout_s + off_clock)
        watched = sorted(set(nodes) | set(job.nodes))
        event = first_health_event(self._events, watched, job.start, job.start + limit)
        stop = event[0] - job.start if event else limit
        outcome: JobOutcome | None = None
        if stall_check is not None and job.spec.get("test") == "training" and not blocked_out:
            outcome = self._stall_watch(job, stall_check, stop, off_clock)
        if outcome is None and event is not None:
            outcome = JobOutcome("Failed", stop, None, event[1])
        if outcome is None:
            if blocked_out:
                outcome = JobOutcome("SchedulingBlocked", limit)
            elif job.end <= timeout_s + off_clock:
                phase = "Succeeded" if job.exit_code == 0 else "Failed"
                outcome = JobOutcome(phase, job.end, job.exit_code)
            else:
                outcome = JobOutcome("TimedOut", limit)
        if pending > 0:
            outcome.blocked_s = min(pending, outcome.elapsed_s)
            outcome.blocked_message = job.pending_message
        job.outcome = outcome
        # never backwards: jobs started together (a screen batch) are awaited one after the other
        self.clock = max(self.clock, job.start + outcome.elapsed_s)
        return outcome

    def _stall_watch(self, job: SimJob, stall_check: StallCheck, stop: float,
                     off_clock: float = 0.0) -> JobOutcome | None:
        """Sample the log like a watcher does (every ~10 s, at most STALL_CHECKS_MAX times, once at least); the
        stall clock starts once the pods are placed (`off_clock` seconds Pending are skipped)."""
        step = max(10.0, stop / STALL_CHECKS_MAX) if math.isfinite(stop) else 10.0
        t = min(off_clock + step, stop)
        while True:
            if stall_check(render(job.lines, t), t - off_clock):
                return JobOutcome("Stalled", t)
            if t >= stop:
                return None
            t = min(t + step, stop)

    def job_log(self, name: str) -> str:
        job = self._jobs.get(name)
        if job is None or job.deleted:
            return ""
        until = job.outcome.elapsed_s if job.outcome else max(0.0, self.clock - job.start)
        return render(job.lines, until)

    def delete_job(self, name: str) -> bool:
        if self._dependencies.pop(name, None) is not None:
            self._dependency_manifests.pop(name, None)
            return True
        job = self._jobs.get(name)
        if job is None or job.deleted:
            return False
        job.deleted = True
        self.jobs_deleted += 1
        return True

    def list_jobs(self, labels: dict[str, str], kinds: list[str] | None = None) -> list[str]:
        live = [(n, j.kind, j.labels) for n, j in self._jobs.items() if not j.deleted] + \
            [(n, "TrainingRuntime", have) for n, have in self._dependencies.items()]
        return sorted(n for n, kind, have in live
                      if (kinds is None or kind in kinds) and all(have.get(k) == v for k, v in labels.items()))

    def jobs_alive(self) -> int:
        """Job objects and their dependencies that still exist (what a run would leave behind)."""
        return sum(not j.deleted for j in self._jobs.values()) + len(self._dependencies)

    def job_values(self, name: str) -> dict:
        """What the simulator decided a job measured (for tests and benchmarks; no real cluster has this)."""
        return dict(self._jobs[name].values)

    def job_records(self) -> list[dict]:
        """Every job this cluster ran, as the simulator decided it (ground truth for tests: which nodes, when, the
        failure it injected and the values it measured; no real cluster has this)."""
        return [{"name": j.name, "test": j.spec.get("test"), "category": j.spec.get("category"), "nodes": j.nodes,
                 "start": j.start, "end": j.start + (j.outcome.elapsed_s if j.outcome else 0.0),
                 "failure": j.failure, "values": dict(j.values)} for j in self._jobs.values()]

    def _live(self, name: str) -> SimJob:
        job = self._jobs.get(name)
        if job is None or job.deleted:
            raise KeyError(f"job {name} does not exist")
        return job

    # --- planning a job's run -------------------------------------------------------------------------------------
    def _plan(self, name: str, labels: dict[str, str], ts: dict, fit: PodFit | None = None) -> SimJob:
        rng = random.Random(_seed(self.body.seed, name, ts.get("repeat", 0)))
        nodes = list(ts.get("nodes") or [])
        test = ts.get("test", "")
        unknown = [n for n in nodes if n not in self._gpus]
        if not nodes or unknown or test not in NCCL_TESTS | {"dcgm_diag", "training", "workload"} or \
                (fit is not None and fit.unschedulable):
            # Pods that can never be scheduled (or a workload the simulator does not know): nothing ever happens.
            job = SimJob(name, labels, ts, self.clock, [], math.inf, None, "unschedulable-pods")
            job.pending_s = math.inf
            job.pending_message = (f"0/{len(self._nodes)} nodes are available: {fit.unschedulable}"
                                   if fit is not None and fit.unschedulable else "no node can run these pods")
            return job
        faults = active_faults(list(self.body.faults), nodes, rng)
        if fit is not None and fit.checked and not fit.rdma and \
                platform_settings(self.body.platform).get("fabric") in RDMA_FABRICS:
            # no RDMA device in the workers: NCCL's IB/EFA plugin finds none and every NIC path runs over TCP
            faults.socket |= set(nodes)
        failure, culprit = self._failure(test, nodes, faults)
        archs = [self._gpus[n][0] for n in nodes]
        arch = min(archs, key=lambda a: model.BASELINES[a][0])  # a minority node bounds its group
        gpn = int(ts.get("gpusPerNode") or min(self._gpus[n][1] for n in nodes))
        sched, launch, init = model.startup_s(len(nodes))
        job = SimJob(name, labels, ts, self.clock, [], 0.0, None, failure)
        if test in NCCL_TESTS:
            self._plan_nccl(job, rng, test, nodes, gpn, arch, faults, culprit, (sched + launch, init))
        elif test == "workload":
            # A WorkloadRun without a measurement: only its exit code is judged, so only crash and hang matter.
            job.failure = failure if failure in ("crash", "hang") else None
            t_end = sched + launch + WORKLOAD_S * rng.uniform(0.9, 1.1)
            job.end = math.inf if job.failure == "hang" else t_end
            job.lines = [] if job.failure == "hang" else [(t_end, "workload exited with an error" if job.failure
                                                           else "workload finished")]
        elif test == "dcgm_diag":
            dcgm_failure = failure if failure in ("crash", "hang") else None
            found = faults.dcgm.get(nodes[0], [])
            t_end = sched + launch + model.DCGM_LEVEL4_S * rng.uniform(0.98, 1.02)
            job.lines, job.end = dcgm_lines(gpn, PCI_DEVICE_IDS[arch], found, t_end, dcgm_failure)
            job.failure = dcgm_failure
            job.values = {"dcgmPassed": not found and dcgm_failure is None, "failures": found}
        else:
            self._plan_training(job, rng, nodes, gpn, arch, faults, failure, (sched + launch, 45.0 + 0.5 * len(nodes)),
                                culprit)
        job.exit_code = None if math.isinf(job.end) else (0 if job.failure in (None, "nan-loss") else 1)
        self._pend(job, nodes)
        return job

    def _pend(self, job: SimJob, nodes: list[str]) -> None:
        """`scheduling-blocked` faults on the job's nodes: its pods wait Pending first, so its whole run shifts."""
        waits = [f.pending_seconds if f.pending_seconds is not None else math.inf
                 for f in self.body.faults if f.kind in SCHEDULING_KINDS and f.node in nodes]
        if not waits:
            return
        job.pending_s = max(waits)
        blocked = sorted(f.node for f in self.body.faults if f.kind in SCHEDULING_KINDS and f.node in nodes)
        job.pending_message = (f"0/{len(self._nodes)} nodes are available: {len(blocked)} Insufficient nvidia.com/gpu "
                               f"(simulated scheduling-blocked: {', '.join(blocked)})")
        job.lines = [(t + job.pending_s, line) for t, line in job.lines]
        job.end += job.pending_s
        if math.isinf(job.end):
            job.exit_code = None

    @staticmethod
    def _failure(test: str, nodes: list[str], faults: ActiveFaults) -> tuple[str | None, str | None]:
        """The failure that shows first, and on which node (crash > nccl-error > hang > corruption / nan)."""
        order = [("crash", faults.crash), ("nccl-error", faults.nccl_error if test != "dcgm_diag" else set()),
                 ("hang", faults.hang),
                 ("data-corruption", set(faults.corruption) if test in NCCL_TESTS else set()),
                 ("nan-loss", faults.nan_loss if test == "training" else set())]
        for kind, where in order:
            hit = [n for n in nodes if n in where]
            if hit:
                return kind, hit[0]
        return None, None

    def _measured(self, rng: random.Random, value: float, nodes: list[str]) -> float:
        offset = 1.0 + min(self._offsets[n] for n in nodes)
        return noisy(value * offset, rng, self.body.noise.sigma, self.body.noise.dip_probability)

    def _plan_nccl(self, job: SimJob, rng: random.Random, test: str, nodes: list[str], gpn: int, arch: str,
                   faults: ActiveFaults, culprit: str | None, times: tuple[float, float]) -> None:
        ts = job.spec
        enable_mnnvl = bool(ts.get("enableMNNVL", False))
        est = model.expected_busbw(test, nodes, gpn, arch, self.body.platform, faults, self._cliques, enable_mnnvl)
        busbw = round(self._measured(rng, est.busbw, nodes), 2)
        fabric = platform_settings(self.body.platform).get("fabric", "ib")
        network = None if test == "loopback_nvswitch" else NETWORK_NAMES.get(fabric, "IB")
        fabric_network = network
        if est.path == "socket":
            network = "Socket"
        ranks = len(nodes) * gpn
        factor = model.bus_factor(test, ranks)
        alpha = model.latency_us(est.path, len(nodes), self.body.platform)
        sweep = model.sizes(int(ts.get("maxBytes") or 1 << 34), int(ts.get("minBytes") or 8))
        iters, cycles = int(ts.get("numIterations") or 20), int(ts.get("numCycles") or 1)
        run = NcclRun(
            test=test, hosts=nodes, gpus_per_node=gpn, device=DEVICE_NAMES[arch], sweep=sweep, iters=iters,
            cycles=cycles, busbw=busbw, alpha_us=alpha, path=est.path, network=network, t_output=times[0],
            t_init=times[1], t_measure=model.nccl_measure_s(sweep, busbw, factor, alpha, iters, cycles),
            failure=job.failure, failing_node=culprit, wrong=faults.corruption.get(culprit or "", 0),
            roce=fabric == "roce", fabric_network=fabric_network,
            socket_hosts=tuple(n for n in nodes if n in faults.socket) if est.path == "socket" else ())
        job.lines, job.end = nccl_lines(run, rng)
        transport = {"nvlink": "P2P", "clique": "MNNVL", "socket": "NET/Socket"}.get(est.path, f"NET/{network}")
        job.values = {"busBandwidthGBps": busbw, "algBandwidthGBps": round(busbw / factor, 2),
                      "expectedGBps": round(est.busbw, 2), "path": est.path, "bottleneck": est.bottleneck,
                      "transport": transport, "sizeBytes": sweep[-1]}

    def _plan_training(self, job: SimJob, rng: random.Random, nodes: list[str], gpn: int, arch: str,
                       faults: ActiveFaults, failure: str | None, times: tuple[float, float],
                       culprit: str | None = None) -> None:
        net = healthy = None
        if len(nodes) > 1:  # the network's share only: GPU and NVLink faults enter training_rate directly
            network = ActiveFaults(caps={n: NodeCaps(nic=c.nic) for n, c in faults.caps.items()}, links=faults.links,
                                   socket=faults.socket)
            net = model.expected_busbw("all_reduce", nodes, gpn, arch, self.body.platform, network, self._cliques).busbw
            healthy = model.expected_busbw("all_reduce", nodes, gpn, arch, self.body.platform, ActiveFaults(),
                                           self._cliques).busbw
        tflops = self._measured(rng, model.training_rate(arch, nodes, faults, net, healthy), nodes)
        params = model.model_params(str(job.spec.get("category", "")))
        steps = int(job.spec.get("maxSteps") or 50)
        fail_at = {"crash": max(2, steps // 2), "nccl-error": max(2, steps // 2), "hang": steps // 3 + 1,
                   "nan-loss": max(1, steps // 2)}.get(failure or "", 0)
        run = TrainingRun(hosts=nodes, gpus_per_node=gpn, max_steps=steps, step_s=model.training_step_s(params, tflops),
                          tflops=tflops, params=params, t_output=times[0], t_startup=times[1], epoch=job.start,
                          failure=failure, fail_at=fail_at, sigma=max(self.body.noise.sigma, 0.005),
                          failing_node=culprit)
        job.lines, job.end = training_lines(run, rng)
        job.values = {"avgTFLOPsPerGPU": round(tflops, 1), "avgStepTimeSec": round(run.step_s, 3), "steps": steps}


def load_sim_cluster(path: str | Path) -> SimCluster:
    """Read a SimulatedCluster file (errors are one-line `InputError`s naming the field)."""
    return SimCluster.from_spec(load_spec(path))


__all__ = ["SimCluster", "SimJob", "load_sim_cluster"]
