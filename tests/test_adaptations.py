"""Adaptations combined with transfer schemes: what trains in which epoch, at which rate; L2-SP's pull; bad combinations."""

from __future__ import annotations

import pytest
import torch
from conftest import FIXTURES, TINY_MODEL, tiny_train_arguments
from safetensors.torch import load_file
from test_parser import error_line

from seqtransfer.cli import main, run
from seqtransfer.config import RunConfig, apply_overrides
from seqtransfer.errors import SeqTransferError
from seqtransfer.transfer.adaptations import layer_groups, parameter_groups

POS = ["--train", str(FIXTURES / "tiny_pos_train.conll"), "--dev", str(FIXTURES / "tiny_pos_dev.conll"), "--columns", "word,pos", "--quiet", *TINY_MODEL]
NER = ["--train", str(FIXTURES / "tiny_ner_train.conll"), "--dev", str(FIXTURES / "tiny_ner_dev.conll"), "--columns", "word,ner", "--scheme", "iob2", "--quiet", *TINY_MODEL]


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    folder = tmp_path_factory.mktemp("adaptations") / "source"
    assert main(tiny_train_arguments(folder, epochs=2)) == 0
    return folder


def tiny_tagger():
    from seqtransfer.data.vocabulary import Vocabularies, Vocabulary
    from seqtransfer.models.registry import build_model

    config = apply_overrides(RunConfig(), TINY_MODEL).model
    return build_model(config, Vocabularies(Vocabulary.build(["a"]), Vocabulary.build("a"), Vocabulary(["X", "Y"])))


def test_layer_groups_of_a_tagger_and_discriminative_rates():
    model = tiny_tagger()
    assert [name for name, _ in layer_groups(model)] == ["word_representation", "feature_extractor", "head"]
    config = apply_overrides(RunConfig(), ["transfer.adaptations=[discriminative]"]).transfer
    rates = [group["lr"] for group in parameter_groups(model, config, 0.026)]
    assert rates == pytest.approx([0.026 / 2.6**2, 0.026 / 2.6, 0.026])
    assert sum(len(group["params"]) for group in parameter_groups(model, config, 0.026)) == len(list(model.parameters()))


def test_layer_groups_of_a_parser_and_of_pretrand_cover_every_parameter_bottom_to_top():
    """The parser's learned ROOT vector is an input, in the bottom group; PretRand's random branch is
    new, as its classifier is, so both are the head (they train first under gradual unfreezing)."""
    from seqtransfer.data.vocabulary import Vocabularies, Vocabulary
    from seqtransfer.models.registry import build_model

    vocabularies = Vocabularies(Vocabulary.build(["a"]), Vocabulary.build("a"), Vocabulary(["X", "Y"]))
    parser = build_model(apply_overrides(RunConfig(), [*TINY_MODEL, "model.architecture=parser", "model.parser_layers=2", "model.parser_hidden=8"]).model, vocabularies)
    groups = layer_groups(parser)
    assert [name for name, _ in groups] == ["word_representation", "feature_extractor.lstm.layers.0", "feature_extractor.lstm.layers.1", "head"]
    assert "feature_extractor.root" in groups[0][1]
    pretrand = build_model(apply_overrides(RunConfig(), [*TINY_MODEL, "model.architecture=pretrand", "model.random_hidden=4"]).model, vocabularies)
    for model in (parser, pretrand):
        groups = layer_groups(model)
        assert sorted(name for _, members in groups for name in members) == sorted(name for name, _ in model.named_parameters())
        assert groups[-1][0] == "head" and not any(name.startswith("word_representation.") for name in groups[-1][1])
    assert any(name.startswith("random_feature_extractor.") for name in layer_groups(pretrand)[-1][1])


def test_layer_groups_of_a_distilbert_encoder_are_its_embeddings_then_each_layer():
    """DistilBERT keeps its layers in ``transformer.layer.N`` (BERT: ``encoder.layer.N``): each is a group, not all the head."""
    transformers = pytest.importorskip("transformers")

    from seqtransfer.models.transformer_encoder import TransformerEncoder

    class Model(TransformerEncoder, torch.nn.Module):  # the transformer encoder family's layer groups, without a folder to build from
        pass

    model = Model()
    model.encoder = transformers.DistilBertModel(transformers.DistilBertConfig(vocab_size=50, dim=16, n_layers=2, n_heads=2, hidden_dim=32, max_position_embeddings=16))
    model.classifier = torch.nn.Linear(16, 3)
    groups = layer_groups(model)
    assert [name for name, _ in groups] == ["encoder.embeddings", "encoder.transformer.layer.0", "encoder.transformer.layer.1", "head"]
    assert groups[-1][1] == ["classifier.weight", "classifier.bias"]
    from seqtransfer.analysis.drift import group_name

    assert group_name("encoder.transformer.layer.1.ffn.lin2.weight") == "layer 2"


def test_gradual_unfreezing_trains_the_top_group_first_then_one_more_per_epoch(source, tmp_path):
    snapshots = []
    for epochs in (1, 2):
        output = tmp_path / f"target{epochs}"
        assert (
            main(
                ["transfer", "--source", str(source), "--method", "finetune", *POS, "--epochs", str(epochs), "--output", str(output), "transfer.adaptations=[gradual_unfreezing]", "train.patience=10"]
            )
            == 0
        )
        snapshots.append(load_file(str(output / "model.safetensors")))
        # fewer epochs than layer groups (word representation, BiLSTM, head): the lowest never train, and the user is told
        assert f"needs 3 epochs to open every layer group, the top first: train.max_epochs={epochs} leaves the lowest {3 - epochs} frozen" in (output / "log.txt").read_text()
    start = load_file(str(source / "model.safetensors"))
    lstm, embedding = "feature_extractor.forward_lstm.weight_ih_l0", "word_representation.character_encoder.lstm.forward_lstm.weight_ih_l0"
    assert torch.equal(snapshots[0][lstm], start[lstm]) and torch.equal(snapshots[0][embedding], start[embedding])  # epoch 1: the head only
    assert not torch.equal(snapshots[1][lstm], start[lstm]) and torch.equal(snapshots[1][embedding], start[embedding])  # epoch 2: + the BiLSTM


def test_gradual_unfreezing_and_discriminative_rates_on_a_parser():
    """A parser's epoch 1 trains its scorers only (the ROOT vector and the BiLSTM stay), epoch 2 adds
    its top BiLSTM layer, epoch 4 everything; its rates fall by the factor per group below the top."""
    from seqtransfer.data.vocabulary import Vocabularies, Vocabulary
    from seqtransfer.models.registry import build_model
    from seqtransfer.transfer.adaptations import unfreezing_hook

    vocabularies = Vocabularies(Vocabulary.build(["a"]), Vocabulary.build("a"), Vocabulary(["X", "Y"]))
    parser = build_model(apply_overrides(RunConfig(), [*TINY_MODEL, "model.architecture=parser", "model.parser_layers=2", "model.parser_hidden=8"]).model, vocabularies)
    names = [name for name, _ in parser.named_parameters()]
    unfreeze = unfreezing_hook(parser, set(names))
    training = []
    for epoch in (1, 2, 4):
        unfreeze(epoch, parser, None)
        training.append({name for name, parameter in parser.named_parameters() if parameter.requires_grad})
    top, bottom = "feature_extractor.lstm.layers.1.forward_lstm.weight_ih_l0", "feature_extractor.lstm.layers.0.forward_lstm.weight_ih_l0"
    assert training[0] and all(name.startswith("classifier.") for name in training[0])
    assert top in training[1] and bottom not in training[1] and "feature_extractor.root" not in training[1]
    assert training[2] == set(names)
    config = apply_overrides(RunConfig(), ["transfer.adaptations=[discriminative]"]).transfer
    rates = {group["name"]: group["lr"] for group in parameter_groups(parser, config, 0.026)}
    assert rates["head"] == 0.026 and rates["word_representation"] == pytest.approx(0.026 / 2.6**3)


def test_early_stopping_waits_until_gradual_unfreezing_has_opened_every_group(source, tmp_path):
    output = tmp_path / "patient"  # a rate too small to improve dev: patience 1 alone would stop after epoch 2
    assert (
        main(
            [
                "transfer",
                "--source",
                str(source),
                "--method",
                "finetune",
                *POS,
                "--epochs",
                "6",
                "--output",
                str(output),
                "transfer.adaptations=[gradual_unfreezing]",
                "train.patience=1",
                "train.learning_rate=1e-12",
            ]
        )
        == 0
    )
    epochs = [line for line in (output / "log.txt").read_text().splitlines() if line.startswith("epoch")]
    from seqtransfer.rundir import load_run

    assert len(epochs) == len(layer_groups(load_run(output).model)) == 3  # word representation, BiLSTM, head: the third epoch trains all


def test_l2sp_keeps_the_fine_tuned_weights_nearer_the_source(source, tmp_path):
    distances = {}
    start = load_file(str(source / "model.safetensors"))
    for name, extra in (("plain", []), ("l2sp", ["transfer.adaptations=[l2sp]", "transfer.l2sp_weight=50"])):
        output = tmp_path / name
        assert main(["transfer", "--source", str(source), "--method", "finetune", *POS, "--epochs", "3", "--output", str(output), "train.learning_rate=0.05", "train.patience=10", *extra]) == 0
        weights = load_file(str(output / "model.safetensors"))
        distances[name] = float((weights["feature_extractor.forward_lstm.weight_ih_l0"] - start["feature_extractor.forward_lstm.weight_ih_l0"]).norm())
    assert distances["l2sp"] < distances["plain"]


def test_adaptations_that_cannot_apply_are_one_line(source, tmp_path, capsys):
    assert main(["train", *POS, "--output", str(tmp_path / "a"), "transfer.adaptations=[l2sp]"]) == 2
    assert "this scheme has none" in capsys.readouterr().err
    assert main(["train", *POS, "--output", str(tmp_path / "b"), "transfer.adaptations=[telepathy]"]) == 2
    error = capsys.readouterr().err
    assert "unknown adaptation 'telepathy'" in error and len(error.strip().splitlines()) == 1
    from seqtransfer.config import TransferConfig
    from seqtransfer.transfer.adaptations import check_adaptations

    for name in ("chain_thaw", "discriminative", "gradual_unfreezing", "last_layer"):  # a model of one layer group (the head): nothing to stage
        with pytest.raises(SeqTransferError, match=f"adaptation '{name}' needs at least 2 layer groups that train; this model and scheme train 1"):
            check_adaptations(TransferConfig(adaptations=[name]), torch.nn.Linear(2, 2), has_source=True)
    # settings that would do nothing, or fail after training began, are refused before it starts
    refused = {
        "features: only the classifier trains": (["--method", "features", "transfer.adaptations=[gradual_unfreezing]"], "train 1 (head)"),
        "features: the transferred weights stay frozen": (["--method", "features", "transfer.adaptations=[l2sp]"], "keeps them frozen"),
        "features: no layer below the head trains at its own rate": (["--method", "features", "transfer.adaptations=[discriminative]"], "train 1 (head)"),
        "source_only trains nothing": (["--method", "source_only", "transfer.adaptations=[discriminative]"], "source_only trains nothing, so transfer.adaptations"),
        "chain-thaw after gradual unfreezing": (["--method", "finetune", "transfer.adaptations=[gradual_unfreezing, chain_thaw]"], "both choose which layer groups"),
    }
    for number, (arguments, message) in enumerate(refused.values()):
        output = tmp_path / f"refused-{number}"
        assert main(["transfer", "--source", str(source), *POS, "--epochs", "1", "--output", str(output), *arguments]) == 2
        error = capsys.readouterr().err
        assert message in error and len(error.strip().splitlines()) == 1 and not (output / "metrics.json").exists()
    assert main(["train", *POS, "--output", str(tmp_path / "c"), "model.encoder_adapter=lora"]) == 2  # a BiLSTM has no encoder to adapt
    error = capsys.readouterr().err
    assert "adapts a fine-tuned encoder; this run has no encoder" in error and len(error.strip().splitlines()) == 1 and not (tmp_path / "c").exists()


def test_settings_nothing_in_the_run_reads_are_warned_about(tmp_path, capsys):
    """A setting changed from its default that the run's other settings leave unused (a factor without
    its adaptation, an adapter's size without the adapter, a warm-up under the BiLSTM's schedule): a warning each."""
    assert (
        main(["train", *POS, "--epochs", "1", "--output", str(tmp_path / "idle"), "transfer.discriminative_factor=3", "model.lora_rank=4", "train.warmup=0.2", "transfer.distillation_temperature=3"])
        == 0
    )
    assert (tmp_path / "idle" / "log.txt").read_text().count("does nothing in this run") == 4  # in the run's log and on the screen
    error = capsys.readouterr().out
    for line in (
        "transfer.discriminative_factor=3.0 does nothing in this run: it needs transfer.adaptations=[discriminative]",
        "model.lora_rank=4 does nothing in this run: it needs model.encoder_adapter=lora",
        "train.warmup=0.2 does nothing in this run: it needs train.schedule=linear_warmup or slanted_triangular",
        "transfer.distillation_temperature=3.0 does nothing in this run: it needs transfer.distill_from",
    ):
        assert line in error
    assert (
        main(
            [
                "train",
                *POS,
                "--epochs",
                "1",
                "--output",
                str(tmp_path / "read"),
                "transfer.discriminative_factor=3",
                "transfer.adaptations=[discriminative]",
                "train.warmup=0.2",
                "train.schedule=slanted_triangular",
            ]
        )
        == 0
    )
    assert "does nothing" not in capsys.readouterr().out


def test_a_layer_group_the_model_keeps_frozen_does_not_count(capsys):
    """A group whose weights all stay frozen (the embeddings under LoRA) gets no phase of chain-thaw
    nor an epoch of gradual unfreezing: it is not counted, so too few groups left is one line before training."""
    from seqtransfer.config import TransferConfig
    from seqtransfer.transfer.adaptations import chain_thaw_phases, check_adaptations, unfreezing_epochs
    from seqtransfer.transfer.schemes import EVERYTHING, Phase

    model = tiny_tagger()
    model.frozen = lambda name: name.startswith("feature_extractor.")  # as an adapter keeps an encoder's own weights frozen
    one_phase = [Phase("train", EVERYTHING)]
    assert [phase.name for phase in chain_thaw_phases(model, one_phase)] == ["head", "word_representation", "all"]
    assert unfreezing_epochs(model, {name for name, _ in model.named_parameters() if not model.frozen(name)}) == 2
    model.frozen = lambda name: not name.startswith(("classifier.", "output."))
    for name in ("chain_thaw", "gradual_unfreezing", "discriminative"):
        with pytest.raises(SeqTransferError, match=rf"adaptation '{name}' needs at least 2 layer groups that train; this model and scheme train 1 \(head\)"):
            check_adaptations(TransferConfig(adaptations=[name]), model, has_source=False, phases=one_phase)


@pytest.mark.parametrize("case", ["chain-thaw over one layer group", "ewc without a source run"])
def test_adaptations_refused_on_the_command_line_are_one_line_and_write_nothing(source, tmp_path, capsys, case):
    output = tmp_path / "refused"
    if case == "chain-thaw over one layer group":  # the features scheme trains the head alone: nothing to thaw below it
        arguments = ["transfer", "--source", str(source), "--method", "features", *POS, "--epochs", "1", "--output", str(output), "transfer.adaptations=[chain_thaw]"]
        expected = "adaptation 'chain_thaw' needs at least 2 layer groups that train; this model and scheme train 1 (head)"
    else:
        arguments = ["train", *POS, "--epochs", "1", "--output", str(output), "transfer.adaptations=[ewc]"]
        expected = "adaptation 'ewc' pulls towards a source run's weights, and this scheme has none"
    assert expected in error_line(arguments, capsys)
    assert not output.exists()


def test_ewc_stores_the_sources_fisher_information_and_weighs_the_pull_by_it(source, tmp_path):
    output = tmp_path / "ewc"
    assert main(["transfer", "--source", str(source), "--method", "finetune", *POS, "--epochs", "1", "--output", str(output), "transfer.adaptations=[ewc]", "transfer.ewc_batches=2"]) == 0
    fisher = load_file(str(source / "fisher.safetensors"))
    assert fisher["__batches__"].item() == 2 and all((tensor >= 0).all() for tensor in fisher.values())
    assert fisher["feature_extractor.forward_lstm.weight_ih_l0"].sum() > 0
    assert "EWC (lambda 1.0) over" in (output / "log.txt").read_text()
    again = tmp_path / "ewc-cached"  # the Fisher read from the source this time: the same run
    assert main(["transfer", "--source", str(source), "--method", "finetune", *POS, "--epochs", "1", "--output", str(again), "transfer.adaptations=[ewc]", "transfer.ewc_batches=2"]) == 0
    assert (again / "model.safetensors").read_bytes() == (output / "model.safetensors").read_bytes()
    from seqtransfer.transfer.adaptations import EWC

    model = tiny_tagger()
    state = {name: tensor.detach().clone() for name, tensor in model.state_dict().items()}
    name = "classifier.weight"
    importance = {name: torch.full_like(state[name], 2.0)}
    with torch.no_grad():
        dict(model.named_parameters())[name].add_(1.0)
    penalty = EWC(model, state, importance, [name], weight=0.5)
    assert penalty(model, None).item() == pytest.approx(0.5 * 0.5 * 2.0 * state[name].numel())


def test_chain_thaw_trains_the_head_then_each_group_alone_then_everything(source, tmp_path, capsys):
    output = tmp_path / "chain"
    metrics = run(["transfer", "--source", str(source), "--method", "finetune", *POS, "--epochs", "1", "--output", str(output), "transfer.adaptations=[chain_thaw]"])
    assert [record["phase"] for record in metrics["history"]] == ["head", "word_representation", "feature_extractor", "all"]
    log = (output / "log.txt").read_text()
    counts = [int(line.split(": ")[1].split()[0]) for line in log.splitlines() if line.startswith("phase '")]
    assert counts[-1] == sum(counts[:-1]) == metrics["parameters"]  # the groups partition the model; the last phase trains all
    capsys.readouterr()
    error = error_line(["transfer", "--source", str(source), "--method", "pretrand", *POS, "--output", str(tmp_path / "p"), "transfer.adaptations=[chain_thaw]", "model.random_hidden=6"], capsys)
    assert "adaptation 'chain_thaw' replaces a one-phase scheme's phase" in error and not (tmp_path / "p").exists()  # PretRand has two phases of its own: refused before anything is written


def test_distillation_averages_the_teachers_soft_targets_and_trains_the_student_on_them(source, tmp_path):
    import numpy as np

    from seqtransfer.rundir import load_run
    from seqtransfer.transfer.distillation import Distillation

    other = tmp_path / "teacher2"
    assert main(tiny_train_arguments(other, epochs=2, seed=7)) == 0
    teachers = [load_run(source), load_run(other)]
    tokens = [["John", "lives", "in", "Paris"], ["Mary"]]
    labels = teachers[0].vocabularies.labels
    term = Distillation(teachers, tokens, labels, temperature=2.0, weight=1.0)
    assert [soft.shape for soft in term.soft] == [(4, len(labels)), (1, len(labels))]
    assert np.allclose(term.soft[0].sum(-1), 1.0)
    from seqtransfer.data.batching import encode_sentences, make_batch

    by_hand = []  # each teacher's softmax of its scores at T, averaged
    for teacher in teachers:
        batch = make_batch(encode_sentences(tokens, teacher.vocabularies), np.array([0]))
        with torch.no_grad():
            probabilities = (teacher.model.emissions(batch)[0] / 2.0).softmax(-1).numpy()
        on_student_labels = np.zeros_like(probabilities)
        on_student_labels[:, [labels.index[label] for label in teacher.vocabularies.labels.items]] = probabilities
        by_hand.append(on_student_labels)
    assert np.allclose(term.soft[0], np.mean(by_hand, axis=0), atol=1e-6)
    batch = make_batch(encode_sentences(tokens, teachers[0].vocabularies), np.array([0, 1]))
    with torch.no_grad():  # weight * T^2 * cross-entropy between the soft targets and the student at T, over the real tokens
        log_student = (teachers[0].model.emissions(batch) / 2.0).log_softmax(-1)
        expected = 1.0 * 4.0 * -sum(float((torch.from_numpy(term.soft[row]) * log_student[row, : len(tokens[row])]).sum()) for row in range(2))
        assert term(teachers[0].model, batch).item() == pytest.approx(expected, rel=1e-5)
    student, plain = tmp_path / "student", tmp_path / "plain"
    assert main([*tiny_train_arguments(student, epochs=2), f"transfer.distill_from=[{source}, {other}]", "transfer.distillation_weight=2"]) == 0
    assert "distilling 2 teacher run(s) at temperature 2.0" in (student / "log.txt").read_text()
    assert main(tiny_train_arguments(plain, epochs=2)) == 0  # the same run without the teachers: other weights
    assert (student / "model.safetensors").read_bytes() != (plain / "model.safetensors").read_bytes()


def test_a_crf_teacher_teaches_its_label_marginals_at_the_temperature(tmp_path):
    import numpy as np

    from seqtransfer.data.batching import encode_sentences, make_batch
    from seqtransfer.rundir import load_run
    from seqtransfer.transfer.distillation import teacher_distributions

    teacher = tmp_path / "crf-teacher"
    assert main(tiny_train_arguments(teacher, epochs=2, classifier="crf")) == 0
    loaded = load_run(teacher)
    tokens = [["John", "lives", "in", "Paris"]]
    soft = teacher_distributions(loaded, tokens, loaded.vocabularies.labels, temperature=2.0)[0]
    batch = make_batch(encode_sentences(tokens, loaded.vocabularies), np.array([0]))
    with torch.no_grad():
        marginals = loaded.model.eval().output.crf.marginals(loaded.model.emissions(batch), batch.mask, 2.0)[0].numpy()
        softmax = (loaded.model.emissions(batch)[0] / 2.0).softmax(-1).numpy()
    assert np.allclose(soft, marginals, atol=1e-6) and not np.allclose(soft, softmax, atol=1e-4)


def test_teachers_that_cannot_teach_are_one_line_before_anything_is_written(source, tmp_path, capsys):
    """A missing teacher, one of another tag set (NER teaching POS) or one without label scores (a
    parser): refused before the student's run directory is written, so the fixed command starts clean."""
    from test_parser import parser_arguments

    parser = tmp_path / "parser"
    assert main(parser_arguments(parser, 1)) == 0
    cases = {
        "missing": ([*POS, f"transfer.distill_from=[{tmp_path / 'nobody'}]"], "nobody"),
        "another tag set": ([*POS, f"transfer.distill_from=[{source}]"], "the teacher labels in another tag set"),
        "a parser": ([*NER, f"transfer.distill_from=[{parser}]"], "a teacher must be a tagging or sentence-classification run"),
    }
    for number, (arguments, message) in enumerate(cases.values()):
        output = tmp_path / f"student-{number}"
        capsys.readouterr()
        assert message in error_line(["train", *arguments, "--epochs", "1", "--output", str(output)], capsys)
        assert not output.exists()


def test_an_adaptation_registered_by_name_is_applied_by_the_one_loop(source, tmp_path, monkeypatch):
    """ADAPTATIONS is where the loop learns what an adaptation does: an entry registered there (its
    phases, epoch hook, minimum epochs and rate factor) is applied with no other change."""
    from seqtransfer.transfer import adaptations
    from seqtransfer.transfer.schemes import Phase

    epochs, rates = [], []

    def hook(model, allowed):
        return lambda epoch, model, optimizer: (epochs.append(epoch), rates.append([group["lr"] for group in optimizer.param_groups]))

    entry = adaptations.Adaptation(
        "head_twice",
        "the head alone, then everything",
        2,
        phases=lambda model, phases: [Phase("head", ("classifier.",)), *phases],
        epoch_hook=hook,
        minimum_epochs=lambda model, allowed: 2,
        rate_factor=lambda config: 10.0,
    )
    monkeypatch.setitem(adaptations.ADAPTATIONS, "head_twice", entry)
    metrics = run(
        [
            "transfer",
            "--source",
            str(source),
            "--method",
            "finetune",
            *POS,
            "--epochs",
            "3",
            "--output",
            str(tmp_path / "registered"),
            "transfer.adaptations=[head_twice]",
            "train.patience=1",
            "train.learning_rate=1e-12",
        ]
    )
    assert [record["phase"] for record in metrics["history"]] == ["head", "head", "train", "train"]  # each phase waits 2 epochs
    assert epochs == [1, 2, 1, 2] and [rate / rates[0][-1] for rate in rates[0]] == pytest.approx([0.01, 0.1, 1.0])  # 3 groups, a tenth per group below


def test_a_loss_term_registered_by_name_is_added_to_every_batchs_loss(tmp_path, monkeypatch):
    """LOSS_TERMS is the one place the training loop's extra terms come from: a term registered
    there (its builder given the run) is called on every training batch and changes the weights."""
    from seqtransfer.transfer import loss_terms

    calls = []

    class Pull:
        def __call__(self, model, batch):
            calls.append(batch)
            return 100.0 * sum(parameter.square().sum() for parameter in model.parameters() if parameter.requires_grad)

    built = []
    monkeypatch.setitem(loss_terms.LOSS_TERMS, "pull", lambda context: built.append(context.scheme.name) or (Pull(),))
    assert main(["train", *POS, "--epochs", "1", "--output", str(tmp_path / "pulled")]) == 0
    monkeypatch.delitem(loss_terms.LOSS_TERMS, "pull")
    assert main(["train", *POS, "--epochs", "1", "--output", str(tmp_path / "plain")]) == 0
    assert built == ["scratch"] and len(calls) >= 1
    pulled, plain = (load_file(str(tmp_path / name / "model.safetensors")) for name in ("pulled", "plain"))
    assert pulled["classifier.weight"].norm() < plain["classifier.weight"].norm()


def test_last_layer_over_layers_nothing_pretrained_warns(tmp_path, capsys):
    """ULMFiT's "Last" on a model with no source run and no pretrained encoder: the layers below the head stay random."""
    run(["train", *POS, "--epochs", "1", "--output", str(tmp_path / "last"), "transfer.adaptations=[last_layer]"])
    expected = "warning: adaptation 'last_layer' trains the head alone, and nothing below it was pretrained"
    assert expected in capsys.readouterr().out + (tmp_path / "last" / "log.txt").read_text()
