#!/usr/bin/env python3
"""Chapter 12's doctor on recorded device answers (no GPU): python3 scripts/test_ch12_doctor.py"""
from __future__ import annotations

import io
import json
import subprocess
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOOLS = ROOT / "chapters" / "12_production" / "tools"
sys.path.insert(0, str(TOOLS))
import ch12_nvml as nv  # noqa: E402
import doctor  # noqa: E402


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = doctor.main(list(argv))
        except SystemExit as e:  # argparse's usage exit
            code = e.code
    return code, out.getvalue(), err.getvalue()


def findings(fixture: str) -> list[doctor.Finding]:
    return doctor.diagnose(nv.Fake(fixture).snapshot())


def by_check(fs, check):
    return [f for f in fs if f.check == check]


class Fixtures(unittest.TestCase):
    def test_healthy_h200_is_all_ok(self):
        fs = findings("h200_healthy")
        bad = [f for f in fs if f.status not in ("OK",)]
        self.assertEqual(bad, [])
        self.assertEqual(doctor.exit_code(fs), doctor.EXIT_OK)
        names = {f.check for f in fs}
        for c in ("driver/runtime", "kernel images", "memory", "ECC mode", "ECC errors", "row remapping",
                  "persistence", "clocks", "clock events", "power", "temperature", "MIG", "PCIe", "NVLink"):
            self.assertIn(c, names)

    def test_the_live_h200_recording_is_healthy_at_idle(self):
        # Recorded by gpu_check.sh on the H200, idle: SM clock at 345 MHz with GpuIdle set and
        # persistence on; an idle clock is no warning, and a GPU without NVLink skips that check.
        fs = findings("h200_live")
        self.assertEqual([(f.check, f.status) for f in fs if f.status != "OK"], [("NVLink", "SKIP")])
        self.assertIn("idle", by_check(fs, "clocks")[0].detail)
        self.assertEqual(doctor.exit_code(fs), doctor.EXIT_OK)

    def assert_verdict(self, fixture, check, status, text, code):
        fs = findings(fixture)
        got = by_check(fs, check)
        self.assertTrue(got, f"{fixture}: no {check} finding")
        self.assertEqual(got[0].status, status, got[0])
        self.assertIn(text, got[0].detail)
        if status != "OK":
            self.assertTrue(got[0].fix, f"{fixture}: {check} has no fix line")
        self.assertEqual(doctor.exit_code(fs), code)
        # Everything else of the healthy machine stays OK: one failure, one finding.
        others = [f for f in fs if f.status != "OK" and f.check != check]
        return others

    def test_driver_too_old_for_the_runtime(self):
        self.assert_verdict("driver_too_old", "driver/runtime", "FAIL", "needs driver >= 580", doctor.EXIT_FAIL)

    def test_minor_version_compatibility_warns(self):
        self.assert_verdict("minor_version_compat", "driver/runtime", "WARN", "minor-version", doctor.EXIT_WARN)

    def test_architecture_missing_from_the_binary(self):
        others = self.assert_verdict("arch_missing", "kernel images", "FAIL", "no kernel image", doctor.EXIT_FAIL)
        self.assertEqual(others, [])

    def test_ptx_only_is_a_jit_warning(self):
        self.assert_verdict("ptx_only", "kernel images", "WARN", "only PTX", doctor.EXIT_WARN)

    def test_ecc_errors(self):
        self.assert_verdict("ecc_errors", "ECC errors", "FAIL", "2 uncorrectable", doctor.EXIT_FAIL)
        self.assertEqual(by_check(findings("ecc_errors"), "row remapping")[0].status, "WARN")

    def test_row_remap_failure(self):
        self.assert_verdict("row_remap_failure", "row remapping", "FAIL", "failed", doctor.EXIT_FAIL)

    def test_power_capped(self):
        self.assert_verdict("power_capped", "clock events", "WARN", "SwPowerCap", doctor.EXIT_WARN)
        fs = findings("power_capped")
        self.assertEqual(by_check(fs, "clocks")[0].status, "WARN")
        self.assertIn("lowered", by_check(fs, "power")[0].detail + by_check(fs, "clock events")[0].detail)

    def test_thermal_slowdown(self):
        self.assert_verdict("thermal_slowdown", "clock events", "FAIL", "HwThermalSlowdown", doctor.EXIT_FAIL)
        fs = findings("thermal_slowdown")
        self.assertIn("SwThermalSlowdown", by_check(fs, "clock events")[0].detail)
        self.assertEqual(by_check(fs, "temperature")[0].status, "FAIL")

    def test_mig_on_with_no_instance(self):
        self.assert_verdict("mig_no_instance", "MIG", "FAIL", "no instance", doctor.EXIT_FAIL)

    def test_mig_with_instances_lists_them(self):
        f = by_check(findings("mig_7x1g"), "MIG")[0]
        self.assertEqual(f.status, "OK")
        self.assertIn("7 instance(s)", f.detail)
        self.assertIn("16 SMs, 16.00 GiB", f.detail)

    def test_pcie_link_downgraded(self):
        self.assert_verdict("pcie_downgraded", "PCIe", "WARN", "x8", doctor.EXIT_WARN)

    def test_idle_pcie_generation_drop_is_not_a_warning(self):
        snap = nv.Fake("h200_healthy").snapshot()
        snap["devices"][0]["pcie"]["gen"] = 1  # an idle H200 downtrains its link to save power
        self.assertEqual(doctor.check_pcie(snap["devices"][0])[0].status, "OK")
        snap["devices"][0]["clock_event_reasons"] = 0  # under load it is a warning
        self.assertEqual(doctor.check_pcie(snap["devices"][0])[0].status, "WARN")

    def test_little_free_memory(self):
        self.assert_verdict("low_free_memory", "memory", "FAIL", "GiB free", doctor.EXIT_FAIL)

    def test_persistence_off_and_nvlink_down(self):
        fs = findings("persistence_off")
        self.assertEqual(by_check(fs, "persistence")[0].status, "WARN")
        self.assertEqual(by_check(fs, "NVLink")[0].status, "WARN")
        self.assertEqual(doctor.exit_code(fs), doctor.EXIT_WARN)

    def test_every_fixture_is_judged_without_error(self):
        for p in sorted((TOOLS / "fixtures").glob("*.json")):
            if p.stem == "nvml_error":
                continue
            with self.subTest(fixture=p.stem):
                fs = findings(str(p))
                self.assertTrue(fs)
                for f in fs:
                    self.assertIn(f.status, ("OK", "WARN", "FAIL", "SKIP"))


class KernelImage(unittest.TestCase):
    def test_rules(self):
        ki = doctor.kernel_image
        self.assertEqual(ki((9, 0), ["sm_80", "sm_90"], []), ("sass", "sm_90"))
        self.assertEqual(ki((9, 0), ["sm_80"], []), ("none", ""))            # SASS runs only within a major
        self.assertEqual(ki((8, 6), ["sm_80"], []), ("sass", "sm_80"))       # 8.0 cubin on 8.6: fine
        self.assertEqual(ki((8, 0), ["sm_86"], []), ("none", ""))            # newer minor: no
        self.assertEqual(ki((9, 0), ["sm_80"], ["sm_80"]), ("ptx", "sm_80"))  # PTX JITs forward
        self.assertEqual(ki((8, 0), [], ["sm_90"]), ("none", ""))            # PTX never backward
        self.assertEqual(ki((9, 0), ["sm_90a"], []), ("sass", "sm_90a"))
        self.assertEqual(ki((10, 0), ["sm_90a"], ["sm_90a"]), ("none", ""))  # 'a' features do not carry over

    def test_cuobjdump_parsing(self):
        elf = ("ELF file    1: bench_ch03.1.sm_80.cubin\nELF file    2: bench_ch03.2.sm_90.cubin\n"
               "ELF file    3: bench_ch03.3.sm_90a.cubin\n")
        ptx = "PTX file    1: bench_ch03.1.sm_90.ptx\n"
        self.assertEqual(nv.parse_cuobjdump(elf, ptx), {"sass": ["sm_80", "sm_90", "sm_90a"], "ptx": ["sm_90"]})
        self.assertEqual(nv.parse_cuobjdump("", ""), {"sass": [], "ptx": []})


class Binaries(unittest.TestCase):
    def test_lab_binaries_picks_the_benchmarks_and_a_reference_test_per_chapter(self):
        with tempfile.TemporaryDirectory() as d:
            b = Path(d)
            files = ["bench/bench_ch03", "bench/bench_ch11", "bench/bench_ch03.json",
                     "tests/ch03/reference_ch03_test_saxpy", "tests/ch03/reference_ch03_test_vector_add",
                     "tests/ch03/starter_ch03_test_saxpy", "tests/ch03/reference_ch03_test_saxpy_tests.cmake",
                     "tests/ch11/reference_ch11_test_kv_calc"]
            for f in files:
                p = b / f
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_text("")
                p.chmod(0o755 if "." not in p.name else 0o644)
            got = [str(p.relative_to(b)) for p in nv.lab_binaries(b)]
        self.assertEqual(got, ["bench/bench_ch03", "bench/bench_ch11", "tests/ch03/reference_ch03_test_saxpy",
                               "tests/ch11/reference_ch11_test_kv_calc"])
        self.assertEqual(nv.lab_binaries(None), [])


class Reasons(unittest.TestCase):
    def test_every_bit_by_name(self):
        names = nv.reason_names(0x1ff)
        self.assertEqual(names, ["GpuIdle", "ApplicationsClocksSetting", "SwPowerCap", "HwSlowdown", "SyncBoost",
                                 "SwThermalSlowdown", "HwThermalSlowdown", "HwPowerBrakeSlowdown",
                                 "DisplayClockSetting"])
        self.assertEqual(nv.reason_names(0), [])
        self.assertEqual(nv.reason_names(0x1 | 0x1000), ["GpuIdle", "0x1000"])


class Cli(unittest.TestCase):
    def test_exit_codes_and_json(self):
        code, out, _ = run("--fake", "h200_healthy")
        self.assertEqual(code, 0)
        self.assertIn("-> exit 0", out)
        code, out, _ = run("--fake", "thermal_slowdown", "-q")
        self.assertEqual(code, doctor.EXIT_FAIL)
        self.assertIn("fix:", out)
        self.assertNotIn("OK  ", out)
        # -q hides the OK lines, not the count: the tally says how many checks ran.
        code, out, _ = run("--fake", "h200_healthy", "-q")
        self.assertEqual(code, 0)
        self.assertIn("doctor: 15 ok, 0 warn, 0 fail, 0 skipped -> exit 0", out)
        with tempfile.TemporaryDirectory() as d:
            p = Path(d) / "doc.json"
            code, _, _ = run("--fake", "power_capped", "--json", str(p), "--record", str(Path(d) / "rec.json"))
            self.assertEqual(code, doctor.EXIT_WARN)
            doc = json.loads(p.read_text())
            self.assertEqual(doc["exit"], doctor.EXIT_WARN)
            self.assertTrue(any(f["status"] == "WARN" for f in doc["findings"]))
            # the recording is itself a fixture
            self.assertEqual(doctor.exit_code(findings(str(Path(d) / "rec.json"))), doctor.EXIT_WARN)

    def test_nvml_failure_is_exit_4_with_a_message(self):
        code, out, err = run("--fake", "nvml_error")
        self.assertEqual(code, doctor.EXIT_NO_GPU)
        self.assertIn("Driver/library version mismatch", err)
        self.assertNotIn("Traceback", out + err)

    def test_bad_input_is_usage_exit_2(self):
        for argv in (["--fake", "no_such_fixture"], ["--bogus"], ["--binary", "/no/such/file"],
                     ["--build-dir", "/no/such/dir"]):
            with self.subTest(argv=argv):
                code, out, err = run(*argv)
                self.assertEqual(code, doctor.EXIT_USAGE)
                self.assertIn("doctor:", err)
                self.assertNotIn("Traceback", err)
        with tempfile.TemporaryDirectory() as d:
            bad = Path(d) / "bad.json"
            bad.write_text("{not json")
            code, _, err = run("--fake", str(bad))
            self.assertEqual(code, doctor.EXIT_USAGE)
            self.assertIn("not JSON", err)

    def test_lab_dispatches_doctor(self):
        r = subprocess.run([sys.executable, str(ROOT / "scripts" / "lab"), "doctor", "--fake", "mig_no_instance"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, doctor.EXIT_FAIL, r.stderr)
        self.assertIn("MIG on with no instance", r.stdout)

    def test_without_a_driver_it_says_so(self):
        # This CI machine has no NVIDIA driver: exit 4 and a message, never a traceback.
        try:
            nv.Nvml().close()
            self.skipTest("an NVIDIA driver is present: the no-driver path is not reachable here")
        except nv.NvmlError:
            pass
        code, _, err = run()
        self.assertEqual(code, doctor.EXIT_NO_GPU)
        self.assertIn("cannot read the GPU", err)


if __name__ == "__main__":
    unittest.main()
