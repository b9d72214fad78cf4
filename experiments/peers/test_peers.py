"""The peers' command line and bookkeeping, without a GPU: the presets are hydragen-sweep's point for point
(HYDRAGEN_SWEEP names its binary), the cost is the C++ cost model's, bad usage is one line and exit 2."""
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import harness  # noqa: E402

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

    def test_explicit_lists_are_their_product(self):
        r = run(["--batch", "2,4", "--prefix", "16", "--suffix", "8", "--q-len", "1,3", "--q-heads", "4",
                 "--kv-heads", "2", "--head-dim", "64", "--points"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split(), ["2,16,8,1,4,2,64", "2,16,8,3,4,2,64", "4,16,8,1,4,2,64", "4,16,8,3,4,2,64"])


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
        import tempfile
        import npy_check
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


class Versus(unittest.TestCase):
    def test_ours_against_the_fastest_form_of_the_same_file(self):
        import tempfile
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

    def test_refuses_another_files_header(self):
        with self.assertRaisesRegex(ValueError, "not the peers' CSV header"):
            harness.resumed(["device,commit\n"], "GPU", "abc", [])

    def test_needs_a_csv_and_checks_its_header_before_anything_runs(self):
        import tempfile
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


class CheckedSequences(unittest.TestCase):
    def test_every_sequence_or_a_spread_including_both_ends(self):
        import npy_check
        self.assertEqual(npy_check.check_indices(5, 0), [0, 1, 2, 3, 4])
        self.assertEqual(npy_check.check_indices(5, 9), [0, 1, 2, 3, 4])
        self.assertEqual(npy_check.check_indices(101, 3), [0, 50, 100])


try:
    import torch
except ImportError:  # the layout test needs torch (CPU is enough); the rest needs nothing
    torch = None


@unittest.skipUnless(torch, "torch is not installed")
class PagedLayout(unittest.TestCase):
    def test_every_page_table_reads_back_prefix_then_suffix(self):
        import flashinfer_methods as fm
        for P, S in ((48, 37), (48, 0), (20, 16), (7, 3)):
            with self.subTest(P=P, S=S):
                pt = harness.Point(B=3, P=P, S=S, q_len=1, Hq=4, Hkv=2, D=8)
                x = dict(pk=torch.randn(P, 2, 8), pv=torch.randn(P, 2, 8), sk=torch.randn(3, S, 2, 8),
                         sv=torch.randn(3, S, 2, 8))
                cache, ps, n_p, n_s = fm.paged_cache(torch, x, pt)
                self.assertEqual(P % ps, 0)
                indptr, indices, last = fm.paged_tables(torch, pt, ps, n_p, n_s, "cpu")
                for b in range(pt.B):
                    pages = indices[indptr[b]:indptr[b + 1]].long()
                    tokens = (len(pages) - 1) * ps + int(last[b])
                    for kv, (prefix, suffix) in enumerate((("pk", "sk"), ("pv", "sv"))):
                        got = cache[pages, kv].reshape(-1, 2, 8)[:tokens]
                        self.assertTrue(torch.equal(got, torch.cat([x[prefix], x[suffix][b]])))
                if S == 0:
                    continue
                indptr, indices, last = fm.paged_tables(torch, pt, ps, n_p, n_s, "cpu", prefix=False)
                for b in range(pt.B):  # the suffix's own pages alone
                    pages = indices[indptr[b]:indptr[b + 1]].long()
                    tokens = (len(pages) - 1) * ps + int(last[b])
                    self.assertTrue(torch.equal(cache[pages, 0].reshape(-1, 2, 8)[:tokens], x["sk"][b]))


class CommitStamp(unittest.TestCase):
    """The commit column names the code that ran: HEAD's hash, "-dirty" once a tracked file differs."""

    def test_clean_then_dirty_checkout(self):
        import shutil
        import tempfile
        with tempfile.TemporaryDirectory() as repo:
            for module in ("harness.py", "npy_check.py"):
                shutil.copy(os.path.join(HERE, module), repo)
            env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
                       GIT_COMMITTER_EMAIL="t@t")
            for args in (["init", "-q"], ["add", "harness.py", "npy_check.py"], ["commit", "-q", "-m", "x"]):
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


if __name__ == "__main__":
    unittest.main()
