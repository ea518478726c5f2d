"""The biaffine parser: tree decoding, CoNLL 2018 attachment scores, train -> save -> load -> parse."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
import torch
from conftest import FIXTURES, TINY_MODEL

import seqtransfer
from seqtransfer.cli import main, run
from seqtransfer.config import ModelConfig
from seqtransfer.data.attachment import attachment_scores
from seqtransfer.data.conllu import read_conllu
from seqtransfer.data.trees import Tree
from seqtransfer.models.parser import BiaffineParser
from seqtransfer.models.spanning_tree import maximum_spanning_tree

TINY_PARSER = [*TINY_MODEL, "model.parser_hidden=16", "model.parser_layers=2", "model.arc_hidden=12", "model.relation_hidden=6"]


def parser_arguments(output, epochs: int = 3, seed: int = 1, *extra: str) -> list[str]:
    return [
        "train",
        "--train",
        str(FIXTURES / "tiny_dep_train.conllu"),
        "--dev",
        str(FIXTURES / "tiny_dep_dev.conllu"),
        "--test",
        str(FIXTURES / "tiny_dep_test.conllu"),
        "--task",
        "dependency",
        "--seed",
        str(seed),
        "--epochs",
        str(epochs),
        "--output",
        str(output),
        "--quiet",
        *TINY_PARSER,
        *extra,
    ]


@pytest.fixture(scope="module")
def parser_run(tmp_path_factory):
    output = tmp_path_factory.mktemp("parser") / "run"
    run(parser_arguments(output))
    return output


def is_tree(heads) -> bool:
    for start in range(1, len(heads) + 1):
        seen, node = set(), start
        while node != 0:
            if node in seen:
                return False
            seen.add(node)
            node = heads[node - 1]
    return True


def brute_force_tree(scores: np.ndarray, single_root: bool) -> tuple[int, ...]:
    count = scores.shape[0]
    best, best_heads = -np.inf, None
    for heads in itertools.product(range(count + 1), repeat=count):
        if any(head == position + 1 for position, head in enumerate(heads)) or not is_tree(heads):
            continue
        if single_root and heads.count(0) != 1:
            continue
        total = sum(scores[position, head] for position, head in enumerate(heads))
        if total > best:
            best, best_heads = total, heads
    return best_heads


@pytest.mark.parametrize("single_root", [True, False])
@pytest.mark.parametrize("count", [1, 2, 3, 4, 5])
def test_spanning_tree_equals_brute_force(count, single_root):
    generator = np.random.default_rng(count)
    for _ in range(20):
        scores = generator.normal(size=(count, count + 1)) * 3
        scores[:, 0] += 2.0  # make several roots tempting, so that the single-root search is exercised
        assert tuple(maximum_spanning_tree(scores, single_root)) == brute_force_tree(scores, single_root)


def test_attachment_scores_hand_computed():
    gold = [Tree((2, 0, 2), ("nsubj", "root", "obj")), Tree((0, 1), ("root", "acl:relcl"))]
    predicted = [Tree((2, 0, 1), ("nsubj", "root", "obj")), Tree((0, 1), ("root", "acl"))]
    scores = attachment_scores(gold, predicted)
    # 5 tokens: heads right for 4 (token 3 of sentence 1 wrong); acl vs acl:relcl counts as right (universal part).
    assert scores["uas"] == pytest.approx(80.0) and scores["las"] == pytest.approx(80.0) and scores["tokens"] == 5
    predicted[1] = Tree((0, 1), ("root", "nmod"))
    scores = attachment_scores(gold, predicted)
    assert scores["uas"] == pytest.approx(80.0) and scores["las"] == pytest.approx(60.0)
    assert scores["per_class"]["acl"]["recall"] == 0.0 and scores["per_class"]["nsubj"]["f1"] == 100.0


def test_arc_scores_mask_padding_and_self_loops():
    config = ModelConfig(embeddings=None, word_dimension=4, char_dimension=3, char_hidden=4, parser_hidden=6, parser_layers=1, arc_hidden=5, relation_hidden=3)
    parser = BiaffineParser(config, word_count=10, character_count=10, label_count=4)
    states = torch.randn(2, 4, 6)  # B=2, T=3 (+ ROOT)
    scores = parser.classifier.arc_scores(states, torch.tensor([3, 1]))
    assert scores.shape == (2, 3, 4)
    assert torch.isinf(scores[0].diagonal(offset=1)).all()  # token i+1 never heads itself
    assert torch.isfinite(scores[1, 0, 0]) and torch.isinf(scores[1, 0, 1:]).all()  # one token: only the root can head it


def test_parser_run_directory_and_round_trip(parser_run):
    metrics = json.loads((parser_run / "metrics.json").read_text())
    assert metrics["metric"] == "attachment" and 0 <= metrics["test"]["las"] <= metrics["test"]["uas"] <= 100
    written = read_conllu(parser_run / "predictions" / "test.conllu")
    gold = read_conllu(FIXTURES / "tiny_dep_test.conllu")
    assert [s.tokens for s in written] == [s.tokens for s in gold]
    assert [s.comments for s in written] == [s.comments for s in gold] and written[0].columns["upos"] == gold[0].columns["upos"]
    predicted = seqtransfer.load(parser_run).predict([s.tokens for s in gold])
    assert [[str(head) for head, _ in sentence] for sentence in predicted] == [s.columns["head"] for s in written]
    assert [[relation for _, relation in sentence] for sentence in predicted] == [s.columns["deprel"] for s in written]
    assert all(is_tree([head for head, _ in sentence]) for sentence in predicted)


def test_single_root_decoding_gives_one_root(parser_run):
    config = seqtransfer.load(parser_run).run.config
    assert config.model.single_root is True  # the training trees have one root each
    parsed = seqtransfer.load(parser_run).predict([["the", "big", "cat", "likes", "Paris", "."], ["I"], ["Sue", "is", "tall", "and", "I", "am", "too"]])
    assert all([head for head, _ in sentence].count(0) == 1 for sentence in parsed)


def test_scoring_view_counts_las_tokens(parser_run):
    """predictions/test.conll labels tokens relation@head: token accuracy there equals LAS."""
    lines = [line.split(" ") for line in (parser_run / "predictions" / "test.conll").read_text().splitlines() if line]
    accuracy = 100.0 * sum(row[1] == row[2] for row in lines) / len(lines)
    metrics = json.loads((parser_run / "metrics.json").read_text())
    assert accuracy == pytest.approx(metrics["test"]["las"])


def test_evaluate_rescores_like_training(parser_run):
    saved = json.loads((parser_run / "metrics.json").read_text())["test"]
    scores = run(["evaluate", str(parser_run), "--file", str(FIXTURES / "tiny_dep_test.conllu"), "--task", "dependency"])
    assert scores["las"] == pytest.approx(saved["las"]) and scores["uas"] == pytest.approx(saved["uas"])
    assert (parser_run / "predictions" / "evaluate-tiny_dep_test.conllu.conllu").is_file()


def test_predict_command_writes_conllu(parser_run, tmp_path):
    text = tmp_path / "input.txt"
    text.write_text("I love Paris\nthe cat sleeps .\n", encoding="utf-8")
    run(["predict", str(parser_run), str(text), "--output", str(tmp_path / "parsed.conllu")])
    parsed = read_conllu(tmp_path / "parsed.conllu")
    assert [sentence.tokens for sentence in parsed] == [["I", "love", "Paris"], ["the", "cat", "sleeps", "."]]
    assert all(is_tree([int(head) for head in sentence.columns["head"]]) for sentence in parsed)
    run(["predict", str(parser_run), str(FIXTURES / "tiny_dep_train.conllu"), "--format", "conllu", "--output", str(tmp_path / "again.conllu")])
    again, original = read_conllu(tmp_path / "again.conllu"), read_conllu(FIXTURES / "tiny_dep_train.conllu")
    assert again[0].extra_lines == original[0].extra_lines and again[0].columns["lemma"] == original[0].columns["lemma"]


def test_same_seed_same_parser(tmp_path):
    first = run(parser_arguments(tmp_path / "a", epochs=2, seed=5))
    second = run(parser_arguments(tmp_path / "b", epochs=2, seed=5))
    assert first["test"] == second["test"]
    assert (tmp_path / "a" / "model.safetensors").read_bytes() == (tmp_path / "b" / "model.safetensors").read_bytes()


@pytest.mark.parametrize("method", ["finetune", "features"])
def test_parser_transfer(parser_run, tmp_path, method):
    arguments = parser_arguments(tmp_path / method, epochs=1)
    arguments = ["transfer", "--source", str(parser_run), "--method", method, *arguments[1:]]
    metrics = run(arguments)
    assert metrics["scheme"] == method and "las" in metrics["test"]
    source = seqtransfer.load(parser_run).run.model.state_dict()
    target = seqtransfer.load(tmp_path / method).run.model.state_dict()
    copied = [name for name in source if name.startswith(("word_representation.", "feature_extractor."))]
    assert "feature_extractor.root" in copied and len(copied) > 10
    if method == "features":  # frozen: the source's weights unchanged; the classifier trained
        assert all(torch.equal(source[name][: len(target[name])], target[name][: len(source[name])]) for name in copied)
        assert not torch.equal(source["classifier.arc_scorer.weight"], target["classifier.arc_scorer.weight"])


def test_pretrand_does_not_apply_to_parsing(parser_run, tmp_path, capsys):
    from seqtransfer.cli import main

    arguments = parser_arguments(tmp_path / "pretrand", epochs=1)
    code = main(["transfer", "--source", str(parser_run), "--method", "pretrand", *arguments[1:]])
    error = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(error) == 1 and "pretrand" in error[0] and "dependency" in error[0]
    assert not (tmp_path / "pretrand").exists()


def error_line(arguments: list[str], capsys) -> str:
    from seqtransfer.cli import main

    code = main(arguments)
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "Traceback" not in captured.err, captured
    return lines[0]


GOOD_SENTENCE = ["1\tI\t_\tPRON\t_\t_\t2\tnsubj\t_\t_", "2\tsee\t_\tVERB\t_\t_\t0\troot\t_\t_", "3\tit\t_\tPRON\t_\t_\t2\tobj\t_\t_"]


def broken_file(path, defect: str):
    lines = list(GOOD_SENTENCE)
    if defect == "head out of range":
        lines[1] = lines[1].replace("\t0\troot", "\t7\troot")
    elif defect == "non-integer head":
        lines[1] = lines[1].replace("\t0\troot", "\tx\troot")
    elif defect == "cycle":  # 2 -> 3 -> 2, token 1 is the root
        lines[0] = lines[0].replace("\t2\tnsubj", "\t0\troot")
        lines[1] = lines[1].replace("\t0\troot", "\t3\tccomp")
    elif defect == "no root":
        lines[1] = lines[1].replace("\t0\troot", "\t1\tdep")
        lines[0] = lines[0].replace("\t2\tnsubj", "\t3\tnsubj")
    elif defect == "missing relation":
        lines[1] = lines[1].replace("\t0\troot", "\t0\t_")
    elif defect == "unicode digit head":
        lines[1] = lines[1].replace("\t0\troot", "\t\u00b2\troot")
    path.write_text("# sent_id = 1\n" + "\n".join(lines) + "\n\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "defect,expected",
    [
        ("head out of range", "out of range"),
        ("non-integer head", "not an integer"),
        ("cycle", "cycle"),
        ("no root", "no root"),
        ("missing relation", "no DEPREL"),
        ("unicode digit head", "not an integer"),
    ],
)
def test_broken_gold_trees_are_one_clear_line(defect, expected, tmp_path, capsys):
    bad = broken_file(tmp_path / "bad.conllu", defect)
    arguments = ["train", "--train", str(bad), "--dev", str(FIXTURES / "tiny_dep_dev.conllu"), "--task", "dependency", "--output", str(tmp_path / "run"), "--quiet", *TINY_PARSER]
    message = error_line(arguments, capsys)
    assert expected in message and f"{bad}:" in message  # file and line
    assert not (tmp_path / "run").exists()


def test_error_names_the_token_line(tmp_path, capsys):
    bad = broken_file(tmp_path / "bad.conllu", "non-integer head")  # token 2 is on line 3 (after the comment)
    message = error_line(["train", "--train", str(bad), "--task", "dependency", "--output", str(tmp_path / "run"), "--quiet"], capsys)
    assert f"{bad}:3" in message


def test_parser_run_asked_to_tag_and_tagger_asked_to_parse(parser_run, tiny_run, capsys):
    message = error_line(["evaluate", str(parser_run), "--file", str(FIXTURES / "tiny_ner_test.conll"), "--columns", "word,ner", "--task", "ner"], capsys)
    assert "dependency model" in message and "tagging" in message
    message = error_line(["evaluate", str(tiny_run), "--file", str(FIXTURES / "tiny_dep_test.conllu"), "--task", "dependency"], capsys)
    assert "tagging model" in message and "dependency" in message


def test_dependency_task_needs_conllu(tmp_path, capsys):
    message = error_line(["train", "--train", str(FIXTURES / "tiny_pos_train.conll"), "--columns", "word,pos", "--task", "dependency", "--output", str(tmp_path / "run"), "--quiet"], capsys)
    assert "CoNLL-U" in message


def test_analyze_transfer_counts_labelled_attachment(parser_run, tmp_path):
    from seqtransfer.analysis.negative_transfer import compare_runs

    other = tmp_path / "other"
    run(parser_arguments(other, epochs=1, seed=9))
    comparison = compare_runs(other, parser_run, split="test")
    las = [json.loads((path / "metrics.json").read_text())["test"]["las"] for path in (other, parser_run)]
    assert comparison.overall.gain == pytest.approx(las[1] - las[0])
    relations = {relation for s in read_conllu(FIXTURES / "tiny_dep_test.conllu") for relation in s.columns["deprel"]}
    assert {counts.label for counts in comparison.per_class} == relations


def test_ensembles_refuse_parsers_with_one_line(parser_run, tmp_path):
    from seqtransfer.corpora.task_data import load_task_data
    from seqtransfer.errors import SeqTransferError
    from seqtransfer.workflows.ensemble import build_ensemble

    data = load_task_data(seqtransfer.load(parser_run).run.config.data, splits=("test",))
    with pytest.raises(SeqTransferError, match="ensembles average label distributions; this dependency run has none"):
        build_ensemble([parser_run, parser_run], data, tmp_path / "ensemble")


def test_several_roots_in_training_trees_allow_several_roots(tmp_path):
    """Tweebank as released: a tweet may hold several trees; decoding then allows several roots."""
    two_trees = "\n".join(["1\tlol\t_\tINTJ\t_\t_\t0\troot\t_\t_", "2\tI\t_\tPRON\t_\t_\t3\tnsubj\t_\t_", "3\twin\t_\tVERB\t_\t_\t0\troot\t_\t_"])
    train = tmp_path / "train.conllu"
    train.write_text((FIXTURES / "tiny_dep_train.conllu").read_text() + two_trees + "\n\n", encoding="utf-8")
    run(["train", "--train", str(train), "--dev", str(FIXTURES / "tiny_dep_dev.conllu"), "--task", "dependency", "--epochs", "1", "--output", str(tmp_path / "run"), "--quiet", *TINY_PARSER])
    assert seqtransfer.load(tmp_path / "run").run.config.model.single_root is False
    assert seqtransfer.load(tmp_path / "run").run.model.single_root is False


def test_biaffine_scores_are_the_bilinear_forms():
    from seqtransfer.models.biaffine import Biaffine

    torch.manual_seed(0)
    scorer = Biaffine(3, 4, 5)
    torch.nn.init.normal_(scorer.weight)
    left, right = torch.randn(2, 6, 3), torch.randn(2, 6, 4)
    expected = torch.einsum("bni,oij,bnj->bno", torch.cat([left, torch.ones(2, 6, 1)], -1), scorer.weight, torch.cat([right, torch.ones(2, 6, 1)], -1))
    assert torch.allclose(scorer.aligned(left, right), expected, atol=1e-5)
    pairwise = Biaffine(3, 3, 1)
    torch.nn.init.normal_(pairwise.weight)
    heads = torch.randn(2, 7, 3)
    expected = torch.einsum("bxi,ij,byj->bxy", torch.cat([left, torch.ones(2, 6, 1)], -1), pairwise.weight[0], torch.cat([heads, torch.ones(2, 7, 1)], -1))
    assert torch.allclose(pairwise.pairwise(left, heads), expected, atol=1e-5)


def test_a_parser_trains_with_selected_and_weighted_sentences(tmp_path):
    target = tmp_path / "target.txt"
    target.write_text("the dog sleeps\nmy cat eats fish\n", encoding="utf-8")
    output = tmp_path / "weighted"
    run(parser_arguments(output, 1, 1, f"data.select_like={target}", "data.select_top=80", "data.select_weighting=true"))
    log = (output / "log.txt").read_text(encoding="utf-8")
    assert "selection: kept" in log and "weighted by likeness" in log and (output / "metrics.json").is_file()


@pytest.mark.parametrize("settings, message", [(["transfer.distill_from=[RUN]"], "teaches taggers and sentence classifiers, not a dependency model")])
def test_what_a_parser_cannot_train_with_is_refused_before_its_run_directory_is_written(parser_run, tmp_path, capsys, settings, message):
    """Distillation (label distributions: taggers and classifiers only). A fine-tuned encoder parses
    (tests/test_encoder_head_pairs.py)."""
    pytest.importorskip("transformers")
    from test_encoders import save_tiny_encoder

    encoder = save_tiny_encoder(tmp_path / "encoder")
    settings = [setting.replace("RUN", str(parser_run)).replace("ENCODER", str(encoder)) for setting in settings]
    capsys.readouterr()  # saving the encoder's weights shows a progress bar
    code = main(parser_arguments(tmp_path / "run", 1, 1, *settings))
    error = capsys.readouterr().err
    assert code == 2 and message in error and len(error.strip().splitlines()) == 1 and not (tmp_path / "run").exists()
