"""Unit tests of the instructor tools: answer leaks in starter files, splicing a submission's
exercise regions into a clean starter, and the handout's contents (scripts/regions.py,
scripts/handout.py), on small synthetic files."""
from __future__ import annotations

import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import handout  # noqa: E402
import regions  # noqa: E402

REF = """\
#include "x.hpp"

__global__ void add(const float* a, const float* b, float* c, std::size_t n) {
  // BEGIN EXERCISE 3.2
  // TODO(3.2): one thread per element; c = a + b for i < n.
  // STARTER: (void)a; (void)b; (void)c; (void)n;
  const std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];  // the guard
  // END EXERCISE
}

__global__ void warp_sum(float* v) {
  float x = v[threadIdx.x];
  // BEGIN EXERCISE 5.2
  // TODO(5.2): reduce x over the warp; lane 0 holds the sum.
  for (unsigned offset = 16; offset > 0; offset /= 2) x += __shfl_down_sync(kFullMask, x, offset);
  // END EXERCISE
  if (threadIdx.x == 0) *v = x;
}
"""

STARTER = """\
// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/03_x/reference/add.cu by scripts/variants.py.)
#include "x.hpp"

__global__ void add(const float* a, const float* b, float* c, std::size_t n) {
  // TODO(3.2): one thread per element; c = a + b for i < n.
  (void)a; (void)b; (void)c; (void)n;
}

__global__ void warp_sum(float* v) {
  float x = v[threadIdx.x];
  // TODO(5.2): reduce x over the warp; lane 0 holds the sum.
  if (threadIdx.x == 0) *v = x;
}
"""


def regs():
    return [("ref/add.cu", r) for r in regions.parse(REF, "add.cu")[1]]


class Leaks(unittest.TestCase):
    def test_clean_starter_has_no_leak(self):
        self.assertEqual(regions.leaks_in(regs(), {"starter/add.cu": STARTER}), [])

    def test_todo_that_spells_out_the_loop_body(self):
        leaky = STARTER.replace("// TODO(5.2): reduce x over the warp; lane 0 holds the sum.",
                                "// TODO(5.2): for offset = 16 .. 1:  x += __shfl_down_sync(kFullMask, x, offset);")
        found = regions.leaks_in(regs(), {"starter/add.cu": leaky})
        self.assertEqual([l.exercise for l in found], ["5.2"])

    def test_solution_in_a_worked_example_of_the_same_chapter(self):
        worked = "__global__ void other(const float* a, const float* b, float* c, std::size_t n) {\n" \
                 "  const std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;\n" \
                 "  if (i < n) c[i] = a[i] + b[i];\n}\n"
        found = regions.leaks_in(regs(), {"starter/add.cu": STARTER, "starter/other.cu": worked})
        self.assertEqual([(l.exercise, l.starter) for l in found], [("3.2", "starter/other.cu")])

    def test_whitespace_does_not_hide_a_leak(self):
        worked = "int f() {\n  const std::size_t i=std::size_t{blockIdx.x}*blockDim.x+threadIdx.x;\n" \
                 "  if(i<n)   c[i]=a[i]+b[i];\n}\n"
        self.assertEqual(len(regions.leaks_in(regs(), {"w.cu": worked})), 1)

    def test_contract_in_a_comment_is_not_a_leak(self):
        # single-letter names and C++ words do not count: `c[i] = a[i] + b[i]` states the contract
        self.assertEqual(regions.leaks_in(regs(), {"s.cu": "// c[i] = a[i] + b[i] for every i < n\n"}), [])


class Splice(unittest.TestCase):
    SOLVED = STARTER.replace("  (void)a; (void)b; (void)c; (void)n;\n",
                             "  const std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x;\n"
                             "  if (i < n) c[i] = b[i] + a[i];\n")

    def test_segmentation_of_the_clean_starter(self):
        segs = regions.segment_starter(REF, STARTER, "add.cu")
        self.assertEqual([s[0].exercise for s in segs if isinstance(s, tuple)], ["3.2", "5.2"])

    def test_regions_are_taken_and_nothing_else(self):
        # the student also changed code outside the regions: that is not taken
        student = self.SOLVED.replace('#include "x.hpp"', '#include "mine.hpp"')
        student = student.replace("  if (threadIdx.x == 0) *v = x;\n}", "  if (threadIdx.x == 0) *v = x;\n  *v = 42.0f;\n}")
        student = student.replace("// TODO(5.2): reduce x over the warp; lane 0 holds the sum.\n",
                                  "// TODO(5.2): reduce x over the warp; lane 0 holds the sum.\n"
                                  "  x = __reduce_add_sync(kFullMask, x);\n")
        text, rep = regions.splice_file(REF, STARTER, student, "add.cu")
        self.assertIn("if (i < n) c[i] = b[i] + a[i];", text)
        self.assertIn("x = __reduce_add_sync(kFullMask, x);", text)
        self.assertIn("if (threadIdx.x == 0) *v = x;", text)
        self.assertNotIn("42.0f", text)
        self.assertNotIn("mine.hpp", text)
        self.assertEqual([(r.exercise, r.status) for r in rep], [("3.2", "submitted"), ("5.2", "submitted")])
        self.assertFalse(any(r.identical_to_reference for r in rep))

    def test_untouched_and_missing_file(self):
        text, rep = regions.splice_file(REF, STARTER, STARTER, "add.cu")
        self.assertEqual(text, STARTER)
        self.assertEqual({r.status for r in rep}, {"untouched"})
        text, rep = regions.splice_file(REF, STARTER, None, "add.cu")
        self.assertEqual(text, STARTER)

    def test_copy_of_the_reference_is_flagged(self):
        student = STARTER.replace("  (void)a; (void)b; (void)c; (void)n;\n",
                                  "  const std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;\n"
                                  "  if (i < n) c[i] = a[i] + b[i];   // mine\n")
        _, rep = regions.splice_file(REF, STARTER, student, "add.cu")
        self.assertTrue(rep[0].identical_to_reference)
        self.assertFalse(rep[1].identical_to_reference)

    def test_changed_surroundings_keep_the_starter(self):
        student = self.SOLVED.replace("__global__ void add(", "__global__ void add_renamed(")
        student = student.replace("std::size_t n) {\n", "std::size_t n)\n{\n", 1)
        text, rep = regions.splice_file(REF, STARTER, student, "add.cu")
        self.assertEqual(rep[0].status, "not found")
        self.assertIn("(void)a; (void)b;", text)


class MarkedRegions(unittest.TestCase):
    """The handout's starter files mark their regions and a HELPERS region; --submission takes
    them by their marks, whatever the student changed around them."""

    def handout(self):
        return regions.mark_regions(REF, STARTER, "add.cu")

    def test_marks_and_helpers_in_the_handout_text(self):
        h = self.handout()
        self.assertIn("  // BEGIN EXERCISE 3.2\n  // TODO(3.2)", h)
        self.assertIn("  // END EXERCISE 3.2\n}", h)
        self.assertIn('#include "x.hpp"\n\n// BEGIN HELPERS\n', h)
        self.assertEqual([r.exercise for r in regions.parse(h)[1]], ["3.2", "5.2"])
        # untouched, it splices back to the clean starter
        text, rep = regions.splice_file(REF, STARTER, h, "add.cu")
        self.assertEqual(text, STARTER)
        self.assertEqual({r.status for r in rep}, {"untouched"})

    def test_helpers_are_kept_and_edited_neighbours_do_not_matter(self):
        h = self.handout()
        h = h.replace("// END HELPERS", "__device__ float twice(float x) { return 2 * x; }\n// END HELPERS")
        h = h.replace("  (void)a; (void)b; (void)c; (void)n;", "  const std::size_t i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                      "  if (i < n) c[i] = twice(a[i]) - a[i] + b[i];")
        # the student reformatted the lines around 3.2's region: the marks still place it
        h = h.replace("std::size_t n) {\n", "std::size_t n)\n{\n", 1).replace("void add(", "void add_renamed(")
        text, rep = regions.splice_file(REF, STARTER, h, "add.cu")
        self.assertEqual([(r.exercise, r.status, r.review) for r in rep], [("3.2", "submitted", ""), ("5.2", "untouched", "")])
        self.assertIn("__device__ float twice(float x)", text)
        self.assertIn("c[i] = twice(a[i]) - a[i] + b[i];", text)
        self.assertNotIn("add_renamed", text)
        self.assertLess(text.index("twice(float x)"), text.index("__global__ void add("))

    def test_a_region_whose_marks_were_deleted_needs_review(self):
        h = self.handout().replace("  // BEGIN EXERCISE 5.2\n", "")
        text, rep = regions.splice_file(REF, STARTER, h, "add.cu")
        r = {x.exercise: x for x in rep}
        self.assertEqual(r["5.2"].status, "not found")
        self.assertIn("BEGIN EXERCISE 5.2", r["5.2"].review)
        self.assertEqual(r["3.2"].review, "")

    def test_the_only_region_without_its_begin_mark_needs_review(self):
        one = REF.split("__global__ void warp_sum")[0]
        starter = STARTER.split("__global__ void warp_sum")[0]
        h = regions.mark_regions(one, starter, "add.cu").replace("  // BEGIN EXERCISE 3.2\n", "")
        _, rep = regions.splice_file(one, starter, h, "add.cu")
        self.assertEqual([(r.exercise, r.status) for r in rep], [("3.2", "not found")])
        self.assertIn("BEGIN EXERCISE 3.2", rep[0].review)

    def test_an_unclosed_region_and_unclosed_helpers_need_review(self):
        h = self.handout().replace("  // END EXERCISE 3.2\n", "")
        _, rep = regions.splice_file(REF, STARTER, h, "add.cu")
        self.assertIn("no '// END EXERCISE'", {x.exercise: x for x in rep}["3.2"].review)
        h = self.handout().replace("// END HELPERS\n", "")
        _, rep = regions.splice_file(REF, STARTER, h, "add.cu")
        self.assertTrue(all("END HELPERS" in x.review for x in rep))

    def test_helpers_index(self):
        self.assertEqual(regions.helpers_index(["// c", "#pragma once", "#include <a>", "", "#include <b>", "int x;"]), 5)
        self.assertEqual(regions.helpers_index(["/* a", "b */", "int x;"]), 2)


class Handout(unittest.TestCase):
    def test_handout_text_drops_pitfall_markup_and_generated_line(self):
        src = STARTER.replace("  float x = v[threadIdx.x];\n",
                              "  // BEGIN PITFALL unguarded EXERCISES 5.2\n  // Lesson: a read past n.\n"
                              "  float x = v[threadIdx.x];\n  // BUG: float x = v[threadIdx.x + 1];\n  // END PITFALL\n")
        out = regions.handout_text(src)
        for m in ("PITFALL", "BUG", "Lesson", "Generated from", "reference/"):
            self.assertNotIn(m, out)
        self.assertIn("float x = v[threadIdx.x];", out)

    def test_handout_contents(self):
        with tempfile.TemporaryDirectory() as tmp:
            root, out = Path(tmp) / "repo", Path(tmp) / "out"
            files = {"chapters/03_x/reference/add.cu": REF, "chapters/03_x/starter/add.cu": STARTER,
                     "chapters/03_x/pitfalls/bug.cu": REF, "chapters/03_x/mutants.toml": "",
                     "chapters/03_x/CMakeLists.txt": "lab_chapter(ch03)\n", "tests/ch03/t.cpp": "",
                     "docs/instructors.md": "", "docs/getting-started.md": "", "scripts/gen_starter.py": "",
                     ".ci/run": "", "README.md": ""}
            for rel, text in files.items():
                (root / rel).parent.mkdir(parents=True, exist_ok=True)
                (root / rel).write_text(text)
            subprocess.run(["git", "init", "-q"], cwd=root, check=True)
            subprocess.run(["git", "add", "-A"], cwd=root, check=True)
            subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "x"], cwd=root, check=True)
            out.mkdir()
            written = set(handout.write(root, out))
            self.assertEqual(written, {"chapters/03_x/starter/add.cu", "chapters/03_x/CMakeLists.txt",
                                       "tests/ch03/t.cpp", "docs/getting-started.md", "README.md", ".cudalab-handout"})
            self.assertEqual(handout.check(root, out), [])
            shown = (out / "chapters/03_x/starter/add.cu").read_text()
            self.assertIn("// BEGIN EXERCISE 3.2", shown)
            self.assertIn("// BEGIN HELPERS", shown)
            self.assertEqual((out / handout.PRISTINE / "chapters/03_x/starter/add.cu").read_text(), shown)
            # a leaky starter is caught by the handout's own check
            (out / "chapters/03_x/starter/add.cu").write_text(STARTER.replace(
                "// TODO(5.2): reduce x over the warp; lane 0 holds the sum.",
                "// TODO(5.2): x += __shfl_down_sync(kFullMask, x, offset) for offset = 16, 8, 4, 2, 1"))
            self.assertTrue(any("5.2" in p for p in handout.check(root, out)))


class HandoutMarkdown(unittest.TestCase):
    def test_blocks(self):
        md = ("# T\n<!-- full-tree begin -->\nsee [the solutions](chapters/x/reference/)\n<!-- full-tree end -->\n"
              "<!-- handout-only\nread [the guide](docs/student-guide.md)\n-->\nend\n")
        self.assertEqual(handout.handout_markdown(md), "# T\nread [the guide](docs/student-guide.md)\nend\n")
        self.assertNotIn("student-guide", handout.full_markdown(md))
        self.assertIn("reference/", handout.full_markdown(md))

    def test_broken_links(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp)
            (out / "docs").mkdir()
            (out / "docs/a.md").write_text("[ok](../README.md) [web](https://x.org) [anchor](#x) [gone](instructors.md)\n")
            (out / "README.md").write_text("[ok](docs/a.md#sec) [up](../outside.md)\n")
            bad = handout.broken_links(out)
            self.assertEqual(len(bad), 2, bad)
            self.assertTrue(any("instructors.md" in b for b in bad))
            self.assertTrue(any("outside.md" in b for b in bad))


if __name__ == "__main__":
    unittest.main()
