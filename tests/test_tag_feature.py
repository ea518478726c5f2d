"""Input tags (model.tag_feature): a parser reading gold UPOS from the data, or a tagger's predictions."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import FIXTURES, TINY_MODEL
from test_parser import TINY_PARSER, error_line, is_tree, parser_arguments

import seqtransfer
from seqtransfer.cli import run
from seqtransfer.data.batching import encode_sentences, make_batch
from seqtransfer.data.conllu import read_conllu


def tagger_arguments(output, *extra: str) -> list[str]:
    return [
        "train",
        "--train",
        str(FIXTURES / "tiny_dep_train.conllu"),
        "--dev",
        str(FIXTURES / "tiny_dep_dev.conllu"),
        "--test",
        str(FIXTURES / "tiny_dep_test.conllu"),
        "--task",
        "upos",
        "--seed",
        "1",
        "--epochs",
        "2",
        "--output",
        str(output),
        "--quiet",
        *TINY_MODEL,
        *extra,
    ]


@pytest.fixture(scope="module")
def gold_tag_parser(tmp_path_factory):
    output = tmp_path_factory.mktemp("tags") / "gold"
    run(parser_arguments(output, 2, 1, "model.tag_feature=upos", "model.tag_dimension=5"))
    return output


@pytest.fixture(scope="module")
def tagger_run(tmp_path_factory):
    output = tmp_path_factory.mktemp("tags") / "tagger"
    run(tagger_arguments(output))
    return output


def test_gold_tags_are_an_input_of_the_parser(gold_tag_parser):
    loaded = seqtransfer.load(gold_tag_parser, device="cpu").run  # the batches below are built on the CPU
    tags = loaded.vocabularies.tags
    gold = read_conllu(FIXTURES / "tiny_dep_train.conllu")
    assert tags.items[:2] == ["<pad>", "<unk>"] and set(tags.items[2:]) == {tag for sentence in gold for tag in sentence.columns["upos"]}
    assert loaded.vocabularies.tag_column == "upos" and loaded.vocabularies.tagger is None
    embedding = loaded.model.word_representation.tag_embedding
    assert embedding.weight.shape == (len(tags), 5) and loaded.config.model.tag_count == len(tags)
    # the tags change what the parser computes: same words, other tags, other arc scores
    tokens = [gold[0].tokens]
    loaded.model.eval()
    with torch.inference_mode():
        scores = []
        for sentence_tags in (gold[0].columns["upos"], ["NOUN"] * len(tokens[0])):
            batch = make_batch(encode_sentences(tokens, loaded.vocabularies, tags=[sentence_tags]), np.arange(1))
            scores.append(loaded.model.classifier.arc_scores(loaded.model.states(batch), batch.lengths))
    assert not torch.equal(scores[0], scores[1])


def test_gold_tag_parser_reads_conllu_and_refuses_bare_tokens(gold_tag_parser, tmp_path, capsys):
    run(["predict", str(gold_tag_parser), str(FIXTURES / "tiny_dep_test.conllu"), "--format", "conllu", "--output", str(tmp_path / "out.conllu")])
    parsed = read_conllu(tmp_path / "out.conllu")
    assert all(is_tree([int(head) for head in sentence.columns["head"]]) for sentence in parsed)
    text = tmp_path / "input.txt"
    text.write_text("I love Paris\n", encoding="utf-8")
    line = error_line(["predict", str(gold_tag_parser), str(text)], capsys)
    assert "'upos' tags as an input feature" in line and "model.tag_tagger" in line
    with pytest.raises(seqtransfer.SeqTransferError, match="input feature"):
        seqtransfer.load(gold_tag_parser).predict([["I", "love", "Paris"]])
    parsed = seqtransfer.load(gold_tag_parser).run  # the API takes the tags beside the tokens
    from seqtransfer.predictor import Predictor

    trees = Predictor(parsed).predict_raw([["I", "love", "Paris"]], tags=[["PRON", "VERB", "PROPN"]])
    assert len(trees[0].heads) == 3


def test_a_tagger_gives_the_parser_its_tags(tagger_run, tmp_path):
    output = tmp_path / "predicted"
    metrics = run(parser_arguments(output, 1, 1, f"model.tag_tagger={tagger_run}"))
    loaded = seqtransfer.load(output).run
    assert loaded.vocabularies.tagger == str(tagger_run.resolve()) and loaded.vocabularies.tag_column == "upos"
    assert loaded.config.model.tag_feature == "upos" and "las" in metrics["test"]
    parsed = seqtransfer.load(output).predict([["I", "love", "Paris"], ["the", "cat", "sleeps", "."]])  # raw tokens: the tagger tags them
    assert [len(sentence) for sentence in parsed] == [3, 4] and all(is_tree([head for head, _ in sentence]) for sentence in parsed)
    text = tmp_path / "input.txt"
    text.write_text("I love Paris\n", encoding="utf-8")
    run(["predict", str(output), str(text), "--output", str(tmp_path / "parsed.conllu")])
    assert read_conllu(tmp_path / "parsed.conllu")[0].tokens == ["I", "love", "Paris"]


def test_transfer_keeps_the_source_tag_input(gold_tag_parser, tmp_path):
    arguments = parser_arguments(tmp_path / "finetuned", 1)
    run(["transfer", "--source", str(gold_tag_parser), "--method", "finetune", *arguments[1:]])
    source, target = seqtransfer.load(gold_tag_parser).run, seqtransfer.load(tmp_path / "finetuned").run
    assert target.config.model.tag_feature == "upos" and target.vocabularies.tags.items[: len(source.vocabularies.tags)] == source.vocabularies.tags.items


@pytest.mark.parametrize("name", ["v0_tagger_crf", "v0_pretrand"])
def test_saved_runs_without_tags_read_none(name):
    """Runs written before input tags existed load with no tag embedding and read no tags."""
    loaded = seqtransfer.load(FIXTURES / "runs" / name).run
    assert loaded.vocabularies.tags is None and not hasattr(loaded.model.word_representation, "tag_embedding")
    assert encode_sentences([["a", "b"]], loaded.vocabularies).tag_ids is None


@pytest.mark.parametrize(
    "extra, expected", [(["model.tag_feature=deprel"], "the column this run learns to predict"), (["model.tag_feature=xyz"], "no such column"), (["model.tag_dimension=0"], "model.tag_dimension")]
)
def test_bad_tag_settings_are_one_line(extra, expected, tmp_path, capsys):
    line = error_line(parser_arguments(tmp_path / "bad", 1, 1, *extra), capsys)
    assert expected in line
    assert not (tmp_path / "bad").exists()


def test_a_parser_is_no_tagger_for_tags(tmp_path, capsys):
    run(parser_arguments(tmp_path / "parser", 1))
    line = error_line(parser_arguments(tmp_path / "bad", 1, 1, f"model.tag_tagger={tmp_path / 'parser'}"), capsys)
    assert "must be a tagging run" in line
    line = error_line(parser_arguments(tmp_path / "bad", 1, 1, f"model.tag_tagger={tmp_path / 'nothing'}"), capsys)
    assert "not a run directory" in line


def test_a_grid_method_reads_the_tags_of_a_tagger_source(tmp_path):
    files = [f"data.train={FIXTURES / 'tiny_dep_train.conllu'}", f"data.dev={FIXTURES / 'tiny_dep_dev.conllu'}", f"data.test={FIXTURES / 'tiny_dep_test.conllu'}"]
    overrides = [*TINY_PARSER, "train.max_epochs=1"]
    (tmp_path / "tags.yaml").write_text(
        f"""
name: tags
title: tagger sources
command: seqtransfer experiment run tags.yaml
overrides: {overrides}
sources:
  tagger: {{dataset: null, task: upos, overrides: {files}}}
targets:
  parse: {{dataset: null, task: dependency, overrides: {files}}}
methods:
  plain: {{scheme: scratch}}
  predicted: {{scheme: scratch, tagger: tagger, overrides: [model.tag_feature=upos]}}
reference: plain
""",
        encoding="utf-8",
    )
    records = run(["experiment", "run", str(tmp_path / "tags.yaml"), "--results", str(tmp_path / "results")])
    predicted = next(record for record in records if record["method"] == "predicted")
    tagger = next(iter((tmp_path / "results" / "sources").iterdir()))
    assert seqtransfer.load(predicted["run_directory"]).run.vocabularies.tagger == str(tagger.resolve())
    (tmp_path / "bad.yaml").write_text((tmp_path / "tags.yaml").read_text().replace("tagger: tagger,", "tagger: nobody,"), encoding="utf-8")
    with pytest.raises(seqtransfer.SeqTransferError, match="unknown tagger source 'nobody'"):
        run(["experiment", "run", str(tmp_path / "bad.yaml"), "--results", str(tmp_path / "results")])


def test_a_multitask_model_refuses_input_tags():
    from seqtransfer.config import RunConfig, apply_overrides
    from seqtransfer.workflows.multitask import load_multitask_data

    config = apply_overrides(RunConfig(), ["multitask.data.pos=tweebank:upos", "multitask.data.dp=tweebank:dependency", "model.tasks={pos: [], dp: [pos]}", "model.tag_feature=upos"])
    with pytest.raises(seqtransfer.SeqTransferError, match="for single-task models"):
        load_multitask_data(config)


def test_a_tagger_run_is_loaded_without_touching_the_random_state(tagger_run, tmp_path):
    from seqtransfer.rundir import tagger

    tagger.cache_clear()
    torch.manual_seed(11)
    expected = torch.rand(3)
    torch.manual_seed(11)
    tagger(str(tagger_run.resolve()))
    assert torch.equal(torch.rand(3), expected)


def test_same_seed_same_parser_with_a_tagger_in_one_process(tagger_run, tmp_path):
    from seqtransfer.rundir import tagger

    tagger.cache_clear()
    run(parser_arguments(tmp_path / "a", 1, 3, f"model.tag_tagger={tagger_run}"))  # loads the tagger
    run(parser_arguments(tmp_path / "b", 1, 3, f"model.tag_tagger={tagger_run}"))  # finds it loaded
    assert (tmp_path / "a" / "model.safetensors").read_bytes() == (tmp_path / "b" / "model.safetensors").read_bytes()


def test_transfer_refuses_other_tags_than_the_sources(tmp_path, capsys):
    run(parser_arguments(tmp_path / "plain", 1))
    arguments = parser_arguments(tmp_path / "bad", 1, 1, "model.tag_feature=upos")
    line = error_line(["transfer", "--source", str(tmp_path / "plain"), "--method", "finetune", *arguments[1:]], capsys)
    assert "the source run reads no input tags" in line and not (tmp_path / "bad").exists()


def test_jackknifed_training_tags_come_from_taggers_trained_on_the_other_folds(tagger_run, tmp_path):
    import json

    output = tmp_path / "jackknifed"
    run(parser_arguments(output, 1, 1, f"model.tag_tagger={tagger_run}", "model.tag_jackknife=3"))
    kept = json.loads((output / "jackknife" / "tags.json").read_text(encoding="utf-8"))
    gold = read_conllu(FIXTURES / "tiny_dep_train.conllu")
    assert kept["folds"] == 3 and kept["tokens"] == [sentence.tokens for sentence in gold]
    assert [len(tags) for tags in kept["tags"]] == [len(sentence.tokens) for sentence in gold]
    assert not list((output / "jackknife").glob("fold-*"))  # the fold runs are gone once their tags are kept
    # fold 1 (sentences 1 and 4) was tagged by the tagger's settings trained without it: the same as training that tagger by hand
    by_hand = tmp_path / "fold-1"
    run(tagger_arguments(by_hand, "data.exclude_fold=1/3"))
    expected = seqtransfer.load(by_hand).predict([gold[0].tokens, gold[3].tokens])
    assert [kept["tags"][0], kept["tags"][3]] == [list(tags) for tags in expected]
    loaded = seqtransfer.load(output).run
    assert loaded.vocabularies.tagger == str(tagger_run.resolve()) and loaded.config.model.tag_jackknife == 3
    assert "jackknifed" in (output / "log.txt").read_text(encoding="utf-8")


def test_a_resumed_run_reads_its_kept_jackknifed_tags_only_when_they_are_its_own(tagger_run, tmp_path):
    import json

    from seqtransfer.config import RunConfig
    from seqtransfer.files import write_text
    from seqtransfer.workflows.jackknife import jackknife_tags, kept_jackknife

    config = RunConfig()
    config.model.tag_tagger, config.model.tag_jackknife = str(tagger_run), 2
    gold = read_conllu(FIXTURES / "tiny_dep_train.conllu")

    class Data:
        column = "head"

        def tokens(self, split):
            return [sentence.tokens for sentence in gold]

    identity = {"folds": 2, "tagger": str(tagger_run.resolve()), "seed": config.train.seed, "tokens": Data().tokens("train")}
    kept = {**identity, "seconds": 12.5, "tags": [["X"] * len(sentence.tokens) for sentence in gold]}
    (tmp_path / "jackknife").mkdir()
    write_text(tmp_path / "jackknife" / "tags.json", json.dumps(kept))
    logged = []

    def never(*arguments, **options):
        pytest.fail("kept tags are read, not trained again")

    assert jackknife_tags(config, Data(), tmp_path, logged.append, train=never) == (kept["tags"], 12.5)  # the earlier start's time counts
    assert "read from" in logged[0]
    for key, other in (("seed", 2), ("tagger", "/elsewhere"), ("folds", 3)):  # another seed, tagger or fold count: trained again
        assert kept_jackknife(tmp_path / "jackknife", {**identity, key: other}) is None


@pytest.mark.parametrize("extra, message", [(["model.tag_jackknife=3"], "model.tag_tagger"), (["model.tag_jackknife=1"], "model.tag_jackknife"), (["data.exclude_fold=4/3"], "data.exclude_fold")])
def test_bad_jackknife_settings_are_one_line(extra, message, tmp_path, capsys):
    assert message in error_line(parser_arguments(tmp_path / "bad", 1, 1, *extra), capsys)


def test_jackknifing_a_changed_training_split_is_one_line(tagger_run, tmp_path, capsys):
    line = error_line(parser_arguments(tmp_path / "bad", 1, 1, f"model.tag_tagger={tagger_run}", "model.tag_jackknife=2", "data.train_fraction=0.5"), capsys)
    assert "changed it" in line


def test_a_training_split_with_jackknifed_tags_is_encoded_with_them():
    from seqtransfer.config import DataConfig
    from seqtransfer.corpora.task_data import load_task_data
    from seqtransfer.data.vocabulary import Vocabularies, Vocabulary

    data = load_task_data(DataConfig(dataset=None, train=str(FIXTURES / "tiny_dep_train.conllu"), dev=str(FIXTURES / "tiny_dep_dev.conllu"), task="dependency"), ("train", "dev"))
    vocabularies = Vocabularies(Vocabulary.build(["x"]), Vocabulary.build("x"), Vocabulary(["_"]), tags=Vocabulary.build(["NOUN", "X"]), tag_column="upos")
    data.train_tags = [["X"] * len(tokens) for tokens in data.tokens("train")]
    train = data.encode("train", vocabularies, with_targets=False)
    dev = data.encode("dev", vocabularies, with_targets=False)
    assert all(set(ids) == {vocabularies.tags.index["X"]} for ids in train.tag_ids)  # the kept tags, not the gold column
    assert any(vocabularies.tags.index["X"] not in ids for ids in dev.tag_ids)  # other splits: the gold column (no X in it)


def test_vocabularies_naming_a_tagger_they_were_not_given_are_one_line():
    """The run loader (rundir.read_vocabularies) gives a run's vocabularies their tagger's predictions;
    vocabularies read without it name a tagger and cannot tag: an error, not the gold column."""
    from seqtransfer.data.vocabulary import Vocabularies, Vocabulary

    vocabularies = Vocabularies(Vocabulary.build(["x"]), Vocabulary.build("x"), Vocabulary(["_"]), tags=Vocabulary.build(["NOUN"]), tag_column="upos", tagger="/somewhere/tagger")
    with pytest.raises(seqtransfer.SeqTransferError, match="no tagger was given them"):
        encode_sentences([["x"]], vocabularies)
    vocabularies.tag_predictor = lambda tokens: [["NOUN"] * len(sentence) for sentence in tokens]  # what the run loader gives
    assert encode_sentences([["x", "x"]], vocabularies).tag_ids[0].tolist() == [vocabularies.tags.index["NOUN"]] * 2
