"""Transfer schemes: each copies, freezes and trains exactly the parameters it claims."""

from __future__ import annotations

import shutil

import pytest
import torch
from conftest import FIXTURES, TINY_MODEL

from seqtransfer.cli import main, run
from seqtransfer.config import RunConfig, apply_overrides
from seqtransfer.corpora.task_data import load_task_data
from seqtransfer.data.batching import encode_sentences
from seqtransfer.errors import SeqTransferError
from seqtransfer.rundir import load_run
from seqtransfer.training.loop import ShuffledBatches, train_epoch
from seqtransfer.training.optimizers import make_optimizer
from seqtransfer.training.vocabularies import prepare_vocabularies
from seqtransfer.transfer.schemes import SCHEMES, set_trainable
from seqtransfer.workflows.resolution import model_architecture
from seqtransfer.workflows.sources import adopt_source_settings, load_source
from seqtransfer.workflows.train import build_target_model


def target_config(scheme: str, source) -> RunConfig:
    config = apply_overrides(RunConfig(), [f"transfer.scheme={scheme}", "model.random_hidden=6", *TINY_MODEL])
    config.data.dataset = None
    config.data.train, config.data.dev = str(FIXTURES / "tiny_pos_train.conll"), str(FIXTURES / "tiny_pos_dev.conll")
    config.data.columns = ["word", "pos"]
    config.transfer.source = str(source)
    return config


def build(scheme_name: str, source):
    config = target_config(scheme_name, source)
    scheme = SCHEMES[scheme_name]
    loaded_source = load_source(config, scheme)
    if loaded_source:
        adopt_source_settings(config, loaded_source)
    data = load_task_data(config.data)
    config.model.architecture = model_architecture(scheme, data)
    vocabularies, matrix = prepare_vocabularies(config, data, lambda message: None, base=loaded_source.vocabularies if loaded_source else None)
    model = build_target_model(config, scheme, vocabularies, matrix, loaded_source, lambda message: None)
    train = encode_sentences(data.tokens("train"), vocabularies, data.labels("train"))
    return config, scheme, model, train


TRAINING_SCHEMES = [name for name, scheme in SCHEMES.items() if scheme.phases(RunConfig().transfer)]  # source_only trains nothing (its own test below)


@pytest.mark.parametrize("scheme_name", TRAINING_SCHEMES)
def test_scheme_copies_what_it_transfers(scheme_name, tiny_run):
    _, scheme, model, _ = build(scheme_name, tiny_run)
    source_state = load_run(tiny_run).model.state_dict()
    target_state = model.state_dict()
    for name, tensor in source_state.items():
        if name.startswith(scheme.transferred) and scheme.transferred:
            assert torch.equal(target_state[name][: tensor.shape[0]], tensor), name
    # Embedding rows of the source vocabulary keep their indices; target-only words are appended.
    if scheme.uses_source:
        source_words = load_run(tiny_run).vocabularies.words.items
        assert model.word_representation.word_embedding.weight.shape[0] > len(source_words)


@pytest.mark.parametrize("scheme_name", TRAINING_SCHEMES)
def test_scheme_trains_exactly_its_claimed_parameters(scheme_name, tiny_run):
    config, scheme, model, train = build(scheme_name, tiny_run)
    for phase in scheme.phases(config.transfer):
        trainable = set(set_trainable(model, phase.trainable))
        before = {name: tensor.clone() for name, tensor in model.state_dict().items()}
        groups = [{"params": [p for p in model.parameters() if p.requires_grad]}]
        train_epoch(model, make_optimizer(groups, config.train), ShuffledBatches(train, config.train.batch_size, config.train.seed), config.train, epoch=1, show_progress=False)
        after = model.state_dict()
        changed = {name for name, tensor in after.items() if not torch.equal(tensor, before[name])}
        assert changed == trainable, (phase.name, sorted(changed ^ trainable))


def test_features_scheme_freezes_wre_and_fe(tiny_run):
    config, scheme, model, _ = build("features", tiny_run)
    trainable = set_trainable(model, scheme.phases(config.transfer)[0].trainable)
    assert trainable and all(name.startswith(("classifier.", "output.")) for name in trainable)


def test_pretrand_random_plus_plus_freezes_transferred_units_first(tiny_run):
    config, scheme, model, _ = build("pretrand", tiny_run)
    first, second = scheme.phases(config.transfer)
    trainable = set_trainable(model, first.trainable)
    assert not any(name.startswith(("word_representation.", "feature_extractor.")) for name in trainable)
    assert any(name.startswith("random_feature_extractor.") for name in trainable)
    assert set_trainable(model, second.trainable) == [name for name, _ in model.named_parameters()]
    config.transfer.random_plus_plus = False
    assert [phase.name for phase in scheme.phases(config.transfer)] == ["joint"]


def test_random_plus_plus_may_train_the_random_branch_alone_first(tiny_run):
    config, scheme, model, train = build("pretrand", tiny_run)
    config.transfer.random_plus_plus_trains = "random_branch"
    first, _ = scheme.phases(config.transfer)
    trainable = set(set_trainable(model, first.trainable))
    assert trainable and all(name.startswith(("random_feature_extractor.", "random_classifier.")) for name in trainable)
    assert not any(name.startswith(("classifier.", "weighting.", "output.")) for name in trainable)  # Psi_p, u, v, the CRF wait for the joint phase
    before = {name: tensor.clone() for name, tensor in model.state_dict().items()}
    train_epoch(model, make_optimizer([{"params": [p for p in model.parameters() if p.requires_grad]}], config.train), ShuffledBatches(train, 4, 1), config.train, epoch=1, show_progress=False)
    assert {name for name, tensor in model.state_dict().items() if not torch.equal(tensor, before[name])} == trainable


def test_pretrands_random_branch_trains_at_its_own_rate(tiny_run, tmp_path):
    arguments = ["transfer", "--source", str(tiny_run), "--method", "pretrand", "--train", str(FIXTURES / "tiny_pos_train.conll"), "--dev", str(FIXTURES / "tiny_pos_dev.conll")]
    arguments += ["--columns", "word,pos", "--epochs", "1", "--quiet", "model.random_hidden=6", *TINY_MODEL]
    metrics = run([*arguments, "--output", str(tmp_path / "own"), "transfer.random_branch_learning_rate=0.5"])
    base = load_run(tmp_path / "own").config.train.learning_rate
    for record in metrics["history"]:  # two groups each phase, in the ratio of their rates (a schedule scales both alike)
        others, random_branch = record["learning_rates"]
        assert random_branch / others == pytest.approx(0.5 / base, rel=1e-4), (record["phase"], record["learning_rates"])
    with pytest.raises(SeqTransferError, match="transfer.random_branch_learning_rate"):
        run([*arguments, "--output", str(tmp_path / "bad"), "transfer.random_branch_learning_rate=-1"])


def test_transfer_command_end_to_end(tiny_run, tmp_path):
    metrics = run(
        [
            "transfer",
            "--source",
            str(tiny_run),
            "--method",
            "pretrand",
            "--train",
            str(FIXTURES / "tiny_pos_train.conll"),
            "--dev",
            str(FIXTURES / "tiny_pos_dev.conll"),
            "--columns",
            "word,pos",
            "--epochs",
            "2",
            "--output",
            str(tmp_path / "pretrand"),
            "--quiet",
            "model.random_hidden=6",
            *TINY_MODEL,
        ]
    )
    assert metrics["scheme"] == "pretrand" and {record["phase"] for record in metrics["history"]} == {"random", "joint"}
    loaded = load_run(tmp_path / "pretrand")
    assert loaded.config.model.architecture == "pretrand"
    import seqtransfer

    assert len(seqtransfer.load(tmp_path / "pretrand").predict([["Mary", "loves", "NYC"]])[0]) == 3


def test_absorption_of_pretrand_runs_is_measured(tiny_run, tmp_path):
    outputs = {}
    for name, extra in (("normalised", []), ("plain", ["model.normalize_branches=false", "model.branch_weighting=false"])):
        outputs[name] = tmp_path / name
        run(
            [
                "transfer",
                "--source",
                str(tiny_run),
                "--method",
                "pretrand",
                "--train",
                str(FIXTURES / "tiny_pos_train.conll"),
                "--dev",
                str(FIXTURES / "tiny_pos_dev.conll"),
                "--columns",
                "word,pos",
                "--epochs",
                "1",
                "--output",
                str(outputs[name]),
                "--quiet",
                "model.random_hidden=6",
                *TINY_MODEL,
                *extra,
            ]
        )
    results = run(["analyze", "absorption", str(outputs["normalised"]), str(outputs["plain"]), "--output", str(tmp_path / "absorption")])
    normalised, plain = results
    assert normalised["setting"].startswith("normalise on") and plain["setting"].startswith("normalise off, learnable u/v off")
    # unit vectors per branch, u and v near 1 after one tiny epoch: the normalised scores stay within about [-2, 2]
    assert -3.0 < normalised["combined"]["min"] and normalised["combined"]["max"] < 3.0
    assert normalised["u_v"]["u_mean"] > 0 and 0 <= normalised["random_share"] <= 1
    assert plain["u_v"] == {"u_mean": 1.0, "u_std": 0.0, "v_mean": 1.0, "v_std": 0.0}
    assert (tmp_path / "absorption" / "absorption.png").is_file() and "| normalised |" in (tmp_path / "absorption" / "absorption.md").read_text(encoding="utf-8")
    with pytest.raises(SeqTransferError, match="not a PretRand run"):
        run(["analyze", "absorption", str(tiny_run)])


def test_drift_measures_how_far_each_transferred_layer_group_moved_from_the_source(tiny_run, tmp_path):
    outputs = {}
    for method in ("finetune", "features"):
        outputs[method] = tmp_path / method
        run(
            [
                "transfer",
                "--source",
                str(tiny_run),
                "--method",
                method,
                "--train",
                str(FIXTURES / "tiny_pos_train.conll"),
                "--dev",
                str(FIXTURES / "tiny_pos_dev.conll"),
                "--columns",
                "word,pos",
                "--epochs",
                "1",
                "--output",
                str(outputs[method]),
                "--quiet",
                *TINY_MODEL,
            ]
        )
    finetuned, frozen = run(["analyze", "drift", str(outputs["finetune"]), str(outputs["features"]), "--label", "SFT", "--label", "SFE", "--output", str(tmp_path / "drift")])
    assert [row["group"] for row in finetuned["groups"]] == ["word_representation", "feature_extractor"]
    assert frozen["total"]["relative_change"] == 0.0 and frozen["total"]["squared_distance"] == 0.0  # SFE trains only its classifier
    assert all(row["relative_change"] > 0 for row in finetuned["groups"])
    source, target = load_run(tiny_run).model.state_dict(), load_run(outputs["finetune"]).model.state_dict()
    names = [name for name in source if name.startswith("feature_extractor.")]
    expected = sum(float(((target[name].double() - source[name].double()) ** 2).sum()) for name in names)
    assert finetuned["groups"][1]["squared_distance"] == pytest.approx(expected, rel=1e-9)
    assert finetuned["groups"][1]["relative_change"] == pytest.approx(100 * (expected / sum(float((source[name].double() ** 2).sum()) for name in names)) ** 0.5)
    table = (tmp_path / "drift" / "drift.md").read_text(encoding="utf-8")
    assert table.startswith("| layer group | SFT | SFE |") and (tmp_path / "drift" / "drift.png").is_file()
    run(["analyze", "report", "--drift", str(outputs["finetune"]), str(outputs["features"]), "--output", str(tmp_path / "report.html")])
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert '<h2 id="drift">' in page and "<th>layer group</th>" in page and "data:image/png;base64," in page
    with pytest.raises(SeqTransferError, match="started random"):
        run(["analyze", "drift", str(tiny_run)])
    with pytest.raises(SeqTransferError, match="1 --label for 2 runs"):
        run(["analyze", "drift", str(outputs["finetune"]), str(outputs["features"]), "--label", "SFT"])


def test_drift_finds_its_source_from_elsewhere_and_refuses_one_with_other_weights(tmp_path, monkeypatch, capsys):
    """A source named by a relative path is found from a folder holding the run; a source retrained at
    the same path (other weights than the run read) or gone is one line, not numbers from other weights."""
    from conftest import tiny_train_arguments
    from test_parser import error_line

    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(tmp_path)
    assert main(tiny_train_arguments(project / "source", epochs=1)) == 0
    monkeypatch.chdir(project)
    run(
        [
            "transfer",
            "--source",
            "source",
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
            "--output",
            "target",
            "--quiet",
            *TINY_MODEL,
        ]
    )
    monkeypatch.chdir(elsewhere)
    assert run(["analyze", "drift", str(project / "target")])[0]["total"]["relative_change"] > 0
    assert main(tiny_train_arguments(elsewhere / "other", epochs=1, seed=7)) == 0
    shutil.copyfile(elsewhere / "other" / "model.safetensors", project / "source" / "model.safetensors")  # the source retrained in its place
    capsys.readouterr()
    assert "holds other weights than the run was trained from" in error_line(["analyze", "drift", str(project / "target")], capsys)
    shutil.rmtree(project / "source")
    assert "the run's source run source is not there" in error_line(["analyze", "drift", str(project / "target")], capsys)


def test_drift_labels_runs_apart_and_refuses_what_would_mislead(tiny_run, tmp_path, capsys):
    from test_parser import error_line

    from seqtransfer.analysis.drift import all_groups, distinct_labels

    results = [{"run": "/a/seed-1/run", "label": "FT"}, {"run": "/a/seed-2/run", "label": "FT"}, {"run": "/a/seed-2/lora", "label": "LoRA"}]
    assert [result["label"] for result in distinct_labels(results)] == ["seed-1/run", "seed-2/run", "LoRA"]
    mixed = [
        {"groups": [{"group": "embeddings"}, {"group": "layer 1"}, {"group": "layer 2"}]},
        {"groups": [{"group": "word_representation"}, {"group": "feature_extractor"}]},
        {"groups": [{"group": "embeddings"}, {"group": "layer 1"}, {"group": "layer 2"}, {"group": "layer 3"}]},
    ]
    assert all_groups(mixed) == ["embeddings", "layer 1", "layer 2", "layer 3", "word_representation", "feature_extractor"]
    (tmp_path / "a-file").write_text("x", encoding="utf-8")
    refused = {
        "the same run is given twice": [str(tiny_run), str(tiny_run)],
        "--label 'A' names two runs": [str(tiny_run), str(tmp_path), "--label", "A", "--label", "A"],
        "--output is a file": [str(tiny_run), "--output", str(tmp_path / "a-file")],
        "--output is a run directory": [str(tiny_run), "--output", str(tiny_run)],
    }
    for message, arguments in refused.items():
        assert message in error_line(["analyze", "drift", *arguments], capsys)


def test_source_only_scores_the_source_model_as_it_is(tiny_run, tmp_path):
    output = tmp_path / "source-only"
    metrics = run(
        [
            "transfer",
            "--source",
            str(tiny_run),
            "--method",
            "source_only",
            "--train",
            str(FIXTURES / "tiny_ner_train.conll"),
            "--dev",
            str(FIXTURES / "tiny_ner_test.conll"),
            "--columns",
            "word,ner",
            "--scheme",
            "iob2",
            "--output",
            str(output),
            "--quiet",
            *TINY_MODEL,
        ]
    )
    evaluated = run(["evaluate", str(tiny_run), "--file", str(FIXTURES / "tiny_ner_test.conll"), "--columns", "word,ner", "--scheme", "iob2"])
    assert metrics["dev"]["f1"] == evaluated["f1"] and metrics["history"] == [] and metrics["trainable_parameters"] == 0
    source, copied = load_run(tiny_run), load_run(output)
    assert copied.vocabularies.words.items == source.vocabularies.words.items
    assert all(torch.equal(copied.model.state_dict()[name], tensor) for name, tensor in source.model.state_dict().items())


def test_an_epoch_in_which_nothing_trains_is_one_error_not_a_silent_pass(tiny_run):
    from seqtransfer.errors import SeqTransferError

    config, scheme, model, train = build("finetune", tiny_run)
    set_trainable(model, ("no-such-parameter.",))  # everything frozen
    groups = [{"params": list(model.parameters())}]
    with pytest.raises(SeqTransferError, match="nothing trains in epoch 1"):
        train_epoch(model, make_optimizer(groups, config.train), ShuffledBatches(train, config.train.batch_size, config.train.seed), config.train, epoch=1, show_progress=False)


def test_the_absorption_setting_names_what_random_plus_plus_trains_and_the_random_branchs_rate():
    from seqtransfer.analysis.absorption import describe_setting
    from seqtransfer.config import RunConfig

    config = RunConfig()
    assert describe_setting(config) == "normalise on, learnable u/v on, random++ on"
    config.transfer.random_plus_plus_trains, config.transfer.random_branch_learning_rate, config.model.normalized_scale = "random_branch", 0.15, 10.0
    assert describe_setting(config) == "normalise on x10, learnable u/v on, random++ on (random branch alone), random branch at rate 0.15"
