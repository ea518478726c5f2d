"""Croatian news training tags (SETimes.HR+, MTE-v4 style) mapped to the tagset of hr500k / UD
Croatian-SET / ReLDI (MANIFEST.md §10b): applied when ``mtt_hr_news``'s training split is read.

Two systematic differences, and a rule for each, learnt from ``mtt_hr_sm``'s *training* split
(its tags are in the new style; no dev or test tag is looked at):

1. **A value appended** (adjectives lacking definiteness: ``Agpmsn`` → ``Agpmsny`` / ``Agpmsnn``):
   the new tags that extend the old one by one letter are the candidates. The word's own tags in
   the social-media training data choose among them when it has one; else a masculine singular
   nominative form ending in ``-i`` is definite (``y``), any other such form indefinite (``n``);
   else the candidate the social-media data uses most.
2. **Trailing positions dropped** (pronouns and others in long MTE-v4 form: ``Pi-msn--n-a`` →
   ``Pi-msn``; ``Var3s-y`` → ``Var3s``): the longest prefix of the old tag (trailing ``-`` removed)
   that is a new tag.

Tags of neither kind stay as they are. On the training file this changes 11,438 of 112,374
tokens (10.2 %) and leaves 494 (0.4 %) with tags the social-media training data never uses.
Measured afterwards against the UD dev/test tag inventory (never used to map): tokens whose tag
those sets never use fall from 11,911 (10.6 %, MANIFEST) to 543 (0.5 %). ``tests/test_msd.py``
checks the counts.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import replace
from pathlib import Path

from seqtransfer.data.corpus import Sentence
from seqtransfer.data.dataset_spec import DatasetSpec
from seqtransfer.data.locate import read_split
from seqtransfer.data.mtt import MTT_HR_SM
from seqtransfer.errors import warn

COLUMN = "xpos"


class TagMapping:
    """Old tag (and word) -> new tag, learnt from sentences in the new tagset."""

    def __init__(self, new_sentences) -> None:
        self.tags = Counter(tag for sentence in new_sentences for tag in sentence.labels(COLUMN) if " " not in tag)
        self.word_tags: dict[str, Counter] = defaultdict(Counter)
        for sentence in new_sentences:
            for word, tag in zip(sentence.tokens, sentence.labels(COLUMN)):
                self.word_tags[word.lower()][tag] += 1

    def extensions(self, tag: str) -> list[str]:
        return [candidate for candidate in self.tags if len(candidate) == len(tag) + 1 and candidate.startswith(tag)]

    def prefix(self, tag: str) -> str | None:
        for end in range(len(tag), 2, -1):
            candidate = tag[:end].rstrip("-")
            if candidate in self.tags:
                return candidate
        return None

    def map(self, word: str, tag: str) -> str:
        if tag in self.tags or " " in tag:
            return tag
        candidates = self.extensions(tag)
        if candidates:
            known = [candidate for candidate in candidates if self.word_tags[word.lower()][candidate]]
            if known:
                return max(known, key=lambda candidate: self.word_tags[word.lower()][candidate])
            if tag.endswith("msn") and tag + "y" in candidates and tag + "n" in candidates:
                return tag + ("y" if word.lower().endswith("i") else "n")
            return max(candidates, key=lambda candidate: self.tags[candidate])
        return self.prefix(tag) or tag


def map_croatian_news(sentences: list, data_dir: str | Path | None) -> tuple[list, dict]:
    """The sentences with their MSD tags mapped, and counts: tokens, changed, left unknown."""
    mapping = TagMapping(read_split(MTT_HR_SM, "train", data_dir))
    mapped, changed, unknown, tokens = [], 0, 0, 0
    for sentence in sentences:
        old = sentence.labels(COLUMN)
        new = [mapping.map(word, tag) for word, tag in zip(sentence.tokens, old)]
        changed += sum(before != after for before, after in zip(old, new))
        unknown += sum(tag not in mapping.tags and " " not in tag for tag in new)
        tokens += len(old)
        mapped.append(replace(sentence, columns={**sentence.columns, COLUMN: new}))
    return mapped, {"tokens": tokens, "changed": changed, "unknown": unknown}


RELABELLINGS = {"hr_news_to_hr500k": map_croatian_news}


def relabelled(spec: DatasetSpec, sentences: list[Sentence], data_dir: str | Path | None) -> list[Sentence]:
    """The training sentences with their tags mapped (``DatasetSpec.relabel_train``), the change told."""
    sentences, counts = RELABELLINGS[spec.relabel_train](sentences, data_dir)
    warn(
        f"{spec.name} train: {counts['changed']:,} of {counts['tokens']:,} tags ({100 * counts['changed'] / counts['tokens']:.1f} %) mapped to the "
        f"tagset of its dev/test sets ({spec.relabel_train}); {counts['unknown']:,} ({100 * counts['unknown'] / counts['tokens']:.1f} %) have no counterpart"
    )
    return sentences
