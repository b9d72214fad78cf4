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
