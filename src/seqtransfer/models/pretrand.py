"""PretRand (PretRand paper, section 5): pre-trained and random units learnt jointly.

    x       = Upsilon(w)                                  shared WRE, transferred   (B, T, D)
    y_p     = Psi_p(Phi_p(x))                             pre-trained branch        (B, T, L)
    y_r     = Psi_r(Phi_r(x))                             random branch, k units    (B, T, L)
    y       = u * N(y_p) + v * N(y_r)                     equation 11               (B, T, L)

N is the l2 normalisation of each token's score vector over the L labels (equation 10); u and v
are learnable per-class weights initialised to 1. Both can be switched off for the ablation of
Table 5 (``model.normalize_branches``, ``model.branch_weighting``); random++ is a training
schedule, see ``transfer/schemes.py``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as functional
from torch import nn

from seqtransfer.config import ModelConfig
from seqtransfer.data.batching import Batch
from seqtransfer.models.bilstm import BiLSTM
from seqtransfer.models.dropout import Dropout
from seqtransfer.models.encoders import WordEncoder
from seqtransfer.models.heads import TaggingHead, check_classifier
from seqtransfer.models.outputs import OUTPUTS
from seqtransfer.models.representation import word_representation_of


class BranchWeighting(nn.Module):
    """Per-class weights u (pre-trained branch) and v (random branch), initialised to 1.

    Without ``learnable`` they are buffers fixed at 1 (equation 9's plain sum).
    """

    def __init__(self, label_count: int, learnable: bool) -> None:
        super().__init__()
        for name in ("pretrained", "random"):  # u, v
            if learnable:
                self.register_parameter(name, nn.Parameter(torch.ones(label_count)))
            else:
                self.register_buffer(name, torch.ones(label_count))

    def forward(self, pretrained_scores: torch.Tensor, random_scores: torch.Tensor) -> torch.Tensor:
        """(B, T, L), (B, T, L) -> (B, T, L) weighted sum."""
        return self.pretrained * pretrained_scores + self.random * random_scores


def combine_branches(pretrained_scores: torch.Tensor, random_scores: torch.Tensor, weighting: BranchWeighting, normalize: bool, scale: float = 1.0) -> torch.Tensor:
    """Equation 11 (or 9 without normalisation and with fixed unit weights); ``scale`` multiplies
    the unit-norm scores (1 = the paper; the softmax of a sum of two unit vectors is never confident)."""
    if normalize:
        pretrained_scores = functional.normalize(pretrained_scores, p=2.0, dim=-1)
        random_scores = functional.normalize(random_scores, p=2.0, dim=-1)
        if scale != 1.0:
            pretrained_scores, random_scores = pretrained_scores * scale, random_scores * scale
    return weighting(pretrained_scores, random_scores)


class PretRand(TaggingHead, WordEncoder, nn.Module):
    """The base tagger's branch (transferred) plus a random BiLSTM + FC branch on the shared WRE:
    the word encoder and the tagging head's loss, decoding and output, with two branches between."""

    feature_extractors = ()
    reads_root = False

    def __init__(self, config: ModelConfig, word_count: int, character_count: int, label_count: int) -> None:
        nn.Module.__init__(self)
        check_classifier(config)
        self.word_representation = word_representation_of(config, word_count, character_count)
        self.feature_extractor = BiLSTM(self.word_representation.output_size, config.hidden)  # Phi_p
        self.classifier = nn.Linear(config.hidden, label_count)  # Psi_p
        self.random_feature_extractor = BiLSTM(self.word_representation.output_size, config.random_hidden)  # Phi_r
        self.random_classifier = nn.Linear(config.random_hidden, label_count)  # Psi_r
        self.weighting = BranchWeighting(label_count, learnable=config.branch_weighting)
        self.normalize = config.normalize_branches
        self.scale = config.normalized_scale
        self.dropout = Dropout(config.dropout)
        self.output = OUTPUTS[config.classifier](label_count)

    @classmethod
    def from_vocabularies(cls, config: ModelConfig, vocabularies) -> PretRand:
        return cls(config, len(vocabularies.words), len(vocabularies.characters), len(vocabularies.labels))

    def branch_emissions(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        """Raw (B, T, L) scores of the pre-trained and the random branch."""
        inputs = self.word_representation(batch)  # (B, T, D)
        pretrained = self.classifier(self.dropout(self.feature_extractor(inputs, batch.lengths)))
        random = self.random_classifier(self.dropout(self.random_feature_extractor(inputs, batch.lengths)))
        return pretrained, random

    def emissions(self, batch: Batch) -> torch.Tensor:
        return combine_branches(*self.branch_emissions(batch), self.weighting, self.normalize, self.scale)
