"""Pretrained Transformer encoders as frozen word features: sub-word alignment, windows, dropped
tokens, the feature cache, a tagger trained with them, bad encoder folders. Tiny random encoders only."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import FIXTURES, TINY_MODEL
from test_parser import error_line, parser_arguments

from seqtransfer.cli import main
from seqtransfer.errors import SeqTransferError

transformers = pytest.importorskip("transformers")

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *"abcdefghijklmnopqrstuvwxyz", *("##" + c for c in "abcdefghijklmnopqrstuvwxyz"), "john", "lives", "in", "new", "york", "!", "@", "."]


def tiny_wordpiece(vocabulary: list[str] = VOCAB):
    """The tiny encoders' WordPiece tokenizer (lower-cased, letters as sub-words), a tokenizers object."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

    backend = Tokenizer(models.WordPiece({piece: index for index, piece in enumerate(vocabulary)}, unk_token="[UNK]"))
    backend.normalizer = normalizers.BertNormalizer(lowercase=True)
    backend.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    return backend


def save_tiny_encoder(folder: Path, hidden: int = 16, layers: int = 2, positions: int = 16) -> Path:
    """A random 2-layer BERT with a WordPiece tokenizer (lower-cased, letters as sub-words), saved as a Hugging Face folder."""
    import torch
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    torch.manual_seed(0)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tiny_wordpiece(), unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]", pad_token="[PAD]", mask_token="[MASK]")
    config = BertConfig(vocab_size=len(VOCAB), hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=2, intermediate_size=32, max_position_embeddings=positions)
    BertModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def encoder(tmp_path_factory) -> Path:
    return save_tiny_encoder(tmp_path_factory.mktemp("encoder") / "tiny-bert")


@pytest.fixture(autouse=True)
def feature_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SEQTRANSFER_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_byte_level_bpe_tokens_get_the_sub_words_of_a_word_inside_a_sentence():
    """RoBERTa-like tokenizers mark a word start by its space ("Ġword"): a token tokenised alone
    must get the pieces the encoder saw in its pretraining sentences, not those of a text start."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    from seqtransfer.embeddings.tokenization import marks_spaces, subword_pieces

    backend = Tokenizer(models.BPE(unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.train_from_iterator(["the cat sat on the mat", "a cat and a hat"] * 20, trainers.BpeTrainer(vocab_size=300, special_tokens=["<unk>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>")
    in_sentence = tokenizer("the cat", add_special_tokens=False)["input_ids"]
    assert marks_spaces(tokenizer) and subword_pieces(tokenizer, ["the", "cat"])[1] == in_sentence[1:]
    wordpiece = PreTrainedTokenizerFast(tokenizer_object=tiny_wordpiece(), unk_token="[UNK]")
    assert not marks_spaces(wordpiece)


def test_windows_cut_at_token_boundaries():
    from seqtransfer.embeddings.tokenization import windows

    assert windows([[1, 2, 3]] * 4, 7) == [(0, 2), (2, 4)]
    assert windows([[1], [1] * 20, [1]], 7) == [(0, 1), (1, 2), (2, 3)]  # a token longer than a window gets its own (cut)
    assert windows([], 7) == [(0, 0)]


def test_first_and_mean_sub_word_alignment_and_dropped_tokens(encoder):
    from seqtransfer.embeddings.tokenization import subword_pieces
    from seqtransfer.embeddings.transformer import encode_sentences_with, load_encoder

    tokenizer, model = load_encoder(str(encoder))
    tokens = ["john", "abc", "\u200b", "😀"]
    assert [len(pieces) for pieces in subword_pieces(tokenizer, tokens)] == [1, 3, 1, 1]  # the zero-width space gets [UNK]
    (first,) = encode_sentences_with(tokenizer, model, [tokens], "first")
    (mean,) = encode_sentences_with(tokenizer, model, [tokens], "mean")
    assert first.shape == (4, 3, 16) and first.dtype == np.float16
    assert np.array_equal(first[0], mean[0]) and not np.array_equal(first[1], mean[1])  # one sub-word: the same; three: not


def test_a_sentence_longer_than_the_encoder_is_encoded_in_windows(encoder):
    from seqtransfer.embeddings.transformer import encode_sentences_with, load_encoder

    tokenizer, model = load_encoder(str(encoder))
    long = ["abc"] * 9  # 27 sub-words; the encoder takes 16 positions, 14 sub-words per window
    (vectors,) = encode_sentences_with(tokenizer, model, [long], "first")
    (alone,) = encode_sentences_with(tokenizer, model, [long[:4]], "first")
    assert vectors.shape[0] == 9 and np.array_equal(vectors[:4], alone)


def test_features_are_cached_per_encoder_and_sentences(encoder, tmp_path, feature_cache, monkeypatch):
    from seqtransfer.embeddings import feature_cache as features_module

    sentences = [["john", "lives", "in", "new", "york"], ["@", "abc", "!"]]
    computed = features_module.cached_features(str(encoder), sentences, "first")
    assert len(list(feature_cache.glob("*.safetensors"))) == 1
    monkeypatch.setattr(features_module, "load_encoder", lambda name: pytest.fail("recomputed instead of read from the cache"))
    again = features_module.cached_features(str(encoder), sentences, "first")
    assert all(np.array_equal(a, b) for a, b in zip(computed, again))
    other = save_tiny_encoder(tmp_path / "other", hidden=8)
    monkeypatch.undo()
    monkeypatch.setenv("SEQTRANSFER_CACHE", str(feature_cache))
    assert features_module.cached_features(str(other), sentences, "first")[0].shape == (5, 3, 8)  # another encoder: another cache entry
    assert len(list(feature_cache.glob("*.safetensors"))) == 2


def test_a_tagger_trains_with_encoder_features_and_its_run_predicts_new_sentences(encoder, tmp_path, capsys):
    output = tmp_path / "run"
    assert (
        main(
            [
                "train",
                "--train",
                str(FIXTURES / "tiny_ner_train.conll"),
                "--dev",
                str(FIXTURES / "tiny_ner_dev.conll"),
                "--columns",
                "word,ner",
                "--epochs",
                "2",
                "--output",
                str(output),
                "--quiet",
                *TINY_MODEL,
                f"model.encoder={encoder}",
                "model.encoder_pooling=mean",
            ]
        )
        == 0
    )
    config = (output / "config.yaml").read_text()
    assert "encoder_layers: 3" in config and "encoder_dimension: 16" in config
    assert json.loads((output / "vocabulary.json").read_text())["encoder"] == str(encoder)
    from safetensors.torch import load_file

    weights = load_file(str(output / "model.safetensors"))
    assert weights["word_representation.encoder_mix.weights"].abs().sum() > 0  # the scalar mix learned
    assert weights["feature_extractor.forward_lstm.weight_ih_l0"].shape[1] == 8 + 8 + 16  # words + characters + encoder
    import seqtransfer

    assert len(seqtransfer.load(output, device="cpu").predict([["Mary", "visits", "Zürich", "\u200b"]])[0]) == 4


@pytest.mark.parametrize(
    "damage, message",
    [
        ("missing", "encoder folder not found"),
        ("no-config", "encoder folder is incomplete"),
        ("no-tokenizer", "encoder folder has no tokenizer"),  # transformers would build an empty one: every token [UNK]
        ("mismatch", "do not match"),
        ("small-tokenizer", "do not match"),  # another model's far larger table
        ("padding", "pads with sub-word 0, the model with 4"),
        ("weights", "cannot load the encoder"),
    ],
)
def test_bad_encoder_folders_are_one_line(encoder, tmp_path, capsys, damage, message):
    folder = tmp_path / "encoder"
    if damage != "missing":
        shutil.copytree(encoder, folder)
    if damage == "no-config":
        (folder / "config.json").unlink()
    if damage == "no-tokenizer":
        for file in folder.iterdir():
            if file.name.startswith(("tokenizer", "vocab", "special_tokens")):
                file.unlink()
    if damage == "mismatch":  # another model's weights and config beside this tokenizer
        from transformers import BertConfig, BertModel

        BertModel(BertConfig(vocab_size=10, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, max_position_embeddings=16)).save_pretrained(folder)
    if damage == "small-tokenizer":
        from transformers import BertConfig, BertModel

        BertModel(BertConfig(vocab_size=10 * len(VOCAB), hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, max_position_embeddings=16)).save_pretrained(folder)
    if damage == "padding":
        config = json.loads((folder / "config.json").read_text())
        config["pad_token_id"] = 4
        (folder / "config.json").write_text(json.dumps(config))
    if damage == "weights":
        config = json.loads((folder / "config.json").read_text())
        config["vocab_size"] = 10
        (folder / "config.json").write_text(json.dumps(config))
    capsys.readouterr()
    code = main(
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
            str(tmp_path / "run"),
            "--quiet",
            *TINY_MODEL,
            f"model.encoder={folder}",
        ]
    )
    error = capsys.readouterr().err
    assert code == 2 and message in error and len(error.strip().splitlines()) == 1


def test_subword_batches_point_each_token_at_its_first_subword_across_windows(encoder):
    from seqtransfer.data.batching import encode_sentences, make_batch
    from seqtransfer.data.vocabulary import Vocabularies, Vocabulary

    vocabularies = Vocabularies(Vocabulary.build(["abc"]), Vocabulary.build("abc"), Vocabulary(["O"]), encoder=str(encoder), encoder_mode="finetune")
    sentences = [["john"], ["abc"] * 9]  # the second: 27 sub-words; 12 + 12 + 3 in windows of at most 14 (16 positions - [CLS], [SEP])
    encoded = encode_sentences(sentences, vocabularies)
    assert [len(windows) for windows in encoded.subwords] == [1, 3]
    batch = make_batch(encoded, np.arange(2))
    assert tuple(batch.subword_ids.shape) == (4, 14) and batch.subword_mask.sum().item() == 3 + 14 + 14 + 5
    flat = batch.subword_ids.reshape(-1)
    first_pieces = flat[batch.token_index[1]]
    assert first_pieces.tolist() == [5] * 9  # "a", the first sub-word of every "abc"
    assert flat[batch.token_index[0, 0]].item() == VOCAB.index("john")


def test_evaluation_batches_order_a_fine_tuned_encoders_sentences_by_their_sub_words(encoder):
    """Padding follows the longest window's sub-words, not the token count: sentences of few tokens
    but many sub-words go last."""
    from seqtransfer.data.batching import encode_sentences, evaluation_batches
    from seqtransfer.data.vocabulary import Vocabularies, Vocabulary

    vocabularies = Vocabularies(Vocabulary.build(["abc"]), Vocabulary.build("abc"), Vocabulary(["O"]), encoder=str(encoder), encoder_mode="finetune")
    sentences = [["abc"] * 3, ["john"] * 4, ["in"] * 2]  # 3 tokens and 9 sub-words, 4 and 4, 2 and 2 ([CLS] and [SEP] besides)
    encoded = encode_sentences(sentences, vocabularies)
    assert encoded.padded_sizes().tolist() == [11, 6, 4]
    assert [batch.indices.tolist() for batch in evaluation_batches(encoded, 1)] == [[2], [1], [0]]
    assert [batch.indices.tolist() for batch in evaluation_batches(encode_sentences(sentences, Vocabularies(vocabularies.words, vocabularies.characters, vocabularies.labels)), 1)] == [[2], [0], [1]]


def test_training_batches_group_sentences_by_tokens_sub_words_or_not_at_all(encoder, tmp_path, capsys):
    """train.batching: tokens (the default, what every earlier run did), subwords (a fine-tuned
    encoder's padded size) or random."""
    from seqtransfer.data.batching import encode_sentences, training_batches
    from seqtransfer.data.vocabulary import Vocabularies, Vocabulary

    vocabularies = Vocabularies(Vocabulary.build(["abc"]), Vocabulary.build("abc"), Vocabulary(["O"]), encoder=str(encoder), encoder_mode="finetune")
    sentences = [["abc"] * 3, ["in"] * 3, ["john"] * 4] * 4  # of the same token count, "abc abc abc" has 9 sub-words and "in in in" 3
    encoded = encode_sentences(sentences, vocabularies, [["O"] * len(sentence) for sentence in sentences])
    sizes, lengths = encoded.padded_sizes(), encoded.lengths
    mixed = {"random": 0, "tokens": 0}
    for seed in range(5):
        batches = {batching: list(training_batches(encoded, 4, np.random.default_rng(seed), batching=batching)) for batching in ("tokens", "subwords", "random")}
        for batching, listed in batches.items():
            assert sorted(index for batch in listed for index in batch.indices) == list(range(12)), batching
        assert all(len(set(sizes[batch.indices])) == 1 for batch in batches["subwords"])
        assert all(len(set(lengths[batch.indices])) == 1 for batch in batches["tokens"])
        mixed["tokens"] += sum(len(set(sizes[batch.indices])) > 1 for batch in batches["tokens"])
        mixed["random"] += sum(len(set(lengths[batch.indices])) > 1 for batch in batches["random"])
    assert mixed["tokens"] > 0 and mixed["random"] > 0  # tokens mixes sub-word counts; random mixes token counts
    line = error_line(["train", "--train", str(FIXTURES / "tiny_ner_train.conll"), "--columns", "word,ner", "--output", str(tmp_path / "bad"), "train.batching=words"], capsys)
    assert "train.batching" in line and "tokens, subwords or random" in line


def test_train_batching_reaches_the_training_loop_and_the_run_config(encoder, tmp_path, monkeypatch):
    from seqtransfer.training import loop

    seen = []
    original = loop.training_batches

    def spy(*arguments, **options):
        seen.append(options.get("batching"))
        return original(*arguments, **options)

    monkeypatch.setattr(loop, "training_batches", spy)
    output = tmp_path / "run"
    assert (
        main(
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
                str(output),
                "--quiet",
                *TINY_MODEL,
                f"model.encoder={encoder}",
                "model.encoder_mode=finetune",
                "train.batching=subwords",
            ]
        )
        == 0
    )
    assert seen == ["subwords"] and "batching: subwords" in (output / "config.yaml").read_text()


def test_fine_tuning_an_encoder_tagger_trains_the_encoder_and_saves_it_with_the_run(encoder, tmp_path, capsys):
    output = tmp_path / "run"
    assert (
        main(
            [
                "train",
                "--train",
                str(FIXTURES / "tiny_ner_train.conll"),
                "--dev",
                str(FIXTURES / "tiny_ner_dev.conll"),
                "--columns",
                "word,ner",
                "--epochs",
                "2",
                "--output",
                str(output),
                "--quiet",
                *TINY_MODEL,
                f"model.encoder={encoder}",
                "model.encoder_mode=finetune",
                "train.learning_rate=0.001",
            ]
        )
        == 0
    )
    config = (output / "config.yaml").read_text()
    assert "architecture: encoder_tagger" in config and "optimizer: adamw" in config and "schedule: linear_warmup" in config
    from safetensors.torch import load_file
    from transformers import AutoModel

    weights = load_file(str(output / "model.safetensors"))
    pretrained = AutoModel.from_pretrained(str(encoder)).state_dict()
    assert not torch_equal(weights["encoder.encoder.layer.0.attention.self.query.weight"], pretrained["encoder.layer.0.attention.self.query.weight"])
    import seqtransfer

    predicted = seqtransfer.load(output, device="cpu").predict([["abc"] * 9 + ["John", "\u200b"]])[0]
    assert len(predicted) == 11
    from seqtransfer.cli import run as run_command

    probes = run_command(["analyze", "probes", str(output), "--output", str(tmp_path / "probes")])
    assert probes["layers"] == 3 and len(probes["before"]) == len(probes["after"]) == 3
    assert all(0 <= score <= 100 for score in probes["before"] + probes["after"])
    assert (tmp_path / "probes" / "probes.png").is_file()
    assert probes["encoder"] == Path(str(encoder)).name and probes["task"]
    assert probes["encoder_weights"] == json.loads((output / "metrics.json").read_text())["encoder_weights"]  # which weights of that name
    information = probes["mutual_information"]  # the paper's Figure 2 beside its Figure 1, with shuffled labels as its sanity check
    assert [len(information[key]) for key in ("before", "before_random_labels", "after", "after_random_labels")] == [3] * 4
    assert all(value >= 0 for key in ("before", "after") for value in information[key]) and information["neighbours"] == 3
    assert information["random_vectors_random_labels"] >= 0  # the paper's second check (5 points here: near 0 needs more, test_mutual_information)
    saved = tmp_path / "probes" / "probes.json"
    # a run and saved probes side by side in one report (MiniLM's beside our LSTM LM's, in the docs)
    report = run_command(["analyze", "report", "--probes", str(output), str(saved), "--output", str(tmp_path / "report.html")])
    assert report.probes[1] == json.loads(saved.read_text()) and report.probes[0]["before"] == probes["before"]
    page = (tmp_path / "report.html").read_text()
    assert '<h2 id="probes">' in page and page.count("<h3>") == 2 and page.count(f"({saved})") == 0 and page.count(f"({output})") == 2
    assert page.count("I(H; Y) after, shuffled labels</th>") == 2 and "Ross 2014" in page and page.count("The probes learnt from") == 2
    (tmp_path / "other.json").write_text('{"layers": 3}')
    with pytest.raises(SeqTransferError, match="not a probes file: it lacks before, metric, split"):
        run_command(["analyze", "report", "--probes", str(tmp_path / "other.json"), "--output", str(tmp_path / "other.html")])
    drift = run_command(["analyze", "drift", str(output)])[0]  # how far fine-tuning moved each layer group from the pretrained weights
    assert [row["group"] for row in drift["groups"]] == ["embeddings", "layer 1", "layer 2"] and drift["start"] == "pretrained encoder tiny-bert"
    assert drift["groups"][0]["tensors"] == 5  # word, position and token-type tables, the layer norm's two: not the pooler, which nothing reads
    top = [name for name in pretrained if name.startswith("encoder.layer.1.") and pretrained[name].is_floating_point()]
    assert drift["groups"][2]["squared_distance"] == pytest.approx(sum(float(((weights[f"encoder.{name}"].double() - pretrained[name].double()) ** 2).sum()) for name in top))
    from seqtransfer.analysis.probes import layer_vectors
    from seqtransfer.rundir import load_run

    run = load_run(output)
    before, after = (layer_vectors(run, [["john", "abc"]], which)[0] for which in ("before", "after"))
    assert before.shape == after.shape and not np.array_equal(before[:, -1], after[:, -1])  # fine-tuning changed the top layer


def test_a_probe_learns_what_a_layer_holds_and_nothing_more():
    import torch

    from seqtransfer.analysis.probes import probe_accuracy

    generator = torch.Generator().manual_seed(0)
    x = torch.randn(400, 5, generator=generator)
    separable = (x[:, 0] > 0).long()
    assert probe_accuracy(x[:300], separable[:300], x[300:], separable[300:], 2) > 95
    noise = torch.randint(0, 2, (400,), generator=generator)
    assert probe_accuracy(x[:300], noise[:300], x[300:], noise[300:], 2) < 70


def torch_equal(first, second) -> bool:
    import torch

    return bool(torch.equal(first, second))


@pytest.mark.parametrize(
    "extra",
    [
        ["--task", "dependency", "model.parser_hidden=8", "model.parser_layers=1", "model.arc_hidden=6", "model.relation_hidden=4"]  # parser
    ],
)
def test_encoder_features_join_the_parser(encoder, tmp_path, extra):
    output = tmp_path / "parser"
    assert (
        main(
            [
                "train",
                "--train",
                str(FIXTURES / "tiny_dep_train.conllu"),
                "--dev",
                str(FIXTURES / "tiny_dep_dev.conllu"),
                "--epochs",
                "1",
                "--output",
                str(output),
                "--quiet",
                *TINY_MODEL,
                f"model.encoder={encoder}",
                *extra,
            ]
        )
        == 0
    )
    from safetensors.torch import load_file

    assert "word_representation.encoder_mix.weights" in load_file(str(output / "model.safetensors"))


def test_encoder_features_join_pretrand_from_a_source_with_them(encoder, tmp_path):
    source = tmp_path / "source"
    common = ["--epochs", "1", "--quiet", *TINY_MODEL, "model.random_hidden=6"]
    assert (
        main(
            [
                "train",
                "--train",
                str(FIXTURES / "tiny_ner_train.conll"),
                "--dev",
                str(FIXTURES / "tiny_ner_dev.conll"),
                "--columns",
                "word,ner",
                "--output",
                str(source),
                *common,
                f"model.encoder={encoder}",
            ]
        )
        == 0
    )
    target = tmp_path / "target"
    assert (
        main(
            [
                "transfer",
                "--source",
                str(source),
                "--method",
                "pretrand",
                "--train",
                str(FIXTURES / "tiny_pos_train.conll"),
                "--dev",
                str(FIXTURES / "tiny_pos_dev.conll"),
                "--columns",
                "word,pos",
                "--output",
                str(target),
                *common,
            ]
        )
        == 0
    )
    assert f"encoder: {encoder}" in (target / "config.yaml").read_text()  # the target reads the words as its source did


def test_runs_record_trainable_parameters_and_peak_memory(encoder, tmp_path):
    from seqtransfer.cli import run as run_command

    common = ["--train", str(FIXTURES / "tiny_ner_train.conll"), "--dev", str(FIXTURES / "tiny_ner_dev.conll"), "--columns", "word,ner", "--epochs", "1", "--quiet", *TINY_MODEL]
    frozen = run_command(["train", *common, "--output", str(tmp_path / "fe"), f"model.encoder={encoder}"])
    tuned = run_command(["train", *common, "--output", str(tmp_path / "ft"), f"model.encoder={encoder}", "model.encoder_mode=finetune"])
    # the frozen encoder is outside the model (its mix is in it): it counts in the run's parameters, never trains
    assert frozen["trainable_parameters"] == frozen["parameters"] - frozen["frozen_encoder_parameters"] > 0
    from safetensors.torch import load_file

    pooler = sum(tensor.numel() for name, tensor in load_file(str(tmp_path / "ft" / "model.safetensors")).items() if ".pooler." in name)
    # fine-tuned, everything trains but the pooler, which a tagger never reads (it gets no gradient)
    assert pooler > 0 and tuned["trainable_parameters"] == tuned["parameters"] - pooler and "frozen_encoder_parameters" not in tuned
    assert frozen["peak_rss_megabytes"] > 0 and tuned["peak_rss_megabytes"] > 0
    # the encoder's mix alone (no words, no characters, no BiLSTM): the word and character tables the
    # model keeps but never reads get no gradient, and do not count as trained
    alone = run_command(["train", *common, "--output", str(tmp_path / "alone"), f"model.encoder={encoder}", "model.encoder_join=false", "model.feature_extractor=none"])
    saved = load_file(str(tmp_path / "alone" / "model.safetensors"))
    unread = ("word_representation.word_embedding.", "word_representation.character_encoder.")
    assert any(name.startswith(unread) for name in saved)
    assert alone["trainable_parameters"] == sum(tensor.numel() for name, tensor in saved.items() if not name.startswith(unread))
    source = tmp_path / "fe"
    features = run_command(
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
            str(tmp_path / "sfe"),
            "--quiet",
            *TINY_MODEL,
        ]
    )
    assert 0 < features["trainable_parameters"] < features["parameters"]  # SFE trains the classifier only


def test_lora_trains_only_its_matrices_and_the_head_and_the_run_keeps_only_them(encoder, tmp_path, capsys):
    pytest.importorskip("peft")
    folder = tmp_path / "encoder"
    shutil.copytree(encoder, folder)
    output = tmp_path / "lora"
    from seqtransfer.cli import run as run_command

    metrics = run_command(
        [
            "train",
            "--train",
            str(FIXTURES / "tiny_ner_train.conll"),
            "--dev",
            str(FIXTURES / "tiny_ner_dev.conll"),
            "--test",
            str(FIXTURES / "tiny_ner_test.conll"),
            "--columns",
            "word,ner",
            "--epochs",
            "2",
            "--output",
            str(output),
            "--quiet",
            *TINY_MODEL,
            f"model.encoder={folder}",
            "model.encoder_mode=finetune",
            "model.encoder_adapter=lora",
            "model.lora_rank=2",
            "train.learning_rate=0.01",
        ]
    )
    from safetensors.torch import load_file

    saved = load_file(str(output / "model.safetensors"))
    assert all("lora_" in name or not name.startswith("encoder.") for name in saved) and any("lora_A" in name for name in saved)
    assert metrics["trainable_parameters"] == sum(tensor.numel() for name, tensor in saved.items() if not name.startswith("output.")) + sum(
        tensor.numel() for name, tensor in saved.items() if name.startswith("output.")
    )
    assert metrics["trainable_parameters"] < metrics["parameters"] / 2
    predicted = run_command(["evaluate", str(output), "--file", str(FIXTURES / "tiny_ner_test.conll"), "--columns", "word,ner"])
    assert predicted["f1"] == metrics["test"]["f1"]  # rebuilt from the encoder folder + the adapter: the same predictions
    drift = run_command(["analyze", "drift", str(output)])[0]  # LoRA's merged weights W0 + (alpha / r) B A against W0
    assert drift["groups"][0] == {**drift["groups"][0], "group": "embeddings", "relative_change": 0.0} and all(row["relative_change"] > 0 for row in drift["groups"][1:])
    from transformers import AutoModel

    changed = AutoModel.from_pretrained(str(folder))
    with __import__("torch").no_grad():
        changed.embeddings.word_embeddings.weight.add_(1.0)
    changed.save_pretrained(folder)
    capsys.readouterr()
    assert main(["evaluate", str(output), "--file", str(FIXTURES / "tiny_ner_test.conll"), "--columns", "word,ner"]) == 2
    assert "differs from the one this run was trained on" in capsys.readouterr().err


@pytest.mark.parametrize("mode", ["features", "finetune", "houlsby"])
def test_a_run_whose_encoder_folder_changed_is_refused_or_warned_about(encoder, tmp_path, capsys, mode):
    """Frozen features come from the folder, and so does the encoder an adapter sits in: another
    encoder is refused. A fully fine-tuned run holds its own weights and reads only the tokenizer
    there: a warning. An encoder of other sizes is said to differ, not the run to be damaged."""
    folder = tmp_path / "encoder"
    shutil.copytree(encoder, folder)
    output = tmp_path / mode
    settings = ["model.encoder_mode=finetune", "model.encoder_adapter=houlsby", "model.adapter_size=4"] if mode == "houlsby" else [f"model.encoder_mode={mode}"]
    assert (
        main(
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
                str(output),
                "--quiet",
                *TINY_MODEL,
                f"model.encoder={folder}",
                *settings,
            ]
        )
        == 0
    )
    from transformers import AutoModel

    changed = AutoModel.from_pretrained(str(folder))
    with __import__("torch").no_grad():
        changed.embeddings.word_embeddings.weight.add_(1.0)
    changed.save_pretrained(folder)
    evaluate = ["evaluate", str(output), "--file", str(FIXTURES / "tiny_ner_test.conll"), "--columns", "word,ner"]
    capsys.readouterr()
    code = main(evaluate)
    error = capsys.readouterr().err
    assert "differs from the one this run was trained on" in error
    assert code == (0 if mode == "finetune" else 2)
    if mode == "finetune":  # drift starts from the folder's weights: other weights are refused, not measured from
        assert main(["analyze", "drift", str(output)]) == 2
        assert "is not the one this run was fine-tuned from" in capsys.readouterr().err
    shutil.rmtree(folder)
    save_tiny_encoder(folder, hidden=32)
    assert main(evaluate) == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert "differs from the one this run was trained on" in error and "do not match the configuration" not in error
    assert mode != "finetune" or "and the run's weights do not fit it" in error


def test_a_run_finds_its_encoder_by_its_relative_path_from_another_working_directory(encoder, tmp_path, monkeypatch):
    """An encoder named by a path relative to where the run trained is found from a folder that holds
    the run directory, when the run is read from elsewhere: the folder whose hash is the run's."""
    from seqtransfer.cli import run as run_command

    project = tmp_path / "project"
    shutil.copytree(encoder, project / "lms" / "tiny")
    monkeypatch.chdir(project)
    metrics = run_command(
        [
            "train",
            "--train",
            str(FIXTURES / "tiny_ner_train.conll"),
            "--dev",
            str(FIXTURES / "tiny_ner_dev.conll"),
            "--test",
            str(FIXTURES / "tiny_ner_test.conll"),
            "--columns",
            "word,ner",
            "--epochs",
            "1",
            "--output",
            "runs/relative",
            "--quiet",
            *TINY_MODEL,
            "model.encoder=lms/tiny",
            "model.encoder_mode=finetune",
            "model.encoder_adapter=lora",
            "model.lora_rank=2",
        ]
    )
    assert "encoder: lms/tiny" in (project / "runs" / "relative" / "config.yaml").read_text(encoding="utf-8")
    absolute = tmp_path / "absolute"  # an encoder saved by its absolute path, then deleted: one line naming whose it was
    shutil.copytree(encoder, tmp_path / "gone")
    run_command(
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
            str(absolute),
            "--quiet",
            *TINY_MODEL,
            f"model.encoder={tmp_path / 'gone'}",
            "model.encoder_mode=finetune",
        ]
    )
    shutil.rmtree(tmp_path / "gone")
    with pytest.raises(SeqTransferError, match=f"the run's encoder folder {tmp_path / 'gone'} is not there"):
        run_command(["evaluate", str(absolute), "--file", str(FIXTURES / "tiny_ner_test.conll"), "--columns", "word,ner"])
    elsewhere = tmp_path / "elsewhere"
    save_tiny_encoder(elsewhere / "lms" / "tiny", hidden=32)  # another encoder at the same relative path here: passed over, its hash is not the run's
    monkeypatch.chdir(elsewhere)
    predicted = run_command(["evaluate", str(project / "runs" / "relative"), "--file", str(FIXTURES / "tiny_ner_test.conll"), "--columns", "word,ner"])
    assert predicted["f1"] == metrics["test"]["f1"]


def test_houlsby_adapters_start_as_the_pretrained_encoder_and_train_alone(encoder, tmp_path):
    import torch
    from transformers import AutoModel

    from seqtransfer.models.adapters import add_houlsby_adapters

    pretrained = AutoModel.from_pretrained(str(encoder))
    adapted = AutoModel.from_pretrained(str(encoder))
    assert add_houlsby_adapters(adapted, 4) == 2 * 2  # attention output and feed-forward output, in each of the 2 layers
    ids = torch.tensor([[2, 60, 61, 3]])
    with torch.no_grad():
        assert torch.allclose(pretrained(input_ids=ids).last_hidden_state, adapted(input_ids=ids).last_hidden_state)  # W_up starts at 0
    from seqtransfer.cli import run as run_command

    output = tmp_path / "houlsby"
    metrics = run_command(
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
            str(output),
            "--quiet",
            *TINY_MODEL,
            f"model.encoder={encoder}",
            "model.encoder_mode=finetune",
            "model.encoder_adapter=houlsby",
            "model.adapter_size=4",
        ]
    )
    from safetensors.torch import load_file

    saved = load_file(str(output / "model.safetensors"))
    assert any(".adapter.down." in name for name in saved) and not any(name.endswith("dense.base.weight") for name in saved)
    assert any("LayerNorm" in name for name in saved)  # Houlsby also trains the layer norms
    assert metrics["trainable_parameters"] == sum(tensor.numel() for tensor in saved.values())
    import seqtransfer

    assert len(seqtransfer.load(output, device="cpu").predict([["john", "lives"]])[0]) == 2


def test_houlsby_adapters_and_gradual_unfreezing_on_a_distilbert_encoder(tmp_path):
    """DistilBERT names its layers transformer.layer.N and its norms sa_layer_norm / output_layer_norm:
    its layers are layer groups, and Houlsby adapters train its layer norms as they do BERT's."""
    from safetensors.torch import load_file
    from transformers import DistilBertConfig, DistilBertModel, PreTrainedTokenizerFast

    from seqtransfer.cli import run as run_command

    folder = tmp_path / "tiny-distilbert"
    DistilBertModel(DistilBertConfig(vocab_size=len(VOCAB), dim=16, n_layers=2, n_heads=2, hidden_dim=32, max_position_embeddings=16)).save_pretrained(folder)
    PreTrainedTokenizerFast(tokenizer_object=tiny_wordpiece(), unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]", pad_token="[PAD]", mask_token="[MASK]").save_pretrained(folder)
    output = tmp_path / "houlsby"
    metrics = run_command(
        [
            "train",
            "--train",
            str(FIXTURES / "tiny_ner_train.conll"),
            "--dev",
            str(FIXTURES / "tiny_ner_dev.conll"),
            "--columns",
            "word,ner",
            "--epochs",
            "2",
            "--output",
            str(output),
            "--quiet",
            *TINY_MODEL,
            f"model.encoder={folder}",
            "model.encoder_mode=finetune",
            "model.encoder_adapter=houlsby",
            "model.adapter_size=4",
            "transfer.adaptations=[gradual_unfreezing]",
            "train.patience=10",
        ]
    )
    saved = load_file(str(output / "model.safetensors"))
    assert any("sa_layer_norm" in name for name in saved) and any("output_layer_norm" in name for name in saved)
    assert len(metrics["history"]) == 2 and "needs 4 epochs to open every layer group" in (output / "log.txt").read_text(encoding="utf-8")  # embeddings, 2 layers, head


@pytest.mark.parametrize("adapter", ["lora", "houlsby"])
def test_adapters_fit_an_mpnet_encoder_too(tmp_path, adapter):
    """MPNet (the second offline encoder) names its attention projections q, v and o: PEFT has no
    default LoRA targets for it, and its attention output is attn.o, not attention.output.dense."""
    pytest.importorskip("peft")
    import torch
    from transformers import MPNetConfig, MPNetModel, PreTrainedTokenizerFast

    folder = tmp_path / "tiny-mpnet"
    torch.manual_seed(0)
    vocabulary = ["[UNK]", "[PAD]", *VOCAB[2:]]  # MPNet pads with sub-word 1, as all-mpnet-base-v2's tokenizer does
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tiny_wordpiece(vocabulary), unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]", pad_token="[PAD]", mask_token="[MASK]")
    MPNetModel(MPNetConfig(vocab_size=len(VOCAB), hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, max_position_embeddings=20)).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    from seqtransfer.cli import run as run_command

    output = tmp_path / adapter
    settings = ["model.encoder_adapter=lora", "model.lora_rank=2"] if adapter == "lora" else ["model.encoder_adapter=houlsby", "model.adapter_size=4"]
    metrics = run_command(
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
            str(output),
            "--quiet",
            *TINY_MODEL,
            f"model.encoder={folder}",
            "model.encoder_mode=finetune",
            *settings,
        ]
    )
    from safetensors.torch import load_file

    saved = load_file(str(output / "model.safetensors"))
    if adapter == "lora":
        assert {name.split(".lora_A")[0].rsplit(".", 1)[1] for name in saved if ".lora_A" in name} == {"q", "v"}
    else:
        assert sum(".adapter.down.weight" in name for name in saved) == 2 * 2 and any(".attn.o.adapter." in name for name in saved)
    assert metrics["trainable_parameters"] < metrics["parameters"]
    import seqtransfer

    assert len(seqtransfer.load(output, device="cpu").predict([["john", "lives"]])[0]) == 2


def test_houlsby_adapters_refuse_an_encoder_whose_projections_they_cannot_find(capsys):
    from transformers import GPT2Config, GPT2Model

    from seqtransfer.errors import SeqTransferError
    from seqtransfer.models.adapters import add_houlsby_adapters

    with pytest.raises(SeqTransferError, match="found 0 of the 2 x 2 output projections in this gpt2 encoder"):
        add_houlsby_adapters(GPT2Model(GPT2Config(n_embd=16, n_layer=2, n_head=2, n_positions=16, vocab_size=50)), 4)


def test_encoder_features_may_replace_the_word_and_character_vectors(encoder, tmp_path):
    output = tmp_path / "alone"
    assert (
        main(
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
                str(output),
                "--quiet",
                *TINY_MODEL,
                f"model.encoder={encoder}",
                "model.encoder_join=false",
            ]
        )
        == 0
    )
    from safetensors.torch import load_file

    weights = load_file(str(output / "model.safetensors"))
    assert weights["feature_extractor.forward_lstm.weight_ih_l0"].shape[1] == 16  # the encoder's mix alone
    from transformers import AutoModel

    frozen = sum(parameter.numel() for parameter in AutoModel.from_pretrained(str(encoder)).parameters())
    metrics = json.loads((output / "metrics.json").read_text())  # the frozen encoder the features come from counts in the run's size
    assert metrics["frozen_encoder_parameters"] == frozen and metrics["parameters"] == frozen + sum(tensor.numel() for tensor in weights.values())
    import seqtransfer

    assert len(seqtransfer.load(output, device="cpu").predict([["john", "lives"]])[0]) == 2


def test_models_that_read_one_frozen_encoder_count_it_once(encoder):
    from types import SimpleNamespace

    from transformers import AutoModel

    from seqtransfer.models.tagger import shared_frozen_encoder_parameters

    frozen = sum(parameter.numel() for parameter in AutoModel.from_pretrained(str(encoder)).parameters())
    features, tuned = (SimpleNamespace(encoder=str(encoder), encoder_mode=mode) for mode in ("features", "finetune"))
    plain = SimpleNamespace(encoder=None, encoder_mode="features")
    assert shared_frozen_encoder_parameters([features, features]) == frozen  # an ensemble's members share it
    assert shared_frozen_encoder_parameters([features, tuned]) == shared_frozen_encoder_parameters([tuned, features]) == frozen  # in either order
    assert shared_frozen_encoder_parameters([tuned, plain]) == 0


def test_mean_pooling_averages_each_tokens_subwords_across_windows(encoder):
    import torch

    from seqtransfer.config import ModelConfig
    from seqtransfer.data.batching import encode_sentences, make_batch
    from seqtransfer.data.vocabulary import Vocabularies, Vocabulary
    from seqtransfer.models.tagger import EncoderTagger

    vocabularies = Vocabularies(Vocabulary.build(["abc"]), Vocabulary.build("abc"), Vocabulary(["O"]), encoder=str(encoder), encoder_mode="finetune")
    batch = make_batch(encode_sentences([["john", "abc"], ["abc"] * 9], vocabularies), np.arange(2))
    assert batch.token_sizes.tolist() == [[1, 3, 1, 1, 1, 1, 1, 1, 1], [3] * 9]  # "abc" = a ##b ##c; padding counts 1
    models = {}
    for pooling in ("first", "mean"):
        models[pooling] = EncoderTagger(ModelConfig(encoder=str(encoder), encoder_mode="finetune", encoder_pooling=pooling, dropout=0.0), 3, 3, 1)
        models[pooling].load_pretrained()
        models[pooling].eval()
    with torch.inference_mode():
        states = models["mean"].encode(batch).reshape(-1, 16)
        mean = models["mean"].features(batch)
        first = models["first"].features(batch)
    assert torch.allclose(first, states[batch.token_index])
    for row, column in [(0, 1), (1, 0), (1, 4), (1, 8)]:  # "abc" in the first sentence; the second's in its three windows
        start = batch.token_index[row, column].item()
        assert torch.allclose(mean[row, column], states[start : start + 3].mean(0), atol=1e-5)
    assert torch.allclose(mean[0, 0], states[batch.token_index[0, 0]], atol=1e-5)  # one sub-word: its own vector


def test_sentence_and_pair_probes(encoder, tmp_path, monkeypatch):
    from dataclasses import replace

    import torch

    from seqtransfer.analysis.probes import probe_correlation, sentence_vectors
    from seqtransfer.cli import run as run_command
    from seqtransfer.data import registry

    generator = torch.Generator().manual_seed(0)
    x = torch.randn(200, 5, generator=generator)
    y = x @ torch.tensor([1.0, -2.0, 0.5, 0.0, 3.0]) + 0.01 * torch.randn(200, generator=generator)
    assert probe_correlation(x[:150], y[:150], x[150:], y[150:]) > 99.0
    vectors = [np.arange(12, dtype=np.float32).reshape(3, 2, 2)]  # tokens a [SEP] b; 2 layers of 2 units
    pair = sentence_vectors(vectors, [["a", "[SEP]", "b"]])
    assert pair.shape == (1, 2, 8) and pair[0, 0].tolist() == [0, 1, 8, 9, 8, 8, 0, 9]  # u, v, |u - v|, u * v of layer 0
    spec = replace(
        registry.STSB, name="tiny_sts", folder="", columns=("text", "text_b", "score"), extra_fields=False, splits={split: str(FIXTURES / "tiny_similarity.tsv") for split in ("train", "dev", "test")}
    )
    monkeypatch.setitem(registry.DATASETS, "tiny_sts", spec)
    run_command(["train", "--dataset", "tiny_sts", "--epochs", "1", "--output", str(tmp_path / "sts"), "--quiet", *TINY_MODEL, f"model.encoder={encoder}"])
    probes = run_command(["analyze", "probes", str(tmp_path / "sts"), "--output", str(tmp_path / "probes")])
    assert probes["metric"] == "pearson" and probes["layers"] == 3 and all(-100 <= score <= 100 for score in probes["before"])
    assert "mutual_information" not in probes  # scores are not labels: no I(H; Y)
    run_command(
        [
            "train",
            "--train",
            str(FIXTURES / "tiny_sentiment_train.tsv"),
            "--dev",
            str(FIXTURES / "tiny_sentiment_dev.tsv"),
            "--epochs",
            "1",
            "--output",
            str(tmp_path / "sentiment"),
            "--quiet",
            *TINY_MODEL,
            f"model.encoder={encoder}",
            "data.max_train_sentences=5",
        ]
    )
    probes = run_command(["analyze", "probes", str(tmp_path / "sentiment")])
    assert probes["metric"] == "accuracy" and probes["sentence"] and all(0 <= score <= 100 for score in probes["before"])
    assert probes["train_sentences"] == 5  # the probes learn from the sentences the run trained on, not the whole training file


def test_frozen_features_of_a_pair_read_the_token_types_fine_tuning_reads(encoder):
    import torch

    from seqtransfer.embeddings.transformer import encode_sentences_with, load_encoder, subword_windows

    tokenizer, model = load_encoder(str(encoder))
    pair = ["abc", "abc", "abc", "[SEP]", "abc", "abc", "abc", "abc", "abc"]  # 9 + 1 + 15 sub-words: windows of 13 (A, [SEP], B's first), then 12
    (typed,) = encode_sentences_with(tokenizer, model, [pair], "first", segments=True)
    (untyped,) = encode_sentences_with(tokenizer, model, [pair], "first")
    windows, positions, types = (value[0] for value in subword_windows(str(encoder), [pair]))
    assert len(windows) == 2 and [window_types.min() for window_types in types] == [0, 1]
    with torch.inference_mode():
        layers = [torch.stack(model(input_ids=torch.as_tensor(ids)[None], token_type_ids=torch.as_tensor(kinds)[None]).hidden_states, dim=2)[0] for ids, kinds in zip(windows, types)]
    expected = np.stack([layers[window][position].numpy() for window, position, _ in positions]).astype(np.float16)
    assert np.array_equal(typed, expected)  # the fine-tuning path's ids and token types, window by window
    assert not np.array_equal(typed[4:], untyped[4:])  # B reads type 1 (before this, features of pairs read 0 throughout)


def test_pairs_get_their_own_cache_entry_and_old_runs_keep_untyped_features(encoder, feature_cache):
    from seqtransfer.data.vocabulary import Vocabularies
    from seqtransfer.embeddings import feature_cache as features_module

    single = [["john", "lives"]]
    features_module.cached_features(str(encoder), single, "first")
    features_module.cached_features(str(encoder), single, "first", segments=True)
    assert len(list(feature_cache.glob("*.safetensors"))) == 1  # no pair: token types change nothing, one entry serves both
    pair = [["john", "[SEP]", "lives"]]
    features_module.cached_features(str(encoder), pair, "first")
    features_module.cached_features(str(encoder), pair, "first", segments=True)
    assert len(list(feature_cache.glob("*.safetensors"))) == 3
    saved = {"words": ["<pad>"], "characters": ["<pad>"], "labels": ["O"], "lowercase": True, "twitter": False, "encoder": "x"}
    assert Vocabularies.from_json(saved).encoder_segments is False  # a run saved before: trained on untyped pairs, predicts so
    assert Vocabularies.from_json(Vocabularies.from_json({**saved, "encoder_segments": True}).to_json()).encoder_segments is True


def test_table5_heads_features_with_a_crf_alone_and_a_fine_tuned_encoder_with_a_bilstm(encoder, tmp_path, capsys):
    import seqtransfer
    from seqtransfer.transfer.adaptations import layer_groups

    common = [
        "train",
        "--train",
        str(FIXTURES / "tiny_ner_train.conll"),
        "--dev",
        str(FIXTURES / "tiny_ner_dev.conll"),
        "--columns",
        "word,ner",
        "--epochs",
        "2",
        "--quiet",
        *TINY_MODEL,
        f"model.encoder={encoder}",
        "model.classifier=crf",
    ]
    assert main([*common, "--output", str(tmp_path / "fe-crf"), "model.encoder_join=false", "model.feature_extractor=none"]) == 0
    plain = seqtransfer.load(tmp_path / "fe-crf").run.model
    assert not list(plain.feature_extractor.parameters()) and plain.classifier.in_features == 16  # the scalar mix feeds the CRF's emissions
    assert main([*common, "--output", str(tmp_path / "ft-bilstm"), "model.encoder_mode=finetune", "model.feature_extractor=bilstm", "transfer.adaptations=[gradual_unfreezing]"]) == 0
    model = seqtransfer.load(tmp_path / "ft-bilstm").run.model
    assert model.classifier.in_features == 16 and sum(parameter.numel() for parameter in model.feature_extractor.parameters()) > 0  # TINY_MODEL's hidden 16
    head = dict(layer_groups(model))["head"]
    assert any(name.startswith("feature_extractor.") for name in head)  # the BiLSTM thaws first, with the classifier
    assert len(seqtransfer.load(tmp_path / "ft-bilstm").predict([["john", "lives", "in", "new", "york"]])[0]) == 5
    assert "model.feature_extractor" in error_line(parser_arguments(tmp_path / "parser", 1, 1, "model.feature_extractor=none"), capsys)
    # the paper's two-layer BiLSTM-CRF over frozen features (model.feature_layers=2): two layers, discriminative groups of their own
    assert main([*common, "--output", str(tmp_path / "fe-two"), "model.encoder_join=false", "model.feature_layers=2"]) == 0
    stacked = seqtransfer.load(tmp_path / "fe-two").run.model
    assert len(stacked.feature_extractor.layers) == 2 and stacked.classifier.in_features == 16
    assert [group for group, _ in layer_groups(stacked)][-3:-1] == ["feature_extractor.layers.0", "feature_extractor.layers.1"]


def test_input_tags_with_a_fine_tuned_encoder_are_one_line(encoder, tmp_path, capsys):
    arguments = [
        "train",
        "--train",
        str(FIXTURES / "tiny_dep_train.conllu"),
        "--dev",
        str(FIXTURES / "tiny_dep_dev.conllu"),
        "--task",
        "xpos",
        "--epochs",
        "1",
        "--output",
        str(tmp_path / "bad"),
        "--quiet",
        *TINY_MODEL,
        f"model.encoder={encoder}",
        "model.encoder_mode=finetune",
        "model.tag_feature=upos",
    ]
    assert "reads sub-words only" in error_line(arguments, capsys)


def test_a_fine_tuned_run_saved_before_mean_pooling_keeps_first_subwords():
    from seqtransfer.rundir import upgrade_saved

    old = {"model": {"encoder": "x", "encoder_mode": "finetune", "encoder_pooling": "mean"}}
    assert upgrade_saved(old)["model"]["encoder_pooling"] == "first"
    new = {"model": {"encoder": "x", "encoder_mode": "finetune", "encoder_pooling": "mean", "tag_count": 0}}
    assert upgrade_saved(new)["model"]["encoder_pooling"] == "mean"


def test_mixed_precision_trains_an_encoder_in_bf16_with_fp32_weights(encoder, tmp_path, capsys):
    import torch

    common = [
        "train",
        "--train",
        str(FIXTURES / "tiny_ner_train.conll"),
        "--dev",
        str(FIXTURES / "tiny_ner_dev.conll"),
        "--columns",
        "word,ner",
        "--epochs",
        "2",
        "--seed",
        "3",
        "--quiet",
        *TINY_MODEL,
        f"model.encoder={encoder}",
        "model.encoder_mode=finetune",
        "train.learning_rate=0.001",
        "train.device=cpu",
    ]  # the CPU's meaning of auto (fp32), also on a machine with a GPU
    assert main([*common, "--output", str(tmp_path / "bf16"), "train.amp=bf16"]) == 0
    assert "precision: bf16 autocast, fp32 weights" in (tmp_path / "bf16" / "log.txt").read_text(encoding="utf-8")
    import seqtransfer

    model = seqtransfer.load(tmp_path / "bf16", device="cpu").run.model
    assert all(parameter.dtype == torch.float32 for parameter in model.parameters())
    assert main([*common, "--output", str(tmp_path / "auto"), "train.amp=auto"]) == 0  # auto on a CPU: fp32, as off
    assert main([*common, "--output", str(tmp_path / "off")]) == 0
    assert (tmp_path / "auto" / "model.safetensors").read_bytes() == (tmp_path / "off" / "model.safetensors").read_bytes()
    assert (tmp_path / "bf16" / "model.safetensors").read_bytes() != (tmp_path / "off" / "model.safetensors").read_bytes()
    capsys.readouterr()
    assert main([*common, "--output", str(tmp_path / "fp16"), "train.amp=fp16"]) == 2
    assert "needs a CUDA GPU" in capsys.readouterr().err and not (tmp_path / "fp16").exists()
    sentences = [["abc"] * 9 + ["John", "lives"], ["in", "new", "york"]]
    fp32, bf16 = (seqtransfer.load(tmp_path / "off", device="cpu", amp=amp).predict(sentences) for amp in ("off", "bf16"))
    assert [len(labels) for labels in bf16] == [11, 3] and fp32 == seqtransfer.load(tmp_path / "off", device="cpu", amp="auto").predict(sentences)
    assert "amp=fp16 needs a CUDA GPU" in error_line(
        ["predict", str(tmp_path / "off"), str(FIXTURES / "tiny_ner_dev.conll"), "--format", "conll", "--columns", "word,ner", "--device", "cpu", "--amp", "fp16"], capsys
    )
    from seqtransfer.cli import run as run_command
    from seqtransfer.workflows.combination import combine

    scores = run_command(["evaluate", str(tmp_path / "off"), "--file", str(FIXTURES / "tiny_ner_dev.conll"), "--columns", "word,ner", "--device", "cpu", "--amp", "bf16"])
    assert 0 <= scores["f1"] <= 100
    runs = [tmp_path / "off", tmp_path / "bf16"]
    assert [len(labels) for labels in combine("confident", runs, sentences, amp="bf16")] == [11, 3]


def test_mixed_precision_on_a_bilstm_is_one_line(tmp_path, capsys):
    common = ["train", "--train", str(FIXTURES / "tiny_ner_train.conll"), "--dev", str(FIXTURES / "tiny_ner_dev.conll"), "--columns", "word,ner", "--epochs", "1", "--quiet", *TINY_MODEL]
    assert "is for fine-tuned Transformer encoders" in error_line([*common, "--output", str(tmp_path / "bad"), "train.amp=bf16"], capsys)
    assert not (tmp_path / "bad").exists()
    assert main([*common, "--output", str(tmp_path / "bilstm")]) == 0
    line = error_line(["predict", str(tmp_path / "bilstm"), str(FIXTURES / "tiny_ner_dev.conll"), "--format", "conll", "--columns", "word,ner", "--amp", "bf16"], capsys)
    assert "amp=bf16 is for fine-tuned Transformer encoders" in line and "drop amp: only a fine-tuned encoder's run" in line


def test_mixed_precision_on_a_gpu(encoder, tmp_path):
    import torch

    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU here (scripts/gpu_check.sh runs this on one)")
    import seqtransfer

    for mode in ("auto", "fp16"):
        output = tmp_path / mode
        assert (
            main(
                [
                    "train",
                    "--train",
                    str(FIXTURES / "tiny_ner_train.conll"),
                    "--dev",
                    str(FIXTURES / "tiny_ner_dev.conll"),
                    "--columns",
                    "word,ner",
                    "--epochs",
                    "2",
                    "--quiet",
                    *TINY_MODEL,
                    f"model.encoder={encoder}",
                    "model.encoder_mode=finetune",
                    "train.device=cuda",
                    f"train.amp={mode}",
                    "--output",
                    str(output),
                ]
            )
            == 0
        )
        log = (output / "log.txt").read_text(encoding="utf-8")
        assert "autocast, fp32 weights" in log and ("fp16" in log if mode == "fp16" else True)
        history = json.loads((output / "metrics.json").read_text(encoding="utf-8"))["history"]
        assert all(np.isfinite(epoch["loss"]) for epoch in history)
        model = seqtransfer.load(output, device="cpu").run.model  # a GPU-trained mixed-precision run predicts on a CPU
        assert all(parameter.dtype == torch.float32 for parameter in model.parameters())


def test_l2sp_pulls_a_fine_tuned_encoder_towards_its_pretrained_weights(encoder, tmp_path):
    import re

    from safetensors.torch import load_file
    from transformers import AutoModel

    common = [
        "train",
        "--train",
        str(FIXTURES / "tiny_ner_train.conll"),
        "--dev",
        str(FIXTURES / "tiny_ner_dev.conll"),
        "--columns",
        "word,ner",
        "--epochs",
        "3",
        "--seed",
        "2",
        "--quiet",
        *TINY_MODEL,
        f"model.encoder={encoder}",
        "model.encoder_mode=finetune",
        "train.learning_rate=0.01",
        "train.device=cpu",
        "train.patience=5",
    ]
    assert main([*common, "--output", str(tmp_path / "plain")]) == 0
    assert main([*common, "--output", str(tmp_path / "l2sp"), "transfer.adaptations=[l2sp]", "transfer.l2sp_weight=100"]) == 0
    assert "L2-SP (alpha 100.0) towards the pretrained encoder" in (tmp_path / "l2sp" / "log.txt").read_text(encoding="utf-8")
    pretrained = AutoModel.from_pretrained(str(encoder)).state_dict()

    def distance(run: str) -> float:
        weights = load_file(str(tmp_path / run / "model.safetensors"))
        return sum(float((weights[f"encoder.{name}"] - tensor).pow(2).sum()) for name, tensor in pretrained.items() if f"encoder.{name}" in weights and tensor.is_floating_point())

    assert distance("l2sp") < 0.5 * distance("plain")
    trained = {run: json.loads((tmp_path / run / "metrics.json").read_text(encoding="utf-8"))["trainable_parameters"] for run in ("plain", "l2sp")}
    assert trained["l2sp"] == trained["plain"]  # the pull leaves out the pooler, which nothing reads: it trains no more than FT
    assert main([*common, "--output", str(tmp_path / "lora"), "transfer.adaptations=[l2sp]", "model.encoder_adapter=lora", "model.lora_rank=2"]) == 0
    pulled = re.search(r"towards the pretrained encoder: (\d+) tensors", (tmp_path / "lora" / "log.txt").read_text(encoding="utf-8"))
    lora = [name for name in load_file(str(tmp_path / "lora" / "model.safetensors")) if "lora_" in name]
    assert lora and int(pulled.group(1)) == len(lora)  # under LoRA only its own matrices move: the encoder's frozen weights get no term
    for adaptation in ("l2sp", "ewc"):  # an encoder run as a source: its encoder.* weights are the transferred ones, pulled back towards it
        output = tmp_path / f"transfer-{adaptation}"
        assert (
            main(
                [
                    "transfer",
                    "--source",
                    str(tmp_path / "plain"),
                    "--method",
                    "finetune",
                    "--train",
                    str(FIXTURES / "tiny_pos_train.conll"),
                    "--dev",
                    str(FIXTURES / "tiny_pos_dev.conll"),
                    "--columns",
                    "word,pos",
                    "--epochs",
                    "1",
                    "--quiet",
                    *TINY_MODEL,
                    "--output",
                    str(output),
                    f"transfer.adaptations=[{adaptation}]",
                    "transfer.ewc_batches=2",
                ]
            )
            == 0
        )
        assert ("L2-SP (alpha" if adaptation == "l2sp" else "EWC (lambda") in (output / "log.txt").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "combination",
    [
        ["transfer.adaptations=[gradual_unfreezing, discriminative]", "train.schedule=slanted_triangular"],  # ULMFiT's recipe
        ["model.encoder_adapter=houlsby", "model.adapter_size=4", "transfer.adaptations=[discriminative]"],
        ["model.encoder_adapter=lora", "model.lora_rank=2", "transfer.adaptations=[discriminative]"],
    ],
)
def test_adaptation_schemes_combine_on_a_fine_tuned_encoder(encoder, tmp_path, monkeypatch, combination):
    """Each combination reaches the optimizer: one group per layer group (embeddings, the 2 layers,
    the head), each at 1/2.6 of the rate of the one above; under an adapter the encoder's own
    weights never train and end as they were pretrained."""
    import torch
    from transformers import AutoModel

    from seqtransfer.cli import run as run_command
    from seqtransfer.models.adapters import pretrained_name
    from seqtransfer.training import loop

    seen, optimizers = {}, []
    original_optimizer, original_fit = loop.make_optimizer, loop.fit

    def optimizer_spy(*arguments, **options):
        optimizers.append(original_optimizer(*arguments, **options))
        return optimizers[-1]

    def fit_spy(model, *arguments, **options):
        seen["model"], seen["trainable"] = model, {name for name, parameter in model.named_parameters() if parameter.requires_grad}
        return original_fit(model, *arguments, **options)

    monkeypatch.setattr(loop, "make_optimizer", optimizer_spy)
    monkeypatch.setattr("seqtransfer.workflows.run_path.fit", fit_spy)

    output = tmp_path / "combined"
    metrics = run_command(
        [
            "train",
            "--train",
            str(FIXTURES / "tiny_ner_train.conll"),
            "--dev",
            str(FIXTURES / "tiny_ner_dev.conll"),
            "--columns",
            "word,ner",
            "--epochs",
            "2",
            "--output",
            str(output),
            "--quiet",
            *TINY_MODEL,
            f"model.encoder={encoder}",
            "model.encoder_mode=finetune",
            "train.learning_rate=0.026",
            *combination,
        ]
    )
    assert metrics["trainable_parameters"] > 0 and len(metrics["history"]) == 2
    from seqtransfer.transfer.adaptations import layer_groups

    model = seen["model"]
    groups = [name for name, _ in layer_groups(model)]
    assert len(groups) == 4 and groups[-1] == "head"  # embeddings, the tiny encoder's 2 layers (under LoRA too), the head
    assert len(optimizers) == 1 and [group["name"] for group in optimizers[0].param_groups] == groups
    assert {group["name"]: group["base_lr"] for group in optimizers[0].param_groups} == pytest.approx({name: 0.026 / 2.6 ** (3 - depth) for depth, name in enumerate(groups)})
    pretrained = AutoModel.from_pretrained(str(encoder)).state_dict()
    frozen = [name for name, _ in model.named_parameters() if model.frozen(name)]
    assert bool(frozen) == ("model.encoder_adapter=" in " ".join(combination))  # an adapter keeps the encoder's own weights
    assert not seen["trainable"] & set(frozen)
    parameters = dict(model.named_parameters())
    assert all(torch.equal(parameters[name].detach().cpu(), pretrained[pretrained_name(name.removeprefix("encoder."))]) for name in frozen)


def test_adapters_on_frozen_features_are_one_line(encoder, tmp_path, capsys):
    common = [
        "train",
        "--train",
        str(FIXTURES / "tiny_ner_train.conll"),
        "--dev",
        str(FIXTURES / "tiny_ner_dev.conll"),
        "--columns",
        "word,ner",
        "--epochs",
        "1",
        "--quiet",
        *TINY_MODEL,
        f"model.encoder={encoder}",
    ]
    assert main([*common, "--output", str(tmp_path / "a"), "model.encoder_adapter=houlsby"]) == 2
    assert "this run has encoder" in capsys.readouterr().err and not (tmp_path / "a").exists()


def test_schemes_an_encoder_model_cannot_take_are_one_line_before_anything_is_written(encoder, tmp_path, capsys):
    """EWC without a source run (L2-SP alone may pull towards the pretrained encoder), and an auxiliary
    BiLSTM LM on frozen features fed to the classifier with no BiLSTM between."""
    common = [
        "train",
        "--train",
        str(FIXTURES / "tiny_ner_train.conll"),
        "--dev",
        str(FIXTURES / "tiny_ner_dev.conll"),
        "--columns",
        "word,ner",
        "--epochs",
        "1",
        "--quiet",
        *TINY_MODEL,
        f"model.encoder={encoder}",
    ]
    cases = {
        "ewc": (["model.encoder_mode=finetune", "transfer.adaptations=[ewc]"], "adaptation 'ewc' pulls towards a source run's weights, and this scheme has none"),
        "auxiliary LM": (["model.feature_extractor=none", "transfer.auxiliary_lm_weight=0.1"], "leaves no BiLSTM for the domain discriminator or the auxiliary LM to read"),
    }
    for name, (settings, message) in cases.items():
        output = tmp_path / name
        assert message in error_line([*common, "--output", str(output), *settings], capsys)
        assert not output.exists()


def test_a_fine_tuned_encoders_run_is_a_source_for_fine_tuning_and_feature_extraction(encoder, tmp_path, capsys):
    from safetensors.torch import load_file

    from seqtransfer.cli import run as run_command

    ner = ["--train", str(FIXTURES / "tiny_ner_train.conll"), "--dev", str(FIXTURES / "tiny_ner_dev.conll"), "--columns", "word,ner", "--epochs", "1", "--quiet", *TINY_MODEL]
    pos = ["--train", str(FIXTURES / "tiny_pos_train.conll"), "--dev", str(FIXTURES / "tiny_pos_dev.conll"), "--columns", "word,pos", "--epochs", "1", "--quiet", *TINY_MODEL]
    source = tmp_path / "source"
    run_command(["train", *ner, "--output", str(source), f"model.encoder={encoder}", "model.encoder_mode=finetune", "model.encoder_adapter=lora", "model.lora_rank=2"])
    for scheme in ("finetune", "features"):
        output = tmp_path / scheme
        run_command(["transfer", "--source", str(source), "--method", scheme, *pos, "--output", str(output)])  # the source's encoder, mode and adapter
        log = (output / "log.txt").read_text(encoding="utf-8")
        assert "tensors from" in log and "(encoder., feature_extractor.)" in log
        saved, start = load_file(str(output / "model.safetensors")), load_file(str(source / "model.safetensors"))
        lora = [name for name in start if "lora_" in name]
        assert lora and all(name in saved for name in lora)  # the target is a LoRA model too, its adapters copied
        if scheme == "features":  # only the classifier trained: the adapters are the source's
            assert all(torch_equal(saved[name], start[name]) for name in lora)
        drift = run_command(["analyze", "drift", str(output)])[0]  # LoRA's merged weights against the source's merged ones
        assert [row["group"] for row in drift["groups"]] == ["embeddings", "layer 1", "layer 2"]
        assert (drift["total"]["relative_change"] == 0.0) == (scheme == "features") and drift["groups"][0]["relative_change"] == 0.0
    assert main(["transfer", "--source", str(source), "--method", "pretrand", *pos, "--output", str(tmp_path / "pretrand")]) == 2  # no random branch beside an encoder
    assert "not tagging / pretrand" in capsys.readouterr().err and not (tmp_path / "pretrand").exists()
    with pytest.raises(SeqTransferError, match="the source run has model.encoder_adapter=lora; this run asks for houlsby"):
        run_command(["transfer", "--source", str(source), "--method", "finetune", *pos, "--output", str(tmp_path / "other"), "model.encoder_adapter=houlsby"])


def test_gradual_unfreezing_of_a_fine_tuned_encoder_opens_one_layer_group_per_epoch(encoder):
    """Groups: embeddings, layer 0, layer 1, head. Epoch 1 trains the head alone, epoch 2 adds
    layer 1, epoch 3 layer 0, epoch 4 the embeddings; early stopping waits for epoch 4."""
    from seqtransfer.config import RunConfig, apply_overrides
    from seqtransfer.data.vocabulary import Vocabularies, Vocabulary
    from seqtransfer.models.registry import build_model
    from seqtransfer.transfer.adaptations import layer_groups, unfreezing_epochs, unfreezing_hook

    config = apply_overrides(RunConfig(), [*TINY_MODEL, f"model.encoder={encoder}", "model.encoder_mode=finetune", "model.architecture=encoder_tagger"]).model
    config.encoder_layers, config.encoder_dimension = 3, 16
    model = build_model(config, Vocabularies(Vocabulary.build(["a"]), Vocabulary.build("a"), Vocabulary(["X", "Y"])))
    assert [name for name, _ in layer_groups(model)] == ["encoder.embeddings", "encoder.encoder.layer.0", "encoder.encoder.layer.1", "head"]
    names = {name for name, _ in model.named_parameters()}
    hook = unfreezing_hook(model, names)
    opened = []
    for epoch in (1, 2, 3, 4):
        hook(epoch, model, None)
        trainable = {name for name, parameter in model.named_parameters() if parameter.requires_grad}
        opened.append([group for group, members in layer_groups(model) if set(members) <= trainable])
    assert opened == [
        ["head"],
        ["encoder.encoder.layer.1", "head"],
        ["encoder.encoder.layer.0", "encoder.encoder.layer.1", "head"],
        ["encoder.embeddings", "encoder.encoder.layer.0", "encoder.encoder.layer.1", "head"],
    ]
    assert unfreezing_epochs(model, names) == 4 and unfreezing_epochs(model, {name for name in names if not name.startswith("encoder.embeddings.")}) == 3


def test_chain_thaw_under_lora_thaws_only_the_groups_that_train(encoder, tmp_path):
    """Under LoRA the embeddings have no weight that trains: chain-thaw skips them (a phase of
    theirs would train nothing) and thaws the head, each layer's LoRA matrices, then all."""
    pytest.importorskip("peft")
    from seqtransfer.cli import run as run_command

    output = tmp_path / "chain"
    metrics = run_command(
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
            str(output),
            "--quiet",
            *TINY_MODEL,
            f"model.encoder={encoder}",
            "model.encoder_mode=finetune",
            "model.encoder_adapter=lora",
            "model.lora_rank=2",
            "transfer.adaptations=[chain_thaw]",
        ]
    )
    layers = ["encoder.base_model.model.encoder.layer.0", "encoder.base_model.model.encoder.layer.1"]
    assert [record["phase"] for record in metrics["history"]] == ["head", *layers, "all"]
    import seqtransfer
    from seqtransfer.transfer.adaptations import chain_thaw_phases
    from seqtransfer.transfer.schemes import EVERYTHING, Phase, set_trainable

    model = seqtransfer.load(output, device="cpu").run.model
    trained = [set_trainable(model, phase.trainable) for phase in chain_thaw_phases(model, [Phase("train", EVERYTHING)])]
    assert all(name.startswith(("classifier.", "output.")) for name in trained[0])
    for layer, names in zip(layers, trained[1:3]):
        assert names and all(name.startswith(f"{layer}.") and "lora_" in name for name in names)
    assert sorted(trained[-1]) == sorted(name for names in trained[:-1] for name in names)  # the phases partition what trains
    assert metrics["trainable_parameters"] == sum(parameter.numel() for name, parameter in model.named_parameters() if name in trained[-1])


def test_the_encoder_options_name_what_model_encoder_and_encoder_mode_do(encoder, tmp_path, capsys):
    import yaml

    output = tmp_path / "named"
    assert (
        main(
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
                str(output),
                "--quiet",
                *TINY_MODEL,
                "--encoder",
                str(encoder),
                "--encoder-mode",
                "finetune",
            ]
        )
        == 0
    )
    model = yaml.safe_load((output / "config.yaml").read_text())["model"]
    assert model["encoder"] == str(encoder) and model["encoder_mode"] == "finetune" and model["architecture"] == "encoder_tagger"
    capsys.readouterr()
    assert main(["train", "--train", str(FIXTURES / "tiny_ner_train.conll"), "--output", str(tmp_path / "both"), "--encoder", str(encoder), "model.encoder=minilm"]) == 2
    assert "the option for model.encoder says" in capsys.readouterr().err


def test_lora_on_a_model_type_peft_has_no_targets_for_is_one_line():
    pytest.importorskip("peft")
    from transformers import ConvBertConfig, ConvBertModel

    from seqtransfer.models.adapters import add_lora

    encoder = ConvBertModel(ConvBertConfig(vocab_size=len(VOCAB), hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32, embedding_size=16))
    with pytest.raises(SeqTransferError, match="LoRA: .*use model.encoder_adapter=houlsby"):
        add_lora(encoder, 4, 8)


def test_windows_encoded_in_padded_batches_equal_each_window_encoded_alone(encoder, monkeypatch):
    from seqtransfer.embeddings import window_batches
    from seqtransfer.embeddings.tokenization import PAIR_SEPARATOR, subword_pieces, token_segments
    from seqtransfer.embeddings.transformer import encode_sentences_with, load_encoder

    tokenizer, model = load_encoder(str(encoder))
    sentences = [["john"], ["abc", "john", "\u200b"], ["abc"] * 9, ["john", PAIR_SEPARATOR, "abc", "abc"]]
    monkeypatch.setattr(window_batches, "BATCH_SUBWORDS", 40)  # several batches of several windows, padded
    assert window_batches.length_batches([window_batches.WindowInput([0] * size, None, [], 1) for size in (3, 5, 16, 16, 7, 7)]) == [[0, 1, 4, 5], [2, 3]]
    for pooling, segments in (("first", True), ("mean", False)):
        batched = encode_sentences_with(tokenizer, model, sentences, pooling, segments)
        for tokens, vectors in zip(sentences, batched):
            kinds = token_segments(tokens) if segments else None
            if len(tokens) == 9:  # three windows: the first alone
                kinds, tokens, vectors = None, tokens[:4], vectors[:4]
            window = window_batches.window_input(tokenizer, model, subword_pieces(tokenizer, tokens), 14, kinds)
            (alone,) = window_batches.encode_windows(tokenizer, model, [window], pooling)  # a batch of one: no padding
            assert vectors.shape == alone.shape and vectors.dtype == np.float16
            np.testing.assert_allclose(vectors.astype(np.float32), alone.astype(np.float32), atol=2e-3)


@pytest.mark.parametrize("pooling", ["first", "mean"])
def test_token_vectors_are_each_tokens_own_slice_bit_for_bit(pooling):
    import torch

    from seqtransfer.embeddings.window_batches import PADDED_SUBWORDS, WindowInput, mean_vectors, token_vectors

    generator = torch.Generator().manual_seed(3)
    token_lengths = [1, 3, 1, 7, 2, 3, 1, 12, 1, PADDED_SUBWORDS, 2, 25]  # 25: a long token takes its own slice
    layers = torch.randn(2 + sum(token_lengths), 4, 16, generator=generator)  # [CLS] ... [SEP]
    starts, spans = [], []
    for length in token_lengths:
        starts.append(1 + sum(len(span) for span in spans))
        spans.append(layers[starts[-1] : starts[-1] + length])
    expected = torch.stack([span[0] if pooling == "first" else span.mean(0) for span in spans])  # (T, 4, 16) float32
    if pooling == "mean":  # the float32 means themselves, before the cast to float16
        assert torch.equal(mean_vectors(layers, torch.tensor(starts), torch.tensor(token_lengths)), expected)
    vectors = token_vectors(layers, WindowInput([0] * len(layers), None, token_lengths, 1), pooling)
    assert vectors.dtype == np.float16 and vectors.shape == (len(token_lengths), 4, 16)
    assert np.array_equal(vectors, expected.numpy().astype(np.float16))
    assert token_vectors(layers, WindowInput([0, 0], None, [], 1), pooling).shape == (0, 4, 16)
