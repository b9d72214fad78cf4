#!/usr/bin/env python3
"""Token-id files for `hydragen-sweep --tokens` where sharing is absent or short (issue 19: detection
must never lose to flat attention), plus one where it clearly pays, as a control:

    scripts/token-batches.py DIR     # writes DIR/NAME.tok, one sequence a line

Every batch is 1024 sequences of 1088 tokens:
none         random tokens, no common prefix
commonL      the first L tokens alike in all (L = 16 .. 256; the cost model's shortest shared run for
             1024 readers at bf16, Hq 8, Hkv 1, D 128 is 73 tokens, 145 between two)
pairsL       512 pairs, each pair's first L tokens alike (L = 64 .. 512)
prefix1024   a common 1024 tokens, then 64 of each sequence's own (the sweep's (1024, 1024, 64))
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

    def shared_by(group, length):
        """SEQS sequences whose first `length` tokens are alike within each run of `group`."""
        seqs = []
        for _ in range(SEQS // group):
            head = tokens(length)
            seqs += [head + tokens(LENGTH - length) for _ in range(group)]
        return seqs

    batches = {"none": [tokens(LENGTH) for _ in range(SEQS)]}
    batches.update({f"common{n}": shared_by(SEQS, n) for n in (16, 32, 64, 128, 256)})
    batches.update({f"pairs{n}": shared_by(2, n) for n in (64, 128, 256, 512)})
    batches["prefix1024"] = shared_by(SEQS, 1024)
    os.makedirs(folder, exist_ok=True)
    for name, seqs in batches.items():
        with open(os.path.join(folder, name + ".tok"), "w") as f:
            f.writelines(" ".join(map(str, s)) + "\n" for s in seqs)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
