"""Writing values as source text of other languages: JS/TS object literals, comment blocks.

Shared by the generic export formats (:mod:`rrfbench.outputs.exporters`) and the systems' own
configuration shapes (:mod:`rrfbench.systems.presets`).
"""

from __future__ import annotations

import json


def num(v):
    """``3.0`` -> ``3`` (integral floats print as integers in config files); others unchanged."""
    return int(v) if isinstance(v, float) and v.is_integer() and abs(v) < 1e15 else v


def js_key(k: str) -> str:
    return k if k.replace("_", "a").isalnum() and not k[0].isdigit() else json.dumps(k)


def js_value(v, indent: int = 0) -> str:
    """A JavaScript literal for ``v`` (dicts as objects, two-space indentation)."""
    pad = "  " * (indent + 1)
    if isinstance(v, dict):
        inner = ",\n".join(f"{pad}{js_key(k)}: {js_value(x, indent + 1)}" for k, x in v.items())
        return "{\n" + inner + ",\n" + "  " * indent + "}"
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    if isinstance(v, (int, float)):
        return repr(num(v))
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(js_value(x, indent) for x in v) + "]"
    return json.dumps(v)


def comment_block(prefix: str, lines: list[str]) -> str:
    """``lines`` as line comments (``#`` or ``//``), each ending in a newline."""
    return "".join(f"{prefix} {ln}\n" for ln in lines)
