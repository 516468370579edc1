"""No lab script loses or overwrites a file, whatever it is given: each script of scripts/ runs with
--help (usage, exit 0), with an unknown option (exit 2, no traceback) and interrupted mid-run
(SIGINT, then SIGTERM, to its process group, as a terminal's Ctrl-C would), in a scratch copy of
this repository (a git repository of its own), and `git status --porcelain` is clean after every
run. Bad input of the learner-facing commands gets a message and exit 2."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import labtools as lt  # noqa: E402

# Every executable script of scripts/, as a user runs it.
# Under scripts/, or a path from the repository's root (a chapter's own tools).
SCRIPTS = ["lab", "grade", "gpu_acceptance", "gpu_suite", "hint.py", "variants.py", "results.py", "report.py",
           "new_chapter.py", "chapters/01_serving_latency/tools/ch01_cost.py",
           "chapters/01_serving_latency/tools/ch01_torch.py", "chapters/08_multi_gpu/tools/ch08_multi_gpu.py",
           "chapters/11_llm_serving/tools/ch11_torch.py",
           "handout.py", "handout_check"]


def scratch_repo(dest: Path) -> Path:
    """The files of this checkout (tracked, and untracked ones git does not ignore) as a new git
    repository with one commit: a tree whose status is clean to begin with."""
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=lt.ROOT,
                           capture_output=True, text=True, check=True).stdout.split("\0")
    for rel in filter(None, files):
        src = lt.ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run(["git", "init", "-q"], cwd=dest, check=True)
    subprocess.run(["git", "add", "-A"], cwd=dest, check=True)
    subprocess.run([*git, "commit", "-qm", "scratch"], cwd=dest, check=True)
    return dest


def command(repo: Path, script: str, *args: str) -> list[str]:
    path = repo / script if "/" in script else repo / "scripts" / script
    if script.endswith(".py") or script in ("lab", "grade", "gpu_suite"):
        return [sys.executable, str(path), *args]
    return [str(path), *args]


class ScriptSafety(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = Path(tempfile.mkdtemp(prefix="cudalab-safety-"))
        cls.repo = scratch_repo(cls.tmp / "repo")
        cls.env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def run_in_repo(self, cmd: list[str], timeout: float = 120, env: dict | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(cmd, cwd=self.repo, capture_output=True, text=True, timeout=timeout,
                              env=dict(self.env, **(env or {})))

    def assert_clean(self, what: str) -> None:
        st = subprocess.run(["git", "status", "--porcelain"], cwd=self.repo, capture_output=True, text=True).stdout
        self.assertEqual(st, "", f"{what} left the tree changed:\n{st}")

    def test_help(self):
        for s in SCRIPTS:
            if s == "handout.py":
                continue  # a module of scripts/lab handout, not a command
            with self.subTest(script=s):
                p = self.run_in_repo(command(self.repo, s, "--help"))
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertIn(Path(s).name.removesuffix(".py"), p.stdout, "the usage names the command")
                self.assertNotIn("Traceback", p.stderr)
                self.assertFalse((self.repo / "--help").exists(), f"{s} --help made a folder named --help")
                self.assert_clean(f"{s} --help")
        p = self.run_in_repo(command(self.repo, "gpu_acceptance", "-h"))
        self.assertEqual(p.returncode, 0)
        self.assertIn("check-ref", p.stdout)

    def test_unknown_option(self):
        for s in SCRIPTS:
            if s == "handout.py":
                continue
            with self.subTest(script=s):
                p = self.run_in_repo(command(self.repo, s, "--no-such-option"))
                self.assertEqual(p.returncode, 2, f"{s}: exit {p.returncode}\n{p.stdout}\n{p.stderr}")
                self.assertNotIn("Traceback", p.stderr)
                self.assert_clean(f"{s} --no-such-option")

    def test_bad_input_is_a_usage_error(self):
        a_file = self.tmp / "a-file"
        a_file.write_text("")
        cases = [
            (command(self.repo, "grade", "--chapter", "42"), {}, "the chapters here: 01"),
            (command(self.repo, "grade", "--track", "bogus"), {}, "the tracks: starter"),
            (command(self.repo, "grade", "--out", str(a_file)), {}, "is a file"),
            (command(self.repo, "grade", "--out", str(a_file / "sub")), {}, "cannot write"),
            (command(self.repo, "grade", "--submission", str(self.tmp / "missing")), {}, "no such folder"),
            (command(self.repo, "grade", "--submission", str(self.tmp)), {}, "no chapters/"),
            (command(self.repo, "grade"), {"CUDALAB_SEED": "-1"}, "not a seed"),
            (command(self.repo, "grade"), {"CUDALAB_SEED": str(2**64)}, "not a seed"),
            (command(self.repo, "lab", "test"), {"CUDALAB_SEED": "12x"}, "not a seed"),
            (command(self.repo, "lab", "check", "5.x"), {}, "not an exercise id"),
            (command(self.repo, "lab", "check"), {}, "usage"),
            (command(self.repo, "lab", "handout", str(a_file)), {}, "a file is there"),
            (command(self.repo, "lab", "handout", str(self.repo / "inside")), {}, "outside this repository"),
            (command(self.repo, "lab", "handout", str(a_file / "sub")), {}, "cannot write"),
            (command(self.repo, "lab", "--preset", "bogus"), {}, "invalid choice"),
            (command(self.repo, "lab", "build-dir", "bogus"), {}, "takes no argument"),
            (command(self.repo, "lab", "report", "bogus"), {}, "takes no argument"),
            (command(self.repo, "chapters/01_serving_latency/tools/ch01_torch.py", "--cpp", str(a_file)), {},
             "not JSON"),
            (command(self.repo, "chapters/02_architecture/tools/gpu_card.py", "--from-json", str(a_file)), {},
             "not JSON"),
            (command(self.repo, "lab", "hint", "5.x"), {}, "not an exercise id"),
            (command(self.repo, "gpu_acceptance", str(a_file), "test"), {}, "is a file"),
            (command(self.repo, "gpu_acceptance", str(self.tmp / "o"), "nosuchstep"), {}, "unknown step"),
            (command(self.repo, "gpu_acceptance", str(self.tmp / "o"), "build", "--parallel", "ch09 nosuchstep"), {},
             "unknown step 'nosuchstep'"),
            (command(self.repo, "gpu_acceptance", str(self.tmp / "o"), "build", "--parallel"), {},
             "--parallel needs"),
            (command(self.repo, "gpu_acceptance", str(self.tmp / "o"), "--lanes"), {}, "unknown option"),
            (command(self.repo, "chapters/11_llm_serving/tools/ch11_torch.py", "--reps", "0"), {}, "argument --reps"),
            (command(self.repo, "chapters/11_llm_serving/tools/ch11_torch.py", "--cpp", str(a_file)), {}, "not JSON"),
        ]
        for cmd, env, words in cases:
            with self.subTest(cmd=" ".join(cmd[1:]), env=env):
                p = self.run_in_repo(cmd, env=env)
                self.assertEqual(p.returncode, lt.EXIT_USAGE, f"exit {p.returncode}\n{p.stdout}\n{p.stderr}")
                self.assertIn(words, p.stderr + p.stdout)
                self.assertNotIn("Traceback", p.stderr)
                self.assert_clean(" ".join(cmd[1:]))
        self.assertFalse((self.tmp / "o").exists(), "gpu_acceptance made its OUT before checking its steps")

    def test_acceptance_dry_run_prints_the_lanes_and_runs_nothing(self):
        out = self.tmp / "plan"
        p = self.run_in_repo(command(self.repo, "gpu_acceptance", str(out), "build", "ch02", "--parallel",
                                     "ch09 ch10", "memcheck suite", "--dry-run"))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("in order: build ch02", p.stdout)
        self.assertIn("lane 1 (OUT/lane1): ch09 ch10", p.stdout)
        self.assertIn("lane 2 (OUT/lane2): memcheck suite", p.stdout)
        self.assertNotIn("torch runs", p.stdout, "no torch step in this plan")
        self.assertFalse(out.exists(), "a dry run made its OUT")
        self.assert_clean("gpu_acceptance --dry-run")
        # the torch step's tools, each beside its chapter's benchmark JSON
        p = self.run_in_repo(command(self.repo, "gpu_acceptance", str(out), "bench", "torch", "--dry-run"))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("torch runs chapters/01_serving_latency/tools/ch01_torch.py beside bench_ch01.json "
                      "-> OUT/ch01_torch.json (log OUT/torch.log)", p.stdout)
        self.assertIn("torch runs chapters/11_llm_serving/tools/ch11_torch.py beside bench_ch11.json "
                      "-> OUT/ch11_torch.json (log OUT/torch_ch11.log)", p.stdout)
        self.assertFalse(out.exists(), "a dry run made its OUT")

    def test_hint_takes_the_ids_check_takes(self):
        p = self.run_in_repo(command(self.repo, "lab", "hint", "05.1"))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("5.1", p.stdout)

    def test_the_generator_keeps_a_learners_starter_edits(self):
        f = self.repo / "chapters/03_first_kernels/starter/vector_add.cu"
        before = f.read_text()
        f.write_text(before + "// my work\n")
        try:
            p = self.run_in_repo(command(self.repo, "variants.py"))
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertIn("edited by hand", p.stderr)
            self.assertTrue(f.read_text().endswith("// my work\n"))
        finally:
            f.write_text(before)
        self.assert_clean("variants.py on an edited starter")

    def test_interrupted_mid_run(self):
        out = self.tmp / "interrupted"
        runs = [
            command(self.repo, "lab", "test", "--preset", "ci", "-j", "1"),
            command(self.repo, "grade", "--chapter", "3", "--preset", "ci", "-j", "1", "--out", str(out / "g")),
            command(self.repo, "gpu_acceptance", str(out / "acc"), "check-ref"),
            command(self.repo, "variants.py"),
            command(self.repo, "lab", "handout", str(out / "handout")),
        ]
        for cmd in runs:
            for sig in (signal.SIGINT, signal.SIGTERM):
                with self.subTest(cmd=" ".join(cmd[1:]), sig=sig.name):
                    shutil.rmtree(out / "handout", ignore_errors=True)
                    proc = subprocess.Popen(cmd, cwd=self.repo, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                            text=True, start_new_session=True, env=self.env)
                    time.sleep(1.5)
                    if proc.poll() is None:
                        os.killpg(proc.pid, sig)
                    try:
                        _, err = proc.communicate(timeout=60)
                    except subprocess.TimeoutExpired:
                        os.killpg(proc.pid, signal.SIGKILL)
                        _, err = proc.communicate()
                        self.fail(f"{cmd} did not stop within 60 s of {sig.name}")
                    self.assert_clean(f"{' '.join(cmd[1:])} interrupted by {sig.name}")
        # and the check-ref copy is where the reference went: never this tree's starter
        tree = out / "acc" / "check-ref-tree"
        if tree.exists():
            self.assertTrue((tree / "chapters").is_dir())


if __name__ == "__main__":
    unittest.main()
