"""state.json: what a running control plane is (endpoints, credentials, processes, logs, versions). `procs.json` is
written after each process start, so `down` can stop what a failed `up` left behind."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from nvcre_hera.controlplane.procs import Proc

MARKER = ".nvcre-e2e-controlplane"  # only a directory holding this is ever wiped by `down`
ORDER = ("etcd", "kube-apiserver", "workflow-controller", "argo-server")  # start order; stopped in reverse


class StateError(Exception):
    """The state directory is not a usable control-plane state (one line, for the CLI)."""


@dataclass(frozen=True)
class State:
    state_dir: Path
    apiserver: str
    ca_file: Path
    admin_kubeconfig: Path
    sa_kubeconfig: Path
    sa_token: str
    submitter_kubeconfig: Path
    submitter_token: str
    token_expires: float  # unix time; `up` re-mints both tokens when less than an hour is left
    argo_server: str
    namespace: str
    procs: dict[str, Proc]
    versions: dict[str, str] = field(default_factory=dict)

    @property
    def pids(self) -> dict[str, int]:
        return {n: p.pid for n, p in self.procs.items()}

    @property
    def logs(self) -> dict[str, str]:
        return {n: p.log for n, p in self.procs.items()}

    def to_json(self) -> dict:
        return {"apiserver": self.apiserver, "caFile": str(self.ca_file),
                "adminKubeconfig": str(self.admin_kubeconfig), "saKubeconfig": str(self.sa_kubeconfig),
                "saToken": self.sa_token, "submitterKubeconfig": str(self.submitter_kubeconfig),
                "submitterToken": self.submitter_token, "tokenExpires": self.token_expires,
                "argoServer": self.argo_server, "namespace": self.namespace, "pids": self.pids,
                "logs": self.logs, "starts": {n: p.start for n, p in self.procs.items()},
                "versions": self.versions, "envFile": str(self.state_dir / "env.sh")}

    @classmethod
    def from_json(cls, state_dir: Path, d: dict) -> "State":
        procs = {n: Proc(n, int(d["pids"][n]), int(d["starts"][n]), d["logs"][n]) for n in d["pids"]}
        return cls(state_dir, d["apiserver"], Path(d["caFile"]), Path(d["adminKubeconfig"]),
                   Path(d["saKubeconfig"]), d["saToken"], Path(d["submitterKubeconfig"]), d["submitterToken"],
                   float(d["tokenExpires"]), d["argoServer"], d["namespace"], procs, dict(d.get("versions", {})))


def load_state(state_dir: str | Path) -> State | None:
    """The recorded control plane, or None when nothing was brought up there. Says nothing about health."""
    path = Path(state_dir) / "state.json"
    if not path.is_file():
        return None
    try:
        return State.from_json(Path(state_dir).resolve(), json.loads(path.read_text()))
    except (ValueError, KeyError, TypeError) as e:
        raise StateError(f"{path}: not a control-plane state file ({e.__class__.__name__}: {e})") from None


def save_state(state: State) -> None:
    tmp = state.state_dir / "state.json.tmp"
    tmp.write_text(json.dumps(state.to_json(), indent=2) + "\n")
    tmp.chmod(0o600)  # holds bearer tokens
    tmp.replace(state.state_dir / "state.json")


def record_procs(state_dir: Path, procs: dict[str, Proc]) -> None:
    data = {n: {"pid": p.pid, "start": p.start, "log": p.log} for n, p in procs.items()}
    (state_dir / "procs.json").write_text(json.dumps(data) + "\n")


def recorded_procs(state_dir: Path) -> dict[str, Proc]:
    """The processes an `up` started there; {} if none. An unreadable record is an error, never "none": the
    processes it names may still run."""
    path = state_dir / "procs.json"
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text())
        return {n: Proc(n, int(v["pid"]), int(v["start"]), v["log"]) for n, v in data.items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise StateError(f"{path}: unreadable process record ({e.__class__.__name__}); stop its processes "
                         "by hand") from None
