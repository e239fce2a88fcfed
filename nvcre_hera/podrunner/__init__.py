"""The pod runner: the one stand-in of the loopback control plane (`make e2e`, `nvcre certify --engine argo`).

Kubernetes has no kubelet here, so this process plays the kubelet and Argo's executor for the pods the real Argo
workflow-controller creates: it binds each pod to a fake Node, runs its main container's `nvcre-step` command in
process against the simulated cluster named by the run, reports outputs as a WorkflowTaskResult the way `argoexec
wait` does, and writes the pod's status the way a kubelet would. argoexec itself does not build from the v4.0.5
module (see e2e/build.sh), so what it does is followed from its source, cited where it is done.

What this therefore does not prove: container images, the emissary's process handling, volumes, pod networking and
logs served by a kubelet. Everything between pods (the controller's DAG logic, parameters, retries, deadlines,
exit handlers, RBAC, the API server's CRD validation) is the real thing.
"""
