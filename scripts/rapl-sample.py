#!/usr/bin/env python3
"""Samples the RAPL energy counters of /sys/class/powercap into the CSV
trawl ingests (`time,zone,name,energy_uj,max_energy_range_uj`), for
machines where perf cannot read the power/energy-* events.

    rapl-sample.py [-i SECONDS] [-o FILE] [-- COMMAND ARGS...]

Reads every zone (intel-rapl:P package P, intel-rapl:P:S its sub-zones:
core, uncore, dram; psys) every -i seconds (default 0.01; RAPL updates
about every millisecond) until COMMAND exits, or until interrupted when no
command is given. Times are epoch seconds (CLOCK_REALTIME), so trawl
places the readings next to `perf record -k CLOCK_MONOTONIC` samples
through perf's clock data. Reading energy_uj needs root on kernels since
5.10. RAPL_ROOT overrides /sys/class/powercap (for tests).
"""
import argparse
import glob
import os
import subprocess
import sys
import time


def zones(root):
    out = []
    for d in sorted(glob.glob(os.path.join(root, "intel-rapl:*"))):
        try:
            name = open(os.path.join(d, "name")).read().strip()
            rng = open(os.path.join(d, "max_energy_range_uj")).read().strip()
        except OSError:
            continue
        out.append((os.path.basename(d), name, rng, os.path.join(d, "energy_uj")))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-i", "--interval", type=float, default=0.01)
    ap.add_argument("-o", "--output", default="-")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
    root = os.environ.get("RAPL_ROOT", "/sys/class/powercap")
    zs = zones(root)
    if not zs:
        sys.exit(f"rapl-sample: no RAPL zones under {root}")
    out = sys.stdout if a.output == "-" else open(a.output, "w")
    out.write("time,zone,name,energy_uj,max_energy_range_uj\n")
    files = [(z, n, r, open(p)) for z, n, r, p in zs]
    child = subprocess.Popen(cmd) if cmd else None

    def sample():
        t = time.time_ns()
        for z, n, r, f in files:
            f.seek(0)
            out.write(f"{t // 10**9}.{t % 10**9:09d},{z},{n},{f.read().strip()},{r}\n")

    try:
        while True:
            sample()
            if child is not None and child.poll() is not None:
                break
            time.sleep(a.interval)
    except KeyboardInterrupt:
        sample()
    out.flush()
    return child.returncode if child is not None else 0


if __name__ == "__main__":
    sys.exit(main())
