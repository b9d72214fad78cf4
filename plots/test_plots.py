"""Tests of plots/: every script end to end on testdata/tiny.csv (and testdata/flashinfer.csv, FlashInfer
peers at the same points), the bad-input exits, Eq. 10, the speedup join and best-of methods. Run with the
Debian python3 (it has matplotlib and numpy), from the repository root:

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
CPU = os.path.join(HERE, "testdata", "cpu.csv")  # a real run of the cpu preset: Hkv 8 and 1, floors under 1
FLASHINFER = os.path.join(HERE, "testdata", "flashinfer.csv")  # the three FlashInfer methods at tiny's GPU points
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def plot(script, *args):
    """Runs plots/SCRIPT with this interpreter (the one that has matplotlib), returns the finished process."""
    return subprocess.run([sys.executable, os.path.join(HERE, script), *args], capture_output=True, text=True,
                          timeout=120)


class Scripts(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def assert_png(self, script, *args, files=(TINY,)):
        out = os.path.join(self.dir.name, "figure.png")
        done = plot(script, *files, "--out", out, *args)
        self.assertEqual(done.returncode, 0, done.stderr)
        with open(out, "rb") as f:
            self.assertEqual(f.read(8), PNG_SIGNATURE)
        self.assertGreater(os.path.getsize(out), 10_000)

    def assert_bad_input(self, script, *args):
        done = plot(script, *args, "--out", os.path.join(self.dir.name, "figure.png"))
        self.assertEqual(done.returncode, 2, done.stderr)
        self.assertEqual(len(done.stderr.strip().splitlines()), 1, done.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.dir.name, "figure.png")))
        return done.stderr

    def test_each_script_draws_the_fixture(self):
        for script in ("fig4_speedup.py", "heatmap.py", "floor.py", "relay_eq10.py"):
            with self.subTest(script=script):
                self.assert_png(script)

    def test_the_cpu_preset_draws_both_head_layouts(self):
        for script in ("scaling.py", "floor.py", "relay_eq10.py"):
            with self.subTest(script=script):
                self.assert_png(script, files=(CPU,))

    def test_scaling_needs_one_suffix_length(self):
        self.assertIn("--where S=", self.assert_bad_input("scaling.py", TINY, "--where", "device=cpu"))

    def test_trees_draws_shared_and_copied_groups(self):
        self.assert_png("trees.py", files=(os.path.join(HERE, "testdata", "trees.csv"),))

    def test_trees_draws_one_line_per_tree_shape(self):
        """Two shapes at every B (the trees preset) are two lines per method, not one through both; the
        fig6 preset's Nx300-800, whose N grows with B, is one shape."""
        import trees
        self.assertEqual(trees.family("16x1024"), "Gx1024")
        self.assertEqual(trees.family("copy:4x1024/4x256"), "Gx1024/4x256")
        self.assertEqual(trees.family("1x300-800"), trees.family("copy:16x300-800"))
        two = os.path.join(self.dir.name, "two-shapes.csv")
        with open(os.path.join(HERE, "testdata", "trees.csv")) as src, open(two, "w") as dst:
            lines = src.read().splitlines()
            dst.write("\n".join(lines + [l.replace("x300-800", "x300-800/2x64") for l in lines[1:]]) + "\n")
        self.assert_png("trees.py", files=(two,))

    def test_trees_needs_trees_of_levels(self):
        self.assertIn("no rows with a tree of levels", self.assert_bad_input("trees.py", TINY))

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

    def test_flashinfer_peers_and_best_of_baselines(self):
        both = (TINY, FLASHINFER)
        self.assert_png("floor.py", files=both)  # a panel per FlashInfer method like any other
        self.assert_png("fig4_speedup.py", files=both)  # FlashInfer as thin lines by default
        for baseline in ("flashinfer", "best-flat", "flashinfer-cascade:shared,flashinfer-paged-tc"):
            with self.subTest(baseline=baseline):
                self.assert_png("heatmap.py", "--baseline", baseline, "--where", "S=64,1024", files=both)
                self.assert_png("fig4_speedup.py", "--baseline", baseline, "--also", "flashinfer,cuda-flash",
                                files=both)
        self.assert_png("relay_eq10.py", "--target", "flashinfer", "--baseline", "best-flat", files=both)

    def test_a_method_of_a_list_without_rows_is_named(self):
        error = self.assert_bad_input("heatmap.py", TINY, FLASHINFER, "--baseline", "cuda-flash:shared,cuda-flsh")
        self.assertIn("cuda-flsh:shared", error)
        error = self.assert_bad_input("heatmap.py", TINY, "--baseline", "flashinfer")  # no FlashInfer file
        self.assertIn("flashinfer", error)


class UnderTheFloor(unittest.TestCase):
    def test_the_note_tells_a_flop_bound_floor_from_a_byte_bound_one(self):
        import floor
        rows = [r for r in common.load([CPU], floor.COLUMNS) if r["status"] == "ok"]
        note = floor.under_floor_note(rows)
        self.assertIn("4 of 24 points run under their floor (down to 0.72x)", note)
        self.assertIn("4 with a FLOP-bound floor", note)
        self.assertNotIn("byte-bound", note)
        self.assertEqual(floor.under_floor_note([dict(r, time_over_floor=2.0) for r in rows]), "")

    def test_a_byte_bound_point_under_its_floor_is_the_cache(self):
        import floor
        run = {"device": "cpu", "commit": "c"}
        # One run's peaks: 1 TFLOP/s (the first row is FLOP-bound), 100 GB/s (the second is byte-bound).
        rows = [dict(run, tflops=0.5, gbps=10.0, time_over_floor=2.0), dict(run, tflops=0.1, gbps=200.0, time_over_floor=0.5)]
        note = floor.under_floor_note(rows)
        self.assertIn("1 of 2 points run under their floor (down to 0.50x)", note)
        self.assertIn("1 with a byte-bound floor: the K/V they re-read stays in the last-level cache", note)
        self.assertNotIn("FLOP-bound", note)


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


def row(backend, storage, b, median, status="ok", hq=8, s=64, q_len=1, tree="prefix"):
    return {"device": "gpu", "dtype": "bf16", "B": b, "P": 1024, "S": s, "q_len": q_len, "Hq": hq, "Hkv": 1, "D": 128,
            "tree": tree, "backend": backend, "storage": storage, "median_ms": median, "status": status}


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

    def test_another_tree_is_another_point(self):
        rows = [row("cuda-flash", "redundant", 32, 3.0), row("cuda-hydragen", "shared", 32, 1.5, tree="4x16"),
                row("cuda-hydragen", "shared", 32, 1.0)]
        [ratio] = common.speedups(rows, "cuda-hydragen:shared", "cuda-flash:redundant")
        self.assertEqual(ratio.shape["tree"], "prefix")
        self.assertAlmostEqual(ratio.speedup, 3.0)

    def test_a_file_from_before_the_tree_column_is_the_prefix_tree(self):
        rows = common.load([TINY], common.SPEEDUP_COLUMNS)
        self.assertTrue(all(r["tree"] == "prefix" for r in rows))

    def test_baseline_out_of_memory_is_an_x(self):
        rows = [row("cuda-flash", "redundant", 32, None, status="oom"), row("cuda-hydragen", "shared", 32, 1.5)]
        [ratio] = common.speedups(rows, "cuda-hydragen:shared", "cuda-flash:redundant")
        self.assertIsNone(ratio.speedup)
        self.assertEqual(ratio.note(), "x")

    def test_no_common_point_is_bad_input(self):
        rows = [row("cuda-flash", "redundant", 32, 3.0), row("cuda-hydragen", "shared", 64, 1.5)]
        with self.assertRaises(common.InputError):
            common.joined(rows, "cuda-hydragen:shared", "cuda-flash:redundant")


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


class BestOf(unittest.TestCase):
    """--baseline/--target A,B,... (or an alias) stands at each point for the fastest of A, B, ... that ran."""

    def test_the_fastest_ok_member_at_each_point(self):
        rows = [row("cuda-hydragen", "shared", 32, 1.0), row("cuda-hydragen", "shared", 64, 1.0),
                row("cuda-flash", "shared", 32, 3.0), row("flashinfer-paged", "shared", 32, 2.0),
                row("cuda-flash", "shared", 64, 1.5), row("flashinfer-paged", "shared", 64, 2.5),
                row("cuda-flash", "redundant", 64, None, status="oom")]  # oom does not hide the ok members
        baseline = common.parse_methods("cuda-flash:shared,flashinfer-paged,cuda-flash:redundant")
        ratios = common.speedups(rows, "cuda-hydragen:shared", baseline)
        self.assertEqual({r.shape["B"]: r.speedup for r in ratios}, {32: 2.0, 64: 1.5})

    def test_a_best_of_target(self):
        rows = [row("cuda-flash", "redundant", 32, 4.0), row("flashinfer-cascade", "shared", 32, 2.0),
                row("flashinfer-paged", "shared", 32, 1.0), row("flashinfer-paged-tc", "shared", 32, 8.0)]
        [ratio] = common.speedups(rows, common.parse_methods("flashinfer"), "cuda-flash:redundant")
        self.assertAlmostEqual(ratio.speedup, 4.0)

    def test_aliases_expand(self):
        flashinfer = ("flashinfer-cascade:shared", "flashinfer-paged:shared", "flashinfer-paged-tc:shared",
                      "flashinfer-prefix-fa3:shared", "flashinfer-prefix-fa2:shared")
        flat = ("cuda-flash:shared", "cuda-flash:redundant", "torch-flash:redundant", "flashinfer-paged:shared",
                "flashinfer-paged-tc:shared")
        self.assertEqual(common.parse_methods("flashinfer").members, flashinfer)
        self.assertEqual(common.parse_methods("best-flat").members, flat)
        # In a list an alias stands for its members, each member once.
        self.assertEqual(common.parse_methods("flashinfer-paged,flashinfer,cuda-hydragen").members,
                         ("flashinfer-paged:shared", "flashinfer-cascade:shared", "flashinfer-paged-tc:shared",
                          "flashinfer-prefix-fa3:shared", "flashinfer-prefix-fa2:shared", "cuda-hydragen:shared"))
        self.assertFalse(common.parse_methods("cuda-flash:redundant").best_of)
        self.assertTrue(common.parse_methods("cuda-flash:redundant,cuda-flash:shared").best_of)

    def test_labels_name_the_members_measured(self):
        rows = common.load([TINY, FLASHINFER], common.SPEEDUP_COLUMNS)  # no torch-flash rows
        target, baseline, _ = common.comparison(rows, None, common.parse_methods("best-flat"))
        self.assertEqual(common.method_label(baseline),
                         "best flat (fastest of cuda-flash:shared, cuda-flash:redundant, flashinfer-paged:shared, "
                         "flashinfer-paged-tc:shared)")
        listed = common.parse_methods("flashinfer-cascade,flashinfer-paged")
        self.assertEqual(common.method_label(listed), "fastest of flashinfer-cascade:shared, flashinfer-paged:shared")
        # cuda-hydragen over FlashInfer's better form, from the files: at B=32, P=1024, S=64 flashinfer-paged
        # (0.020 ms) is the fastest of the three and cuda-hydragen takes 0.024 ms.
        ratios = common.speedups(rows, target, common.parse_methods("flashinfer"))
        [ratio] = [r for r in ratios if (r.shape["B"], r.shape["S"]) == (32, 64)]
        self.assertAlmostEqual(ratio.speedup, 0.020 / 0.024)

    def test_only_unsupported_members_is_missing_not_zero(self):
        # q_len 2, S = 0: the cascade needs a suffix and the CUDA-core paged decode one query.
        rows = [row("cuda-hydragen", "shared", b, 1.0, s=0, q_len=2) for b in (32, 64)] + \
               [row("flashinfer-cascade", "shared", b, None, status="unsupported", s=0, q_len=2) for b in (32, 64)] + \
               [row("flashinfer-paged", "shared", b, None, status="unsupported", s=0, q_len=2) for b in (32, 64)] + \
               [row("flashinfer-paged-tc", "shared", 64, 3.0, s=0, q_len=2)]
        ratios = common.speedups(rows, "cuda-hydragen:shared", common.parse_methods("flashinfer"))
        self.assertEqual([(r.shape["B"], r.speedup) for r in ratios], [(64, 3.0)])  # B=32: no ratio at all
        pair = common.parse_methods("flashinfer-cascade,flashinfer-paged")
        self.assertEqual(common.speedups(rows, "cuda-hydragen:shared", pair), [])

    def test_every_member_out_of_memory_is_an_x(self):
        rows = [row("cuda-hydragen", "shared", 32, 1.0), row("cuda-flash", "shared", 32, None, status="oom"),
                row("cuda-flash", "redundant", 32, None, status="oom"),
                row("flashinfer-paged-tc", "shared", 32, None, status="unsupported")]  # did not run: ignored
        [ratio] = common.speedups(rows, "cuda-hydragen:shared", common.parse_methods("best-flat"))
        self.assertIsNone(ratio.speedup)
        self.assertEqual(ratio.note(), "x")
        # A member that failed otherwise is no "x": its status is the note.
        rows.append(row("flashinfer-paged", "shared", 32, None, status="error"))
        [ratio] = common.speedups(rows, "cuda-hydragen:shared", common.parse_methods("best-flat"))
        self.assertEqual(ratio.note(), "error")

    def test_an_unknown_method_in_a_list_is_an_error_naming_it(self):
        rows = [row("cuda-hydragen", "shared", 32, 1.0), row("cuda-flash", "shared", 32, 2.0)]
        with self.assertRaisesRegex(common.InputError, "cuda-flsh:redundant"):
            common.comparison(rows, None, common.parse_methods("cuda-flash:shared,cuda-flsh:redundant"))
        with self.assertRaisesRegex(Exception, "cuda-flash:paged"):  # not a backend spec at all
            common.parse_methods("cuda-flash:shared,cuda-flash:paged")
        # An alias only needs one of its members: best-flat here is cuda-flash:shared alone.
        _, baseline, _ = common.comparison(rows, None, common.parse_methods("best-flat"))
        self.assertEqual(baseline.members, ("cuda-flash:shared",))
        with self.assertRaisesRegex(common.InputError, "flashinfer"):
            common.comparison(rows, None, common.parse_methods("flashinfer"))


class Peers(unittest.TestCase):
    def test_flashinfer_has_its_own_colors_and_default_lines(self):
        self.assertEqual(len(set(common.COLORS.values())), len(common.COLORS))
        rows = common.load([TINY, FLASHINFER], common.SPEEDUP_COLUMNS)
        _, _, extra = common.comparison(rows, None, None)
        self.assertEqual([str(m) for m in extra if m.members[0].startswith("flashinfer")],
                         ["flashinfer-cascade:shared", "flashinfer-paged:shared", "flashinfer-paged-tc:shared"])


if __name__ == "__main__":
    unittest.main()
