"""CPU tests of scripts/ch08_multi_gpu.py's tables (no GPU, no benchmark run)."""
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ch08_multi_gpu as m  # noqa: E402


def row(name, **counters):
    return {"name": name, "run_type": "iteration", **counters}


class Tables(unittest.TestCase):
    def test_allreduce_pairs_ring_and_nccl_by_size(self):
        bench = [row("BM_ring_allreduce/gpus:2/bytes:268435456/manual_time", **{"busbw_GB/s": 260.0, "median_us": 1000.0}),
                 row("BM_nccl_allreduce/gpus:2/bytes:268435456/manual_time", **{"busbw_GB/s": 292.0, "median_us": 900.0}),
                 row("BM_ring_allreduce/gpus:2/bytes:8/manual_time", **{"busbw_GB/s": 0.001, "median_us": 20.0}),
                 {"name": "BM_nccl_allreduce/gpus:2/bytes:8/manual_time", "error_occurred": True}]
        gpus, rows = m.allreduce_table(bench)
        self.assertEqual(gpus, 2)
        self.assertEqual([r["bytes"] for r in rows], [8, 268435456])
        self.assertIsNone(rows[0]["nccl_busbw"])
        self.assertIsNone(rows[0]["ratio"])
        self.assertAlmostEqual(rows[1]["ratio"], 0.9)

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

    def test_human_bytes(self):
        self.assertEqual(m.human_bytes(8), "8 B")
        self.assertEqual(m.human_bytes(1 << 30), "1 GiB")
        self.assertEqual(m.human_bytes(256 << 20), "256 MiB")


if __name__ == "__main__":
    unittest.main()
