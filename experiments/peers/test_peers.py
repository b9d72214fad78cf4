"""The peers' command line and bookkeeping, without a GPU: the presets are hydragen-sweep's point for point
(HYDRAGEN_SWEEP names its binary), the cost is the C++ cost model's, the sharing trees' page layout, page tables,
cascade levels and check spec are the tree's, bad usage is one line and exit 2."""
import csv
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import flashinfer_methods as fm  # noqa: E402 (imports neither torch nor flashinfer)
import harness  # noqa: E402
import npy_check  # noqa: E402
import trees  # noqa: E402

PEERS = [sys.executable, os.path.join(HERE, "peers.py")]


def run(args, cmd=None):
    return subprocess.run((cmd or PEERS) + args, capture_output=True, text=True)


class Presets(unittest.TestCase):
    @unittest.skipUnless(os.environ.get("HYDRAGEN_SWEEP"), "HYDRAGEN_SWEEP (the hydragen-sweep binary) not set")
    def test_every_preset_has_the_sweeps_points_in_its_order(self):
        for name in harness.PRESETS:
            with self.subTest(preset=name):
                ours = run(["--preset", name, "--points"])
                sweep = run(["--preset", name, "--points"], cmd=[os.environ["HYDRAGEN_SWEEP"]])
                self.assertEqual(sweep.returncode, 0, sweep.stderr)
                self.assertEqual(ours.returncode, 0, ours.stderr)
                self.assertEqual(ours.stdout.splitlines(), sweep.stdout.splitlines())

    @unittest.skipUnless(os.environ.get("HYDRAGEN_SWEEP"), "HYDRAGEN_SWEEP (the hydragen-sweep binary) not set")
    def test_explicit_trees_are_the_sweeps(self):
        args = ["--batch", "8,16", "--prefix", "64", "--suffix", "0,4", "--tree",
                "prefix,2x16,copy:2x16/2x8,002x3-9/4x1,copy:8x300-800", "--points"]
        ours, sweep = run(args), run(args, cmd=[os.environ["HYDRAGEN_SWEEP"]])
        self.assertEqual(sweep.returncode, 0, sweep.stderr)
        self.assertEqual(ours.returncode, 0, ours.stderr)
        self.assertEqual(ours.stdout.splitlines(), sweep.stdout.splitlines())

    def test_explicit_lists_are_their_product(self):
        r = run(["--batch", "2,4", "--prefix", "16", "--suffix", "8", "--q-len", "1,3", "--q-heads", "4",
                 "--kv-heads", "2", "--head-dim", "64", "--points"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split(), ["2,16,8,1,4,2,64", "2,16,8,3,4,2,64", "4,16,8,1,4,2,64", "4,16,8,3,4,2,64"])

    def test_trees_preset(self):
        # hydragen-sweep --preset trees --points (grid.cpp's trees()): the tree innermost, written as the sweep does
        r = run(["--preset", "trees", "--points"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split(), [f"{b},4096,64,1,8,1,128,{t}" for b in (256, 1024) for t in
                                            ("16x1024", "copy:16x1024", "4x1024/4x256", "copy:4x1024/4x256")])

    def test_trees_are_the_innermost_list_written_as_the_sweep_writes_them(self):
        r = run(["--batch", "4,8", "--prefix", "16", "--suffix", "2", "--tree", "prefix,copy:02x4/2x3,2x3-5",
                 "--points"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split(), [f"{b},16,2,1,8,1,128{t}" for b in (4, 8)
                                            for t in ("", ",copy:2x4/2x3", ",2x3-5")])


class Trees(unittest.TestCase):
    """hydragen-sweep's --tree grammar (core/src/tree_spec.cpp) and its segment order."""

    def test_the_texts_read_back_as_the_sweep_writes_them(self):
        for text in ("prefix", "16x1024", "copy:16x1024", "4x1024/4x256", "8x300-800", "copy:2x0-7/3x5"):
            self.assertEqual(trees.tree_text(trees.parse_tree(text)), text)
        self.assertEqual(trees.parse_tree("copy:4x1024/4x256"),
                         trees.Tree((trees.Level(4, 1024, 1024), trees.Level(4, 256, 256)), True))
        for bad in ("flat", "two-level", "16", "16x", "x4", "0x4", "4x8-2", "4x-3", "copy:", "4x8/", "copy:flat"):
            with self.subTest(text=bad), self.assertRaises(ValueError):
                trees.parse_tree(bad)

    def test_a_ragged_level_takes_the_midpoints_of_equal_bins(self):
        pt = harness.Point(8, 16, 2, 1, 8, 1, 128, "8x300-800")  # docs/tools.md#trees: 331, 393, ..., 768
        self.assertEqual([g.tokens for g in trees.tree_levels(pt)[0]], [331, 393, 456, 518, 581, 643, 706, 768])

    def test_groups_of_consecutive_sequences_level_by_level(self):
        levels = trees.tree_levels(harness.Point(8, 16, 2, 1, 8, 1, 128, "2x4/2x3"))
        self.assertEqual([[(g.tokens, list(g.seqs)) for g in level] for level in levels],
                         [[(4, [0, 1, 2, 3]), (4, [4, 5, 6, 7])],
                          [(3, [0, 1]), (3, [2, 3]), (3, [4, 5]), (3, [6, 7])]])
        self.assertEqual([trees.path_groups(levels, b) for b in (0, 3, 4, 7)], [[0, 2], [0, 3], [1, 4], [1, 5]])
        self.assertEqual(trees.tree_levels(harness.Point(8, 16, 2, 1, 8, 1, 128)), [])


class Cost(unittest.TestCase):
    def test_decode_counts_every_token_once_per_query_row(self):
        pt = harness.Point(B=4, P=100, S=10, q_len=1, Hq=8, Hkv=2, D=64)
        flops, floor_bytes = harness.cost(pt)
        self.assertEqual(flops, 4.0 * 4 * 8 * 64 * 110)
        kv = (100 + 4 * 10) * 2 * 64 * 2 * 2  # distinct tokens, Hkv, D, K and V, bf16
        self.assertEqual(floor_bytes, kv + 4 * 8 * 64 * 2 + 4 * 8 * (64 * 2 + 4))

    def test_causal_queries_leave_out_their_tail(self):
        # q_len 3: the queries see P + S - 2, P + S - 1 and P + S tokens.
        pt = harness.Point(B=1, P=5, S=4, q_len=3, Hq=1, Hkv=1, D=2)
        self.assertEqual(harness.cost(pt)[0], 4.0 * 2 * (7 + 8 + 9))

    def test_a_tree_counts_its_paths_and_a_copy_its_groups_per_sequence(self):
        # 4 sequences, 2 groups of 3 tokens: paths of 10 + 3 + 2; queries see 14 and 15 of them.
        pt = harness.Point(B=4, P=10, S=2, q_len=2, Hq=1, Hkv=1, D=2, tree="2x3")
        flops, floor_bytes = harness.cost(pt)
        self.assertEqual(flops, 4.0 * 2 * 4 * (14 + 15))
        q_o_lse = 8 * 2 * 2 + 8 * (2 * 2 + 4)
        self.assertEqual(floor_bytes, (10 + 2 * 3 + 4 * 2) * 1 * 2 * 2 * 2 + q_o_lse)  # each group once
        flops, floor_bytes = harness.cost(pt._replace(tree="copy:2x3"))  # the sweep's copy tree: P + 4 (3 + 2)
        self.assertEqual(flops, 4.0 * 2 * 4 * (14 + 15))
        self.assertEqual(floor_bytes, (10 + 4 * 3 + 4 * 2) * 1 * 2 * 2 * 2 + q_o_lse)


class NominalPeaks(unittest.TestCase):
    def test_the_datasheet_rows_hydragen_sweep_compiles_in(self):
        self.assertEqual(harness.nominal_peaks("NVIDIA H100 80GB HBM3"), (989.4e12, 3.35e12))
        self.assertIsNone(harness.nominal_peaks("NVIDIA Made-Up GPU 9000"))


try:
    import numpy as np
except ImportError:
    np = None


def attention64(q, k, v, drop=None):
    """fp64 O [q_len=1 rows, Hq, D] and LSE of one sequence's queries over its keys [L, Hkv, D]; `drop`: a key
    index left out (the broken kernel the check must catch)."""
    keep = [i for i in range(k.shape[0]) if i != drop]
    k, v = k[keep].astype(np.float64), v[keep].astype(np.float64)
    g = q.shape[0] // k.shape[1]
    s = np.einsum("hd,lhd->hl", q.astype(np.float64), np.repeat(k, g, axis=1)) / np.sqrt(q.shape[-1])
    m = s.max(-1, keepdims=True)
    p = np.exp(s - m)
    return np.einsum("hl,lhd->hd", p / p.sum(-1, keepdims=True), np.repeat(v, g, axis=1)), (m[:, 0] + np.log(p.sum(-1)))


@unittest.skipUnless(os.environ.get("HYDRAGEN_DIFF") and np is not None, "HYDRAGEN_DIFF (hydragen-diff) or NumPy missing")
class NpyCheck(unittest.TestCase):
    """A peer's output is judged by hydragen-diff on the point's inputs: the exact output passes, one without
    one key of one sequence fails, judged against the reference the point's first judgement wrote."""

    def test_exact_passes_and_a_dropped_key_fails(self):
        pt = harness.Point(B=3, P=40, S=5, q_len=1, Hq=4, Hkv=2, D=16)
        rng = np.random.default_rng(0)
        x = dict(q=rng.standard_normal((3, 1, 4, 16), np.float32), pk=rng.standard_normal((40, 2, 16), np.float32),
                 pv=rng.standard_normal((40, 2, 16), np.float32), sk=rng.standard_normal((3, 5, 2, 16), np.float32),
                 sv=rng.standard_normal((3, 5, 2, 16), np.float32))

        def outputs(drop_in_seq1=None):
            o, lse = zip(*(attention64(x["q"][b, 0], np.concatenate([x["pk"], x["sk"][b]]),
                                       np.concatenate([x["pv"], x["sv"][b]]), drop_in_seq1 if b == 1 else None)
                           for b in range(3)))
            return np.stack(o)[:, None].astype(np.float32), np.stack(lse)[:, None].astype(np.float32)

        with tempfile.TemporaryDirectory() as folder:
            check = npy_check.NpyCheck(os.environ["HYDRAGEN_DIFF"], folder)
            check.write_inputs(x, pt)
            passed, line = check.judge(*outputs())
            self.assertTrue(passed, line)
            passed, line = check.judge(*outputs(drop_in_seq1=17))
            self.assertFalse(passed, line)
            self.assertIn("FAIL", line)
            self.assertIn("reference=", line)  # the second judgement read the first's reference
            passed, line = check.judge(*outputs())
            self.assertTrue(passed, line)

    def test_a_tree_over_some_sequences(self):
        # 8 sequences under 2 groups of 5 tokens, each split in 2 groups of 3; sequences 0, 4 and 7 checked.
        pt = harness.Point(B=8, P=24, S=2, q_len=1, Hq=4, Hkv=2, D=16, tree="2x5/2x3")
        rng = np.random.default_rng(1)

        def randn(*shape):
            return rng.standard_normal(shape, np.float32)

        x = dict(q=randn(8, 1, 4, 16), pk=randn(24, 2, 16), pv=randn(24, 2, 16), sk=randn(8, 2, 2, 16),
                 sv=randn(8, 2, 2, 16), gk=[randn(n, 2, 16) for n in (5, 5, 3, 3, 3, 3)],
                 gv=[randn(n, 2, 16) for n in (5, 5, 3, 3, 3, 3)])
        levels = trees.tree_levels(pt)

        def path(b, kv):
            groups = [x["g" + kv][i] for i in trees.path_groups(levels, b)]
            return np.concatenate([x["p" + kv], *groups, x["s" + kv][b]])

        def outputs(drop_in_seq7=None):  # sequence 7's key 26: the third token of its outer group (group 1)
            o, lse = zip(*(attention64(x["q"][b, 0], path(b, "k"), path(b, "v"), drop_in_seq7 if b == 7 else None)
                           for b in range(8)))
            return np.stack(o)[:, None].astype(np.float32), np.stack(lse)[:, None].astype(np.float32)

        with tempfile.TemporaryDirectory() as folder:
            check = npy_check.NpyCheck(os.environ["HYDRAGEN_DIFF"], folder, check_seqs=3)
            check.write_inputs(x, pt)
            self.assertEqual(check.seqs, [0, 4, 7])
            passed, line = check.judge(*outputs())
            self.assertTrue(passed, line)
            passed, line = check.judge(*outputs(drop_in_seq7=26))
            self.assertFalse(passed, line)


class Versus(unittest.TestCase):
    def test_ours_against_the_fastest_form_of_the_same_file(self):
        rows = [("cuda-hydragen", 0.5, "ok"), ("flashinfer-prefix-fa3", 0.4, "ok"), ("flashinfer-paged-tc", 2.0, "ok"),
                ("flashinfer-cascade", 0.1, "error")]
        with tempfile.TemporaryDirectory() as folder:
            path, out = os.path.join(folder, "run.csv"), os.path.join(folder, "versus.csv")
            with open(path, "w") as f:
                f.write(harness.CSV_HEADER)
                for backend, ms, status in rows:
                    f.write(f'"GPU",abc,{backend},shared,bf16,8,64,0,1,8,1,128,prefix,{ms},{ms},{ms},1,1,0.1,1,,{status},""\n')
            r = run([path, "--csv", out], cmd=[sys.executable, os.path.join(HERE, "versus.py")])
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("flashinfer-prefix-fa3 0.4000 ms  ours/best 1.250", r.stdout)  # the failed cascade is no form
            self.assertIn("faster than the best flashinfer-* form at 0 of 1 points", r.stdout)

    def test_a_tree_and_its_copy_are_points_of_their_own(self):
        rows = [("cuda-hydragen", 0.5, "16x1024"), ("flashinfer-cascade", 0.4, "16x1024"),
                ("cuda-hydragen", 0.9, "copy:16x1024"), ("flashinfer-cascade", 1.8, "copy:16x1024")]
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "run.csv")
            with open(path, "w") as f:
                f.write(harness.CSV_HEADER)
                for backend, ms, tree in rows:
                    f.write(f'"GPU",abc,{backend},shared,bf16,256,4096,64,1,8,1,128,{tree},{ms},{ms},{ms},1,1,0.1,1,,'
                            f'ok,"",""\n')
            r = run([path], cmd=[sys.executable, os.path.join(HERE, "versus.py")])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("tree=16x1024  ours 0.5000 ms  flashinfer-cascade 0.4000 ms  ours/best 1.250", r.stdout)
        self.assertIn("tree=copy:16x1024  ours 0.9000 ms  flashinfer-cascade 1.8000 ms  ours/best 0.500", r.stdout)


class Resume(unittest.TestCase):
    """--resume keeps the points an earlier run finished on this GPU at this commit and measures the rest whole."""

    @staticmethod
    def row(backend, B, device="GPU", sha="abc"):
        return f'"{device}",{sha},{backend},shared,bf16,{B},64,0,1,8,1,128,prefix,1,1,1,1,1,0.1,1,,ok,"",""\n'

    def test_a_whole_point_is_kept_and_a_begun_one_measured_again(self):
        lines = [harness.CSV_HEADER, self.row("cuda-hydragen", 8), self.row("flashinfer-prefix-fa3", 8),
                 self.row("cuda-hydragen", 16),  # cut off before its peer ran
                 self.row("cuda-hydragen", 32, device="Other GPU"), self.row("flashinfer-prefix-fa3", 32, sha="old")]
        keep, done = harness.resumed(lines, "GPU", "abc", ["flashinfer-prefix-fa3", "cuda-hydragen"])
        self.assertEqual(done, {harness.Point(8, 64, 0, 1, 8, 1, 128)})
        self.assertEqual(keep, [lines[1], lines[2], lines[4], lines[5]])  # other GPUs' and commits' rows stay
        keep, done = harness.resumed(lines, "GPU", "abc", ["flashinfer-prefix-fa3", "flashinfer-cascade"])
        self.assertEqual(done, set())  # a method the earlier run did not time: every point again
        self.assertEqual(keep, [lines[4], lines[5]])

    def test_a_tree_is_a_point_of_its_own(self):
        lines = [harness.CSV_HEADER, self.row("cuda-hydragen", 8),
                 self.row("cuda-hydragen", 8).replace(",prefix,", ",2x4,")]
        keep, done = harness.resumed(lines, "GPU", "abc", ["cuda-hydragen"])
        self.assertEqual(done, {harness.Point(8, 64, 0, 1, 8, 1, 128), harness.Point(8, 64, 0, 1, 8, 1, 128, "2x4")})

    def test_refuses_another_files_header(self):
        with self.assertRaisesRegex(ValueError, "not the peers' CSV header"):
            harness.resumed(["device,commit\n"], "GPU", "abc", [])

    def test_needs_a_csv_and_checks_its_header_before_anything_runs(self):
        r = run(["--resume", "--no-check"])
        self.assertEqual((r.returncode, r.stderr.strip()), (2, "peers.py: error: --resume needs --csv FILE (the file to resume)"))
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "other.csv")
            with open(path, "w") as f:
                f.write("device,commit\nx,y\n")
            r = run(["--resume", "--no-check", "--csv", path])
            self.assertEqual(r.returncode, 2)
            self.assertIn("--resume: " + path + " line 1: not the peers' CSV header", r.stderr)
            with open(path) as f:
                self.assertEqual(f.read(), "device,commit\nx,y\n")  # untouched


class Rows(unittest.TestCase):
    def test_the_tree_column_is_the_points(self):
        method = type("Method", (), dict(name="flashinfer-cascade", storage="shared"))
        pt = harness.Point(1024, 4096, 64, 1, 8, 1, 128, "copy:4x1024/4x256")
        measured = dict(status="unsupported", detail="why")
        line = harness.csv_row("GPU", "abc", "bf16", method, pt, measured, 1, 1, 1, None)
        row = next(csv.DictReader([harness.CSV_HEADER, line]))
        self.assertEqual((row["tree"], row["B"], row["status"], row["decisions"]), (pt.tree, "1024", "unsupported", ""))
        self.assertNotIn(None, row)  # no column beyond the header's

    def test_ours_runs_the_sweep_at_the_points_tree(self):
        import peers
        with tempfile.TemporaryDirectory() as folder:
            sweep = os.path.join(folder, "hydragen-sweep")  # writes the header, then its arguments as its one row
            with open(sweep, "w") as f:
                f.write(f"#!{sys.executable}\nimport sys\nwith open(sys.argv[sys.argv.index('--csv') + 1], 'w') as f:\n"
                        f"    f.write({harness.CSV_HEADER!r} + ' '.join(sys.argv[1:]) + '\\n')\n")
            os.chmod(sweep, 0o755)
            a = peers.parse_args(["--ours", sweep, "--no-check", "--preset", "trees"])
            rows = peers.our_rows(a)(a.grid[2])
        self.assertIn("--batch 256 --prefix 4096 --suffix 64 --q-len 1 --q-heads 8 --kv-heads 1 --head-dim 128 "
                      "--tree 4x1024/4x256 ", rows)


class CheckedSequences(unittest.TestCase):
    def test_every_sequence_or_a_spread_including_both_ends(self):
        self.assertEqual(npy_check.check_indices(5, 0), [0, 1, 2, 3, 4])
        self.assertEqual(npy_check.check_indices(5, 9), [0, 1, 2, 3, 4])
        self.assertEqual(npy_check.check_indices(101, 3), [0, 50, 100])


class CheckSpec(unittest.TestCase):
    """spec.json's tree (SharingTree::from_parents) over the checked sequences, and the input of each segment."""

    def test_the_prefix_tree_is_the_spec_before_trees(self):
        pt = harness.Point(B=8, P=5, S=3, q_len=1, Hq=1, Hkv=1, D=1)
        self.assertEqual(npy_check.tree_spec(pt, [0, 7]),
                         ([-1, 0, 0], [5, 3, 3], [1, 2], [("pk", "pv", None), ("sk", "sv", 0), ("sk", "sv", 7)]))

    def test_a_tree_keeps_the_groups_above_the_checked_sequences(self):
        # groups 0, 1 (4 sequences each), then 2..5 (2 each): sequences 0 and 7 read groups 0, 2 and 1, 5.
        pt = harness.Point(B=8, P=5, S=3, q_len=1, Hq=1, Hkv=1, D=1, tree="2x4/2x2")
        parents, lengths, leaves, sources = npy_check.tree_spec(pt, [0, 7])
        self.assertEqual(parents, [-1, 0, 0, 1, 2, 3, 4])
        self.assertEqual(lengths, [5, 4, 4, 2, 2, 3, 3])
        self.assertEqual(leaves, [5, 6])
        self.assertEqual(sources, [("pk", "pv", None), ("gk", "gv", 0), ("gk", "gv", 1), ("gk", "gv", 2),
                                   ("gk", "gv", 5), ("sk", "sv", 0), ("sk", "sv", 7)])
        copied = npy_check.tree_spec(pt._replace(tree="copy:2x4/2x2"), [0, 7])
        self.assertEqual(copied, (parents, lengths, leaves, sources))  # a copy: tree's tokens are its shared form's


def expected_path(pt, b):
    """Sequence b's tokens as the cache's slots number them: the prefix's, its groups' outermost first, its suffix."""
    levels = trees.tree_levels(pt)
    groups = [g for level in levels for g in level]
    starts = [pt.P + sum(g.tokens for g in groups[:i]) for i in range(len(groups) + 1)]
    path = list(range(pt.P))
    for i in trees.path_groups(levels, b):
        path += range(starts[i], starts[i] + groups[i].tokens)
    return path + list(range(starts[-1] + b * pt.S, starts[-1] + (b + 1) * pt.S))


def read_back(layout, pages, last):
    """The tokens a page table reads: its pages' slots, the last page up to its length."""
    slots = [layout.slots[p * layout.ps + t] for p in pages for t in range(layout.ps)]
    return slots[:len(slots) - layout.ps + last] if pages else []


POINTS = [harness.Point(3, P, S, 1, 4, 2, 8) for P, S in ((48, 37), (48, 0), (20, 16), (7, 3))] + [
    harness.Point(8, P, S, 1, 4, 2, 8, tree) for P, S, tree in
    ((32, 5, "2x16/2x8"), (32, 0, "2x16/2x8"), (24, 3, "copy:2x16/2x8"), (24, 0, "copy:4x6"), (16, 2, "2x3-5"))]


class PageTables(unittest.TestCase):
    """The paged methods' cache and tables (flashinfer_methods.page_layout, paged_tables), as plain lists."""

    def test_every_page_table_reads_back_its_path(self):
        for pt in POINTS:
            with self.subTest(pt=pt):
                layout = fm.page_layout(pt)
                groups = [] if "copy:" in pt.tree else [g.tokens for level in trees.tree_levels(pt) for g in level]
                self.assertTrue(all(n % layout.ps == 0 for n in [pt.P] + groups))  # a shared segment's pages are full
                indptr, indices, last = fm.paged_tables(layout, pt)
                for b in range(pt.B):
                    self.assertEqual(read_back(layout, indices[indptr[b]:indptr[b + 1]], last[b]), expected_path(pt, b))
                indptr, indices, last = fm.paged_tables(layout, pt, shared=False)
                for b in range(pt.B):  # its own pages alone: on a copy: tree its groups' tokens, then its suffix
                    path = expected_path(pt, b)
                    own = path[pt.P:] if "copy:" in pt.tree else path[len(path) - pt.S:]
                    self.assertEqual(read_back(layout, indices[indptr[b]:indptr[b + 1]], last[b]), own)

    def test_shared_pages_are_stored_once(self):
        for pt in POINTS:
            with self.subTest(pt=pt):
                layout = fm.page_layout(pt)
                shared = [layout.prefix] + [g.pages for level in layout.levels for g in level]
                pages = sorted(p for r in shared + layout.own for p in r)
                self.assertEqual(pages, list(range(len(layout.slots) // layout.ps)))
                self.assertEqual(len(layout.levels), 0 if "copy:" in pt.tree else len(trees.tree_levels(pt)))

    def test_a_two_level_tree(self):
        # P = 4, 2 groups of 2 tokens, S = 3: pages of 2 (every shared segment fills them); the prefix's pages 0, 1,
        # the groups' 2 and 3, then each sequence's two (3 tokens, 1 on the last page).
        pt = harness.Point(B=4, P=4, S=3, q_len=2, Hq=1, Hkv=1, D=1, tree="2x2")
        layout = fm.page_layout(pt)
        self.assertEqual(layout.ps, 2)
        self.assertEqual(fm.paged_tables(layout, pt),
                         ([0, 5, 10, 15, 20], [0, 1, 2, 4, 5, 0, 1, 2, 6, 7, 0, 1, 3, 8, 9, 0, 1, 3, 10, 11], [1] * 4))
        self.assertEqual(fm.paged_tables(layout, pt, shared=False), ([0, 2, 4, 6, 8], list(range(4, 12)), [1] * 4))

    def test_the_prefix_tree_keeps_the_layout_before_trees(self):
        pt = harness.Point(B=3, P=48, S=37, q_len=1, Hq=4, Hkv=2, D=8)  # 3 prefix pages, 3 of 16 per sequence
        layout = fm.page_layout(pt)
        self.assertEqual((layout.ps, layout.prefix), (16, range(3)))
        self.assertEqual(layout.own, [range(3 + 3 * b, 6 + 3 * b) for b in range(3)])
        self.assertEqual(layout.last, [5] * 3)


class CascadeLevels(unittest.TestCase):
    """MultiLevelCascadeAttentionWrapper.plan's lists, level by level: (qo_indptr, kv page indptr, kv page indices,
    last page lengths)."""

    def test_a_level_per_level_of_the_tree(self):
        # The layout of PageTables.test_a_two_level_tree, 2 queries per sequence.
        pt = harness.Point(B=4, P=4, S=3, q_len=2, Hq=1, Hkv=1, D=1, tree="2x2")
        self.assertEqual(fm.cascade_levels(fm.page_layout(pt), pt), [
            ([0, 8], [0, 2], [0, 1], [2]),  # every query over the prefix's pages
            ([0, 4, 8], [0, 1, 2], [2, 3], [2, 2]),  # each group's 2 sequences' 4 queries over its page
            ([0, 2, 4, 6, 8], [0, 2, 4, 6, 8], list(range(4, 12)), [1] * 4)])  # each sequence over its own (causal)

    def test_a_depth_4_tree(self):
        pt = harness.Point(B=8, P=8, S=1, q_len=1, Hq=1, Hkv=1, D=1, tree="2x4/2x2")  # pages of 2
        levels = fm.cascade_levels(fm.page_layout(pt), pt)
        self.assertEqual(levels[1], ([0, 4, 8], [0, 2, 4], [4, 5, 6, 7], [2, 2]))
        self.assertEqual(levels[2], ([0, 2, 4, 6, 8], [0, 1, 2, 3, 4], [8, 9, 10, 11], [2] * 4))
        self.assertEqual(levels[3], (list(range(9)), list(range(9)), list(range(12, 20)), [1] * 8))

    def test_a_copy_tree_is_two_levels_its_own_pages_holding_the_copies(self):
        # The groups' 2 tokens copied ahead of each suffix of 3: 5 tokens on 2 pages of 4 (the prefix's size).
        pt = harness.Point(B=4, P=4, S=3, q_len=1, Hq=1, Hkv=1, D=1, tree="copy:2x2")
        self.assertEqual(fm.cascade_levels(fm.page_layout(pt), pt), [
            ([0, 4], [0, 1], [0], [4]), ([0, 1, 2, 3, 4], [0, 2, 4, 6, 8], list(range(1, 9)), [1] * 4)])

    def test_the_prefix_tree_is_the_two_levels_before_trees(self):
        pt = harness.Point(B=3, P=48, S=37, q_len=2, Hq=4, Hkv=2, D=8)
        n_p, n_s = 3, 3
        self.assertEqual(fm.cascade_levels(fm.page_layout(pt), pt), [
            ([0, 6], [0, n_p], list(range(n_p)), [16]),
            ([0, 2, 4, 6], [0, 3, 6, 9], list(range(n_p, n_p + 3 * n_s)), [5] * 3)])


try:
    import torch
except ImportError:  # the layout test needs torch (CPU is enough); the rest needs nothing
    torch = None


@unittest.skipUnless(torch, "torch is not installed")
class PagedCache(unittest.TestCase):
    def test_every_page_table_reads_back_its_path_from_the_cache(self):
        for pt in POINTS:
            with self.subTest(pt=pt):
                levels = trees.tree_levels(pt)
                groups = [g.tokens for level in levels for g in level]
                x = dict(pk=torch.randn(pt.P, 2, 8), pv=torch.randn(pt.P, 2, 8), sk=torch.randn(pt.B, pt.S, 2, 8),
                         sv=torch.randn(pt.B, pt.S, 2, 8), gk=[torch.randn(n, 2, 8) for n in groups],
                         gv=[torch.randn(n, 2, 8) for n in groups])
                layout = fm.page_layout(pt)
                cache = fm.paged_cache(torch, x, pt, layout)
                self.assertEqual(tuple(cache.shape), (len(layout.slots) // layout.ps, 2, layout.ps, 2, 8))
                indptr, indices, last = fm.paged_tables(layout, pt)
                for b in range(pt.B):
                    pages = torch.tensor(indices[indptr[b]:indptr[b + 1]])
                    tokens = (len(pages) - 1) * layout.ps + last[b]
                    for kv, k in enumerate("kv"):
                        path = [x["p" + k]] + [x["g" + k][i] for i in trees.path_groups(levels, b)] + [x["s" + k][b]]
                        self.assertTrue(torch.equal(cache[pages, kv].reshape(-1, 2, 8)[:tokens], torch.cat(path)))


class CommitStamp(unittest.TestCase):
    """The commit column names the code that ran: HEAD's hash, "-dirty" once a tracked file differs."""

    def test_clean_then_dirty_checkout(self):
        import shutil
        with tempfile.TemporaryDirectory() as repo:
            modules = ["harness.py", "npy_check.py", "trees.py"]
            for module in modules:
                shutil.copy(os.path.join(HERE, module), repo)
            env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
                       GIT_COMMITTER_EMAIL="t@t")
            for args in (["init", "-q"], ["add", *modules], ["commit", "-q", "-m", "x"]):
                subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)
            head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=repo, capture_output=True,
                                  text=True, check=True).stdout.strip()
            stamp = [sys.executable, "-c", "import harness; print(harness.commit())"]
            self.assertEqual(subprocess.run(stamp, cwd=repo, capture_output=True, text=True).stdout.strip(), head)
            with open(os.path.join(repo, "harness.py"), "a") as f:
                f.write("\n")
            self.assertEqual(subprocess.run(stamp, cwd=repo, capture_output=True, text=True).stdout.strip(),
                             head + "-dirty")


class Usage(unittest.TestCase):
    def assert_usage_error(self, args, words):
        r = run(args)
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stdout, "")
        self.assertEqual(len(r.stderr.splitlines()), 1, r.stderr)
        self.assertTrue(r.stderr.startswith("peers.py: error: "), r.stderr)
        for w in words:
            self.assertIn(w, r.stderr)

    def test_help_works_without_torch(self):
        r = run(["--help"])
        self.assertEqual(r.returncode, 0)
        for word in ("flashinfer-cascade", "flashinfer-paged-tc", "spec", "--q-len"):
            self.assertIn(word, r.stdout)

    def test_unknown_method(self):
        self.assert_usage_error(["--methods", "flashinfer-cascade,vllm", "--points"], ["vllm", "flashinfer-paged"])

    def test_preset_and_lists_do_not_mix(self):
        self.assert_usage_error(["--preset", "grid", "--batch", "8"], ["--batch", "preset"])

    def test_suffix_shorter_than_the_causal_queries(self):
        self.assert_usage_error(["--q-len", "4", "--suffix", "2"], ["S=2", "q_len=4"])

    def test_heads_must_group(self):
        self.assert_usage_error(["--q-heads", "6", "--kv-heads", "4"], ["Hkv dividing Hq"])

    def test_trees(self):
        self.assert_usage_error(["--batch", "6", "--tree", "4x8"], ["4 equal groups", "B = 6"])
        self.assert_usage_error(["--tree", "flat"], ["flat", "shared forms"])
        self.assert_usage_error(["--tree", "16x"], ["16x", "16x1024"])
        self.assert_usage_error(["--batch", "2", "--tree", "2x0"], ["group of no tokens"])
        self.assert_usage_error(["--preset", "trees", "--tree", "2x4"], ["--tree", "preset"])


if __name__ == "__main__":
    unittest.main()
