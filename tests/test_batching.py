"""Batch assembly: distinct forms come sorted by length and every token points at its own form."""

import numpy as np

from seqtransfer.data.batching import encode_sentences, make_batch, training_batches
from seqtransfer.data.vocabulary import build_vocabularies

SENTENCES = [["@user", "lol", "https://t.co/abcdefghijkl", "a"], ["Paris", "is", "a", "city", "!"], ["extraordinarily", "long", "words", "a", "lol"]]
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


def test_decoding_with_the_form_table_equals_encoding_forms_per_batch():
    import pytest
    import torch

    from seqtransfer.config import ModelConfig
    from seqtransfer.data.batching import evaluation_batches
    from seqtransfer.models.tagger import Tagger
    from seqtransfer.training.inference import predict_labels

    sentences = SENTENCES * 5 + [["a", "b"], ["unseen", "forms", "here", "!"]]
    labels = [[("B-X", "I-X", "O", "B-Y")[position % 4] for position in range(len(sentence))] for sentence in SENTENCES]
    vocabularies = build_vocabularies(SENTENCES, labels, [], set(), lowercase=True, twitter=False)
    encoded = encode_sentences(sentences, vocabularies)
    torch.manual_seed(0)
    model = Tagger(ModelConfig(classifier="crf", word_dimension=8, char_dimension=6, char_hidden=8, hidden=10), len(vocabularies.words), len(vocabularies.characters), len(vocabularies.labels))
    model.eval()
    representation = model.word_representation
    with torch.inference_mode():
        per_batch = [representation(batch)[batch.mask] for batch in evaluation_batches(encoded, 4)]  # padding holds junk
        with representation.forms_of(encoded):
            assert representation.form_table.shape == (len(encoded.form_characters), 8)
            from_table = [representation(batch)[batch.mask] for batch in evaluation_batches(encoded, 4)]
        assert representation.form_table is None  # gone once the set is decoded
    for expected, actual in zip(per_batch, from_table):
        assert torch.allclose(expected, actual, atol=1e-6)
    assert predict_labels(model, encoded, vocabularies.labels, 4) == predict_labels(model, encoded, vocabularies.labels, 64)
    with pytest.raises(RuntimeError, match="decoding"):
        with representation.forms_of(encoded):  # gradients enabled: not for training
            pass
