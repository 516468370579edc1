#!/usr/bin/env bash
# GPU evidence of the blind-spot tests (index width, alignment, shape classes, identity, ordering):
#   cmake --preset gpu -DCUDALAB_MUTANTS=ON && cmake --build --preset gpu -j16
#   scripts/gpu_check_h26.sh OUT
# 1. the reference track of the chapters touched (every test, the *LargeGpu suites one executable
#    at a time, as scripts/lab test runs them): all must pass;
# 2. the mutation pass of those chapters, as scripts/gpu_suite's step 4b does it (labtools:
#    run_by_executable over the mutant label, racecheck for race = true through gpu_suite's own
#    sanitize()): the verdict of every mutant, the new ones listed, and the score;
# 3. compute-sanitizer memcheck over the shape-class suites (*ShapesGpu: partial tiles, odd and
#    aligned-but-partial shapes), where an out-of-bounds read that does not change the result
#    shows;
# then prints a summary (also OUT/summary.md, OUT/summary.json; logs under OUT/work).
set -euo pipefail
out="${1:?usage: scripts/gpu_check_h26.sh OUT [PRESET]}"
preset="${2:-gpu}"
mkdir -p "$out"
cd "$(dirname "$0")/.."
exec python3 - "$out" "$preset" <<'PY'
import importlib.machinery, importlib.util, json, os, re, shutil, subprocess, sys, time
from pathlib import Path
sys.path.insert(0, "scripts")
import labtools as lt
loader = importlib.machinery.SourceFileLoader("gpu_suite", "scripts/gpu_suite")
spec = importlib.util.spec_from_loader("gpu_suite", loader)
gs = importlib.util.module_from_spec(spec)
loader.exec_module(gs)

out = Path(sys.argv[1]).resolve()
work = out / "work"
work.mkdir(parents=True, exist_ok=True)
bdir = lt.build_dir(sys.argv[2])
JOBS = int(os.environ.get("JOBS", "16"))
CHAPTERS = ["ch01", "ch03", "ch04", "ch05", "ch06", "ch07", "ch08", "ch11"]
# The suites this work added (their results are listed one by one).
NEW = re.compile(r"[./](Delay|Contention|[A-Za-z0-9]*(Wide|Alignment|Shapes|Identity|Ordering|Streams|Contention))"
                 r"[A-Za-z]*Gpu\.|[./](Gemv|Prefill|BiasReluScale|DecodeAttention|RgbToGray|Copy2d)LargeGpu\.|"
                 r"LargeGpu\.PastTwoToThe32")
# The mutants this work added (each must be killed).
new_mutants = set("""
ch01.graph_cache_key_without_x
ch01.graph_cache_key_without_y
ch01.graph_launched_on_legacy_stream
ch03.vector_add_u32_product
ch03.saxpy_u32_product
ch03.rgb_gray_int_row_offset
ch03.rgb_rgb_int_row_offset
ch03.grid_stride_float4_on_inputs_alignment
ch03.grid_stride_float4_on_output_alignment
ch05.load_two_u32_product
ch05.lookback_tile_base_u32_product
ch05.lookback_vector_path_on_input_alignment
ch05.unroll_vector_path_on_x_alignment
ch05.stencil_halo_bottom_unbounded
ch05.tile_scan_base_u32_product
ch06.sgemm_at_int_product
ch06.sgemm_vectorized_c_alignment_by_row_length
ch06.sgemm_async_fast_path_ignores_c
ch06.sgemm_warptile_interior_ignores_n_edge
ch06.sgemm_warptile_interior_ignores_k_tile
ch06.conv_store_vector_on_plane_size
ch06.conv_filter_vector_on_length
ch06.conv_sum_slices_vector_on_count
ch07.overlap_kernels_on_first_stream
ch07.overlap_copy_out_on_first_stream
ch07.graph_replayed_on_legacy_stream
ch08.ring_inputs_not_recorded
ch08.ring_step_does_not_wait_for_left
ch11.paged_offset_int_product
ch11.contiguous_offset_int_product
ch11.decoder_cache_fit_unchecked
ch11.decoder_staging_overwritten_in_flight
ch11.gemv_int8_row_int_product
ch11.gemv_int8_vector_path_ignores_x
ch11.gemv_fp16_vector_path_on_row_length
ch11.paged_v_cache_alignment_unchecked
ch11.contiguous_k_alignment_unchecked
ch11.prefill_q_offset_int_product
ch11.prefill_out_offset_int_product
""".split())
t0 = time.time()
seconds = {}
summary = {"ok": True, "problems": []}

def problem(msg):
    summary["ok"] = False
    summary["problems"].append(msg)
    print("PROBLEM: " + msg, flush=True)

# 1. reference tests
t = time.time()
ref = lt.run_reference(bdir, ["reference", "common"], work, JOBS)
for ch in CHAPTERS:
    ref += lt.run_reference(bdir, ["reference", ch], work, JOBS)
seconds["reference"] = time.time() - t
by_ch = {}
for r in ref:
    by_ch.setdefault(r.chapter, []).append(r)
for r in ref:
    if r.status == "failed":
        problem(f"reference test failed: {r.name}: {r.output[:300]}")
new_tests = [r for r in ref if NEW.search(r.name)]

# 2. mutants
t = time.time()
declared = {}
for d in sorted(Path("chapters").glob("[0-9][0-9]_*")):
    ch = "ch" + d.name[:2]
    if ch not in CHAPTERS:
        continue
    ms = lt.load_mutants(d)
    for msg in lt.mutant_problems(ms, lt.reference_texts(d), d.name):
        problem(msg)
    declared.update({f"{ch}.{m['name']}": m for m in ms})
# As gpu_suite's step 4b (every case but the *FaultGpu ones), in two rounds to save device time:
# first without the *LargeGpu suites, then those (one executable at a time, as scripts/lab test
# runs them) only for the mutants that no other test killed. The verdicts are the same.
res, race_exes, all_tests = [], {}, {}
for ch in CHAPTERS:
    tests = lt.list_tests(bdir, [lt.MUTANT_LABEL, ch], with_command=True)
    all_tests.update(tests)
    res += lt.run_by_executable(bdir, [lt.MUTANT_LABEL, ch], work / f"mutant_{ch}", JOBS,
                                skip_suite=(lt.FAULT_SUITE, lt.LARGE_SUITE), tests=tests)
    race_exes.update(lt.race_mutant_executables(tests, {n for n, m in declared.items() if m.get("race")}))
first = lt.mutant_table(res)
alive = {n for n, c in first.items() if not c.get("failed")}
large = {name: v for name, v in all_tests.items() if lt.mutant_of(v[0]) in alive}
res += lt.run_by_executable(bdir, [lt.MUTANT_LABEL], work / "mutant_large", JOBS,
                            only_suite=lt.LARGE_SUITE, serial=True, tests=large)
counts = lt.mutant_table(res)
jobs = [(Path(e), name) for name, m in declared.items() if m.get("race")
        for e in race_exes.get(name, []) if Path(e).exists() and gs.has_gpu_tests(Path(e))]
import concurrent.futures as cf
with cf.ThreadPoolExecutor(max_workers=JOBS) as pool:
    runs = list(pool.map(lambda j: gs.sanitize(j[0], "racecheck", work, "mutant:" + j[1]), jobs))
rc = {}
for (e, name), run in zip(jobs, runs):
    rc.setdefault(name, []).append(run)
verdicts = {}
for name in sorted(set(declared) | set(counts)):
    m = declared.get(name, {})
    c = counts.get(name, {"passed": 0, "failed": 0, "skipped": 0, "not_built": 1})
    verdicts[name] = lt.judge_mutant(c, bool(m.get("race")), rc.get(name, []), "no GPU tests")
score = lt.mutation_score(verdicts)
if score["share"] is None or score["share"] < gs.MUTATION_GOAL:
    problem(lt.score_line(score, gs.MUTATION_GOAL))
for n in new_mutants:
    if n not in verdicts:
        problem(f"new mutant {n} has no verdict")
    elif verdicts[n]["state"] != "killed":
        problem(f"new mutant {n}: {verdicts[n]['state']}")
seconds["mutants"] = time.time() - t

# 3. memcheck over the shape-class suites
t = time.time()
exes = sorted({p for p in (bdir / "tests").rglob("reference_*")
               if p.is_file() and os.access(p, os.X_OK) and not p.suffix})
shape_exes = []
for e in exes:
    listed = subprocess.run([str(e), "--gtest_list_tests", "--gtest_filter=*ShapesGpu.*"],
                            capture_output=True, text=True).stdout
    if any(l.startswith("  ") for l in listed.splitlines()):
        shape_exes.append(e)
if shape_exes and not shutil.which("compute-sanitizer"):
    problem("compute-sanitizer not found: no memcheck over the shape suites")
    shape_exes = []
def memcheck(e):
    log = work / f"memcheck_shapes_{e.name}.log"
    cmd = ["compute-sanitizer", "--tool", "memcheck", "--error-exitcode", str(lt.SANITIZER_ERROR_EXITCODE),
           "--print-limit", "20", str(e), "--gtest_filter=*ShapesGpu.*"]
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=e.parent, timeout=900)
    log.write_text("$ " + " ".join(cmd) + "\n" + p.stdout + p.stderr)
    return lt.parse_sanitizer(e.name, "memcheck", p.returncode, p.stdout + p.stderr)
with cf.ThreadPoolExecutor(max_workers=JOBS) as pool:
    mc = list(pool.map(memcheck, shape_exes))
for e, r in zip(shape_exes, mc):
    if not r.clean:
        problem(f"memcheck on the shape suites of {e.name}: {r.summary}")
seconds["memcheck"] = time.time() - t
seconds["total"] = time.time() - t0

md = ["# gpu_check_h26", "", "Result: " + ("PASS" if summary["ok"] else "FAIL"), "",
      "| chapter | passed | failed | skipped |", "| --- | ---: | ---: | ---: |"]
for ch, rs in sorted(by_ch.items()):
    c = lt.count(rs)
    md.append(f"| {ch} | {c['passed']} | {c['failed']} | {c['skipped']} |")
c = lt.count(new_tests)
md += ["", f"New tests: {lt.count_line(c)}", "", "| class | passed | failed | skipped |",
       "| --- | ---: | ---: | ---: |"]
CLASSES = [("index width", r"LargeGpu\."), ("alignment", r"AlignmentGpu\."), ("shape classes", r"ShapesGpu\."),
           ("identity", r"(Identity|Streams)Gpu\."), ("ordering", r"(Ordering|Delay|Contention)Gpu\.")]
for label, rx in CLASSES:
    k = lt.count([r for r in new_tests if re.search(rx, r.name)])
    md.append(f"| {label} | {k['passed']} | {k['failed']} | {k['skipped']} |")
bad = [r for r in new_tests if r.status != "passed"]
md += [f"- {r.status}: {r.name}" for r in bad[:40]] + ([f"- ... {len(bad) - 40} more"] if len(bad) > 40 else [])
md += ["", lt.score_line(score, gs.MUTATION_GOAL), "", "New mutants:"]
md += ["- " + lt.mutant_line(n, verdicts[n]) for n in sorted(new_mutants) if n in verdicts]
md += ["", "Other survivors: " + ", ".join(n for n in score["survivors"] if n not in new_mutants)]
md += ["", f"memcheck over *ShapesGpu.*: {sum(r.clean for r in mc)} of {len(mc)} executables clean"]
md += [f"- {e.name}: {r.summary}" for e, r in zip(shape_exes, mc)]
if summary["problems"]:
    md += ["", "Problems:"] + [f"- {p}" for p in summary["problems"][:60]]
md += ["", "Seconds: " + ", ".join(f"{k} {v:.0f}" for k, v in seconds.items())]
summary.update(seconds=seconds, score=score, reference={ch: lt.count(rs) for ch, rs in by_ch.items()},
               new_tests={r.name: r.status for r in new_tests},
               mutants={n: v["state"] for n, v in verdicts.items()},
               memcheck={e.name: r.summary for e, r in zip(shape_exes, mc)})
(out / "summary.md").write_text("\n".join(md) + "\n")
(out / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
print("\n".join(md))
sys.exit(0 if summary["ok"] else 1)
PY
