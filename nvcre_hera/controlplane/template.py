"""A seeded etcd data directory, so a cold `up` skips installing the CRDs.

Creating the twelve CRDs takes kube-apiserver 30-80 s of CPU on two cores (the four full Argo CRDs are 1.3 MB of
JSON schema each, with CEL rules); reading them back from etcd at start-up is far cheaper. The first cold `up`
installs everything, stops etcd cleanly and copies its data directory to `.e2e/cache/etcd-<key>`; later cold ups
start from a copy. The key hashes everything the copy contains and what wrote it: the CRD files, the manifests,
the objects `up` adds, and the etcd and kube-apiserver binaries' build stamps. Tokens, certificates and ports are
not in etcd, so each `up` still gets fresh ones."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path


def template_key(crd_paths: list[Path], objects: list[dict], bin_dir: Path) -> str:
    h = hashlib.sha256(b"nvcre-e2e-etcd-template-v1\n")
    for p in crd_paths:
        h.update(p.name.encode() + b"\0" + hashlib.sha256(p.read_bytes()).digest())
    h.update(json.dumps(objects, sort_keys=True).encode())
    for name in ("etcd", "kube-apiserver"):
        stamp = bin_dir / f".{name}.stamp"
        binary = bin_dir / name
        st = binary.stat()
        h.update(f"{name}:{stamp.read_text().strip() if stamp.is_file() else ''}:{st.st_size}:{st.st_mtime_ns}"
                 .encode())
    return h.hexdigest()[:20]


def template_dir(cache_root: Path, key: str) -> Path:
    return cache_root / f"etcd-{key}"


def seed(template: Path, data_dir: Path) -> bool:
    """Copy the template into a fresh data dir; False when there is none."""
    if not (template / "member").is_dir():
        return False
    shutil.copytree(template, data_dir)
    return True


def save(data_dir: Path, template: Path) -> None:
    """Keep a copy of a cleanly stopped etcd's data dir; older templates are removed."""
    tmp = template.with_name(template.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(data_dir, tmp)
    for old in template.parent.glob("etcd-*"):
        if old != tmp:
            shutil.rmtree(old, ignore_errors=True)
    tmp.rename(template)
