"""Tests of plots/: every script end to end on testdata/tiny.csv, the bad-input exits, Eq. 10 and the
speedup join. Run with the Debian python3 (it has matplotlib and numpy), from the repository root:

    /usr/bin/python3 -m unittest discover -s plots -p 'test_*.py'
"""
import csv
import os
import subprocess
import sys
import tempfile
import unittest

import common
from relay_eq10 import relay_speedup

HERE = os.path.dirname(os.path.abspath(__file__))
TINY = os.path.join(HERE, "testdata", "tiny.csv")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def plot(script, *args):
    """Runs plots/SCRIPT with this interpreter (the one that has matplotlib), returns the finished process."""
    return subprocess.run([sys.executable, os.path.join(HERE, script), *args], capture_output=True, text=True,
                          timeout=120)


class Scripts(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def assert_png(self, script, *args):
        out = os.path.join(self.dir.name, "figure.png")
        done = plot(script, TINY, "--out", out, *args)
        self.assertEqual(done.returncode, 0, done.stderr)
        with open(out, "rb") as f:
            self.assertEqual(f.read(8), PNG_SIGNATURE)
        self.assertGreater(os.path.getsize(out), 10_000)

    def assert_bad_input(self, script, *args):
        done = plot(script, *args, "--out", os.path.join(self.dir.name, "figure.png"))
        self.assertEqual(done.returncode, 2, done.stderr)
        self.assertEqual(len(done.stderr.strip().splitlines()), 1, done.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.dir.name, "figure.png")))

    def test_each_script_draws_the_fixture(self):
        for script in ("fig4_speedup.py", "heatmap.py", "floor.py", "relay_eq10.py"):
            with self.subTest(script=script):
                self.assert_png(script)

    def test_explicit_methods_and_cpu_defaults(self):
        self.assert_png("fig4_speedup.py", "--target", "cuda-flash:shared", "--also", "")
        self.assert_png("relay_eq10.py", "--where", "device=cpu")  # picks cpu-flat vs cpu-hydragen itself

    def test_missing_file(self):
        self.assert_bad_input("fig4_speedup.py", os.path.join(self.dir.name, "absent.csv"))

    def test_missing_column(self):
        path = os.path.join(self.dir.name, "no-median.csv")
        with open(TINY, newline="") as src, open(path, "w", newline="") as dst:
            rows = list(csv.DictReader(src))
            writer = csv.DictWriter(dst, [c for c in rows[0] if c != "median_ms"], extrasaction="ignore")
            writer.writeheader()
            writer.writerows(rows)
        for script in ("fig4_speedup.py", "heatmap.py", "relay_eq10.py"):
            with self.subTest(script=script):
                self.assert_bad_input(script, path)

    def test_no_matching_rows(self):
        self.assert_bad_input("heatmap.py", TINY, "--where", "device=none")
        self.assert_bad_input("floor.py", TINY, "--where", "device=cpu")  # CPU rows have no floor
        self.assert_bad_input("fig4_speedup.py", TINY, "--target", "cuda-naive")


class Eq10(unittest.TestCase):
    def test_g1_is_the_papers_formula(self):
        for s, c, b in ((0, 128, 32), (1024, 128, 32), (4096, 64, 1), (16384, 0, 1024)):
            self.assertAlmostEqual(relay_speedup(s, c, b), (s + c + 2) / (s / b + c + 7))
            self.assertAlmostEqual(relay_speedup(s, c, b, g=1), (s + c + 2) / (s / b + c + 7))

    def test_large_batch_limit(self):
        for s, c, g in ((1024, 128, 1), (16384, 64, 8), (4096, 0, 4)):
            self.assertAlmostEqual(relay_speedup(s, c, 1e12, g), (s + c + 2 * g) / (c + 7 * g), places=6)

    def test_matches_the_element_count(self):
        b, s, c, g, d = 32, 2048, 128, 8, 128
        unshared = b * g * d + b * (s + c) * d + b * g * d
        shared = (b * g * d + s * d + b * g * d) + (b * g * d + b * c * d + b * g * d) + 3 * b * g * d
        self.assertAlmostEqual(relay_speedup(s, c, b, g), unshared / shared)


def row(backend, storage, b, median, status="ok", hq=8):
    return {"device": "gpu", "dtype": "bf16", "B": b, "P": 1024, "S": 64, "q_len": 1, "Hq": hq, "Hkv": 1, "D": 128,
            "backend": backend, "storage": storage, "median_ms": median, "status": status}


class Join(unittest.TestCase):
    def test_ratio_on_matching_points_only(self):
        rows = [row("cuda-flash", "redundant", 32, 3.0), row("cuda-hydragen", "shared", 32, 1.5),
                row("cuda-flash", "redundant", 64, 4.0),                      # no target at B=64
                row("cuda-hydragen", "shared", 128, 1.0),                     # no baseline at B=128
                row("cuda-hydragen", "shared", 32, 1.0, hq=16),               # another shape
                row("cuda-flash", "shared", 32, 9.0)]                         # another method
        ratios = common.speedups(rows, "cuda-hydragen:shared", "cuda-flash:redundant")
        self.assertEqual(len(ratios), 1)
        self.assertEqual((ratios[0].shape["B"], ratios[0].shape["Hq"]), (32, 8))
        self.assertAlmostEqual(ratios[0].speedup, 2.0)

    def test_baseline_out_of_memory_is_an_x(self):
        rows = [row("cuda-flash", "redundant", 32, None, status="oom"), row("cuda-hydragen", "shared", 32, 1.5)]
        [ratio] = common.speedups(rows, "cuda-hydragen:shared", "cuda-flash:redundant")
        self.assertIsNone(ratio.speedup)
        self.assertEqual(ratio.note(), "x")

    def test_no_common_point_is_bad_input(self):
        rows = [row("cuda-flash", "redundant", 32, 3.0), row("cuda-hydragen", "shared", 64, 1.5)]
        with self.assertRaises(common.InputError):
            common.joined(rows, "cuda-hydragen:shared", "cuda-flash:redundant")


if __name__ == "__main__":
    unittest.main()


class Methods(unittest.TestCase):
    def test_a_backend_spec_with_plan_options_keeps_them_in_the_key(self):
        self.assertEqual(common.parse_method("cuda-hydragen:form=wide"), "cuda-hydragen:form=wide:shared")
        self.assertEqual(common.parse_method("cuda-flash:redundant"), "cuda-flash:redundant")
        self.assertEqual(common.parse_method("cuda-hydragen:redundant:kernel=mma"), "cuda-hydragen:kernel=mma:redundant")
        key = common.method_key({"backend": "cuda-hydragen:kernel=mma", "storage": "shared"})
        self.assertEqual(key, common.parse_method("cuda-hydragen:kernel=mma"))
        self.assertEqual(common.method_label(key), "cuda-hydragen:kernel=mma (shared)")

    def test_a_bad_spec_is_refused(self):
        for spec in ("cuda-flash:paged", ":shared", "x:shared:redundant"):
            with self.assertRaises(Exception, msg=spec):
                common.parse_method(spec)
