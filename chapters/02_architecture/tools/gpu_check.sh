#!/usr/bin/env bash
# Every GPU check of chapter 2 in one go (for the H200 run), after
#   cmake --preset gpu && cmake --build --preset gpu
# Usage: chapters/02_architecture/tools/gpu_check.sh OUT
# Writes OUT/ch02_tests.log (ctest of ch02: reference and pitfall tracks, GPU and CPU cases),
# OUT/ch02_card.{json,md,png} and OUT/ch02_card_bench.json (scripts/lab gpu-card: every
# benchmark row once), OUT/bench/bench_ch02.json (the same JSON, named for
# `scripts/results.py --import OUT/bench`), OUT/gpu_card.log; then prints which rows met their
# goals. About 2-3 minutes on an H200.
set -uo pipefail
OUT=${1:?usage: gpu_check.sh OUT}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$ROOT"
mkdir -p "$OUT/bench"
BUILD=build/gpu
status=0

echo "== build (ch02 targets only; the full gpu build is assumed done)"
cmake --build "$BUILD" --target ch02_sheet bench_ch02 -j 16 > "$OUT/build.log" 2>&1 || { echo "build failed: $OUT/build.log"; tail -30 "$OUT/build.log"; exit 1; }

echo "== ch02 tests (reference + pitfall tracks)"
start=$(date +%s)
timeout 120 ctest --test-dir "$BUILD" -L ch02 -LE starter --output-on-failure -j 8 --timeout 60 > "$OUT/ch02_tests.log" 2>&1
tests_rc=$?
# ctest's rc counts the pitfall and mutant tracks too, whose failures are the point (a planted bug
# caught): only a reference failure fails this step.
fails=$(grep -E "^\s+[0-9]+ - .*\((Failed|Timeout|SEGFAULT|Subprocess aborted|Not Run)\)" "$OUT/ch02_tests.log" | sort -u)
ref_fail=$(grep -cE " - reference\." <<< "$fails")
planted=$(grep -cE " - (pitfall|mutant)\." <<< "$fails")
echo "   $(grep -E 'tests passed|tests failed' "$OUT/ch02_tests.log" | tail -1) ($(( $(date +%s) - start )) s, ctest rc $tests_rc)"
echo "   reference failures: $ref_fail; pitfall/mutant failures (expected, a planted bug caught): $planted"
grep -E " - reference\." <<< "$fails"
[ "$ref_fail" -eq 0 ] || status=1

echo "== SASS: the instructions the tensor-core rows really issue (cuobjdump)"
CO=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
for f in wgmma_peak mma_sync; do
  o=$(find "$BUILD/chapters/02_architecture" -path "*ch02_reference_${f}_cu.dir*" -name "*.o" | head -1)
  [ -n "$o" ] && echo "   $f: $("$CO" -sass "$o" 2>/dev/null | grep -oE '(HGMMA|HMMA|IMMA|QMMA|WARPGROUP\.[A-Z]+)[A-Z0-9._]*' | sort | uniq -c | tr '\n' ';')"
done | tee "$OUT/sass.txt"
grep -q HGMMA "$OUT/sass.txt" || { echo "   no HGMMA in wgmma_peak: the wgmma rows do not use the Hopper path"; status=1; }

echo "== scripts/lab gpu-card (every benchmark row once, the card)"
start=$(date +%s)
timeout 200 python3 chapters/02_architecture/tools/gpu_card.py --out "$OUT" --preset gpu --no-build > "$OUT/gpu_card.log" 2>&1
card_rc=$?
echo "   gpu-card rc $card_rc ($(( $(date +%s) - start )) s); log $OUT/gpu_card.log"
[ "$card_rc" -eq 0 ] || { status=1; tail -30 "$OUT/gpu_card.log"; }
[ -f "$OUT/ch02_card_bench.json" ] && cp "$OUT/ch02_card_bench.json" "$OUT/bench/bench_ch02.json"

echo "== summary"
python3 - "$OUT" <<'PY'
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
p = out / "ch02_card.json"
if not p.exists():
    print("no card: see gpu_card.log"); sys.exit(0)
c = json.loads(p.read_text())
print(f"{c['gpu']}: ceilings " + json.dumps(c["ceilings"]))
print(f"{'row':46} {'measured':>10} {'sheet@clk':>10} {'ratio':>7} {'clock':>6}")
for r in c["rows"]:
    ratio = f"{100 * r['ratio']:.1f}%" if r.get("ratio") is not None else "-"
    m = f"{r['measured']:.1f}" if r.get("measured") is not None else "-"
    s = f"{r['sheet']:.1f}" if r.get("sheet") else "-"
    clk = f"{r['clock_MHz']:.0f}" if r.get("clock_MHz") else "-"
    flag = "  GUARD FAIL" if r.get("guard_ok") == 0 else ""
    print(f"{r['name'][:46]:46} {m:>10} {s:>10} {ratio:>7} {clk:>6}{flag}")
print("latency plateaus: " + ", ".join(f"{p['level']} {p['latency']:.0f} cyc ({p['from_bytes']/2**20:g}-{p['to_bytes']/2**20:g} MiB)"
                                       for p in c["latency"]["plateaus"]) + f"; shared {c['latency'].get('shared_cycles')}")
for e in c["littles_law"]:
    print(f"Little: {e['kernel']}: plateau {e['plateau_GBps']}, occupancy at 90% {e['occupancy_at_90pct']}, predicted {e['predicted_occupancy']}")
print("goals:")
for g in c["goals"]:
    met = (g.get("note") or "not measured") if g["met"] is None else ("MET" if g["met"] else "MISSED")
    print(f"  {g['goal']}: {g['value']} (target {g['target']}): {met}")
print("rows outside [0.5, 1.02] of their peak: " + (", ".join(
    n + (f" ({c['outside_notes'][n]})" if n in c.get("outside_notes", {}) else "")
    for n in c["outside_0_5_to_1_02"]) or "none"))
print("guard failures: " + ("; ".join(c["guard_failures"]) or "none"))
if c.get("run_notes"):
    print("run notes: " + c["run_notes"])
PY
if [ -f "$OUT/bench/bench_ch02.json" ]; then
  python3 scripts/report.py "$OUT/report" "$OUT/bench/bench_ch02.json" > "$OUT/report.log" 2>&1 && \
    grep -E "goal|x \(" "$OUT/report/report.md" | head -20
fi
echo "gpu_check ch02: status $status (reference test failures $ref_fail, gpu-card rc $card_rc)"
exit $status
