"""JSON Schema validation of mpilab's documents (results, multilane, ...) with the
`jsonschema` library, its errors turned into one line: (JSON path, message)."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from mpilab.strict_json import PathT

SCHEMAS = Path(__file__).with_name("schemas")

_TYPE_WORDS = {"object": "an object", "array": "an array", "number": "a number",
               "integer": "an integer", "boolean": "true or false", "string": "a string",
               "null": "null"}


def inline(node: Any, defs: dict[str, Any]) -> Any:
    """The schema with its local references (#/$defs/X, none recursive) replaced by their
    targets: the same constraints, validated several times faster (jsonschema resolves
    every $ref on every use)."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/") and len(node) == 1:
            return inline(defs[ref[len("#/$defs/"):]], defs)
        return {k: inline(v, defs) for k, v in node.items() if k != "$defs"}
    if isinstance(node, list):
        return [inline(v, defs) for v in node]
    return node


def short(v: Any) -> str:
    s = json.dumps(v) if not isinstance(v, float) else repr(v)
    return s if len(s) <= 40 else s[:37] + "..."


def message(e: Any) -> tuple[PathT, str]:
    """(JSON path, one-line message) of a jsonschema ValidationError."""
    while e.context:  # anyOf/oneOf/if: report the deepest failure inside
        alts = [c for c in e.context if c.absolute_path == e.absolute_path]
        if alts and len(alts) == len(e.context) and all(c.validator == "type" for c in alts):
            # every alternative is a type ("a number or null"): name them all, not the last
            types: list[str] = []
            for c in alts:
                v = c.validator_value
                types += [v] if isinstance(v, str) else list(v)
            return (tuple(e.absolute_path),
                    "expected " + " or ".join(_TYPE_WORDS.get(t, t) for t in dict.fromkeys(types)))
        e = max(e.context, key=lambda c: len(c.absolute_path))
    path: PathT = tuple(e.absolute_path)
    inst, val, kind = e.instance, e.validator_value, e.validator
    custom = e.schema.get("x-error") if isinstance(e.schema, dict) else None
    if kind in ("minimum", "maximum") and isinstance(e.schema, dict):
        custom = e.schema.get("x-range-error", custom)
    if custom and kind != "required":
        return path, custom.format(instance=inst if isinstance(inst, str) else short(inst))
    if kind == "type":
        types = [val] if isinstance(val, str) else list(val)
        return path, "expected " + " or ".join(_TYPE_WORDS.get(t, t) for t in types)
    if kind == "required":
        missing = next((k for k in val if k not in inst), val[0])
        why = e.schema.get("x-required-error") if isinstance(e.schema, dict) else None
        return path + (missing,), why or "missing"
    if kind == "minimum":
        return path, f"{short(inst)} is below {val}"
    if kind == "maximum":
        return path, f"{short(inst)} is above {val}"
    if kind == "exclusiveMinimum":
        return path, f"{short(inst)} must be above {val}"
    if kind == "exclusiveMaximum":
        return path, f"{short(inst)} must be below {val}"
    if kind == "minLength":
        return path, "expected a non-empty string"
    if kind in ("minItems", "maxItems"):
        return path, f"expected {val} items, got {len(inst)}"
    if kind == "enum":
        return path, f"{short(inst)} is not one of {', '.join(map(str, val))}"
    if kind == "const":
        return path, f"is {short(inst)}, expected {short(val)}"
    return path, e.message.splitlines()[0][:120]


@functools.cache
def validator(name: str, part: str | None = None) -> Any:
    """The validator of schemas/NAME, or of its $defs entry `part` (checked once, local
    references inlined)."""
    import jsonschema

    schema = json.loads((SCHEMAS / name).read_text())
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    defs = schema.get("$defs", {})
    return cls(inline(schema if part is None else defs[part], defs))


def first_error(name: str, doc: Any) -> tuple[PathT, str] | None:
    """(path, one-line message) of the most relevant violation of schemas/NAME, or None.
    RecursionError (a document nested too deep) propagates."""
    from jsonschema.exceptions import best_match

    err = best_match(validator(name).iter_errors(doc))
    return None if err is None else message(err)
