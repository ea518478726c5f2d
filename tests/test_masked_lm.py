"""The auxiliary LM loss of a fine-tuned encoder: masked sub-words, predicted through its own embeddings."""

from __future__ import annotations

import shutil

import pytest
import torch
from conftest import FIXTURES, TINY_MODEL
from test_encoders import VOCAB, save_tiny_encoder
from test_parser import error_line
from torch.nn import functional

import seqtransfer
from seqtransfer.cli import run

pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def encoder(tmp_path_factory):
    return save_tiny_encoder(tmp_path_factory.mktemp("encoder") / "tiny-bert")


@pytest.fixture(autouse=True)
def feature_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SEQTRANSFER_CACHE", str(tmp_path / "cache"))


def encoder_arguments(output, encoder, *extra: str, train: str = "tiny_ner", columns: str = "word,ner") -> list[str]:
    return [
        "train",
        "--train",
        str(FIXTURES / f"{train}_train.conll"),
        "--dev",
        str(FIXTURES / f"{train}_dev.conll"),
        "--columns",
        columns,
        "--epochs",
        "2",
        "--seed",
        "3",
        "--output",
        str(output),
        "--quiet",
        *TINY_MODEL,
        f"model.encoder={encoder}",
        "model.encoder_mode=finetune",
        *extra,
    ]


def test_the_head_projects_onto_embeddings_narrower_than_the_encoder(tmp_path):
    """ALBERT and ELECTRA factorise their embeddings: E < H."""
    from seqtransfer.models.language_model_heads import MaskedLanguageModelHead

    head = MaskedLanguageModelHead(hidden=16, embedding=8, words=50)
    assert head(torch.zeros(3, 16), torch.zeros(50, 8)).shape == (3, 50)


def test_masking_chooses_only_real_ordinary_subwords_and_at_least_one():
    from seqtransfer.transfer.masked_lm import mask_subwords

    torch.manual_seed(0)
    ids = torch.randint(5, 50, (64, 32))
    maskable = torch.ones_like(ids, dtype=torch.bool)
    maskable[:, 0] = maskable[:, 20:] = False  # [CLS] and padding
    masked, chosen = mask_subwords(ids, maskable, 4, 50)
    assert not (chosen & ~maskable).any() and 0.12 < chosen.sum() / maskable.sum() < 0.18
    assert torch.equal(masked[~chosen], ids[~chosen])  # nothing else changes
    assert 0.75 < (masked[chosen] == 4).float().mean() < 0.85  # most chosen ones become [MASK]
    one = torch.zeros(1, 3, dtype=torch.bool)
    one[0, 1] = True
    assert mask_subwords(torch.tensor([[2, 9, 3]]), one, 4, 50)[1].tolist() == [[False, True, False]]


def test_the_loss_is_the_weighted_cross_entropy_of_the_masked_subwords(encoder, tmp_path):
    import numpy as np

    from seqtransfer.corpora.task_data import load_task_data
    from seqtransfer.data.batching import make_batch
    from seqtransfer.embeddings.transformer import tokenizer_of
    from seqtransfer.transfer.masked_lm import MaskedLanguageModelLoss, mask_subwords

    run(encoder_arguments(tmp_path / "mlm", encoder, "transfer.auxiliary_lm_weight=0.5", "--epochs", "1"))
    loaded = seqtransfer.load(tmp_path / "mlm", device="cpu").run
    model = loaded.model
    assert model.language_model.words == len(VOCAB) == loaded.config.model.language_model_words
    batch = make_batch(load_task_data(loaded.config.data).encode("train", loaded.vocabularies), np.arange(4))
    term = MaskedLanguageModelLoss(model, 0.5, tokenizer_of(str(encoder)))
    model.eval()  # no dropout: the hand computation below sees the same states
    torch.manual_seed(7)
    value = term(model, batch)
    torch.manual_seed(7)
    special = torch.tensor([index in tokenizer_of(str(encoder)).all_special_ids for index in range(len(VOCAB))])
    assert special[:5].tolist() == [True] * 5  # [PAD], [UNK], [CLS], [SEP], [MASK]
    masked, chosen = mask_subwords(batch.subword_ids, batch.subword_mask.bool() & ~special[batch.subword_ids], 4, len(VOCAB))
    assert not chosen[:, 0].any()  # [CLS] is never masked
    states = model.encoder(input_ids=masked, attention_mask=batch.subword_mask).last_hidden_state[chosen]
    head = model.language_model
    scores = head.norm(functional.gelu(head.transform(states))) @ model.encoder.embeddings.word_embeddings.weight.t() + head.bias
    assert value.item() == pytest.approx(0.5 * functional.cross_entropy(scores, batch.subword_ids[chosen], reduction="sum").item(), rel=1e-5)


def test_fine_tuning_with_a_masked_lm_is_reproducible_changes_training_and_predicts(encoder, tmp_path):
    first = run(encoder_arguments(tmp_path / "a", encoder, "transfer.auxiliary_lm_weight=0.1"))
    second = run(encoder_arguments(tmp_path / "b", encoder, "transfer.auxiliary_lm_weight=0.1"))
    plain = run(encoder_arguments(tmp_path / "c", encoder))
    assert (tmp_path / "a" / "model.safetensors").read_bytes() == (tmp_path / "b" / "model.safetensors").read_bytes()
    losses = [[epoch["loss"] for epoch in metrics["history"]] for metrics in (first, second, plain)]
    assert losses[0] == losses[1] and losses[0] != losses[2]
    assert "masked sub-words (15 %)" in (tmp_path / "a" / "log.txt").read_text(encoding="utf-8")
    assert first["parameters"] > plain["parameters"]  # the LM head trains too, and is saved
    assert seqtransfer.load(tmp_path / "a", device="cpu").predict([["john", "lives", "in", "new", "york"]])[0].__len__() == 5


@pytest.mark.parametrize("tied", [True, False])
def test_the_head_starts_from_the_encoder_folders_pretraining_head_when_it_has_one(encoder, tmp_path, tied):
    """A folder saved from a masked LM (BERT's tied one; our pretrain-lm's untied one, whose decoder
    is its own matrix) keeps its head: the auxiliary loss continues the pretraining instead of
    starting from a random head (whose scores over every sub-word move the whole tied table)."""
    from safetensors.torch import load_file
    from transformers import AutoModel, BertForMaskedLM

    from seqtransfer.models.language_model_heads import MaskedLanguageModelHead
    from seqtransfer.rundir import load_run
    from seqtransfer.transfer.masked_lm import load_pretraining_head

    folder = tmp_path / "with-head"
    shutil.copytree(encoder, folder)
    config = AutoModel.from_pretrained(str(encoder)).config
    config.tie_word_embeddings = tied
    torch.manual_seed(1)
    language_model = BertForMaskedLM(config)
    with torch.no_grad():
        language_model.cls.predictions.decoder.bias.uniform_(-1.0, 1.0)  # the bias the decoder adds (untied: not cls.predictions.bias)
    language_model.save_pretrained(folder)
    stored = load_file(str(folder / "model.safetensors"))
    head = MaskedLanguageModelHead(16, 16, len(VOCAB), tied=tied)
    assert load_pretraining_head(head, folder)
    assert torch.equal(head.transform.weight, stored["cls.predictions.transform.dense.weight"])
    assert torch.equal(head.bias, stored.get("cls.predictions.decoder.bias", stored.get("cls.predictions.bias"))) and head.bias.abs().max() > 0
    if not tied:
        assert torch.equal(head.decoder, stored["cls.predictions.decoder.weight"])
        assert not torch.equal(stored["cls.predictions.decoder.weight"], stored["bert.embeddings.word_embeddings.weight"])
    assert not load_pretraining_head(MaskedLanguageModelHead(16, 16, len(VOCAB), tied=tied), encoder)  # a bare encoder's folder: the head stays random
    assert not load_pretraining_head(MaskedLanguageModelHead(16, 8, len(VOCAB), tied=tied), folder)  # shapes that do not fit: random too
    run(encoder_arguments(tmp_path / "run", folder, "transfer.auxiliary_lm_weight=0.1", "--epochs", "1"))
    assert "auxiliary LM head: the encoder folder's pretraining head" in (tmp_path / "run" / "log.txt").read_text(encoding="utf-8")
    assert (load_run(tmp_path / "run").model.language_model.decoder is None) == tied  # the saved run rebuilds the same head
    assert f"language_model_decoder: {str(not tied).lower()}" in (tmp_path / "run" / "config.yaml").read_text(encoding="utf-8")
    if tied:
        run(encoder_arguments(tmp_path / "bare", encoder, "transfer.auxiliary_lm_weight=0.1", "--epochs", "1"))
        assert "auxiliary LM head: random" in (tmp_path / "bare" / "log.txt").read_text(encoding="utf-8")


def test_a_masked_lm_trains_beside_lora_and_a_sentence_classifier(encoder, tmp_path):
    pytest.importorskip("peft")
    from safetensors.torch import load_file

    metrics = run(encoder_arguments(tmp_path / "lora", encoder, "transfer.auxiliary_lm_weight=0.1", "model.encoder_adapter=lora", "model.lora_rank=2", "--epochs", "1"))
    saved = load_file(str(tmp_path / "lora" / "model.safetensors"))
    assert any(name.startswith("language_model.") for name in saved) and all("lora_" in name or not name.startswith("encoder.") for name in saved)
    assert metrics["trainable_parameters"] < metrics["parameters"]
    assert len(seqtransfer.load(tmp_path / "lora", device="cpu").predict([["john", "lives", "in", "new", "york"]])[0]) == 5
    classifier = [
        "train",
        "--train",
        str(FIXTURES / "tiny_sentiment_train.tsv"),
        "--dev",
        str(FIXTURES / "tiny_sentiment_dev.tsv"),
        "--epochs",
        "1",
        "--output",
        str(tmp_path / "sentences"),
        "--quiet",
        *TINY_MODEL,
        f"model.encoder={encoder}",
        "model.encoder_mode=finetune",
        "transfer.auxiliary_lm_weight=0.1",
    ]
    assert run(classifier)["dev"] is not None
    assert "masked sub-words" in (tmp_path / "sentences" / "log.txt").read_text(encoding="utf-8")


def test_an_encoder_without_a_mask_token_is_one_line(encoder, tmp_path, capsys):
    import json

    folder = tmp_path / "no-mask"
    shutil.copytree(encoder, folder)
    for name in ("tokenizer_config.json", "special_tokens_map.json"):
        path = folder / name
        if path.is_file():
            values = json.loads(path.read_text(encoding="utf-8"))
            values.pop("mask_token", None)
            path.write_text(json.dumps(values), encoding="utf-8")
    line = error_line(encoder_arguments(tmp_path / "bad", folder, "transfer.auxiliary_lm_weight=0.1"), capsys)
    assert "no mask token" in line and not (tmp_path / "bad").exists()


def test_an_auxiliary_lm_where_only_the_classifier_trains_is_one_line(tmp_path, capsys):
    source = tmp_path / "source"
    run(
        [
            "train",
            "--train",
            str(FIXTURES / "tiny_ner_train.conll"),
            "--dev",
            str(FIXTURES / "tiny_ner_dev.conll"),
            "--columns",
            "word,ner",
            "--epochs",
            "1",
            "--output",
            str(source),
            "--quiet",
            *TINY_MODEL,
        ]
    )
    line = error_line(
        [
            "transfer",
            "--source",
            str(source),
            "--method",
            "features",
            "--train",
            str(FIXTURES / "tiny_pos_train.conll"),
            "--dev",
            str(FIXTURES / "tiny_pos_dev.conll"),
            "--columns",
            "word,pos",
            "--epochs",
            "1",
            "--output",
            str(tmp_path / "bad"),
            *TINY_MODEL,
            "transfer.auxiliary_lm_weight=0.1",
        ],
        capsys,
    )
    assert "trains only the classifier" in line and not (tmp_path / "bad").exists()
