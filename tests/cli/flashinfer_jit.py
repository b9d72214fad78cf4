#!/usr/bin/env python3
"""scripts/flashinfer-jit carries FlashInfer's compiled modules between device calls: save gathers every
<module>/<module>.so compiled under a workspace or loaded from a site into one tarball; load unpacks a
tarball where FlashInfer loads modules instead of compiling them (SITE/flashinfer/data/aot/). A missing
tarball or an empty save is not an error; a site without FlashInfer and bad usage are.
Usage: flashinfer_jit.py SCRIPT"""
import os
import subprocess
import sys
import tarfile
import tempfile


def run(script, *args):
    return subprocess.run([script, *args], capture_output=True, text=True)


def touch(path, text="elf"):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def modules(tarball):
    with tarfile.open(tarball) as t:
        return sorted(os.path.basename(n)[:-3] for n in t.getnames() if n.endswith(".so"))


def main():
    script = sys.argv[1]
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)

    with tempfile.TemporaryDirectory() as tmp:
        ws1, site1, site2, ws2 = (os.path.join(tmp, d) for d in ("ws1", "site1", "site2", "ws2"))
        ops = os.path.join(ws1, ".cache", "flashinfer", "0.5.3", "90a", "cached_ops")
        touch(os.path.join(ops, "batch_decode_a", "batch_decode_a.so"))
        touch(os.path.join(ops, "prefill_b", "prefill_b.so"))
        touch(os.path.join(ops, "prefill_b", "helper.so"))  # not <module>/<module>.so: left out
        for site in (site1, site2):
            os.makedirs(os.path.join(site, "flashinfer"))
        first = os.path.join(tmp, "out", "jit.tar.gz")

        r = run(script, "save", ws1, site1, first)
        check(r.returncode == 0, f"save: exit {r.returncode} {r.stderr}")
        check(modules(first) == ["batch_decode_a", "prefill_b"], f"save: modules {modules(first)}")
        check("2 modules" in r.stdout, f"save: says {r.stdout!r}")

        r = run(script, "load", first, site2)
        check(r.returncode == 0, f"load: exit {r.returncode} {r.stderr}")
        aot = os.path.join(site2, "flashinfer", "data", "aot")
        for m in ("batch_decode_a", "prefill_b"):
            check(os.path.isfile(os.path.join(aot, m, m + ".so")), f"load: {m} not under aot/")

        # The next call: what it loaded and what it compiled, together.
        touch(os.path.join(ws2, ".cache", "flashinfer", "0.5.3", "90a", "cached_ops", "merge_c", "merge_c.so"))
        second = os.path.join(tmp, "jit2.tar.gz")
        r = run(script, "save", ws2, site2, second)
        check(modules(second) == ["batch_decode_a", "merge_c", "prefill_b"], f"second save: {modules(second)}")

        r = run(script, "load", os.path.join(tmp, "none.tar.gz"), site2)
        check(r.returncode == 0 and "compiles" in r.stdout, f"missing tarball: exit {r.returncode} {r.stdout!r}")
        r = run(script, "save", os.path.join(tmp, "empty-ws"), os.path.join(tmp, "empty-site"), os.path.join(tmp, "x.tar.gz"))
        check(r.returncode == 0 and "nothing saved" in r.stdout and not os.path.exists(os.path.join(tmp, "x.tar.gz")),
              f"empty save: exit {r.returncode} {r.stdout!r}")
        r = run(script, "load", first, os.path.join(tmp, "no-flashinfer"))
        check(r.returncode == 1 and "no FlashInfer" in r.stderr, f"site without FlashInfer: exit {r.returncode} {r.stderr!r}")
        r = run(script, "unpack")
        check(r.returncode == 2 and "load TARBALL SITE" in r.stderr, f"bad usage: exit {r.returncode} {r.stderr!r}")

    for f in failures:
        print("FAIL:", f)
    print("flashinfer_jit:", "FAILED" if failures else "passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
