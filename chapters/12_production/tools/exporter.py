#!/usr/bin/env python3
"""A GPU exporter for Prometheus under dcgm-exporter's metric names, sampling NVML. Reads only.

    exporter.py [--port 9400] [--host 127.0.0.1] [--interval 1] [--duration S] [--fake FIXTURE]
    exporter.py --once [--fake FIXTURE]           one scrape's text on stdout
    exporter.py --during-load "CMD ..." --out OUT.json [--fake FIXTURE]
        serves on a free loopback port, runs CMD (a GPU load), scrapes itself over HTTP every
        0.5 s while CMD runs, and writes every scrape's values and which metrics moved

Names, types and HELP lines are those of dcgm-exporter's etc/default-counters.csv (and of the
lines it ships commented out: ECC, violations), so the dashboards and alert rules operators already
have work unchanged; the labels are dcgm-exporter's (gpu, UUID, pci_bus_id, device, modelName,
Hostname). Beyond DCGM: cudalab_clock_event_reasons{reason=...} (1 when the bit is set), one
series per NVML clock-event reason. Like DCGM, DCGM_FI_DEV_GPU_UTIL is absent where NVML has no
utilization (MIG: dcgm-exporter#216/#430; use DCGM_FI_PROF_GR_ENGINE_ACTIVE there). PCIe TX/RX
are counters in KB as in DCGM: NVML gives a rate (KB/s over a 20 ms window), integrated here
between samples, so they are an estimate of the bytes moved. Not exported: DCGM_FI_DEV_MEMORY_TEMP
(NVML gives it only through nvmlDeviceGetFieldValues), the encoder/decoder utilizations and the
vGPU license status (not what this lab serves with).

Exit status: 0; 2 usage error (a bad argument, an unreadable fixture); 3 cannot serve (the port is
in use, or the address cannot be bound); 4 the GPU could not be read (no driver, NVML failed).
"""
from __future__ import annotations

import argparse
import errno
import json
import shlex
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ch12_nvml as nv  # noqa: E402

EXIT_OK, EXIT_USAGE, EXIT_SERVE, EXIT_NO_GPU = 0, 2, 3, 4
DEFAULT_PORT = 9400  # dcgm-exporter's

# (name, type, help, value of a sample or None when the device does not report it). Help strings
# are dcgm-exporter's default-counters.csv, verbatim.
MIB = 1 << 20


def _get(d: dict, *path):
    for k in path:
        if not isinstance(d, dict):
            return None
        d = d.get(k)
    return d


METRICS = [
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", lambda s, st: _get(s, "clocks", "sm")),
    ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).", lambda s, st: _get(s, "clocks", "mem")),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", lambda s, st: _get(s, "temperature", "gpu")),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", lambda s, st: _get(s, "power", "usage_w")),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ).",
     lambda s, st: s.get("energy_mj")),
    ("DCGM_FI_DEV_PCIE_TX_THROUGHPUT", "counter",
     "Total number of bytes transmitted through PCIe TX (in KB) via NVML.", lambda s, st: st.get("pcie_tx_kb")),
    ("DCGM_FI_DEV_PCIE_RX_THROUGHPUT", "counter",
     "Total number of bytes received through PCIe RX (in KB) via NVML.", lambda s, st: st.get("pcie_rx_kb")),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries.",
     lambda s, st: _get(s, "pcie", "replay")),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", lambda s, st: _get(s, "utilization", "gpu")),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).",
     lambda s, st: _get(s, "utilization", "memory")),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.", lambda s, st: s.get("xid_last")),
    ("DCGM_FI_DEV_POWER_VIOLATION", "counter", "Throttling duration due to power constraints (in us).",
     lambda s, st: _us(_get(s, "violations_ns", "power"))),
    ("DCGM_FI_DEV_THERMAL_VIOLATION", "counter", "Throttling duration due to thermal constraints (in us).",
     lambda s, st: _us(_get(s, "violations_ns", "thermal"))),
    ("DCGM_FI_DEV_SYNC_BOOST_VIOLATION", "counter", "Throttling duration due to sync-boost constraints (in us).",
     lambda s, st: _us(_get(s, "violations_ns", "sync_boost"))),
    ("DCGM_FI_DEV_BOARD_LIMIT_VIOLATION", "counter", "Throttling duration due to board limit constraints (in us).",
     lambda s, st: _us(_get(s, "violations_ns", "board_limit"))),
    ("DCGM_FI_DEV_LOW_UTIL_VIOLATION", "counter", "Throttling duration due to low utilization (in us).",
     lambda s, st: _us(_get(s, "violations_ns", "low_util"))),
    ("DCGM_FI_DEV_RELIABILITY_VIOLATION", "counter", "Throttling duration due to reliability constraints (in us).",
     lambda s, st: _us(_get(s, "violations_ns", "reliability"))),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).",
     lambda s, st: _mib(_get(s, "memory", "free"))),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).",
     lambda s, st: _mib(_get(s, "memory", "used"))),
    ("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter", "Total number of single-bit volatile ECC errors.",
     lambda s, st: _get(s, "ecc", "volatile", "corrected")),
    ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "Total number of double-bit volatile ECC errors.",
     lambda s, st: _get(s, "ecc", "volatile", "uncorrected")),
    ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for uncorrectable errors",
     lambda s, st: _get(s, "remapped_rows", "uncorrectable")),
    ("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for correctable errors",
     lambda s, st: _get(s, "remapped_rows", "correctable")),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed",
     lambda s, st: _bool(_get(s, "remapped_rows", "failure"))),
]
REASONS_METRIC = "cudalab_clock_event_reasons"
REASONS_HELP = "NVML clock-event reason active (1) or not (0), one series per reason bit."


def _us(ns):
    return None if ns is None else ns // 1000


def _mib(b):
    return None if b is None else b // MIB


def _bool(v):
    return None if v is None else int(bool(v))


def _escape(v: str) -> str:
    return str(v).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _num(v) -> str:
    if isinstance(v, bool):
        return str(int(v))
    if isinstance(v, int):
        return str(v)
    return repr(float(v))


class Sampler:
    """Samples every device of a backend every `interval` seconds (a thread), keeping the last sample
    and the integrated PCIe counters; render() is the exposition text of the last samples."""

    def __init__(self, backend, interval: float = 1.0):
        self.backend, self.interval = backend, interval
        self.static = {}
        n = backend.device_count()
        for i in range(n):
            d = backend.describe(i)
            self.static[i] = {"gpu": str(i), "UUID": d.get("uuid") or "", "pci_bus_id": d.get("pci_bus_id") or "",
                              "device": f"nvidia{i}", "modelName": d.get("name") or "",
                              "Hostname": socket.gethostname()}
        self.samples: dict[int, dict] = {}
        self.state: dict[int, dict] = {i: {"pcie_tx_kb": 0, "pcie_rx_kb": 0, "t": None} for i in range(n)}
        self.error: str | None = None
        self.lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.sample_once()
        if self.error:
            raise nv.NvmlError(self.error)

    def sample_once(self) -> None:
        try:
            for i in self.static:
                s = self.backend.sample(i)
                with self.lock:
                    st = self.state[i]
                    t = s.get("timestamp", time.time())
                    if st["t"] is not None:
                        dt = max(0.0, t - st["t"])
                        st["pcie_tx_kb"] += int((_get(s, "pcie", "tx_kbps") or 0) * dt)
                        st["pcie_rx_kb"] += int((_get(s, "pcie", "rx_kbps") or 0) * dt)
                    st["t"] = t
                    self.samples[i] = s
            self.error = None
        except nv.NvmlError as e:  # keep serving the last good values, and say so in the scrape
            self.error = str(e)

    def start(self) -> None:
        def loop():
            while not self._stop.wait(self.interval):
                self.sample_once()
        self._thread = threading.Thread(target=loop, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=5)

    def render(self) -> str:
        with self.lock:
            samples = {i: dict(s) for i, s in self.samples.items()}
            state = {i: dict(s) for i, s in self.state.items()}
        out = []
        for name, typ, help_, get in METRICS:
            lines = []
            for i, s in sorted(samples.items()):
                v = get(s, state[i])
                if v is None:
                    continue
                lines.append(f"{name}{{{self._labels(i)}}} {_num(v)}")
            if lines:
                out += [f"# HELP {name} {help_}", f"# TYPE {name} {typ}"] + lines
        reason_lines = []
        for i, s in sorted(samples.items()):
            mask = s.get("clock_event_reasons")
            if mask is None:
                continue
            for bit, rname in nv.CLOCK_EVENT_REASONS:
                reason_lines.append(f'{REASONS_METRIC}{{{self._labels(i)},reason="{rname}"}} {int(bool(mask & bit))}')
        if reason_lines:
            out += [f"# HELP {REASONS_METRIC} {REASONS_HELP}", f"# TYPE {REASONS_METRIC} gauge"] + reason_lines
        out += ["# HELP cudalab_exporter_sample_error 1 when the last NVML sample failed (values are the last good ones).",
                "# TYPE cudalab_exporter_sample_error gauge", f"cudalab_exporter_sample_error {int(bool(self.error))}"]
        return "\n".join(out) + "\n"

    def _labels(self, i: int) -> str:
        return ",".join(f'{k}="{_escape(v)}"' for k, v in self.static[i].items())


def make_server(sampler: Sampler, host: str, port: int) -> ThreadingHTTPServer:
    """The HTTP server (bound, not yet serving). OSError when the address cannot be bound."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            if self.path.split("?")[0] not in ("/metrics", "/"):
                self.send_error(404, "only /metrics here")
                return
            body = sampler.render().encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):  # quiet: a scrape a second would flood the terminal
            pass

    class Server(ThreadingHTTPServer):
        allow_reuse_address = False  # a second exporter on the same port must fail, not share it
        daemon_threads = True

    return Server((host, port), Handler)


def bind_error_text(host: str, port: int, e: OSError) -> str:
    if e.errno == errno.EADDRINUSE:
        return (f"port {port} on {host} is already in use (another exporter? dcgm-exporter listens on "
                f"{DEFAULT_PORT} by default): choose another with --port")
    return f"cannot listen on {host}:{port}: {e.strerror or e}"


def parse_exposition(text: str) -> dict[str, list[tuple[dict, float]]]:
    """A small reader of the text format (name -> [(labels, value)]), enough for the lab's own
    checks; the tests also parse with prometheus_client and promtool where installed."""
    out: dict[str, list[tuple[dict, float]]] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        head, _, value = line.rpartition(" ")
        name, labels = head, {}
        if "{" in head:
            name, rest = head.split("{", 1)
            for part in rest.rstrip("}").split('",'):
                if "=" in part:
                    k, v = part.split("=", 1)
                    labels[k] = v.strip('"')
        out.setdefault(name, []).append((labels, float(value)))
    return out


def during_load(sampler: Sampler, cmd: str, out_path: Path, period: float = 0.5, after: float = 1.5) -> int:
    """Serve on a free loopback port, run cmd, scrape over HTTP every period seconds while it runs
    (and `after` seconds past its end); write the scrapes and which metrics moved."""
    try:
        srv = make_server(sampler, "127.0.0.1", 0)
    except OSError as e:
        print(f"exporter: {bind_error_text('127.0.0.1', 0, e)}", file=sys.stderr)
        return EXIT_SERVE
    port = srv.server_address[1]
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    sampler.start()
    url = f"http://127.0.0.1:{port}/metrics"
    watched = ["DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED",
               "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"]
    scrapes = []
    try:
        proc = subprocess.Popen(shlex.split(cmd), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    except OSError as e:
        print(f"exporter: cannot run --during-load {cmd!r}: {e}", file=sys.stderr)
        srv.shutdown()
        sampler.stop()
        return EXIT_USAGE
    t0 = time.monotonic()
    end_seen = None
    scrape_ms = []
    while True:
        running = proc.poll() is None
        if not running and end_seen is None:
            end_seen = time.monotonic()
        if end_seen is not None and time.monotonic() - end_seen > after:
            break
        ts = time.monotonic()
        with urllib.request.urlopen(url, timeout=5) as r:
            text = r.read().decode()
        scrape_ms.append(1e3 * (time.monotonic() - ts))
        fam = parse_exposition(text)
        scrapes.append({"t": round(ts - t0, 3), "load_running": running,
                        **{m: fam[m][0][1] for m in watched if m in fam}})
        time.sleep(period)
    load_out = proc.stdout.read() if proc.stdout else ""
    srv.shutdown()
    sampler.stop()
    moved = {m: len({s[m] for s in scrapes if m in s}) > 1 for m in watched}
    doc = {"port": port, "load": cmd, "load_rc": proc.returncode, "load_output": load_out.strip()[-2000:],
           "scrapes": scrapes, "moved": moved, "scrape_ms_max": round(max(scrape_ms, default=0), 2)}
    out_path.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"exporter: {len(scrapes)} scrapes of {url} during `{cmd}` (rc {proc.returncode}); slowest scrape "
          f"{doc['scrape_ms_max']} ms")
    for m in watched:
        vals = [s[m] for s in scrapes if m in s]
        if vals:
            print(f"  {m:40} min {min(vals):>12g}  max {max(vals):>12g}  {'moved' if moved[m] else 'constant'}")
        else:
            print(f"  {m:40} not reported")
    return EXIT_OK if proc.returncode == 0 else 1


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"exporter: {message}\n")


def main(argv: list[str] | None = None) -> int:
    ap = _Parser(prog="exporter.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fake", metavar="FIXTURE")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=DEFAULT_PORT)
    ap.add_argument("--interval", type=float, default=1.0, help="seconds between NVML samples")
    ap.add_argument("--duration", type=float, help="stop serving after this many seconds")
    ap.add_argument("--once", action="store_true", help="print one scrape and exit")
    ap.add_argument("--during-load", metavar="CMD")
    ap.add_argument("--out", type=Path, help="--during-load: the JSON to write")
    args = ap.parse_args(argv)
    if not 0 <= args.port <= 65535:
        ap.error(f"--port {args.port}: not a port number (0..65535)")
    if not 0.05 <= args.interval <= 3600:
        ap.error(f"--interval {args.interval}: must be in [0.05, 3600] seconds")
    if args.duration is not None and args.duration <= 0:
        ap.error(f"--duration {args.duration}: must be positive")
    if args.during_load and not args.out:
        ap.error("--during-load needs --out")
    try:
        backend = nv.open_backend(args.fake)
        sampler = Sampler(backend, args.interval)
    except nv.FixtureError as e:
        ap.error(str(e))
    except nv.NvmlError as e:
        print(f"exporter: cannot read the GPU: {e}", file=sys.stderr)
        return EXIT_NO_GPU
    try:
        if args.once:
            sys.stdout.write(sampler.render())
            return EXIT_OK
        if args.during_load:
            return during_load(sampler, args.during_load, args.out)
        try:
            srv = make_server(sampler, args.host, args.port)
        except OSError as e:
            print(f"exporter: {bind_error_text(args.host, args.port, e)}", file=sys.stderr)
            return EXIT_SERVE
        host, port = srv.server_address[:2]
        print(f"exporter: serving http://{host}:{port}/metrics (NVML every {args.interval:g} s"
              + (f", for {args.duration:g} s" if args.duration else "") + ")", flush=True)
        sampler.start()
        if args.duration:
            threading.Timer(args.duration, srv.shutdown).start()
        try:
            srv.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            srv.server_close()
            sampler.stop()
        return EXIT_OK
    finally:
        backend.close()


if __name__ == "__main__":
    sys.exit(main())
