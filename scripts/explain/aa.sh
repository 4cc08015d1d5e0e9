#!/usr/bin/env bash
# False alarms of `kbench explain`: N A/A pairs (default 20), each a run
# of the two identical variants of prog.c (VARIANT=a and a2, interleaved
# in rounds, profiled), explained; then one A/B run (VARIANT=b spends
# ~10% more in named_hotspot). Prints per pair how many symbols explain
# marks as changed beyond the noise, and the totals.
#   scripts/explain/aa.sh DIR [N]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
kbench=${KBENCH:-$here/../../target/release/kbench}
dir=$(mkdir -p "$1" && cd "$1" && pwd)
n=${2:-20}
export KBENCH_DB=$dir/store.db
cc -O1 -g -fno-omit-frame-pointer -o "$dir/prog" "$here/prog.c"
plan() { # name value-a value-b
    cat > "$dir/$1.toml" <<TOML
name = "$1"
samples = 10
warmup = 1
[factors]
variant = { apply = "env", var = "VARIANT", values = ["$2", "$3"] }
[[bench]]
name = "prog"
command = ["$dir/prog"]
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
    [ "$c" -gt 0 ] && flagged=$((flagged + 1))
done
echo "A/A: $flagged of $n pairs show a change"
plan ab a b
"$kbench" run "$dir/ab.toml" --profile -q > /dev/null
"$kbench" explain ab:variant=a ab:variant=b
