"""`seqtransfer unify`: gold columns kept, missing ones predicted by the right runs, a summary; training on the result."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import DATA_ROOT, FIXTURES, TINY_MODEL

from seqtransfer.cli import main
from seqtransfer.data.conllu import read_conllu
from seqtransfer.errors import SeqTransferError
from seqtransfer.workflows.unify import unify

POS = {"train": str(FIXTURES / "tiny_pos_train.conll"), "dev": str(FIXTURES / "tiny_pos_dev.conll"), "columns": ["word", "pos"], "scheme": "none"}
NER = {"train": str(FIXTURES / "tiny_ner_train.conll"), "dev": str(FIXTURES / "tiny_ner_dev.conll"), "columns": ["word", "ner"], "scheme": "iob2"}
NER_RUN = {**NER, "test": str(FIXTURES / "tiny_ner_test.conll")}  # its run has a test score
DP = {"train": str(FIXTURES / "tiny_dep_train.conllu"), "dev": str(FIXTURES / "tiny_dep_dev.conllu"), "task": "dependency"}
SMALL = ["model.parser_hidden=8", "model.parser_layers=1", "model.arc_hidden=6", "model.relation_hidden=4", "model.projection=3"]


def mono_run(tmp_path, name: str, files: dict) -> str:
    output = tmp_path / name
    arguments = ["train", "--train", files["train"], "--dev", files["dev"], "--epochs", "1", "--output", str(output), "--quiet", *TINY_MODEL, *SMALL]
    if "columns" in files:
        arguments += ["--columns", ",".join(files["columns"])]
    if "task" in files:
        arguments += ["--task", files["task"]]
    if "test" in files:
        arguments += ["--test", files["test"]]
    assert main(arguments) == 0
    return str(output)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mono")
    return {"pos": mono_run(folder, "pos", POS), "ner": mono_run(folder, "ner", NER_RUN), "dp": mono_run(folder, "dp", DP)}


def test_unify_keeps_gold_fills_the_rest_and_counts_what_it_filled(tmp_path, runs):
    summary = unify({"pos": POS, "ner": NER, "dp": DP}, runs, tmp_path / "unified", log=lambda line: None)
    sentences = read_conllu(tmp_path / "unified" / "train.conllu")
    assert (tmp_path / "unified" / "train.conllu").read_text().startswith("# global.columns = ID FORM POS NER HEAD DEPREL\n")
    assert len(sentences) == 3 + 5 + 6 == summary["splits"]["train"]["sentences"]
    assert all({"pos", "ner", "head", "deprel"} <= set(sentence.columns) for sentence in sentences)
    from seqtransfer.data.conll import read_conll

    ner_gold = {tuple(sentence.tokens): sentence.columns["ner"] for sentence in read_conll(NER["train"], ["word", "ner"])}
    for sentence in sentences:
        comments = dict(comment.split(" = ", 1) for comment in sentence.comments if " = " in comment)
        if "ner" in comments["gold"].split():
            assert sentence.columns["ner"] == ner_gold[tuple(sentence.tokens)]
        assert set(comments["gold"].split()) | set(comments["predicted"].split()) - {"-"} == {"pos", "ner", "dp"}
    assert summary["splits"]["train"]["predicted_sentences"] == {"pos": 11, "ner": 9, "dp": 8}
    assert json.loads((tmp_path / "unified" / "summary.json").read_text()) == summary
    ner_test = json.loads((Path(runs["ner"]) / "metrics.json").read_text())["test"]["f1"]
    assert summary["tasks"]["ner"]["filler_score"] == {"metric": "span_f1", "test": ner_test}  # the filler's own test score, read from its run
    assert summary["tasks"]["pos"]["filler_score"] is None  # a run trained without a test split


def test_unify_refuses_a_run_of_the_wrong_task(tmp_path, runs):
    with pytest.raises(SeqTransferError, match="is a tagging model, but custom/dependency is a dependency task"):
        unify({"pos": POS, "dp": DP}, {"pos": runs["pos"], "dp": runs["ner"]}, tmp_path / "out", log=lambda line: None)
    with pytest.raises(SeqTransferError, match="never uses"):
        unify({"pos": POS, "ner": NER}, {"pos": runs["pos"], "ner": runs["pos"]}, tmp_path / "out", log=lambda line: None)
    chunks = tmp_path / "chunks.conll"  # chunk tags share only "O" with the NER run's entity tags: not its task
    chunks.write_text(re.sub(r"\t[BI]-[a-z-]+", lambda match: match.group(0)[:3] + "NP", (FIXTURES / "tiny_ner_train.conll").read_text()))
    with pytest.raises(SeqTransferError, match=r"never uses: 1 of its \d+ labels are this task's"):
        unify({"pos": POS, "ck": {**NER, "train": str(chunks), "columns": ["word", "chunk"]}}, {"pos": runs["pos"], "ck": runs["ner"]}, tmp_path / "out", log=lambda line: None)
    with pytest.raises(SeqTransferError, match="task ner has only one"):
        unify({"pos": POS, "ner": NER}, {"pos": runs["pos"]}, tmp_path / "out", log=lambda line: None)
    assert not (tmp_path / "out" / "train.conllu").exists()


@pytest.mark.skipif(not (DATA_ROOT / "tweebank_v2").is_dir(), reason="shared datasets not found")  # its first case reads TweeBank
def test_cli_unify_error_is_one_line(tmp_path, runs, capsys):
    code = main(["unify", "--data", "dp=tweebank:dependency", "--run", f"dp={runs['ner']}", "--output", str(tmp_path / "out")])
    error = capsys.readouterr().err
    assert code == 2 and "is a tagging model" in error and len(error.strip().splitlines()) == 1
    code = main(["unify", "--preset", "tweetall", "--batch-size", "0", "--output", str(tmp_path / "zero")])
    error = capsys.readouterr().err
    assert code == 2 and "--batch-size: must be at least 1, got 0" in error and len(error.strip().splitlines()) == 1


def test_a_models_chunk_task_reads_the_presets_ck_column(tmp_path, runs):
    """The presets name their tasks POS, CK, NER, DP (columns pos, ck, ...); the documented config
    says chunk: it reads the ck column, as upos reads pos."""
    from seqtransfer.workflows.unify import load_task, unified_sentences, with_task_columns

    unify({"CK": NER, "POS": POS}, {"CK": runs["ner"], "POS": runs["pos"]}, tmp_path / "unified", log=lambda line: None)
    sentences = unified_sentences(tmp_path / "unified")
    assert {"ck", "pos"} <= set(sentences[0].columns)
    tasks = with_task_columns(sentences, {"chunk": load_task(NER, None, ("train", "dev")), "upos": load_task(POS, None, ("train", "dev"))}, tmp_path / "unified")
    assert [sentence.columns["ner"] for sentence in tasks["chunk"].splits["train"]] == [sentence.columns["ck"] for sentence in sentences]
    with pytest.raises(SeqTransferError, match="no column for task entities"):
        with_task_columns(sentences, {"entities": load_task(NER, None, ("train", "dev"))}, tmp_path / "unified")


def test_training_on_unified_data_trains_every_task_at_every_step(tmp_path, runs, capsys):
    import yaml

    # task names that are not the files' column names (as the presets' POS, CK, NER, DP)
    unify({"Tag": POS, "Entity": NER, "Tree": DP}, {"Tag": runs["pos"], "Entity": runs["ner"], "Tree": runs["dp"]}, tmp_path / "unified", log=lambda line: None)
    config = tmp_path / "config.yaml"
    config.write_text(
        yaml.safe_dump({"model": {"tasks": {"Tag": [], "Entity": ["Tag"], "Tree": ["Tag"]}}, "multitask": {"data": {"Tag": POS, "Entity": NER, "Tree": DP}, "unified": str(tmp_path / "unified")}})
    )
    assert main(["train", "--config", str(config), "--output", str(tmp_path / "run"), "--epochs", "2", "--quiet", *TINY_MODEL, *SMALL]) == 0
    log = (tmp_path / "run" / "log.txt").read_text()
    assert "Tag <- custom/pos (14 sentences)" in log and "1 batches per epoch" in log  # 14 unified sentences, one stream
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert set(metrics["tasks"]) == {"Tag", "Entity", "Tree"} and "dev" in metrics["tasks"]["Entity"]  # dev scored on the gold files


def test_filled_labels_are_scored_against_a_gold_column_of_their_own_file(tmp_path, runs):
    """A NER file that also holds POS tags (as CoNLL-2003): the POS labels filled on its sentences
    are scored against that column, with the filler's metric; a column of another tag set is not."""

    def tag(word: str) -> str:
        return "NNP" if word[:1].isupper() else "VBZ"

    def with_pos_column(name: str) -> str:
        lines = []
        for line in (FIXTURES / name).read_text().splitlines():
            word, _, entity = line.partition("\t")
            lines.append(f"{word}\t{tag(word)}\t{entity}" if word else "")
        (tmp_path / name).write_text("\n".join(lines) + "\n")
        return str(tmp_path / name)

    summary = unify(
        {"pos": POS, "ner": {**NER, "train": with_pos_column("tiny_ner_train.conll"), "dev": with_pos_column("tiny_ner_dev.conll"), "columns": ["word", "pos", "ner"]}},
        {"pos": runs["pos"], "ner": runs["ner"]},
        tmp_path / "unified",
        log=lambda line: None,
    )
    checks = summary["splits"]["train"]["checks"]
    assert [(check["task"], check["column"], check["metric"]) for check in checks] == [("pos", "pos", "accuracy")]  # the NER filler: no other NER column
    filled = [sentence for sentence in read_conllu(tmp_path / "unified" / "train.conllu") if "pos" not in dict(comment.split(" = ", 1) for comment in sentence.comments)["gold"].split()]
    gold = [tag(word) for sentence in filled for word in sentence.tokens]
    predicted = [label for sentence in filled for label in sentence.columns["pos"]]
    assert checks[0]["sentences"] == len(filled) == 5
    assert checks[0]["score"] == pytest.approx(100.0 * sum(g == p for g, p in zip(gold, predicted)) / len(gold))
    assert checks[0]["unknown_labels"] == 0.0  # NNP and VBZ are both among the POS run's labels
