"""Vocabularies of words, characters and labels, saved as JSON in the run directory."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

PADDING = "<pad>"
UNKNOWN = "<unk>"

_URL = re.compile(r"^(https?://|www\.)\S+$", re.IGNORECASE)
_USER = re.compile(r"^@\w+$")
_NUMBER = re.compile(r"^[+-]?\d[\d,.:/]*$")


def word_key(token: str, lowercase: bool, twitter: bool) -> str:
    """The key a token is looked up under in the word embedding (characters keep the raw form)."""
    if twitter:
        if _URL.match(token):
            return "<url>"
        if _USER.match(token):
            return "<user>"
        if _NUMBER.match(token):
            return "0"
    return token.lower() if lowercase else token


def one_tag_set(first: set[str], second: set[str]) -> bool:
    """Whether two label sets are one tag set: they share at least half of the smaller one's labels
    (a mapped or coarser source shares nearly all; NER and POS, or two NER type sets, share "O" at most)."""
    return len(first & second) >= min(len(first), len(second)) / 2


@dataclass
class Vocabulary:
    """A bijection between strings and indices; index 0/1 are padding/unknown when present."""

    items: list[str]

    def __post_init__(self) -> None:
        self.index = {item: position for position, item in enumerate(self.items)}

    @classmethod
    def build(cls, items: Iterable[str], specials: Sequence[str] = (PADDING, UNKNOWN), base: Vocabulary | None = None) -> Vocabulary:
        """Specials (or the items of ``base``, kept at their indices) first, then new items by
        decreasing frequency (ties by first appearance)."""
        head = list(base.items) if base is not None else list(specials)
        known = set(head)
        counts = Counter(items)
        return cls(head + [item for item, _ in counts.most_common() if item not in known])

    def __len__(self) -> int:
        return len(self.items)

    def __contains__(self, item: str) -> bool:
        return item in self.index

    @property
    def unknown_index(self) -> int | None:
        return self.index.get(UNKNOWN)

    def encode(self, items: Sequence[str]) -> np.ndarray:
        """Indices of ``items``; unknown strings map to the unknown index (or -1 without one)."""
        fallback = self.unknown_index if self.unknown_index is not None else -1
        lookup = self.index.get
        return np.fromiter((lookup(item, fallback) for item in items), dtype=np.int64, count=len(items))

    def decode(self, indices: Iterable[int]) -> list[str]:
        return [self.items[index] for index in indices]


@dataclass
class Vocabularies:
    """The three vocabularies a tagger needs (and input tags when a model reads them), plus how word keys are formed."""

    words: Vocabulary
    characters: Vocabulary
    labels: Vocabulary
    lowercase: bool = True
    twitter: bool = False
    task_labels: dict[str, Vocabulary] | None = None  # a multi-task model's labels, per task (``labels`` is then empty)
    encoder: str | None = None  # a Transformer whose token vectors every encoded sentence carries (embeddings/transformer.py)
    encoder_pooling: str = "first"
    encoder_mode: str = "features"  # features: cached frozen vectors | finetune: sub-word ids for an encoder inside the model
    encoder_segments: bool = False  # features: a pair's second text reads BERT token type 1 (false in runs saved before it did)
    pair_encoding: str = "joint"  # a pair's texts encoded together (joint) or each alone (separate: the To-tune paper's Table 4)
    tags: Vocabulary | None = None  # input tags (model.tag_feature): padding, unknown, then the training tags
    tag_column: str | None = None  # the column the tags are read from (gold tags)
    tagger: str | None = None  # a tagging run directory that predicts the tags instead (data/tag_feature.py)
    # that tagger's tags for token lists (data/tag_feature.tag_predictor), given by whoever trains or loads the run (not saved)
    tag_predictor: Callable[[Sequence[Sequence[str]]], list[list[str]]] | None = field(default=None, compare=False, repr=False)

    def word_keys(self, tokens: Sequence[str]) -> list[str]:
        return [word_key(token, self.lowercase, self.twitter) for token in tokens]

    def to_json(self) -> dict:
        return {
            "words": self.words.items,
            "characters": self.characters.items,
            "labels": self.labels.items,
            "lowercase": self.lowercase,
            "twitter": self.twitter,
            **({"task_labels": {task: labels.items for task, labels in self.task_labels.items()}} if self.task_labels else {}),
            **({"encoder": self.encoder, "encoder_pooling": self.encoder_pooling, "encoder_mode": self.encoder_mode, "encoder_segments": self.encoder_segments} if self.encoder else {}),
            **({"pair_encoding": self.pair_encoding} if self.pair_encoding != "joint" else {}),
            **({"tags": self.tags.items, "tag_column": self.tag_column, "tagger": self.tagger} if self.tags is not None else {}),
        }

    @classmethod
    def from_json(cls, data: dict) -> Vocabularies:
        return cls(
            words=Vocabulary(list(data["words"])),
            characters=Vocabulary(list(data["characters"])),
            labels=Vocabulary(list(data["labels"])),
            lowercase=bool(data["lowercase"]),
            twitter=bool(data["twitter"]),
            task_labels={str(task): Vocabulary(list(items)) for task, items in data["task_labels"].items()} if data.get("task_labels") else None,
            encoder=data.get("encoder"),
            encoder_pooling=str(data.get("encoder_pooling", "first")),
            encoder_mode=str(data.get("encoder_mode", "features")),
            encoder_segments=bool(data.get("encoder_segments", False)),
            pair_encoding=str(data.get("pair_encoding", "joint")),
            tags=Vocabulary(list(data["tags"])) if data.get("tags") else None,
            tag_column=data.get("tag_column"),
            tagger=data.get("tagger"),
        )


def build_vocabularies(
    train_tokens: Sequence[Sequence[str]],
    train_labels: Sequence[Sequence[str]],
    extra_tokens: Sequence[Sequence[str]],
    pretrained_words: set[str],
    lowercase: bool,
    twitter: bool,
    base: Vocabularies | None = None,
) -> Vocabularies:
    """Words of the training data plus evaluation words that have a pre-trained vector.

    Keeping only these rows makes the embedding table vocabulary-sized (tens of thousands of
    rows rather than the 400k of GloVe), which keeps optimiser steps cheap. With ``base`` (a
    source model's vocabularies) its words and characters keep their indices and new ones are
    appended, so transferred embedding rows stay aligned; labels are always the target's own.
    """
    train_keys = [word_key(token, lowercase, twitter) for sentence in train_tokens for token in sentence]
    extra_keys = [word_key(token, lowercase, twitter) for sentence in extra_tokens for token in sentence]
    words = Vocabulary.build(train_keys + [key for key in extra_keys if key in pretrained_words], base=base.words if base else None)
    characters = Vocabulary.build((character for sentence in train_tokens for token in sentence for character in token), base=base.characters if base else None)
    labels = Vocabulary.build((label for sentence in train_labels for label in sentence), specials=())
    return Vocabularies(words, characters, labels, lowercase, twitter)
