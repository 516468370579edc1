#!/usr/bin/env python3
"""A speed goal is written once, in bench/chNN/chNN.toml (`[[ratio]] exercise = "N.k"`, `goal = G`):
the TODO of exercise N.k and the row of N.k in its chapter README quote it, and this test fails
when a quoted number differs from the TOML's (no GPU, no build): python3 scripts/test_goals.py

What counts as a quote: in the exercise's TODO lines, the clause that starts with `Goal` (up to
`;`, `Hints:` or the end of the sentence) and its first `>= X` (X, Xx or X%); in the README, every
`>= X` / `≥ X` of the row `| N.k | ...` outside a parenthesis that says "not graded", and every
`goal N.k: >= X` in its prose. A TODO
clause that starts with `Target (not graded` is a second, ungraded figure and is not compared.
An exercise with a goal must quote it in at least one TODO.
"""
from __future__ import annotations

import re
import sys
import tomllib
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import regions  # noqa: E402
import report  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
NUMBER = r"(\d+(?:\.\d+)?)\s*(x|%)?"
AT_LEAST = re.compile(r"(?:>=|≥)\s*" + NUMBER)
GOAL_CLAUSE = re.compile(r"\bGoal\b(.*?)(?:;|\bHints:|\.\s|$)")
NOT_GRADED = re.compile(r"\([^()]*not graded[^()]*\)")
PROSE_GOAL = re.compile(r"\bgoal (\d+\.\d+):?\s*(?:>=|≥)\s*" + NUMBER)


def toml_goals(root: Path = ROOT) -> dict[str, tuple[float, str]]:
    """exercise -> (goal, the TOML file that declares it)."""
    out: dict[str, tuple[float, str]] = {}
    for chapter in report.declared_chapters(root / "bench"):
        f = report.declarations_path(chapter, root / "bench")
        for r in tomllib.loads(f.read_text()).get("ratio", []):
            if "exercise" in r and "goal" in r:
                out[str(r["exercise"])] = (float(r["goal"]), f.relative_to(root).as_posix())
    return out


def same(quoted: str, unit: str | None, goal: float) -> bool:
    v = float(quoted)
    return abs((v / 100 if unit == "%" else v) - goal) < 1e-9


def todo_text(r: regions.Region) -> str:
    return " ".join(re.sub(r"^\s*//\s?", "", line).strip() for line in r.hint)


def todo_quotes(text: str) -> list[tuple[str, str | None]]:
    """The first `>= X` of each Goal clause of one TODO."""
    out = []
    for m in GOAL_CLAUSE.finditer(text):
        q = AT_LEAST.search(m.group(1))
        if q:
            out.append((q.group(1), q.group(2)))
    return out


def readme_quotes(row: str) -> list[tuple[str, str | None]]:
    return [(m.group(1), m.group(2)) for m in AT_LEAST.finditer(NOT_GRADED.sub("", row))]


def goal_problems(root: Path = ROOT) -> list[str]:
    goals = toml_goals(root)
    problems: list[str] = []
    quoted: dict[str, bool] = {}
    for chapter in sorted((root / "chapters").glob("[0-9][0-9]_*")):
        for src in sorted((chapter / "reference").glob("*")):
            if src.suffix not in regions.SUFFIXES:
                continue
            for r in regions.parse(src.read_text(), str(src))[1]:
                if r.exercise not in goals:
                    continue
                goal, toml = goals[r.exercise]
                for value, unit in todo_quotes(todo_text(r)):
                    if same(value, unit, goal):
                        quoted[r.exercise] = True
                    else:
                        problems.append(f"{src.relative_to(root)}: TODO({r.exercise}) quotes the goal "
                                        f"{value}{unit or ''}, {toml} says {goal:g}")
        readme = chapter / "README.md"
        if readme.exists():
            for n, line in enumerate(readme.read_text().splitlines(), 1):
                for g in PROSE_GOAL.finditer(line):
                    if g.group(1) in goals and not same(g.group(2), g.group(3), goals[g.group(1)][0]):
                        problems.append(f"{readme.relative_to(root)}:{n}: 'goal {g.group(1)}' quotes "
                                        f"{g.group(2)}{g.group(3) or ''}, {goals[g.group(1)][1]} says "
                                        f"{goals[g.group(1)][0]:g}")
                m = re.match(r"^\|\s*(\d+\.\d+)\s*\|", line)
                if not m or m.group(1) not in goals:
                    continue
                goal, toml = goals[m.group(1)]
                for value, unit in readme_quotes(line):
                    if not same(value, unit, goal):
                        problems.append(f"{readme.relative_to(root)}:{n}: the row of {m.group(1)} quotes "
                                        f"{value}{unit or ''}, {toml} says {goal:g}")
    for ex, (goal, toml) in sorted(goals.items()):
        if not quoted.get(ex):
            problems.append(f"exercise {ex}: no TODO states its goal ({toml}: {goal:g}) in a "
                            "'Goal ... >= X' clause")
    return problems


class Quotes(unittest.TestCase):
    def test_todo_clause(self):
        t = "Contract. Goal: BM_x >= 0.58x BM_cublas; `scripts/lab check 6.2`. Target (not graded): >= 0.5x"
        self.assertEqual(todo_quotes(t), [("0.58", "x")])
        self.assertEqual(todo_quotes("Goal (bench/ch07/ch07.toml): >= 90% of the model. Hints: x"), [("90", "%")])
        self.assertEqual(todo_quotes("Goal: correctness only"), [])

    def test_readme_row(self):
        row = "| 6.1 | f | g | h | `smem` ≥ 0.14x cuBLAS (and, not graded, `1d` ≥ 0.26x) |"
        self.assertEqual(readme_quotes(row), [("0.14", "x")])

    def test_readme_prose(self):
        m = PROSE_GOAL.search("the tiled row clearly faster (goal 5.5: ≥ 3.0x the naive row)")
        self.assertEqual((m.group(1), m.group(2), m.group(3)), ("5.5", "3.0", "x"))

    def test_same(self):
        self.assertTrue(same("90", "%", 0.9))
        self.assertTrue(same("3", None, 3.0))
        self.assertFalse(same("0.55", "x", 0.58))


class Tree(unittest.TestCase):
    def test_every_quoted_goal_is_the_tomls(self):
        problems = goal_problems()
        self.assertEqual(problems, [], "\n" + "\n".join(problems))


if __name__ == "__main__":
    unittest.main()
