"""A run's vocabularies (words, characters, labels, input tags) and its initial word embedding matrix."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from seqtransfer.config import RunConfig
from seqtransfer.corpora.task_data import TaskData
from seqtransfer.data.tag_feature import add_tag_vocabulary
from seqtransfer.data.vocabulary import Vocabularies, Vocabulary, build_vocabularies, word_key
from seqtransfer.embeddings.awd_lstm import is_awd_lstm, read_awd_words, refuse_frozen_features
from seqtransfer.embeddings.recurrent_lm import is_recurrent_lm, read_vocabulary
from seqtransfer.embeddings.static import build_embedding_matrix, load_vectors
from seqtransfer.embeddings.transformer import check_encoder, encoder_fingerprint, encoder_path, encoder_shape
from seqtransfer.errors import SeqTransferError
from seqtransfer.rundir import tagger

Log = Callable[[str], None]


def prepare_vocabularies(config: RunConfig, data: TaskData, log: Log, base: Vocabularies | None = None, extra_tokens: list | None = None) -> tuple[Vocabularies, np.ndarray]:
    """Vocabularies (extending ``base``'s when transferring) and the initial word embedding matrix;
    ``extra_tokens`` (unlabelled sentences) count as evaluation words."""
    evaluation_tokens = [tokens for split in data.splits if split != "train" for tokens in data.tokens(split)] + list(extra_tokens or [])
    vocabularies, matrix = build_word_vocabularies(config, data.tokens("train"), evaluation_tokens, data.kind.label_strings(data.gold("train")), log, base)
    described = add_tag_vocabulary(config.model, data, vocabularies, tagger, base)
    if described:
        log(described)
    return vocabularies, matrix


def build_word_vocabularies(config: RunConfig, train_tokens: list, evaluation_tokens: list, train_labels, log: Log, base: Vocabularies | None = None) -> tuple[Vocabularies, np.ndarray]:
    """Words (training words + evaluation words with a pre-trained vector), characters, labels, and
    the initial word embedding matrix."""
    model_config, data_config = config.model, config.data
    if base is not None:  # the target must look words up exactly as the source did
        model_config.lowercase_words, data_config.twitter_normalization = base.lowercase, base.twitter
    vectors = None
    if model_config.embeddings:
        keys = {word_key(t, model_config.lowercase_words, data_config.twitter_normalization) for s in train_tokens + evaluation_tokens for t in s}
        vectors = load_vectors(model_config.embeddings, keys, lowercase=model_config.lowercase_words)
        if vectors.dimension != model_config.word_dimension:
            raise SeqTransferError(
                f"embeddings '{model_config.embeddings}' have {vectors.dimension} dimensions, model.word_dimension is {model_config.word_dimension}",
                hint=f"set model.word_dimension={vectors.dimension}",
            )
    pretrained = set(vectors.words) if vectors is not None else set()
    vocabularies = build_vocabularies(train_tokens, train_labels, evaluation_tokens, pretrained, model_config.lowercase_words, data_config.twitter_normalization, base=base)
    if model_config.encoder:  # every sentence encoded with these vocabularies carries the encoder's vectors
        refuse_frozen_features(encoder_path(model_config.encoder), model_config.encoder_mode)
        check_encoder(model_config.encoder)
        model_config.encoder_layers, model_config.encoder_dimension = encoder_shape(model_config.encoder)
        model_config.encoder_hash = encoder_fingerprint(model_config.encoder)
        vocabularies.encoder, vocabularies.encoder_pooling, vocabularies.encoder_mode = model_config.encoder, model_config.encoder_pooling, model_config.encoder_mode
        vocabularies.encoder_segments = True
        vocabularies.pair_encoding = model_config.pair_encoding
        if model_config.encoder_mode == "finetune" and is_recurrent_lm(encoder_path(model_config.encoder)):
            vocabularies.characters = with_lm_characters(vocabularies.characters, model_config.encoder)
        if model_config.encoder_mode == "finetune" and is_awd_lstm(encoder_path(model_config.encoder)):
            vocabularies.words = with_lm_words(vocabularies.words, model_config.encoder, vocabularies.word_keys)
        how = f"fine-tuned, {model_config.encoder_pooling} sub-word" if model_config.encoder_mode == "finetune" else f"frozen, {model_config.encoder_pooling} sub-word, scalar mix"
        log(f"encoder {model_config.encoder}: {model_config.encoder_layers} layers of {model_config.encoder_dimension} units, {how}")
    matrix, found = build_embedding_matrix(vocabularies.words.items, vectors, model_config.word_dimension, seed=config.train.seed)
    log(f"vocabulary: {len(vocabularies.words)} words ({found} pre-trained), {len(vocabularies.characters)} characters, {len(vocabularies.labels)} labels")
    return vocabularies, matrix


def with_lm_words(words: Vocabulary, encoder: str, keys) -> Vocabulary:
    """The run's words, then the AWD-LSTM's that its data lacks (under the run's word keys): a
    fine-tuned LM then reads every test word it knows as itself, not as the unknown word."""
    known = set(words.items)
    extra = dict.fromkeys(key for key in keys(read_awd_words(encoder_path(encoder))) if key not in known)
    return Vocabulary([*words.items, *extra])


def with_lm_characters(characters: Vocabulary, encoder: str) -> Vocabulary:
    """The run's characters, then the recurrent LM's that its training data lacks: a fine-tuned LM
    then spells every word of the test data with the characters it learned, not only those the
    training data happened to hold (an emoji first seen at test time)."""
    known = set(characters.items)
    return Vocabulary([*characters.items, *(character for character in read_vocabulary(encoder_path(encoder))[1] if character not in known)])
