#!/usr/bin/env bash
# GPU evidence of the blind-spot tests (index width, alignment, shape classes, identity, ordering,
# stream contract):
#   cmake --preset gpu -DCUDALAB_MUTANTS=ON && cmake --build --preset gpu -j16
#   scripts/gpu_blindspots.sh OUT
# Only what scripts/gpu_suite does not already do (its reference track, its full mutation pass and
# its racecheck of the race mutants are not repeated here), so that it ends in a few minutes:
# 1. the new suites of the reference track (the *LargeGpu ones one executable at a time, as
#    scripts/lab test runs them): all must pass;
# 2. the new mutants only, as gpu_suite's step 4b runs them (labtools.run_by_executable over their
#    tests, every case but the *FaultGpu ones; the *LargeGpu suites only for the mutants that no
#    other test killed): each must be killed;
# 3. compute-sanitizer memcheck over the shape-class suites (*ShapesGpu: partial tiles, odd and
#    aligned-but-partial shapes), where an out-of-bounds read that does not change the result
#    shows; and over the one mutant that only such a read betrays
#    (ch06.sgemm_warptile_interior_ignores_n_edge: its reads past column N feed only columns that
#    are never stored, so no value test can kill it);
# then prints a summary (also OUT/summary.md, OUT/summary.json; logs under OUT/work).
# BLINDSPOT_STEPS=memcheck runs step 3 alone (when scripts/gpu_suite already ran steps 1 and 2 on the
# same commit): the new mutants are then listed as "not run here", never as killed.
set -euo pipefail
out="${1:?usage: scripts/gpu_blindspots.sh OUT [PRESET]}"
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
CHAPTERS = ["ch01", "ch03", "ch04", "ch05", "ch06", "ch07", "ch08", "ch09", "ch10", "ch11"]
# The suites this work added (their results are listed one by one).
NEW = re.compile(r"[./](Delay|Contention|[A-Za-z0-9]*(Wide|Alignment|Shapes|Identity|Ordering|Streams|Stream|Contention))"
                 r"[A-Za-z]*Gpu\.|[./](Gemv|Prefill|BiasReluScale|DecodeAttention|RgbToGray|Copy2d)LargeGpu\.|"
                 r"LargeGpu\.PastTwoToThe32")
# The mutants this work added (each must be killed).
new_mutants = set("""
ch03.vector_add_on_default_stream
ch03.saxpy_on_default_stream
ch03.grid_stride_float4_on_default_stream
ch03.rgb_to_gray_on_default_stream
ch04.strided_copy_on_default_stream
ch04.transpose_tiled_on_default_stream
ch04.poly_per_lane_on_default_stream
ch04.rotate_sum_on_default_stream
ch05.vectorized_final_pass_on_default_stream
ch05.scan_propagate_on_default_stream
ch05.histogram_zeroing_on_default_stream
ch05.three_kernels_relu_on_default_stream
ch06.cublas_sgemm_stream_not_set
ch06.sgemm_warptile_on_default_stream
ch06.conv_sum_slices_on_default_stream
ch06.bias_relu_on_default_stream
ch10.backward_column_sum_on_default_stream
ch11.gemv_int8_vector_on_default_stream
ch11.decode_combine_on_default_stream
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
ch05.stencil_vector_path_on_input_alignment
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

ONLY_MEMCHECK = os.environ.get("BLINDSPOT_STEPS", "") == "memcheck"
# 1. the new suites of the reference track
t = time.time()
ref = []
for ch in ([] if ONLY_MEMCHECK else ["common"] + CHAPTERS):
    tests = {n: v for n, v in lt.list_tests(bdir, ["reference", ch], with_command=True).items()
             if NEW.search(n)}
    ref += lt.run_by_executable(bdir, ["reference", ch], work / f"reference_{ch}", JOBS,
                                skip_suite=(lt.FAULT_SUITE, lt.LARGE_SUITE), tests=tests)
    ref += lt.run_by_executable(bdir, ["reference", ch], work / f"reference_{ch}_large", JOBS,
                                only_suite=lt.LARGE_SUITE, serial=True, tests=tests)
seconds["reference"] = time.time() - t
by_ch = {}
for r in ref:
    by_ch.setdefault(r.chapter, []).append(r)
for r in ref:
    if r.status == "failed":
        problem(f"reference test failed: {r.name}: {r.output[:300]}")
new_tests = ref

# 2. the new mutants
t = time.time()
declared = {}
for d in sorted(Path("chapters").glob("[0-9][0-9]_*")):
    ch = "ch" + d.name[:2]
    if ch not in CHAPTERS:
        continue
    ms = lt.load_mutants(d)
    for msg in lt.mutant_problems(ms, lt.reference_texts(d), d.name):
        problem(msg)
    declared.update({f"{ch}.{m['name']}": m for m in ms if f"{ch}.{m['name']}" in new_mutants})
# Two rounds to save device time: first without the *LargeGpu suites, then those (one executable
# at a time) only for the mutants that no other test killed. The verdicts are the same.
res, all_tests = [], {}
for ch in CHAPTERS:
    tests = {n: v for n, v in lt.list_tests(bdir, [lt.MUTANT_LABEL, ch], with_command=True).items()
             if lt.mutant_of(v[0]) in new_mutants}
    all_tests.update(tests)
    if ONLY_MEMCHECK:
        continue
    res += lt.run_by_executable(bdir, [lt.MUTANT_LABEL, ch], work / f"mutant_{ch}", JOBS,
                                skip_suite=(lt.FAULT_SUITE, lt.LARGE_SUITE), tests=tests)
first = lt.mutant_table(res)
alive = {n for n, c in first.items() if not c.get("failed")}
large = {name: v for name, v in all_tests.items()
         if lt.mutant_of(v[0]) in alive and not ONLY_MEMCHECK}
res += lt.run_by_executable(bdir, [lt.MUTANT_LABEL], work / "mutant_large", JOBS,
                            only_suite=lt.LARGE_SUITE, serial=True, tests=large)
counts = lt.mutant_table(res)
import concurrent.futures as cf
seconds["mutants"] = time.time() - t

# 3. memcheck over the shape-class suites, and over the mutant that only memcheck can kill
t = time.time()
exes = sorted({p for p in (bdir / "tests").rglob("reference_*")
               if p.is_file() and os.access(p, os.X_OK) and not p.suffix})
def lists_cases(e, flt):
    listed = subprocess.run([str(e), "--gtest_list_tests", "--gtest_filter=" + flt],
                            capture_output=True, text=True).stdout
    return any(l.startswith("  ") for l in listed.splitlines())
SHAPES = "*ShapesGpu.*"
MEMCHECK_MUTANT = "ch06.sgemm_warptile_interior_ignores_n_edge"
N_EDGE = "*SgemmShapesGpu.*/warptile*_128x132x128"  # N = 132: aligned rows, a partial last N tile
runs = [(e, SHAPES, "reference") for e in exes if lists_cases(e, SHAPES)]
if not runs:  # a memcheck of nothing is no evidence (test executables built elsewhere, or none)
    problem(f"no reference executable under {bdir / 'tests'} lists a {SHAPES} suite: memcheck checked nothing")
mutant_exes = sorted({v[1][0] for v in all_tests.values()
                      if lt.mutant_of(v[0]) == MEMCHECK_MUTANT and v[1]})
runs += [(Path(e), N_EDGE, "mutant") for e in mutant_exes if lists_cases(Path(e), N_EDGE)]
if runs and not shutil.which("compute-sanitizer"):
    problem("compute-sanitizer not found: no memcheck runs")
    runs = []
def memcheck(job):
    e, flt, kind = job
    log = work / f"memcheck_{kind}_{e.name}.log"
    cmd = ["compute-sanitizer", "--tool", "memcheck", "--error-exitcode", str(lt.SANITIZER_ERROR_EXITCODE),
           "--print-limit", "20", str(e), "--gtest_filter=" + flt]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, cwd=e.parent, timeout=150)
        text, code = p.stdout + p.stderr, p.returncode
    except subprocess.TimeoutExpired as x:
        text, code = f"timed out after 150 s\n{x.stdout or ''}", None
    log.write_text("$ " + " ".join(cmd) + "\n" + (text if isinstance(text, str) else text.decode()))
    return lt.parse_sanitizer(e.name, "memcheck", code, text if isinstance(text, str) else text.decode())
with cf.ThreadPoolExecutor(max_workers=JOBS) as pool:
    mc = list(pool.map(memcheck, runs))
for (e, flt, kind), r in zip(runs, mc):
    if kind == "reference" and not r.clean:
        problem(f"memcheck on the shape suites of {e.name}: {r.summary}")
memcheck_kill = [r for (e, f, kind), r in zip(runs, mc) if kind == "mutant" and r.found]
seconds["memcheck"] = time.time() - t

verdicts = {}
for name in sorted(set(declared) | set(counts)):
    c = counts.get(name, {"passed": 0, "failed": 0, "skipped": 0, "not_built": 1})
    verdicts[name] = lt.judge_mutant(c, False, [], "not run here (gpu_suite runs racecheck)")
    if name == MEMCHECK_MUTANT and memcheck_kill and verdicts[name]["state"] != "killed":
        verdicts[name].update(state="killed", killed=True,
                              killed_by=verdicts[name]["killed_by"] + ["memcheck (" + memcheck_kill[0].summary + ")"])
score = lt.mutation_score(verdicts)
for n in sorted(new_mutants):
    if ONLY_MEMCHECK and n != MEMCHECK_MUTANT:
        continue
    if n not in verdicts:
        problem(f"new mutant {n} has no verdict")
    elif verdicts[n]["state"] != "killed":
        problem(f"new mutant {n}: {verdicts[n]['state']}")
seconds["total"] = time.time() - t0

md = ["# gpu_blindspots" + (" (BLINDSPOT_STEPS=memcheck: step 3 alone)" if ONLY_MEMCHECK else ""), "",
      "Result: " + ("PASS" if summary["ok"] else "FAIL"), "",
      "| chapter | passed | failed | skipped |", "| --- | ---: | ---: | ---: |"]
for ch, rs in sorted(by_ch.items()):
    c = lt.count(rs)
    md.append(f"| {ch} | {c['passed']} | {c['failed']} | {c['skipped']} |")
c = lt.count(new_tests)
md += ["", f"New tests: {lt.count_line(c)}", "", "| class | passed | failed | skipped |",
       "| --- | ---: | ---: | ---: |"]
CLASSES = [("index width", r"LargeGpu\."), ("alignment", r"AlignmentGpu\."), ("shape classes", r"ShapesGpu\."),
           ("identity", r"(Identity|Streams)Gpu\."), ("ordering", r"(Ordering|Delay|Contention)Gpu\."),
           ("stream contract", r"StreamGpu\.")]
for label, rx in CLASSES:
    k = lt.count([r for r in new_tests if re.search(rx, r.name)])
    md.append(f"| {label} | {k['passed']} | {k['failed']} | {k['skipped']} |")
bad = [r for r in new_tests if r.status != "passed"]
md += [f"- {r.status}: {r.name}" for r in bad[:40]] + ([f"- ... {len(bad) - 40} more"] if len(bad) > 40 else [])
md += ["", "New mutants (the full mutation pass and its score are gpu_suite's): "
       + lt.score_line(score, gs.MUTATION_GOAL)]
md += ["- " + (f"{n}: not run here (BLINDSPOT_STEPS=memcheck: gpu_suite's mutation pass judges it)"
              if ONLY_MEMCHECK and n != MEMCHECK_MUTANT else lt.mutant_line(n, verdicts[n]))
       for n in sorted(new_mutants) if n in verdicts]
md += ["", f"memcheck: {sum(r.clean for r in mc)} of {len(mc)} runs clean (the mutant's run must not be)"]
md += [f"- {kind} {e.name} ({flt}): {r.summary}" for (e, flt, kind), r in zip(runs, mc)]
if summary["problems"]:
    md += ["", "Problems:"] + [f"- {p}" for p in summary["problems"][:60]]
md += ["", "Seconds: " + ", ".join(f"{k} {v:.0f}" for k, v in seconds.items())]
summary.update(seconds=seconds, score=score, reference={ch: lt.count(rs) for ch, rs in by_ch.items()},
               new_tests={r.name: r.status for r in new_tests},
               mutants={n: v["state"] for n, v in verdicts.items()},
               memcheck={f"{kind}:{e.name}": r.summary for (e, flt, kind), r in zip(runs, mc)})
(out / "summary.md").write_text("\n".join(md) + "\n")
(out / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
print("\n".join(md))
sys.exit(0 if summary["ok"] else 1)
PY
