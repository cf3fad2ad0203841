"""Validates answers against the official OpenAPI document (tests/data/ppp-openapi.json)."""
import json

import jsonschema

from conftest import SPEC

_SPEC = json.load(open(SPEC))
_SCHEMAS = _SPEC["components"]["schemas"]
_DROP = {"example", "examples", "description", "nullable", "title"}


def _convert(node):
    """OpenAPI 3.0 schema -> JSON Schema: inline $ref, turn `nullable` into a null branch."""
    if isinstance(node, list):
        return [_convert(n) for n in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        return _convert(_SCHEMAS[node["$ref"].rsplit("/", 1)[-1]])
    out = {}
    for key, value in node.items():
        if key == "properties":
            out[key] = {name: _convert(prop) for name, prop in value.items()}
        elif key not in _DROP:
            out[key] = _convert(value)
    if node.get("nullable"):
        return {"anyOf": [out, {"type": "null"}]}
    return out


def response_schema(path, method, status):
    op = _SPEC["paths"][path][method]
    content = op["responses"][str(status)]["content"]["application/json"]
    return _convert(content["schema"])


def validate(raw, path, method, status):
    """Asserts that `raw` (bytes) is JSON valid for that route's documented `status` answer."""
    doc = json.loads(raw)
    jsonschema.validate(doc, response_schema(path, method, status))
    return doc
