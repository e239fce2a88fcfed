#!/usr/bin/env bash
# Builds the loopback control plane's binaries from the Go module proxy into .e2e/bin (pinned by
# e2e/tools/*/go.mod and go.sum). A binary is rebuilt only when its module's go.sum changes.
#   etcd                               go.etcd.io/etcd/server/v3 v3.7.3
#   kube-apiserver                     k8s.io/kubernetes v1.37.2
#   workflow-controller                github.com/argoproj/argo-workflows/v4 v4.0.5
#   argo (CLI + Argo Server)           the same module, from a writable copy with an empty ui/dist/app
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BIN=$ROOT/.e2e/bin
mkdir -p "$BIN"
export CGO_ENABLED=0 GOFLAGS=-trimpath
command -v go >/dev/null || { echo "e2e/build.sh: go not found (Go >= 1.26 needed)" >&2; exit 2; }

stamp() { cksum "$ROOT/e2e/tools/$1/go.sum" | cut -d' ' -f1; }
fresh() {  # fresh NAME MODULE-DIR: the binary exists and was built from this go.sum
  [[ -x $BIN/$1 && -f $BIN/.$1.stamp && $(cat "$BIN/.$1.stamp") == "$(stamp "$2")" ]]
}
build() {  # build NAME MODULE-DIR PACKAGE [LDFLAGS]
  local name=$1 dir=$2 pkg=$3 ldflags=${4:-}
  if fresh "$name" "$dir"; then return; fi
  local t0=$SECONDS
  (cd "$ROOT/e2e/tools/$dir" && go build -ldflags "-s -w $ldflags" -o "$BIN/$name" "$pkg")
  stamp "$dir" > "$BIN/.$name.stamp"
  echo "built $name in $((SECONDS - t0)) s"
}

build etcd etcd go.etcd.io/etcd/server/v3
K8S=k8s.io/component-base/version
build kube-apiserver kube k8s.io/kubernetes/cmd/kube-apiserver \
  "-X $K8S.gitVersion=v1.37.2 -X $K8S.gitMajor=1 -X $K8S.gitMinor=37"
AV=github.com/argoproj/argo-workflows/v4
build workflow-controller argo $AV/cmd/workflow-controller "-X $AV.version=v4.0.5"
# argo builds from a writable copy of the module: cmd/argo embeds ui/dist/app (//go:embed), which is git-ignored
# upstream and so not in the module zip; an empty placeholder stands in. argoexec is not built: no kubelet runs
# containers here, and the pod runner (nvcre_hera/podrunner) follows argoexec's source instead (docs/e2e.md).
if ! fresh argo argo; then
  src=$(cd e2e/tools/argo && go list -m -f '{{.Dir}}' $AV)
  work=$ROOT/.e2e/src/argo-workflows
  rm -rf "$work"; mkdir -p "$work"
  cp -r "$src"/. "$work"/; chmod -R u+w "$work"
  mkdir -p "$work/ui/dist/app"
  echo '<!doctype html><title>Argo UI not built</title>' > "$work/ui/dist/app/index.html"
  t0=$SECONDS
  (cd "$work" && go build -ldflags "-s -w -X $AV.version=v4.0.5" -o "$BIN/argo" ./cmd/argo)
  stamp argo > "$BIN/.argo.stamp"
  echo "built argo in $((SECONDS - t0)) s"
  rm -rf "$work"
fi
