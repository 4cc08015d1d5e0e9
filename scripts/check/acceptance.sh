#!/usr/bin/env bash
# `kbench check` under a competing load on the measured CPU: stress-ng
# keeps CPU $cpu 60% busy while two command benchmarks pinned to it (shell
# loops of 40,000 iterations, about 50 ms alone) are measured. Checks are
# alternated: identical code (A/A) twice, then `loop` 10% slower (44,000
# iterations) and identical again, then `loop` 10% faster (36,364), each
# round; `steady` never changes. Prints one line per check (kind, exit
# status, first line) and the load; docs/check.md quotes the counts.
#
# MODE `against` (the default): each check measures the baseline and the
# candidate interleaved in one run, as the levels `base` and `cand` of
# the factor `side` (`kbench check --against side=base`), paired by round.
# MODE `stored`: a baseline of 10 runs (label branch=main) measured first,
# then each check runs 3 candidate runs and compares them with it.
# SLOWER and FASTER (environment) override the candidate's iterations.
#   scripts/check/acceptance.sh DIR [ROUNDS] [SAMPLES] [CPU] [MODE]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
kbench=${KBENCH:-$here/../../target/release/kbench}
dir=$(mkdir -p "$1" && cd "$1" && pwd)
rounds=${2:-10}
samples=${3:-20}
cpu=${4:-1}
mode=${5:-against}
export KBENCH_DB=$dir/check.db
rm -f "$KBENCH_DB"
for b in loop steady; do
	printf 'i=0; n=$(cat %s/%s.$SIDE.n); while [ $i -lt $n ]; do i=$((i+1)); done\n' "$dir" "$b" >"$dir/$b.sh"
	for s in base cand; do echo 40000 >"$dir/$b.$s.n"; done
done
cat >"$dir/acc.toml" <<TOML
name = "acc"
samples = $samples
warmup = 2

[factors]
side = { apply = "env", var = "SIDE", values = ["base", "cand"] }

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
if [ "$mode" = stored ]; then
	# The stored baseline is the `base` level alone, measured first.
	echo "baseline: $(uptime)"
	taskset -c "$cpu" "$kbench" run "$dir/acc.toml" --repeat 10 --label branch=main -q >/dev/null
fi
check() { # KIND ITERATIONS
	echo "$2" >"$dir/loop.cand.n"
	set +e
	if [ "$mode" = stored ]; then
		echo "$2" >"$dir/loop.base.n"
		out=$(taskset -c "$cpu" "$kbench" check "$dir/acc.toml" --baseline branch=main \
			--baseline-history 10 --threshold 3% --repeat 3 --label branch=candidate)
	else
		out=$(taskset -c "$cpu" "$kbench" check "$dir/acc.toml" --against side=base \
			--threshold 3%)
	fi
	code=$?
	set -e
	echo "$1 exit $code: $(head -1 <<<"$out") | $(uptime | sed 's/.*load/load/')"
}
for i in $(seq "$rounds"); do
	check aa 40000
	check slower "${SLOWER:-44000}"
	check aa 40000
	check faster "${FASTER:-36364}"
done
echo "end: $(uptime)"
