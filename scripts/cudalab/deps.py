"""The system packages the lab needs (scripts/deps.txt, the one list): what is missing, and the one
command that installs it."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from .core import ROOT, die, log


# ---------------------------------------------------------------------------------------------
# dependencies (scripts/deps.txt is the one list; .ci/run reads it too)

DEPS_FILE = ROOT / "scripts" / "deps.txt"


def read_deps(path: Path = DEPS_FILE) -> list[tuple[str, str, str]]:
    """(package, kind, what) per line of deps.txt: kind is cmd or file."""
    out = []
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        pkg, probe, *flags = line.split()
        if "ci-only" in flags and os.environ.get("CI") != "true":
            continue  # a CI check's tool (clang-format): not needed to build, test or grade
        kind, what = probe.split(":", 1)
        out.append((pkg, kind, what))
    return out


def missing_deps(deps: list[tuple[str, str, str]] | None = None) -> list[str]:
    missing = []
    for pkg, kind, what in deps if deps is not None else read_deps():
        ok = shutil.which(what) is not None if kind == "cmd" else Path(what).exists()
        if not ok:
            missing.append(pkg)
    return missing


def install_command(pkgs: list[str], as_root: bool) -> list[str]:
    apt = ["apt-get", "install", "-y", "--no-install-recommends", *pkgs]
    return apt if as_root else ["sudo", *apt]


def ensure_deps(install: bool = True) -> None:
    """Installs the missing packages when this runs as root or with passwordless sudo; otherwise
    stops with the one command to run. Also puts the CUDA toolkit's bin on PATH when nvcc is only
    in /usr/local/cuda/bin."""
    if shutil.which("nvcc") is None and Path("/usr/local/cuda/bin/nvcc").exists():
        os.environ["PATH"] = "/usr/local/cuda/bin:" + os.environ.get("PATH", "")
    if shutil.which("apt-get") is None and missing_deps():
        die("missing: " + " ".join(missing_deps()) + " (Debian/Ubuntu package names; install them, then rerun)")
    missing = missing_deps()
    if missing:
        root = hasattr(os, "geteuid") and os.geteuid() == 0
        sudo = not root and shutil.which("sudo") is not None and \
            subprocess.run(["sudo", "-n", "true"], capture_output=True).returncode == 0
        cmd = install_command(missing, root)
        if not install or not (root or sudo):
            die("cudalab needs: " + " ".join(missing) + "\nrun:  " + " ".join(install_command(missing, False))
                + "\nthen rerun this command.")
        log("installing " + " ".join(missing) + " ...")
        pre = ["apt-get", "update", "-qq"] if root else ["sudo", "apt-get", "update", "-qq"]
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        for c in (pre, cmd):
            try:  # a machine without network must get an answer, not a hang
                p = subprocess.run(c, env=env, capture_output=True, text=True, timeout=600)
            except subprocess.TimeoutExpired:
                die(f"{' '.join(c)} did not finish in 10 minutes (no network?); install "
                    + " ".join(missing) + " by hand, then rerun")
            if p.returncode != 0:
                die(f"{' '.join(c)} failed:\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
        still = missing_deps()
        if still:
            die("still missing after apt-get: " + " ".join(still))
    if shutil.which("nvcc") is None:
        die("no CUDA toolkit: nvcc is neither on PATH nor in /usr/local/cuda/bin. Install the CUDA "
            "toolkit (12.x or 13.x; https://developer.nvidia.com/cuda-downloads), then rerun.")
