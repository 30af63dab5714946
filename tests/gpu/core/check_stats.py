#!/usr/bin/env python3
"""Checks atlastrace's statistics (ATLAS_STATS=1 log) against what a real-GPU
target is known to do. Prints every figure it compares; exits 1 on a miss.

  check_stats.py HOOKS_DEF LOG exact   SYM=N ...      calls of each symbol
  check_stats.py HOOKS_DEF LOG class   CLASS=N|>=N ...  totals by class
  check_stats.py HOOKS_DEF LOG torch   TRUTH.json      eager region vs profiler
"""
import json
import re
import sys

CLASSES = {"launch": ("LAUNCH", "LAUNCH_EX", "LAUNCH_COOP"), "graph": ("GRAPH_LAUNCH",),
           "copy": ("CPY_",), "memset": ("SET_",), "sync": ("SYNC_",),
           "alloc": ("ALLOC",), "free": ("FREE",), "capture": ("CAPTURE_",)}


def kinds(hooks_def):
    out = {}
    for m in re.finditer(r"^ATL_HOOK(?:_LIGHT)?\((\w+),\s*(\w+),", open(hooks_def).read(), re.M):
        out[m.group(1)] = m.group(2)
    return out


def klass(kind):
    for c, prefixes in CLASSES.items():
        for p in prefixes:
            if kind == p or (p.endswith("_") and kind.startswith(p)) or \
               (p == "ALLOC" and kind.startswith("ALLOC")) or (p == "FREE" and kind.startswith("FREE")):
                return c
    return None


def tables(log):
    """{tag: {symbol: (calls, linked, dlsym, gpa)}} for 'stats' and each snapshot."""
    out = {}
    for m in re.finditer(r"atlas\[\d+\]: (stats|snapshot\[[^\]]*\]): (\w+) +(\d+) +(\d+) +(\d+) +(\d+)",
                         log):
        out.setdefault(m.group(1), {})[m.group(2)] = tuple(int(m.group(i)) for i in range(3, 7))
    return out


def by_class(table, kmap):
    tot = {}
    for sym, row in table.items():
        c = klass(kmap.get(sym, ""))
        if c:
            tot[c] = tot.get(c, 0) + row[0]
    return tot


def main():
    kmap = kinds(sys.argv[1])
    t = tables(open(sys.argv[2]).read())
    mode, args = sys.argv[3], sys.argv[4:]
    final = t.get("stats", {})
    bad = 0
    if mode == "exact":
        for a in args:
            sym, want = a.split("=", 1)
            got = final.get(sym, (0,))[0]
            ok = got == int(want)
            bad += not ok
            print(f"  {'ok  ' if ok else 'MISS'} {sym}: counted {got}, program made {want}")
    elif mode == "class":
        tot = by_class(final, kmap)
        for a in args:
            c, want = a.split("=", 1)
            got = tot.get(c, 0)
            ok = got >= int(want[2:]) if want.startswith(">=") else got == int(want)
            bad += not ok
            print(f"  {'ok  ' if ok else 'MISS'} {c}: counted {got}, program made {want}")
        paths = [0, 0, 0]
        for row in final.values():
            for i in range(3):
                paths[i] += row[i + 1]
        print(f"  paths: linked={paths[0]} dlsym={paths[1]} gpa={paths[2]}")
    elif mode == "torch":
        truth = json.load(open(args[0]))
        api = truth["api"]

        def delta(a, b):
            ta, tb = t.get(f"snapshot[{a}]", {}), t.get(f"snapshot[{b}]", {})
            d = {s: tb.get(s, (0,))[0] - ta.get(s, (0,))[0] for s in set(ta) | set(tb)}
            return {s: v for s, v in d.items() if v}

        eager = delta("eager-begin", "eager-end")
        ec = by_class({s: (v, 0, 0, 0) for s, v in eager.items()}, kmap)
        prof_launch = sum(v for k, v in api.items()
                          if k in ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel",
                                   "cuLaunchKernelEx", "cudaLaunchCooperativeKernel"))
        prof_copy = sum(v for k, v in api.items() if k.startswith("cudaMemcpy") or k.startswith("cuMemcpy"))
        prof_sync = sum(v for k, v in api.items() if "Synchronize" in k)
        print(f"  profiler API calls in the eager region: {dict(sorted(api.items()))}")
        print(f"  atlastrace in the eager region: {dict(sorted(eager.items()))}")
        for c, want, exact in (("launch", prof_launch, True), ("copy", prof_copy, False),
                               ("sync", prof_sync, False)):
            got = ec.get(c, 0)
            ok = (got == want) if exact else (got >= want)
            bad += not ok
            print(f"  {'ok  ' if ok else 'MISS'} eager {c}: counted {got}, profiler saw {want}"
                  f"{'' if exact else ' (at least)'}")
        graph = delta("graph-begin", "graph-end")
        gc = by_class({s: (v, 0, 0, 0) for s, v in graph.items()}, kmap)
        ok = gc.get("graph", 0) == truth["replays"]
        bad += not ok
        print(f"  {'ok  ' if ok else 'MISS'} graph launches: counted {gc.get('graph', 0)}, "
              f"replays {truth['replays']}")
        fc = by_class(final, kmap)
        ok = fc.get("capture", 0) >= 2
        bad += not ok
        print(f"  {'ok  ' if ok else 'MISS'} capture begin+end: counted {fc.get('capture', 0)}")
    sys.exit(1 if bad else 0)


main()
