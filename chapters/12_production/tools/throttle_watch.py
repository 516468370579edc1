#!/usr/bin/env python3
"""The throttle watch: a sustained load sampled through NVML at >= 10 Hz (SM and memory clocks,
power, temperature, clock-event reasons) into a timeline: JSON, a summary, and a plot when
matplotlib is installed. Observe only: it never changes clocks, power limits or MIG.

    throttle_watch.py --load "build/gpu/chapters/12_production/ch12_load --seconds 60" \\
                      [--seconds 60] [--hz 10] [--out OUT.json] [--plot OUT.png] [--fake FIXTURE]
    throttle_watch.py --replay TRACE.json [--plot OUT.png]     summarize a recorded timeline

Without --load it watches whatever runs (a benchmark started elsewhere). The summary: the SM clock
distribution (min, 5th percentile, median, max) under load, the share of loaded samples with each
reason set, the slowdown episodes (consecutive samples with a slowdown reason: power cap, thermal,
hardware slowdown, application clocks), peak power and temperature, and the sampling rate reached.

Exit status: 0 no slowdown seen; 1 a slowdown reason was seen under load (the verdict a go-live
check reads); 2 usage error; 4 the GPU could not be read; 5 the load command failed.
"""
from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ch12_nvml as nv  # noqa: E402

EXIT_OK, EXIT_THROTTLED, EXIT_USAGE, EXIT_NO_GPU, EXIT_LOAD = 0, 1, 2, 4, 5


def record(backend, seconds: float, hz: float, device: int = 0, proc: subprocess.Popen | None = None) -> list[dict]:
    """Samples every 1/hz s for `seconds` (or until `proc` ends, when given)."""
    period = 1.0 / hz
    out = []
    t0 = time.monotonic()
    nxt = t0
    while True:
        now = time.monotonic()
        if now - t0 >= seconds or (proc is not None and proc.poll() is not None):
            break
        s = backend.fast_sample(device)
        out.append({"t": round(now - t0, 4), "sm_mhz": s.get("sm"), "mem_mhz": s.get("mem"),
                    "power_w": s.get("power_w"), "temp_c": s.get("temp_c"), "reasons": s.get("reasons"),
                    "util": s.get("util")})
        nxt += period
        time.sleep(max(0.0, nxt - time.monotonic()))
    return out


def percentile(xs: list[float], q: float) -> float | None:
    if not xs:
        return None
    xs = sorted(xs)
    k = min(len(xs) - 1, max(0, int(round(q * (len(xs) - 1)))))
    return xs[k]


def summarize(samples: list[dict]) -> dict:
    """The timeline's verdict. A sample is "loaded" when its reasons lack GpuIdle (or, without
    reasons, its utilization is above 0)."""
    def loaded(s):
        r = s.get("reasons")
        return not (r & 0x1) if r is not None else bool(s.get("util"))
    busy = [s for s in samples if loaded(s)]
    sm = [s["sm_mhz"] for s in busy if s.get("sm_mhz") is not None]
    share = {}
    for bit, name in nv.CLOCK_EVENT_REASONS:
        n = sum(1 for s in busy if s.get("reasons") is not None and s["reasons"] & bit)
        if n:
            share[name] = round(n / len(busy), 4)
    episodes, cur = [], None
    for s in samples:
        slow = s.get("reasons") is not None and s["reasons"] & nv.SLOWDOWN_BITS
        if slow and cur is None:
            cur = {"start_s": s["t"], "end_s": s["t"], "reasons": s["reasons"], "min_sm_mhz": s.get("sm_mhz")}
        elif slow:
            cur["end_s"] = s["t"]
            cur["reasons"] |= s["reasons"]
            if s.get("sm_mhz") is not None:
                cur["min_sm_mhz"] = min(cur["min_sm_mhz"] or s["sm_mhz"], s["sm_mhz"])
        elif cur is not None:
            episodes.append(cur)
            cur = None
    if cur is not None:
        episodes.append(cur)
    for e in episodes:
        e["reason_names"] = nv.reason_names(e["reasons"])
    span = samples[-1]["t"] - samples[0]["t"] if len(samples) > 1 else 0.0
    power = [s["power_w"] for s in samples if s.get("power_w") is not None]
    temp = [s["temp_c"] for s in samples if s.get("temp_c") is not None]
    return {
        "samples": len(samples), "loaded_samples": len(busy),
        "rate_hz": round((len(samples) - 1) / span, 2) if span > 0 else None,
        "sm_mhz": {"min": min(sm, default=None), "p5": percentile(sm, 0.05),
                   "median": statistics.median(sm) if sm else None, "max": max(sm, default=None)},
        "reason_share_loaded": share,
        "slowdown_episodes": episodes,
        "throttled": bool(episodes),
        "power_w_max": max(power, default=None), "temp_c_max": max(temp, default=None),
    }


def summary_text(s: dict) -> str:
    c = s["sm_mhz"]
    lines = [f"throttle watch: {s['samples']} samples ({s['loaded_samples']} under load) at {s['rate_hz']} Hz",
             f"  SM clock under load: min {c['min']}, p5 {c['p5']}, median {c['median']}, max {c['max']} MHz",
             f"  peak power {s['power_w_max']} W, peak temperature {s['temp_c_max']} C",
             "  reasons under load: " + (", ".join(f"{k} {100 * v:.0f} %" for k, v in s["reason_share_loaded"].items())
                                         or "none")]
    for e in s["slowdown_episodes"]:
        lines.append(f"  slowdown {e['start_s']:.1f}-{e['end_s']:.1f} s: {', '.join(e['reason_names'])}, "
                     f"SM clock down to {e['min_sm_mhz']} MHz")
    lines.append("  verdict: " + ("THROTTLED (a slowdown reason under load)" if s["throttled"] else
                                  "no slowdown reason seen"))
    return "\n".join(lines)


def plot(samples: list[dict], path: Path) -> bool:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    t = [s["t"] for s in samples]
    fig, axes = plt.subplots(4, 1, figsize=(8, 7), sharex=True)
    for ax, key, label in zip(axes[:3], ("sm_mhz", "power_w", "temp_c"), ("SM MHz", "power W", "temp C")):
        ax.plot(t, [s.get(key) for s in samples], lw=1)
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
    for k, (bit, name) in enumerate(nv.CLOCK_EVENT_REASONS):
        ys = [k if s.get("reasons") is not None and s["reasons"] & bit else None for s in samples]
        axes[3].plot(t, ys, "|", ms=6, label=name)
    axes[3].set_yticks(range(len(nv.CLOCK_EVENT_REASONS)), [n for _, n in nv.CLOCK_EVENT_REASONS], fontsize=6)
    axes[3].set_xlabel("s")
    fig.tight_layout()
    fig.savefig(path, dpi=100, metadata={"Software": None})
    plt.close(fig)
    return True


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"throttle_watch: {message}\n")


def main(argv: list[str] | None = None) -> int:
    ap = _Parser(prog="throttle_watch.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--load", metavar="CMD", help="the load to run and watch (it decides the length)")
    ap.add_argument("--seconds", type=float, default=60.0, help="how long to watch at most")
    ap.add_argument("--hz", type=float, default=10.0)
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--plot", type=Path)
    ap.add_argument("--fake", metavar="FIXTURE")
    ap.add_argument("--replay", type=Path, metavar="TRACE", help="a recorded timeline (this tool's --out)")
    args = ap.parse_args(argv)
    if not 10 <= args.hz <= 1000:
        ap.error(f"--hz {args.hz}: must be in [10, 1000] (the watch samples at least 10 times a second)")
    if not 0 < args.seconds <= 3600:
        ap.error(f"--seconds {args.seconds}: must be in (0, 3600]")
    if args.replay:
        try:
            doc = json.loads(args.replay.read_text())
            samples = doc["timeline"] if isinstance(doc, dict) else doc
            if not isinstance(samples, list) or not all(isinstance(s, dict) and "t" in s for s in samples):
                raise ValueError("no 'timeline' list of samples with a 't'")
        except (OSError, ValueError, KeyError, TypeError) as e:
            ap.error(f"--replay {args.replay}: {e}")
        load_rc = 0
    else:
        try:
            backend = nv.open_backend(args.fake)
        except nv.FixtureError as e:
            ap.error(str(e))
        except nv.NvmlError as e:
            print(f"throttle_watch: cannot read the GPU: {e}", file=sys.stderr)
            return EXIT_NO_GPU
        proc = None
        try:
            if args.load:
                try:
                    proc = subprocess.Popen(shlex.split(args.load), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                            text=True)
                except OSError as e:
                    ap.error(f"--load {args.load!r}: {e}")
            samples = record(backend, args.seconds, args.hz, args.device, proc)
        except nv.NvmlError as e:
            print(f"throttle_watch: an NVML call failed: {e}", file=sys.stderr)
            return EXIT_NO_GPU
        finally:
            backend.close()
            if proc is not None:
                if proc.poll() is None:  # watched long enough: the load we started is ours to stop
                    proc.terminate()
                proc.wait()
        load_rc = proc.returncode if proc is not None else 0
        if proc is not None and load_rc not in (0, -15):
            print(f"throttle_watch: the load exited {load_rc}: {(proc.stderr.read() if proc.stderr else '')[-300:]}",
                  file=sys.stderr)
    s = summarize(samples)
    print(summary_text(s))
    if args.out:
        args.out.write_text(json.dumps({"summary": s, "timeline": samples}, indent=1) + "\n")
    if args.plot:
        print(f"  plot: {args.plot}" if plot(samples, args.plot) else "  plot: matplotlib not installed")
    if load_rc not in (0, -15):
        return EXIT_LOAD
    return EXIT_THROTTLED if s["throttled"] else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
