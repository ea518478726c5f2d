"""Hierarchical multi-task model: which branch reads which, what a batch trains, the loss-weight
schedule, task scheduling, training / loading / predicting, transfer and bad configurations."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
import yaml
from conftest import FIXTURES, TINY_MODEL

from seqtransfer.cli import main
from seqtransfer.config import RunConfig, apply_overrides
from seqtransfer.data.batching import encode_sentences, make_batch
from seqtransfer.data.vocabulary import Vocabularies, Vocabulary
from seqtransfer.errors import SeqTransferError
from seqtransfer.models.multitask import HierarchicalMultiTask, target_name, task_levels, task_order
from seqtransfer.workflows.multitask import TaskSchedule, initial_weights, loss_weight_hook

SMALL = [
    "model.word_dimension=6",
    "model.char_dimension=4",
    "model.char_hidden=6",
    "model.hidden=8",
    "model.parser_hidden=8",
    "model.parser_layers=1",
    "model.arc_hidden=6",
    "model.relation_hidden=4",
    "model.projection=3",
    "model.dropout=0.0",
]
HIERARCHIES = {2: {"pos": [], "ner": ["pos"]}, 3: {"pos": [], "chunk": ["pos"], "ner": ["pos", "chunk"]}, 4: {"pos": [], "chunk": ["pos"], "ner": ["pos", "chunk"], "dp": ["pos", "chunk"]}}
TOKENS = [["Mary", "loves", "New", "York"], ["John", "sleeps"], ["I", "like", "tea", "!", ":)"]]


def tiny_model(hierarchy: dict) -> tuple[HierarchicalMultiTask, Vocabularies]:
    config = apply_overrides(RunConfig(), SMALL).model
    config.tasks = hierarchy
    config.task_kinds = {task: "dependency" if task == "dp" else "tagging" for task in hierarchy}
    words = Vocabulary.build([token.lower() for sentence in TOKENS for token in sentence])
    characters = Vocabulary.build(character for sentence in TOKENS for token in sentence for character in token)
    labels = {task: Vocabulary([f"{task}-{number}" for number in range(3)]) for task in hierarchy}
    vocabularies = Vocabularies(words, characters, Vocabulary([]), task_labels=labels)
    torch.manual_seed(0)
    return HierarchicalMultiTask.from_vocabularies(config, vocabularies), vocabularies


def below(hierarchy: dict, task: str) -> set[str]:
    """The tasks ``task`` reads, directly or through the tasks it reads."""
    return {source for direct in hierarchy[task] for source in {direct} | below(hierarchy, direct)}


def batch_for(vocabularies: Vocabularies, tasks: list[str]):
    targets = {}
    for task in tasks:
        targets[target_name(task, "labels")] = [np.arange(len(sentence)) % 3 for sentence in TOKENS]
        if task == "dp":
            targets[target_name(task, "heads")] = [np.array([0] + [1] * (len(sentence) - 1)) for sentence in TOKENS]
    return make_batch(encode_sentences(TOKENS, vocabularies, targets=targets), np.arange(len(TOKENS)))


@pytest.mark.parametrize("size", [2, 3, 4])
def test_each_branch_reads_the_shared_representation_and_exactly_its_lower_tasks(size):
    hierarchy = HIERARCHIES[size]
    model, vocabularies = tiny_model(hierarchy)
    model.eval()
    batch = batch_for(vocabularies, [])
    shared = model.word_representation.output_size
    for task, inputs in hierarchy.items():
        first_layer = model.branches[task].feature_extractor
        lstm = first_layer.lstm.layers[0] if task == "dp" else first_layer
        assert lstm.forward_lstm.input_size == shared + 3 * len(inputs)
    with torch.no_grad():
        before = model.branch_states(batch, list(hierarchy))
        for lower in model.projections:  # change one lower task's projection: exactly its readers change
            saved = model.projections[lower].weight.clone()
            model.projections[lower].weight.add_(1.0)
            after = model.branch_states(batch, list(hierarchy))
            model.projections[lower].weight.copy_(saved)
            for task in hierarchy:
                changed = not torch.allclose(before[task], after[task])
                assert changed == (lower in below(hierarchy, task)), (lower, task)


def test_a_batch_trains_its_task_the_branches_below_and_the_shared_representation_only():
    model, vocabularies = tiny_model(HIERARCHIES[4])
    model.train()
    model.zero_grad(set_to_none=True)
    model.loss(batch_for(vocabularies, ["ner"])).backward()
    with_gradient = {name.split(".")[0] + "." + name.split(".")[1] for name, parameter in model.named_parameters() if parameter.grad is not None}
    assert with_gradient == {"word_representation.word_embedding", "word_representation.character_encoder", "branches.pos", "branches.chunk", "branches.ner", "projections.pos", "projections.chunk"}
    model.zero_grad(set_to_none=True)
    model.loss(batch_for(vocabularies, ["pos"])).backward()
    assert all(parameter.grad is None for name, parameter in model.named_parameters() if not name.startswith(("branches.pos.", "word_representation.")))


def test_loss_is_the_weighted_mean_of_the_batch_tasks_losses():
    model, vocabularies = tiny_model(HIERARCHIES[4])
    model.eval()  # no dropout: the same losses twice
    batch = batch_for(vocabularies, ["pos", "dp"])
    losses = model.losses(batch)
    model.loss_weights = {"pos": 1.0, "chunk": 0.5, "ner": 0.25, "dp": 0.25}
    assert set(losses) == {"pos", "dp"}
    assert torch.isclose(model.loss(batch), (losses["pos"] + 0.25 * losses["dp"]) / 2)


def test_loss_weights_start_at_two_to_minus_level_and_double_every_epoch():
    config = RunConfig()
    config.model.tasks = HIERARCHIES[4]
    assert task_levels(config.model.tasks) == {"pos": 0, "chunk": 1, "ner": 2, "dp": 2}
    hook = loss_weight_hook(initial_weights(config), config.multitask)
    model = torch.nn.Module()
    seen = []
    for epoch in (1, 2, 3, 4):
        hook(epoch, model, None)
        seen.append([model.loss_weights[task] for task in ("pos", "chunk", "ner", "dp")])
    assert seen == [[1, 0.5, 0.25, 0.25], [1, 1, 0.5, 0.5], [1, 1, 1, 1], [1, 1, 1, 1]]
    for schedule, expected in (("linear", [[1, 0.5, 0.25, 0.25], [1, 0.75, 0.625, 0.625], [1, 1, 1, 1], [1, 1, 1, 1]]), ("constant", [[1, 0.5, 0.25, 0.25]] * 4)):  # other schedules, by name
        config.multitask.weight_schedule = schedule
        hook = loss_weight_hook(initial_weights(config), config.multitask)
        rows = []
        for epoch in (1, 2, 3, 4):
            hook(epoch, model, None)
            rows.append([model.loss_weights[task] for task in ("pos", "chunk", "ner", "dp")])
        assert rows == expected
    config.multitask.weight_schedule = "geometric"
    config.multitask.loss_weights = {"dp": 0.5}
    assert initial_weights(config)["dp"] == 0.5
    config.multitask.loss_weights = {"srl": 1.0}
    with pytest.raises(SeqTransferError, match="unknown task 'srl'"):
        initial_weights(config)


def encoded(count: int):
    return encode_sentences([["a"]] * count, Vocabularies(Vocabulary.build(["a"]), Vocabulary.build(["a"]), Vocabulary([])))


def test_round_robin_takes_turns_low_to_high_until_every_set_is_read_once():
    schedule = TaskSchedule([encoded(6), encoded(2), encoded(4)], batch_size=2, seed=1, sampling="round_robin")
    assert schedule.order(1) == [0, 1, 2, 0, 2, 0]
    assert sum(len(batch.indices) for batch in schedule.batches(1)) == 12 == schedule.sentence_count


def test_proportional_sampling_reads_every_set_once_in_a_seeded_mixed_order():
    schedule = TaskSchedule([encoded(20), encoded(4), encoded(8)], batch_size=2, seed=1, sampling="proportional")
    first = schedule.order(1)
    assert sorted(first) == [0] * 10 + [1] * 2 + [2] * 4
    assert first == schedule.order(1) and first != schedule.order(2)


def test_task_order_and_bad_hierarchies():
    assert task_order({"ner": ["pos"], "pos": []}) == ["pos", "ner"]  # any listed order works
    with pytest.raises(SeqTransferError, match="cycle"):
        task_order({"pos": ["ner"], "ner": ["pos"]})
    with pytest.raises(SeqTransferError, match="unknown task 'chunk'"):
        task_order({"pos": [], "ner": ["chunk"]})


def write_config(tmp_path, tasks: dict, data: dict, extra: dict | None = None):
    values = {"model": {"tasks": tasks}, "multitask": {"data": data}, **(extra or {})}
    path = tmp_path / "multitask.yaml"
    path.write_text(yaml.safe_dump(values), encoding="utf-8")
    return path


POS = {"train": str(FIXTURES / "tiny_pos_train.conll"), "dev": str(FIXTURES / "tiny_pos_dev.conll"), "columns": ["word", "pos"], "scheme": "none"}
NER = {"train": str(FIXTURES / "tiny_ner_train.conll"), "dev": str(FIXTURES / "tiny_ner_dev.conll"), "test": str(FIXTURES / "tiny_ner_test.conll"), "columns": ["word", "ner"], "scheme": "iob2"}
DP = {"train": str(FIXTURES / "tiny_dep_train.conllu"), "dev": str(FIXTURES / "tiny_dep_dev.conllu"), "test": str(FIXTURES / "tiny_dep_test.conllu"), "task": "dependency"}
TASKS = {"pos": [], "ner": ["pos"], "dp": ["pos"]}


def train(tmp_path, name: str, config, *extra: str) -> dict:
    return main_json(["train", "--config", str(config), "--output", str(tmp_path / name), "--quiet", "--epochs", "3", *TINY_MODEL, *SMALL[4:], *extra])


def main_run(arguments: list[str]):
    from seqtransfer.cli import run as run_command

    return run_command(arguments)


def main_json(arguments: list[str]) -> dict:
    assert main(arguments) == 0
    output = arguments[arguments.index("--output") + 1]
    return json.loads((__import__("pathlib").Path(output) / "metrics.json").read_text())


def test_train_load_predict_a_three_task_model_reproducibly(tmp_path, capsys):
    config = write_config(tmp_path, TASKS, {"pos": POS, "ner": NER, "dp": DP})
    metrics = train(tmp_path, "first", config)
    again = train(tmp_path, "second", config)
    assert metrics["tasks"] == again["tasks"]  # the same command twice: the same numbers
    assert set(metrics["tasks"]) == {"pos", "ner", "dp"} and metrics["tasks"]["dp"]["metric"] == "attachment"
    assert all(1 <= scores["best_epoch"] <= 3 for scores in metrics["tasks"].values())
    assert all("dev_tasks" in record for record in metrics["history"])
    run = tmp_path / "first"
    assert (run / "predictions" / "dp" / "test.conllu").is_file() and (run / "predictions" / "ner" / "test.conll").is_file()

    import seqtransfer

    predictor = seqtransfer.load(run, device="cpu")
    predicted = predictor.predict([["Mary", "loves", "NYC"]])[0]
    assert set(predicted) == {"pos", "ner", "dp"} and len(predicted["pos"]) == 3 and len(predicted["dp"][0]) == 2
    assert set(predicted["ner"]) <= set(predictor.labels["ner"])
    text = tmp_path / "in.txt"
    text.write_text("Mary loves NYC\nJohn sleeps\n")
    capsys.readouterr()
    assert main(["predict", str(run), str(text), "--output", str(tmp_path / "out.conllu")]) == 0
    lines = [line for line in (tmp_path / "out.conllu").read_text().splitlines() if line and not line.startswith("#")]
    fields = lines[0].split("\t")  # CoNLL-U's ten columns (UD tools read it): pos in UPOS, the tree, ner in MISC
    assert len(fields) == 10 and fields[:2] == ["1", "Mary"] and fields[3] == predicted["pos"][0] and fields[2] == fields[4] == fields[5] == fields[8] == "_"
    assert fields[9] == f"NER={predicted['ner'][0]}" and fields[6].isdigit() and fields[7] != "_"
    from seqtransfer.data.conllu import read_conllu

    assert [sentence.tokens for sentence in read_conllu(tmp_path / "out.conllu")] == [["Mary", "loves", "NYC"], ["John", "sleeps"]]

    scores = main_run(["evaluate", str(run), "--split", "dev"])  # every task on its own dev set, as in training
    assert {task: round(values.get("las", values.get("accuracy")), 4) for task, values in scores.items() if task != "ner"} == {
        task: round(metrics["tasks"][task]["dev"].get("las", metrics["tasks"][task]["dev"].get("accuracy")), 4) for task in ("pos", "dp")
    }
    ner = main_run(["evaluate", str(run), "--model-task", "ner", "--file", NER["test"], "--columns", "word,ner", "--scheme", "iob2"])
    assert ner["ner"]["f1"] == metrics["tasks"]["ner"]["test"]["f1"]
    assert main(["evaluate", str(run), "--file", NER["test"]]) == 2 and "pass --model-task" in capsys.readouterr().err

    from seqtransfer.data.conllu import read_conllu  # the output reads back as CoNLL-U Plus

    assert [sentence.tokens for sentence in read_conllu(tmp_path / "out.conllu")] == [["Mary", "loves", "NYC"], ["John", "sleeps"]]


def test_multitask_finetuning_transfers_every_branch_of_a_multitask_source(tmp_path, capsys):
    config = write_config(tmp_path, TASKS, {"pos": POS, "ner": NER, "dp": DP})
    train(tmp_path, "source", config)
    capsys.readouterr()
    train(tmp_path, "target", config, "transfer.scheme=finetune", f"transfer.source={tmp_path / 'source'}", "transfer.copy_shared_labels=true")
    log = (tmp_path / "target" / "log.txt").read_text()
    assert "transferred" in log and "pos: copied classifier rows of" in log and "dp: copied classifier rows of 8 shared labels" in log
    from safetensors.torch import load_file

    source, target = load_file(str(tmp_path / "source" / "model.safetensors")), load_file(str(tmp_path / "target" / "model.safetensors"))
    assert set(source) == set(target)
    from seqtransfer.analysis.drift import measure_drift

    drift = measure_drift(tmp_path / "target")  # every transferred branch counts, by level of the hierarchy
    assert drift["start"] == "source run source" and len(drift["groups"]) > 1 and drift["total"]["relative_change"] > 0
    assert drift["groups"][0]["group"] == "word_representation" and all(row["tensors"] for row in drift["groups"])
    transferred_branches = [name for name in source if name.startswith("projections.") or name.startswith("branches.") and ".feature_extractor." in name]
    branch_weights = sum(source[name].numel() for name in transferred_branches)
    assert sum(row["weights"] for row in drift["groups"][1:]) >= branch_weights
    # mono-task runs are not multi-task sources
    mono = tmp_path / "mono"
    assert main(["train", "--train", NER["train"], "--dev", NER["dev"], "--columns", "word,ner", "--epochs", "1", "--output", str(mono), "--quiet", *TINY_MODEL]) == 0
    capsys.readouterr()
    code = main(["train", "--config", str(config), "--output", str(tmp_path / "bad"), "--quiet", "transfer.scheme=finetune", f"transfer.source={mono}", *TINY_MODEL])
    assert code == 2 and "not a multi-task model" in capsys.readouterr().err


@pytest.mark.parametrize(
    "tasks, data, message",
    [
        ({"pos": [], "ner": ["pos"]}, {"pos": POS}, "task 'ner' is in model.tasks but no dataset labels it"),
        ({"pos": []}, {"pos": POS, "ner": NER}, "multitask.data names task 'ner', which model.tasks does not list"),
        ({"pos": ["ner"], "ner": ["pos"]}, {"pos": POS, "ner": NER}, "cycle"),
        ({"pos": [], "ner": ["srl"]}, {"pos": POS, "ner": NER}, "unknown task 'srl'"),
        ({"pos": []}, {"pos": {**POS, "columns": ["word", "pos", "ner"]}}, "tiny_pos_train.conll"),
        ({"pos": []}, {"pos": {"dev": POS["dev"]}}, "no train file"),
        ({"pos": []}, {"pos": "tweebank:srl"}, "dataset 'tweebank' has no task 'srl'"),
        ({"pos": [], "ner": "pos"}, {"pos": POS, "ner": NER}, "model.tasks.ner must be a list"),
    ],
)
def test_bad_multitask_configurations_fail_with_one_line_before_training(tmp_path, capsys, tasks, data, message):
    config = write_config(tmp_path, tasks, data)
    code = main(["train", "--config", str(config), "--output", str(tmp_path / "run"), "--quiet", *TINY_MODEL])
    error = capsys.readouterr().err
    assert code == 2 and message in error and len(error.strip().splitlines()) == 1
    assert not (tmp_path / "run" / "model.safetensors").exists()


def test_a_bad_early_stopping_task_is_refused_before_the_run_directory_is_written(tmp_path, capsys):
    config = write_config(tmp_path, TASKS, {"pos": POS, "ner": NER, "dp": DP}, {"multitask": {"data": {"pos": POS, "ner": NER, "dp": DP}, "early_stopping": "srl"}})
    code = main(["train", "--config", str(config), "--output", str(tmp_path / "run"), "--quiet", *TINY_MODEL])
    assert code == 2 and "multitask.early_stopping is 'srl'" in capsys.readouterr().err and not (tmp_path / "run").exists()


def test_center_scores_on_a_multitask_model_of_taggers_is_one_line(tmp_path, capsys):
    config = write_config(tmp_path, {"pos": []}, {"pos": POS})
    code = main(["train", "--config", str(config), "--output", str(tmp_path / "run"), "--quiet", *TINY_MODEL, "model.center_scores=true"])
    error = capsys.readouterr().err
    assert code == 2 and "model.center_scores" in error and "predicts labels, not a score" in error and len(error.strip().splitlines()) == 1


def test_transfer_to_another_hierarchy_keeps_the_branches_that_fit(tmp_path, capsys):
    train(tmp_path, "source", write_config(tmp_path, TASKS, {"pos": POS, "ner": NER, "dp": DP}))
    other = write_config(tmp_path, {"pos": [], "ner": [], "chunk": ["pos"]}, {"pos": POS, "ner": NER, "chunk": {**POS, "columns": ["word", "pos"]}})
    train(tmp_path, "target", other, "transfer.scheme=finetune", f"transfer.source={tmp_path / 'source'}")
    assert "branches: pos; new or differently fed, not transferred: ner, chunk" in (tmp_path / "target" / "log.txt").read_text()
    capsys.readouterr()
    code = main(
        [
            "train",
            "--train",
            NER["train"],
            "--dev",
            NER["dev"],
            "--columns",
            "word,ner",
            "--output",
            str(tmp_path / "mono"),
            "--quiet",
            "transfer.scheme=finetune",
            f"transfer.source={tmp_path / 'source'}",
            *TINY_MODEL,
        ]
    )
    assert code == 2 and "the source run is a multi-task model" in capsys.readouterr().err


def test_override_sets_one_entry_of_a_mapping():
    config = apply_overrides(RunConfig(), ["multitask.data.pos=tweebank:upos", "multitask.data.dp=tweebank:dependency", "model.tasks={pos: [], dp: [pos]}"])
    assert config.multitask.data == {"pos": "tweebank:upos", "dp": "tweebank:dependency"} and config.model.tasks == {"pos": [], "dp": ["pos"]}


def test_sgd_with_momentum_steps_a_parameter_whose_first_gradient_comes_late_as_torch_does():
    """One task per batch: a branch's first gradient may come after other branches' steps."""
    from seqtransfer.training.optimizer import LazyMomentumSGD

    first, second = torch.nn.Parameter(torch.ones(3)), torch.nn.Parameter(torch.ones(2))
    reference_first, reference_second = torch.nn.Parameter(torch.ones(3)), torch.nn.Parameter(torch.ones(2))
    ours = LazyMomentumSGD([first, second], lr=0.1, momentum=0.9, fused=True)
    reference = torch.optim.SGD([reference_first, reference_second], lr=0.1, momentum=0.9, foreach=False)
    for step, with_second in enumerate([False, True, True, False, True]):
        for optimizer, parameters in ((ours, (first, second)), (reference, (reference_first, reference_second))):
            optimizer.zero_grad(set_to_none=True)
            loss = (parameters[0] * (step + 1)).sum() + ((parameters[1] ** 2).sum() if with_second else 0)
            loss.backward()
            optimizer.step()
    assert torch.allclose(first, reference_first) and torch.allclose(second, reference_second)


def test_unit_ablation_measures_each_tasks_max_class_drop(tmp_path, capsys):
    config = write_config(tmp_path, TASKS, {"pos": POS, "ner": NER, "dp": DP})
    train(tmp_path, "run", config, "--epochs", "30", "train.patience=30", "train.learning_rate=0.1")  # a model that has learnt something: some unit matters
    capsys.readouterr()
    from seqtransfer.cli import run as run_command

    result = run_command(["analyze", "units", str(tmp_path / "run"), "--units", "0,1,2", "--output", str(tmp_path / "units"), "--top-k", "3"])
    assert result["lower_task"] == "pos" and set(result["drops"]) == {"pos", "ner", "dp"}
    assert all(len(values) == 3 for values in result["drops"].values())
    assert all(item["unit"] in (0, 1, 2) and len(item["top_words"]) <= 3 for item in result["most_important"].values())
    # Table 4's words firing the unit most negatively too, distinct from the positive ones where the split has enough words
    assert all(len(item["negative_words"]) == len(item["top_words"]) and item["negative_words"] != item["top_words"] for item in result["most_important"].values())
    assert all(item["support"] >= 1 for item in result["most_important"].values()) and result["min_support"] == 1
    from seqtransfer.cli import main

    capsys.readouterr()
    assert main(["analyze", "units", str(tmp_path / "run"), "--units", "0", "--output", str(tmp_path / "frequent"), "--min-support", "1000"]) != 0
    assert "has 1000 gold tokens in the dev split" in capsys.readouterr().err and not (tmp_path / "frequent").exists()
    assert (tmp_path / "units" / "units.png").is_file() and "| pos |" in (tmp_path / "units" / "units.md").read_text()
    run_command(["analyze", "report", "--ablation", str(tmp_path / "run"), "--ablation-max-sentences", "2", "--output", str(tmp_path / "report.html")])
    page = (tmp_path / "report.html").read_text()
    assert '<h2 id="units">Units of h_pos' in page and "data:image/png;base64," in page
    from seqtransfer.analysis.units import max_drop, outgoing_weights

    assert max_drop({"A": 80.0, "B": 50.0}, {"A": 79.0, "B": 20.0}) == (30.0, "B")
    from seqtransfer.rundir import load_run

    model = load_run(tmp_path / "run").model
    assert [tuple(weight.shape) for weight in outgoing_weights(model, "pos")] == [(3, 16), (8, 16)]  # projection T_pos (P=3), classifier (8 labels) read the 16 units
    # every unit, each ablated in a fresh copy of the model: the command's drops (one model, each unit
    # zeroed then restored in turn) must be the same, and some unit must matter
    from seqtransfer.analysis.units import ablate_units, class_scores, load_evaluation
    from seqtransfer.data.metrics import evaluate
    from seqtransfer.models.multitask import TaskView
    from seqtransfer.training.inference import predict_labels

    result = ablate_units(tmp_path / "run", log=lambda line: None)
    run = load_run(tmp_path / "run")
    tasks = load_evaluation(run, "dev", None, None)

    def scores(model):
        return {
            task: class_scores(
                evaluate(data.gold("dev"), predict_labels(TaskView(model, task), data.encode("dev", run.vocabularies, with_targets=False), run.vocabularies.task_labels[task], 64), data.metric)
            )
            for task, data in tasks.items()
        }

    baseline = scores(run.model)
    for unit in (0, 7, 15):
        fresh = load_run(tmp_path / "run").model
        with torch.no_grad():
            for weight in outgoing_weights(fresh, "pos"):
                weight[:, unit] = 0.0
        ablated = scores(fresh)
        assert {task: round(max_drop(baseline[task], ablated[task])[0], 2) for task in tasks} == {task: result["drops"][task][unit] for task in tasks}
    assert any(drop > 0 for values in result["drops"].values() for drop in values)


def test_a_fine_tuned_encoder_in_a_multitask_model_is_refused_in_one_line(tmp_path, capsys):
    config = write_config(tmp_path, TASKS, {"pos": POS, "ner": NER, "dp": DP})
    code = main(["train", "--config", str(config), "--output", str(tmp_path / "run"), "--quiet", *TINY_MODEL, "model.encoder=minilm", "model.encoder_mode=finetune"])
    error = capsys.readouterr().err
    assert code == 2 and "not a fine-tuned encoder" in error and not (tmp_path / "run").exists()


def test_distillation_into_a_multitask_model_is_refused_in_one_line(tmp_path, capsys):
    config = write_config(tmp_path, TASKS, {"pos": POS, "ner": NER, "dp": DP})
    code = main(["train", "--config", str(config), "--output", str(tmp_path / "run"), "--quiet", *TINY_MODEL, f"transfer.distill_from=[{tmp_path}]"])
    error = capsys.readouterr().err
    assert code == 2 and "teaches a mono-task model, not a multi-task one" in error and len(error.strip().splitlines()) == 1 and not (tmp_path / "run").exists()


def test_frozen_encoder_features_join_every_branch_of_a_multitask_model(tmp_path, monkeypatch):
    pytest.importorskip("transformers")
    from test_encoders import save_tiny_encoder

    import seqtransfer
    from seqtransfer.rundir import load_run

    monkeypatch.setenv("SEQTRANSFER_CACHE", str(tmp_path / "cache"))
    encoder = save_tiny_encoder(tmp_path / "encoder")
    config = write_config(tmp_path, TASKS, {"pos": POS, "ner": NER, "dp": DP})
    metrics = train(tmp_path, "run", config, f"model.encoder={encoder}")
    assert set(metrics["tasks"]) == {"pos", "ner", "dp"}
    model = load_run(tmp_path / "run").model
    mix = [name for name, _ in model.named_parameters() if "mix" in name]
    assert mix and all(name.startswith("word_representation.") for name in mix)  # one scalar mix in the shared representation
    assert list((tmp_path / "cache").rglob("*.safetensors"))  # the features were computed once and cached
    predicted = seqtransfer.load(tmp_path / "run", device="cpu").predict([["Mary", "loves", "NYC"]])[0]
    assert len(predicted["pos"]) == 3 and len(predicted["ner"]) == 3


def test_adaptations_of_a_multitask_model_work_by_level_of_its_hierarchy(tmp_path, capsys):
    import torch

    from seqtransfer.rundir import load_run
    from seqtransfer.transfer.adaptations import EWC, L2SP, layer_groups, parameter_groups

    config = write_config(tmp_path, TASKS, {"pos": POS, "ner": NER, "dp": DP})
    train(tmp_path, "source", config)
    model = load_run(tmp_path / "source").model
    groups = layer_groups(model)
    assert [name for name, _ in groups] == ["word_representation", "level 0 (pos)", "level 1 (dp, ner)"]
    assert sum(len(names) for _, names in groups) == len(list(model.named_parameters()))  # every parameter in one group
    from seqtransfer.config import TransferConfig

    rates = [group["lr"] for group in parameter_groups(model, TransferConfig(adaptations=["discriminative"]), 0.1)]
    assert rates == pytest.approx([0.1 / 2.6**2, 0.1 / 2.6, 0.1])
    # L2-SP: a POS batch pulls only what a POS step may change (the shared representation and the POS branch)
    state = {name: tensor.clone() + 1.0 for name, tensor in model.state_dict().items()}  # one unit away from every source weight
    penalty = L2SP(model, state, list(state), weight=2.0)

    class PosBatch:
        targets = {"pos": torch.zeros(1)}

    model.targets_of = lambda batch: {"pos": {}}
    expected = sum(
        parameter.numel()
        for name, parameter in model.named_parameters()
        if name.startswith(("word_representation.", "branches.pos.")) and name not in ("word_representation.word_embedding.weight", "word_representation.character_encoder.embedding.weight")
    )
    assert penalty(model, PosBatch()).item() == pytest.approx(expected)  # 0.5 * 2 * (1 per weight)
    capsys.readouterr()
    # EWC: the same per-batch choice, each weight's pull scaled by its Fisher information
    fisher = {name: torch.full_like(tensor, float(number + 1)) for number, (name, tensor) in enumerate(model.state_dict().items())}  # each tensor its own importance
    parameters = dict(model.named_parameters())
    weighted = sum(
        fisher[name].flatten()[0].item() * parameters[name].numel()
        for name in parameters
        if name.startswith(("word_representation.", "branches.pos.")) and name not in ("word_representation.word_embedding.weight", "word_representation.character_encoder.embedding.weight")
    )
    assert EWC(model, state, fisher, list(state), weight=2.0)(model, PosBatch()).item() == pytest.approx(weighted)
    for number, adaptations in enumerate(("[gradual_unfreezing, discriminative]", "[l2sp]", "[ewc]")):
        output = f"target-{number}"
        train(tmp_path, output, config, "transfer.scheme=finetune", f"transfer.source={tmp_path / 'source'}", f"transfer.adaptations={adaptations}", "transfer.ewc_batches=3")
        assert "over groups: word_representation, level 0 (pos), level 1 (dp, ner)" in (tmp_path / output / "log.txt").read_text()
    assert "L2-SP (alpha" in (tmp_path / "target-1" / "log.txt").read_text()
    assert "EWC: Fisher information of the source over 3 batches" in (tmp_path / "target-2" / "log.txt").read_text()
    from safetensors.torch import load_file

    stored = load_file(str(tmp_path / "source" / "fisher.safetensors"))
    for task in ("pos", "ner", "dp"):  # the source's batches of every task counted
        assert any(name.startswith(f"branches.{task}.") and tensor.abs().sum() > 0 for name, tensor in stored.items()), task
    # chain-thaw by level of the hierarchy: the top level (the head) alone, then each lower group alone bottom-up, then all
    metrics = train(tmp_path, "chain", config, "transfer.scheme=finetune", f"transfer.source={tmp_path / 'source'}", "transfer.adaptations=[chain_thaw]", "--epochs", "1")
    assert [record["phase"] for record in metrics["history"]] == ["head", "word_representation", "level 0 (pos)", "all"]
    counts = [int(line.split(": ")[1].split()[0]) for line in (tmp_path / "chain" / "log.txt").read_text().splitlines() if line.startswith("phase '")]
    assert counts[-1] == sum(counts[:-1]) == metrics["parameters"]  # the levels partition the model
