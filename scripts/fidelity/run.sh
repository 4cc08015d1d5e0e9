#!/usr/bin/env bash
# Fidelity of kbench's null-syscall against a bare C loop of
# syscall(SYS_getppid) built with cc -O2, both pinned to the same CPU and
# run alternately so drift hits both alike. Prints each pair, the medians
# and the ratio kbench/C (docs/accuracy.md quotes it).
#   scripts/fidelity/run.sh [ROUNDS] [CPU]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
kbench=${KBENCH:-$here/../../target/release/kbench}
rounds=${1:-15}
cpu=${2:-0}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -o "$tmp/null_syscall" "$here/null_syscall.c"
export KBENCH_DB=$tmp/k.db
: >"$tmp/c"; : >"$tmp/k"
c_run() { taskset -c "$cpu" "$tmp/null_syscall" 0.2 >>"$tmp/c"; }
k_run() {
	"$kbench" run "null-syscall:cpu=$cpu" --samples 1 --warmup 1 --sample-time 0.2 --json --quiet 2>/dev/null |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["cells"][0]["mean"])' >>"$tmp/k"
}
# Alternate which goes first, so an order effect cancels out.
for i in $(seq "$rounds"); do
	if [ $((i % 2)) = 1 ]; then c_run; k_run; else k_run; c_run; fi
done
paste "$tmp/c" "$tmp/k" | sed 's/^/C, kbench ns: /'
python3 - "$tmp/c" "$tmp/k" <<'PY'
import statistics, sys
c = [float(x) for x in open(sys.argv[1])]
k = [float(x) for x in open(sys.argv[2])]
mc, mk = statistics.median(c), statistics.median(k)
print(f"median C {mc:.2f} ns, kbench {mk:.2f} ns, ratio kbench/C {mk/mc:.4f}")
PY
