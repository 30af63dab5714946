#!/usr/bin/env python3
"""Validates findings files (ATLAS_REPORT, atlas-diff --report) against docs/findings.schema.json.

    validate_findings.py SCHEMA FILE...    every line of each FILE: exit 0 when all are valid
    validate_findings.py --self-test SCHEMA   the validator rejects what it must

jsonschema is not on every machine, so this is a validator of the subset of JSON Schema the
schema uses: type (one or a list), const, enum, required, properties, additionalProperties
(false), items, minItems, maxItems, minimum, pattern. A keyword outside that subset is an error,
so the schema cannot grow a rule this script would quietly skip.
"""
import json
import re
import sys

KNOWN = {"$schema", "$id", "title", "type", "const", "enum", "required", "properties",
         "additionalProperties", "items", "minItems", "maxItems", "minimum", "pattern"}

TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def check(schema, v, where, errors):
    unknown = set(schema) - KNOWN
    if unknown:
        raise SystemExit("validate_findings: schema keyword(s) not supported: %s" % sorted(unknown))
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(TYPES[t](v) for t in types):
            errors.append("%s: %r is not of type %s" % (where, v, "/".join(types)))
            return
    if "const" in schema and (v != schema["const"] or type(v) is not type(schema["const"])):
        errors.append("%s: %r is not %r" % (where, v, schema["const"]))
    if "enum" in schema and v not in schema["enum"]:
        errors.append("%s: %r is not one of %s" % (where, v, schema["enum"]))
    if isinstance(v, dict):
        for k in schema.get("required", []):
            if k not in v:
                errors.append("%s: key %r missing" % (where, k))
        props = schema.get("properties", {})
        for k, sub in v.items():
            if k in props:
                check(props[k], sub, "%s.%s" % (where, k), errors)
            elif schema.get("additionalProperties", True) is False:
                errors.append("%s: key %r not in the schema" % (where, k))
    if isinstance(v, list):
        if "minItems" in schema and len(v) < schema["minItems"]:
            errors.append("%s: fewer than %d items" % (where, schema["minItems"]))
        if "maxItems" in schema and len(v) > schema["maxItems"]:
            errors.append("%s: more than %d items" % (where, schema["maxItems"]))
        for i, item in enumerate(v):
            if "items" in schema:
                check(schema["items"], item, "%s[%d]" % (where, i), errors)
    if "minimum" in schema and TYPES["integer"](v) and v < schema["minimum"]:
        errors.append("%s: %r is below %r" % (where, v, schema["minimum"]))
    if "pattern" in schema and isinstance(v, str) and not re.search(schema["pattern"], v):
        errors.append("%s: %r does not match %s" % (where, v, schema["pattern"]))


def validate_line(schema, text, where):
    try:
        obj = json.loads(text)
    except ValueError as e:
        return ["%s: not JSON: %s" % (where, e)]
    errors = []
    check(schema, obj, where, errors)
    return errors


def self_test(schema):
    good = {"schema": "atlastrace-findings", "version": 1, "tool": "atlastrace", "pid": 7,
            "id": 1, "kind": "leak", "message": "leaks:   alloc#2 ...", "kernel": None,
            "kernel_mangled": None, "launch": None, "alloc": 2, "bytes": 8, "count": 1,
            "step": None, "files": None,
            "frames": [{"pc": "0x1", "function": "f", "mangled": None, "object": "a",
                        "offset": 0, "file": "a.c", "line": 3}],
            "suppressed": False, "suppression": None, "printed": True}
    assert not validate_line(schema, json.dumps(good), "good"), validate_line(
        schema, json.dumps(good), "good")
    bad = [
        ("kind", "leaks"), ("version", 2), ("version", True), ("id", 0), ("printed", 1),
        ("frames", [{"pc": "1"}]), ("step", {"name": "s"}), ("extra", 1), ("files", []),
    ]
    for k, v in bad:
        obj = dict(good)
        obj[k] = v
        if not validate_line(schema, json.dumps(obj), k):
            raise SystemExit("validate_findings: self-test: %s=%r was accepted" % (k, v))
    obj = dict(good)
    del obj["message"]
    if not validate_line(schema, json.dumps(obj), "missing"):
        raise SystemExit("validate_findings: self-test: a missing key was accepted")
    if not validate_line(schema, "{not json", "garbage"):
        raise SystemExit("validate_findings: self-test: a line that is not JSON was accepted")
    print("validate_findings: self-test: %d bad lines rejected, the good one accepted"
          % (len(bad) + 2))


def main(argv):
    if len(argv) == 3 and argv[1] == "--self-test":
        self_test(json.load(open(argv[2])))
        return 0
    if len(argv) < 3:
        raise SystemExit(__doc__)
    schema = json.load(open(argv[1]))
    errors, lines = [], 0
    for path in argv[2:]:
        with open(path, encoding="utf-8") as f:
            for n, text in enumerate(f, 1):
                lines += 1
                errors += validate_line(schema, text, "%s:%d" % (path, n))
    for e in errors:
        print(e)
    print("validate_findings: %d lines, %d errors" % (lines, len(errors)))
    return 1 if errors or lines == 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
