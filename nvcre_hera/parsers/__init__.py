"""Log parsers: nccl-tests, `dcgmi diag` and training logs, text in, plain JSON-able dict out (pure functions).

`reasons` turns a parsed result into NVCRE-style reasons and the threshold metrics the judge evaluates;
`cli.parse_file` backs `nvcre parse`. The catalog names a parser by its kind (`PARSERS[kind]`).
"""

from __future__ import annotations

from .cli import PARSERS, parse_file
from .dcgm import parse_dcgm
from .nccl import parse_nccl
from .reasons import dcgm_reasons, metrics_from, nccl_reasons, training_reasons
from .training import detect_stall, last_step_progress, parse_training

__all__ = [
    "PARSERS",
    "dcgm_reasons",
    "detect_stall",
    "last_step_progress",
    "metrics_from",
    "nccl_reasons",
    "parse_dcgm",
    "parse_file",
    "parse_nccl",
    "parse_training",
    "training_reasons",
]
