"""The JUnit XML that scripts/lab and scripts/grade write validates against the common JUnit schema
(tests/fixtures/junit.xsd). The standard library has no XSD validator, so this file holds a small
one for the subset of XSD that the schema uses (element, complexType, sequence, choice, attribute,
simpleContent; the built-in types it names); its own tests show it rejects what the schema
rejects."""
from __future__ import annotations

import re
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import labtools as lt  # noqa: E402

XSD = lt.ROOT / "tests" / "fixtures" / "junit.xsd"
XS = "{http://www.w3.org/2001/XMLSchema}"

BUILTIN = {
    "xs:string": lambda v: True,
    "xs:token": lambda v: v == v.strip() and not re.search(r"[\t\n\r]| {2}", v),
    "xs:nonNegativeInteger": lambda v: re.fullmatch(r"\+?[0-9]+", v) is not None,
    "xs:decimal": lambda v: re.fullmatch(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)", v) is not None,
    "xs:dateTime": lambda v: re.fullmatch(
        r"-?[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})?", v) is not None,
}


class Schema:
    """The subset of XSD junit.xsd uses; validate() returns the list of violations."""

    def __init__(self, path: Path):
        root = ET.parse(path).getroot()
        self.types = {t.get("name"): t for t in root.findall(f"{XS}complexType")}
        self.roots = {e.get("name"): e.get("type") for e in root.findall(f"{XS}element")}
        for e in root.iter(f"{XS}element"):
            if e.get("ref"):
                raise ValueError("element refs are outside the subset this validator reads")

    def validate(self, doc: ET.Element) -> list[str]:
        if doc.tag not in self.roots:
            return [f"root <{doc.tag}> is not a root element of the schema ({', '.join(self.roots)})"]
        errs: list[str] = []
        self._element(doc, self.roots[doc.tag], doc.tag, errs)
        return errs

    def _element(self, el: ET.Element, typ: str, path: str, errs: list[str]) -> None:
        if typ in BUILTIN:
            if len(el):
                errs.append(f"{path}: simple content expected, found child <{el[0].tag}>")
            if el.attrib:
                errs.append(f"{path}: no attributes allowed, found {sorted(el.attrib)}")
            elif not BUILTIN[typ](el.text or ""):
                errs.append(f"{path}: text is not a {typ}")
            return
        ct = self.types[typ]
        attrs = ct.findall(f"{XS}attribute")
        simple = ct.find(f"{XS}simpleContent")
        if simple is not None:
            ext = simple.find(f"{XS}extension")
            attrs = ext.findall(f"{XS}attribute")
            if len(el):
                errs.append(f"{path}: text only, found child <{el[0].tag}>")
        declared = {a.get("name"): a for a in attrs}
        for name in el.attrib:
            if name not in declared:
                errs.append(f"{path}: attribute '{name}' is not in the schema")
        for name, a in declared.items():
            v = el.get(name)
            if v is None:
                if a.get("use") == "required":
                    errs.append(f"{path}: required attribute '{name}' is missing")
            elif not BUILTIN[a.get("type", "xs:string")](v):
                errs.append(f"{path}: attribute {name}={v!r} is not a {a.get('type')}")
        if simple is not None:
            return
        if (el.text or "").strip():
            errs.append(f"{path}: text not allowed in element-only content")
        seq = ct.find(f"{XS}sequence")
        children = list(el)
        pos = self._particles(seq, children, 0, path, errs) if seq is not None else 0
        for extra in children[pos:]:
            errs.append(f"{path}: <{extra.tag}> not allowed here (by the schema's sequence)")

    @staticmethod
    def _occurs(p: ET.Element) -> tuple[int, float]:
        mx = p.get("maxOccurs", "1")
        return int(p.get("minOccurs", "1")), float("inf") if mx == "unbounded" else int(mx)

    def _particles(self, seq: ET.Element, children: list, pos: int, path: str, errs: list[str]) -> int:
        """Greedy match of a sequence's particles against the children from `pos`; returns where
        it stopped (junit.xsd is deterministic, so greedy matching is exact)."""
        for p in seq:
            lo, hi = self._occurs(p)
            n = 0
            while n < hi and pos < len(children):
                if p.tag == f"{XS}element":
                    if children[pos].tag != p.get("name"):
                        break
                    self._element(children[pos], p.get("type"), f"{path}/{children[pos].tag}[{n}]", errs)
                    pos += 1
                elif p.tag == f"{XS}choice":
                    opt = next((o for o in p if o.get("name") == children[pos].tag), None)
                    if opt is None:
                        break
                    self._element(children[pos], opt.get("type"), f"{path}/{children[pos].tag}", errs)
                    pos += 1
                n += 1
            if n < lo:
                what = p.get("name") or "one of " + "/".join(o.get("name") for o in p)
                errs.append(f"{path}: expected {lo} <{what}>, found {n}")
        return pos


class JunitOutput(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.schema = Schema(XSD)

    def check(self, path: Path) -> None:
        errs = self.schema.validate(ET.parse(path).getroot())
        self.assertEqual(errs, [], path.read_text()[:2000])

    def test_per_test_file(self):
        res = [lt.TestResult("starter.ch05.SGpu.Ok", ["ch05", "starter", "ex:5.1", "gpu"], "passed", "", 0.25),
               lt.TestResult("starter.ch05.SGpu.Fail", ["ch05", "starter", "ex:5.1", "gpu"], "failed",
                             "test.cpp:3\nExpected: 1\nActual: 2 \x1b[0m"),
               lt.TestResult("starter.ch05.SGpu.Skip", ["ch05", "starter", "ex:5.1", "gpu"], "skipped",
                             "test.cpp:9\nskipped: no GPU")]
        with tempfile.TemporaryDirectory() as tmp:
            f = Path(tmp) / "t.xml"
            lt.write_junit(res, f, "cudalab.starter")
            self.check(f)
            root = ET.parse(f).getroot()
            self.assertEqual((root.get("tests"), root.get("failures"), root.get("skipped"), root.get("errors")),
                             ("3", "1", "1", "0"))
            self.assertIsNone(root.find("testcase/properties"))
            self.assertIn("labels: ch05;starter;ex:5.1;gpu", root.find("testcase/system-out").text)

    def test_per_exercise_file(self):
        cases = [lt.JunitCase("cudalab.ch05", "exercise 5.4", "passed", system_out="score 2/2; speed 0.930x vendor"),
                 lt.JunitCase("cudalab.ch05", "exercise 5.5", "failed", "does not compile: x.cu(3): error", "full"),
                 lt.JunitCase("cudalab.ch05", "exercise 5.6", "skipped", "not graded: needs a GPU")]
        with tempfile.TemporaryDirectory() as tmp:
            f = Path(tmp) / "g.xml"
            lt.write_junit_cases(cases, f, "cudalab.starter")
            self.check(f)

    def test_the_validator_rejects_what_the_schema_rejects(self):
        bad = {
            "properties inside a testcase": '<testsuite name="s" tests="1" failures="0" errors="0" skipped="0" time="0" '
                                            'timestamp="2026-01-01T00:00:00" hostname="h"><testcase name="a" classname="c" '
                                            'time="0"><properties><property name="x" value="1"/></properties></testcase></testsuite>',
            "no timestamp": '<testsuite name="s" tests="0" failures="0" errors="0" skipped="0" time="0" hostname="h"/>',
            "time not a decimal": '<testsuite name="s" tests="0" failures="0" errors="0" skipped="0" time="1s" '
                                  'timestamp="2026-01-01T00:00:00" hostname="h"/>',
            "two results": '<testsuite name="s" tests="1" failures="1" errors="0" skipped="0" time="0" '
                           'timestamp="2026-01-01T00:00:00" hostname="h"><testcase name="a" classname="c" time="0">'
                           '<failure/><skipped/></testcase></testsuite>',
            "unknown attribute": '<testsuite name="s" tests="0" failures="0" errors="0" skipped="0" time="0" '
                                 'timestamp="2026-01-01T00:00:00" hostname="h" status="x"/>',
        }
        for why, xml in bad.items():
            with self.subTest(why):
                self.assertNotEqual(self.schema.validate(ET.fromstring(xml)), [])
        good = ('<testsuite name="s" tests="1" failures="0" errors="0" skipped="0" time="0.5" '
                'timestamp="2026-01-01T00:00:00" hostname="h"><properties><property name="x" value="1"/></properties>'
                '<testcase name="a" classname="c" time="0.5"><system-out>o</system-out></testcase></testsuite>')
        self.assertEqual(self.schema.validate(ET.fromstring(good)), [])


if __name__ == "__main__":
    unittest.main()
