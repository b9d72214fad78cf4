#!/usr/bin/env python3
"""scripts/ncu-source-summary.py on a small source page in ncu's format: the instructions by opcode per
unit of work (predicates stripped), the stall samples by reason and by loop body, shared memory's wavefronts against their
ideal by opcode; and a clear error for a CSV that is not a source page.
Usage: ncu_source_summary.py NCU_SOURCE_SUMMARY"""
import os
import subprocess
import sys
import tempfile

COLUMNS = ["Address", "Source", "Warp Stall Sampling (All Samples)", "Instructions Executed",
           "L1 Wavefronts Shared", "L1 Wavefronts Shared Ideal", "stall_wait", "stall_short_sb",
           "stall_wait (Not Issued)"]
# (source, samples, executed, wavefronts, ideal, wait, short_sb): 10 units of work.
LINES = [("LDGSTS.E.BYPASS.128 desc[UR6][R114.64], [R117]", 5, 40, 320, 160, 1, 4),
         ("R2UR UR6, R108", 2, 80, 0, 0, 2, 0),
         ("@!P0 R2UR UR7, R109", 1, 80, 0, 0, 1, 0),
         ("LDSM.16.M88.4 R112, [R112]", 3, 40, 160, 160, 0, 3),
         ("HMMA.16816.F32.BF16 R120, R12, R112, RZ", 9, 80, 0, 0, 3, 6)]


def page(lines):
    text = '"Kernel Name","void k(Params)",\n' + ",".join(f'"{c}"' for c in COLUMNS) + "\n"
    for i, (source, samples, executed, wf, ideal, wait, short) in enumerate(lines):
        values = [f"0x{16 * i:x}", "      " + source, samples, f"{executed:,}", wf, ideal, wait, short, 0]
        text += ",".join(f'"{v}"' for v in values) + "\n"
    return text


def run(script, text, *args):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "source.csv")
        with open(path, "w") as f:
            f.write(text)
        return subprocess.run([sys.executable, script, path, *args], capture_output=True, text=True)


def main(script):
    done = run(script, page(LINES), "--per", "10")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "executed instructions per unit (/10): 32.0" in out, out
    lines = {line.split()[0]: line.split() for line in out.splitlines() if line and not line.startswith((" ", "exec", "opcode", "warp", "shared"))}
    assert lines["R2UR"][1] == "16.0", out  # two rows, one predicated: 160 / 10
    assert lines["HMMA.16816.F32.BF16"][1] == "8.0" and lines["HMMA.16816.F32.BF16"][3] == "9", out
    assert "wait" in out and "short_sb" in out and "Not Issued" not in out, out
    fields = {line.split()[0]: line.split() for line in out.splitlines() if line.startswith("  ")}
    assert fields["short_sb"][1:] == ["13", "65.0%"], out  # 13 of 20 samples
    # Loop bodies: the instructions executed 80 times (R2UR twice, HMMA) hold 12 of the 20 samples.
    assert "executed           80:      3 instructions,       12 samples  60.0%  wait 6, short_sb 6" in out, out
    assert "executed           40:      2 instructions,        8 samples  40.0%  short_sb 7, wait 1" in out, out
    assert "shared-memory wavefronts: 480, ideal 320" in out, out
    assert fields["LDGSTS.E.BYPASS.128"][1:] == ["320", "ideal", "160", "x2.00"], out

    bad = run(script, "a,b\n1,2\n")
    assert bad.returncode != 0 and "no source page header" in bad.stderr, bad.stderr
    worse = run(script, page(LINES), "--per", "0")
    assert worse.returncode != 0 and "--per must be positive" in worse.stderr, worse.stderr
    print("ncu-source-summary.py: opcodes per unit, stall reasons, loop bodies, wavefronts, bad input")


if __name__ == "__main__":
    main(*sys.argv[1:])
