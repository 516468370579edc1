"""The ceilings of a GPU, for any chapter that quotes "% of peak" (chapter 9's roofline).

    sys.path.insert(0, "chapters/02_architecture/tools"); import card
    c = card.load_ceilings("NVIDIA H200")     # or "H200"
    c["ceilings"]["dram_GBps"], c["ceilings"]["tensor_TFLOPs"]["bf16"], c["measured"], c["note"]

Measured first: docs/results/raw/<GPU>/ch02_card.json, written by `scripts/lab gpu-card` on that
GPU. Without one, the calculator's sheet (apps/sheet, the C++ table: the one owner of the figures)
gives the dense peaks at the sheet's clocks, with measured = False and a note that says so; the
sheet's L2 row is absent there (no sheet prints an L2 bandwidth). Standard library only.
"""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent.parent
CEILING_KEYS = ("dram_GBps", "l2_GBps", "smem_GBps", "fp32_TFLOPs", "fp64_TFLOPs", "tensor_TFLOPs",
                "sm_clock_MHz")
TENSOR_KEYS = ("tf32", "fp16", "bf16", "int8", "fp8")


def gpu_slug(name: str) -> str:
    """Directory name of a GPU under docs/results/raw/, as scripts/results.py names it
    ("NVIDIA H200" -> "H200")."""
    import sys
    sys.path.insert(0, str(ROOT / "scripts"))
    import results  # the one definition of the directory name
    return results.gpu_slug(name)


def find_key(name: str, known: list[str]) -> str | None:
    """The table key for a name given by a user ("h200", "H100-SXM"), or None."""
    low = {k.lower(): k for k in known}
    return low.get(name.strip().lower())


def sheet_exe(root: Path = ROOT) -> Path | None:
    for preset in ("gpu", "ci", "debug"):
        exe = root / "build" / preset / "chapters" / "02_architecture" / "ch02_sheet"
        if exe.exists():
            return exe
    return None


def ceilings_from_sheet(sheet: dict) -> dict:
    rows = {r["metric"]: r for r in sheet["rows"]}
    dense = lambda m: float(rows[m]["dense"]) if m in rows else None  # noqa: E731
    return {
        "dram_GBps": dense("dram"),
        "l2_GBps": None,
        "smem_GBps": float(sheet["smem"]["GBps"]) if sheet.get("smem") else None,
        "fp32_TFLOPs": dense("fp32"),
        "fp64_TFLOPs": dense("fp64"),
        "tensor_TFLOPs": {t: dense(t) for t in TENSOR_KEYS},
        "sm_clock_MHz": float(sheet["core_clock_MHz"]) or None,
    }


def load_ceilings(gpu_name: str, root: Path = ROOT) -> dict:
    """{"gpu", "ceilings", "measured": bool, "source", "note"}. Raises LookupError (with the
    reason) when there is neither a measured card nor a built calculator that knows the GPU."""
    card = root / "docs" / "results" / "raw" / gpu_slug(gpu_name) / "ch02_card.json"
    if card.exists():
        data = json.loads(card.read_text())
        missing = [k for k in CEILING_KEYS if k not in data.get("ceilings", {})]
        if missing:
            raise LookupError(f"{card}: ceilings lack {', '.join(missing)}")
        return {"gpu": data.get("gpu", gpu_name), "ceilings": data["ceilings"], "measured": True,
                "source": str(card.relative_to(root)), "note": ""}
    exe = sheet_exe(root)
    if exe is None:
        raise LookupError(f"no measured card ({card.relative_to(root)}) and no built ch02_sheet "
                          "(cmake --build --preset ci --target ch02_sheet)")
    p = subprocess.run([str(exe), "--gpu", re.sub(r"\s+", " ", gpu_name.strip())], capture_output=True,
                       text=True)
    if p.returncode != 0:
        raise LookupError(f"no measured card for {gpu_name} and the calculator does not know it: "
                          f"{p.stderr.strip()}")
    sheet = json.loads(p.stdout)
    return {"gpu": sheet["name"], "ceilings": ceilings_from_sheet(sheet), "measured": False,
            "source": f"{exe.name} --gpu {sheet['key']}",
            "note": (f"no measured card in {card.relative_to(root)}: these are the calculator's dense "
                     "peaks at the sheet's clocks (run `scripts/lab gpu-card` on that GPU)")}
