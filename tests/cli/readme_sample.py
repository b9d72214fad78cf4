"""The README's sample output is the tools' output: the columns of hydragen-sweep's and hydragen-decode's
tables and the fields of hydragen-diff's summary line, as the README shows them, are the ones the tools
print now (numbers aside). Run by CTest:

    python3 tests/cli/readme_sample.py README.md HYDRAGEN_DIFF HYDRAGEN_SWEEP HYDRAGEN_DECODE
"""
import re
import subprocess
import sys


def run(*argv):
    return subprocess.run(argv, capture_output=True, text=True, check=True, timeout=120).stdout


def shown(readme, first_word):
    """The README's lines (inside code blocks) that start with first_word, split into words."""
    lines, inside = [], False
    for line in readme.splitlines():
        if line.startswith("```"):
            inside = not inside
        elif inside and line.split()[:1] == [first_word]:
            lines.append(line.split())
    if not lines:
        sys.exit(f"readme_sample: the README shows no line starting with '{first_word}'")
    return lines


def fields(line):
    return re.findall(r"(\w+)=", line)


def check(what, readme_words, tool_words):
    if readme_words != tool_words:
        sys.exit(f"readme_sample: the README's {what} is\n  {' '.join(readme_words)}\nbut the tool prints\n  "
                 f"{' '.join(tool_words)}")


def main():
    readme_path, diff, sweep, decode = sys.argv[1:5]
    readme = open(readme_path).read()
    tiny = ("--batch", "2", "--prefix", "16", "--suffix", "2", "--q-heads", "1", "--kv-heads", "1", "--head-dim", "16")
    table = run(sweep, "--backends", "cpu-flat", "--cpu-replays", "1", "--csv", "/dev/null", *tiny)
    for words in shown(readme, "backend"):
        check("hydragen-sweep header", words, table.splitlines()[0].split())
    table = run(decode, "--preset", "smoke", "--csv", "/dev/null")
    for words in shown(readme, "model"):
        check("hydragen-decode header", words, table.splitlines()[0].split())
    line = run(diff, "--backend", "cpu-flat", *tiny)
    for words in shown(readme, "backend=cpu-hydragen"):
        check("hydragen-diff line's fields", fields(" ".join(words)), fields(line))
    print("readme_sample: the README's sample columns are the tools'")


if __name__ == "__main__":
    main()
