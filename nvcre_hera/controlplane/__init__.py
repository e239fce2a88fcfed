"""The real control plane on loopback for end-to-end runs: etcd, kube-apiserver (RBAC, TokenRequest), the Argo
workflow-controller and Argo Server as local processes, built by e2e/build.sh. `python -m nvcre_hera.controlplane
up|down|status`; from Python, `ensure_up(state_dir) -> State`, `down(state_dir)`, `load_state(state_dir)`."""

from nvcre_hera.controlplane.core import ControlPlaneError, down, ensure_up, health
from nvcre_hera.controlplane.install import InstallError
from nvcre_hera.controlplane.state import State, StateError, load_state

__all__ = ["ControlPlaneError", "InstallError", "State", "StateError", "down", "ensure_up", "health", "load_state"]
