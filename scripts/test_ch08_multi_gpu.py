"""CPU tests of chapters/08_multi_gpu/tools/ch08_multi_gpu.py's tables (no GPU, no benchmark run)."""
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "chapters" / "08_multi_gpu" / "tools"))
import ch08_multi_gpu as m  # noqa: E402


def row(name, **counters):
    return {"name": name, "run_type": "iteration", **counters}


class Tables(unittest.TestCase):
    def test_allreduce_pairs_ring_and_nccl_by_size(self):
        bench = [row("BM_ring_allreduce/gpus:2/bytes:268435456/manual_time",
                     **{"busbw_GB/s": 260.0, "median_us": 1000.0, "model_busbw_GB/s": 318.4}),
                 row("BM_nccl_allreduce/gpus:2/bytes:268435456/manual_time", **{"busbw_GB/s": 292.0, "median_us": 900.0}),
                 row("BM_ring_allreduce/gpus:2/bytes:8/manual_time", **{"busbw_GB/s": 0.001, "median_us": 20.0}),
                 {"name": "BM_nccl_allreduce/gpus:2/bytes:8/manual_time", "error_occurred": True}]
        bench.append(row("BM_ring_allreduce/gpus:4/bytes:8/manual_time", **{"busbw_GB/s": 0.002, "median_us": 30.0}))
        gpus, rows = m.allreduce_table(bench)
        self.assertEqual(gpus, 4)
        self.assertEqual([(r["gpus"], r["bytes"]) for r in rows], [(2, 8), (2, 268435456), (4, 8)])
        self.assertIsNone(rows[0]["nccl_busbw"])
        self.assertIsNone(rows[0]["ratio"])
        self.assertAlmostEqual(rows[1]["ratio"], 0.9)
        md = m.markdown(gpus, rows, {"one_way": {}, "both_ways": {}}, "", "")
        self.assertIn("| 2 | 256 MiB | 260.0 | 292.0 | 318.4 | 1000.0 | 900.0 | 0.90 |", md)
        self.assertIn("| 4 | 8 B | 0.0 | — | — | 30.0 | — | — |", md)

    def test_p2p_matrix_and_markdown(self):
        bench = [row("BM_p2p_copy/src:0/dst:1/one_way/iterations:3/manual_time", **{"GB/s": 390.0}),
                 row("BM_p2p_copy/src:1/dst:0/one_way/iterations:3/manual_time", **{"GB/s": 391.0}),
                 row("BM_p2p_copy/src:0/dst:1/both_ways/iterations:3/manual_time", **{"GB/s": 700.0})]
        p2p = m.p2p_matrix(bench)
        self.assertEqual(p2p["one_way"][(1, 0)], 391.0)
        md = m.markdown(2, [], p2p, "", "| model |\n")
        self.assertIn("| 0 | — | 390.0 |", md)
        self.assertIn("both ways", md)
        self.assertIn("| model |", md)

    def test_collectives_table(self):
        bench = [row("BM_nccl_allgather/gpus:2/bytes:1024/manual_time", **{"busbw_GB/s": 1.5}),
                 row("BM_nccl_broadcast/gpus:2/bytes:1024/manual_time", **{"busbw_GB/s": 2.5}),
                 row("BM_nccl_allreduce/gpus:2/bytes:1024/manual_time", **{"busbw_GB/s": 9.0})]
        rows = m.collectives_table(bench)
        self.assertEqual(rows, [{"bytes": 1024, "allgather": 1.5, "reducescatter": None, "broadcast": 2.5}])
        self.assertIn("| 1 KiB | 1.5 | — | 2.5 |", m.markdown(2, [], {"one_way": {}, "both_ways": {}}, "", "", rows))

    def test_simulated_ring_table(self):
        bench = [row("BM_ring_simulated/ranks:4/bytes:268435456/manual_time",
                     **{"median_us": 1175.6, "algbw_GB/s": 228.3, "busbw_GB/s": 342.5}),
                 row("BM_ring_simulated/ranks:4/bytes:1048576/manual_time",
                     **{"median_us": 130.4, "algbw_GB/s": 8.0, "busbw_GB/s": 12.1}),
                 {"name": "BM_ring_simulated/ranks:4/bytes:8/manual_time", "error_occurred": True}]
        rows = m.simulated_table(bench)
        self.assertEqual([r["bytes"] for r in rows], [1048576, 268435456])
        md = m.markdown(1, [], {"one_way": {}, "both_ways": {}}, "", "", None, rows)
        self.assertIn("| 4 | 256 MiB | 1175.6 | 228.3 | 342.5 |", md)

    def test_render_rewrites_the_tables_of_a_saved_run(self):
        import json
        import tempfile
        bench = {"benchmarks": [row("BM_ring_allreduce/gpus:1/bytes:1048576/manual_time",
                                    **{"busbw_GB/s": 0.0, "median_us": 1.8})]}
        with tempfile.TemporaryDirectory() as d:
            stem = m.write_tables(Path(d), bench, "\x1b[4mGPU0\x1b[0m\n", "| model |\n", {"rows": []}, "0")
            saved = json.loads(stem.with_suffix(".json").read_text())
            self.assertEqual(saved["gpus"], 1)
            self.assertEqual(saved["topology"], "GPU0\n")  # no terminal escapes
            self.assertIn("| 1 MiB | 0.0 |", stem.with_suffix(".md").read_text())

    def test_p2p_latency_matrix(self):
        bench = [row("BM_p2p_latency/src:0/dst:1/iterations:3/manual_time", **{"us": 2.5}),
                 row("BM_p2p_latency/src:0/dst:0/iterations:3/manual_time", **{"us": 1.5})]
        p2p = m.p2p_matrix(bench)
        self.assertEqual(p2p["latency"], {(0, 1): 2.5, (0, 0): 1.5})
        md = m.markdown(2, [], p2p, "", "")
        self.assertIn("P2P copy latency", md)
        self.assertIn("| 0 | 1.5 | 2.5 |", md)

    def test_nvlink_table_from_the_bench_context(self):
        nv = m.nvlink_table({"nvlink_links": "0 18;18 0", "nvlink_other": "0 0", "nvlink_active": "18 18"})
        self.assertEqual(nv, ([[0, 18], [18, 0]], [0, 0], [18, 18]))
        md = m.markdown(2, [], {"one_way": {}, "both_ways": {}}, "", "", nvlink=nv)
        self.assertIn("| 1 | 18 | 0 | 0 | 18 |", md)
        why = m.nvlink_table({"nvlink_unavailable": "built without NVML"})
        self.assertEqual(why, "built without NVML")
        self.assertIn("Unavailable: built without NVML.", m.markdown(1, [], {}, "", "", nvlink=why))
        self.assertIn("older than", m.nvlink_table({}))

    def test_ddp_table(self):
        bench = [row("BM_ddp/large/ranks:1/sync:end/iterations:1/manual_time",
                     **{"step_ms": 6.0, "speedup": 1.0, "simulated": 0.0}),
                 row("BM_ddp/large/ranks:2/sync:bucketed/iterations:1/manual_time",
                     **{"step_ms": 3.1, "speedup": 1.94, "simulated": 0.0, "model_speedup": 1.97}),
                 row("BM_ddp/small/ranks:2/sync:end/iterations:1/manual_time",
                     **{"step_ms": 0.2, "speedup": 0.6, "simulated": 1.0})]
        rows = m.ddp_table(bench)
        self.assertEqual([(r["size"], r["ranks"], r["sync"]) for r in rows],
                         [("large", 1, "end"), ("large", 2, "bucketed"), ("small", 2, "end")])
        md = m.markdown(2, [], {"one_way": {}, "both_ways": {}}, "", "", ddp=rows)
        self.assertIn("| large | 2 | bucketed | 3.100 | 1.94 | 1.97 |", md)
        self.assertIn("| small | 2 (simulated on one GPU) | end | 0.200 | 0.60 | — |", md)

    def test_tp_table(self):
        bench = [row("BM_tp_gemm/columns/ranks:1/n:8192/manual_time",
                     **{"real_time": 22.0, "TFLOP/s": 50.0, "speedup": 1.0, "efficiency": 1.0, "simulated": 0.0}),
                 row("BM_tp_gemm/rows/ranks:2/n:8192/manual_time",
                     **{"real_time": 11.6, "TFLOP/s": 94.8, "speedup": 1.9, "efficiency": 0.95,
                        "model_speedup": 1.96, "simulated": 0.0}),
                 row("BM_tp_gemm/columns/ranks:2/n:2048/manual_time",
                     **{"real_time": 0.7, "TFLOP/s": 24.5, "speedup": 0.5, "efficiency": 0.25,
                        "simulated": 1.0}),
                 row("BM_tp_gemm/columns/ranks:2/n:2048/manual_time_median", run_type="aggregate")]
        rows = m.tp_table(bench)
        self.assertEqual([(r["n"], r["split"], r["ranks"]) for r in rows],
                         [(8192, "columns", 1), (8192, "rows", 2), (2048, "columns", 2)])
        md = m.markdown(2, [], {"one_way": {}, "both_ways": {}}, "", "", tp=rows)
        self.assertIn("| 8192 | rows | 2 | 11.600 | 94.8 | 1.90 | 0.95 | 1.96 |", md)
        self.assertIn("| 2048 | columns | 2 (simulated on one GPU) | 0.700 | 24.5 | 0.50 | 0.25 | — |", md)

    def test_mpi_line_and_table(self):
        line = "all-reduce 67108864 floats on 2 ranks: 1.650 ms, algbw 162.7 GB/s, busbw 162.7 GB/s: sum ok\n"
        row = m.parse_mpi("some NCCL banner\n" + line)
        self.assertEqual(row, {"ranks": 2, "bytes": 268435456, "ms": 1.65, "algbw": 162.7, "busbw": 162.7,
                               "ok": True})
        self.assertFalse(m.parse_mpi(line.replace("sum ok", "WRONG SUM"))["ok"])
        self.assertIsNone(m.parse_mpi("skipped: no GPU on some rank"))
        md = m.markdown(2, [], {"one_way": {}, "both_ways": {}}, "", "", mpi=[row])
        self.assertIn("| 2 | 256 MiB | 1.650 | 162.7 | 162.7 | ok |", md)
        self.assertIn("Not run: no mpiexec or mpirun on PATH.",
                      m.markdown(1, [], {}, "", "", mpi="no mpiexec or mpirun on PATH"))

    def test_human_bytes(self):
        self.assertEqual(m.human_bytes(8), "8 B")
        self.assertEqual(m.human_bytes(1 << 30), "1 GiB")
        self.assertEqual(m.human_bytes(256 << 20), "256 MiB")


if __name__ == "__main__":
    unittest.main()
