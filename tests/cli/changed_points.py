#!/usr/bin/env python3
"""scripts/changed-points.py lists the preset points whose plan moved between two golden tables, as
hydragen-sweep arguments grouped by batch and head layout, once per point even where two presets hold
it; harness cases apart; other backends and devices ignored; a malformed table is refused.
Usage: changed_points.py SCRIPT"""
import os
import subprocess
import sys
import tempfile

OLD = """cuda-hydragen | grid bf16 B256 P2048 S64 q1 Hq8 Hkv1 D128 prefix | H100 => workers=128/256 fold=0
cuda-hydragen | grid bf16 B256 P4096 S0 q1 Hq8 Hkv1 D128 prefix | H100 => workers=128/0 fold=0
cuda-hydragen | grid bf16 B256 P8192 S64 q1 Hq8 Hkv1 D128 prefix | H100 => workers=128/256 fold=1
cuda-hydragen | paper-fig4 bf16 B256 P2048 S64 q1 Hq8 Hkv1 D128 prefix | H100 => workers=128/256 fold=0
cuda-hydragen | models bf16 B64 P2048 S64 q1 Hq32 Hkv8 D128 prefix | H100 => workers=128/512 fold=0
cuda-hydragen | trees bf16 B256 P4096 S64 q1 Hq8 Hkv1 D128 copy:16x1024 | H100 => workers=128/256 fold=0
cuda-hydragen | grid bf16 B256 P2048 S64 q1 Hq8 Hkv1 D128 prefix | A100 => workers=972/256 fold=0
cuda-flash | grid bf16 B256 P2048 S64 q1 Hq8 Hkv1 D128 prefix | H100 => workers=0/1024 fold=0
cuda-hydragen | harness gqa8 bf16 shared | H100 => workers=2/8 fold=0
"""
NEW = (OLD.replace("S64 q1 Hq8 Hkv1 D128 prefix | H100 => workers=128/256 fold=0", "S64 q1 Hq8 Hkv1 D128 prefix | H100 => workers=64/256 fold=1")
          .replace("Hq32 Hkv8 D128 prefix | H100 => workers=128/512 fold=0", "Hq32 Hkv8 D128 prefix | H100 => workers=64/512 fold=1")
          .replace("copy:16x1024 | H100 => workers=128/256", "copy:16x1024 | H100 => workers=64/256")
          .replace("A100 => workers=972/256 fold=0", "A100 => workers=486/256 fold=0")
          .replace("cuda-flash | grid bf16 B256 P2048 S64 q1 Hq8 Hkv1 D128 prefix | H100 => workers=0/1024",
                   "cuda-flash | grid bf16 B256 P2048 S64 q1 Hq8 Hkv1 D128 prefix | H100 => workers=0/512")
          .replace("harness gqa8 bf16 shared | H100 => workers=2/8", "harness gqa8 bf16 shared | H100 => workers=4/8"))


def run(script, old, new, *args):
    with tempfile.TemporaryDirectory() as d:
        paths = []
        for name, text in (("old", old), ("new", new)):
            paths.append(os.path.join(d, name))
            with open(paths[-1], "w") as f:
                f.write(text)
        return subprocess.run([sys.executable, script, *paths, *args], capture_output=True, text=True)


def main(script):
    r = run(script, OLD, NEW)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    expected = [
        # (256, 2048, 64) moved in grid and in paper-fig4: one point; (256, 8192, 64) did not move, the
        # tree point is its own group, the A100's and cuda-flash's lines are not asked for.
        "# 3 points of cuda-hydragen on H100 change plans (grid 1, models 1, paper-fig4 1, trees 1)",
        "--dtype bf16 --batch 64 --prefix 2048 --suffix 64 --q-len 1 --q-heads 32 --kv-heads 8 --head-dim 128",
        "--dtype bf16 --batch 256 --prefix 4096 --suffix 64 --q-len 1 --q-heads 8 --kv-heads 1 --head-dim 128 --tree copy:16x1024",
        "--dtype bf16 --batch 256 --prefix 2048 --suffix 64 --q-len 1 --q-heads 8 --kv-heads 1 --head-dim 128",
        "# also: harness gqa8 bf16 shared",
    ]
    assert lines == expected, "\n".join(lines)
    # Points that do not fill their group's P x S: a line per P, none timed that did not move; and
    # ones that do: one line.
    partial = NEW.replace("B256 P4096 S0 q1 Hq8 Hkv1 D128 prefix | H100 => workers=128/0", "B256 P4096 S0 q1 Hq8 Hkv1 D128 prefix | H100 => workers=64/0")
    r = run(script, OLD, partial)
    assert r.stdout.splitlines()[3:5] == [
        "--dtype bf16 --batch 256 --prefix 2048 --suffix 64 --q-len 1 --q-heads 8 --kv-heads 1 --head-dim 128",
        "--dtype bf16 --batch 256 --prefix 4096 --suffix 0 --q-len 1 --q-heads 8 --kv-heads 1 --head-dim 128"], r.stdout
    full = NEW.replace("B256 P8192 S64 q1 Hq8 Hkv1 D128 prefix | H100 => workers=128/256 fold=1", "B256 P8192 S64 q1 Hq8 Hkv1 D128 prefix | H100 => workers=64/256 fold=1")
    r = run(script, OLD, full)
    assert r.stdout.splitlines()[3] == \
        "--dtype bf16 --batch 256 --prefix 2048,8192 --suffix 64 --q-len 1 --q-heads 8 --kv-heads 1 --head-dim 128", r.stdout
    # Another backend and device: cuda-flash's one moved line.
    r = run(script, OLD, NEW, "--backend", "cuda-flash")
    assert r.stdout.splitlines()[:2] == ["# 1 points of cuda-flash on H100 change plans (grid 1)",
                                         "--dtype bf16 --batch 256 --prefix 2048 --suffix 64 --q-len 1 --q-heads 8 --kv-heads 1 --head-dim 128"], r.stdout
    r = run(script, OLD, NEW, "--device", "A100")
    assert r.stdout.splitlines()[0].startswith("# 1 points of cuda-hydragen on A100"), r.stdout
    # Nothing moved: no sweep line.
    r = run(script, OLD, OLD)
    assert r.returncode == 0 and r.stdout.splitlines() == ["# 0 points of cuda-hydragen on H100 change plans"], r.stdout
    # A malformed table, and an unknown backend, are refused with a message.
    r = run(script, OLD, NEW + "not a golden line\n")
    assert r.returncode != 0 and "golden line 10" in r.stderr, r.stderr
    r = run(script, OLD, NEW, "--backend", "cuda-nope")
    assert r.returncode != 0 and "no line for backend 'cuda-nope'" in r.stderr, r.stderr
    print("changed-points.py: every expected line")


if __name__ == "__main__":
    main(sys.argv[1])
