#!/usr/bin/env python3
"""scripts/lab doctor: is this machine fit to run the lab (or to serve)? Reads, never changes.

    scripts/lab doctor                       the GPUs of this machine (NVML), the lab's binaries in
                                             the build directory (cuobjdump)
    scripts/lab doctor --json OUT.json       also the findings and the raw snapshot as JSON ('-': stdout)
    scripts/lab doctor --fake FIXTURE        a recorded answer instead of the device (fixtures/*.json,
                                             by name or path): how CI tests every verdict
    scripts/lab doctor --record OUT.json     write this machine's snapshot as a fixture
    scripts/lab doctor --build-dir DIR | --binary PATH ...   which fatbins to read
    scripts/lab doctor --only 'kernel images' [--only MIG ...]  judge these checks only

Each finding is OK, WARN, FAIL (or SKIP: not measurable here) with its fix line.

Exit status (for scripts): 0 every finding OK or SKIP; 1 at least one WARN and no FAIL; 2 usage
error (a bad argument, an unreadable fixture); 3 at least one FAIL; 4 the GPU could not be read
(no driver, NVML failed to initialize or a call failed).
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ch12_nvml as nv  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
EXIT_OK, EXIT_WARN, EXIT_USAGE, EXIT_FAIL, EXIT_NO_GPU = 0, 1, 2, 3, 4

# The CUDA compatibility rule (docs.nvidia.com/deploy/cuda-compatibility): the driver a runtime
# major version needs at least. Within a major version, an older driver of at least this floor
# runs a newer minor runtime (minor-version compatibility), without the newer minor's features
# and without JIT-compiling PTX newer than the driver.
DRIVER_FLOOR = {13: 580, 12: 525, 11: 450}

FREE_WARN, FREE_FAIL = 0.90, 0.10     # fraction of memory free on a GPU about to be used
TEMP_MARGIN_C = 5                     # WARN this close to the slowdown threshold


@dataclass
class Finding:
    check: str
    status: str      # OK | WARN | FAIL | SKIP
    detail: str
    fix: str = ""
    device: int | None = None


def _ver(v: int | None) -> str:
    return "unknown" if v is None else f"{v // 1000}.{v % 1000 // 10}"


def driver_major(s: str | None) -> int | None:
    try:
        return int(str(s).split(".")[0])
    except (TypeError, ValueError):
        return None


# ---- checks: each a function of the snapshot ------------------------------------------------------

def check_versions(snap: dict) -> list[Finding]:
    out = []
    drv, rt, cudadrv = snap.get("driver_version"), snap.get("runtime_version"), snap.get("cuda_driver_version")
    dmaj = driver_major(drv)
    if rt is None:
        out.append(Finding("driver/runtime", "SKIP", f"driver {drv}; no CUDA runtime (libcudart) found to compare with",
                           "install the CUDA toolkit (docs/toolchain.md)"))
    elif dmaj is None:
        out.append(Finding("driver/runtime", "FAIL", "the driver version is unreadable", "reinstall the NVIDIA driver"))
    else:
        rmaj = rt // 1000
        floor = DRIVER_FLOOR.get(rmaj)
        if floor is None:
            out.append(Finding("driver/runtime", "WARN", f"runtime {_ver(rt)}: no rule known for CUDA {rmaj}.x",
                               "check docs.nvidia.com/deploy/cuda-compatibility for its driver floor"))
        elif dmaj < floor:
            out.append(Finding("driver/runtime", "FAIL",
                               f"CUDA {_ver(rt)} runtime needs driver >= {floor}; this driver is {drv}: the first "
                               "CUDA call fails with cudaErrorInsufficientDriver",
                               f"install a driver >= {floor}, or build the lab with a toolkit whose major version "
                               f"this driver supports (CUDA {max((m for m, f in DRIVER_FLOOR.items() if f <= dmaj), default=11)}.x)"))
        elif cudadrv is not None and cudadrv < rt:
            out.append(Finding("driver/runtime", "WARN",
                               f"runtime {_ver(rt)} on a driver for CUDA {_ver(cudadrv)} ({drv}): runs by minor-version "
                               "compatibility, but PTX from the newer toolkit cannot be JIT-compiled and the newer "
                               "minor's driver features are missing",
                               f"ship SASS for every target GPU (no JIT), or upgrade the driver to one for CUDA {_ver(rt)}"))
        else:
            out.append(Finding("driver/runtime", "OK",
                               f"driver {drv} (CUDA {_ver(cudadrv)}) >= {floor} for runtime {_ver(rt)}"))
    tk = snap.get("toolkit_version")
    if tk and rt is not None:
        tmaj = driver_major(tk)
        if tmaj is not None and tmaj != rt // 1000:
            out.append(Finding("toolkit/runtime", "WARN", f"binaries built by nvcc {tk}, runtime library {_ver(rt)}",
                               "build and run with one toolkit (CUDA_HOME / PATH / LD_LIBRARY_PATH)"))
        else:
            out.append(Finding("toolkit/runtime", "OK", f"nvcc {tk}, runtime {_ver(rt)}"))
    return out


def _arch_num(a: str) -> tuple[int, str]:
    return nv._arch_key(a)


def kernel_image(cc: tuple[int, int], sass: list[str], ptx: list[str]) -> tuple[str, str]:
    """How a binary's kernels load on compute capability cc: ("sass", arch) when a cubin runs as is
    (same major, minor <= the GPU's; an sm_90a cubin only on 9.0), ("ptx", arch) when only PTX can
    be JIT-compiled (any PTX of a version <= cc; never an 'a' or 'f' PTX of another GPU), ("none", "")
    when the launch would fail with "no kernel image is available for execution on the device"."""
    dev = cc[0] * 10 + cc[1]
    best = None
    for a in sass:
        n, suffix = _arch_num(a)
        ok = n == dev if suffix else (n // 10 == cc[0] and n <= dev)
        if ok and (best is None or n > _arch_num(best)[0]):
            best = a
    if best:
        return "sass", best
    for a in sorted(ptx, key=_arch_num, reverse=True):
        n, suffix = _arch_num(a)
        if (n == dev) if suffix else (n <= dev):
            return "ptx", a
    return "none", ""


def check_binaries(snap: dict, dev: dict) -> list[Finding]:
    bins = snap.get("binaries")
    i = dev.get("index")
    cc = dev.get("compute_capability")
    if bins is None:
        return [Finding("kernel images", "SKIP", "cuobjdump not found: the fatbins cannot be read",
                        "put the CUDA toolkit's bin/ on PATH", i)]
    if not bins:
        return [Finding("kernel images", "WARN", "no lab binaries found to read (not built yet?)",
                        "cmake --preset gpu && cmake --build --preset gpu, then rerun the doctor", i)]
    if not cc:
        return [Finding("kernel images", "SKIP", "compute capability unreadable", "", i)]
    ccs = f"{cc[0]}.{cc[1]}"
    missing, jit, good, unread = [], [], [], []
    for b in bins:
        name = Path(b.get("path", "?")).name
        if "error" in b:
            unread.append(name)
            continue
        if not b.get("sass") and not b.get("ptx"):
            continue  # host-only executable
        kind, arch = kernel_image((cc[0], cc[1]), b.get("sass", []), b.get("ptx", []))
        {"sass": good, "ptx": jit, "none": missing}[kind].append(
            f"{name} ({arch})" if arch else f"{name} (has {', '.join(b.get('sass', []) + b.get('ptx', [])) or 'nothing'})")
    target = f"sm_{cc[0]}{cc[1]}"
    if missing:
        return [Finding("kernel images", "FAIL",
                        f"no kernel image for compute capability {ccs} in {len(missing)} of {len(bins)} binaries: "
                        f"{'; '.join(missing[:4])} — every launch would fail with 'no kernel image is available'",
                        f"rebuild for this GPU: cmake --preset gpu (native arch) or -DCMAKE_CUDA_ARCHITECTURES="
                        f"{cc[0]}{cc[1]} (the CI preset builds 80;90)", i)]
    if jit:
        return [Finding("kernel images", "WARN",
                        f"{len(jit)} binaries have only PTX for {ccs}: JIT-compiled at first launch (seconds, "
                        f"cached in ~/.nv/ComputeCache): {'; '.join(jit[:3])}",
                        f"add {target} SASS: -DCMAKE_CUDA_ARCHITECTURES={cc[0]}{cc[1]}", i)]
    if unread:
        return [Finding("kernel images", "WARN", f"cuobjdump failed on {', '.join(unread[:4])}", "rebuild them", i)]
    return [Finding("kernel images", "OK", f"{target} SASS in all {len(good)} binaries read ({good[0]}, ...)", "", i)]


def check_memory(dev: dict) -> list[Finding]:
    i, m = dev.get("index"), dev.get("memory") or {}
    total, free = m.get("total"), m.get("free")
    if not total:
        return [Finding("memory", "SKIP", "memory unreadable", "", i)]
    frac = free / total
    gib = 1 << 30
    detail = f"{free / gib:.1f} GiB free of {total / gib:.1f} GiB ({100 * frac:.0f} %)"
    if frac < FREE_FAIL:
        return [Finding("memory", "FAIL", detail + ": another process holds the GPU",
                        "find it with nvidia-smi --query-compute-apps=pid,used_memory --format=csv and stop it", i)]
    if frac < FREE_WARN:
        return [Finding("memory", "WARN", detail + f": {(total - free) / gib:.1f} GiB already used",
                        "nvidia-smi --query-compute-apps=pid,used_memory --format=csv: who holds it? "
                        "Budgets (tools: ch12_mem_budget) must start from the free figure", i)]
    return [Finding("memory", "OK", detail, "", i)]


def check_ecc(dev: dict) -> list[Finding]:
    i, e = dev.get("index"), dev.get("ecc")
    if e is None:
        return [Finding("ECC", "SKIP", "ECC not supported on this GPU", "", i)]
    out = []
    if not e.get("current"):
        out.append(Finding("ECC mode", "WARN", "ECC is off: memory errors go undetected",
                           "operator: nvidia-smi -e 1, then reboot (the lab never changes it)", i))
    elif e.get("pending") != e.get("current"):
        out.append(Finding("ECC mode", "WARN", "ECC mode change pending a reboot", "reboot the node", i))
    else:
        out.append(Finding("ECC mode", "OK", "ECC on", "", i))
    vol, agg = e.get("volatile") or {}, e.get("aggregate") or {}
    if vol.get("uncorrected", 0) > 0:
        out.append(Finding("ECC errors", "FAIL",
                           f"{vol['uncorrected']} uncorrectable (DBE) error(s) since the driver loaded: data may "
                           "be corrupt (Xid 48/94/95 in dmesg)",
                           "drain the node; look for Xid in `dmesg`; reset the GPU (operator), and RMA if it repeats", i))
    elif agg.get("uncorrected", 0) > 0:
        out.append(Finding("ECC errors", "WARN", f"{agg['uncorrected']} uncorrectable error(s) in the GPU's lifetime",
                           "watch DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS; RMA if they grow", i))
    else:
        out.append(Finding("ECC errors", "OK",
                           f"0 uncorrectable; {vol.get('corrected', 0)} corrected since the driver loaded", "", i))
    return out


def check_rows(dev: dict) -> list[Finding]:
    i, r, p = dev.get("index"), dev.get("remapped_rows"), dev.get("retired_pages")
    out = []
    if r is not None:
        if r.get("failure"):
            out.append(Finding("row remapping", "FAIL", "row remapping failed: a bank is out of spare rows",
                               "drain the node and RMA the GPU", i))
        elif r.get("pending"):
            out.append(Finding("row remapping", "WARN", f"a row remap is pending ({r.get('uncorrectable', 0)} "
                               "uncorrectable so far): it takes effect at the next GPU reset",
                               "operator: drain, then reset the GPU (nvidia-smi -r) or reboot", i))
        elif r.get("uncorrectable", 0) > 0:
            out.append(Finding("row remapping", "WARN", f"{r['uncorrectable']} rows remapped for uncorrectable errors",
                               "watch the count; RMA when it grows", i))
        else:
            out.append(Finding("row remapping", "OK", f"{r.get('correctable', 0)} correctable, 0 uncorrectable remapped "
                               "rows, none pending", "", i))
    if p is not None:
        if p.get("pending"):
            out.append(Finding("retired pages", "WARN", "page retirement pending a reboot",
                               "reboot (or reset) to retire the pages", i))
        elif p.get("dbe", 0) > 0:
            out.append(Finding("retired pages", "WARN", f"{p['dbe']} pages retired for double-bit errors",
                               "RMA past NVIDIA's retirement threshold", i))
        else:
            out.append(Finding("retired pages", "OK", f"{p.get('sbe', 0)} SBE / 0 DBE retired pages", "", i))
    if r is None and p is None:
        out.append(Finding("row remapping", "SKIP", "neither row remapping nor page retirement reported", "", i))
    return out


def check_persistence(dev: dict) -> list[Finding]:
    i, pm = dev.get("index"), dev.get("persistence_mode")
    if pm is None:
        return [Finding("persistence", "SKIP", "persistence mode not reported", "", i)]
    if not pm:
        return [Finding("persistence", "WARN", "persistence mode off: each first CUDA call re-initializes the "
                        "driver (hundreds of ms to seconds), and clocks and ECC state reset between jobs",
                        "operator: enable nvidia-persistenced (or nvidia-smi -pm 1)", i)]
    return [Finding("persistence", "OK", "persistence mode on", "", i)]


def check_clocks(dev: dict) -> list[Finding]:
    i, c = dev.get("index"), dev.get("clocks") or {}
    mask = dev.get("clock_event_reasons")
    out = []
    if mask is None:
        out.append(Finding("clock events", "SKIP", "clock-event reasons not reported", "", i))
    else:
        names = nv.reason_names(mask) or ["none"]
        detail = f"reasons 0x{mask:x}: {', '.join(names)}"
        hw = mask & (0x8 | 0x40 | 0x80)
        if hw:
            out.append(Finding("clock events", "FAIL", detail + ": the hardware is slowing the clocks "
                               "(thermal, power brake or an external slowdown signal)",
                               "check cooling and the power supply (nvidia-smi -q -d PERFORMANCE,TEMPERATURE); "
                               "drain the node until it clears", i))
        elif mask & 0x20:
            out.append(Finding("clock events", "WARN", detail + ": the driver lowers clocks to cool the GPU",
                               "check airflow and inlet temperature; compare DCGM_FI_DEV_THERMAL_VIOLATION over time", i))
        elif mask & 0x4:
            lim, dft = (dev.get("power") or {}).get("limit_w"), (dev.get("power") or {}).get("default_limit_w")
            lowered = lim and dft and lim < dft
            out.append(Finding("clock events", "WARN", detail + ": at the power limit" +
                               (f" ({lim:.0f} W, lowered from the default {dft:.0f} W)" if lowered else ""),
                               "operator: restore the default limit (nvidia-smi -rpl or -pl); the lab never "
                               "changes it" if lowered else "expected under a heavy GEMM; benchmarks report it "
                               "(clock_event_reasons in their JSON)", i))
        elif mask & 0x2:
            out.append(Finding("clock events", "WARN", detail + ": application clocks are set below the maximum",
                               "operator: nvidia-smi -rac (reset application clocks)", i))
        else:
            out.append(Finding("clock events", "OK", detail, "", i))
    sm, smax, mem, mmax = c.get("sm"), c.get("sm_max"), c.get("mem"), c.get("mem_max")
    if sm is not None and smax:
        idle = mask is not None and mask & 0x1
        detail = f"SM {sm} / {smax} MHz, memory {mem} / {mmax} MHz"
        if not idle and mask is not None and mask & nv.SLOWDOWN_BITS and sm < 0.9 * smax:
            out.append(Finding("clocks", "WARN", detail + f": {100 * sm / smax:.0f} % of the maximum under load",
                               "see the clock events above; watch it: tools/throttle_watch.py", i))
        else:
            out.append(Finding("clocks", "OK", detail + (" (idle: low clocks are normal)" if idle and sm < smax else ""),
                               "", i))
    return out


def check_power_temp(dev: dict) -> list[Finding]:
    i, p, t = dev.get("index"), dev.get("power") or {}, dev.get("temperature") or {}
    out = []
    use, lim, dft = p.get("usage_w"), p.get("limit_w"), p.get("default_limit_w")
    if use is not None and lim:
        if dft and lim < 0.95 * dft:
            out.append(Finding("power", "WARN", f"{use:.0f} W of a {lim:.0f} W limit, below the default {dft:.0f} W",
                               "operator: nvidia-smi -rpl restores the default (the lab never changes it)", i))
        else:
            out.append(Finding("power", "OK", f"{use:.0f} W of a {lim:.0f} W limit", "", i))
    g, slow = t.get("gpu"), t.get("slowdown")
    if g is not None:
        if slow and g >= slow:
            out.append(Finding("temperature", "FAIL", f"{g} C, at or past the {slow} C slowdown threshold",
                               "check cooling now; drain the node", i))
        elif slow and g >= slow - TEMP_MARGIN_C:
            out.append(Finding("temperature", "WARN", f"{g} C, within {TEMP_MARGIN_C} C of the {slow} C slowdown "
                               "threshold", "check airflow; a sustained load will slow down", i))
        else:
            out.append(Finding("temperature", "OK", f"{g} C" + (f" (slowdown at {slow} C)" if slow else ""), "", i))
    return out


def check_mig(dev: dict) -> list[Finding]:
    i, m = dev.get("index"), dev.get("mig")
    if m is None:
        return [Finding("MIG", "SKIP", "MIG not supported on this GPU", "", i)]
    out = []
    if m.get("pending") != m.get("current"):
        out.append(Finding("MIG", "WARN", f"MIG mode change pending ({'on' if m.get('pending') else 'off'} after "
                           "the next GPU reset)", "operator: reset the GPU when drained", i))
    if not m.get("current"):
        out.append(Finding("MIG", "OK", "MIG off: the whole GPU is one CUDA device", "", i))
        return out
    inst = m.get("instances") or []
    if not inst:
        out.append(Finding("MIG", "FAIL", "MIG on with no instance: CUDA sees no device on this GPU "
                           "(cudaGetDeviceCount counts 0 for it)",
                           "operator: create instances (nvidia-smi mig -cgi 1g.18gb,... -C) or turn MIG off "
                           "(nvidia-smi -mig 0); the lab never toggles it", i))
        return out
    gib = 1 << 30
    desc = "; ".join(f"MIG {k.get('index')}: {k.get('sm_count')} SMs, {k.get('memory_total', 0) / gib:.2f} GiB, "
                     f"{k.get('copy_engines')} copy engines" for k in inst)
    out.append(Finding("MIG", "OK", f"MIG on, {len(inst)} instance(s): {desc}; benchmarks report per instance",
                       "", i))
    return out


def check_pcie(dev: dict) -> list[Finding]:
    i, p = dev.get("index"), dev.get("pcie") or {}
    gen, gmax, w, wmax = p.get("gen"), p.get("gen_max"), p.get("width"), p.get("width_max")
    if None in (gen, gmax, w, wmax):
        return [Finding("PCIe", "SKIP", "PCIe link not reported", "", i)]
    detail = f"Gen{gen} x{w} (max Gen{gmax} x{wmax})"
    idle = (dev.get("clock_event_reasons") or 0) & 0x1
    if w < wmax:
        return [Finding("PCIe", "WARN", detail + f": the link trained at {w} lanes, host<->device copies run at "
                        f"{w}/{wmax} of their speed", "reseat the card or check the slot / riser (BIOS: link width)", i)]
    if gen < gmax:
        if idle:
            return [Finding("PCIe", "OK", detail + ": an idle GPU drops its link generation to save power; rerun "
                            "under load to see the trained speed", "", i)]
        return [Finding("PCIe", "WARN", detail + ": the link runs below its generation under load",
                        "check the slot, riser and BIOS PCIe settings", i)]
    return [Finding("PCIe", "OK", detail, "", i)]


def check_nvlink(dev: dict) -> list[Finding]:
    i, n = dev.get("index"), dev.get("nvlink") or {}
    links, active = n.get("links", 0), n.get("active", 0)
    if not links:
        return [Finding("NVLink", "SKIP", "no NVLink on this GPU", "", i)]
    if active < links:
        return [Finding("NVLink", "WARN", f"{active} of {links} NVLinks active: multi-GPU traffic is slower",
                        "nvidia-smi nvlink -s; check the fabric manager (systemctl status nvidia-fabricmanager)", i)]
    return [Finding("NVLink", "OK", f"{active} of {links} links active", "", i)]


def diagnose(snap: dict) -> list[Finding]:
    out = check_versions(snap)
    for dev in snap.get("devices", []):
        for chk in (lambda d: check_binaries(snap, d), check_memory, check_ecc, check_rows, check_persistence,
                    check_clocks, check_power_temp, check_mig, check_pcie, check_nvlink):
            out += chk(dev)
    return out


def exit_code(findings: list[Finding]) -> int:
    st = {f.status for f in findings}
    return EXIT_FAIL if "FAIL" in st else EXIT_WARN if "WARN" in st else EXIT_OK


def render(snap: dict, findings: list[Finding], quiet: bool = False) -> str:
    """The report; quiet lists only WARN and FAIL findings, the tally still counts every one."""
    lines = [f"cudalab doctor ({snap.get('source', '?')}): driver {snap.get('driver_version')}, "
             f"runtime {_ver(snap.get('runtime_version'))}, nvcc {snap.get('toolkit_version') or '?'}"]
    for d in snap.get("devices", []):
        cc = d.get("compute_capability")
        lines.append(f"GPU {d.get('index')}: {d.get('name')} (cc {cc[0]}.{cc[1]})" if cc else
                     f"GPU {d.get('index')}: {d.get('name')}")
    for f in findings:
        if quiet and f.status not in ("WARN", "FAIL"):
            continue
        where = "" if f.device is None else f"[{f.device}] "
        lines.append(f"{f.status:<4}  {where}{f.check:<16} {f.detail}")
        if f.fix and f.status in ("WARN", "FAIL"):
            lines.append(f"      fix: {f.fix}")
    n = {s: sum(f.status == s for f in findings) for s in ("OK", "WARN", "FAIL", "SKIP")}
    code = exit_code(findings)
    lines.append(f"doctor: {n['OK']} ok, {n['WARN']} warn, {n['FAIL']} fail, {n['SKIP']} skipped -> exit {code}")
    return "\n".join(lines)


def default_build_dir() -> Path | None:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import labtools as lt
        return lt.build_dir(lt.default_preset())
    except Exception:  # labtools missing (a copied tool): no build to read
        return None


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # usage errors exit 2 (argparse's default too), never a traceback
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"doctor: {message}\n")


def main(argv: list[str] | None = None) -> int:
    ap = _Parser(prog="scripts/lab doctor", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fake", metavar="FIXTURE", help="a recorded snapshot (fixtures/NAME.json or a path)")
    ap.add_argument("--json", metavar="OUT", help="write findings + snapshot as JSON ('-': stdout)")
    ap.add_argument("--record", metavar="OUT", help="write the snapshot (a new fixture)")
    ap.add_argument("--build-dir", type=Path,
                    help="the build whose fatbins to read (default: this machine's; unused with --fake)")
    ap.add_argument("--binary", type=Path, action="append", help="a binary to read instead (repeatable)")
    ap.add_argument("-q", "--quiet", action="store_true", help="print only WARN and FAIL findings")
    ap.add_argument("--only", action="append", metavar="CHECK",
                    help="judge only this check (repeatable; e.g. 'kernel images', MIG): the exit status is theirs")
    args = ap.parse_args(argv)
    if args.binary:
        for b in args.binary:
            if not b.is_file():
                ap.error(f"--binary {b}: no such file")
    if args.build_dir is not None and not args.fake and not args.build_dir.is_dir():  # unused with --fake
        ap.error(f"--build-dir {args.build_dir}: not a directory")
    try:
        backend = nv.open_backend(args.fake)
    except nv.FixtureError as e:
        ap.error(str(e))
    except nv.NvmlError as e:
        print(f"doctor: cannot read the GPU: {e}", file=sys.stderr)
        print("      fix: install the NVIDIA driver (nvidia-smi must work), or run on a GPU machine", file=sys.stderr)
        return EXIT_NO_GPU
    try:
        if isinstance(backend, nv.Fake):
            snap = backend.snapshot()
        else:
            # cuobjdump takes seconds a binary: only when the kernel-image check is asked for
            skip_bins = bool(args.only) and "kernel images" not in args.only
            snap = backend.snapshot(args.build_dir or default_build_dir(), [] if skip_bins else args.binary)
    except nv.NvmlError as e:
        print(f"doctor: an NVML call failed: {e}", file=sys.stderr)
        return EXIT_NO_GPU
    finally:
        backend.close()
    findings = diagnose(snap)
    if args.only:
        known = {f.check for f in findings}
        unknown = [c for c in args.only if c not in known]
        if unknown:
            ap.error(f"--only {', '.join(unknown)}: no such check here (checks: {', '.join(sorted(known))})")
        findings = [f for f in findings if f.check in args.only]
    code = exit_code(findings)
    if args.json != "-":
        print(render(snap, findings, args.quiet))
    doc = {"exit": code, "findings": [asdict(f) for f in findings], "snapshot": snap}
    try:
        if args.json == "-":
            print(json.dumps(doc, indent=1))
        elif args.json:
            Path(args.json).write_text(json.dumps(doc, indent=1) + "\n")
        if args.record:
            rec = dict(snap)
            rec.pop("source", None)
            Path(args.record).write_text(json.dumps(rec, indent=1) + "\n")
    except OSError as e:
        print(f"doctor: cannot write: {e}", file=sys.stderr)
        return EXIT_USAGE
    return code


if __name__ == "__main__":
    sys.exit(main())
