"""The sharing trees of hydragen-sweep's --tree, as the peers lay them out: the grammar (parse_tree, tree_text) and
a point's groups per level (tree_levels, path_groups), in the sweep's segment order (TreeSpec::build), so inputs,
page tables and the check's spec.json name the same segments. Pure Python: tested without torch or a GPU.
"""
import re
from collections import namedtuple

Level = namedtuple("Level", "groups length longest")  # longest > length: a ragged level (8x300-800)
Tree = namedtuple("Tree", "levels copied")
Group = namedtuple("Group", "tokens seqs")  # a group's shared tokens and the range of its sequences
LEVEL = re.compile(r"([0-9]+)x([0-9]+)(?:-([0-9]+))?")  # GROUPSxLENGTH or GROUPSxSHORTEST-LONGEST


def parse_tree(text):
    """--tree's grammar, hydragen-sweep's (core/include/hydragen/tree_spec.hpp, docs/tools.md#trees): prefix, levels
    outermost first (16x1024, 4x1024/4x256, ragged 8x300-800), copy: before them. Raises ValueError. flat is refused:
    it shares nothing, and the peers time shared forms."""
    if text == "prefix":
        return Tree((), False)
    if text == "flat":
        raise ValueError("tree 'flat' shares nothing, not even the prefix: the peers time shared forms")
    copied = text.startswith("copy:")
    levels = []
    for level in text[len("copy:") if copied else 0:].split("/"):
        m = LEVEL.fullmatch(level)
        if not m or int(m[1]) < 1 or int(m[3] or m[2]) < int(m[2]):
            raise ValueError(f"tree '{text}': expected prefix or levels like 16x1024, 4x1024/4x256, 8x300-800 "
                             "(copy: before them to copy them)")
        levels.append(Level(int(m[1]), int(m[2]), int(m[3] or m[2])))
    return Tree(tuple(levels), copied)


def tree_text(tree):
    """The text parse_tree reads back and hydragen-sweep writes (TreeSpec::text): its tree column and --points."""
    if not tree.levels:
        return "prefix"
    levels = (f"{l.groups}x{l.length}" + (f"-{l.longest}" if l.longest != l.length else "") for l in tree.levels)
    return ("copy:" if tree.copied else "") + "/".join(levels)


def group_tokens(level, child):
    """Tokens of a node's child-th group: the midpoint of the child-th of `groups` equal bins of [length, longest]
    (TreeSpec::Level::length_of), so a ragged level's lengths are the sweep's."""
    return level.length + (level.longest - level.length) * (2 * child + 1) // (2 * level.groups)


def tree_levels(pt):
    """The groups of the point's tree per level, outermost first, each level's in order: the sweep's segments 1, 2, ...
    (TreeSpec::build). Group j of a level of N groups holds sequences [j B/N, (j+1) B/N); its parent is the group of
    the level above that holds them. Empty for the prefix tree. A copy: tree has the same groups: copying is how a
    method stores their tokens, not which tokens a sequence attends."""
    levels, n = [], 1
    for level in parse_tree(pt.tree).levels:
        n *= level.groups
        size = pt.B // n
        levels.append([Group(group_tokens(level, j % level.groups), range(j * size, (j + 1) * size)) for j in range(n)])
    return levels


def tree_groups(pt):
    """The groups of tree_levels(pt), level after level: the order of the inputs' gk/gv and of the sweep's segments."""
    return [g for level in tree_levels(pt) for g in level]


def path_groups(levels, b):
    """Sequence b's groups, outermost first, as indices into the levels' groups taken in order."""
    path, offset = [], 0
    for level in levels:
        path.append(offset + b // len(level[0].seqs))
        offset += len(level)
    return path


def tree_error(pt):
    """Why the point's tree cannot split its batch, as hydragen-sweep refuses it (equal groups of consecutive
    sequences), or has a group of no tokens (a segment no page can hold); None when it can."""
    groups = 1
    for level in parse_tree(pt.tree).levels:
        groups *= level.groups
    if pt.B % groups:
        return f"tree {pt.tree} splits the batch into {groups} equal groups of consecutive sequences: " \
               f"B = {pt.B} is not a multiple of {groups}"
    if any(g.tokens < 1 for g in tree_groups(pt)):
        return f"tree {pt.tree}: a group of no tokens shares nothing (every group needs a token)"
    return None
