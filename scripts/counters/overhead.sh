#!/usr/bin/env bash
# The default counters' cost on null-syscall: N pairs of runs (default 12)
# pinned to one CPU, `--counters none` and the default (no --counters:
# the software counters) alternating (the side that goes first alternates
# too), each run 10 samples of 0.2 s.
# Prints each pair's medians and load, then the geometric mean of the
# paired ratios (counters / none) with its 95% t interval.
#   scripts/counters/overhead.sh [N] [CPU]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
kbench=${KBENCH:-$here/../../target/release/kbench}
n=${1:-12}
cpu=${2:-1}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export KBENCH_DB=$dir/store.db
median() { # [--counters LIST] -> median ns/op
    "$kbench" run "null-syscall:cpu=$cpu" "$@" --samples 10 \
        --sample-time 0.2 --json --quiet 2>/dev/null |
        python3 -c 'import json,sys; print([c["median"] for c in json.load(sys.stdin)["cells"] if c["metric"] == "ns/op"][0])'
}
for i in $(seq 1 "$n"); do
    if [ $((i % 2)) -eq 1 ]; then
        off=$(median --counters none); on=$(median)
    else
        on=$(median); off=$(median --counters none)
    fi
    echo "$i $off $on $(cut -d' ' -f1-3 /proc/loadavg)"
done | tee "$dir/pairs"
python3 - "$dir/pairs" <<'PY'
import math, statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
r = [math.log(float(on) / float(off)) for _, off, on, *_ in rows]
n, m, s = len(r), statistics.mean(r), statistics.stdev(r)
# Two-sided 95% t quantiles for n-1 degrees of freedom (n <= 31).
t = [12.71, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
     2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
     2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042][n - 2]
h = t * s / math.sqrt(n)
slower = sum(x > 0 for x in r)
print(f"counters/none: {math.exp(m):.4f} [{math.exp(m - h):.4f}, {math.exp(m + h):.4f}] "
      f"(geometric mean of {n} paired ratios, 95% t interval); slower in {slower} of {n}")
PY
