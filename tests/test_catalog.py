"""The catalog is data: eight entries, each file named after its domain/variant, placeholders checked at load,
per-GPU and per-platform fragments. A broken entry file is an InputError naming the file."""

from __future__ import annotations

import shutil
import typing
from collections.abc import Iterator
from pathlib import Path

import pytest

from nvcre_hera import catalog
from nvcre_hera.api import TestScale
from nvcre_hera.catalog import (
    architecture_of,
    catalog_dir,
    get_entry,
    gpu_architectures,
    gpu_defaults,
    load_catalog,
    platform_settings,
    platforms,
)
from nvcre_hera.errors import InputError

EXPECTED = {
    "communication/nccl-all-gather", "communication/nccl-all-reduce", "communication/nccl-alltoall",
    "communication/nccl-loopback", "communication/nccl-loopback-nvswitch", "diagnostics/dcgm-level4",
    "training/nemotron5-56b", "training/nemotron5-8b",
}


def test_eight_entries() -> None:
    """The catalog NVCRE ships, one file per entry."""
    assert set(load_catalog()) == EXPECTED


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_entry_is_consistent(key: str) -> None:
    """Scales are known testScales; per-node entries run intra-node only; images are pinned; metrics exist."""
    entry = get_entry(*key.split("/"))
    assert set(entry.test_scales) <= set(typing.get_args(TestScale))
    if entry.scope == "per-node":
        assert entry.test_scales == ["intra-node"]
    assert entry.metrics
    assert ":" in entry.image.rsplit("/", 1)[-1] and not entry.image.endswith(":latest")
    assert entry.command and not entry.command[0].endswith(("sh", "bash"))


def test_metrics_by_domain() -> None:
    """NCCL entries produce bandwidths, DCGM a pass flag, training goodput/TFLOP/s/step time."""
    entries = load_catalog()
    assert entries["communication/nccl-all-reduce"].metrics == ["busBandwidthGBps", "algBandwidthGBps"]
    assert entries["diagnostics/dcgm-level4"].metrics == ["dcgmPassed"]
    assert entries["training/nemotron5-8b"].metrics == ["goodputRatio", "avgTFLOPsPerGPU", "avgStepTimeSec"]


def test_unknown_entry() -> None:
    """get_entry names the known entries when asked for one that is not there."""
    with pytest.raises(KeyError, match="unknown category communication/nope"):
        get_entry("communication", "nope")


def test_gpu_fragments() -> None:
    """Per-GPU defaults, and mapping a gpu.product label to the architecture (longest key first: gb300 ≠ b200)."""
    assert {"h100", "gb300"} <= set(gpu_architectures())
    assert gpu_defaults("h100")["gpusPerNode"] == 8 and gpu_defaults("gb300")["gpusPerNode"] == 4
    assert gpu_defaults(None) == gpu_defaults("no-such-gpu")
    assert architecture_of("NVIDIA-H100-80GB-HBM3") == "h100"
    assert architecture_of("NVIDIA-GB300") == "gb300"
    assert architecture_of("NVIDIA-B200") == "b200"
    assert architecture_of("Tesla-T4") is None and architecture_of(None) is None


def test_platform_fragments() -> None:
    """Five platforms; an unknown one falls back to onprem."""
    assert set(platforms()) == {"aws", "gcp", "azure", "oci", "onprem"}
    assert platform_settings("aws")["nicResource"] == "vpc.amazonaws.com/efa"
    assert platform_settings("mars") == platform_settings("onprem")


@pytest.fixture
def catalog_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private copy of the catalog in NVCRE_CATALOG_DIR; caches cleared before and after."""
    root = tmp_path / "catalog"
    shutil.copytree(catalog_dir(), root)
    monkeypatch.setenv("NVCRE_CATALOG_DIR", str(root))
    for fn in (load_catalog, catalog._gpu_table, catalog._platform_table):
        fn.cache_clear()
    yield root
    monkeypatch.undo()
    for fn in (load_catalog, catalog._gpu_table, catalog._platform_table):
        fn.cache_clear()


def test_adding_a_file_adds_an_entry(catalog_copy: Path) -> None:
    """Adding a category means adding a file."""
    src = (catalog_copy / "communication" / "nccl-all-reduce.yaml").read_text()
    (catalog_copy / "communication" / "nccl-reduce-scatter.yaml").write_text(
        src.replace("nccl-all-reduce", "nccl-reduce-scatter"))
    assert "communication/nccl-reduce-scatter" in load_catalog()


def test_unknown_placeholder_is_an_error(catalog_copy: Path) -> None:
    """A placeholder the renderer does not know is caught at load time, naming the file."""
    path = catalog_copy / "communication" / "nccl-all-reduce.yaml"
    path.write_text(path.read_text().replace("{numIterations}", "{numIteration}"))
    with pytest.raises(InputError, match=r"nccl-all-reduce.yaml: unknown placeholder \{numIteration\}"):
        load_catalog()


def test_file_name_must_match_entry(catalog_copy: Path) -> None:
    """An entry whose domain/variant differs from its path is refused."""
    shutil.copy(catalog_copy / "communication" / "nccl-all-reduce.yaml",
                catalog_copy / "communication" / "nccl-copy.yaml")
    with pytest.raises(InputError, match="entry says communication/nccl-all-reduce, file is communication/nccl-copy"):
        load_catalog()


def test_empty_catalog_is_an_error(tmp_path: Path, catalog_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No entries at all is an error that says how to point at the catalog."""
    monkeypatch.setenv("NVCRE_CATALOG_DIR", str(tmp_path / "empty"))
    load_catalog.cache_clear()
    with pytest.raises(InputError, match="NVCRE_CATALOG_DIR"):
        load_catalog()
