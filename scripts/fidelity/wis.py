#!/usr/bin/env python3
"""Fidelity of kbench's built-in scale testcases against will-it-scale.

Given a directory where will-it-scale was built by the user (its
NAME_processes and NAME_threads binaries; docs/accuracy.md says
how), measure every built-in testcase that has a binary there
against it, alternately, for each mode and task count, and print one row
per testcase, mode and task count: the medians of the rounds, the ratio
kbench/wis, the 95% interval of the rounds' paired ratios, and the
conditions the row was measured in.

The full pass, and why it takes 15-20 minutes for 120 rows on 2 CPUs:
every row gets `--first` rounds (default 1: kbench and will-it-scale once
each, which side goes first alternating from row to row), then the rows
whose ratio is outside 0.95-1.05 get more rounds, at the end of the pass
(so a passing disturbance is not measured again at once), up to
`--rounds` (default 3; the ratio is then of the medians), those whose
runs waited for their CPUs first, then nearest the band, as long as the pass stays within `--budget` minutes (default 20;
a row left out keeps its rounds, which the table shows). Each side costs
`warmup + seconds` one-second intervals plus about half a second.

Both sides are measured the same way: `warmup` 1-second intervals
discarded, then `seconds` 1-second intervals averaged, same task count,
same pinning (will-it-scale's default: task i on core i; kbench
pin=compact), and both run under `setarch -R` (address-space
randomisation off, as will-it-scale's runtest.py runs its binaries)
unless --aslr (each run then draws a new layout: use it, with more rounds,
for the loops of a few nanoseconds whose rate moves with the layout, the
`layout draw` rows of docs/accuracy.md). will-it-scale's per-interval totals are read from its
output line by line as it prints them and the run is stopped once it has
printed enough intervals, so the warm-up is the script's choice on both
sides (will-it-scale's own `average:` needs 6 warm-up intervals). Its
output is read through a pseudo-terminal, where the C library
line-buffers stdout by itself: not through `stdbuf -oL`, whose
LD_PRELOAD of libstdbuf.so adds 5 mappings to every will-it-scale
process and, measured here, halved brk1's and mmap1's throughput per CPU
second (the kernel's VMA tree takes a slower path), which made kbench
read 1.9-2x will-it-scale's.

Conditions, per side run, from /proc: `waited` is the share of the run
its threads were runnable but waiting for a CPU (other work on the
measured CPUs: 0.00 when they had them to themselves); `other` is the
CPUs' busy time
beyond the measured tasks' (busy CPU-seconds / wall seconds - tasks: 0.0
on an idle machine, 1.0 when another CPU is busy throughout); `disk` is
what all block devices read and wrote meanwhile (MB/s; a row that does
I/O itself counts its own); `load` the 1-minute load average. A row
shows the worst of its runs. Rows outside 0.95-1.05 get the cause
`causes.txt` gives for this CPU, testcase, mode and direction, or
`unexplained`.

On a machine shared with other sessions, `--session-nice -10` gives both
sides priority over other work: under autogroup scheduling their
sessions' (/proc/PID/autogroup), since a `nice -n 19` elsewhere does not
yield to another session; with autogroups off
(/proc/sys/kernel/sched_autogroup_enabled 0) their own nice value, which
their tasks inherit. The header says which was used, and `waited` shows
what it achieved.

--readme FILE writes the table, with the date, CPU, system and conditions,
into FILE between `<!-- fidelity: KEY -->` and `<!-- /fidelity -->`, KEY
naming the CPU model (the section is replaced, or added before
`<!-- fidelity: end -->`). --save keeps the measurements, and --load
renders them again (after a cause was measured and added to causes.txt)
without measuring. This script contains no will-it-scale code and
neither fetches nor builds it.

    scripts/fidelity/wis.py WIS_DIR [--first 1] [--rounds 3] [--budget 20] [--tasks 1]
        [--modes processes,threads] [--warmup 1] [--seconds 2]
        [--only a,b] [--markdown] [--readme docs/accuracy.md] [--save F.json]
        [--session-nice N] [--aslr]
    scripts/fidelity/wis.py --load F.json --readme docs/accuracy.md
"""

import argparse
import datetime
import json
import math
import os
import platform
import pty
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
KBENCH = os.environ.get("KBENCH", os.path.join(HERE, "..", "..", "target", "release", "kbench"))
CAUSES = os.path.join(HERE, "causes.txt")
LOW, HIGH = 0.95, 1.05
# --session-nice: both sides' nice value (their sessions' autogroups', or
# their own when autogroups are off).
SESSION_NICE = None
# A pass whose median run waited longer than this for its CPUs says so.
CONTENDED = 0.05
# Student's t, 97.5% quantile, 1-30 degrees of freedom (31 and up: 30's).
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
        2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
        2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


def autogroups():
    """True when the scheduler groups processes by session (autogroup):
    then a session's priority is its autogroup's nice value, and a
    process's own nice value only ranks it inside its session."""
    try:
        with open("/proc/sys/kernel/sched_autogroup_enabled") as f:
            return f.read().strip() == "1"
    except OSError:
        return False


def prefix(aslr):
    # Without autogroups --session-nice is each side's own nice value,
    # which its tasks inherit (the autogroup's would change nothing).
    p = [] if SESSION_NICE is None or autogroups() else ["nice", "-n", str(SESSION_NICE)]
    if aslr:
        return p
    return p + ["setarch", os.uname().machine, "-R"]


# --- conditions -----------------------------------------------------------


def cpu_busy():
    """(busy, total) jiffies of all CPUs, from /proc/stat's first line."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + v[4]  # idle + iowait
    total = sum(v[:8])  # user .. steal; guest time is inside user
    return total - idle, total


def disk_sectors():
    """Sectors read + written by whole block devices (not partitions)."""
    n = 0
    with open("/proc/diskstats") as f:
        for line in f:
            p = line.split()
            if os.path.exists(f"/sys/block/{p[2]}") and not p[2].startswith(("loop", "ram", "zram")):
                n += int(p[5]) + int(p[9])
    return n


def load1():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


class Waits:
    """How long one side's threads were runnable but waiting for a CPU,
    as a share of its run: the sum over the threads of the session it
    started (the process and its descendants, every thread) of the
    run-queue wait in /proc/TID/schedstat, polled every 0.1 s while it
    runs (its threads are all created within the run), over the run's
    wall time. 0 when nothing else wanted the tasks' CPUs; 0.5 when a
    task shared its CPU half the time."""

    def __init__(self):
        self.seen, self.t0, self.root = {}, time.monotonic(), None
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._poll, daemon=True)

    def start(self, pid):
        self.root = pid
        if SESSION_NICE is not None and autogroups():
            # The nice value of the autogroup of the session `pid` leads:
            # every process of the side, tasks to come included.
            with open(f"/proc/{pid}/autogroup", "w") as f:
                f.write(str(SESSION_NICE))
        self.thread.start()

    def _tids(self, pid):
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            return []
        out = []
        for tid in tids:
            out.append((pid, tid))
            try:
                with open(f"/proc/{pid}/task/{tid}/children") as f:
                    kids = f.read().split()
            except OSError:
                kids = []
            for k in kids:
                out += self._tids(k)
        return out

    def sample(self):
        for pid, tid in self._tids(self.root):
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    self.seen[tid] = int(f.read().split()[1])
            except (OSError, IndexError, ValueError):
                pass

    def _poll(self):
        while not self.done.wait(0.1):
            self.sample()

    def stop(self):
        """The share; call before the side's processes are killed (or
        after they ended: the last poll then counts)."""
        self.done.set()
        if self.root is not None:
            self.thread.join()
            self.sample()
        return sum(self.seen.values()) / 1e9 / (time.monotonic() - self.t0)


def measured(tasks, fn):
    """fn(waits)'s value and the conditions it ran in: the share of the run
    its threads waited for a CPU, other CPUs' work, disk MB/s, load
    average."""
    hz = os.sysconf("SC_CLK_TCK")
    b0, _ = cpu_busy()
    d0, t0, l0 = disk_sectors(), time.monotonic(), load1()
    waits = Waits()
    value = fn(waits)
    waited = waits.stop()
    b1, _ = cpu_busy()
    d1, t1 = disk_sectors(), time.monotonic()
    wall = t1 - t0
    other = max(0.0, (b1 - b0) / hz / wall - tasks)
    disk = (d1 - d0) * 512 / 1e6 / wall
    return value, (waited, other, disk, max(l0, load1()))


# --- the two sides --------------------------------------------------------


def run_wis(binary, tasks, warmup, seconds, aslr, waits):
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
    waits.start(p.pid)
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
        waits.stop()
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
    got = totals[warmup : warmup + seconds]
    if len(got) < seconds:
        raise RuntimeError(f"{binary}: printed {len(totals)} intervals")
    return sum(got) / len(got)


def run_kbench(name, mode, tasks, warmup, seconds, aslr, db, waits):
    cell = f"{name}:mode={mode},tasks={tasks},interval=1,warmup={warmup},intervals={seconds}"
    # kbench turns randomisation off for its scale cells by itself (it
    # re-executes itself with ADDR_NO_RANDOMIZE, as setarch -R does, unless
    # the cell says aslr=on), so without setarch it must be told: before
    # this, --aslr compared kbench without randomisation against
    # will-it-scale with it, which read malloc2 at 0.81 (issue 48).
    if aslr:
        cell += ",aslr=on"
    # No event counters (kbench's default opens some): will-it-scale reads
    # none, so neither side pays for them.
    cmd = prefix(aslr) + [KBENCH, "run", cell, "--samples", "1", "--warmup", "0"]
    cmd += ["--counters", "none", "--json", "-q"]
    # A session of its own, as will-it-scale's run has: with autogroup
    # scheduling (/proc/sys/kernel/sched_autogroup_enabled) each session is
    # one scheduling group, so both sides must compete with other work
    # from the same footing.
    p = subprocess.Popen(
        cmd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ, KBENCH_DB=db),
        start_new_session=True,
    )
    waits.start(p.pid)
    stdout, stderr = p.communicate()
    if p.returncode != 0:
        raise RuntimeError(f"kbench {cell}: {stderr.strip()}")
    cells = json.loads(stdout)["cells"]
    return next(c["mean"] for c in cells if c["metric"] == "ops/s")


# --- rows -----------------------------------------------------------------


class Row:
    def __init__(self, index, name, mode, tasks):
        self.index, self.name, self.mode, self.tasks = index, name, mode, tasks
        self.k, self.w, self.cond = [], [], []

    def round(self, a, db):
        """One more round: both sides, the first alternating by row and
        round (ABBA over the rounds of a row, and from row to row)."""
        r = len(self.k)
        first_k = (r + self.index) % 2 == 0
        binary = os.path.join(a.wis_dir, f"{self.name}_{self.mode}")
        sides = {
            "k": lambda w: run_kbench(self.name, self.mode, self.tasks, a.warmup, a.seconds, a.aslr, db, w),
            "w": lambda w: run_wis(binary, self.tasks, a.warmup, a.seconds, a.aslr, w),
        }
        for side in ("k", "w") if first_k else ("w", "k"):
            v, c = measured(self.tasks, sides[side])
            getattr(self, side).append(v)
            self.cond.append(c)

    def ratio(self):
        mw = statistics.median(self.w)
        return statistics.median(self.k) / mw if mw > 0 else float("nan")

    def inside(self):
        return LOW <= self.ratio() <= HIGH

    def paired_ci(self):
        """95% interval of the geometric mean of the rounds' ratios k/w (a
        round runs both sides back to back, so a slow minute of the machine
        moves both): None under 2 rounds."""
        logs = [math.log(k / w) for k, w in zip(self.k, self.w) if k > 0 and w > 0]
        if len(logs) < 2:
            return None
        half = T975[min(len(logs) - 1, len(T975)) - 1] * statistics.stdev(logs) / math.sqrt(len(logs))
        m = statistics.mean(logs)
        return math.exp(m - half), math.exp(m + half)

    def unresolved(self):
        """Outside the band, but its rounds cannot tell it from inside."""
        ci = self.paired_ci()
        return not self.inside() and ci is not None and ci[0] <= HIGH and ci[1] >= LOW

    def conditions(self):
        """The worst of the runs: waited, other CPU work, disk MB/s, load."""
        return tuple(max(c[i] for c in self.cond) for i in range(4))

    def line(self, t0):
        waited, other, disk, load = self.conditions()
        return (
            f"{self.name:18} {self.mode:9} {self.tasks:3} kbench {statistics.median(self.k):14.0f} "
            f"wis {statistics.median(self.w):14.0f} ratio {self.ratio():.3f}  "
            f"k={[round(x) for x in self.k]} w={[round(x) for x in self.w]}  "
            f"waited {waited:.2f} other {other:.2f} disk {disk:.1f} load {load:.1f}  "
            f"[{time.time() - t0:.0f} s]"
        )


def cpu_key():
    """The CPU model as the table's key: model name, family and model."""
    info = {}
    with open("/proc/cpuinfo") as f:
        for line in f:
            k, _, v = line.partition(":")
            info.setdefault(k.strip(), v.strip())
            if not line.strip():
                break
    name = info.get("model name", platform.processor() or "unknown CPU")
    if "cpu family" in info:
        return f"{name}, family {info['cpu family']} model {info.get('model', '?')}"
    return name


def load_causes(key):
    """causes.txt: `CPU | testcase | mode | > or < | cause`, `#` comments.
    The CPU field matches when it is a substring of this CPU's key; `>`
    when kbench reads higher than will-it-scale, `<` lower."""
    out = {}
    if not os.path.exists(CAUSES):
        return out
    with open(CAUSES) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            p = [x.strip() for x in line.split("|", 4)]
            if len(p) != 5 or p[3] not in (">", "<"):
                sys.exit(f"{CAUSES}:{n}: want `CPU | testcase | mode | > or < | cause`")
            if p[0] in key:
                out[(p[1], p[2], p[3])] = p[4]
    return out


def cause_of(row, causes):
    """A row outside the band: its cause from causes.txt; else `not
    resolved` when the interval of its paired ratios reaches 0.95-1.05 (its
    rounds spread too much to say it is outside: measure it with more);
    else `unexplained`, and `unexplained, contended` when its runs waited for
    their CPUs a third of the time or more (re-measure it quiet)."""
    if row.inside():
        return ""
    known = causes.get((row.name, row.mode, ">" if row.ratio() > HIGH else "<"))
    if known:
        return known
    if row.unresolved():
        lo, hi = row.paired_ci()
        hi = f"{hi:.3f}" if hi < 100 else "more"
        return f"not resolved: paired 95% CI {lo:.3f}-{hi} reaches the band"
    return "unexplained, contended" if row.conditions()[0] >= 1 / 3 else "unexplained"


def markdown(rows, causes):
    """The table: medians, ratio, rounds, the paired interval, each
    side's range over the rounds, the conditions, and the cause of a row
    outside 0.95-1.05."""
    out = [
        "| testcase | mode | tasks | kbench ops/s | will-it-scale ops/s | ratio | rounds "
        "| paired 95% CI | kbench range | wis range | waited | other CPU | disk MB/s | cause |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        waited, other, disk, _ = r.conditions()
        k, w = r.k, r.w
        ci = r.paired_ci()
        ci = f"{ci[0]:.3f}-{ci[1]:.3f}" if ci and ci[1] < 100 else (f"{ci[0]:.3f}-more" if ci else "")
        out.append(
            f"| `{r.name}` | {r.mode} | {r.tasks} | {statistics.median(k):.4g} | {statistics.median(w):.4g} "
            f"| {r.ratio():.3f} | {len(k)} | {ci} | {min(k):.3g}-{max(k):.3g} | {min(w):.3g}-{max(w):.3g} "
            f"| {waited:.2f} | {other:.2f} | {disk:.1f} | {cause_of(r, causes)} |"
        )
    return "\n".join(out)


def dirty():
    """True when kbench's sources differ from its commit."""
    top = os.path.join(HERE, "..", "..")
    out = subprocess.run(
        ["git", "-C", top, "status", "--porcelain", "--", "src", "build.rs", "Cargo.toml", "Cargo.lock"],
        capture_output=True,
        text=True,
    )
    return bool(out.stdout.strip())


def caches():
    """CPU 0's caches as the kernel reports them ("L1d 48 KiB, ..., L3 480
    MiB"): under a hypervisor the model name and number can be a template
    the same on different host CPUs, and the caches tell those apart."""
    out = []
    base = "/sys/devices/system/cpu/cpu0/cache"
    for i in range(8):
        try:
            with open(f"{base}/index{i}/level") as f:
                level = f.read().strip()
            with open(f"{base}/index{i}/type") as f:
                kind = {"Data": "d", "Instruction": "i"}.get(f.read().strip(), "")
            with open(f"{base}/index{i}/size") as f:
                size = f.read().strip()
        except OSError:
            break
        kb = int(size.rstrip("K")) if size.endswith("K") and size[:-1].isdigit() else None
        if kb is None:
            out.append(f"L{level}{kind} {size}")
        elif kb >= 1024 and kb % 1024 == 0:
            out.append(f"L{level}{kind} {kb // 1024} MiB")
        else:
            out.append(f"L{level}{kind} {kb} KiB")
    return ", ".join(out) or "unknown"


def versions(wis_dir):
    """The system the table was taken on, for its header."""

    def first_line(cmd):
        try:
            out = subprocess.run(cmd, capture_output=True, text=True)
            return (out.stdout or out.stderr).splitlines()[0].strip()
        except (OSError, IndexError):
            return "?"

    git = first_line(["git", "-C", wis_dir, "rev-parse", "--short", "HEAD"])
    return {
        "kernel": platform.release(),
        "libc": " ".join(platform.libc_ver()),
        "cc": first_line([os.environ.get("CC", "cc"), "--version"]),
        "wis": git if re.fullmatch(r"[0-9a-f]{7,}", git) else "unknown commit",
        "kbench": first_line(["git", "-C", HERE, "rev-parse", "--short", "HEAD"])
        + (" with uncommitted changes" if dirty() else ""),
        "nice_kind": "autogroup" if autogroups() else "process",
        "caches": caches(),
    }


def section(key, rows, causes, meta):
    inside = sum(r.inside() for r in rows)
    wide = sum(0.9 <= r.ratio() <= 1.1 for r in rows)
    conds = [c for r in rows for c in r.cond]
    waited = sorted(c[0] for c in conds)
    other = sorted(c[1] for c in conds)
    disk = sorted(c[2] for c in conds)
    loads = [c[3] for c in conds]
    unexplained = sum(cause_of(r, causes).startswith("unexplained") for r in rows)
    contended = sum(cause_of(r, causes) == "unexplained, contended" for r in rows)
    unresolved = sum(cause_of(r, causes).startswith("not resolved") for r in rows)
    return "\n".join(
        [
            f"<!-- fidelity: {key} -->",
            f"**{key}**: {meta['start']}-{meta['end']} UTC ({meta['minutes']:.0f} min), "
            f"{os.cpu_count()} CPUs (caches {meta.get('caches', 'not recorded')}), Linux {meta['kernel']}, {meta['libc']}, {meta['cc']}; "
            f"will-it-scale `{meta['wis']}` built by its Makefile, kbench `{meta['kbench']}`; "
            f"`{meta['command']}`"
            + (f" (both sides at {meta.get('nice_kind', 'autogroup')} nice {SESSION_NICE})" if SESSION_NICE is not None else "")
            + ".",
            "",
            f"Conditions: the measured threads waited for a CPU {statistics.median(waited):.0%} of a run "
            f"(median; max {waited[-1]:.0%}); load average {min(loads):.1f}-{max(loads):.1f}; other CPU work (CPUs busy "
            f"beyond the measured task) median {statistics.median(other):.2f}, max {other[-1]:.2f}; "
            f"disk (all devices) median {statistics.median(disk):.1f} MB/s, max {disk[-1]:.1f} MB/s.",
            "",
            f"**{inside} of {len(rows)} rows within 0.95-1.05** ({wide} within 0.9-1.1); "
            f"{unresolved} outside whose rounds cannot tell them from inside (paired 95% CI "
            f"reaching the band); {unexplained} outside without a measured cause ({contended} of them contended)."
            + (
                f" **A contended pass**: the measured threads waited for their CPU "
                f"{statistics.median(waited):.0%} of a median run, so a row's ratio says more "
                "about the other work than about kbench; re-run it on a quiet machine."
                if statistics.median(waited) > CONTENDED
                else ""
            ),
            "",
            markdown(rows, causes),
            "<!-- /fidelity -->",
        ]
    )


def write_readme(path, key, text):
    """Replace this CPU's section in `path`, or add it before the end
    marker."""
    with open(path) as f:
        doc = f.read()
    begin = f"<!-- fidelity: {key} -->"
    if begin in doc:
        a = doc.index(begin)
        b = doc.index("<!-- /fidelity -->", a) + len("<!-- /fidelity -->")
        doc = doc[:a] + text + doc[b:]
    elif "<!-- fidelity: end -->" in doc:
        doc = doc.replace("<!-- fidelity: end -->", text + "\n\n<!-- fidelity: end -->")
    else:
        sys.exit(f"{path}: no `<!-- fidelity: end -->` marker to add the table before")
    with open(path, "w") as f:
        f.write(doc)


def builtins():
    out = subprocess.run([KBENCH, "list", "--json"], capture_output=True, text=True, check=True)
    return [b["name"] for b in json.loads(out.stdout)["benches"] if b["kind"] == "scale"]


def measure(a, rows, t0):
    """The pass: `--first` rounds of every row, then rows outside the band
    up to `--rounds`, within the budget."""
    tmp = tempfile.mkdtemp()
    db = os.path.join(tmp, "k.db")
    try:
        for r in rows:
            while len(r.k) < a.first:
                r.round(a, db)
            print(r.line(t0), flush=True)
        # Rows whose runs waited for their CPUs first (their ratio says
        # little), then nearest the band: a row far outside has a cause of
        # its own more often than noise, and the budget may not reach all.
        again = sorted(
            (r for r in rows if not r.inside() and len(r.k) < a.rounds),
            key=lambda r: (
                r.conditions()[0] <= CONTENDED,
                abs(math.log(r.ratio())) if r.ratio() > 0 else math.inf,
            ),
        )
        per_round = (time.time() - t0) / max(1, sum(len(r.k) for r in rows))
        if again:
            print(f"# {len(again)} rows outside {LOW}-{HIGH}: up to {a.rounds} rounds each", flush=True)
        for r in again:
            left = a.budget * 60 - (time.time() - t0)
            if (a.rounds - len(r.k)) * per_round > left:
                print(f"# budget of {a.budget} min reached: {r.name} {r.mode} keeps {len(r.k)} round(s)")
                continue
            while len(r.k) < a.rounds:
                r.round(a, db)
            print(r.line(t0), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def save(path, key, meta, rows):
    with open(path, "w") as f:
        json.dump(
            {
                "key": key,
                "meta": meta,
                "session_nice": SESSION_NICE,
                "rows": [[r.index, r.name, r.mode, r.tasks, r.k, r.w, r.cond] for r in rows],
            },
            f,
        )


def load(path):
    global SESSION_NICE
    with open(path) as f:
        d = json.load(f)
    SESSION_NICE = d["session_nice"]
    rows = []
    for index, name, mode, tasks, k, w, cond in d["rows"]:
        r = Row(index, name, mode, tasks)
        r.k, r.w, r.cond = k, w, [tuple(c) for c in cond]
        rows.append(r)
    return d["key"], d["meta"], rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("wis_dir", nargs="?")
    ap.add_argument("--first", type=int, default=1, help="rounds every row gets")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of a row outside 0.95-1.05")
    ap.add_argument(
        "--budget", type=float, default=20, help="minutes after which rows outside are not re-measured"
    )
    ap.add_argument("--tasks", default="1")
    ap.add_argument("--modes", default="processes,threads")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--seconds", type=int, default=2)
    ap.add_argument("--only", default="")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--readme", help="write the table into this file's section for this CPU")
    ap.add_argument("--save", help="keep the pass's measurements in this JSON file")
    ap.add_argument("--load", help="measure nothing: the pass saved in this file (to re-render its causes)")
    ap.add_argument("--aslr", action="store_true", help="leave address-space randomisation on")
    ap.add_argument(
        "--session-nice",
        type=int,
        help="nice value of both sides (negative needs root): their sessions' autogroups', "
        "or their own when autogroups are off; other work then yields the CPUs",
    )
    a = ap.parse_args()
    global SESSION_NICE
    SESSION_NICE = a.session_nice
    if a.first < 1 or a.rounds < 1:
        sys.exit("--first and --rounds must be at least 1")
    if a.load:
        key, meta, rows = load(a.load)
    else:
        if not a.wis_dir:
            sys.exit("name will-it-scale's directory (or --load a saved pass)")
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
        key = cpu_key()
        meta = versions(a.wis_dir)
        meta["command"] = "scripts/fidelity/wis.py " + " ".join(sys.argv[1:])
        meta["start"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")
        rows = [
            Row(i, name, mode, tasks)
            for i, (name, mode, tasks) in enumerate(
                (n, m, int(t)) for n in names for m in a.modes.split(",") for t in a.tasks.split(",")
            )
        ]
        t0 = time.time()
        measure(a, rows, t0)
        meta["end"] = datetime.datetime.now(datetime.timezone.utc).strftime("%H:%M")
        meta["minutes"] = (time.time() - t0) / 60
        if a.save:
            save(a.save, key, meta, rows)
    causes = load_causes(key)
    if a.markdown:
        print()
        print(markdown(rows, causes))
    if a.readme:
        write_readme(a.readme, key, section(key, rows, causes, meta))
        print(f"# wrote the table for {key} into {a.readme}", file=sys.stderr)
    inside = sum(r.inside() for r in rows)
    print(
        f"\n{inside} of {len(rows)} rows within {LOW}-{HIGH}; {meta['minutes']:.1f} min",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
