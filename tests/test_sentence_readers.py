"""Sentence readers (issue 55): the To-tune paper's heads as ways of reading a sentence or a pair."""

from __future__ import annotations

import pytest
import torch
from conftest import FIXTURES, TINY_MODEL

SENTIMENT = ["--train", str(FIXTURES / "tiny_sentiment_train.tsv"), "--dev", str(FIXTURES / "tiny_sentiment_dev.tsv")]
SIMILARITY = ["--train", str(FIXTURES / "tiny_similarity.tsv"), "--dev", str(FIXTURES / "tiny_similarity.tsv"), "--columns", "text,text_b,score"]


class Pair:
    """The few fields of a batch the pair readers read."""

    def __init__(self, segments: list[list[int]]) -> None:
        self.segments = torch.tensor(segments)
        self.mask = self.segments != 9  # 9: padding here


def test_a_pair_splits_into_its_two_texts_in_order():
    from seqtransfer.models.sentence_readers import split_pair

    states = torch.arange(2 * 6, dtype=torch.float32).view(2, 6, 1)
    pair = Pair([[0, 0, 2, 1, 1, 1], [0, 2, 1, 9, 9, 9]])
    first, first_mask, second, second_mask = split_pair(states, pair)
    assert first[0, :, 0].tolist() == [0, 1] and first_mask.tolist() == [[True, True], [True, False]] and first[1, 0, 0] == 6
    assert second[0, :, 0].tolist() == [3, 4, 5] and second_mask.tolist() == [[True, True, True], [True, False, False]] and second[1, 0, 0] == 8


def test_bi_attention_ignores_padding_and_aligns_each_token_with_the_other_text():
    from seqtransfer.models.sentence_readers import bi_attention

    first = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]])
    second = torch.tensor([[[10.0, 0.0], [0.0, 10.0], [99.0, 99.0]]])
    aligned_first, aligned_second = bi_attention(first, torch.tensor([[True, True]]), second, torch.tensor([[True, True, False]]))
    assert torch.allclose(aligned_first[0, 0], torch.tensor([10.0, 0.0]), atol=1e-3)  # token 1 of A matches token 1 of B; B's padding unread
    assert torch.allclose(aligned_first[0, 1], torch.tensor([0.0, 10.0]), atol=1e-3)
    assert aligned_second.shape == (1, 3, 2)


@pytest.mark.parametrize("reader, data", [("max", SENTIMENT), ("bcn", SENTIMENT), ("esim", SIMILARITY), ("biattention", SIMILARITY), ("max", SIMILARITY), ("ulmfit", SENTIMENT)])
def test_each_reader_trains_saves_loads_and_predicts(tmp_path, reader, data):
    import seqtransfer
    from seqtransfer.cli import run
    from seqtransfer.rundir import load_run

    output = tmp_path / reader
    run(["train", *data, "--epochs", "2", "--output", str(output), "--quiet", "--device", "cpu", *TINY_MODEL, f"model.sentence_reader={reader}"])
    loaded = load_run(output)
    assert type(loaded.model.reader).__name__.lower().startswith(reader[:3])
    has_weights = any(name.startswith("reader.") for name in loaded.model.state_dict())
    assert has_weights == (reader in ("esim", "bcn", "ulmfit"))
    # ESIM and the BCN read the word representation themselves, as published: no BiLSTM before them
    has_extractor = any(name.startswith("feature_extractor.") for name in loaded.model.state_dict())
    assert has_extractor == (reader not in ("esim", "bcn")) and (loaded.config.model.feature_extractor == "none") == (reader in ("esim", "bcn"))
    sentences = [["fine", "[SEP]", "good"], ["bad", "day", "[SEP]", "bad"]] if data is SIMILARITY else [["fine", "film"], ["bad"]]
    predicted = seqtransfer.load(output).predict(sentences)
    assert len(predicted) == 2


def test_a_bilstm_asked_for_before_esim_is_built(tmp_path):
    from seqtransfer.cli import run
    from seqtransfer.rundir import load_run

    run(["train", *SIMILARITY, "--epochs", "1", "--output", str(tmp_path / "run"), "--quiet", "--device", "cpu", *TINY_MODEL, "model.sentence_reader=esim", "model.feature_extractor=bilstm"])
    assert any(name.startswith("feature_extractor.") for name in load_run(tmp_path / "run").model.state_dict())


def test_padding_never_wins_a_max_pool_whatever_the_values():
    from seqtransfer.models.sentence_readers import max_over

    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        states = torch.tensor([[[-3e4], [5e4]]]).clamp(min=torch.finfo(dtype).min, max=torch.finfo(dtype).max).to(dtype)
        assert max_over(states, torch.tensor([[True, False]])).item() == states[0, 0, 0].item()


def test_the_bcn_may_stack_more_maxout_layers(tmp_path):
    import seqtransfer
    from seqtransfer.cli import run
    from seqtransfer.rundir import load_run

    names = {}
    for layers in (1, 3):
        output = tmp_path / f"bcn{layers}"
        run(["train", *SENTIMENT, "--epochs", "1", "--output", str(output), "--quiet", "--device", "cpu", *TINY_MODEL, "model.sentence_reader=bcn", f"model.bcn_maxout_layers={layers}"])
        names[layers] = {name for name in load_run(output).model.state_dict() if name.startswith("reader.")}
        assert len(seqtransfer.load(output).predict([["fine", "film"], ["bad"]])) == 2
    added = names[3] - names[1]
    assert names[1] < names[3] and {name.split(".")[2] for name in added} == {"0", "1"}  # reader.more_maxout.{0,1}.*: the first layer keeps its name


def test_a_pair_reader_on_single_texts_and_an_unknown_reader_are_one_line(tmp_path, capsys):
    from seqtransfer.cli import main

    for reader, expected in (("esim", "reads sentence pairs, and this data has none"), ("nosuch", "unknown sentence reader 'nosuch'")):
        assert main(["train", *SENTIMENT, "--epochs", "1", "--output", str(tmp_path / reader), "--quiet", *TINY_MODEL, f"model.sentence_reader={reader}"]) != 0
        error = capsys.readouterr().err
        assert expected in error and "Traceback" not in error


ENCODER = FIXTURES / "runs" / "tiny_bert"


def test_separate_pair_encoding_gives_each_text_its_own_windows():
    from seqtransfer.embeddings.transformer import subword_windows

    pair = [["john", "lives", "[SEP]", "new", "york"]]
    joint, joint_positions, joint_types = subword_windows(str(ENCODER), pair)
    separate, positions, types = subword_windows(str(ENCODER), pair, separate=True)
    assert len(joint[0]) == 1 and len(separate[0]) == 2  # A [SEP] in one window, B in another
    assert joint_types[0][0].max() == 1 and all(window.max() == 0 for window in types[0])  # no token type 1 when each text is alone
    assert positions[0][:, 0].tolist() == [0, 0, 0, 1, 1]  # the tokens' windows


def test_separately_encoded_features_of_a_text_are_those_of_the_text_alone(tmp_path, monkeypatch):
    import numpy as np

    from seqtransfer.embeddings.feature_cache import cached_features

    monkeypatch.setenv("SEQTRANSFER_CACHE", str(tmp_path / "cache"))
    pair = [["john", "lives", "[SEP]", "new", "york"]]
    separate = cached_features(str(ENCODER), pair, "first", segments=True, separate=True)[0]
    alone = cached_features(str(ENCODER), [["new", "york"]], "first", segments=True)[0]
    joint = cached_features(str(ENCODER), pair, "first", segments=True)[0]
    assert np.array_equal(separate[3:], alone) and not np.array_equal(joint[3:], alone)
    assert len(list((tmp_path / "cache").glob("*.safetensors"))) == 3


def train_fine_tuned(output, data: list[str], *overrides: str) -> None:
    """One epoch of the tiny BERT fine-tuned on ``data`` (a fixture's arguments)."""
    from seqtransfer.cli import run

    run(["train", *data, "--epochs", "1", "--output", str(output), "--quiet", "--device", "cpu", *TINY_MODEL, f"model.encoder={ENCODER}", "model.encoder_mode=finetune", *overrides])


@pytest.mark.parametrize("encoding", ["joint", "separate"])
def test_a_fine_tuned_encoder_reads_a_pair_jointly_or_each_text_alone(tmp_path, encoding):
    import seqtransfer
    from seqtransfer.rundir import load_run, read_vocabularies

    output = tmp_path / encoding
    train_fine_tuned(output, SIMILARITY, f"model.pair_encoding={encoding}", "train.learning_rate=0.001")
    loaded = load_run(output)
    assert read_vocabularies(output).pair_encoding == encoding
    assert loaded.model.classifier.in_features == (32 if encoding == "joint" else 4 * 32)  # [CLS] of the pair, or [u; v; |u - v|; u * v]
    assert len(seqtransfer.load(output).predict([["fine", "[SEP]", "good"]])) == 1


def test_to_tune_picks_the_papers_head_for_the_mode_and_the_texts():
    from seqtransfer.config import RunConfig, apply_overrides
    from seqtransfer.models.sentence_readers import reader_name

    def chosen(*overrides):
        return reader_name(apply_overrides(RunConfig(), ["model.sentence_reader=to_tune", *overrides]).model)

    assert chosen("model.sentence_pairs=true") == "esim" and chosen("model.sentence_pairs=false") == "bcn"
    finetune = ["model.encoder=minilm", "model.encoder_mode=finetune"]
    assert chosen("model.sentence_pairs=true", *finetune) == "biattention" and chosen("model.sentence_pairs=false", *finetune) == "max"


def test_the_ulmfit_reader_trains_on_a_batch_of_one_sentence():
    """Batch norm has no batch statistics for one sentence: the running ones serve (no error)."""
    from seqtransfer.config import RunConfig, apply_overrides
    from seqtransfer.models.sentence_readers import ULMFiTReader

    class Owner:
        def features(self, batch):
            return torch.randn(1, 3, 4)

    class OneSentence:
        mask = torch.ones(1, 3, dtype=torch.bool)
        lengths = torch.tensor([3])

    reader = ULMFiTReader(apply_overrides(RunConfig(), []).model, 4, Owner()).train()
    assert reader(Owner(), OneSentence()).shape == (1, ULMFiTReader.HIDDEN)


def test_an_empty_text_aligns_nothing():
    """B of "A [SEP]" has no token: A's aligned vectors are zero, whatever the batch's padding holds."""
    from seqtransfer.models.sentence_readers import bi_attention

    first = torch.tensor([[[1.0, 0.0]]])
    second = torch.tensor([[[5.0, 5.0], [7.0, 7.0]]])  # padding only
    aligned_first, _ = bi_attention(first, torch.tensor([[True]]), second, torch.tensor([[False, False]]))
    assert torch.equal(aligned_first, torch.zeros(1, 1, 2))


def test_esim_keeps_a_bilstm_where_a_source_an_auxiliary_lm_or_a_discriminator_reads_one(tmp_path):
    """The BiLSTM-free reading of ESIM is filled only where nothing else reads the BiLSTM: an
    auxiliary LM loss, and a transfer from a source whose BiLSTM it takes, keep it."""
    from seqtransfer.cli import run
    from seqtransfer.rundir import load_run

    common = ["--epochs", "1", "--quiet", "--device", "cpu", *TINY_MODEL]
    run(["train", *SIMILARITY, "--output", str(tmp_path / "lm"), *common, "model.sentence_reader=esim", "transfer.auxiliary_lm_weight=0.1"])
    assert load_run(tmp_path / "lm").config.model.feature_extractor is None
    run(["train", *SIMILARITY, "--output", str(tmp_path / "source"), *common])  # pooled: a BiLSTM
    run(["transfer", *SIMILARITY, "--output", str(tmp_path / "target"), *common, "--method", "finetune", "--source", str(tmp_path / "source"), "model.sentence_reader=esim"])
    target = load_run(tmp_path / "target")
    assert target.config.model.feature_extractor is None and any(name.startswith("feature_extractor.") for name in target.model.state_dict())


def test_a_fine_tuned_encoders_sentence_model_may_read_a_bilstm(tmp_path):
    """model.feature_extractor=bilstm over a fine-tuned encoder: the sentence vector pools the BiLSTM's states."""
    import seqtransfer
    from seqtransfer.rundir import load_run

    output = tmp_path / "run"
    train_fine_tuned(output, SENTIMENT, "model.feature_extractor=bilstm")
    model = load_run(output).model
    assert model.classifier.in_features == 16 and not model.reader.use_sentence_vector  # TINY_MODEL's hidden, not the encoder's 32
    assert len(seqtransfer.load(output).predict([["fine", "film"]])) == 1


def test_feature_layers_is_idle_where_no_words_bilstm_reads_it_and_pretrand_refuses_it(tmp_path, capsys):
    from conftest import tiny_train_arguments

    from seqtransfer.cli import main
    from seqtransfer.config import RunConfig, apply_overrides, idle_settings

    def idle(*overrides):
        return [line for line in idle_settings(apply_overrides(RunConfig(), ["model.feature_layers=2", *overrides])) if "feature_layers" in line]

    assert not idle("model.architecture=tagger") and not idle("model.architecture=sentence_classifier", "model.sentence_reader=esim", "model.feature_extractor=bilstm")
    assert idle("model.architecture=parser") and idle("model.architecture=pretrand") and idle("model.architecture=tagger", "model.feature_extractor=none")
    assert main([*tiny_train_arguments(tmp_path / "source", epochs=1), "model.feature_layers=2"]) == 0
    capsys.readouterr()
    assert main(["transfer", *tiny_train_arguments(tmp_path / "pretrand", epochs=1)[1:], "--source", str(tmp_path / "source"), "--method", "pretrand"]) != 0
    error = capsys.readouterr().err.strip().splitlines()
    assert "PretRand's branches are one BiLSTM layer each" in error[-1] and "Traceback" not in "\n".join(error)


def test_a_pairs_probe_vector_compares_its_texts_or_means_both_as_the_paper():
    import numpy as np

    from seqtransfer.analysis.probes import sentence_vectors

    vectors = [np.array([[[1.0]], [[3.0]], [[100.0]], [[5.0]]])]  # (T, L + 1, H): A = 1, 3; [SEP]; B = 5
    tokens = [["a", "b", "[SEP]", "c"]]
    assert sentence_vectors(vectors, tokens)[0, 0].tolist() == [2.0, 5.0, 3.0, 10.0]  # [u; v; |u - v|; u * v]
    assert sentence_vectors(vectors, tokens, "mean")[0, 0].tolist() == [3.0]  # the mean over both texts' tokens, [SEP] left out
