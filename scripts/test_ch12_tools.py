#!/usr/bin/env python3
"""Chapter 12's other tools without a GPU: the throttle watch (a recorded trace with a synthetic
SwPowerCap episode, a fake-NVML watch), the utilization trap (a fake load), the MIG tables, the
torch allocator verdict, the benchmark-row flags, and the go-live checklist: run through the fake
NVML, and linted (every line names a command that exists, with options it accepts).

    python3 scripts/test_ch12_tools.py
"""
from __future__ import annotations

import io
import json
import re
import shlex
import subprocess
import sys
import tempfile
import textwrap
import unittest
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOOLS = ROOT / "chapters" / "12_production" / "tools"
sys.path.insert(0, str(TOOLS))
sys.path.insert(0, str(ROOT / "scripts"))
import ch12_nvml as nv  # noqa: E402
import golive  # noqa: E402
import mig  # noqa: E402
import throttle_watch as tw  # noqa: E402
import torch_alloc  # noqa: E402
import util_trap  # noqa: E402


def call(fn, *argv):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = fn(list(argv))
        except SystemExit as e:
            code = e.code
    return code, out.getvalue(), err.getvalue()


def trace_with_power_cap() -> list[dict]:
    """60 samples at 10 Hz of a loaded GPU; samples 20-34 at the power cap with the clock down."""
    out = []
    for k in range(60):
        capped = 20 <= k < 35
        out.append({"t": k / 10, "sm_mhz": 1605 if capped else 1980, "mem_mhz": 3201,
                    "power_w": 699.0 if capped else 640.0, "temp_c": 60 + k // 10,
                    "reasons": 0x4 if capped else 0x0, "util": 100})
    out[0]["reasons"] = 0x1  # the first sample before the load started: idle
    return out


class ThrottleWatch(unittest.TestCase):
    def test_a_power_cap_episode_is_found(self):
        s = tw.summarize(trace_with_power_cap())
        self.assertTrue(s["throttled"])
        self.assertEqual(len(s["slowdown_episodes"]), 1)
        e = s["slowdown_episodes"][0]
        self.assertEqual((e["start_s"], e["end_s"], e["min_sm_mhz"]), (2.0, 3.4, 1605))
        self.assertEqual(e["reason_names"], ["SwPowerCap"])
        self.assertEqual(s["loaded_samples"], 59)
        self.assertAlmostEqual(s["reason_share_loaded"]["SwPowerCap"], 15 / 59, places=3)
        self.assertEqual((s["sm_mhz"]["min"], s["sm_mhz"]["max"]), (1605, 1980))
        self.assertEqual(s["rate_hz"], 10.0)

    def test_idle_and_sync_boost_are_not_throttling(self):
        t = [{"t": k / 10, "sm_mhz": 1980, "reasons": 0x10 if k % 2 else 0x1} for k in range(20)]
        self.assertFalse(tw.summarize(t)["throttled"])

    def test_replay_cli_exit_1_when_throttled(self):
        with tempfile.TemporaryDirectory() as d:
            p = Path(d) / "trace.json"
            p.write_text(json.dumps({"timeline": trace_with_power_cap()}))
            code, out, _ = call(tw.main, "--replay", str(p))
            self.assertEqual(code, tw.EXIT_THROTTLED)
            self.assertIn("slowdown 2.0-3.4 s: SwPowerCap, SM clock down to 1605 MHz", out)
            self.assertIn("THROTTLED", out)

    def test_fake_watch_samples_at_10_hz_and_judges(self):
        with tempfile.TemporaryDirectory() as d:
            out = Path(d) / "w.json"
            code, text, err = call(tw.main, "--fake", "h200_healthy", "--seconds", "1.5", "--out", str(out))
            self.assertEqual(code, 0, err)
            doc = json.loads(out.read_text())
            self.assertGreaterEqual(doc["summary"]["rate_hz"], 9.5)
            self.assertGreaterEqual(len(doc["timeline"]), 14)
            code, text, _ = call(tw.main, "--fake", "thermal_slowdown", "--seconds", "0.5")
            self.assertEqual(code, tw.EXIT_THROTTLED)
            self.assertIn("SwThermalSlowdown", text)

    def test_the_watch_ends_with_its_load(self):
        code, text, _ = call(tw.main, "--fake", "h200_healthy", "--seconds", "30", "--load",
                             f"{sys.executable} -c 'import time; time.sleep(0.5)'")
        self.assertEqual(code, 0)
        n = int(re.search(r"(\d+) samples", text).group(1))
        self.assertLess(n, 30, "the watch should stop when its load ends, not after --seconds")

    def test_bad_input(self):
        for argv in (["--hz", "5"], ["--seconds", "0"], ["--replay", "/no/such/trace.json"], ["--fake", "nope"]):
            with self.subTest(argv=argv):
                code, _, err = call(tw.main, *argv)
                self.assertEqual(code, tw.EXIT_USAGE)
                self.assertIn("throttle_watch:", err)
        with tempfile.TemporaryDirectory() as d:
            p = Path(d) / "bad.json"
            p.write_text('{"timeline": 3}')
            code, _, err = call(tw.main, "--replay", str(p))
            self.assertEqual(code, tw.EXIT_USAGE)
        code, _, err = call(tw.main, "--fake", "nvml_error")
        self.assertEqual(code, tw.EXIT_NO_GPU)
        code, _, err = call(tw.main, "--fake", "h200_healthy", "--seconds", "2", "--load",
                            f"{sys.executable} -c 'import sys; sys.exit(3)'")
        self.assertEqual(code, tw.EXIT_LOAD)


class UtilTrap(unittest.TestCase):
    def test_one_block_reads_busy_beside_one_sm(self):
        with tempfile.TemporaryDirectory() as d:
            load = Path(d) / "load.py"
            load.write_text(textwrap.dedent("""\
                #!/usr/bin/env python3
                import json, sys, time
                a = sys.argv
                b, s = int(a[a.index("--blocks") + 1]), float(a[a.index("--seconds") + 1])
                time.sleep(s)
                print(json.dumps({"blocks": b, "threads": 256, "sm_count": 132, "sms_busy": min(b, 132),
                                  "seconds": s}))
                """))
            load.chmod(0o755)
            out = Path(d) / "u.json"
            code, text, err = call(util_trap.main, "--load", str(load), "--seconds", "0.6", "--no-ncu",
                                   "--fake", "h200_healthy", "--out", str(out))
            self.assertEqual(code, 0, err)
            cases = json.loads(out.read_text())["cases"]
            self.assertEqual(cases[0]["blocks"], 1)
            self.assertAlmostEqual(cases[0]["sm_busy_pct"], 100 / 132)
            self.assertEqual(cases[1]["blocks"], 528)
            self.assertIn("| 1 block(s) |", text)

    def test_bad_input(self):
        code, _, err = call(util_trap.main, "--load", "/no/such/load")
        self.assertEqual(code, 2)
        self.assertIn("no such file", err)


class Mig(unittest.TestCase):
    def test_h200_facts(self):
        total, _, _, _, profs = mig.GPUS["h200"]
        p = {x[0]: x for x in profs}
        self.assertEqual(p["1g.18gb"][1:4], (7, 16, "16.00 GiB"))
        self.assertEqual(p["3g.71gb"][1:4], (2, 60, "69.50 GiB"))
        self.assertIn("20 of the GPU's 132 are in no instance", mig.slice_text("h200", "1g.18gb"))
        self.assertAlmostEqual(mig.peak_tflops("h200", 132), 66.9, places=1)

    def test_every_profile_fits_its_gpu(self):
        for gpu, (total, _, _, _, profs) in mig.GPUS.items():
            for name, n, sms, _, ce, _ in profs:
                with self.subTest(gpu=gpu, profile=name):
                    self.assertLessEqual(n * sms, total)
                    self.assertTrue(1 <= mig.slices(name) <= 7)
                    if ce is not None:
                        self.assertEqual(ce, mig.slices(name))

    def test_the_readme_table_is_the_tools(self):
        block = mig.readme_block(mig.README.read_text())
        self.assertEqual(block, mig.tables(), "run python3 chapters/12_production/tools/mig.py --update-readme")

    def test_unknown_gpu_or_profile(self):
        for argv in (["--gpu", "h300"], ["--gpu", "h200", "--profile", "9g.1tb"], ["--profile", "1g.18gb"]):
            with self.subTest(argv=argv):
                code, _, err = call(mig.main, *argv)
                self.assertEqual(code, 2)
                self.assertIn("mig.py: error", err)


class TorchAlloc(unittest.TestCase):
    def run_of(self, expandable, settings=None):
        return {"segments": 5, "expandable_segments": expandable, "settings_expandable": settings}

    def test_verdicts(self):
        ok, notes = torch_alloc.judge({"default": self.run_of(0), "PYTORCH_CUDA_ALLOC_CONF": self.run_of(2, True),
                                       "PYTORCH_ALLOC_CONF": self.run_of(2, True)})
        self.assertTrue(ok)
        ok, notes = torch_alloc.judge({"default": self.run_of(0), "PYTORCH_CUDA_ALLOC_CONF": self.run_of(0, False),
                                       "PYTORCH_ALLOC_CONF": self.run_of(0, None)})
        self.assertFalse(ok)
        self.assertTrue(any("silently ignored" in n for n in notes))
        ok, notes = torch_alloc.judge({"default": self.run_of(0), "PYTORCH_CUDA_ALLOC_CONF": self.run_of(3),
                                       "PYTORCH_ALLOC_CONF": self.run_of(0)})
        self.assertTrue(ok)
        self.assertTrue(any("IGNORED" in n and n.startswith("PYTORCH_ALLOC_CONF") for n in notes))

    def test_without_torch_or_a_gpu_it_skips_with_the_reason(self):
        why = torch_alloc.probe()
        if why is None:
            self.skipTest("torch with a CUDA device is here: the skip path is not reachable")
        code, out, _ = call(torch_alloc.main)
        self.assertEqual(code, torch_alloc.SKIP)
        self.assertIn("skipped:", out)


class BenchContext(unittest.TestCase):
    def test_bench_hpp_names_the_same_bits(self):
        # The C++ side (every chapter's benchmark JSON) and the Python side name the bits alike.
        text = (ROOT / "common" / "include" / "cudalab" / "bench.hpp").read_text()
        pairs = [(int(b, 16), n) for b, n in re.findall(r'\{(0x[0-9a-f]+), "(\w+)"\}', text)]
        self.assertEqual(pairs, nv.CLOCK_EVENT_REASONS)
        m = re.search(r"kClockSlowdownReasons = ([^;]+);", text)
        self.assertEqual(eval(m.group(1), {}), nv.SLOWDOWN_BITS)  # an expression of hex literals

    def test_bench_flags_lists_rows(self):
        import bench_flags
        data = {"context": {"gpu": "NVIDIA H200", "mig": "off"}, "benchmarks": [
            {"name": "BM_a/manual_time", "run_type": "iteration", "sm_mhz_before": 1980, "sm_mhz_after": 1410,
             "clock_reasons_before": 0, "clock_reasons_after": 4},
            {"name": "BM_b/manual_time", "run_type": "iteration", "sm_mhz_before": 1980, "sm_mhz_after": 1980,
             "clock_reasons_before": 0, "clock_reasons_after": 0}]}
        with tempfile.TemporaryDirectory() as d:
            p = Path(d) / "b.json"
            p.write_text(json.dumps(data))
            code, out, _ = call(bench_flags.main, str(p))
            self.assertEqual(code, 0)
            self.assertIn("BM_a: SM 1980 -> 1410 MHz, reasons none -> SwPowerCap  THROTTLED: SwPowerCap", out)
            self.assertNotIn("BM_b: SM 1980 -> 1980 MHz, reasons none -> none  THROTTLED", out)
            p.write_text(json.dumps({"benchmarks": [{"name": "x", "run_type": "iteration"}]}))
            self.assertEqual(call(bench_flags.main, str(p))[0], 1)
            p.write_text("not json")
            self.assertEqual(call(bench_flags.main, str(p))[0], 2)
            p.write_text("")  # a --benchmark_filter that matched nothing leaves this
            code, _, err = call(bench_flags.main, str(p))
            self.assertEqual(code, 2)
            self.assertIn("the file is empty", err)
            p.write_text(json.dumps({"context": {}, "benchmarks": []}))
            code, _, err = call(bench_flags.main, str(p))
            self.assertEqual(code, 2)
            self.assertIn("no benchmark row", err)
            code, _, err = call(bench_flags.main, str(Path(d) / "missing.json"))
            self.assertEqual(code, 2)
            self.assertIn("cannot read", err)


class GoLive(unittest.TestCase):
    def lines(self):
        return golive.parse_checklist(golive.README.read_text())

    def test_at_least_15_lines_each_with_a_criterion(self):
        lines = self.lines()
        self.assertGreaterEqual(len(lines), 15)
        self.assertEqual(len({ln.number for ln in lines}), len(lines))
        for ln in lines:
            self.assertTrue(ln.criteria)

    def test_lint_every_line_names_a_command_that_exists(self):
        """The program of each line exists (a repo file, a target of a chapter's CMakeLists, or a
        tool of scripts/deps.txt / the toolkit), and each --option it passes a Python tool is one the
        tool's --help lists."""
        deps = (ROOT / "scripts" / "deps.txt").read_text()
        env = {"B": "BUILD", "OUT": "/tmp/out", "NVML": "", "SOAK": "5", "LOAD": ""}
        for ln in self.lines():
            with self.subTest(line=ln.number):
                argv = shlex.split(golive.expand(ln.command, env))
                if argv[0] == "python3":
                    tool = ROOT / argv[1]
                    self.assertTrue(tool.is_file(), f"line {ln.number}: {argv[1]} does not exist")
                    helptext = subprocess.run([sys.executable, str(tool), "--help"], capture_output=True,
                                              text=True, timeout=60).stdout
                    for opt in (a.split("=")[0] for a in argv[2:] if a.startswith("--")):
                        self.assertIn(opt, helptext, f"line {ln.number}: {argv[1]} has no option {opt}")
                elif argv[0].startswith("BUILD/"):
                    rel = Path(argv[0][len("BUILD/"):])
                    cml = (ROOT / rel.parent / "CMakeLists.txt")
                    self.assertTrue(cml.is_file(), f"line {ln.number}: no {rel.parent}/CMakeLists.txt")
                    text = cml.read_text()
                    name = rel.name
                    prefix, _, app = name.partition("_")
                    # add_executable(name ...) or lab_app(chNN name ...), or the loop form over apps/
                    declared = re.search(rf"(add_executable\(|lab_app\(\w+ ){re.escape(name)}\b", text) or (
                        re.search(rf"(add_executable\(|lab_app\(\w+ ){re.escape(prefix)}_\$\{{app\}}", text)
                        and (ROOT / rel.parent / "apps" / f"{app}.cpp").is_file())
                    self.assertTrue(declared, f"line {ln.number}: {name} is not a target of {cml}")
                else:
                    known = {"ctest": "cmake cmd:cmake", "promtool": "prometheus cmd:prometheus"}
                    self.assertIn(argv[0], known, f"line {ln.number}: unknown program {argv[0]}")
                    self.assertIn(known[argv[0]], deps, f"line {ln.number}: {argv[0]}'s package is not in deps.txt")
                    for a in argv[1:]:
                        if "/" in a and not a.startswith("BUILD"):
                            self.assertTrue((ROOT / a).exists(), f"line {ln.number}: {a} does not exist")

    def test_the_checklist_passes_on_the_healthy_fixture(self):
        # A clean clone (CI runs these tests before it builds: cpu lines of built programs skip)
        # and, where it exists, this tree's CI build.
        builds = [Path(tempfile.gettempdir()) / "no-such-cudalab-build"]
        if (ROOT / "build" / "ci").is_dir():
            builds.append(ROOT / "build" / "ci")
        needs = {ln.number: ln.needs for ln in self.lines()}
        for b in builds:
            with tempfile.TemporaryDirectory() as d:
                code, out, err = call(golive.main, "--fake", "h200_healthy", "--soak", "1", "--out", d,
                                      "--build-dir", str(b))
                self.assertEqual(code, 0, out + err)
                doc = json.loads((Path(d) / "golive.json").read_text())
            for r in doc["results"]:
                num = r["number"]
                with self.subTest(build=str(b), line=num):
                    self.assertNotEqual(r["status"], "FAIL", r)
                    if needs[num] == "gpu":
                        self.assertEqual(r["status"], "SKIP")
                    if needs[num] == "nvml":
                        self.assertEqual(r["status"], "PASS", r)  # the NVML lines run on the fixture
                    if r["status"] == "SKIP" and needs[num] == "cpu":
                        self.assertRegex(r["why"], "not built|not installed", r)

    def test_the_serving_line_passes_the_planned_load_and_fails_an_overload(self):
        # Line 19's latency criteria, judged on the simulator's output with the cost model's
        # default figures (no GPU here, so `measured == true` is left out): the planned rate meets
        # them, the default saturating trace (40/s) does not. Needs the built simulator.
        sim = ROOT / "build" / "ci" / "chapters" / "11_llm_serving" / "ch11_serving_sim"
        if not sim.exists():
            self.skipTest(f"{sim.relative_to(ROOT)} is not built")
        src = ROOT / "chapters" / "11_llm_serving" / "apps" / "serving_sim.cpp"
        if sim.stat().st_mtime < src.stat().st_mtime:  # the unit tests run before `lab test` builds
            self.skipTest(f"{sim.relative_to(ROOT)} is older than {src.relative_to(ROOT)}: rebuild it")
        line = next(ln for ln in self.lines() if ln.number == "19")
        argv = shlex.split(line.command)
        rate = argv[argv.index("--rate") + 1]
        latency = [c for c in line.criteria if "_p99_ms" in c]
        self.assertEqual(len(latency), 2)
        for r, want in ((rate, True), ("40", False)):
            with tempfile.TemporaryDirectory() as d, self.subTest(rate=r):
                out = Path(d) / "serving.json"
                subprocess.run([str(sim), str(out), "--rate", r], check=True, capture_output=True, timeout=120)
                env = {"OUT": d}
                self.assertEqual(golive.judge(f"{{OUT}}/serving.json rate_per_s == {r}", 0, "", env)[0], True)
                self.assertEqual(all(golive.judge(c, 0, "", env)[0] for c in latency), want)

    def test_a_skipped_line_is_not_a_pass(self):
        readme = ("## Go-live checklist\n\n| # | check | needs | command | pass when |\n| --- | --- | --- | --- | --- |\n"
                  "| 1 | runs | cpu | `true` | `exit 0` |\n"
                  "| 2 | its tool is absent | cpu | `no-such-cudalab-tool --x` | `exit 0` |\n")
        with tempfile.TemporaryDirectory() as d:
            p = Path(d) / "README.md"
            p.write_text(readme)
            code, out, _ = call(golive.main, "--readme", str(p), "--out", d)
            self.assertEqual(code, 0)
            self.assertIn("golive: 1 passed, 0 failed, 1 skipped (NOT a complete go-live: line(s) 2 did not run)", out)
            self.assertRegex(out, r"SKIP +2\. its tool is absent: no-such-cudalab-tool is not installed")
            doc = json.loads((Path(d) / "golive.json").read_text())
            self.assertEqual([r["status"] for r in doc["results"]], ["PASS", "SKIP"])
            code, out, _ = call(golive.main, "--readme", str(p), "--out", d, "--strict")
            self.assertEqual(code, 1)

    def test_a_sick_fixture_fails_its_lines(self):
        with tempfile.TemporaryDirectory() as d:
            code, out, _ = call(golive.main, "--fake", "thermal_slowdown", "--soak", "1", "--out", d,
                                "--only", "5", "--only", "13", "--only", "2")
        self.assertEqual(code, 1)
        self.assertRegex(out, r"FAIL +5\.")
        self.assertRegex(out, r"FAIL +13\.")
        self.assertRegex(out, r"PASS +2\.")

    def test_strict_fails_on_a_skip_and_bad_input_exits_2(self):
        with tempfile.TemporaryDirectory() as d:
            code, out, _ = call(golive.main, "--fake", "h200_healthy", "--out", d, "--only", "11", "--strict")
        self.assertEqual(code, 1)
        for argv in (["--fake", "nope"], ["--only", "99", "--fake", "h200_healthy"], ["--soak", "0"]):
            with self.subTest(argv=argv):
                code, _, err = call(golive.main, *argv)
                self.assertEqual(code, 2)
                self.assertIn("golive:", err)

    def test_malformed_checklists_are_refused(self):
        good = "## Go-live checklist\n\n| # | check | needs | command | pass when |\n| --- | --- | --- | --- | --- |\n"
        for row in ("| 1 | x | cpu | `true` | exit 0 |",            # criterion not in backticks
                    "| 1 | x | tpu | `true` | `exit 0` |",          # unknown needs
                    "| 1 | x | cpu | true | `exit 0` |",            # command not in backticks
                    "| 1 | x | cpu | `true` | `exit zero` |"):       # criterion grammar
            with self.subTest(row=row), self.assertRaises(ValueError):
                golive.parse_checklist(good + row + "\n")
        self.assertEqual(len(golive.parse_checklist(good + "| 1 | x | cpu | `true` | `exit 0` |\n")), 1)

    def test_criteria(self):
        with tempfile.TemporaryDirectory() as d:
            p = Path(d) / "r.json"
            p.write_text(json.dumps({"ok": True, "a": {"b": [1, 2.5]}}))
            env = {"OUT": d}
            self.assertEqual(golive.judge("exit 0, 1", 1, "", env)[0], True)
            self.assertEqual(golive.judge("exit 0", 3, "", env)[0], False)
            self.assertEqual(golive.judge("{OUT}/r.json ok == true", 0, "", env)[0], True)
            self.assertEqual(golive.judge("{OUT}/r.json a.b.1 <= 2", 0, "", env), (False, "a.b.1 = 2.5 (wanted <= 2)"))
            self.assertEqual(golive.judge("{OUT}/missing.json ok == true", 0, "", env)[0], False)
            self.assertEqual(golive.judge("stdout X_Y == 0", 0, 'X_Y{gpu="0"} 0\n', env)[0], True)
            self.assertEqual(golive.judge("stdout X_Z == 0", 0, 'X_Y{gpu="0"} 0\n', env)[0], False)


class MemBudgetCli(unittest.TestCase):
    def exe(self):
        for preset in ("ci", "gpu"):
            p = ROOT / "build" / preset / "chapters" / "12_production" / "ch12_mem_budget"
            if p.exists():
                return p
        self.skipTest("ch12_mem_budget is not built (cmake --build --preset ci --target ch12_mem_budget)")

    def test_bad_input_is_a_message_and_exit_2(self):
        exe = self.exe()
        for argv in (["--gpu", "h300"], ["--model", "gpt-5"], ["--context", "-3"], ["--reserve", "1.5"],
                     ["--bogus", "1"], ["--context"], ["--tp", "3"], ["--weights", "fp4"]):
            with self.subTest(argv=argv):
                r = subprocess.run([str(exe), *argv], capture_output=True, text=True, timeout=60)
                self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
                self.assertIn("ch12_mem_budget:", r.stderr)

    def test_the_gpu_programs_check_their_arguments_before_the_gpu(self):
        d = self.exe().parent
        for exe, argv in (("ch12_oom_drill", ["--model", "gpt-5"]), ("ch12_oom_drill", ["--context", "x"]),
                          ("ch12_load", ["--seconds", "0"]), ("ch12_load", ["--blocks", "-1"]),
                          ("ch12_load", ["--nope", "1"])):
            with self.subTest(exe=exe, argv=argv):
                r = subprocess.run([str(d / exe), *argv], capture_output=True, text=True, timeout=60)
                self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
                self.assertIn(f"{exe}:", r.stderr)

    def test_json_is_the_budget(self):
        exe = self.exe()
        with tempfile.TemporaryDirectory() as d:
            r = subprocess.run([str(exe), "--gpu", "h200", "--context", "8192", "--json", f"{d}/b.json"],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            b = json.loads(Path(d, "b.json").read_text())
        self.assertEqual(b["max_batch"], 115)  # tests/ch12/test_budget.cpp works it by hand
        self.assertIn("largest batch", r.stdout)


if __name__ == "__main__":
    unittest.main()
