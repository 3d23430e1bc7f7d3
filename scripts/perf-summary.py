#!/usr/bin/env python3
"""Where a reconcile process's CPU goes, from a `perf record -g` profile.

Usage: perf script -i perf.data -F comm,tid,ip,sym,dso | swift demangle --simplified \
           | scripts/perf-summary.py [--phase NAME=REGEX ...] [--top N]

Each sample is put in a phase by the first --phase whose REGEX matches a frame of its stack
(default: turns = SQLiteOrderStore.commit, seeding = .ingest(), other otherwise), and in a
category by its leaf frame: SQLite, kernel, malloc/free, memmove/memset/memcmp, Swift runtime
(retain/release, allocation, arrays, hashing), Foundation, our code (by module) and the rest.
Per phase it prints the categories' shares, and the Swift functions of ours that the samples
were nearest to (the first frame in the reconcile binary from the leaf up, i.e. who called
into SQLite, malloc or the runtime).
"""
import collections
import re
import sys

args = sys.argv[1:]
phases = []
top = 25
while args:
    a = args.pop(0)
    if a == "--phase":
        name, _, regex = args.pop(0).partition("=")
        phases.append((name, re.compile(regex)))
    elif a == "--top":
        top = int(args.pop(0))
    else:
        sys.exit(__doc__)
if not phases:
    phases = [("turns", re.compile(r"SQLiteOrderStore\.commit\(")), ("seeding", re.compile(r"\.ingest\("))]

OURS = ("reconcile-bench", "reconciled", "bench-limit")


def category(sym, dso):
    if re.search(r"^(malloc|free|cfree|_int_\w+|unlink_chunk|tcache_\w+|malloc_consolidate|realloc|calloc)\b", sym):
        return "malloc/free"
    if re.search(r"^__(mem(move|cpy|set|cmp)|str(len|cmp|chr))", sym):
        return "memmove/memset/memcmp"
    if dso == "[kernel.kallsyms]":
        return "kernel (syscalls: write, fsync, page faults)"
    if "libsqlite3" in dso:
        return "SQLite"
    if "libc.so" in dso:
        if re.search(r"malloc|free|_int_|unlink_chunk|tcache|consolidate|realloc|calloc", sym):
            return "malloc/free"
        if re.search(r"mem(move|cpy|set|cmp)|str(len|cmp|chr)", sym):
            return "memmove/memset/memcmp"
        if "pthread" in sym or "mutex" in sym:
            return "pthread mutex"
        return "libc other"
    if "libswiftCore" in dso:
        if re.search(r"retain|release|Retain|Release|RefCount", sym):
            return "Swift ARC (retain/release)"
        if re.search(r"alloc|Alloc|dealloc|Storage|arrayDestroy|arrayInit", sym):
            return "Swift allocation/arrays"
        if "Hasher" in sym or "hash" in sym:
            return "Swift hashing"
        if re.search(r"String|UTF8|utf8|Character|_StringGuts|Unicode", sym):
            return "Swift strings"
        return "Swift stdlib other"
    if "Foundation" in dso:
        return "Foundation"
    if any(dso.endswith(o) for o in OURS):
        if "ReconcileStore" in sym or "SQLite" in sym:
            return "ours: ReconcileStore"
        if "ReconcileCore" in sym:
            return "ours: ReconcileCore"
        return "ours: other"
    return "other: " + dso.rsplit("/", 1)[-1]


def short(sym):
    sym = re.sub(r"\(.*", "", sym)
    sym = re.sub(r"^(specialized |merged |closure #\d+ in |partial apply for |generic specialization <[^>]*> of )+", "", sym)
    return sym[:110]


samples = []
frames = []
line_re = re.compile(r"^\s*[0-9a-f]+ (.*) \(([^()]*)\)\s*$")
for line in sys.stdin:
    if not line.strip():
        if frames:
            samples.append(frames)
            frames = []
        continue
    if not line.startswith(("\t", " ")):
        continue
    m = line_re.match(line)
    if m:
        frames.append((m.group(1).strip(), m.group(2)))
if frames:
    samples.append(frames)


def resolve_inlined(stack):
    """perf names a frame inlined into a function `inlined`: it belongs to that function's DSO."""
    resolved = []
    owner = "?"
    for sym, dso in reversed(stack):
        if dso != "inlined":
            owner = dso
        resolved.append((sym, owner))
    return list(reversed(resolved))


samples = [resolve_inlined(s) for s in samples]
WRAPPER = re.compile(r"^(SQLiteConnection\.(run|query|queryFirst|scalar|prepared|transaction|execute)|SQLiteStatement\.|SQLiteRow\.|"
                     r"PostgreSQLConnection\.|closure #\d+ in SQLiteConnection)")

by_phase = collections.defaultdict(list)
for stack in samples:
    name = "other"
    for phase, regex in phases:
        if any(regex.search(sym) for sym, _ in stack):
            name = phase
            break
    by_phase[name].append(stack)

total = len(samples)
print(f"{total} samples")
for phase in [p for p, _ in phases] + ["other"]:
    stacks = by_phase.get(phase, [])
    if not stacks:
        continue
    n = len(stacks)
    print(f"\n== {phase}: {n} samples, {100 * n / total:.1f}% of all")
    cats = collections.Counter(category(*s[0]) for s in stacks)
    for cat, c in cats.most_common():
        print(f"  {100 * c / n:5.1f}%  {cat}")
    leaves = collections.Counter(f"{short(s[0][0])}  [{s[0][1].rsplit('/', 1)[-1]}]" for s in stacks)
    print(f"  -- leaf functions (self time), top {top}")
    for sym, c in leaves.most_common(top):
        print(f"  {100 * c / n:5.1f}%  {sym}")
    nearest = collections.Counter()
    for s in stacks:
        ours = next((sym for sym, dso in s if any(dso.endswith(o) for o in OURS)), None)
        nearest[short(ours) if ours else "(no frame of ours)"] += 1
    print(f"  -- nearest function of ours (self time, including the C and runtime it called), top {top}")
    for sym, c in nearest.most_common(top):
        print(f"  {100 * c / n:5.1f}%  {sym}")
    callers = collections.Counter()
    for s in stacks:
        ours = [short(sym) for sym, dso in s if any(dso.endswith(o) for o in OURS)]
        beyond = next((sym for sym in ours if not WRAPPER.match(sym)), None)
        callers[beyond or "(no frame of ours)"] += 1
    print(f"  -- the same, looking past the SQL wrapper (SQLiteConnection.run/query, SQLiteStatement), top {top}")
    for sym, c in callers.most_common(top):
        print(f"  {100 * c / n:5.1f}%  {sym}")
