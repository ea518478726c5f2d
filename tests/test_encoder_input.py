"""What an encoder run reads besides its data: cached feature files, the user's sentences at
prediction time, a tokenizer beside another model, registered schedules, a broken pair file, and
no network. Tiny random encoders only."""

from __future__ import annotations

import socket
from pathlib import Path

import numpy as np
import pytest
from conftest import FIXTURES, TINY_MODEL
from test_encoders import VOCAB, save_tiny_encoder
from test_parser import error_line

from seqtransfer.cli import main
from seqtransfer.errors import SeqTransferError, SeqTransferWarning

transformers = pytest.importorskip("transformers")

NER_DATA = ["--train", str(FIXTURES / "tiny_ner_train.conll"), "--dev", str(FIXTURES / "tiny_ner_dev.conll"), "--columns", "word,ner"]
SENTENCES = [["john", "lives", "in", "new", "york"], ["@", "abc", "!"]]


@pytest.fixture(scope="module")
def encoder(tmp_path_factory) -> Path:
    return save_tiny_encoder(tmp_path_factory.mktemp("encoder") / "tiny-bert")


@pytest.fixture(autouse=True)
def feature_cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("SEQTRANSFER_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def train_tagger(encoder: Path, output: Path, *overrides: str) -> None:
    assert main(["train", *NER_DATA, "--epochs", "1", "--output", str(output), "--quiet", *TINY_MODEL, f"model.encoder={encoder}", *overrides]) == 0


@pytest.mark.parametrize("damage", ["tokens", "hidden", "layers"])
def test_a_cached_file_that_does_not_fit_its_sentences_or_encoder_is_recomputed_with_a_warning(encoder, feature_cache, monkeypatch, damage):
    from safetensors.numpy import save_file

    from seqtransfer.embeddings import feature_cache as features_module

    computed = features_module.cached_features(str(encoder), SENTENCES, "first")
    (path,) = feature_cache.glob("*.safetensors")
    tokens, layers, hidden = computed[0].shape
    wrong = {"tokens": (tokens + 1, layers, hidden), "hidden": (tokens, layers, 8), "layers": (tokens, layers - 1, hidden)}[damage]
    save_file({"0": np.zeros(wrong, dtype=np.float16), "1": computed[1]}, str(path))
    with pytest.warns(SeqTransferWarning, match=path.name):
        again = features_module.cached_features(str(encoder), SENTENCES, "first")
    assert all(np.array_equal(a, b) for a, b in zip(computed, again))
    assert [file.name for file in feature_cache.iterdir()] == [path.name]  # rewritten in place, no temporary file left
    monkeypatch.setattr(features_module, "load_encoder", lambda name: pytest.fail("the rewritten file was not read"))
    assert all(np.array_equal(a, b) for a, b in zip(computed, features_module.cached_features(str(encoder), SENTENCES, "first")))


def test_predicting_a_users_sentences_writes_no_cache_file(encoder, tmp_path, feature_cache):
    import seqtransfer

    train_tagger(encoder, tmp_path / "run")
    cached = sorted(feature_cache.iterdir())
    assert cached  # training caches its splits
    predictor = seqtransfer.load(tmp_path / "run", device="cpu")
    for sentence in (["Mary", "visits", "Zürich"], ["abc", "!"], ["john"]):
        assert len(predictor.predict([sentence])[0]) == len(sentence)
    assert sorted(feature_cache.iterdir()) == cached
    from seqtransfer.workflows.combination import combine  # a self-labelling folder's "confident" members predict as combine does

    assert len(combine("confident", [predictor.run, predictor.run], [["Mary", "sings"]], cache_features=False)[0]) == 2
    assert sorted(feature_cache.iterdir()) == cached
    predictor.predict_raw([["a", "dataset", "split"]], cache_features=True)  # a dataset's split, scored by other runs: cached
    assert len(list(feature_cache.iterdir())) == len(cached) + 1


def test_a_schedule_registered_at_test_time_passes_config_validation(monkeypatch):
    from seqtransfer.config import RunConfig, apply_overrides, check_values
    from seqtransfer.learning_rate_schedules import SCHEDULES

    monkeypatch.setitem(SCHEDULES, "constant", lambda base, position, config: base)
    assert check_values(apply_overrides(RunConfig(), ["train.schedule=constant"])).train.schedule == "constant"
    with pytest.raises(SeqTransferError, match="constant"):  # the error lists the registry's names
        check_values(apply_overrides(RunConfig(), ["train.schedule=nosuch"]))


def save_mismatched_encoder(folder: Path, sub_words: int, table: int, mask_id: int | None = None) -> Path:
    """A tiny BERT whose table has ``table`` rows beside a WordPiece tokenizer of ``sub_words``
    sub-words (VOCAB, then made-up pieces), its [MASK] at ``mask_id`` (a gap in the ids) if given."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    pieces = {piece: index for index, piece in enumerate([*VOCAB, *(f"piece{number}" for number in range(sub_words - len(VOCAB)))])}
    if mask_id is not None:
        pieces["[MASK]"] = mask_id
    backend = Tokenizer(models.WordPiece(pieces, unk_token="[UNK]"))
    backend.normalizer = normalizers.BertNormalizer(lowercase=True)
    backend.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]", pad_token="[PAD]", mask_token="[MASK]")
    BertModel(BertConfig(vocab_size=table, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, max_position_embeddings=16)).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.mark.parametrize(
    "sub_words, table, mask_id, message",
    [
        (28_996, 30_522, None, "tokenizer (28996 sub-words) and model (30522) do not match"),  # BERT's cased tokenizer, the uncased model: 95%
        (len(VOCAB), len(VOCAB), 100, f"mask token is sub-word 100, outside the model's table ({len(VOCAB)})"),  # a gap in the tokenizer's ids
    ],
)
def test_a_tokenizer_of_another_model_is_one_error_line(tmp_path, capsys, sub_words, table, mask_id, message):
    folder = save_mismatched_encoder(tmp_path / "encoder", sub_words, table, mask_id)
    capsys.readouterr()  # transformers' progress bars of the save above
    line = error_line(["train", *NER_DATA, "--epochs", "1", "--output", str(tmp_path / "run"), "--quiet", *TINY_MODEL, f"model.encoder={folder}"], capsys)
    assert message in line and not (tmp_path / "run").exists()  # refused before the run writes anything


def test_tokenizers_of_tables_rounded_up_are_accepted(tmp_path):
    from seqtransfer.embeddings.transformer import load_encoder

    for sub_words, table in ((len(VOCAB), 72), (1_000, 1_024), (10_000, 10_150)):  # to a multiple of 8; of 128 (T5); 1.5 % spare rows (Qwen2)
        tokenizer, model = load_encoder(str(save_mismatched_encoder(tmp_path / f"encoder-{table}", sub_words, table)))
        assert (len(tokenizer), model.config.vocab_size) == (sub_words, table)


def test_a_pair_file_missing_a_column_is_one_error_line_through_main(tmp_path, capsys):
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("text\ttext_b\tlabel\na cat sits\ta cat is sitting\t1\na dog runs\t0\n", encoding="utf-8")
    output = tmp_path / "run"
    line = error_line(["train", "--train", str(pairs), "--dev", str(pairs), "--epochs", "1", "--output", str(output), "--quiet", *TINY_MODEL], capsys)
    assert f"{pairs}:3: 2 TAB-separated fields, expected 3 (text, text_b, label)" in line and not output.exists()


@pytest.mark.parametrize("mode", ["features", "finetune"])
def test_an_encoder_folder_trains_and_predicts_without_network(tmp_path, monkeypatch, mode):
    encoder = save_tiny_encoder(tmp_path / "encoder")  # saved before the network goes
    attempts = []  # kept, not only raised: code that catches every exception and falls back would hide a raise

    def refuse_network(*arguments, **options):
        attempts.append(arguments)
        raise OSError(f"network access attempted: {arguments}")

    monkeypatch.setattr(socket.socket, "connect", refuse_network)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse_network)
    monkeypatch.setattr(socket, "create_connection", refuse_network)
    train_tagger(encoder, tmp_path / "run", f"model.encoder_mode={mode}")
    import seqtransfer

    assert len(seqtransfer.load(tmp_path / "run", device="cpu").predict([["Mary", "visits", "Zürich"]])[0]) == 3
    assert attempts == []


@pytest.mark.parametrize("teacher_mode, student_mode", [("finetune", "finetune"), ("features", "finetune"), ("finetune", "features")])
def test_distillation_between_encoder_models(encoder, tmp_path, teacher_mode, student_mode):
    """A fine-tuned encoder tagger and a BiLSTM on frozen features teach and learn from each other
    (the soft targets' arithmetic is tested on BiLSTM taggers in test_adaptations.py): the student
    trains with the term, says so in its log, and loads and predicts."""
    import seqtransfer

    train_tagger(encoder, tmp_path / "teacher", f"model.encoder_mode={teacher_mode}", "train.learning_rate=0.001" if teacher_mode == "finetune" else "train.learning_rate=0.05")
    student = tmp_path / "student"
    train_tagger(encoder, student, f"model.encoder_mode={student_mode}", f"transfer.distill_from=[{tmp_path / 'teacher'}]", "transfer.distillation_weight=1")
    assert "distilling 1 teacher run(s)" in (student / "log.txt").read_text(encoding="utf-8")
    predicted = seqtransfer.load(student, device="cpu").predict([["Mary", "lives", "in", "Paris"]])[0]
    assert len(predicted) == 4


def test_loading_an_encoder_leaves_torchs_random_numbers_alone(tmp_path, monkeypatch):
    """Our LM's folder (a masked LM: no pooler) makes AutoModel draw the pooler at random: loading
    it must not move torch's random stream, or a run that loads its encoder (the check before a run,
    a feature-cache miss) trains otherwise than one that does not: a cold and a warm cache gave
    other weights."""
    import torch
    from safetensors.torch import load_file
    from transformers import BertConfig, BertForMaskedLM

    from seqtransfer.embeddings.transformer import load_encoder

    folder = tmp_path / "lm"
    BertForMaskedLM(BertConfig(vocab_size=len(VOCAB), hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, max_position_embeddings=16)).save_pretrained(folder)
    for file in save_tiny_encoder(tmp_path / "tokenizer").iterdir():  # its tokenizer files
        if file.name not in ("config.json", "model.safetensors"):
            (folder / file.name).write_bytes(file.read_bytes())
    torch.manual_seed(0)
    before = torch.get_rng_state()
    load_encoder(str(folder))
    assert torch.equal(before, torch.get_rng_state())
    weights = []
    for cache in ("cold", "warm"):
        monkeypatch.setenv("SEQTRANSFER_CACHE", str(tmp_path / "cache"))  # the second run finds the first one's features
        train_tagger(folder, tmp_path / cache)
        weights.append(load_file(str(tmp_path / cache / "model.safetensors")))
    assert all(torch.equal(weights[0][name], weights[1][name]) for name in weights[0])


def test_a_run_recorded_with_our_lms_training_report_in_the_encoders_hash_still_loads(encoder, tmp_path):
    """Before 2026-11-26 the hash of an encoder folder took in `pretrain-lm`'s pretraining.json: a
    run on frozen features recorded that hash, and loads still; another encoder is refused still."""
    import shutil

    import seqtransfer
    from seqtransfer.embeddings.transformer import encoder_fingerprint

    folder = tmp_path / "lm"
    shutil.copytree(encoder, folder)
    (folder / "pretraining.json").write_text('{"history": [{"epoch": 1, "epoch_seconds": 12.3}]}', encoding="utf-8")
    train_tagger(folder, tmp_path / "run")
    config = tmp_path / "run" / "config.yaml"
    legacy = encoder_fingerprint(str(folder), with_training_report=True)
    assert legacy != encoder_fingerprint(str(folder)) and encoder_fingerprint(str(folder)) in config.read_text(encoding="utf-8")
    config.write_text(config.read_text(encoding="utf-8").replace(encoder_fingerprint(str(folder)), legacy), encoding="utf-8")
    assert len(seqtransfer.load(tmp_path / "run", device="cpu").predict([["Mary", "sings"]])[0]) == 2
    config.write_text(config.read_text(encoding="utf-8").replace(legacy, "0123456789abcdef"), encoding="utf-8")
    with pytest.raises(Exception, match="differs from the one this run was trained on"):
        seqtransfer.load(tmp_path / "run", device="cpu")
