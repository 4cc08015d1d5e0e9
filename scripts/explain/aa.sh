#!/usr/bin/env bash
# `kbench explain`'s acceptance in one command: N A/A pairs (default 20),
# each a run of the two identical variants of prog.c (VARIANT=a and a2,
# interleaved in rounds, profiled), explained; then one A/B run
# (VARIANT=b spends ~10% more in named_hotspot). Prints per pair how many
# symbols explain marks as changed beyond the noise, the totals, and the
# A/B's first symbol with its interval.
# With CPU, the program runs pinned to that CPU while
# `stress-ng --cpu 1 --cpu-load 60 --taskset CPU` competes for it (stopped
# when the script ends, however it ends).
#   scripts/explain/aa.sh DIR [N] [CPU]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
kbench=${KBENCH:-$here/../../target/release/kbench}
dir=$(mkdir -p "$1" && cd "$1" && pwd)
n=${2:-20}
cpu=${3:-}
export KBENCH_DB=$dir/store.db
cc -O1 -g -fno-omit-frame-pointer -o "$dir/prog" "$here/prog.c"
command="\"$dir/prog\""
if [ -n "$cpu" ]; then
    command="\"taskset\", \"-c\", \"$cpu\", \"$dir/prog\""
    stress-ng --cpu 1 --cpu-load 60 --taskset "$cpu" --quiet &
    load=$!
    trap 'kill "$load" 2>/dev/null; wait "$load" 2>/dev/null || true' EXIT
    sleep 2
    echo "competing load: stress-ng --cpu 1 --cpu-load 60 --taskset $cpu (pid $load)"
fi
plan() { # name value-a value-b
    cat > "$dir/$1.toml" <<TOML
name = "$1"
samples = 10
warmup = 1
[factors]
variant = { apply = "env", var = "VARIANT", values = ["$2", "$3"] }
[[bench]]
name = "prog"
command = [$command]
TOML
}
changed() { # A B -> symbols marked changed
    "$kbench" explain "$1" "$2" --json |
        python3 -c 'import json,sys; d=json.load(sys.stdin); print(sum(s["changed"] for c in d["cells"] for s in c["symbols"]))'
}
plan aa a a2
flagged=0
for i in $(seq 1 "$n"); do
    "$kbench" run "$dir/aa.toml" --force --profile -q > /dev/null
    run=$("$kbench" runs --json | python3 -c 'import json,sys; print(max(r["id"] for r in json.load(sys.stdin)["runs"]))')
    c=$(changed "$run:variant=a" "$run:variant=a2")
    echo "A/A pair $i (run $run): $c symbols changed; load $(cut -d' ' -f1-3 /proc/loadavg)"
    if [ "$c" -gt 0 ]; then
        flagged=$((flagged + 1))
        "$kbench" explain "$run:variant=a" "$run:variant=a2" | grep -E '^ *\*' || true
    fi
done
echo "A/A: $flagged of $n pairs show a change"
plan ab a b
# AB=M (default 1) A/B runs: each one's first symbol and the functions whose
# own (self) cost it marks changed.
ab=${AB:-1}
first_ok=0
for i in $(seq 1 "$ab"); do
    "$kbench" run "$dir/ab.toml" --force --profile -q > /dev/null
    run=$("$kbench" runs --json | python3 -c 'import json,sys; print(max(r["id"] for r in json.load(sys.stdin)["runs"]))')
    line=$("$kbench" explain "$run:variant=a" "$run:variant=b" --json | python3 -c '
import json, sys
c = json.load(sys.stdin)["cells"][0]
s = c["symbols"][0]
d, u = s["diff"], c.get("cost_unit") or "points"
own = [x["symbol"] for x in c["symbols"] if x["changed"] and x["measure"] == "self"]
print("%s (%s) %+.4g [%+.4g, %+.4g] %s, cost %.4g -> %.4g; self changed: %s"
      % (s["symbol"], s["measure"], d["mean"], d["lo"], d["hi"], u,
         s.get("cost_a") or s["share_a"], s.get("cost_b") or s["share_b"], ",".join(own)))')
    echo "A/B $i (run $run, load $(cut -d' ' -f1-3 /proc/loadavg)): first $line"
    case "$line" in "named_hotspot (self)"*"self changed: named_hotspot") first_ok=$((first_ok + 1)) ;; esac
done
echo "A/B: named_hotspot first and the only function whose own cost changed in $first_ok of $ab"
