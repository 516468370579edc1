#!/usr/bin/env python3
"""Unit tests of resources.py on fixture text (no GPU, no build, no cuobjdump):
python3 scripts/test_resources.py"""
from __future__ import annotations

import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import resources as rs  # noqa: E402

# cuobjdump 13 --dump-resource-usage of one object built for sm_80 and sm_90 (PTX and SASS each)
RES_USAGE = """
Fatbin ptx code:
================
arch = sm_80
code version = [9,0]
host = linux
compile_size = 64bit
compressed
ptxasOptions =

Fatbin elf code:
================
arch = sm_80
code version = [1,8]
host = linux
compile_size = 64bit

Resource usage:
 Common:
  GLOBAL:0
 Function _Z4kernILi256EEvPfi:
  REG:10 STACK:0 SHARED:1024 LOCAL:0 CONSTANT[0]:364 TEXTURE:0 SURFACE:0 SAMPLER:0
 Function _Z5plainPf:
  REG:132 STACK:16 SHARED:0 LOCAL:24 CONSTANT[0]:360 TEXTURE:0 SURFACE:0 SAMPLER:0

Fatbin elf code:
================
arch = sm_90
code version = [1,8]
host = linux
compile_size = 64bit

Resource usage:
 Common:
  GLOBAL:0
 Function _Z4kernILi256EEvPfi:
  REG:10 STACK:0 SHARED:2048 LOCAL:0 CONSTANT[0]:540 TEXTURE:0 SURFACE:0 SAMPLER:0
"""

# the part of cuobjdump -elf that matters: one .nv.info section per kernel
ELF = """
Fatbin elf code:
================
arch = sm_90
code version = [1,8]

.nv.info._Z4kernILi256EEvPfi
	<0x1>
	Attribute:	EIATTR_CUDA_API_VERSION
	Format:	EIFMT_SVAL
	Value:	0x82
	<0x9>
	Attribute:	EIATTR_MAX_THREADS
	Format:	EIFMT_SVAL
	Value:	0x100 0x1 0x1

.nv.info._Z5plainPf
	<0x1>
	Attribute:	EIATTR_CUDA_API_VERSION
	Format:	EIFMT_SVAL
	Value:	0x82
"""

SOURCE = """#include "common.cuh"
namespace cudalab::ch09 {
namespace {

template <int kThreads>
__global__ void __launch_bounds__(kThreads) scale_kernel(float* x, long n) {
  // BEGIN EXERCISE 9.1
  // TODO(9.1): the contract
  x[threadIdx.x] *= 2.0f;
  // END EXERCISE
}

// BEGIN EXERCISE 9.2
// TODO(9.2): the whole kernel
__global__ void __launch_bounds__(128)
    add_kernel(float* x) { x[0] += 1.0f; }
// END EXERCISE

struct Epilogue {
  __device__ float operator()(float v) const {
    // BEGIN EXERCISE 9.3
    // TODO(9.3): { not a brace in code }
    return v > 0.0f ? v : 0.0f;
    // END EXERCISE
  }
};

}  // namespace

void launch(float* x, long n) {
  // BEGIN EXERCISE 9.4
  // TODO(9.4): the launch
  scale_kernel<256><<<1, 256>>>(x, n);
  // END EXERCISE
}
}  // namespace cudalab::ch09
"""

H90 = rs.ARCHS[90]


class Parsing(unittest.TestCase):
    def test_resource_usage_per_elf_arch_and_function(self):
        us = rs.parse_resource_usage(RES_USAGE)
        self.assertEqual([(u.arch, u.kernel) for u in us],
                         [(80, "_Z4kernILi256EEvPfi"), (80, "_Z5plainPf"), (90, "_Z4kernILi256EEvPfi")])
        plain = us[1]
        self.assertEqual((plain.regs, plain.stack, plain.local, plain.shared), (132, 16, 24, 0))
        self.assertEqual(us[2].shared, 2048)

    def test_ptx_sections_carry_no_usage(self):
        self.assertEqual(rs.parse_resource_usage("Fatbin ptx code:\narch = sm_90\n Function f:\n"), [])

    def test_max_threads_from_launch_bound(self):
        self.assertEqual(rs.parse_max_threads(ELF), {(90, "_Z4kernILi256EEvPfi"): 256})

    def test_short_name(self):
        self.assertEqual(rs.short_name("void cudalab::ch06::detail::(anonymous namespace)::sgemm_warptile_kernel"
                                       "<cudalab::ch06::detail::BiasRelu>(cudalab::ch06::detail::SgemmArgs, bool)"),
                         "sgemm_warptile_kernel<BiasRelu>")
        self.assertEqual(rs.short_name("void f(int)"), "f")
        self.assertTrue(rs.short_name("g<" + "x" * 100 + ">", 20).endswith("..."))


class Occupancy(unittest.TestCase):
    def usage(self, regs, threads, shared=0, arch=90):
        return rs.Usage("k", arch, regs, 0, 0, shared, threads)

    def test_register_cliff(self):
        # 128 registers x 256 threads: 4096 registers a warp, 4 warps per sub-partition, 2 blocks
        o = rs.occupancy(self.usage(128, 256), H90)
        self.assertEqual((o.blocks, o.warps, o.limit), (2, 16, "registers"))
        # one more register allocates 136 (units of 256 per warp): 3 warps per sub-partition, 1 block
        o = rs.occupancy(self.usage(129, 256), H90)
        self.assertEqual((o.blocks, o.warps_by_regs), (1, 12))

    def test_too_many_registers_for_the_block(self):
        self.assertEqual(rs.occupancy(self.usage(255, 1024), H90).blocks, 0)

    def test_threads_bind(self):
        o = rs.occupancy(self.usage(32, 1024), H90)
        self.assertEqual((o.blocks, o.warps), (2, 64))
        self.assertIn("threads", o.limit)

    def test_block_count_cap(self):
        o = rs.occupancy(self.usage(16, 32), H90)
        self.assertEqual((o.blocks, o.limit), (32, "blocks per SM"))

    def test_shared_memory_binds_with_reserved_kilobyte(self):
        # sm_80: 48 KiB static + 1 KiB reserved per block in 164 KiB: 3 blocks
        o = rs.occupancy(self.usage(32, 128, 48 * 1024, arch=80), rs.ARCHS[80])
        self.assertEqual((o.blocks, o.limit), (3, "shared memory"))
        # sm_90 objects already count the reserved kilobyte: 4 x 57 KiB = 228 KiB fits
        o = rs.occupancy(self.usage(32, 128, 57 * 1024), H90)
        self.assertEqual(o.blocks, 4)

    def test_no_launch_bound(self):
        o = rs.occupancy(self.usage(64, None), H90)
        self.assertIsNone(o.blocks)
        self.assertEqual(o.warps_by_regs, 32)

    def test_smaller_sm(self):
        # sm_86: 1536 threads, 16 blocks
        self.assertEqual(rs.occupancy(self.usage(32, 256, arch=86), rs.ARCHS[86]).blocks, 6)
        # sm_75: 1024 threads, shared memory in units of 256 B and no reserve: 64 KiB / 16.25 KiB
        o = rs.occupancy(self.usage(32, 128, 16 * 1024 + 1, arch=75), rs.ARCHS[75])
        self.assertEqual((o.blocks, o.limit), (3, "shared memory"))


class Limits(unittest.TestCase):
    def test_same_table_as_chapter_5(self):
        """One set of published limits: the Python table equals arch_limits.cpp's."""
        import math
        import re
        src = (Path(__file__).resolve().parent.parent / "chapters" / "05_patterns" / "cpu" / "arch_limits.cpp").read_text()
        cases = dict(re.findall(r"case (\d+):(.*?)break;", src, re.S))
        self.assertEqual(set(map(int, cases)), set(rs.ARCHS))
        for cc, body in cases.items():
            with self.subTest(cc=cc):
                f = {k: v for k, v in re.findall(r"a\.(\w+) = ([^,;]+)", body)}
                want = rs.ARCHS[int(cc)]
                self.assertEqual(int(f["max_threads_per_sm"]), want.max_threads)
                self.assertEqual(int(f["max_blocks_per_sm"]), want.max_blocks)
                self.assertEqual(math.prod(int(x) for x in f["smem_per_sm"].split("*")), want.smem)
                self.assertEqual(int(f["smem_alloc_unit"]), want.smem_unit)
                self.assertEqual(int(f["smem_reserved_per_block"]), want.reserved_smem)


class Selection(unittest.TestCase):
    def test_region_names(self):
        names = rs.region_names(SOURCE)
        self.assertEqual(names["9.1"], ["scale_kernel"])
        self.assertEqual(names["9.2"], ["add_kernel"])
        self.assertEqual(names["9.3"], ["Epilogue"])
        self.assertEqual(names["9.4"], ["launch"])

    def test_mangled_selection(self):
        self.assertTrue(rs.selects("_ZN7cudalab4ch0912_GLOBAL__N_112scale_kernelILi256EEEvPfl", ["scale_kernel"]))
        self.assertTrue(rs.selects("_ZN7cudalab4ch0921sgemm_warptile_kernelINS0_8EpilogueEEEvv", ["Epilogue"]))
        self.assertFalse(rs.selects("_Z10add_kernelPf", ["scale_kernel"]))

    def test_pick_falls_back_to_the_file_in_its_own_file_only(self):
        us = [rs.Usage("_Z1av", 90, 8, 0, 0, 0), rs.Usage("_Z1bv", 90, 8, 0, 0, 0)]
        self.assertEqual(len(rs.pick(us, ["launch"], own=True)), 2)
        self.assertEqual(rs.pick(us, ["Epilogue"], own=False), [])
        self.assertEqual([u.kernel for u in rs.pick(us, ["b"])], ["_Z1bv"])

    def test_exercise_selection_through_includers(self):
        with tempfile.TemporaryDirectory() as d:
            ref = Path(d) / "09_toy" / "reference"
            ref.mkdir(parents=True)
            (ref / "epi.cuh").write_text(SOURCE.replace('#include "common.cuh"', ""))
            (ref / "uses.cu").write_text('#include "epi.cuh"\n')
            (ref / "other.cu").write_text("int x;\n")
            sel = rs.exercise_selection(ref.parent, "9.3")
            self.assertEqual(sel, {"uses.cu": {"names": ["Epilogue"], "own": False}})

    def test_notes_flag_fewer_blocks_and_spills(self):
        mine = rs.Usage("k", 90, 129, 0, 8, 0, 256)
        ref = rs.Usage("k", 90, 128, 0, 0, 0, 256)
        notes = rs.compare_notes([("k", "yours", mine), ("k", "reference", ref)], 90)
        self.assertTrue(any("local memory" in n for n in notes))
        self.assertTrue(any("1 resident blocks per SM against the reference's 2" in n for n in notes))


if __name__ == "__main__":
    unittest.main()
