"""JUnit XML of the results (per test, or per exercise for a grade), for CI and graders."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from .testrun import TestResult


@dataclass
class JunitCase:
    classname: str
    name: str
    status: str          # passed | failed | skipped
    message: str = ""    # the failure's or skip's one-line message
    text: str = ""       # the failure's full text
    system_out: str = "" # what else a reader needs (labels, score)
    time: float = 0.0


def _xml_text(s: str) -> str:
    """Text XML 1.0 can hold: control characters (a crashed test's output) become '?'."""
    return re.sub(r"[\x00-\x08\x0b\x0c\x0e-\x1f]", "?", s or "")


def write_junit_cases(cases: list[JunitCase], path: Path, suite_name: str = "cudalab") -> None:
    """JUnit XML as the common schema has it (tests/fixtures/junit.xsd; scripts/test_junit.py
    checks it): one <testsuite> with name, tests, failures, errors, skipped, time, timestamp and
    hostname; each <testcase> has name, classname and time, and holds at most one of <failure> /
    <skipped>, then <system-out>; no <properties> inside a testcase."""
    import datetime
    import socket
    suite = ET.Element("testsuite", name=suite_name, tests=str(len(cases)),
                       failures=str(sum(c.status == "failed" for c in cases)), errors="0",
                       skipped=str(sum(c.status == "skipped" for c in cases)),
                       time=f"{sum(c.time for c in cases):.3f}",
                       timestamp=datetime.datetime.now().replace(microsecond=0).isoformat(),
                       hostname=socket.gethostname() or "localhost")
    for c in cases:
        case = ET.SubElement(suite, "testcase", name=c.name, classname=c.classname, time=f"{c.time:.3f}")
        if c.status == "failed":
            f = ET.SubElement(case, "failure", message=_xml_text(c.message)[:200] or "failed", type="failure")
            f.text = _xml_text(c.text)
        elif c.status == "skipped":
            ET.SubElement(case, "skipped", message=_xml_text(c.message)[:500])
        if c.system_out:
            ET.SubElement(case, "system-out").text = _xml_text(c.system_out)
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)


def write_junit(results: list[TestResult], path: Path, suite_name: str = "cudalab") -> None:
    """One JUnit testcase per test (for a CI or an LMS), with the failure text or skip reason;
    its ctest labels in its system-out."""
    write_junit_cases([JunitCase(r.chapter, r.name, r.status,
                                 (r.output.splitlines() or ["failed"])[0] if r.status == "failed" else r.output.strip(),
                                 r.output if r.status == "failed" else "",
                                 "labels: " + ";".join(r.labels) if r.labels else "", r.time)
                       for r in results], path, suite_name)
