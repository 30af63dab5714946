#!/usr/bin/env python3
"""A report names a setting as the user gave it (src/hint.h: "--kernel" under atlas-trace,
"ATLAS_KERNEL" otherwise), through atl_hint_name or atl_hint_setting, never as a literal
ATLAS_* name in its format. Fails on any string literal of an atl_log, atl_log_once or
snprintf call in src/*.c that holds one, other than the name passed to atl_hint_*,
atl_config_find or atl_env_setting. Two files may: src/log.c (the bottom floor: the line
that its own log file failed calls nothing above it) and src/tracediff.c (the step model
that atlas-diff links too: no live process, its option names come from its caller).

    test_report_names.py SRC_DIR
"""
import glob
import os
import re
import sys

ALLOWED = {"log.c", "tracediff.c"}
CALL = re.compile(r"\b(?:atl_log(?:_once)?|snprintf)\s*\(")
NAMED = re.compile(r'atl_(?:hint_\w+|config_find|env_setting)\s*\(\s*"[^"]*"')
LITERAL = re.compile(r'"((?:[^"\\]|\\.)*)"')


def calls(text):
    """Each call's text, from its name to its closing parenthesis, and its line."""
    for m in CALL.finditer(text):
        i, depth, quoted, escaped = m.end(), 1, False, False
        while i < len(text) and depth:
            c = text[i]
            if quoted:
                if escaped:
                    escaped = False
                elif c == "\\":
                    escaped = True
                elif c == '"':
                    quoted = False
            elif c == '"':
                quoted = True
            elif c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
            i += 1
        yield text[m.start():i], text.count("\n", 0, m.start()) + 1


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "src"
    bad = 0
    files = sorted(glob.glob(os.path.join(src, "*.c")))
    for path in files:
        if os.path.basename(path) in ALLOWED:
            continue
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for call, line in calls(text):
            words = "".join(LITERAL.findall(NAMED.sub("", call)))
            names = re.findall(r"ATLAS_[A-Z][A-Z0-9_]*", words)
            if names:
                bad += 1
                print(f"FAIL: {path}:{line}: a report names {', '.join(names)} literally: "
                      "use atl_hint_name or atl_hint_setting")
    if bad:
        print(f"report-names: {bad} call(s) name a setting literally")
        return 1
    print(f"PASS: report-names: no literal setting name in the reports of {len(files)} files")
    return 0


sys.exit(main())
