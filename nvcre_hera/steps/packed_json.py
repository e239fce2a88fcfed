"""JSON that travels through a diagnose's Argo parameters gzip-compressed: `"nvcre-gz1:<base64 of gzip of JSON>"`.

Argo stores a parameter once per node that takes or gives it, and a diagnose passes its state and its verdict
through every level of the recursion: packed, they take a third to a half of the room. A value handed up through a
fan-out's aggregated output goes as the object `{"packed": "nvcre-gz1:…"}`, because Argo parses an aggregated
value only when it is a JSON object or list; a JSON string would come back quoted once more at every level
(argo-workflows v4.0.5 `workflow/controller/operator.go` `tryJSONUnmarshal` L3609-3633,
`aggregatedJSONValueList` L3638-3654).
"""

from __future__ import annotations

import base64
import gzip
import json
from typing import Any

PREFIX = "nvcre-gz1:"
WRAPPER_KEY = "packed"


def pack(value: Any) -> str:
    """The text `nvcre-gz1:<base64>` (no JSON quotes); keys sorted, so the same value packs to the same text."""
    raw = json.dumps(value, separators=(",", ":"), sort_keys=True).encode()
    return PREFIX + base64.b64encode(gzip.compress(raw, 9, mtime=0)).decode()


def is_packed(value: Any) -> bool:
    return isinstance(value, str) and value.startswith(PREFIX)


def unpack(text: str) -> Any:
    """The value `pack` packed; ValueError when `text` is not one it wrote or does not decode."""
    if not is_packed(text):
        raise ValueError(f"not a packed value: {str(text)[:60]!r}")
    try:
        return json.loads(gzip.decompress(base64.b64decode(text[len(PREFIX):], validate=True)))
    except (ValueError, OSError, EOFError) as exc:
        raise ValueError(f"does not decode: {exc}") from None


def wrap(value: Any) -> dict:
    """`value` packed as an object, for a parameter that goes up through a fan-out's aggregated output."""
    return {WRAPPER_KEY: pack(value)}


def unwrap(value: Any) -> Any:
    """What `wrap` wrapped; any other value as it is (an empty `{}` verdict, a plain one). ValueError when the
    wrapper's content does not decode: that is no verdict, never an empty one."""
    if isinstance(value, dict) and set(value) == {WRAPPER_KEY}:
        return unpack(value[WRAPPER_KEY])
    return value


__all__ = ["PREFIX", "is_packed", "pack", "unpack", "unwrap", "wrap"]
