"""Batch assembly: distinct forms come sorted by length and every token points at its own form."""

import numpy as np

from seqtransfer.data.batching import encode_sentences, make_batch, training_batches
from seqtransfer.data.vocabulary import build_vocabularies

SENTENCES = [
    ["@user", "lol", "https://t.co/abcdefghijkl", "a"],
    ["Paris", "is", "a", "city", "!"],
    ["extraordinarily", "long", "words", "a", "lol"],
]
LABELS = [["O"] * len(sentence) for sentence in SENTENCES]


def test_forms_are_sorted_by_length_and_tokens_find_their_characters():
    vocabularies = build_vocabularies(SENTENCES, LABELS, [], set(), lowercase=True, twitter=False)
    encoded = encode_sentences(SENTENCES, vocabularies, LABELS)
    batch = make_batch(encoded, np.array([2, 0, 1]))
    lengths = batch.character_lengths.tolist()
    assert lengths == sorted(lengths)
    assert len(lengths) == len({token for sentence in SENTENCES for token in sentence})  # each distinct form once
    characters = vocabularies.characters.items
    for row, sentence_index in enumerate(batch.indices):
        for position, token in enumerate(SENTENCES[sentence_index]):
            form = int(batch.form_index[row, position])
            spelled = "".join(characters[index] for index in batch.characters[form, : lengths[form]].tolist())
            assert spelled == token


def test_every_training_sentence_appears_once_per_epoch():
    vocabularies = build_vocabularies(SENTENCES, LABELS, [], set(), lowercase=True, twitter=False)
    encoded = encode_sentences(SENTENCES * 7, vocabularies, LABELS * 7)
    seen = np.concatenate([batch.indices for batch in training_batches(encoded, 4, np.random.default_rng(0))])
    assert sorted(seen.tolist()) == list(range(21))
