#!/usr/bin/env python3
"""Token-id files for `hydragen-sweep --tokens` where sharing is absent or barely worth it (issue 19:
detection must never lose to flat attention), plus one where it clearly pays, as a control:

    scripts/token-batches.py DIR     # writes DIR/NAME.tok, one sequence a line

none       1024 sequences of 1088 random tokens: no common prefix
common16   1024 sequences whose first 16 tokens agree (below the cost model's shortest shared run for
           1024 readers at bf16, Hq 8, Hkv 1, D 128: 21 tokens)
common32   the same with 32 (just above it)
pairs64    512 pairs, each pair's first 64 tokens alike (just above it for two readers at Hq 8, Hkv 1, D 128)
prefix1024 1024 sequences of a common 1024 tokens then 64 of their own (the sweep's (1024, 1024, 64))
"""
import os
import random
import sys

VOCAB = 32000
SEQS, LENGTH = 1024, 1088


def main(folder):
    rng = random.Random(19)

    def tokens(n):
        return [rng.randrange(VOCAB) for _ in range(n)]

    common16, common32, prefix1024 = tokens(16), tokens(32), tokens(1024)
    batches = {
        "none": [tokens(LENGTH) for _ in range(SEQS)],
        "common16": [common16 + tokens(LENGTH - 16) for _ in range(SEQS)],
        "common32": [common32 + tokens(LENGTH - 32) for _ in range(SEQS)],
        "pairs64": [],
        "prefix1024": [prefix1024 + tokens(LENGTH - 1024) for _ in range(SEQS)],
    }
    for _ in range(SEQS // 2):
        head = tokens(64)
        batches["pairs64"] += [head + tokens(LENGTH - 64) for _ in range(2)]
    os.makedirs(folder, exist_ok=True)
    for name, seqs in batches.items():
        with open(os.path.join(folder, name + ".tok"), "w") as f:
            f.writelines(" ".join(map(str, s)) + "\n" for s in seqs)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
