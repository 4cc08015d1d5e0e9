#!/usr/bin/env bash
# False alarms and power of kbench's comparison paths under a competing
# load on the measured CPU: stress-ng keeps CPU $cpu 60% busy while spin
# cells pinned to it are measured. Writes the store to DIR (kept, so the
# figures can be read again) and prints the summary of analyse.py, which
# docs/compare.md's calibration table quotes.
#   scripts/calibration/run.sh DIR [CPU]
# Plans (generated into DIR): aa (40 benches x factor v = 1000/1000, 20
# rounds of 0.02 s; run 20 times), p1 (one bench, v = 1000/1050, 60
# rounds of 0.1 s; 10 times), p40 (40 benches, v = 1000/1050, 20 rounds of
# 0.02 s; 5 times), hist and hist2 (5 command benches of a C loop whose
# length a file sets, about 20 and 160 ms; 12 runs, then 12 runs of a
# loop 5% longer).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
kbench=${KBENCH:-$here/../../target/release/kbench}
dir=$(mkdir -p "$1" && cd "$1" && pwd)
cpu=${2:-1}
export KBENCH_DB=$dir/calibration.db
plan() { # NAME V1 V2 BENCHES SAMPLES SAMPLE_TIME
	{
		printf 'name = "%s"\nsamples = %s\nsample_time = %s\nwarmup = 1\n\n' "$1" "$5" "$6"
		printf '[factors]\nv = { apply = "param", param = "work", values = [%s, %s], labels = ["a", "b"] }\n' "$2" "$3"
		for i in $(seq -w 1 "$4"); do
			[ "$4" -lt 10 ] && i=0$i
			printf '\n[[bench]]\nuse = "spin"\nname = "s%s"\nparams = { cpu = %s }\n' "$i" "$cpu"
		done
	} >"$dir/$1.toml"
}
plan aa 1000 1000 40 20 0.02
plan p1 1000 1050 1 60 0.1
plan p40 1000 1050 40 20 0.02
cc -O1 -o "$dir/spin" "$here/spin.c"
histplan() { # NAME PREFIX
	{
		printf 'name = "%s"\nsamples = 10\nsample_time = 0.005\nwarmup = 1\n' "$1"
		for i in 1 2 3 4 5; do
			printf '\n[[bench]]\nname = "%s%s"\nshell = "taskset -c %s %s/spin $(cat %s/work)"\nmeasure = ["real"]\n' \
				"$2" "$i" "$cpu" "$dir" "$dir"
		done
	} >"$dir/$1.toml"
}
histplan hist h
histplan hist2 g
stress-ng --cpu 1 --cpu-load 60 --taskset "$cpu" --quiet &
stress=$!
trap 'kill $stress 2>/dev/null || true' EXIT
sleep 2
many() { # PLAN TIMES
	for i in $(seq "$2"); do
		echo "$1 $i: $(uptime)" >&2
		"$kbench" run "$dir/$1.toml" --force -q >/dev/null
	done
}
many aa 20
many p1 10
many p40 5
echo 5000000 >"$dir/work"
many hist 12
echo 5250000 >"$dir/work"
many hist 12
echo 40000000 >"$dir/work"
many hist2 12
echo 42000000 >"$dir/work"
many hist2 12
kill $stress
KBENCH=$kbench python3 "$here/analyse.py" "$KBENCH_DB"
