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


@pytest.mark.parametrize("reader, data", [("max", SENTIMENT), ("bcn", SENTIMENT), ("esim", SIMILARITY), ("biattention", SIMILARITY), ("max", SIMILARITY)])
def test_each_reader_trains_saves_loads_and_predicts(tmp_path, reader, data):
    import seqtransfer
    from seqtransfer.cli import run
    from seqtransfer.rundir import load_run

    output = tmp_path / reader
    run(["train", *data, "--epochs", "2", "--output", str(output), "--quiet", "--device", "cpu", *TINY_MODEL, f"model.sentence_reader={reader}"])
    loaded = load_run(output)
    assert type(loaded.model.reader).__name__.lower().startswith(reader[:3])
    has_weights = any(name.startswith("reader.") for name in loaded.model.state_dict())
    assert has_weights == (reader in ("esim", "bcn"))
    sentences = [["fine", "[SEP]", "good"], ["bad", "day", "[SEP]", "bad"]] if data is SIMILARITY else [["fine", "film"], ["bad"]]
    predicted = seqtransfer.load(output).predict(sentences)
    assert len(predicted) == 2


def test_a_pair_reader_on_single_texts_and_an_unknown_reader_are_one_line(tmp_path, capsys):
    from seqtransfer.cli import main

    for reader, expected in (("esim", "reads sentence pairs, and this data has none"), ("nosuch", "unknown sentence reader 'nosuch'")):
        assert main(["train", *SENTIMENT, "--epochs", "1", "--output", str(tmp_path / reader), "--quiet", *TINY_MODEL, f"model.sentence_reader={reader}"]) != 0
        error = capsys.readouterr().err
        assert expected in error and "Traceback" not in error
