#!/usr/bin/env python3
"""Chapter 12's exporter on a fake NVML (no GPU): names, types and HELP as dcgm-exporter's, a real
HTTP scrape on loopback, a Prometheus server scraping it (skipped, with the reason, where the
prometheus package is absent), promtool and prometheus_client reading the text, a port in use.

    python3 scripts/test_ch12_exporter.py
"""
from __future__ import annotations

import io
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.parse
import urllib.request
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOOLS = ROOT / "chapters" / "12_production" / "tools"
sys.path.insert(0, str(TOOLS))
import ch12_nvml as nv  # noqa: E402
import exporter as ex  # noqa: E402

# dcgm-exporter's etc/default-counters.csv (and the commented-out lines the exporter enables):
# name -> (type, help). The exporter must match it; this is the test's own copy, on purpose.
DCGM_CSV = """
DCGM_FI_DEV_SM_CLOCK, gauge, SM clock frequency (in MHz).
DCGM_FI_DEV_MEM_CLOCK, gauge, Memory clock frequency (in MHz).
DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).
DCGM_FI_DEV_POWER_USAGE, gauge, Power draw (in W).
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, counter, Total energy consumption since boot (in mJ).
DCGM_FI_DEV_PCIE_TX_THROUGHPUT, counter, Total number of bytes transmitted through PCIe TX (in KB) via NVML.
DCGM_FI_DEV_PCIE_RX_THROUGHPUT, counter, Total number of bytes received through PCIe RX (in KB) via NVML.
DCGM_FI_DEV_PCIE_REPLAY_COUNTER, counter, Total number of PCIe retries.
DCGM_FI_DEV_GPU_UTIL, gauge, GPU utilization (in %).
DCGM_FI_DEV_MEM_COPY_UTIL, gauge, Memory utilization (in %).
DCGM_FI_DEV_XID_ERRORS, gauge, Value of the last XID error encountered.
DCGM_FI_DEV_POWER_VIOLATION, counter, Throttling duration due to power constraints (in us).
DCGM_FI_DEV_THERMAL_VIOLATION, counter, Throttling duration due to thermal constraints (in us).
DCGM_FI_DEV_SYNC_BOOST_VIOLATION, counter, Throttling duration due to sync-boost constraints (in us).
DCGM_FI_DEV_BOARD_LIMIT_VIOLATION, counter, Throttling duration due to board limit constraints (in us).
DCGM_FI_DEV_LOW_UTIL_VIOLATION, counter, Throttling duration due to low utilization (in us).
DCGM_FI_DEV_RELIABILITY_VIOLATION, counter, Throttling duration due to reliability constraints (in us).
DCGM_FI_DEV_FB_FREE, gauge, Framebuffer memory free (in MiB).
DCGM_FI_DEV_FB_USED, gauge, Framebuffer memory used (in MiB).
DCGM_FI_DEV_ECC_SBE_VOL_TOTAL, counter, Total number of single-bit volatile ECC errors.
DCGM_FI_DEV_ECC_DBE_VOL_TOTAL, counter, Total number of double-bit volatile ECC errors.
DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS, counter, Number of remapped rows for uncorrectable errors
DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS, counter, Number of remapped rows for correctable errors
DCGM_FI_DEV_ROW_REMAP_FAILURE, gauge, Whether remapping of rows has failed
"""
DCGM = {n.strip(): (t.strip(), h.strip()) for n, t, h in
        (line.split(",", 2) for line in DCGM_CSV.strip().splitlines())}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def families(text: str) -> dict[str, tuple[str, str]]:
    helps, types = {}, {}
    for line in text.splitlines():
        if line.startswith("# HELP "):
            name, _, h = line[7:].partition(" ")
            helps[name] = h
        elif line.startswith("# TYPE "):
            name, _, t = line[7:].partition(" ")
            types[name] = t
    return {n: (types.get(n), helps.get(n)) for n in types}


class Serving:
    """The exporter on a free loopback port, in this process, for the length of a test."""

    def __init__(self, fixture: str, interval: float = 0.1):
        self.sampler = ex.Sampler(nv.Fake(fixture), interval)
        self.srv = ex.make_server(self.sampler, "127.0.0.1", 0)
        self.port = self.srv.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/metrics"

    def __enter__(self):
        self.sampler.start()
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.srv.shutdown()
        self.srv.server_close()
        self.sampler.stop()

    def scrape(self) -> str:
        with urllib.request.urlopen(self.url, timeout=5) as r:
            self.content_type = r.headers["Content-Type"]
            return r.read().decode()


class Names(unittest.TestCase):
    def test_types_and_help_are_dcgm_exporters(self):
        text = ex.Sampler(nv.Fake("h200_healthy")).render()
        fams = families(text)
        for name, (typ, help_) in DCGM.items():
            with self.subTest(metric=name):
                self.assertIn(name, fams)
                self.assertEqual(fams[name], (typ, help_))
        for name, typ, _, _ in ex.METRICS:
            if name.startswith("DCGM_"):
                self.assertIn(name, DCGM, f"{name}: not a dcgm-exporter name")

    def test_values_and_units(self):
        fam = ex.parse_exposition(ex.Sampler(nv.Fake("h200_healthy")).render())
        self.assertEqual(fam["DCGM_FI_DEV_SM_CLOCK"][0][1], 345)
        self.assertEqual(fam["DCGM_FI_DEV_FB_FREE"][0][1], 149467168768 // (1 << 20))  # MiB
        self.assertEqual(fam["DCGM_FI_DEV_POWER_USAGE"][0][1], 76.0)
        labels = fam["DCGM_FI_DEV_SM_CLOCK"][0][0]
        self.assertEqual((labels["gpu"], labels["modelName"], labels["device"]), ("0", "NVIDIA H200", "nvidia0"))

    def test_every_clock_event_reason_has_a_series(self):
        fam = ex.parse_exposition(ex.Sampler(nv.Fake("thermal_slowdown")).render())
        got = {lab["reason"]: v for lab, v in fam[ex.REASONS_METRIC]}
        self.assertEqual(set(got), {n for _, n in nv.CLOCK_EVENT_REASONS})
        self.assertEqual({r for r, v in got.items() if v == 1}, {"SwThermalSlowdown", "HwThermalSlowdown"})

    def test_no_gpu_util_under_mig(self):
        # Like DCGM: NVML reports no utilization for a MIG-enabled GPU, so the series is absent.
        self.assertNotIn("DCGM_FI_DEV_GPU_UTIL", ex.Sampler(nv.Fake("mig_7x1g")).render())

    def test_xid_and_ecc_reported(self):
        fam = ex.parse_exposition(ex.Sampler(nv.Fake("ecc_errors")).render())
        self.assertEqual(fam["DCGM_FI_DEV_XID_ERRORS"][0][1], 48)
        self.assertEqual(fam["DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"][0][1], 2)

    def test_pcie_counters_integrate_the_rate(self):
        s = ex.Sampler(nv.Fake("h200_healthy"))
        s.state[0]["t"] -= 2.0  # two seconds since the first sample
        s.sample_once()
        fam = ex.parse_exposition(s.render())
        tx = fam["DCGM_FI_DEV_PCIE_TX_THROUGHPUT"][0][1]
        self.assertAlmostEqual(tx, 1200 * 2, delta=1200 * 0.2)  # 1200 KB/s for ~2 s


class Http(unittest.TestCase):
    def test_real_scrape_on_loopback_moves(self):
        with Serving("h200_healthy") as s:
            seen = set()
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and len(seen) < 2:
                seen.add(ex.parse_exposition(s.scrape())["DCGM_FI_DEV_SM_CLOCK"][0][1])
                time.sleep(0.15)
            self.assertIn("text/plain; version=0.0.4", s.content_type)
        self.assertGreaterEqual(len(seen), 2, "the fixture's samples should make SM_CLOCK move")

    def test_unknown_path_is_404(self):
        with Serving("h200_healthy") as s:
            with self.assertRaises(urllib.error.HTTPError) as cm:
                urllib.request.urlopen(f"http://127.0.0.1:{s.port}/nope", timeout=5)
            self.assertEqual(cm.exception.code, 404)

    def test_port_in_use_is_a_clear_error(self):
        with socket.socket() as held:
            held.bind(("127.0.0.1", 0))
            held.listen(1)
            port = held.getsockname()[1]
            err = io.StringIO()
            with redirect_stderr(err), redirect_stdout(io.StringIO()):
                code = ex.main(["--fake", "h200_healthy", "--port", str(port), "--duration", "1"])
        self.assertEqual(code, ex.EXIT_SERVE)
        self.assertIn(f"port {port} on 127.0.0.1 is already in use", err.getvalue())

    def test_bad_arguments_exit_2(self):
        for argv in (["--port", "70000"], ["--interval", "0"], ["--fake", "nope"], ["--during-load", "true"]):
            with self.subTest(argv=argv):
                err = io.StringIO()
                with redirect_stderr(err), redirect_stdout(io.StringIO()):
                    try:
                        code = ex.main(argv)
                    except SystemExit as e:
                        code = e.code
                self.assertEqual(code, ex.EXIT_USAGE)
                self.assertIn("exporter:", err.getvalue())

    def test_nvml_error_exit_4(self):
        err = io.StringIO()
        with redirect_stderr(err):
            self.assertEqual(ex.main(["--fake", "nvml_error", "--once"]), ex.EXIT_NO_GPU)
        self.assertIn("mismatch", err.getvalue())

    def test_during_load_records_what_moved(self):
        with tempfile.TemporaryDirectory() as d:
            out = Path(d) / "scrape.json"
            with redirect_stdout(io.StringIO()):
                code = ex.main(["--fake", "h200_healthy", "--interval", "0.2", "--during-load",
                                f"{sys.executable} -c 'import time; time.sleep(1)'", "--out", str(out)])
            self.assertEqual(code, 0)
            doc = json.loads(out.read_text())
            self.assertTrue(doc["moved"]["DCGM_FI_DEV_SM_CLOCK"])
            self.assertGreaterEqual(len(doc["scrapes"]), 3)


class Readers(unittest.TestCase):
    """Other readers of the text format than the lab's own: promtool and prometheus_client."""

    def test_promtool_check_metrics(self):
        promtool = shutil.which("promtool")
        if not promtool:
            self.skipTest("promtool not installed (Debian package prometheus; scripts/deps.txt, ci-only)")
        text = ex.Sampler(nv.Fake("h200_healthy")).render()
        r = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
        # Exit 1 with "error while linting" is a format error; 3 lists lint problems. The lint
        # problems allowed are dcgm-exporter's own naming, kept so that dashboards work unchanged:
        # counters without _total, camelCase labels (UUID, modelName, Hostname), "COUNTER" in a name.
        out = r.stdout + r.stderr
        self.assertNotIn("error while linting", out)
        self.assertIn(r.returncode, (0, 3), out)
        allowed = ('counter metrics should have "_total" suffix', "label names should be written in 'snake_case'",
                   "metric name should not include type 'counter'")
        for line in filter(None, out.splitlines()):
            self.assertTrue(any(a in line for a in allowed), f"promtool: {line}")
        # and the check has teeth: a malformed line is an error
        bad = subprocess.run([promtool, "check", "metrics"], input=text + 'x{a="1" 2\n', capture_output=True,
                             text=True, timeout=60)
        self.assertEqual(bad.returncode, 1)
        self.assertIn("parsing error", bad.stdout + bad.stderr)

    def test_prometheus_client_parser(self):
        try:
            from prometheus_client.parser import text_string_to_metric_families
        except ImportError:
            dist = "/usr/lib/python3/dist-packages"  # python3-prometheus-client, for the system python
            if not Path(dist, "prometheus_client").is_dir():
                self.skipTest("prometheus_client not installed (python3-prometheus-client or the wheel)")
            sys.path.append(dist)
            from prometheus_client.parser import text_string_to_metric_families
        text = ex.Sampler(nv.Fake("h200_healthy")).render()
        fams = {f.name: f for f in text_string_to_metric_families(text)}
        for name, (typ, _) in DCGM.items():
            with self.subTest(metric=name):
                # the parser drops a counter's _total; dcgm names have none
                self.assertIn(name, fams)
                self.assertEqual(fams[name].type, typ)
                self.assertTrue(fams[name].samples)


class PrometheusServer(unittest.TestCase):
    """A real Prometheus (Debian's prometheus package) scrapes the exporter on loopback; its query
    API must show the series. Bounded: 60 s at most, then the server is stopped."""

    def test_prometheus_scrapes_the_exporter(self):
        prom = shutil.which("prometheus")
        if not prom:
            self.skipTest("prometheus not installed (Debian package prometheus; scripts/deps.txt, ci-only)")
        with Serving("h200_healthy") as s, tempfile.TemporaryDirectory() as d:
            cfg = Path(d) / "prometheus.yml"
            cfg.write_text("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n"
                           "  - job_name: cudalab\n    static_configs:\n"
                           f"      - targets: ['127.0.0.1:{s.port}']\n")
            web = free_port()
            log = open(Path(d) / "prometheus.log", "w")
            proc = subprocess.Popen([prom, f"--config.file={cfg}", f"--storage.tsdb.path={d}/tsdb",
                                     f"--web.listen-address=127.0.0.1:{web}"], stdout=log, stderr=subprocess.STDOUT)
            try:
                result, deadline = [], time.monotonic() + 60
                q = urllib.parse.urlencode({"query": "DCGM_FI_DEV_SM_CLOCK"})
                while time.monotonic() < deadline and not result:
                    time.sleep(1)
                    if proc.poll() is not None:
                        break
                    try:
                        with urllib.request.urlopen(f"http://127.0.0.1:{web}/api/v1/query?{q}", timeout=5) as r:
                            result = json.loads(r.read())["data"]["result"]
                    except (OSError, ValueError, KeyError):
                        continue
                up = []
                if result:
                    q2 = urllib.parse.urlencode({"query": 'up{job="cudalab"}'})
                    with urllib.request.urlopen(f"http://127.0.0.1:{web}/api/v1/query?{q2}", timeout=5) as r:
                        up = json.loads(r.read())["data"]["result"]
            finally:
                proc.terminate()
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
                log.close()
            logtext = (Path(d) / "prometheus.log").read_text()[-2000:]
        self.assertTrue(result, f"Prometheus never returned DCGM_FI_DEV_SM_CLOCK; its log:\n{logtext}")
        self.assertEqual(result[0]["metric"]["modelName"], "NVIDIA H200")
        self.assertIn(float(result[0]["value"][1]), {345.0, 1980.0})
        self.assertEqual(up[0]["value"][1], "1")


if __name__ == "__main__":
    unittest.main()
