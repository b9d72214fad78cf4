#!/usr/bin/env python3
"""hydragen-decode's ranks as processes (issue 42), on host ranks: two processes launched as torchrun
launches them (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) answer a prompt file with the bits two
threads of one process give; a timed point run that way is one CSV row per point, written by rank 0
alone; a process without RANK is told so.

    process_ranks.py HYDRAGEN_DECODE
"""
import os
import socket
import subprocess
import sys
import tempfile

PROMPTS = "1 2 3 4 5 6 7 8 9 10 11 12 40 41\n1 2 3 4 5 6 7 8 9 10 11 12 50\n1 2 3 4 5 6 7 8 9 10 11 12 60 61 62 63\n"
COMMON = ["--device", "host", "--model", "smoke", "--tp", "2"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(binary, args, world=2):
    """The ranks of `world` processes, started together; [(exit code, stdout, stderr)] in rank order."""
    port = str(free_port())
    ranks = []
    for rank in range(world):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=port, OMP_NUM_THREADS="1")
        ranks.append(subprocess.Popen([binary, "--rank-env"] + args, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    return [(p.wait(timeout=120), p.stdout.read(), p.stderr.read()) for p in ranks]


def check(ok, what, detail=""):
    if not ok:
        print("FAIL:", what, detail)
        sys.exit(1)
    print("ok:", what)


def main():
    binary = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        prompts = os.path.join(tmp, "prompts.txt")
        with open(prompts, "w") as f:
            f.write(PROMPTS)
        threads, processes = os.path.join(tmp, "threads.txt"), os.path.join(tmp, "processes.txt")
        answer = COMMON + ["--prompts", prompts, "--gen-tokens", "12"]
        env = dict(os.environ, OMP_NUM_THREADS="1")
        subprocess.run([binary, "--gpus", "2"] + answer + ["--tokens-out", threads], check=True, env=env)
        ranks = launch(binary, answer + ["--tokens-out", processes])
        check(all(code == 0 for code, _, _ in ranks), "both processes exit 0", ranks)
        with open(threads) as a, open(processes) as b:
            want, got = a.read(), b.read()
        check(len(want.splitlines()) == 3 and got == want, "2 processes answer the prompts with 2 threads' tokens")

        csv = os.path.join(tmp, "points.csv")
        ranks = launch(binary, COMMON + ["--batch", "2", "--prefix", "16", "--gen-tokens", "2", "--mode", "hydragen,paged",
                                         "--runs", "1", "--warmup", "0", "--csv", csv])
        check(all(code == 0 for code, _, _ in ranks), "a timed run on 2 processes exits 0", ranks)
        with open(csv) as f:
            lines = f.read().splitlines()
        header = lines[0].split(",")
        rows = [dict(zip(header, line.split(","))) for line in lines[1:]]
        check(len(rows) == 2 and all(r["gpus"] == "2" and r["status"] == "ok" for r in rows),
              "rank 0 wrote one row per point, gpus 2")
        check(float(rows[0]["allreduce_ms"]) > 0, "allreduce_ms measured")
        check(ranks[1][1] == "" and ranks[1][2] == "", "rank 1 prints nothing")

        env = dict(os.environ, WORLD_SIZE="2")
        env.pop("RANK", None)
        missing = subprocess.run([binary, "--rank-env"] + answer, env=env, capture_output=True, text=True)
        check(missing.returncode == 2 and "RANK is not set" in missing.stderr, "no RANK: exit 2 naming it", missing.stderr)


if __name__ == "__main__":
    main()
