"""Issue 50's cases: inputs that used to give a traceback or a silently wrong result with exit 0.

Each runs the real CLI in-process (exit 2, one stderr line, no traceback, nothing left behind) or
the Python API, and fails on the code before its fix.
"""

from __future__ import annotations

import shutil
import warnings

import pytest
import torch
from conftest import FIXTURES, TINY_MODEL, tiny_train_arguments
from safetensors.torch import load_file, save_file
from test_bad_input import run_cli, train_on

import seqtransfer
from seqtransfer.data.corpus import read_lines
from seqtransfer.errors import SeqTransferError


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-32"])
def test_a_file_with_a_utf16_or_utf32_byte_order_mark_is_read_with_a_warning(tmp_path, encoding):
    path = tmp_path / "windows.conll"
    text = "John B-person\nlives O\n\n"
    mark = {"utf-16": b"", "utf-16-be": b"\xfe\xff", "utf-32": b""}[encoding]
    path.write_bytes(mark + text.encode(encoding))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert read_lines(path) == ["John B-person", "lives O", ""]
    assert any("byte-order mark" in str(warning.message) for warning in caught)


def test_a_utf16_training_file_trains(tmp_path, capsys):
    utf16 = tmp_path / "train.conll"
    utf16.write_bytes((FIXTURES / "tiny_ner_train.conll").read_text(encoding="utf-8").encode("utf-16"))
    from seqtransfer.cli import main

    assert main(train_on(utf16, tmp_path / "run")) == 0
    assert "read as UTF-16" in capsys.readouterr().out  # the CLI prints warnings with its log
    assert (tmp_path / "run" / "model.safetensors").is_file()


def test_a_diverging_learning_rate_stops_with_one_line(tmp_path, capsys):
    message = run_cli(tiny_train_arguments(tmp_path / "run", epochs=2) + ["train.learning_rate=1e38", "train.gradient_clip=0"], capsys)
    assert "diverged" in message and "batch" in message and "epoch 2" in message and "train.learning_rate" in message
    assert not (tmp_path / "run" / "model.safetensors").exists()


@pytest.mark.parametrize("override, expected", [("train.max_epochs=0", "train.max_epochs"), ("train.seed=-5", "train.seed")])
def test_meaningless_numbers_are_refused(override, expected, tmp_path, capsys):
    """As dotted settings (a config file's values); the options (--epochs 0) fail earlier, when the
    command line is read (tests/test_cli_numbers.py)."""
    assert expected in run_cli(tiny_train_arguments(tmp_path / "run") + [override], capsys)
    assert not (tmp_path / "run").exists()


def test_dataset_and_training_files_together_are_refused(tmp_path, capsys):
    message = run_cli(tiny_train_arguments(tmp_path / "run") + ["--dataset", "wnut17"], capsys)
    assert "--dataset" in message and "--train" in message
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("batch_size", ["8", 2.5, 0, True])
def test_a_bad_batch_size_is_one_error(tiny_run, batch_size):
    with pytest.raises(SeqTransferError, match="batch size"):
        seqtransfer.load(tiny_run, batch_size=batch_size)


def test_a_flat_token_list_warns_that_each_string_is_a_sentence(tiny_run):
    predictor = seqtransfer.load(tiny_run)
    with pytest.warns(Warning, match="one-word sentences"):
        assert len(predictor.predict(["I", "love", "NYC"])) == 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        predictor.predict(["I love NYC"])
        predictor.predict([["I", "love", "NYC"]])


def test_weights_holding_nan_are_refused_at_load(tiny_run, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(tiny_run, copy)
    state = load_file(str(copy / "model.safetensors"))
    name = next(name for name, tensor in state.items() if tensor.is_floating_point())
    state[name] = state[name].clone()
    state[name].view(-1)[0] = float("nan")
    save_file(state, str(copy / "model.safetensors"))
    with pytest.raises(SeqTransferError, match="NaN"):
        seqtransfer.load(copy)
    assert torch.isfinite(load_file(str(tiny_run / "model.safetensors"))[name]).all()


def label_file(path, rows):
    path.write_text("\n\n".join("\n".join(f"{word} {label}" for word, label in sentence) for sentence in rows) + "\n", encoding="utf-8")
    return path


def test_training_data_with_one_label_is_warned_about(tmp_path, capsys):
    from seqtransfer.cli import main

    train = label_file(tmp_path / "train.conll", [[("John", "O"), ("runs", "O")], [("Mary", "O"), ("sings", "O")]])
    assert main(train_on(train, tmp_path / "run")) == 0
    assert "every training label is 'O' (4 of them)" in capsys.readouterr().out


def test_dev_labels_unseen_in_training_are_counted(tmp_path, capsys):
    from seqtransfer.cli import main

    assert main(tiny_train_arguments(tmp_path / "run", epochs=1)) == 0
    assert "test has 1 label never seen in training (1 kind: B-group (1))" in capsys.readouterr().out


def test_labels_that_look_like_words_suggest_swapped_columns(tmp_path, capsys):
    from seqtransfer.cli import main

    sentences = [[(label, f"word{index * 3 + position}") for position, label in enumerate(["B-person", "O", "O"])] for index in range(60)]
    train = label_file(tmp_path / "train.conll", sentences)
    arguments = train_on(train, tmp_path / "run")
    arguments[arguments.index("--scheme") + 1] = "none"
    arguments[arguments.index("--dev") + 1] = str(train)
    assert main(arguments) == 0
    assert "are --columns swapped?" in capsys.readouterr().out


def test_ensembles_naming_each_other_are_one_line_before_anything_runs(tmp_path, capsys):
    experiment = tmp_path / "cycle.yaml"
    experiment.write_text(
        "name: cycle\ntitle: t\ncommand: x\ntargets:\n  WNUT: {dataset: wnut17}\nmethods:\n  A: {scheme: scratch}\n  E1: {ensemble: [A, E2]}\n  E2: {ensemble: [A, E1]}\nreference: A\n",
        encoding="utf-8",
    )
    message = run_cli(["experiment", "run", str(experiment), "--results", str(tmp_path / "results")], capsys)
    assert "ensemble 'E1' names ensemble 'E2'" in message
    assert not (tmp_path / "results").exists()


def test_a_run_interrupted_without_a_setting_does_not_resume_with_it(tmp_path, capsys, monkeypatch):
    """A saved null counts: resuming an interrupted run with data.max_train_sentences (or GloVe) added is refused by name."""
    from seqtransfer.rundir import read_saved_config
    from seqtransfer.workflows.checks import config_differences

    saved = read_saved_config(FIXTURES / "runs" / "v1_tagger_crf")
    new = read_saved_config(FIXTURES / "runs" / "v1_tagger_crf")
    assert saved.data.max_train_sentences is None and config_differences(saved, new) == []
    new.data.max_train_sentences = 300
    new.model.embeddings = "glove-6b-50d"
    assert config_differences(saved, new) == ["data.max_train_sentences", "model.embeddings"]


def test_a_utf16_tsv_file_trains_a_sentence_classifier(tmp_path, capsys):
    """The TSV header and labels are read by their byte-order mark too (not garbled into a missing 'text' field)."""
    from seqtransfer.cli import main

    train = tmp_path / "train.tsv"
    train.write_bytes((FIXTURES / "tiny_sentiment_train.tsv").read_text(encoding="utf-8").encode("utf-16"))
    dev = str(FIXTURES / "tiny_sentiment_dev.tsv")
    from conftest import TINY_MODEL

    assert main(["train", "--train", str(train), "--dev", dev, "--test", dev, "--epochs", "1", "--output", str(tmp_path / "run"), "--quiet", *TINY_MODEL]) == 0
    assert "read as UTF-16" in capsys.readouterr().out


def test_evaluating_a_split_the_data_lacks_is_one_line(capsys, monkeypatch):
    from seqtransfer.cli import main

    monkeypatch.chdir(FIXTURES)  # the fixture run's data paths are relative to it
    assert main(["evaluate", "runs/v1_tagger_crf", "--split", "nosuch"]) != 0
    error = capsys.readouterr().err
    assert "no split 'nosuch' (splits: train, dev, test)" in error and "Traceback" not in error


def long_sentence_file(folder, length: int):
    """The tiny parser training file with one more sentence of ``length`` tokens (a chain of heads)."""
    rows = [f"{index}\tw{index % 7}\t_\tX\t_\t_\t{index - 1}\t{'root' if index == 1 else 'dep'}\t_\t_" for index in range(1, length + 1)]
    path = folder / "long.conllu"
    path.write_text((FIXTURES / "tiny_dep_train.conllu").read_text(encoding="utf-8").rstrip("\n") + "\n\n" + "\n".join(rows) + "\n\n", encoding="utf-8")
    return path


PARSER = [
    "model.embeddings=null",
    "model.word_dimension=4",
    "model.char_dimension=3",
    "model.char_hidden=4",
    "model.parser_hidden=8",
    "model.parser_layers=1",
    "model.arc_hidden=6",
    "model.relation_hidden=4",
    "train.threads=1",
]


def test_a_parsers_batch_that_cannot_fit_in_memory_is_refused_before_it_runs(tmp_path, capsys, monkeypatch):
    """The arc scores grow with the square of a sentence's length: the longest batch is estimated
    against the machine's memory (here 64 MB), refused with one line naming the option that skips
    such sentences; with that option the run trains and says what it skipped."""
    from seqtransfer.cli import main, run
    from seqtransfer.training import memory

    monkeypatch.setattr(memory, "available_memory_bytes", lambda: 64 * 2**20)
    arguments = [
        "train",
        "--train",
        str(long_sentence_file(tmp_path, 1500)),
        "--dev",
        str(FIXTURES / "tiny_dep_dev.conllu"),
        "--task",
        "dependency",
        "--epochs",
        "1",
        "--quiet",
        *PARSER,
        "train.device=cpu",
    ]  # the host's memory (a GPU's is not estimated)
    assert main([*arguments, "--output", str(tmp_path / "refused")]) != 0
    error = capsys.readouterr().err
    assert "training sentence 7 has 1,500 tokens" in error and "data.max_sentence_length" in error and "Traceback" not in error
    assert not (tmp_path / "refused" / "metrics.json").exists()
    run([*arguments, "--output", str(tmp_path / "skipped"), "data.max_sentence_length=100"])
    assert "1 training sentence(s) of more than 100 tokens skipped" in (tmp_path / "skipped" / "log.txt").read_text()
    with pytest.raises(SeqTransferError, match="sentence 1 has 2,000 tokens"):
        seqtransfer.load(tmp_path / "skipped").predict([["w"] * 2000])


def test_running_out_of_cpu_memory_is_one_line(tmp_path, capsys, monkeypatch):
    from seqtransfer.cli import main
    from seqtransfer.models.heads import TaggingHead

    def exhausted(self, batch):
        raise RuntimeError("[enforce fail at alloc_cpu.cpp:117] data. DefaultCPUAllocator: can't allocate memory: you tried to allocate 3600000000 bytes.")

    monkeypatch.setattr(TaggingHead, "loss", exhausted)
    assert main(tiny_train_arguments(tmp_path / "run", epochs=1)) != 0
    error = capsys.readouterr().err
    assert "the machine ran out of memory while training with batches of" in error and "Traceback" not in error


def test_under_an_address_space_limit_a_huge_parser_batch_is_one_line(tmp_path):
    """A real limit (resource.setrlimit in a child process, 3 GB of address space): the estimate reads
    it, so the run refuses before allocating instead of dying with an allocator traceback."""
    import subprocess
    import sys

    script = "import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, 3 * 2**30)); from seqtransfer.cli import main; sys.exit(main(sys.argv[1:]))"
    arguments = [
        "train",
        "--train",
        str(long_sentence_file(tmp_path, 9000)),
        "--dev",
        str(FIXTURES / "tiny_dep_dev.conllu"),
        "--task",
        "dependency",
        "--epochs",
        "1",
        "--quiet",
        "--output",
        str(tmp_path / "run"),
        *PARSER,
    ]
    finished = subprocess.run([sys.executable, "-c", script, *arguments], capture_output=True, text=True, timeout=300)
    assert finished.returncode != 0 and "has 9,000 tokens" in finished.stderr and "Traceback" not in finished.stderr, finished.stderr[-2000:]


def test_a_huge_token_is_read_in_part_with_a_warning(tiny_run):
    from seqtransfer.errors import SeqTransferWarning

    blob = "x" * 1_000_000
    with pytest.warns(SeqTransferWarning, match="1 token\\(s\\) of more than 1,000 characters"):
        predicted = seqtransfer.load(tiny_run).predict([["John", blob, "York"]])
    assert len(predicted[0]) == 3


def test_an_experiment_source_with_a_misspelt_task_is_refused_before_anything_is_written(tmp_path, capsys):
    experiment = tmp_path / "typo.yaml"
    experiment.write_text(
        "name: typo\ntitle: t\ncommand: x\nsources:\n  ner: {dataset: conll2003, task: nre}\ntargets:\n  WNUT: {dataset: wnut17, source: ner}\nmethods:\n  SFT: {scheme: finetune}\nreference: SFT\n",
        encoding="utf-8",
    )
    message = run_cli(["experiment", "run", str(experiment), "--results", str(tmp_path / "results")], capsys)
    assert "source 'ner': dataset 'conll2003' has no task 'nre'" in message
    assert not (tmp_path / "results").exists()


def test_a_tree_whose_ids_skip_a_number_is_one_line_naming_it(tmp_path, capsys):
    """Taggers tolerate numbering slips (released files have them), a parser does not: HEAD values name tokens by ID."""
    from seqtransfer.cli import main

    text = (FIXTURES / "tiny_dep_train.conllu").read_text(encoding="utf-8")
    broken = text.replace("3\tcoffee\tcoffee\tNOUN", "5\tcoffee\tcoffee\tNOUN", 1)
    assert broken != text
    train = tmp_path / "gap.conllu"
    train.write_text(broken, encoding="utf-8")
    assert main(["train", "--train", str(train), "--dev", str(FIXTURES / "tiny_dep_dev.conllu"), "--task", "dependency", "--epochs", "1", "--quiet", "--output", str(tmp_path / "run"), *PARSER]) != 0
    error = capsys.readouterr().err
    assert "token ID 5 where 3 was due" in error and "gap.conllu:" in error and "Traceback" not in error


def test_an_allocation_the_machine_refuses_anywhere_is_one_line(tmp_path, capsys):
    """A model too large to build (model.hidden=10^12) fails in the allocator before any batch: one line, no traceback."""
    from seqtransfer.cli import main

    assert main([*tiny_train_arguments(tmp_path / "run", epochs=1), "model.hidden=1000000000000"]) != 0
    error = capsys.readouterr().err
    assert "the machine ran out of memory" in error and "Traceback" not in error


def test_an_experiment_file_whose_sections_are_lists_is_one_line(tmp_path, capsys):
    experiment = tmp_path / "lists.yaml"
    experiment.write_text("name: a\ntitle: t\ncommand: x\ntargets: [1, 2]\nmethods:\n  M: {scheme: scratch}\nreference: M\n", encoding="utf-8")
    message = run_cli(["experiment", "list", str(experiment)], capsys)
    assert "'targets' must be a mapping" in message


def test_losses_read_in_groups_sum_the_same_and_name_the_diverging_batch():
    """On a GPU the loop reads the losses every 25 batches (a read makes the host wait for the device):
    the sum is the same as reading each at once, and a NaN is still reported at its own batch."""
    import torch

    from seqtransfer.config import TrainConfig
    from seqtransfer.errors import SeqTransferError
    from seqtransfer.training.loop import LossTotal

    losses = [torch.tensor(value) for value in torch.rand(60, generator=torch.Generator().manual_seed(0)).tolist()]
    each, grouped = LossTotal(torch.device("cpu"), TrainConfig(), 1), LossTotal(torch.device("cpu"), TrainConfig(), 1, read_every=25)
    for step, loss in enumerate(losses):
        each.add(loss, step)
        grouped.add(loss, step)
    assert grouped.pending and each.read() == grouped.read() and not grouped.pending
    assert LossTotal(torch.device("meta"), TrainConfig(), 1).read_every == 25  # any device but the CPU defers
    diverging = LossTotal(torch.device("cpu"), TrainConfig(), 3, read_every=25)
    for step in range(10):
        diverging.add(torch.tensor(float("nan") if step == 7 else 1.0), step)
    with pytest.raises(SeqTransferError, match="became nan at batch 8 of epoch 3"):
        diverging.read()


def test_lower_case_span_labels_are_scored_as_spans_and_types_of_two_cases_are_warned_about(tmp_path, capsys):
    """A file that writes its prefixes in lower case (the Twitter chunking data's b-np, o) has a
    scheme as much as B-NP does; an entity type spelt in two cases (PER, per) is named."""
    from seqtransfer.cli import main
    from seqtransfer.data.schemes import infer_scheme

    assert infer_scheme([["b-np", "i-np", "o", "b-vp"]]) == "iob2"
    assert infer_scheme([["s-np", "o", "b-vp", "e-vp"]]) == "bioes"
    assert infer_scheme([["o", "O"]]) == "none" and infer_scheme([["NN", "b-np"]]) == "none"
    rows = [[("John", "B-PER"), ("runs", "O")], [("mary", "b-per"), ("sings", "O")], [("Ann", "B-PER"), ("in", "O"), ("Rome", "B-LOC")]] * 3
    train = label_file(tmp_path / "train.conll", rows)
    assert main(train_on(train, tmp_path / "run")) == 0
    assert "1 entity type differs only in case: PER (6 labels) and per (3 labels)" in capsys.readouterr().out


def test_a_repair_of_a_file_read_twice_is_said_once(tmp_path, capsys):
    """Without --dev the training file is read for its training and its carved dev split: what was
    repaired in it (here, comment lines left out) is one warning, not two."""
    from seqtransfer.cli import main

    rows = "".join(f"# sent_id = {index}\nJohn\tB-person\nruns\tO\n\n" for index in range(12))
    train = tmp_path / "commented.conll"
    train.write_text(rows, encoding="utf-8")
    assert main(["train", "--train", str(train), "--epochs", "1", "--quiet", "--output", str(tmp_path / "run"), *TINY_MODEL]) == 0
    assert capsys.readouterr().out.count("comment lines before sentences") == 1
