"""Registers, local memory, shared memory and the occupancy they allow, for one exercise's kernels.

`scripts/lab check N.k` prints, for the kernels of exercise N.k in the learner's build (starter
track) and in the reference's, what `cuobjdump --dump-resource-usage` reads from the compiled
objects (no GPU needed) and the blocks and warps per SM that the target architecture's register,
shared-memory and thread limits allow, so that a register cliff (one more register, half the
blocks) or a spill shows before any benchmark does.

Which kernels belong to an exercise: those whose definition contains or encloses one of its
exercise regions (`// BEGIN EXERCISE N.k` in reference/), or whose template arguments name a type
whose definition does (a fused epilogue functor); a region inside a host function that names no
kernel selects every kernel of its file; a region in a header selects through the compiled files
that include it. The threads per block are the kernel's launch bound (`__launch_bounds__`, read
from the object's EIATTR_MAX_THREADS); a kernel without one gets no block count (its warps per SM
from registers alone are still shown). Shared memory is the static part only: dynamic shared
memory is set at launch and is not in the object.

In a handout there is no reference build: `scripts/lab handout` stores the reference's figures,
when the instructor's build has the objects and cuobjdump, in `.cudalab-reference-resources.json`;
without that file the table says the reference figures are not available.
Standard library only; the parsing and the arithmetic are tested on fixture text
(scripts/test_resources.py).
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import regions  # noqa: E402  (the exercise markers' one owner)

SNAPSHOT = ".cudalab-reference-resources.json"
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
KERNEL_DEF = re.compile(r"__global__\s+(?:void\s+)?(?:__launch_bounds__\s*\([^)]*\)\s*)?(?:void\s+)?(\w+)\s*\(")
NOT_NAMES = {"if", "for", "while", "switch", "return", "sizeof", "alignas", "decltype", "static_assert",
             "__launch_bounds__", "operator", "catch", "noexcept", "template"}


@dataclass(frozen=True)
class ArchLimits:
    """Per-SM limits of one compute capability: the published figures chapter 5's occupancy
    calculator uses (chapters/05_patterns/cpu/arch_limits.cpp, its sources cited there; a unit
    test keeps the two tables equal), with cuda_occupancy.h's allocation rules."""
    max_threads: int
    max_blocks: int
    smem: int                     # shared memory per SM at the largest carveout, bytes
    smem_unit: int = 128          # allocation granularity, bytes
    reserved_smem: int = 1024     # reserved by the driver for each block (sm_80 and later)
    regs: int = 65536
    reg_unit: int = 256           # registers are allocated per warp in units of 256
    sub_partitions: int = 4       # the register file is split among the SM's 4 schedulers

    @property
    def max_warps(self) -> int:
        return self.max_threads // 32


ARCHS: dict[int, ArchLimits] = {
    70: ArchLimits(2048, 32, 96 * 1024, smem_unit=256, reserved_smem=0),
    75: ArchLimits(1024, 16, 64 * 1024, smem_unit=256, reserved_smem=0),
    80: ArchLimits(2048, 32, 164 * 1024),
    86: ArchLimits(1536, 16, 100 * 1024),
    89: ArchLimits(1536, 24, 100 * 1024),
    90: ArchLimits(2048, 32, 228 * 1024),
}


@dataclass
class Usage:
    """One kernel's resources as the object states them (cuobjdump)."""
    kernel: str                   # mangled name
    arch: int                     # SASS architecture, e.g. 90
    regs: int
    stack: int                    # bytes of stack frame per thread
    local: int                    # bytes of local memory per thread (spills, local arrays)
    shared: int                   # bytes of static shared memory per block
    threads: int | None = None    # the launch bound (max threads per block), None without one


@dataclass
class Occupancy:
    blocks: int | None            # resident blocks per SM (None: no launch bound, unknown)
    warps: int | None             # resident warps per SM
    by_regs: int | None           # blocks per SM each limit allows
    by_smem: int | None
    by_threads: int | None
    warps_by_regs: int            # warps per SM the registers allow, whatever the block size
    limit: str                    # which limit binds


def _round_up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


def warps_by_registers(regs: int, lim: ArchLimits) -> int:
    """Warps per SM the register file holds at `regs` registers per thread."""
    if regs <= 0:
        return lim.max_warps
    per_warp = _round_up(regs * 32, lim.reg_unit)
    per_part = (lim.regs // lim.sub_partitions) // per_warp
    return min(lim.max_warps, per_part * lim.sub_partitions)


def occupancy(u: Usage, lim: ArchLimits, dynamic_smem: int = 0) -> Occupancy:
    """Resident blocks and warps per SM for one kernel (the rules of cudaOccupancyMaxActiveBlocks-
    PerMultiprocessor: registers per warp in units, per sub-partition; shared memory per block with
    the reserved part, in units; threads and blocks per SM)."""
    wr = warps_by_registers(u.regs, lim)
    if not u.threads:
        return Occupancy(None, None, None, None, None, wr, "block size unknown (no launch bound)")
    warps_per_block = -(-u.threads // 32)
    by_threads = min(lim.max_blocks, lim.max_warps // warps_per_block)
    if u.regs <= 0:
        by_regs = lim.max_blocks
    elif _round_up(u.regs * 32, lim.reg_unit) * warps_per_block > lim.regs:
        by_regs = 0
    else:
        by_regs = wr // warps_per_block
    smem = u.shared + dynamic_smem
    # sm_90 and later place the reserved kilobyte inside a kernel's own shared window (the object's
    # figure already holds it when the kernel declares shared memory); earlier GPUs add it per block
    reserved = 0 if (u.arch >= 90 and u.shared >= lim.reserved_smem) else lim.reserved_smem
    per_block = _round_up(smem + reserved, lim.smem_unit)
    by_smem = lim.max_blocks if per_block == 0 else lim.smem // per_block
    blocks = min(by_threads, by_regs, by_smem)
    if by_threads == blocks and lim.max_warps // warps_per_block > blocks:
        names = [("blocks per SM", by_threads)]
    else:
        names = [("threads", by_threads)]
    names += [("registers", by_regs), ("shared memory", by_smem)]
    limit = " and ".join(n for n, b in names if b == blocks)
    return Occupancy(blocks, blocks * warps_per_block, by_regs, by_smem, by_threads, wr, limit)


# ---------------------------------------------------------------------------------------------
# cuobjdump output

_ARCH = re.compile(r"^arch = sm_(\d+)\w*\s*$")
_FUNC = re.compile(r"^\s*Function (\S+):\s*$")
_FIELD = re.compile(r"([A-Z]+(?:\[\d+\])?):(\d+)")
_INFO = re.compile(r"^\.nv\.info\.(\S+)\s*$")
_ATTR = re.compile(r"^\s*Attribute:\s*(\w+)")
_VALUE = re.compile(r"^\s*Value:\s*(.*)$")


def parse_resource_usage(text: str) -> list[Usage]:
    """`cuobjdump --dump-resource-usage` text -> one Usage per (ELF arch, function). PTX sections
    (which carry no resource usage) are skipped."""
    out: list[Usage] = []
    arch, in_elf, func = None, False, None
    for line in text.splitlines():
        if line.startswith("Fatbin "):
            in_elf, arch, func = line.startswith("Fatbin elf code"), None, None
            continue
        m = _ARCH.match(line)
        if m:
            arch = int(m.group(1))
            continue
        m = _FUNC.match(line)
        if m:
            func = m.group(1)
            continue
        if func and in_elf and arch is not None and "REG:" in line:
            f = {k: int(v) for k, v in _FIELD.findall(line)}
            out.append(Usage(func, arch, f.get("REG", 0), f.get("STACK", 0), f.get("LOCAL", 0), f.get("SHARED", 0)))
            func = None
    return out


def parse_max_threads(text: str) -> dict[tuple[int, str], int]:
    """`cuobjdump -elf` text -> {(arch, kernel): threads per block of its launch bound}
    (EIATTR_MAX_THREADS, or EIATTR_REQNTID for a required block size)."""
    out: dict[tuple[int, str], int] = {}
    arch, func, attr = None, None, None
    for line in text.splitlines():
        if line.startswith("Fatbin "):
            arch, func = None, None
            continue
        m = _ARCH.match(line)
        if m:
            arch = int(m.group(1))
            continue
        m = _INFO.match(line)
        if m:
            func, attr = m.group(1), None
            continue
        if func is None or arch is None:
            continue
        m = _ATTR.match(line)
        if m:
            attr = m.group(1)
            continue
        m = _VALUE.match(line)
        if m and attr in ("EIATTR_MAX_THREADS", "EIATTR_REQNTID"):
            dims = [int(v, 16) for v in m.group(1).split() if v.startswith("0x")]
            if dims:
                n = 1
                for d in dims:
                    n *= max(d, 1)
                out[(arch, func)] = n
            attr = None
    return out


def read_object(obj: Path, cuobjdump: str) -> list[Usage]:
    """Every kernel's Usage in one object file (every SASS architecture it holds)."""
    res = subprocess.run([cuobjdump, "--dump-resource-usage", str(obj)], capture_output=True, text=True)
    if res.returncode != 0:
        return []
    usages = parse_resource_usage(res.stdout)
    elf = subprocess.run([cuobjdump, "-elf", str(obj)], capture_output=True, text=True)
    bounds = parse_max_threads(elf.stdout) if elf.returncode == 0 else {}
    for u in usages:
        u.threads = bounds.get((u.arch, u.kernel))
    return usages


# ---------------------------------------------------------------------------------------------
# which kernels are an exercise's

def _code_only(text: str) -> str:
    """The text with comments and string/char literals blanked (same length, newlines kept)."""
    out = list(text)
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j += 1
        else:
            i += 1
            continue
        for k in range(i, min(j, n)):
            if out[k] != "\n":
                out[k] = " "
        i = j
    return "".join(out)


def _drop_template_params(s: str) -> str:
    """`template <class T, int N>` lists removed (their `class T` declares no type of the file)."""
    out, i = [], 0
    for m in re.finditer(r"\btemplate\s*<", s):
        if m.start() < i:
            continue
        out.append(s[i:m.start()])
        depth, j = 1, m.end()
        while j < len(s) and depth:
            depth += {"<": 1, ">": -1}.get(s[j], 0)
            j += 1
        i = j
    out.append(s[i:])
    return " ".join(out)


def _declared_name(header: str) -> str | None:
    """The name a definition's header declares: the type of `struct X`, else the function's."""
    header = _drop_template_params(header)
    m = re.search(r"\b(?:struct|class|union)\s+(\w+)", header)
    if m:
        return m.group(1)
    header = re.sub(r"__launch_bounds__\s*\([^)]*\)", " ", header)
    header = re.sub(r"\boperator\s*\(\s*\)", " ", header)
    for m in re.finditer(r"(\w+)\s*\(", header):
        if m.group(1) not in NOT_NAMES:
            return m.group(1)
    return None


def enclosing_names(text: str, line: int) -> list[str]:
    """Names of the definitions (outside namespaces) that enclose 0-based `line`: the outermost
    function or type, and every type in between."""
    code = _code_only(text)
    stack: list[tuple[str, str | None]] = []  # (kind, name) per open brace
    last = 0  # where the current statement's header starts
    offset = sum(len(x) + 1 for x in text.split("\n")[:line])
    for i, c in enumerate(code[:offset]):
        if c == "{":
            header = code[last:i]
            if re.search(r"\bnamespace\b", header) or re.search(r'extern\s*$', header):
                stack.append(("namespace", None))
            else:
                stack.append(("block", _declared_name(header)))
            last = i + 1
        elif c == "}":
            if stack:
                stack.pop()
            last = i + 1
        elif c == ";":
            last = i + 1
    blocks = [name for kind, name in stack if kind == "block"]
    names = []
    if blocks and blocks[0]:
        names.append(blocks[0])
    for kind, name in stack:
        if kind == "block" and name and re.search(rf"\b(?:struct|class)\s+{re.escape(name)}\b", code):
            names.append(name)
    return list(dict.fromkeys(names))


def region_names(text: str) -> dict[str, list[str]]:
    """exercise -> names (kernels defined in its regions, definitions enclosing them) in one file."""
    out: dict[str, list[str]] = {}
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = regions.BEGIN.match(lines[i])
        if not m:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and not regions.END.match(lines[j]):
            j += 1
        body = _code_only("\n".join(lines[i:j]))
        names = KERNEL_DEF.findall(body) + enclosing_names(text, i)
        ex = m.group(2)
        out.setdefault(ex, [])
        out[ex] += [n for n in names if n not in out[ex]]
        i = j + 1
    return out


def exercise_selection(chapter_dir: Path, ex: str) -> dict[str, dict]:
    """compiled file name -> {"names": the names that select the exercise's kernels in its object,
    "own": the file holds a region itself (then no match selects every kernel of the file)}, for
    the reference files of one chapter."""
    ref = chapter_dir / "reference"
    files = {p.name: p.read_text() for p in sorted(ref.glob("*")) if p.suffix in regions.SUFFIXES}
    deps = {n: set(INCLUDE.findall(t)) & set(files) for n, t in files.items()}
    sel: dict[str, dict] = {}
    for name, text in files.items():
        names = region_names(text).get(ex)
        if names is None:
            continue
        targets = {name}
        grew = True
        while grew:  # the compiled files that include this one, directly or not
            grew = False
            for n, d in deps.items():
                if n not in targets and d & targets:
                    targets.add(n)
                    grew = True
        for t in sorted(targets):
            if t.endswith(".cu"):
                e = sel.setdefault(t, {"names": [], "own": False})
                e["names"] += [n for n in names if n not in e["names"]]
                # an inlined device function selects nothing by name: every kernel of an includer
                # calls it; a type (a functor in template arguments) selects by name only
                types = any(re.search(rf"\b(?:struct|class)\s+{re.escape(n)}\b", text) for n in names)
                e["own"] = e["own"] or t == name or not types
    return sel


def selects(mangled: str, names: list[str]) -> bool:
    """A mangled kernel name holds a source name as its length-prefixed identifier (Itanium ABI),
    e.g. `25sgemm_blocktile_2d_kernel` or, in a template argument, `8BiasRelu`."""
    return any(f"{len(n)}{n}" in mangled for n in names)


def pick(usages: list[Usage], names: list[str], own: bool = True) -> list[Usage]:
    """The kernels `names` select; in the region's own file, every kernel when none matches (a
    region in a host launcher)."""
    hit = [u for u in usages if selects(u.kernel, names)] if names else []
    return hit or (list(usages) if own else [])


# ---------------------------------------------------------------------------------------------
# objects in a build directory

def object_of(bdir: Path, chapter_dir: Path, ch: str, track: str, file: str) -> Path | None:
    """The object file CMake built for chapters/<chapter>/<track>/<file> (one object library per
    source file: <ch>_<track>_<C identifier of the file name>)."""
    ident = re.sub(r"[^A-Za-z0-9_]", "_", file)
    base = bdir / "chapters" / chapter_dir.name / "CMakeFiles" / f"{ch}_{track}_{ident}.dir"
    hits = sorted(base.rglob(f"{file}.o")) if base.is_dir() else []
    return hits[0] if hits else None


def demangle(names: list[str]) -> dict[str, str]:
    """mangled -> short readable name (c++filt, without the parameter list); the mangled name
    when c++filt is missing."""
    tool = shutil.which("c++filt")
    if not tool or not names:
        return {n: n for n in names}
    res = subprocess.run([tool], input="\n".join(names), capture_output=True, text=True)
    lines = res.stdout.splitlines() if res.returncode == 0 else []
    if len(lines) != len(names):
        return {n: n for n in names}
    return {n: short_name(d) for n, d in zip(names, lines)}


def short_name(demangled: str, width: int = 64) -> str:
    """`void ns::f<8, X>(int, float*)` -> `f<8, X>` (qualification, return type and parameters
    dropped; long template arguments cut)."""
    s = demangled
    depth, cut = 0, len(s)
    for i, c in enumerate(s):  # the parameter list: the first '(' outside template brackets
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
        elif c == "(" and depth == 0 and not s.startswith("(anonymous", i):
            cut = i
            break
    s = s[:cut]
    if s.startswith("void "):
        s = s[5:]
    depth, start = 0, 0
    for i, c in enumerate(s):  # drop the qualification before the last '::' outside brackets
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
        elif depth == 0 and s.startswith("::", i):
            start = i + 2
    s = re.sub(r"(?:\(anonymous namespace\)|[A-Za-z_]\w*)::", "", s[start:])
    return s if len(s) <= width else s[:width - 3] + "..."


def track_usages(bdir: Path, chapter_dir: Path, ch: str, track: str, selection: dict[str, dict],
                 cuobjdump: str) -> tuple[list[Usage], list[str]]:
    """(the selected kernels' usages in one track's objects, the files whose object is missing)."""
    got, missing = [], []
    for file, s in selection.items():
        obj = object_of(bdir, chapter_dir, ch, track, file)
        if obj is None:
            missing.append(file)
            continue
        got += pick(read_object(obj, cuobjdump), s["names"], s["own"])
    return got, missing


def choose_arch(archs: set[int], gpu_arch: int | None) -> int | None:
    if not archs:
        return None
    if gpu_arch in archs:
        return gpu_arch
    return max(archs)


def gpu_arch() -> int | None:
    """The first visible GPU's compute capability as an int (90), or None."""
    tool = shutil.which("nvidia-smi")
    if not tool:
        return None
    try:
        res = subprocess.run([tool, "--query-gpu=compute_cap", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.match(r"\s*(\d+)\.(\d+)", res.stdout)
    return int(m.group(1)) * 10 + int(m.group(2)) if m else None


def format_table(ex: str, arch: int, rows: list[tuple[str, str, Usage]], notes: list[str]) -> list[str]:
    """rows: (kernel display name, track, usage) -> the lines `scripts/lab check` prints."""
    lim = ARCHS.get(arch)
    out = [f"resources of {ex}'s kernels (cuobjdump, sm_{arch}; static shared memory; occupancy at the launch bound):"]
    if lim is None:
        out.append(f"  (no occupancy limits known for sm_{arch}: registers and memory only)")
    w = max([len("kernel")] + [len(r[0]) for r in rows])
    out.append(f"  {'kernel':{w}} {'track':9} {'regs':>4} {'local B':>7} {'stack B':>7} {'smem B':>7} "
               f"{'threads':>7}  occupancy per SM")
    for name, track, u in rows:
        occ = occupancy(u, lim) if lim else None
        if occ is None:
            o = ""
        elif occ.blocks is None:
            o = f"{occ.warps_by_regs}/{lim.max_warps} warps by registers; {occ.limit}"
        else:
            o = (f"{occ.blocks} blocks, {occ.warps}/{lim.max_warps} warps ({occ.limit}; "
                 f"by registers {occ.by_regs}, shared {occ.by_smem}, threads {occ.by_threads})")
        thr = str(u.threads) if u.threads else "-"
        out.append(f"  {name:{w}} {track:9} {u.regs:>4} {u.local:>7} {u.stack:>7} {u.shared:>7} {thr:>7}  {o}")
    out += ["  " + n for n in notes]
    return out


def compare_notes(rows: list[tuple[str, str, Usage]], arch: int) -> list[str]:
    """What a learner should look at: spills, and fewer resident blocks than the reference's."""
    lim = ARCHS.get(arch)
    notes = []
    by_kernel: dict[str, dict[str, Usage]] = {}
    for name, track, u in rows:
        by_kernel.setdefault(name, {})[track] = u
        if track == "yours" and u.local > 0:
            notes.append(f"{name}: {u.local} bytes of local memory per thread (spills or a local array)")
    for name, t in by_kernel.items():
        if lim and "yours" in t and "reference" in t:
            a, b = occupancy(t["yours"], lim), occupancy(t["reference"], lim)
            if a.blocks is not None and b.blocks is not None and a.blocks < b.blocks:
                notes.append(f"{name}: {a.blocks} resident blocks per SM against the reference's {b.blocks} "
                             f"({a.limit}: {t['yours'].regs} registers against {t['reference'].regs})")
    return notes


def cuobjdump_path() -> str | None:
    """cuobjdump on PATH, else the toolkit's default place, else None."""
    found = shutil.which("cuobjdump")
    if found:
        return found
    cuda = Path("/usr/local/cuda/bin/cuobjdump")
    return str(cuda) if cuda.exists() else None


def report_lines(root: Path, bdir: Path, ex: str, chapter_dir: Path, ch: str, handout: bool) -> list[str]:
    """The whole display for `scripts/lab check ex`; never raises for a missing tool or build."""
    cuobjdump = cuobjdump_path()
    if not cuobjdump:
        return ["resources: cuobjdump not found (it ships with the CUDA toolkit): registers and occupancy not shown"]
    snap = load_snapshot(root) if handout else None
    if handout:
        selection = (snap or {}).get("exercises", {}).get(ex, {}).get("selection")
        if selection is None:
            return [f"resources: no record of {ex}'s kernels in this handout ({SNAPSHOT}): not shown"]
    else:
        selection = exercise_selection(chapter_dir, ex)
    if not selection:
        return [f"resources: {ex} has no kernel (host code): nothing to show"]
    cdir = chapter_dir
    mine, missing = track_usages(bdir, cdir, ch, "starter", selection, cuobjdump)
    notes = [f"(your object for {f} is not built)" for f in missing]
    if handout:
        theirs = [Usage(**u) for u in (snap or {}).get("exercises", {}).get(ex, {}).get("reference", [])]
        if not theirs:
            notes.append("(reference figures not available here: the handout carries none for this exercise)")
    else:
        theirs, missing_ref = track_usages(bdir, cdir, ch, "reference", selection, cuobjdump)
        notes += [f"(the reference object for {f} is not built)" for f in missing_ref]
    arch = choose_arch({u.arch for u in mine} | {u.arch for u in theirs}, gpu_arch())
    if arch is None:
        return [f"resources: no compiled kernel of {ex} found in {bdir}"] + notes
    names = demangle(sorted({u.kernel for u in mine + theirs}))
    rows = [(names[u.kernel], "yours", u) for u in mine if u.arch == arch]
    rows += [(names[u.kernel], "reference", u) for u in theirs if u.arch == arch]
    rows.sort(key=lambda r: (r[0], r[1] != "yours"))
    rows = [r for k, r in enumerate(rows) if k == 0 or (r[0], r[1], asdict(r[2]) | {"kernel": ""}) !=
            (rows[k - 1][0], rows[k - 1][1], asdict(rows[k - 1][2]) | {"kernel": ""})]
    return format_table(ex, arch, rows, compare_notes(rows, arch) + notes)


# ---------------------------------------------------------------------------------------------
# the handout's record of the reference

def load_snapshot(root: Path) -> dict | None:
    p = root / SNAPSHOT
    if not p.exists():
        return None
    try:
        return json.loads(p.read_text())
    except ValueError:
        return None


def snapshot(root: Path, bdir: Path) -> dict | None:
    """Every exercise's kernel selection and the reference's figures in `bdir`, for the handout
    (None when cuobjdump or the reference objects are missing)."""
    cuobjdump = cuobjdump_path()
    if not cuobjdump or not bdir.is_dir():
        return None
    exercises: dict[str, dict] = {}
    for cdir in sorted((root / "chapters").glob("[0-9][0-9]_*")):
        ref = cdir / "reference"
        if not ref.is_dir():
            continue
        ch = "ch" + cdir.name[:2]
        found: set[str] = set()
        for p in ref.glob("*"):
            if p.suffix in regions.SUFFIXES:
                found.update(region_names(p.read_text()))
        for ex in sorted(found):
            sel = exercise_selection(cdir, ex)
            usages, _ = track_usages(bdir, cdir, ch, "reference", sel, cuobjdump) if sel else ([], [])
            exercises[ex] = {"chapter": cdir.name, "selection": sel, "reference": [asdict(u) for u in usages]}
    if not any(e["reference"] for e in exercises.values()):
        return None
    return {"exercises": exercises}
