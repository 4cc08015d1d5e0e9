#!/usr/bin/env bash
# `kbench check` under a competing load on the measured CPU: stress-ng
# keeps CPU $cpu 60% busy while two command benchmarks pinned to it (shell
# loops of 40,000 iterations, about 50 ms alone) are measured. A baseline
# of 10 runs (label branch=main), then checks of 3 candidate runs each,
# alternated: identical code (A/A) twice, then `loop` 10% slower (44,000
# iterations) and identical again, then `loop` 10% faster (36,364), each
# round; `steady` never changes. Prints one line per check (kind, exit
# status, first line) and the counts docs/check.md quotes.
#   scripts/check/acceptance.sh DIR [ROUNDS] [SAMPLES] [CPU]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
kbench=${KBENCH:-$here/../../target/release/kbench}
dir=$(mkdir -p "$1" && cd "$1" && pwd)
rounds=${2:-10}
samples=${3:-20}
cpu=${4:-1}
export KBENCH_DB=$dir/check.db
rm -f "$KBENCH_DB"
for b in loop steady; do
	printf 'i=0; n=$(cat %s/%s.n); while [ $i -lt $n ]; do i=$((i+1)); done\n' "$dir" "$b" >"$dir/$b.sh"
	echo 40000 >"$dir/$b.n"
done
cat >"$dir/acc.toml" <<TOML
name = "acc"
samples = $samples
warmup = 2

[[bench]]
name = "loop"
command = ["sh", "$dir/loop.sh"]
measure = ["real"]

[[bench]]
name = "steady"
command = ["sh", "$dir/steady.sh"]
measure = ["real"]
TOML
stress-ng --cpu 1 --cpu-load 60 --taskset "$cpu" --quiet &
stress=$!
trap 'kill $stress 2>/dev/null || true' EXIT
sleep 2
echo "baseline: $(uptime)"
taskset -c "$cpu" "$kbench" run "$dir/acc.toml" --repeat 10 --label branch=main -q >/dev/null
check() { # KIND ITERATIONS
	echo "$2" >"$dir/loop.n"
	set +e
	out=$(taskset -c "$cpu" "$kbench" check "$dir/acc.toml" --baseline branch=main \
		--baseline-history 10 --threshold 3% --repeat 3 --label branch=candidate)
	code=$?
	set -e
	echo "$1 exit $code: $(head -1 <<<"$out") | $(uptime | sed 's/.*load/load/')"
}
for i in $(seq "$rounds"); do
	check aa 40000
	check slower 44000
	check aa 40000
	check faster 36364
done
echo "end: $(uptime)"
