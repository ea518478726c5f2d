"""Several labelled sources at once: joined tag sets (mapped or refused) and an ensemble's pseudo labels."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from conftest import FIXTURES, tiny_train_arguments

from seqtransfer.cli import main, run
from seqtransfer.config import DataConfig
from seqtransfer.corpora.task_data import combine, load_task_data, read_label_map
from seqtransfer.data.conll import read_conll
from seqtransfer.errors import SeqTransferError


def pos_data(name: str, mapping: dict | None = None):
    data = load_task_data(DataConfig(dataset=None, train=str(FIXTURES / "tiny_pos_train.conll"), dev=str(FIXTURES / "tiny_pos_dev.conll"), columns=["word", "pos"]), ("train", "dev"))
    if mapping:
        data.splits = {split: [replace(s, columns={**s.columns, "pos": [mapping.get(label, label) for label in s.labels("pos")]}) for s in sentences] for split, sentences in data.splits.items()}
    return replace(data, dataset=name)


def test_sources_with_other_tag_sets_are_refused_or_mapped(tmp_path):
    labels = {label for sentence in pos_data("a").splits["train"] for label in sentence.labels("pos")}
    renamed = {label: f"x-{label}" for label in labels}
    with pytest.raises(SeqTransferError, match="the labels of a differ from the other datasets'.*data.label_map=FILE"):
        combine([pos_data("a"), pos_data("b", renamed)])
    map_file = tmp_path / "map.yaml"
    map_file.write_text("b:\n" + "".join(f"  {new}: {old}\n" for old, new in renamed.items()), encoding="utf-8")
    joined = combine([pos_data("a"), pos_data("b", renamed)], read_label_map(str(map_file)), str(map_file))
    assert {label for sentence in joined.splits["train"] for label in sentence.labels("pos")} == labels
    map_file.write_text("b: [NN]\n", encoding="utf-8")
    with pytest.raises(SeqTransferError, match="must map labels to labels"):
        read_label_map(str(map_file))


def test_an_ensemble_of_sources_writes_pseudo_labels(tiny_run, tmp_path):
    second = tmp_path / "second"
    run([*tiny_train_arguments(second, epochs=2, seed=2)])
    text = tmp_path / "target.txt"
    text.write_text("Peter lives in Berlin\nMary visited Paris today\nJohn works for Google\n", encoding="utf-8")
    for combination in ("average", "vote"):
        output = tmp_path / f"{combination}.conll"
        result = run(["pseudolabel", str(tiny_run), str(second), "--unlabeled", str(text), "--combination", combination, "--top-n", "2", "--output", str(output)])
        sentences = read_conll(output, ["word", "ner"], separator="tab")
        assert result["sentences"] == 2 and len(sentences) == 2 and all(sentence.labels("ner") for sentence in sentences)
    metrics = run(
        [
            "train",
            "--train",
            str(tmp_path / "average.conll"),
            "--dev",
            str(FIXTURES / "tiny_ner_dev.conll"),
            "--columns",
            "word,ner",
            "--scheme",
            "iob2",
            "--epochs",
            "1",
            "--output",
            str(tmp_path / "target-model"),
            "--quiet",
            "model.embeddings=null",
            "model.word_dimension=8",
            "model.char_dimension=6",
            "model.char_hidden=8",
            "model.hidden=16",
            "train.threads=1",
        ]
    )
    assert metrics["dev"] is not None


def test_runs_in_different_tag_sets_are_refused_as_an_ensemble_or_teacher(tiny_run, tmp_path, capsys):
    from seqtransfer.data.vocabulary import Vocabulary
    from seqtransfer.rundir import load_run
    from seqtransfer.transfer.distillation import Distillation

    pos_run = tmp_path / "pos"
    run(
        [
            "train",
            "--train",
            str(FIXTURES / "tiny_pos_train.conll"),
            "--dev",
            str(FIXTURES / "tiny_pos_dev.conll"),
            "--columns",
            "word,pos",
            "--epochs",
            "1",
            "--output",
            str(pos_run),
            "--quiet",
            "model.embeddings=null",
            "model.word_dimension=8",
            "model.char_dimension=6",
            "model.char_hidden=8",
            "model.hidden=16",
            "train.threads=1",
        ]
    )
    text = tmp_path / "target.txt"
    text.write_text("Peter lives in Berlin\n", encoding="utf-8")
    capsys.readouterr()
    for combination in ("average", "vote"):
        assert main(["pseudolabel", str(tiny_run), str(pos_run), "--unlabeled", str(text), "--combination", combination, "--output", str(tmp_path / "pseudo.conll")]) == 2
        error = capsys.readouterr().err
        assert "the runs label in different tag sets" in error and "data.label_map=FILE" in error and not (tmp_path / "pseudo.conll").exists()
    teacher = load_run(pos_run)
    with pytest.raises(SeqTransferError, match="the teacher labels in another tag set"):
        Distillation([teacher], [["Peter"]], load_run(tiny_run).vocabularies.labels, temperature=2.0, weight=1.0)
    fewer = Vocabulary(teacher.vocabularies.labels.items[1:])  # a student without one of the teacher's labels: dropped, said
    with pytest.warns(UserWarning, match=f"the teacher's labels {re.escape(teacher.vocabularies.labels.items[0])} are not this task's"):
        Distillation([teacher], [["Peter"]], fewer, temperature=2.0, weight=1.0)


def test_parts_may_name_their_own_task_and_ptb_tags_map_to_upos(data_root):
    upos = {"ADJ", "ADP", "ADV", "AUX", "CCONJ", "DET", "INTJ", "NOUN", "NUM", "PART", "PRON", "PROPN", "PUNCT", "SCONJ", "SYM", "VERB", "X"}
    config = DataConfig(dataset="tweebank:upos+conll2000:pos", label_map="experiments/configs/ptb_to_upos.yaml")
    data = load_task_data(config, ("train", "dev"))
    assert data.dataset == "tweebank+conll2000" and data.task == "upos"
    assert len(data.splits["train"]) == 1639 + 8043
    assert {label for sentence in data.splits["train"] for label in sentence.labels("upos")} <= upos
    with pytest.raises(SeqTransferError, match="the labels of (tweebank|conll2000) differ"):
        load_task_data(replace(config, label_map=None), ("train",))


def test_one_dataset_is_read_in_another_datasets_tag_set(data_root, tmp_path):
    config = DataConfig(dataset="conll2000", task="chunk", label_map="experiments/configs/annealing_labels.yaml", metric="accuracy")
    mapped = {label for sentence in load_task_data(config, ("train",)).gold("train") for label in sentence}
    tchunk = {label for sentence in load_task_data(DataConfig(dataset="tchunk", task="chunk"), ("train",)).gold("train") for label in sentence}
    assert "b-np" in mapped and not any(label.isupper() for label in mapped) and mapped - tchunk == {"i-prt"}  # TChunk's training tweets have no i-prt
    plain = {label for sentence in load_task_data(replace(config, label_map=None, metric=None), ("train",)).gold("train") for label in sentence}
    assert "B-NP" in plain
    chained = tmp_path / "chained.yaml"  # a map whose second application would change its result: each part is mapped once
    chained.write_text("tweebank:\n  SYM: X\n  X: INTJ\n", encoding="utf-8")
    joined = load_task_data(DataConfig(dataset="tweebank:upos+ud_ewt:upos", label_map=str(chained)), ("train",))
    tweets, web = (load_task_data(DataConfig(dataset=name, task="upos"), ("train",)).gold("train") for name in ("tweebank", "ud_ewt"))
    others = sum(sentence.count("X") for sentence in joined.gold("train"))
    assert others == sum(sentence.count("SYM") for sentence in tweets) + sum(sentence.count("X") for sentence in web) > 0  # tweets' SYM -> X, not on to INTJ
