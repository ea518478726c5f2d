"""Dependency trees read from CoNLL-U HEAD and DEPREL columns, checked before training.

A :class:`Tree` gives each token (syntactic word; multiword ranges and empty nodes are not
tokens) its head, 0 for the root, 1..n for another token, and its relation. Gold trees are
checked: HEAD must be an integer in 0..n, not the token itself, the heads must reach the root
without a cycle, at least one token must be attached to the root (several roots are allowed: a
tweet of the original Tweebank v2 files may hold several trees), and DEPREL must be given.
"""

from __future__ import annotations

from dataclasses import dataclass

from seqtransfer.data.corpus import Sentence
from seqtransfer.errors import SeqTransferError

HEAD, RELATION = "head", "deprel"
TREE_HINT = "fix the HEAD/DEPREL columns of this sentence so that they form a tree (see universaldependencies.org/format.html)"


@dataclass(frozen=True)
class Tree:
    """heads[i]: the head of token i+1 (0 = root); relations[i]: its relation."""

    heads: tuple[int, ...]
    relations: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.heads)

    @property
    def root_count(self) -> int:
        return sum(head == 0 for head in self.heads)


def token_line(sentence: Sentence, position: int) -> int | None:
    """1-based file line of token ``position`` (range and empty-node lines counted)."""
    if sentence.line is None:
        return None
    extra = sum(1 for index, _ in sentence.extra_lines if 0 < index <= position)
    return sentence.line + position + extra


def read_tree(sentence: Sentence) -> Tree:
    """The gold tree of a CoNLL-U sentence; a one-line error names the file and line of any defect."""
    for column in (HEAD, RELATION):
        if column not in sentence.columns:
            raise SeqTransferError(
                f"no {column.upper()} column: this file has no dependency trees",
                path=sentence.source,
                line=sentence.line,
                hint="parse a CoNLL-U file with HEAD and DEPREL filled, or pick a tagging task",
            )
    length = len(sentence.tokens)
    check_numbering(sentence)
    heads = []
    for position, (value, relation) in enumerate(zip(sentence.columns[HEAD], sentence.columns[RELATION])):
        fail = lambda message, position=position: SeqTransferError(message, path=sentence.source, line=token_line(sentence, position), hint=TREE_HINT)  # noqa: E731
        if not (value.isascii() and value.isdigit()):
            raise fail(f"HEAD {value!r} of token {position + 1} is not an integer")
        head = int(value)
        if head > length:
            raise fail(f"HEAD {head} of token {position + 1} is out of range (the sentence has {length} tokens)")
        if head == position + 1:
            raise fail(f"token {position + 1} is its own head")
        if relation in ("", "_"):
            raise fail(f"token {position + 1} has no DEPREL")
        heads.append(head)
    tree = Tree(tuple(heads), tuple(sentence.columns[RELATION]))
    check_acyclic(tree, sentence)
    return tree


def check_numbering(sentence: Sentence) -> None:
    """A tree's token IDs count 1, 2, 3, ...: its HEAD values name tokens by them, so a gap or a
    repeat (which taggers tolerate: released files have them) would point heads at the wrong token."""
    for position, identifier in enumerate(sentence.columns.get("id", ())):
        if identifier != str(position + 1):
            raise SeqTransferError(
                f"token ID {identifier} where {position + 1} was due: a tree's IDs must count 1, 2, 3, ... for its HEAD values to name tokens",
                path=sentence.source,
                line=token_line(sentence, position),
                hint="renumber the sentence's ID column (and its HEAD values with it)",
            )


def check_acyclic(tree: Tree, sentence: Sentence) -> None:
    """Every token must reach the root by following heads; a root must exist."""
    if tree.root_count == 0:
        raise SeqTransferError("no token has HEAD 0 (the sentence has no root)", path=sentence.source, line=sentence.line, hint=TREE_HINT)
    reaches_root = [False] * (len(tree) + 1)
    reaches_root[0] = True
    for start in range(1, len(tree) + 1):
        path, node = [], start
        while not reaches_root[node] and node not in path:
            path.append(node)
            node = tree.heads[node - 1]
        if not reaches_root[node]:
            cycle = path[path.index(node) :]
            raise SeqTransferError(f"tokens {', '.join(map(str, cycle))} form a cycle", path=sentence.source, line=token_line(sentence, cycle[0] - 1), hint=TREE_HINT)
        for visited in path:
            reaches_root[visited] = True


def universal_relation(relation: str) -> str:
    """``acl:relcl`` -> ``acl``: the part CoNLL 2018's LAS compares."""
    return relation.split(":", 1)[0]
