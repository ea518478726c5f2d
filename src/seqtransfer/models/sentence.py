"""Sentence classifiers and regressors: one label (or score) per sentence (``tasks/sentence.py``,
``tasks/regression.py``): an encoder (``models/encoders.py``) under the sentence head
(``models/heads.py``).

    SentenceClassifier   WRE (words, characters, frozen encoder mix when model.encoder is set)
                         -> BiLSTM -> mean over tokens -> dropout -> linear          (B, L)
                         (pairs A [SEP] B: means u over A and v over B, [u; v; |u-v|; u*v] -> linear)
    EncoderClassifier    fine-tuned Transformer -> [CLS] of the sentence's first window
                         -> dropout -> linear                                         (B, L)
    (Regressors: the same with one output, a score, and a squared-error loss.)

Both put the label scores at token 0 of a (B, T, L) emission tensor, so the loss and decoding
read column 0 of the batch's ``labels`` target; decoding gives (B, T) with the label in column 0.
"""

from __future__ import annotations

from seqtransfer.models.encoders import model_class
from seqtransfer.models.sentence_readers import mean_over

__all__ = ["EncoderClassifier", "EncoderRegressor", "SentenceClassifier", "SentenceRegressor", "mean_over"]

SentenceClassifier = model_class("words", "sentence")
EncoderClassifier = model_class("transformer", "sentence")
SentenceRegressor = model_class("words", "regression")
EncoderRegressor = model_class("transformer", "regression")
