#!/usr/bin/env python3
"""A command sample's harness cost against hyperfine's (issue 45.4).

For each command (`true`, `sleep 0.01`), ALT alternations: hyperfine -N,
kbench, hyperfine -N again, RUNS runs each (3 warm-ups), all pinned to one
CPU. Each alternation's ratio is kbench's median over the mean of the two
hyperfine medians around it, so the machine's drift over seconds cancels;
the median ratio and its quartiles are printed.

    scripts/harness/command_overhead.py [--alt 30] [--runs 40] [--cpu N]
        [--kbench target/release/kbench]
"""
import argparse, json, os, statistics, subprocess, tempfile

here = os.path.dirname(os.path.abspath(__file__))
ap = argparse.ArgumentParser()
ap.add_argument("--alt", type=int, default=30)
ap.add_argument("--runs", type=int, default=40)
ap.add_argument("--cpu", type=int, default=os.cpu_count() - 1)
ap.add_argument("--kbench", default=os.path.join(here, "../../target/release/kbench"))
a = ap.parse_args()
tmp = tempfile.mkdtemp()
pin = ["taskset", "-c", str(a.cpu)]
env = dict(os.environ, KBENCH_DB=os.path.join(tmp, "store.db"))


def kbench(cmd):
    out = subprocess.check_output(
        pin + [a.kbench, "run", "--samples", str(a.runs), "--warmup", "3", "-q", "--json", cmd],
        env=env,
    )
    cells = json.loads(out)["cells"]
    return [c for c in cells if c["metric"] == "real"][0]["median"]


def hyperfine(cmd):
    f = os.path.join(tmp, "h.json")
    subprocess.run(
        pin + ["hyperfine", "-N", "--runs", str(a.runs), "--warmup", "3", "--export-json", f, cmd],
        capture_output=True,
        check=True,
    )
    return json.load(open(f))["results"][0]["median"]


for cmd in ["true", "sleep 0.01"]:
    ratios, ks = [], []
    for _ in range(a.alt):
        h1 = hyperfine(cmd)
        k = kbench(cmd)
        h2 = hyperfine(cmd)
        ratios.append(k / ((h1 + h2) / 2))
        ks.append(k)
    r = sorted(ratios)
    q = lambda p: r[min(len(r) - 1, int(p * len(r)))]
    print(
        f"{cmd:<11} kbench / hyperfine -N: median {statistics.median(r):.3f} "
        f"(quartiles {q(0.25):.3f}-{q(0.75):.3f}; {a.alt} alternations of {a.runs} runs, "
        f"CPU {a.cpu}; kbench median {statistics.median(ks) * 1e3:.3f} ms)"
    )
