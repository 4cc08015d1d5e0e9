#!/usr/bin/env python3
"""Fidelity of kbench's built-in scale testcases against will-it-scale.

Given a directory where will-it-scale was built by the user (its
NAME_processes and NAME_threads binaries; see the README's Accuracy
section for how), measure every built-in testcase that has a binary there
against it, alternately (kbench, will-it-scale, will-it-scale, kbench,
...), for each mode and task count, and print one row per testcase, mode
and task count: the medians of the rounds and the ratio kbench/wis.

Both sides are measured the same way: `warmup` 1-second intervals
discarded, then `seconds` 1-second intervals averaged, same task count,
same pinning (will-it-scale's default: task i on core i; kbench
pin=compact), and both run under `setarch -R` (address-space
randomisation off, as will-it-scale's runtest.py runs its binaries)
unless --aslr. will-it-scale's per-interval totals are read from its
output line by line as it prints them and the run is stopped once it has
printed enough intervals, so the warm-up is the script's choice on both
sides (will-it-scale's own `average:` needs 6 warm-up intervals). Its
output is read through a pseudo-terminal, where the C library
line-buffers stdout by itself: not through `stdbuf -oL`, whose
LD_PRELOAD of libstdbuf.so adds 5 mappings to every will-it-scale
process and, measured here, halved brk1's and mmap1's throughput per CPU
second (the kernel's VMA tree takes a slower path), which made kbench
read 1.9-2x will-it-scale's.

This script contains no will-it-scale code and neither fetches nor builds
it.

    scripts/fidelity/wis.py WIS_DIR [--rounds 3] [--tasks 1,2]
        [--modes processes,threads] [--warmup 2] [--seconds 2]
        [--only a,b] [--markdown] [--aslr]
"""

import argparse
import json
import os
import pty
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
KBENCH = os.environ.get("KBENCH", os.path.join(HERE, "..", "..", "target", "release", "kbench"))


def prefix(aslr):
    if aslr:
        return []
    return ["setarch", os.uname().machine, "-R"]


def run_wis(binary, tasks, warmup, seconds, aslr):
    """Mean ops/s of will-it-scale's intervals warmup+1..warmup+seconds."""
    cmd = prefix(aslr) + [binary, "-t", str(tasks)]
    # stdout on a pseudo-terminal: will-it-scale's printf output is then
    # line-buffered by the C library, with nothing loaded into its
    # processes (see the module's docstring on stdbuf).
    master, slave = pty.openpty()
    # Its own process group: killing will-it-scale's main process leaves
    # a new_task() partner running (the partner's watchdog checks the task,
    # whose own watchdog then checks itself), so the whole group goes.
    p = subprocess.Popen(
        cmd, stdin=subprocess.DEVNULL, stdout=slave, stderr=subprocess.DEVNULL, start_new_session=True
    )
    os.close(slave)
    totals = []
    try:
        with os.fdopen(master, "r", errors="replace") as out:
            try:
                for line in out:
                    if line.startswith("min:") and "total:" in line:
                        totals.append(int(line.rsplit("total:", 1)[1]))
                        if len(totals) >= warmup + seconds:
                            break
            except OSError:
                pass  # EIO: the terminal's last writer exited
    finally:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
    got = totals[warmup : warmup + seconds]
    if len(got) < seconds:
        raise RuntimeError(f"{binary}: printed {len(totals)} intervals")
    return sum(got) / len(got)


def run_kbench(name, mode, tasks, warmup, seconds, aslr, db):
    cell = f"{name}:mode={mode},tasks={tasks},interval=1,warmup={warmup},intervals={seconds}"
    cmd = prefix(aslr) + [KBENCH, "run", cell, "--samples", "1", "--warmup", "0", "--json", "-q"]
    # A session of its own, as will-it-scale's run has: with autogroup
    # scheduling (/proc/sys/kernel/sched_autogroup_enabled) each session is
    # one scheduling group, so both sides must compete with other work
    # from the same footing.
    out = subprocess.run(
        cmd, capture_output=True, text=True, env=dict(os.environ, KBENCH_DB=db), start_new_session=True
    )
    if out.returncode != 0:
        raise RuntimeError(f"kbench {cell}: {out.stderr.strip()}")
    cells = json.loads(out.stdout)["cells"]
    return next(c["mean"] for c in cells if c["metric"] == "ops/s")


def markdown(rows):
    """The table: medians, ratio, and each side's range over the rounds;
    `overlap` says whether the two ranges overlap (then the rounds do not
    tell the two apart at this noise level)."""
    out = [
        "| testcase | mode | tasks | kbench ops/s | will-it-scale ops/s | ratio | kbench range | wis range | overlap |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, mode, tasks, mk, mw, ratio, k, w in rows:
        overlap = "yes" if min(k) <= max(w) and min(w) <= max(k) else "no"
        out.append(
            f"| `{name}` | {mode} | {tasks} | {mk:.4g} | {mw:.4g} | {ratio:.3f} "
            f"| {min(k):.3g}-{max(k):.3g} | {min(w):.3g}-{max(w):.3g} | {overlap} |"
        )
    return "\n".join(out)


def builtins():
    out = subprocess.run([KBENCH, "list", "--json"], capture_output=True, text=True, check=True)
    return [b["name"] for b in json.loads(out.stdout) if b["kind"] == "scale"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("wis_dir")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tasks", default="1,2")
    ap.add_argument("--modes", default="processes,threads")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--seconds", type=int, default=2)
    ap.add_argument("--only", default="")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--aslr", action="store_true", help="leave address-space randomisation on")
    a = ap.parse_args()
    if not a.aslr and shutil.which("setarch") is None:
        sys.exit("setarch not found (util-linux); install it or pass --aslr")
    names = builtins()
    if a.only:
        want = a.only.split(",")
        names = [n for n in names if n in want]
    missing = [n for n in names if not os.access(os.path.join(a.wis_dir, f"{n}_processes"), os.X_OK)]
    names = [n for n in names if n not in missing]
    if missing:
        print(f"# no will-it-scale binary for: {', '.join(missing)}", file=sys.stderr)
    tmp = tempfile.mkdtemp()
    db = os.path.join(tmp, "k.db")
    rows = []
    t0 = time.time()
    try:
        for name in names:
            for mode in a.modes.split(","):
                for tasks in [int(t) for t in a.tasks.split(",")]:
                    binary = os.path.join(a.wis_dir, f"{name}_{mode}")
                    k, w = [], []
                    for r in range(a.rounds):
                        # ABBA: alternate which side goes first.
                        order = ["k", "w"] if r % 2 == 0 else ["w", "k"]
                        for side in order:
                            if side == "k":
                                k.append(run_kbench(name, mode, tasks, a.warmup, a.seconds, a.aslr, db))
                            else:
                                w.append(run_wis(binary, tasks, a.warmup, a.seconds, a.aslr))
                    mk, mw = statistics.median(k), statistics.median(w)
                    ratio = mk / mw if mw > 0 else float("nan")
                    rows.append((name, mode, tasks, mk, mw, ratio, k, w))
                    print(
                        f"{name:18} {mode:9} {tasks:3} kbench {mk:14.0f} wis {mw:14.0f} ratio {ratio:.3f}"
                        f"   k={[round(x) for x in k]} w={[round(x) for x in w]}  [{time.time() - t0:.0f} s]",
                        flush=True,
                    )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if a.markdown:
        print()
        print(markdown(rows))
    out = [r for r in rows if not 0.95 <= r[5] <= 1.05]
    print(f"\n{len(rows) - len(out)} of {len(rows)} rows within 0.95-1.05", file=sys.stderr)


if __name__ == "__main__":
    main()
