"""Tests of the hydragen-decode figures (decode_throughput.py, decode_answer_time.py, decode_fig6.py,
decode_tp.py, allreduce.py): each script end to end on testdata/decode.csv (decode_fig6.csv, decode-tp.csv), the paper
overlay, the bad-input exits, the ratios, the "N questions in the time flash takes for 64" interpolation and
the TP speedups. Run with the Debian python3 (it has matplotlib and numpy), from the
repository root:

    /usr/bin/python3 -m unittest discover -s plots -p 'test_*.py'

testdata/decode.csv is SYNTHETIC: rows in hydragen-decode's format (status x rows with zeros, as it writes
them) from step-time models fitted to one real H100 run (codellama-13b TP 8, B = 1024, P = 1024 and 16256),
not measurements. It holds a fig3a-like set (codellama-13b, P = 2048, B = 16...2048, flash out of memory
from B = 512, no-attention at P = 2048), a fig3b-like set (B = 1024, P = 1024...16256, flash out of memory
everywhere, no-attention at P = 1024 only, as the presets run it) and a fig5-like set (yi-6b-200k TP 4,
P = 19947, 16-token questions, 8 answer tokens, B = 1...1024, flash out of memory from B = 256).
"""
import csv
import os
import sys
import tempfile
import unittest

import common
import decode_throughput as decode
from decode_answer_time import answer_ratios, equal_time_questions, flash_sentence, ratio_sentence
from test_plots import PNG_SIGNATURE, plot  # one way to run a script and check its PNG

HERE = os.path.dirname(os.path.abspath(__file__))
DECODE = os.path.join(HERE, "testdata", "decode.csv")
# SYNTHETIC too: fig6-like rows (codellama-7b TP 8, P = 2400, 512 tokens, 1..16 problems of 128 samples,
# descriptions shared or copied; the copied form out of memory at 16 problems) from a made-up step-time
# model, in hydragen-decode's format with its groups columns.
FIG6 = os.path.join(HERE, "testdata", "decode_fig6.csv")
# SYNTHETIC too: made-up round step times for decode_tp.py, hydragen and paged at TP 1, 2 and 4 (gpus = tp)
# over P = 1024, 2048, 4096 at B = 64 (codellama-13b, 10 layers), paged TP 1 out of memory at P = 4096;
# chosen so that the speedups and all-reduce shares print exactly (hydragen TP 2: 10 / 6.25 = 1.60x to
# 16 / 9 = 1.78x, all-reduces 0.5 / 6.25 = 8% to 0.9 / 9 = 10%; TP 4: 10 / 4 = 2.50x to 16 / 5.6 = 2.86x,
# 0.5 / 4 = 12.5% at every P).
DECODE_TP = os.path.join(HERE, "testdata", "decode-tp.csv")
# The whole transcription of the paper's Tables 1-6 lives outside this repository; used when present.
FULL_PAPER = "/work/shared/paper_data/hydragen_e2e_tables.csv"
# An excerpt of the paper's Table 3 (CodeLlama-13B, 128 tokens, 8x A100-40GB), as transcribed in
# paper_data/hydragen_e2e_tables.csv: P = 2048 at every batch, B = 1024 at every prefix length, the
# no-attention column, and a vllm_notok cell (not drawn).
PAPER_ROWS = """table,model,gen_tokens,batch,method,prefix_len,ktps,ktps_std
3,CodeLlama-13B,128,32,flashattention,2048,1.4,0.0
3,CodeLlama-13B,128,32,hydragen,2048,2.0,0.0
3,CodeLlama-13B,128,32,vllm_notok,2048,1.8,0.0
3,CodeLlama-13B,128,32,vllm,2048,1.6,0.0
3,CodeLlama-13B,128,32,no_attention,,2.3,0.0
3,CodeLlama-13B,128,64,flashattention,2048,2.3,0.0
3,CodeLlama-13B,128,64,hydragen,2048,3.6,0.0
3,CodeLlama-13B,128,64,vllm,2048,2.9,0.1
3,CodeLlama-13B,128,64,no_attention,,4.2,0.0
3,CodeLlama-13B,128,128,flashattention,2048,2.9,0.0
3,CodeLlama-13B,128,128,hydragen,2048,5.7,0.2
3,CodeLlama-13B,128,128,vllm,2048,3.8,0.1
3,CodeLlama-13B,128,128,no_attention,,6.8,0.0
3,CodeLlama-13B,128,256,flashattention,2048,x,
3,CodeLlama-13B,128,256,hydragen,2048,9.3,0.0
3,CodeLlama-13B,128,256,vllm,2048,4.3,0.1
3,CodeLlama-13B,128,256,no_attention,,11.4,0.0
3,CodeLlama-13B,128,512,flashattention,2048,x,
3,CodeLlama-13B,128,512,hydragen,2048,13.3,0.0
3,CodeLlama-13B,128,512,vllm,2048,2.4,0.0
3,CodeLlama-13B,128,512,no_attention,,16.1,0.0
3,CodeLlama-13B,128,1024,flashattention,1024,x,
3,CodeLlama-13B,128,1024,flashattention,2048,x,
3,CodeLlama-13B,128,1024,flashattention,4096,x,
3,CodeLlama-13B,128,1024,flashattention,8192,x,
3,CodeLlama-13B,128,1024,flashattention,16256,x,
3,CodeLlama-13B,128,1024,hydragen,1024,15.6,0.0
3,CodeLlama-13B,128,1024,hydragen,2048,15.5,0.0
3,CodeLlama-13B,128,1024,hydragen,4096,15.3,0.0
3,CodeLlama-13B,128,1024,hydragen,8192,14.8,0.0
3,CodeLlama-13B,128,1024,hydragen,16256,14.0,0.0
3,CodeLlama-13B,128,1024,vllm,1024,4.2,0.0
3,CodeLlama-13B,128,1024,vllm,2048,2.5,0.0
3,CodeLlama-13B,128,1024,vllm,4096,1.4,0.0
3,CodeLlama-13B,128,1024,vllm,8192,0.7,0.0
3,CodeLlama-13B,128,1024,vllm,16256,0.4,0.0
3,CodeLlama-13B,128,1024,no_attention,,18.5,0.0
"""
FIG3A = ("--where", "model=codellama-13b", "--where", "P=2048")
FIG3B = ("--where", "model=codellama-13b", "--where", "B=1024")
FIG5 = ("--where", "model=yi-6b-200k")


class Scripts(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        self.paper = os.path.join(self.dir.name, "paper.csv")
        with open(self.paper, "w") as f:
            f.write(PAPER_ROWS)

    def assert_png(self, script, *args, files=(DECODE,)):
        out = os.path.join(self.dir.name, "figure.png")
        done = plot(script, *files, "--out", out, *args)
        self.assertEqual(done.returncode, 0, done.stderr)
        with open(out, "rb") as f:
            self.assertEqual(f.read(8), PNG_SIGNATURE)
        self.assertGreater(os.path.getsize(out), 10_000)
        os.remove(out)

    def assert_bad_input(self, script, *args):
        out = os.path.join(self.dir.name, "figure.png")
        done = plot(script, *args, "--out", out)
        self.assertEqual(done.returncode, 2, done.stderr)
        self.assertEqual(len(done.stderr.strip().splitlines()), 1, done.stderr)
        self.assertFalse(os.path.exists(out))
        return done.stderr

    def derived(self, name, change, source=DECODE):
        """A copy of `source` with change(row) applied to every row (a dict of strings)."""
        path = os.path.join(self.dir.name, name)
        with open(source, newline="") as src, open(path, "w", newline="") as dst:
            rows = list(csv.DictReader(src))
            writer = csv.DictWriter(dst, list(rows[0]))
            writer.writeheader()
            for row in rows:
                change(row)
                writer.writerow(row)
        return path

    def without(self, column):
        path = os.path.join(self.dir.name, f"no-{column}.csv")
        with open(DECODE, newline="") as src, open(path, "w", newline="") as dst:
            rows = list(csv.DictReader(src))
            writer = csv.DictWriter(dst, [c for c in rows[0] if c != column], extrasaction="ignore")
            writer.writeheader()
            writer.writerows(rows)
        return path

    def test_throughput_by_batch_and_by_prefix(self):
        self.assert_png("decode_throughput.py", *FIG3A)  # x = B inferred: one P
        self.assert_png("decode_throughput.py", *FIG3B)  # x = P inferred: one B
        self.assert_png("decode_throughput.py", *FIG3B, "--x", "P", "--where", "P=2048,8192")
        self.assert_png("decode_throughput.py", *FIG5)  # B at one P, with question_len in the title

    def test_answer_time(self):
        self.assert_png("decode_answer_time.py", *FIG5)
        self.assert_png("decode_answer_time.py", *FIG5, "--flash-at", "256")  # flash out of memory there: n/a
        self.assert_png("decode_answer_time.py", *FIG3A)  # any one-P set draws

    def test_fig6_dataset_time(self):
        self.assert_png("decode_fig6.py", files=(FIG6,))
        self.assert_png("decode_fig6.py", "--problems", "7", files=(FIG6,))
        self.assertIn("no groups columns", self.assert_bad_input("decode_fig6.py", DECODE))
        self.assertIn("at least one problem", self.assert_bad_input("decode_fig6.py", FIG6, "--problems", "0"))
        paged_copies = os.path.join(self.dir.name, "paged-copies.csv")
        with open(FIG6) as src, open(paged_copies, "w") as dst:
            dst.write(src.read().replace(",paged,cuda-flash,128,2400,0,1x", ",paged,cuda-flash,128,2400,0,copy:1x"))
        self.assertIn("mode paged and groups copy:1x300-800", self.assert_bad_input("decode_fig6.py", paged_copies))

    def test_tp_scaling(self):
        self.assert_png("decode_tp.py", files=(DECODE_TP,))  # x = P inferred: one B
        out = os.path.join(self.dir.name, "tp.png")
        done = plot("decode_tp.py", DECODE_TP, "--out", out)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout.splitlines(), [
            "hydragen TP 2: 1.60x-1.78x over TP 1 (scaling efficiency 80.0%-88.9%), all-reduces 8.0%-10.0% of the step",
            "hydragen TP 4: 2.50x-2.86x over TP 1 (scaling efficiency 62.5%-71.4%), all-reduces 12.5% of the step",
            # P = 4096 has no speedup (TP 1 out of memory) but a share: 1.05 / 35 = 3%.
            "paged TP 2: 1.82x-1.89x over TP 1 (scaling efficiency 90.9%-94.7%), all-reduces 3.0%-5.0% of the step",
            "paged TP 4: 3.33x-3.60x over TP 1 (scaling efficiency 83.3%-90.0%), all-reduces 5.0%-10.0% of the step",
            "TP 1: hydragen 2.00x-3.00x over paged",
            "TP 2: hydragen 1.76x-3.89x over paged",
            "TP 4: hydragen 1.50x-3.21x over paged"])

    def test_tp_refusals(self):
        error = self.assert_bad_input("decode_tp.py", DECODE_TP, "--where", "tp=1")
        self.assertIn("needs rows at two or more tp values", error)
        models = self.derived("tp-models.csv", lambda r: r.update(model="codellama-7b") if r["tp"] == "2" else None,
                              source=DECODE_TP)
        self.assertIn("--where model=", self.assert_bad_input("decode_tp.py", models))
        self.assertIn("nothing varies", self.assert_bad_input("decode_tp.py", DECODE_TP, "--where", "P=1024"))

    def test_allreduce_against_the_loop(self):
        # SYNTHETIC: a 2-GPU loop at 1, 2 and 4 MB (50, 100, 150 GB/s) and one decoder row of 1 layer (2 sums of
        # 2 MB) whose all-reduces reach 120 GB/s: 1.20x the loop at its size. An x row is left out.
        loop = os.path.join(self.dir.name, "loop.csv")
        with open(loop, "w") as f:
            f.write("device,commit,gpus,dtype,bytes,count,time_us,algbw_gbps,busbw_gbps,iters,replays,runs\n")
            for size, busbw in ((1 << 20, 50), (1 << 21, 100), (1 << 22, 150)):
                f.write(f"gpu,abc,2,bf16,{size},{size // 2},1,{busbw},{busbw},20,5,5\n")
        rows = os.path.join(self.dir.name, "decode.csv")
        ms = 2 * (1 << 21) / 120e9 * 1e3  # the step's 2 sums at 120 GB/s (2 ranks: bus = algorithm bandwidth)
        with open(rows, "w") as f:
            f.write("device,model,layers,gpus,B,status,allreduce_ms,allreduce_busbw_gbps\n")
            f.write(f"gpu,codellama-13b,1,2,1024,ok,{ms},120\ngpu,codellama-13b,1,2,2048,x,0,0\n")
        out = os.path.join(self.dir.name, "allreduce.png")
        done = plot("allreduce.py", loop, "--decode", rows, "--out", out)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout.splitlines()[:2], [
            "2 GPUs: peak bus bandwidth 150.0 GB/s at 4194304 bytes",
            "codellama-13b TP 2, B 1024: 2.10 MB a message, 120.0 GB/s, the loop at that size 100.0 GB/s (1.20x)"])
        with open(out, "rb") as f:
            self.assertEqual(f.read(8), PNG_SIGNATURE)
        self.assertIn("missing column(s) bytes, busbw_gbps", self.assert_bad_input("allreduce.py", DECODE_TP))
        self.assertIn("missing column(s) allreduce_busbw_gbps",
                      self.assert_bad_input("allreduce.py", loop, "--decode", DECODE_TP))
        with open(rows, "w") as f:
            f.write("device,model,layers,gpus,B,status,allreduce_ms,allreduce_busbw_gbps\ngpu,codellama-13b,1,2,2048,x,0,0\n")
        self.assertIn("no ok rows on several GPUs", self.assert_bad_input("allreduce.py", loop, "--decode", rows))

    def test_paper_overlay(self):
        self.assert_png("decode_throughput.py", *FIG3A, "--paper", self.paper)
        self.assert_png("decode_throughput.py", *FIG3B, "--paper", self.paper)

    @unittest.skipUnless(os.path.exists(FULL_PAPER), "the paper's full tables are not on this machine")
    def test_paper_overlay_full_tables(self):
        self.assert_png("decode_throughput.py", *FIG3A, "--paper", FULL_PAPER)
        self.assert_png("decode_throughput.py", *FIG3B, "--paper", FULL_PAPER)

    def test_missing_file(self):
        absent = os.path.join(self.dir.name, "absent.csv")
        self.assert_bad_input("decode_throughput.py", absent)
        self.assert_bad_input("decode_answer_time.py", absent)
        self.assert_bad_input("decode_throughput.py", DECODE, *FIG3A, "--paper", absent)

    def test_missing_column(self):
        error = self.assert_bad_input("decode_throughput.py", self.without("tokens_per_s"), *FIG3A)
        self.assertIn("tokens_per_s", error)
        error = self.assert_bad_input("decode_answer_time.py", self.without("answer_ms"), *FIG5)
        self.assertIn("answer_ms", error)
        self.assert_bad_input("decode_answer_time.py", self.without("mode"), *FIG5)
        paper = os.path.join(self.dir.name, "paper-no-ktps.csv")
        with open(paper, "w") as f:
            f.write(PAPER_ROWS.replace(",ktps,", ",value,"))
        self.assertIn("ktps", self.assert_bad_input("decode_throughput.py", DECODE, *FIG3A, "--paper", paper))

    def test_empty_selection(self):
        for script in ("decode_throughput.py", "decode_answer_time.py"):
            with self.subTest(script=script):
                self.assert_bad_input(script, DECODE, "--where", "model=none")
                self.assert_bad_input(script, DECODE, "--where", "model=codellama-13b", "--where", "P=3")
                self.assert_bad_input(script, DECODE, "--where", "nosuchcolumn=1")
        # Only the ceiling left: nothing to compare with it.
        self.assert_bad_input("decode_throughput.py", DECODE, *FIG3A, "--where", "mode=no-attention")

    def test_mixed_models(self):
        for script in ("decode_throughput.py", "decode_answer_time.py"):
            with self.subTest(script=script):
                self.assertIn("--where model=", self.assert_bad_input(script, DECODE))

    def test_mixed_settings_name_the_where_to_add(self):
        # Both fixed axes vary: name both choices.
        error = self.assert_bad_input("decode_throughput.py", DECODE, "--where", "model=codellama-13b")
        self.assertIn("--where P=", error)
        self.assertIn("--where B=", error)
        error = self.assert_bad_input("decode_throughput.py", DECODE, "--where", "model=codellama-13b", "--x", "B")
        self.assertIn("--where P=", error)
        error = self.assert_bad_input("decode_answer_time.py", DECODE, "--where", "model=codellama-13b")
        self.assertIn("--where P=", error)
        generated = self.derived("gen.csv", lambda r: r.update(gen_tokens="256") if r["B"] == "64" else None)
        self.assertIn("--where gen_tokens=", self.assert_bad_input("decode_throughput.py", generated, *FIG3A))
        self.assertIn("--where gen_tokens=", self.assert_bad_input("decode_answer_time.py", generated, *FIG5))
        devices = self.derived("dev.csv", lambda r: r.update(device="cuda bf16 (NVIDIA H200)")
                               if r["B"] == "32" else None)
        self.assertIn("--where device=", self.assert_bad_input("decode_throughput.py", devices, *FIG3A))
        tps = self.derived("tp.csv", lambda r: r.update(tp="4") if r["B"] == "128" else None)
        self.assertIn("--where tp=", self.assert_bad_input("decode_throughput.py", tps, *FIG3A))
        backends = self.derived("backend.csv", lambda r: r.update(backend="flashinfer-paged")
                                if r["mode"] == "paged" and r["B"] == "256" else None)
        self.assertIn("--where backend=", self.assert_bad_input("decode_throughput.py", backends, *FIG3A))

    def test_paper_without_the_model_or_the_fixed_value(self):
        error = self.assert_bad_input("decode_throughput.py", DECODE, *FIG5, "--paper", self.paper)
        self.assertIn("yi-6b-200k", error)
        moved = self.derived("p3000.csv", lambda r: r.update(P="3000") if r["P"] == "2048" else None)
        error = self.assert_bad_input("decode_throughput.py", moved, "--where", "model=codellama-13b", "--where",
                                      "P=3000", "--paper", self.paper)
        self.assertIn("prefix_len 3000", error)

    def test_bad_values(self):
        modes = self.derived("mode.csv", lambda r: r.update(mode="cascade") if r["mode"] == "paged" else None)
        self.assertIn("cascade", self.assert_bad_input("decode_throughput.py", modes, *FIG3A))
        statuses = self.derived("status.csv", lambda r: r.update(status="oom") if r["status"] == "x" else None)
        self.assertIn("oom", self.assert_bad_input("decode_throughput.py", statuses, *FIG3A))
        numbers = self.derived("num.csv", lambda r: r.update(tokens_per_s="fast") if r["B"] == "64" else None)
        self.assertIn("fast", self.assert_bad_input("decode_throughput.py", numbers, *FIG3A))

    def test_an_error_row_is_left_out_with_a_note(self):
        failed = self.derived("err.csv", lambda r: r.update(status="error", note="boom")
                              if r["mode"] == "hydragen" and r["B"] == "64" else None)
        out = os.path.join(self.dir.name, "figure.png")
        done = plot("decode_throughput.py", failed, *FIG3A, "--out", out)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("hydragen B=64 P=2048", done.stderr)


def row(mode, b, p, value, status="ok"):
    return {"device": "gpu", "model": "m", "layers": 2, "tp": 8, "gpus": 1, "mode": mode,
            "backend": {"no-attention": "none"}.get(mode, "cuda-" + mode), "B": b, "P": p, "question_len": 0,
            "gen_tokens": 128, "tokens_per_s": value if status == "ok" else None, "status": status}


class Lines(unittest.TestCase):
    def test_ratios_where_both_ran(self):
        rows = [row("hydragen", 32, 2048, 900.0), row("paged", 32, 2048, 300.0), row("no-attention", 32, 2048, 1000.0),
                row("hydragen", 64, 2048, 1600.0), row("paged", 64, 2048, None, status="x"),
                row("no-attention", 64, 2048, 2000.0),
                row("hydragen", 128, 2048, None, status="error"), row("paged", 128, 2048, 400.0),
                row("no-attention", 128, 2048, 4000.0)]
        drawn = decode.lines(rows, "B", 2048, "tokens_per_s")
        got = decode.ratios(drawn)
        self.assertEqual(set(got), {("hydragen", "no-attention"), ("hydragen", "paged")})
        self.assertEqual(got[("hydragen", "no-attention")], {32: 0.9, 64: 0.8})  # B=128: hydragen failed
        self.assertEqual(got[("hydragen", "paged")], {32: 3.0})  # B=64: paged out of memory

    def test_the_ceiling_stands_for_every_prefix(self):
        rows = [row("hydragen", 32, 4096, 900.0), row("hydragen", 64, 4096, 1500.0),
                row("no-attention", 32, 1024, 1000.0),                                # run at the smallest P only
                row("no-attention", 64, 1024, 1900.0), row("no-attention", 64, 4096, 2000.0),  # the fixed P wins
                row("no-attention", 4096, 1024, 9000.0)]  # no attention mode at this B: not drawn
        drawn = decode.lines(rows, "B", 4096, "tokens_per_s")
        self.assertEqual(drawn["no-attention"], {32: (1000.0, "ok"), 64: (2000.0, "ok")})
        self.assertEqual(decode.ceiling_prefixes(rows, "B", 4096), {1024, 4096})
        self.assertEqual(decode.ratios(drawn)[("hydragen", "no-attention")], {32: 0.9, 64: 0.75})
        # At a fixed B, one value (the mean of its runs) at every P of the attention modes.
        rows = [row("hydragen", 64, p, 1000.0) for p in (1024, 2048, 4096)] + \
               [row("no-attention", 64, 1024, 1900.0), row("no-attention", 64, 2048, 2100.0)]
        drawn = decode.lines(rows, "P", 64, "tokens_per_s")
        self.assertEqual(drawn["no-attention"], {p: (2000.0, "ok") for p in (1024, 2048, 4096)})

    def test_a_later_row_replaces_an_earlier_one(self):
        rows = [row("hydragen", 32, 2048, None, status="x"), row("hydragen", 32, 2048, 700.0)]
        self.assertEqual(decode.lines(rows, "B", 2048, "tokens_per_s")["hydragen"], {32: (700.0, "ok")})

    def test_where_on_p_keeps_the_ceiling(self):
        rows = [row("hydragen", 32, 2048, 900.0), row("hydragen", 32, 4096, 800.0), row("no-attention", 32, 1024, 1e3)]
        kept = decode.select(rows, ["P=4096"])
        self.assertEqual(sorted((r["mode"], r["P"]) for r in kept), [("hydragen", 4096), ("no-attention", 1024)])
        self.assertEqual(len(decode.select(rows, ["mode=hydragen"])), 2)
        with self.assertRaises(common.InputError):
            decode.select(rows, ["P=8192"])

    def test_the_paper_at_one_prefix_and_at_one_batch(self):
        with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
            f.write(PAPER_ROWS)
        self.addCleanup(os.remove, f.name)
        by_b = decode.load_paper(f.name, "codellama-13b", 128, "B", 2048)
        self.assertEqual(set(by_b), {"hydragen", "paged", "flash", "no-attention"})  # vllm_notok not drawn
        self.assertEqual(by_b["paged"][512], (2400.0, "ok"))  # vLLM is our paged
        self.assertEqual(by_b["flash"][256], (None, "x"))
        self.assertEqual(by_b["no-attention"][1024], (18500.0, "ok"))
        self.assertAlmostEqual(decode.ratios(by_b)[("hydragen", "paged")][1024], 15.5 / 2.5)
        by_p = decode.load_paper(f.name, "codellama-13b", 128, "P", 1024)
        self.assertEqual(sorted(by_p["hydragen"]), [1024, 2048, 4096, 8192, 16256])
        self.assertEqual(set(by_p["no-attention"].values()), {(18500.0, "ok")})
        self.assertAlmostEqual(decode.ratios(by_p)[("hydragen", "no-attention")][16256], 14.0 / 18.5)
        with self.assertRaisesRegex(common.InputError, "256 generated tokens"):
            decode.load_paper(f.name, "codellama-13b", 256, "B", 2048)
        with self.assertRaisesRegex(common.InputError, "batch 96"):
            decode.load_paper(f.name, "codellama-13b", 128, "P", 96)

    def test_shard_text(self):
        self.assertEqual(decode.shard_text(8, 1), "TP 8 (one shard on 1 GPU)")
        self.assertEqual(decode.shard_text(8, 8), "TP 8 on 8 GPUs")
        self.assertEqual(decode.shard_text(1, 1), "TP 1")


def times(**by_mode):
    """{mode: {B: (ms, 'ok') or (None, 'x')}} from mode=[(B, ms or None), ...] (None: out of memory)."""
    return {mode.replace("_", "-"): {b: (ms, "ok") if ms is not None else (None, "x") for b, ms in points}
            for mode, points in by_mode.items()}


class AnswerTime(unittest.TestCase):
    def test_interpolation_between_the_measured_points(self):
        hydragen = [(64, 100.0), (128, 120.0), (256, 160.0), (512, 240.0)]
        self.assertEqual(equal_time_questions(hydragen, 200.0), ("=", 384.0))  # halfway from 256 to 512
        self.assertEqual(equal_time_questions(hydragen, 120.0), ("=", 128.0))  # on a point
        self.assertEqual(equal_time_questions(hydragen, 110.0), ("=", 96.0))
        self.assertEqual(equal_time_questions(hydragen, 500.0), (">=", 512))  # beyond: no extrapolation
        self.assertEqual(equal_time_questions(hydragen, 90.0), ("<", 64))
        self.assertIsNone(equal_time_questions([], 90.0))
        # Unsorted input, and the first crossing when the times are not monotonic.
        self.assertEqual(equal_time_questions([(4, 30.0), (1, 10.0), (2, 50.0)], 30.0), ("=", 1.5))

    def test_the_sentence(self):
        drawn = times(flash=[(32, 150.0), (64, 200.0), (128, None)],
                      hydragen=[(64, 100.0), (128, 120.0), (256, 160.0), (512, 240.0)])
        self.assertEqual(flash_sentence(drawn),
                         "hydragen answers 384 questions in the time flash takes for 64 (200 ms)")
        self.assertIn("at least 512", flash_sentence(times(flash=[(64, 900.0)], hydragen=[(256, 160.0), (512, 240.0)])))
        self.assertIn(": n/a (flash out of memory at B=128)", flash_sentence(drawn, flash_at=128))
        self.assertIn(": n/a (flash has no row at B=256)", flash_sentence(drawn, flash_at=256))
        self.assertIn(": n/a", flash_sentence(times(flash=[(64, 200.0)])))  # no hydragen
        # The fig5-like test data: hydragen at 512 and 1024 takes 71.638 and 109.526 ms, flash at 64 106.904 ms.
        rows = decode.load([DECODE], "answer_ms")
        drawn = decode.lines([r for r in rows if r["model"] == "yi-6b-200k"], "B", 19947, "answer_ms")
        n = 512 + (106.904 - 71.638) / (109.526 - 71.638) * 512
        self.assertIn(f"answers {n:.0f} questions", flash_sentence(drawn))

    def test_hydragen_over_no_attention_at_each_b(self):
        drawn = times(hydragen=[(1, 33.0), (2, 34.0), (4, None), (8, 50.0)],
                      no_attention=[(1, 30.0), (2, 34.0), (4, 35.0), (8, 40.0)])
        self.assertEqual(answer_ratios(drawn), {1: 1.1, 2: 1.0, 8: 1.25})
        self.assertEqual(ratio_sentence(drawn), "answer time hydragen / no-attention at each B: "
                                                "1: 1.10, 2: 1.00, 8: 1.25; largest 1.25 at B=8")
        self.assertIn("n/a", ratio_sentence(times(hydragen=[(1, 33.0)])))


if __name__ == "__main__":
    unittest.main()
