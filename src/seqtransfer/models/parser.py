"""The deep biaffine parser of ``models/biaffine.py`` (Dozat & Manning 2017, Stanza's sizes): the
word encoder, its BiLSTM reading a learned ROOT first, under the dependency head."""

from __future__ import annotations

from seqtransfer.models.encoders import model_class

BiaffineParser = model_class("words", "dependency")
