"""CPU tests of the card tool (run by ctest as reference.ch02.GpuCardTool, and by
`python3 chapters/02_architecture/tools/test_gpu_card.py`): the plateau finder, the card built
from a synthetic bench JSON (tests/ch02/fixtures: no number there was measured), its Markdown,
the guard failures it reports, the ceilings loader and the no-GPU sheet path through the built
calculator (CH02_SHEET: the ch02_sheet executable; those tests skip without it)."""
from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import card  # noqa: E402
import gpu_card  # noqa: E402

FIXTURE = HERE.parent.parent.parent / "tests" / "ch02" / "fixtures" / "bench_ch02_synthetic.json"
SHEET = os.environ.get("CH02_SHEET") or str(card.sheet_exe() or "")


def fake_littles(bw, lat_ns, sms, bpt, max_threads):
    # The exercise 2.4 formula, here only to feed build_card in a test (the tool calls apps/sheet).
    per_sm = bw * 1e9 * lat_ns * 1e-9 / sms
    return {"occupancy": per_sm / bpt / max_threads}


class Plateaus(unittest.TestCase):
    def test_steps_found(self):
        pts = [(1, 30), (2, 31), (4, 30), (8, 90), (16, 250), (32, 255), (64, 252), (128, 600), (256, 610)]
        p = gpu_card.plateaus(pts)
        self.assertEqual([round(x["latency"]) for x in p], [30, 252, 605])
        self.assertEqual(p[1]["from_bytes"], 16)
        self.assertEqual(p[1]["step_from"], 4)   # the L1 plateau ended at 4, 8 is a transition
        self.assertEqual(p[2]["step_from"], 64)
        self.assertEqual(gpu_card.level_names(3), ["L1", "L2", "DRAM"])

    def test_a_faster_plateau_further_out_is_no_level(self):
        # The H200 run whose 128-256 MiB rings re-timed L2-resident lines: 287 cycles after 680.
        pts = [(1, 40), (2, 40), (4, 286), (8, 286), (64, 680), (96, 690), (128, 287), (256, 287)]
        dropped = []
        p = gpu_card.plateaus(pts, dropped=dropped)
        self.assertEqual([round(x["latency"]) for x in p], [40, 286, 685])
        self.assertEqual([(d["from_bytes"], d["to_bytes"]) for d in dropped], [(128, 256)])

    def test_bench_names_lose_gbench_suffixes(self):
        rows = gpu_card.bench_rows({"benchmarks": [
            {"name": "BM_chase_shared/bytes:16384/iterations:2/manual_time", "cycles_per_load": 29.0},
            {"name": "BM_smem/stride:1/warps:32/manual_time", "GB/s": 1.0}]})
        self.assertEqual(sorted(rows), ["BM_chase_shared/bytes:16384", "BM_smem/stride:1/warps:32"])

    def test_single_points_are_no_plateau(self):
        self.assertEqual(gpu_card.plateaus([(1, 10), (2, 100), (4, 1000)]), [])


class CardFromFixture(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.data = json.loads(FIXTURE.read_text())
        sheet = None
        if SHEET and Path(SHEET).exists():
            sheet = json.loads(subprocess.run([SHEET, "--gpu", "H200"], capture_output=True, text=True,
                                              check=True).stdout)
        cls.sheet = sheet
        cls.card = gpu_card.build_card(cls.data, sheet, fake_littles)

    def test_ceilings_object(self):
        c = self.card["ceilings"]
        for k in card.CEILING_KEYS:
            self.assertIn(k, c)
        self.assertEqual(set(c["tensor_TFLOPs"]), set(card.TENSOR_KEYS))
        fmas = [b["TFLOP/s"] for b in self.data["benchmarks"] if b["name"].startswith("BM_fma_f32/")]
        self.assertEqual(c["fp32_TFLOPs"], max(fmas))
        self.assertEqual(c["l2_GBps"], 11000.0)  # the best tiles row at or below 40 MB, not the 16,000 resident row
        self.assertEqual(c["sm_clock_MHz"], 1980.0)
        self.assertIsNone(c["tensor_TFLOPs"]["fp8"], "the fp8 wgmma row is an error row: no value")

    def test_rows_have_every_field(self):
        for r in self.card["rows"]:
            for k in ("name", "unit", "formula", "clock_MHz", "sheet", "measured", "ratio", "published", "source"):
                self.assertIn(k, r, r["name"])

    def test_guard_failure_reported(self):
        self.assertEqual(len(self.card["guard_failures"]), 1)
        self.assertIn("BM_wgmma/bf16", self.card["guard_failures"][0])
        self.assertIn("wgmma bf16 m64n256 (sm_90a)", self.card["outside_0_5_to_1_02"])
        self.assertIn("FAIL (>102%)", gpu_card.render_markdown(self.card))

    def test_latency_plateaus_and_little(self):
        lat = self.card["latency"]
        self.assertEqual([p["level"] for p in lat["plateaus"]], ["L1", "L2 near", "L2 far", "DRAM"])
        self.assertEqual(lat["plateaus"][-1]["step_from"], 48 << 20)
        self.assertEqual(lat["l2_bytes_device"], 60 * 2 ** 20)
        read = next(e for e in self.card["littles_law"] if e["kernel"] == "DRAM read")
        self.assertEqual(read["occupancy_at_90pct"], 8 / 64)  # the fixture saturates at 8 warps
        self.assertIsNotNone(read["predicted_occupancy"])

    def test_goals_and_sparse_gain(self):
        goals = {g["goal"]: g for g in self.card["goals"]}
        self.assertTrue(goals["L2 >= 9 TB/s below 40 MB"]["met"])
        self.assertTrue(goals["FP32 FMA >= 90% of the clock-adjusted peak"]["met"])
        sp = next(r for r in self.card["rows"] if r["name"].startswith("mma.sp"))
        self.assertAlmostEqual(sp["gain_vs_dense"], 1.5)
        ladder = self.card["smem_conflict_ladder"]
        self.assertEqual([round(s["slowdown"]) for s in ladder], [1, 2, 4, 8, 16, 32])

    def test_the_h200_l2_goal_is_shown_not_judged_on_another_gpu(self):
        other = gpu_card.build_card(self.data, {"key": "H100-SXM", "rows": []}, fake_littles)
        g = {g["goal"]: g for g in other["goals"]}["L2 >= 9 TB/s below 40 MB"]
        self.assertIsNone(g["met"])
        self.assertEqual(g["value"], 11000.0)
        self.assertIn("an H200 goal", g["note"])
        self.assertIn("an H200 goal; no published L2 figure for H100-SXM", gpu_card.render_markdown(other))

    def test_ratios_against_the_printed_figures(self):
        if not self.sheet:
            self.skipTest("skipped: ch02_sheet is not built (CH02_SHEET)")
        bf = next(r for r in self.card["rows"] if r["name"].startswith("cuBLAS GEMM bf16"))
        self.assertAlmostEqual(bf["ratio_published"], 840 / 989.4, places=6)
        self.assertAlmostEqual(bf["ratio_headline"], 840 / 1978.9, places=6)
        mc = next(r for r in self.card["rows"] if r["name"].startswith("cudaMemcpy"))
        self.assertAlmostEqual(mc["ratio_published"], 4200 / 4800, places=6)
        self.assertIsNone(mc["ratio_headline"])

    def test_markdown(self):
        md = gpu_card.render_markdown(self.card)
        self.assertIn("| FP32 FMA (CUDA cores) | TFLOP/s |", md)
        self.assertIn("Warps hide latency", md)
        self.assertIn("Little's law", md)
        if self.sheet:
            self.assertIn("132 SM x 128 lanes x 2 FLOP/FMA x 1980 MHz", md)


@unittest.skipUnless(SHEET and Path(SHEET).exists(), "skipped: ch02_sheet is not built (CH02_SHEET)")
class WithTheCalculator(unittest.TestCase):
    def run_tool(self, *argv):
        out, err = io.StringIO(), io.StringIO()
        env = dict(os.environ, CH02_SHEET=SHEET)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            old = os.environ.copy()
            os.environ.update(env)
            try:
                rc = gpu_card.main(list(argv))
            finally:
                os.environ.clear()
                os.environ.update(old)
        return rc, out.getvalue(), err.getvalue()

    def test_sheet_of_a_named_gpu(self):
        rc, out, _ = self.run_tool("--gpu", "H100-SXM", "--no-build")
        self.assertEqual(rc, 0)
        self.assertIn("132 SM x 4096 FLOP/clk/SM x 1830 MHz", out)
        self.assertIn("989.4", out)

    def test_unknown_gpu_lists_the_known_ones(self):
        rc, _, err = self.run_tool("--gpu", "H300", "--no-build")
        self.assertEqual(rc, 2)
        self.assertIn("H200", err)
        self.assertIn("unknown GPU 'H300'", err)

    def test_card_from_json_writes_the_ceilings_file(self):
        with tempfile.TemporaryDirectory() as d:
            rc, out, _ = self.run_tool("--from-json", str(FIXTURE), "--out", d, "--no-build", "--no-plot")
            self.assertEqual(rc, 1, "the fixture has a row above 102%: the command fails")
            c = json.loads((Path(d) / "ch02_card.json").read_text())
            self.assertIn("ceilings", c)
            self.assertTrue((Path(d) / "ch02_card.md").exists())

    def test_sheet_app_usage_errors_exit_2(self):
        for argv in (["--gpu"], ["--gpu", "H300"], ["--littles", "4800", "x", "132", "64", "2048"],
                     ["--littles", "0", "600", "132", "64", "2048"], ["--bogus"]):
            p = subprocess.run([SHEET, *argv], capture_output=True, text=True)
            self.assertEqual(p.returncode, 2, f"{argv}: {p.stderr}")
            self.assertTrue(p.stderr.strip(), f"{argv}: says why")
        p = subprocess.run([SHEET, "--littles", "4800", "600", "132", "64", "2048"], capture_output=True,
                           text=True, check=True)
        self.assertAlmostEqual(json.loads(p.stdout)["bytes_in_flight"], 2.88e6)
        table = json.loads(subprocess.run([SHEET], capture_output=True, text=True, check=True).stdout)
        self.assertEqual(len(table["gpus"]), 8)

    def test_missing_json_is_a_usage_error(self):
        rc, _, err = self.run_tool("--from-json", "/nonexistent/x.json", "--no-build")
        self.assertEqual(rc, 2)
        self.assertIn("does not exist", err)

    def test_malformed_json_is_a_usage_error(self):
        with tempfile.TemporaryDirectory() as d:
            for name, text, why in (("bad.json", "{not json", "not JSON"),
                                    ("list.json", "[1, 2]", "not a Google Benchmark JSON")):
                f = Path(d) / name
                f.write_text(text)
                rc, _, err = self.run_tool("--from-json", str(f), "--no-build")
                self.assertEqual(rc, 2, name)
                self.assertIn(why, err, name)

    def test_load_ceilings_falls_back_to_the_sheet(self):
        with tempfile.TemporaryDirectory() as d:
            root = Path(d)
            exe = root / "build" / "ci" / "chapters" / "02_architecture" / "ch02_sheet"
            exe.parent.mkdir(parents=True)
            shutil.copy(SHEET, exe)
            got = card.load_ceilings("NVIDIA H100 80GB HBM3", root)
            self.assertFalse(got["measured"])
            self.assertIn("no measured card", got["note"])
            self.assertAlmostEqual(got["ceilings"]["tensor_TFLOPs"]["bf16"], 989.4, places=1)
            # A measured card wins.
            raw = root / "docs" / "results" / "raw" / "H200"
            raw.mkdir(parents=True)
            c = gpu_card.build_card(json.loads(FIXTURE.read_text()), None, None)
            (raw / "ch02_card.json").write_text(json.dumps(c))
            got = card.load_ceilings("NVIDIA H200", root)
            self.assertTrue(got["measured"])
            self.assertEqual(got["ceilings"]["l2_GBps"], 11000.0)
            with self.assertRaises(LookupError):
                card.load_ceilings("NVIDIA H300", root)


class LoaderWithoutAnything(unittest.TestCase):
    def test_no_card_no_calculator(self):
        with tempfile.TemporaryDirectory() as d, self.assertRaises(LookupError) as e:
            card.load_ceilings("NVIDIA H200", Path(d))
        self.assertIn("no measured card", str(e.exception))


if __name__ == "__main__":
    unittest.main()
