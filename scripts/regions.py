"""Exercise regions of the reference files, and what the instructor tools do with them:

* leaks(): no starter file of a chapter contains an exercise's answer (CI: scripts/lab test);
* splice_file(): a student's exercise regions spliced into a clean starter file, nothing else
  (scripts/grade --submission);
* handout_text(): a starter file as the student receives it (scripts/lab handout): its exercise
  regions marked (BEGIN/END EXERCISE around the TODO and the starter code) and a HELPERS region
  after its #include lines, where the student's own helpers go; --submission keeps both.

The markers are the shared contract (docs/architecture.md; scripts/variants.py is the generator):

    // BEGIN EXERCISE N.k
    // TODO(N.k): ...            hint: the comment lines right after BEGIN (kept in the starter)
    // STARTER: code             starter-only code (kept in the starter without the prefix)
    ...solution...               (dropped from the starter)
    // END EXERCISE

A starter file holds, in place of each region, the region's hint lines and STARTER lines, in their
order; everything else comes from the reference. Standard library only.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

BEGIN = re.compile(r"^(\s*)// BEGIN EXERCISE (\d+\.\d+)\s*$")
END = re.compile(r"^\s*// END EXERCISE\b.*$")
STARTER = re.compile(r"^(\s*)// STARTER: ?(.*)$")
# The pitfall markers (scripts/variants.py's header gives the syntax). The first three find a
# marker line, however it is written, so that none leaks into a starter file or a handout; the
# PITFALL_* ones below parse a well-formed one (variants.py refuses any other).
PITFALL_BEGIN = re.compile(r"^\s*// BEGIN PITFALL\b")
PITFALL_END = re.compile(r"^\s*// END PITFALL\b")
BUG = re.compile(r"^\s*// BUG:")
PITFALL_BEGIN_PARSE = re.compile(r"^\s*// BEGIN PITFALL (\S+)(.*)$")
PITFALL_HEAD_PARSE = re.compile(r"^\s+EXERCISES((?:\s+\d+\.\d+)+)(\s+RACE)?\s*$")
PITFALL_BUG_PARSE = re.compile(r"^(\s*)// BUG:(?: (.*))?$")
PITFALL_END_PARSE = re.compile(r"^\s*// END PITFALL\s*$")
HELPERS_BEGIN = re.compile(r"^\s*// BEGIN HELPERS\b")
HELPERS_END = re.compile(r"^\s*// END HELPERS\b")
# The helper region of a handout's starter file (docs/student-guide.md says what goes there).
HELPERS_BLOCK = [
    "// BEGIN HELPERS",
    "// Your own helper functions, types, constants and #includes go here, or inside an exercise",
    "// region: scripts/grade --submission keeps these two kinds of region and nothing else of this file.",
    "// END HELPERS",
]
SUFFIXES = {".cu", ".cuh", ".cpp", ".hpp", ".h"}


class RegionError(Exception):
    pass


@dataclass
class Region:
    exercise: str
    indent: str = ""                                    # the indentation of its BEGIN line
    hint: list[str] = field(default_factory=list)       # TODO comment lines (kept in the starter)
    starter: list[str] = field(default_factory=list)    # the starter's code lines (STARTER: prefix removed)
    solution: list[str] = field(default_factory=list)   # the reference's code (dropped from the starter)
    form: list[str] = field(default_factory=list)       # the region in the starter: hint and STARTER lines, in order


def parse(text: str, where: str = "") -> tuple[list, list[Region]]:
    """Reference text -> (segments, regions). segments alternate: a list of lines (outside any
    region) or a Region. The starter form of a region is its hint and STARTER lines in their order."""
    segments: list = []
    regions: list[Region] = []
    outside: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = BEGIN.match(lines[i])
        if not m:
            if END.match(lines[i]):
                raise RegionError(f"{where}:{i + 1}: END EXERCISE without BEGIN")
            outside.append(lines[i])
            i += 1
            continue
        segments.append(outside)
        outside = []
        r = Region(m.group(2), m.group(1))
        i += 1
        in_hint = True
        while True:
            if i >= len(lines):
                raise RegionError(f"{where}: BEGIN EXERCISE {r.exercise} without END EXERCISE")
            line = lines[i]
            if END.match(line):
                i += 1
                break
            if BEGIN.match(line):
                raise RegionError(f"{where}:{i + 1}: nested BEGIN EXERCISE")
            s = STARTER.match(line)
            if s:
                r.starter.append(s.group(1) + s.group(2))
                r.form.append(s.group(1) + s.group(2))
            elif in_hint and line.strip().startswith("//") and not PITFALL_BEGIN.match(line):
                # (a pitfall region inside the solution ends the hint: variants.py drops it)
                r.hint.append(line)
                r.form.append(line)
            else:
                in_hint = False
                r.solution.append(line)
            i += 1
        segments.append(r)
        regions.append(r)
    segments.append(outside)
    return segments, regions


def starter_form(r: Region) -> list[str]:
    return list(r.form)


# ---------------------------------------------------------------------------------------------
# normalization

def strip_comment(line: str) -> tuple[str, str]:
    """(code, comment) of one line ('//' comments; a '//' inside a string literal is rare in
    kernels and only makes the check stricter)."""
    k = line.find("//")
    if k < 0:
        return line, ""
    return line[:k], line[k + 2:]


def squash(s: str) -> str:
    """Whitespace removed: formatting never hides or fakes a match."""
    return re.sub(r"\s+", "", s)


TRIVIAL = {"{", "}", "};", "else{", "}else{", "break;", "continue;", "return;", "__syncthreads();",
           "#pragmaunroll", "returnacc;", "default:", ")", ");"}


def nontrivial(code: str, min_len: int = 16) -> bool:
    c = squash(code)
    return len(c) >= min_len and c not in TRIVIAL


def solution_code(r: Region) -> list[str]:
    """The region's solution as squashed code lines: comments, pitfall markup and blank lines out."""
    out = []
    for line in r.solution:
        if PITFALL_BEGIN.match(line) or PITFALL_END.match(line) or BUG.match(line):
            continue
        code, _ = strip_comment(line)
        if code.strip():
            out.append(squash(code))
    return out


# ---------------------------------------------------------------------------------------------
# leaks: a starter file that holds an exercise's answer

@dataclass
class Leak:
    exercise: str
    reference: str
    starter: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.starter}:{self.line}: holds the answer of {self.exercise} ({self.reference}): {self.what}"


NOISE = {"const", "constexpr", "unsigned", "int", "float", "double", "auto", "std", "size_t", "static_cast",
         "return", "if", "for", "while", "else", "void", "bool", "true", "false", "int64_t", "int32_t",
         "uint32_t", "char", "long", "short", "this", "nullptr"}


def tokens(text: str) -> list[str]:
    """Identifiers of two characters or more and numbers of two digits or more, in order, without
    the C++ words every line has (a contract such as `c[i] = a[i] + b[i]` is no answer)."""
    return [t for t in re.findall(r"[A-Za-z_]\w*|\d+", text) if len(t) >= 2 and t not in NOISE]


def statements(r: Region) -> list[list[str]]:
    """The solution's statements (split at ; { }), as token lists."""
    code = " ".join(strip_comment(l)[0] for l in r.solution
                    if not (PITFALL_BEGIN.match(l) or PITFALL_END.match(l) or BUG.match(l)))
    return [t for t in (tokens(x) for x in re.split(r"[;{}]", code)) if t]


def lcs(a: list[str], b: list[str]) -> int:
    if not a or not b:
        return 0
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


def comment_blocks(lines: list[str]) -> list[tuple[int, list[str]]]:
    """(first line number, tokens) of each run of consecutive lines that carry a comment."""
    out: list[tuple[int, list[str]]] = []
    cur: list[str] = []
    first = 0
    for i, l in enumerate(lines + [""]):
        c = strip_comment(l)[1]
        if c.strip():
            if not cur:
                first = i + 1
            cur.append(c)
        elif cur:
            out.append((first, tokens(" ".join(cur))))
            cur = []
    return out


def leaks_in(regions: list[tuple[str, Region]], starter_files: dict[str, str], run: int = 3,
             min_tokens: int = 4, share: float = 0.7) -> list[Leak]:
    """regions: (reference path, region) of one chapter; starter_files: path -> text of that
    chapter's starter files. A leak is
      - `run` consecutive non-trivial solution lines (whitespace removed, comments out) appearing as
        consecutive code lines of a starter file (2 when the solution has only 2: one line alone
        may also be a worked example's), or
      - a solution statement of at least `min_tokens` identifiers and numbers whose tokens appear,
        in order, at `share` or more inside one comment block of a starter file: a TODO or a
        header that spells the answer out, however it is spaced or abbreviated.
    Trivial lines (braces, barriers) never count."""
    out: list[Leak] = []
    for path, text in starter_files.items():
        lines = text.splitlines()
        code_stream = [(i + 1, squash(strip_comment(l)[0])) for i, l in enumerate(lines)]
        code_stream = [(n, c) for n, c in code_stream if c]
        vals = [c for _, c in code_stream]
        blocks = [(n, set(b), b) for n, b in comment_blocks(lines)]
        for ref_path, r in regions:
            found = None
            sol = [c for c in solution_code(r) if nontrivial(c)]
            k = min(run, len(sol))
            if k >= 2:
                for s0 in range(len(sol) - k + 1):
                    seq = sol[s0:s0 + k]
                    j = next((j for j in range(len(vals) - k + 1) if vals[j:j + k] == seq), None)
                    if j is not None:
                        found = (code_stream[j][0], f"{k} consecutive solution lines, from '{seq[0][:60]}'")
                        break
            if not found:
                for st in statements(r):
                    if len(st) < min_tokens:
                        continue
                    need = share * len(st)
                    hit = next(((n, b) for n, bs, b in blocks
                                if sum(t in bs for t in st) >= need and lcs(st, b) >= need), None)
                    if hit:
                        found = (hit[0], "a comment spells out the solution statement '" + " ".join(st)[:70] + "'")
                        break
            if found:
                out.append(Leak(r.exercise, ref_path, path, found[0], found[1]))
    return out


def chapter_leaks(chapter_dir: Path, root: Path) -> list[Leak]:
    regions: list[tuple[str, Region]] = []
    ref = chapter_dir / "reference"
    if not ref.is_dir():
        return []
    for src in sorted(ref.iterdir()):
        if src.suffix in SUFFIXES:
            _, rs = parse(src.read_text(), str(src))
            regions += [(str(src.relative_to(root)), r) for r in rs]
    starters = {str(p.relative_to(root)): p.read_text()
                for p in sorted((chapter_dir / "starter").glob("*")) if p.suffix in SUFFIXES}
    return leaks_in(regions, starters)


def all_leaks(root: Path) -> list[Leak]:
    out = []
    for d in sorted((root / "chapters").glob("[0-9][0-9]_*")):
        out += chapter_leaks(d, root)
    return out


# ---------------------------------------------------------------------------------------------
# splicing a student's regions into a clean starter

def _norm(line: str) -> str:
    return line.strip()


def segment_starter(ref_text: str, starter_text: str, where: str = "") -> list:
    """The clean starter file cut like its reference: a list alternating fixed line lists and
    (Region, its starter lines). Raises RegionError when a region's starter form is not found in
    order (the generator and this parser disagree: CI runs this on every starter file)."""
    segs, _ = parse(ref_text, where)
    lines = starter_text.splitlines()
    out: list = []
    pos = 0
    for seg in segs:
        if not isinstance(seg, Region):
            continue
        form = starter_form(seg)
        k = _find_block(lines, form, pos)
        if k < 0:
            raise RegionError(f"{where}: the starter form of exercise {seg.exercise}'s region is not in the "
                              "starter file (regenerate starter/, or the generator changed)")
        out.append(lines[pos:k])
        out.append((seg, lines[k:k + len(form)]))
        pos = k + len(form)
    out.append(lines[pos:])
    return out


def _find_block(lines: list[str], block: list[str], start: int) -> int:
    n = len(block)
    if n == 0:
        return start
    for k in range(start, len(lines) - n + 1):
        if all(_norm(lines[k + t]) == _norm(block[t]) for t in range(n)):
            return k
    return -1


def _anchor(fixed: list[str], tail: bool, n: int = 3) -> list[str]:
    nonblank = [l for l in fixed if l.strip()]
    return nonblank[-n:] if tail else nonblank[:n]


def _find_anchor(lines: list[str], anchor: list[str], start: int) -> tuple[int, int]:
    """(first index, index after the last line) of `anchor` (non-blank lines, blank lines between
    them ignored) at or after `start`, or (-1, -1)."""
    if not anchor:
        return start, start
    for k in range(start, len(lines)):
        if _norm(lines[k]) != _norm(anchor[0]):
            continue
        j, t = k + 1, 1
        while t < len(anchor) and j < len(lines):
            if not lines[j].strip():
                j += 1
                continue
            if _norm(lines[j]) != _norm(anchor[t]):
                break
            j += 1
            t += 1
        if t == len(anchor):
            return k, j
    return -1, -1


@dataclass
class SplicedRegion:
    exercise: str
    status: str          # submitted | untouched | not found
    identical_to_reference: bool = False
    lines: list[str] = field(default_factory=list)
    review: str = ""     # why a person must look at it (not found, a malformed region): "" when none


def marked_regions(lines: list[str]) -> tuple[dict[str, list[list[str]]], dict[str, str], list[str] | None, str]:
    """The regions a student's file marks itself (a handout's starter files do): exercise ->
    the lines between each of its `// BEGIN EXERCISE N.k` and `// END EXERCISE`, in file order (an
    exercise may have several regions in a file), exercise -> why its marks cannot be read, then
    the HELPERS region's lines (markers included; None when there is none) and why it cannot be
    read ("" when it can)."""
    found: dict[str, list[list[str]]] = {}
    bad: dict[str, str] = {}
    helpers: list[str] | None = None
    helpers_bad = ""
    i = 0
    while i < len(lines):
        m = BEGIN.match(lines[i])
        if m:
            ex = m.group(2)
            j = i + 1
            while j < len(lines) and not END.match(lines[j]) and not BEGIN.match(lines[j]) \
                    and not HELPERS_BEGIN.match(lines[j]):
                j += 1
            if j >= len(lines) or not END.match(lines[j]):
                bad[ex] = f"'// BEGIN EXERCISE {ex}' (line {i + 1}) has no '// END EXERCISE' before the next region"
                i = j
                continue
            found.setdefault(ex, []).append(lines[i + 1:j])
            i = j + 1
            continue
        if HELPERS_BEGIN.match(lines[i]):
            j = i + 1
            while j < len(lines) and not HELPERS_END.match(lines[j]) and not BEGIN.match(lines[j]):
                j += 1
            if j >= len(lines) or not HELPERS_END.match(lines[j]):
                helpers_bad = f"'// BEGIN HELPERS' (line {i + 1}) has no '// END HELPERS' before the next region"
                i = j
                continue
            if helpers is not None:
                helpers_bad = f"a second HELPERS region (line {i + 1})"
            helpers = lines[i:j + 1]
            i = j + 1
            continue
        i += 1
    return {e: ls for e, ls in found.items() if e not in bad}, bad, helpers, helpers_bad


def helpers_index(lines: list[str]) -> int:
    """Where a file's HELPERS region goes: after the #include lines at the top of the file (at
    namespace scope, before any code), else before its first line of code."""
    last_include = -1
    in_block = False
    for k, line in enumerate(lines):
        s = line.strip()
        if in_block:
            in_block = "*/" not in s
            continue
        if s.startswith("/*"):
            in_block = "*/" not in s
            continue
        if not s or s.startswith("//"):
            continue
        if s.startswith("#"):
            if s.startswith("#include"):
                last_include = k
            continue
        return last_include + 1 if last_include >= 0 else k
    return last_include + 1 if last_include >= 0 else len(lines)


def splice_file(ref_text: str, clean_starter: str, student: str | None, where: str = "") -> tuple[str, list[SplicedRegion]]:
    """The clean starter with each exercise region replaced by the student's, and the student's
    HELPERS region inserted after the clean file's #include lines; nothing else is taken from the
    student. A region is found by its own marks (`// BEGIN EXERCISE N.k` ... `// END EXERCISE`, as
    a handout's files have them), whatever the student changed around it; in a file without marks
    (a clone of the full tree), between the non-blank lines around it in the clean starter. A
    region that cannot be placed keeps the starter's lines and says why (status "not found",
    `review`): a person must look at it, it is not a plain 0."""
    segs = segment_starter(ref_text, clean_starter, where)
    stud = student.splitlines() if student is not None else None
    marked, bad, helpers, helpers_bad = marked_regions(stud) if stud is not None else ({}, {}, None, "")
    # a file with any exercise mark is read by its marks only: a stray or missing one is a
    # region to review, not a guess from the lines around it
    uses_marks = stud is not None and any(BEGIN.match(l) or END.match(l) for l in stud)
    out: list[str] = []
    report: list[SplicedRegion] = []
    pos = 0
    taken: dict[str, int] = {}
    expected: dict[str, int] = {}
    for seg in segs:
        if isinstance(seg, tuple):
            expected[seg[0].exercise] = expected.get(seg[0].exercise, 0) + 1
    for idx, seg in enumerate(segs):
        if not isinstance(seg, tuple):
            out += seg
            continue
        region, form = seg
        if stud is None:
            out += form
            report.append(SplicedRegion(region.exercise, "untouched", False, form))
            continue
        if uses_marks:
            k = taken.get(region.exercise, 0)
            taken[region.exercise] = k + 1
            have = marked.get(region.exercise, [])
            if region.exercise not in bad and len(have) == expected[region.exercise]:
                mine = have[k]
            else:
                why = bad.get(region.exercise) or (
                    f"'// BEGIN EXERCISE {region.exercise}' ... '// END EXERCISE' is not in the file (the marks were "
                    "deleted or changed)" if not have else
                    f"the file marks {len(have)} regions of exercise {region.exercise}, the starter has "
                    f"{expected[region.exercise]}: which is which cannot be told")
                out += form
                report.append(SplicedRegion(region.exercise, "not found", False, form,
                                            f"{where}: {why}: the starter's code was kept"))
                continue
        else:
            mine = _between_anchors(stud, segs, idx, pos)
            if mine is None:
                out += form
                report.append(SplicedRegion(region.exercise, "not found", False, form,
                                            f"{where}: region {region.exercise} not found (no region marks, and the "
                                            "lines around it were changed): the starter's code was kept"))
                continue
            mine, pos = mine
        same = [_norm(l) for l in mine] == [_norm(l) for l in form]
        ident = bool(solution_code(region)) and _code_of(mine) == solution_code(region)
        out += mine
        report.append(SplicedRegion(region.exercise, "untouched" if same else "submitted", ident, mine))
    if helpers_bad:
        for r in report:
            r.review = (r.review + "; " if r.review else "") + f"{where}: {helpers_bad}: the helpers were not taken"
    elif helpers is not None and any(_norm(l) for l in helpers[1:-1]) and \
            [_norm(l) for l in helpers] != [_norm(l) for l in HELPERS_BLOCK]:
        k = helpers_index(out)
        out[k:k] = [""] + helpers
    return "\n".join(out) + "\n", report


def _between_anchors(stud: list[str], segs: list, idx: int, pos: int) -> tuple[list[str], int] | None:
    """The student's lines of region segs[idx] between the non-blank lines that surround it in the
    clean starter (3 of them, or fewer when the student changed the farther ones: the nearest one
    must be there), and where the search goes on; None when they are not found."""
    before, after = segs[idx - 1], segs[idx + 1]
    a0 = a1 = b0 = -1
    for n in (3, 2, 1):
        a0, a1 = _find_anchor(stud, _anchor(before, tail=True, n=n), pos)
        if a0 >= 0:
            break
    if a0 >= 0:
        for n in (3, 2, 1):
            after_anchor = _anchor(after, tail=False, n=n)
            b0, _ = _find_anchor(stud, after_anchor, a1) if after_anchor else (len(stud), len(stud))
            if b0 >= 0:
                break
    if a0 < 0 or b0 < 0:
        return None
    # the student's lines between the anchors, minus the blank lines that belong to the fixed
    # segments around the anchors (the anchors are the non-blank lines nearest the region)
    mine = _strip_context(stud[a1:b0], _trailing_after_anchor(before), _leading_before_anchor(after))
    return mine, b0


def _trailing_after_anchor(fixed: list[str]) -> list[str]:
    """The lines of a fixed segment after its last non-blank line (blank ones)."""
    k = len(fixed)
    while k > 0 and not fixed[k - 1].strip():
        k -= 1
    return fixed[k:]


def _leading_before_anchor(fixed: list[str]) -> list[str]:
    k = 0
    while k < len(fixed) and not fixed[k].strip():
        k += 1
    return fixed[:k]


def _strip_context(mine: list[str], lead: list[str], trail: list[str]) -> list[str]:
    """The fixed blank lines around a region are written by the fixed segments already."""
    s, e = 0, len(mine)
    for _ in lead:
        if s < e and not mine[s].strip():
            s += 1
    for _ in trail:
        if e > s and not mine[e - 1].strip():
            e -= 1
    return mine[s:e]


def _code_of(lines: list[str]) -> list[str]:
    out = []
    for l in lines:
        if STARTER.match(l):
            continue
        code, _ = strip_comment(l)
        if code.strip():
            out.append(squash(code))
    return out


# ---------------------------------------------------------------------------------------------
# the handout's starter files

def mark_regions(ref_text: str, starter_text: str, where: str = "") -> str:
    """The starter file with its exercise regions marked (`// BEGIN EXERCISE N.k`, the TODO and the
    starter code, `// END EXERCISE N.k`) and, when it has a region, a HELPERS region after its
    #include lines: what the student edits, and what scripts/grade --submission takes."""
    segs = segment_starter(ref_text, starter_text, where)
    lines: list[str] = []
    marked = False
    for seg in segs:
        if isinstance(seg, tuple):
            region, form = seg
            lines += [f"{region.indent}// BEGIN EXERCISE {region.exercise}", *form,
                      f"{region.indent}// END EXERCISE {region.exercise}"]
            marked = True
        else:
            lines += seg
    if marked:
        k = helpers_index(lines)
        lines[k:k] = ([""] if k > 0 and lines[k - 1].strip() else []) + HELPERS_BLOCK + \
            ([""] if k < len(lines) and lines[k].strip() else [])
    return "\n".join(lines) + ("\n" if starter_text.endswith("\n") else "")


def handout_text(starter_text: str, ref_text: str | None = None, where: str = "") -> str:
    """A starter file as the student receives it: its exercise regions marked and a HELPERS region
    added (mark_regions; when the reference text is given), pitfall markup gone (the BEGIN/END
    PITFALL lines, the lesson's comment lines right after BEGIN PITFALL and the BUG lines; the
    correct code stays), and the 'generated from reference/...' line of the header gone."""
    if ref_text is not None:
        starter_text = mark_regions(ref_text, starter_text, where)
    out: list[str] = []
    lines = starter_text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if PITFALL_BEGIN.match(line):
            i += 1
            while i < len(lines) and lines[i].strip().startswith("//") and not PITFALL_END.match(lines[i]) \
                    and not BUG.match(lines[i]):
                i += 1  # the lesson
            continue
        if PITFALL_END.match(line) or BUG.match(line):
            i += 1
            continue
        if i < 3 and re.search(r"Generated from chapters/.*/reference/", line):
            line = re.sub(r"\s*\(Generated from chapters/\S+ by scripts/\S+\.\)", "", line)
            line = re.sub(r"\s*Generated from chapters/\S+ by scripts/\S+\.?", "", line)
            if line.strip() in ("//", "#"):
                i += 1
                continue
        out.append(line)
        i += 1
    return "\n".join(out) + ("\n" if starter_text.endswith("\n") else "")


def segmentation_problems(root: Path) -> list[str]:
    """Every committed starter file must cut into its reference's regions (scripts/grade
    --submission relies on it): the generator and this parser agree."""
    out = []
    for d in sorted((root / "chapters").glob("[0-9][0-9]_*")):
        ref = d / "reference"
        if not ref.is_dir():
            continue
        for src in sorted(ref.iterdir()):
            st = d / "starter" / src.name
            if src.suffix not in SUFFIXES or not st.exists():
                continue
            try:
                segment_starter(src.read_text(), st.read_text(), str(src.relative_to(root)))
            except RegionError as e:
                out.append(str(e))
    return out
