#!/usr/bin/env python3
"""Summarise the store scripts/calibration/run.sh filled, through kbench's
own `compare --json` and `report --history --json`: per comparison path,
how many families flag a cell, how many geomean intervals exclude 0, and
where the history finds change points.
    KBENCH=path/to/kbench analyse.py STORE.db"""
import json
import os
import subprocess
import sys

KBENCH = os.environ.get("KBENCH", "kbench")
ENV = dict(os.environ, KBENCH_DB=sys.argv[1])


def kb(*args):
    r = subprocess.run([KBENCH, *args, "--json"], env=ENV, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"kbench {' '.join(args)}: {r.stderr.strip()}")
    return json.loads(r.stdout)


def runs_by_campaign():
    out = subprocess.run([KBENCH, "runs"], env=ENV, capture_output=True, text=True).stdout
    runs = {}
    for line in out.splitlines()[1:]:
        f = line.split()
        if len(f) > 2 and f[-1] == "done":
            runs.setdefault(f[1], []).append(int(f[0]))
    return runs


def family(a, b):
    d = kb("compare", a, b)
    rows = [v for r in d["rows"] for v in r["versus"]]
    flagged = [v["change"] for v in rows if v["significant"]]
    unjudged = sum(1 for v in rows if (v.get("design") or {}).get("unmeasured"))
    g = d["geomean"][0]
    iv = g["design"]["log_interval"]
    excludes = iv is not None and not iv["lo"] <= 0 <= iv["hi"]
    return rows, flagged, unjudged, g, excludes


def show(name, pairs):
    fams = geo = cells = nflag = unj = worse = better = 0
    for a, b in pairs:
        rows, flagged, unjudged, g, excludes = family(a, b)
        fams += bool(flagged)
        geo += excludes
        cells += len(rows)
        nflag += len(flagged)
        unj += unjudged
        worse += sum(1 for c in flagged if c > 0)
        better += sum(1 for c in flagged if c < 0)
        civ = g.get("change_interval")
        ivs = "[%+.2f%%, %+.2f%%]" % (civ[0] * 100, civ[1] * 100) if civ else "(not judged)"
        each = " ".join(
            "%+.1f%%%s" % (v["change"] * 100, "*" if v["significant"] else "") for v in rows[:3]
        )
        print(f"  {a} vs {b}: {len(flagged)}/{len(rows)} flagged, {unjudged} not judged; "
              f"first: {each}; geomean {g['change'] * 100:+.2f}% {ivs}{' excludes 0' if excludes else ''}")
    print(f"{name}: {len(pairs)} families; {fams} flag a cell ({nflag} of {cells} cells: "
          f"{worse} worse, {better} better); {unj} cells not judged; "
          f"{geo} geomean intervals exclude 0\n")


def history(spec, *extra):
    d = kb("report", "--history", spec, *extra)
    return [(s["label"], len(s["points"]),
             [(c["index"], round(c["change"] * 100, 2), c["verdict"], c["p"]) for c in s["change_points"]])
            for s in d["series"]]


def main():
    runs = runs_by_campaign()
    aa = runs.get("aa", [])
    if aa:
        show("A/A, cells of one run paired by round (v=a vs v=b)",
             [(f"{r}:v=a", f"{r}:v=b") for r in aa])
        show("A/A, two runs (run i vs the next, v=a)",
             [(f"{aa[i]}:v=a", f"{aa[(i + 1) % len(aa)]}:v=a") for i in range(len(aa))])
    for c in ("p1", "p40"):
        if runs.get(c):
            show(f"{c}: work 1050 vs 1000 in the same run", [(f"{r}:v=a", f"{r}:v=b") for r in runs[c]])
    if aa:
        series = points = found = 0
        for i in range(1, 41):
            for label, n, cps in history(f"s{i:02d}", "--campaign", "aa"):
                series += 1
                points = n
                found += len(cps)
                if cps:
                    print(f"  A/A history s{i:02d} {label}: {cps}")
        print(f"A/A history: {series} series of {points} runs, {found} change points\n")
    for plan, prefix in (("hist", "h"), ("hist2", "g")):
        if runs.get(plan):
            for i in range(1, 6):
                for label, n, cps in history(f"{prefix}{i}"):
                    print(f"history {prefix}{i}: {n} runs, change points {cps}")


main()
