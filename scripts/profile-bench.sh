#!/bin/sh
# Profiles reconcile-bench's `store` and `ingest` scenarios with `perf record` (issue 24: the
# store's performance work starts from a profile, before and after).
#
#   scripts/profile-bench.sh <reconcile-bench> <output directory> <label> [orders]
#
# writes <label>-store.txt and <label>-ingest.txt: the scenario's figures, where the CPU goes per
# phase (scripts/perf-summary.py over a DWARF call graph: SQLite's library has no frame
# pointers, so `-g` alone loses every stack that passes through it), `perf report --no-children
# --stdio` (the top 40 symbols by self time, frame-pointer call graph as `perf record -g` takes
# it) and the call graph of the hottest SQLite symbol. The perf.data files stay beside them.
set -eu
bench=$1
out=$2
label=$3
orders=${4:-20000}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"

profile() {
    scenario=$1
    shift
    phases="$*"
    data="$out/$label-$scenario"
    text="$out/$label-$scenario.txt"
    perf record -q -g -o "$data.data" "$bench" "$scenario" --files "$orders" > "$data.run" 2>&1
    perf record -q --call-graph dwarf,16384 -F 999 -o "$data-dwarf.data" "$bench" "$scenario" --files "$orders" > "$data-dwarf.run" 2>&1
    {
        echo "# $bench $scenario --files $orders, profiled $(date -u +%Y-%m-%dT%H:%MZ) on $(nproc) cores"
        echo "# figures of the run under perf record -g (perf slows it down):"
        grep -v '^{' "$data.run" | sed -n '/^== '"$scenario"'/,$p' | sed 's/^/#   /'
        echo
        echo "## Where the CPU goes, per phase (perf record --call-graph dwarf; scripts/perf-summary.py)"
        # shellcheck disable=SC2086
        perf script -i "$data-dwarf.data" -F comm,tid,ip,sym,dso 2>/dev/null | swift demangle --simplified \
            | python3 "$here/perf-summary.py" --top 25 $phases | cut -c1-170
        echo
        echo "## perf report --no-children --stdio (perf record -g), top 40 symbols by self time"
        perf report -i "$data.data" --no-children --stdio --sort dso,symbol -g none 2>/dev/null | grep -v '^#' | grep -v '^$' \
            | head -40 | swift demangle --simplified | cut -c1-170
        echo
        echo "## Call graph of the hottest symbol, sqlite3VdbeExec (dwarf), callers"
        perf report -i "$data-dwarf.data" --no-children --stdio --symbols sqlite3VdbeExec -g caller,1,callee,function,percent 2>/dev/null \
            | grep -v '^#' | grep -v '^$' | swift demangle --simplified | head -60 | cut -c1-170
    } > "$text"
    echo "$text"
}

profile store "--phase turns=SQLiteOrderStore\\.commit\\( --phase seeding=SQLiteOrderStore\\.ingest\\("
profile ingest "--phase store-ingest=SQLiteOrderStore\\.ingest\\( --phase unlink=SpoolIngestor\\.(removeCommitted|scheduleRemoval) --phase read+parse=SpoolIngestor\\.(readAll|Read|process) --phase setup:writing-files=IngestScenario\\.measure --phase disk-probe=DiskProbe"
