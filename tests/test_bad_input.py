"""Every kind of bad input ends in one clear line naming the file (and line) and the fix.

Each case runs the real CLI in-process and checks: exit code 2, exactly one stderr line, no
traceback, and no run directory left behind.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FIXTURES, TINY_MODEL, tiny_train_arguments

from seqtransfer.cli import main
from seqtransfer.errors import SeqTransferError


def run_cli(arguments: list[str], capsys) -> str:
    """Run the CLI, assert it failed cleanly, return its single error line."""
    code = main(arguments)
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if line.strip()]
    assert code == 2, captured
    assert len(lines) == 1, lines
    assert "Traceback" not in captured.err
    return lines[0]


def train_on(train_file: Path, output: Path, *extra: str) -> list[str]:
    return [
        "train",
        "--train",
        str(train_file),
        "--dev",
        str(FIXTURES / "tiny_ner_dev.conll"),
        "--columns",
        "word,ner",
        "--scheme",
        "iob2",
        "--output",
        str(output),
        "--quiet",
        "--epochs",
        "1",
        *TINY_MODEL,
        *extra,
    ]


def test_missing_file(tmp_path, capsys):
    message = run_cli(train_on(tmp_path / "nope.conll", tmp_path / "run"), capsys)
    assert "nope.conll" in message and "not found" in message
    assert not (tmp_path / "run").exists()


def test_empty_file(tmp_path, capsys):
    message = run_cli(train_on(FIXTURES / "empty.conll", tmp_path / "run"), capsys)
    assert "empty.conll" in message and "fix:" in message
    assert not (tmp_path / "run").exists()


def test_inconsistent_column_count(tmp_path, capsys):
    bad = tmp_path / "bad.conll"
    bad.write_text("John\tB-person\nlives\tO\textra\n", encoding="utf-8")
    message = run_cli(train_on(bad, tmp_path / "run"), capsys)
    assert f"{bad}:2" in message
    assert not (tmp_path / "run").exists()


def test_non_utf8_bytes(tmp_path, capsys):
    bad = tmp_path / "latin.conll"
    bad.write_bytes("John\tB-person\n\nZ\xfcrich\tB-location\n".encode("latin-1"))
    message = run_cli(train_on(bad, tmp_path / "run"), capsys)
    assert f"{bad}:3" in message and "UTF-8" in message
    assert not (tmp_path / "run").exists()


def test_unknown_dataset_suggests_closest(tmp_path, capsys):
    message = run_cli(["train", "--dataset", "wnut", "--output", str(tmp_path / "run")], capsys)
    assert "wnut17" in message
    assert not (tmp_path / "run").exists()


def test_unknown_config_key_lists_valid_ones(tmp_path, capsys):
    message = run_cli(train_on(FIXTURES / "tiny_ner_train.conll", tmp_path / "run", "train.learning_rat=0.1"), capsys)
    assert "learning_rat" in message and "learning_rate" in message and "momentum" in message


@pytest.mark.parametrize(
    "override, requirement",
    [("model.dropout=1.5", "[0, 1)"), ("model.hidden=7", "even"), ("train.learning_rate=-0.1", "positive"), ("train.batch_size=0", "at least 1"), ("data.max_train_sentences=0", "at least 1")],
)
def test_impossible_value_is_one_line_before_anything_is_written(tmp_path, capsys, override, requirement):
    message = run_cli(train_on(FIXTURES / "tiny_ner_train.conll", tmp_path / "run", override), capsys)
    assert override.split("=")[0] in message and requirement in message
    assert not (tmp_path / "run").exists()


def test_a_rate_in_scientific_notation_without_a_dot_is_a_number():
    """YAML 1.1 reads 1e-5 (no dot) as text; a float setting takes it as the number it means."""
    from seqtransfer.config import RunConfig, apply_overrides, config_from_dict

    assert apply_overrides(RunConfig(), ["train.learning_rate=1e-5", "transfer.l2sp_weight=2E+1"]).train.learning_rate == 1e-5
    assert config_from_dict({"train": {"learning_rate": "5e-4"}}).train.learning_rate == 5e-4
    with pytest.raises(SeqTransferError, match="must be float"):
        apply_overrides(RunConfig(), ["train.learning_rate=fast"])


def test_unknown_key_in_config_file(tmp_path, capsys):
    config = tmp_path / "run.yaml"
    config.write_text("model:\n  hiden: 300\n", encoding="utf-8")
    message = run_cli(["train", "--config", str(config), "--output", str(tmp_path / "run")], capsys)
    assert str(config) in message and "hidden" in message


def test_tag_breaking_the_declared_scheme_with_strict(tmp_path, capsys):
    bad = tmp_path / "bad_scheme.conll"
    bad.write_text("John\tB-person\nlives\tO\nin\tO\nYork\tI-location\n", encoding="utf-8")
    message = run_cli(train_on(bad, tmp_path / "run", "--strict"), capsys)
    assert f"{bad}:4" in message and "I-location" in message
    assert not (tmp_path / "run").exists()


def test_two_thousand_token_sentence_trains_and_predicts(tmp_path):
    long_file = tmp_path / "long.conll"
    tokens = ["John\tB-person", "lives\tO", "in\tO", "York\tB-location"] * 500
    long_file.write_text("\n".join(tokens) + "\n\n" + (FIXTURES / "tiny_ner_train.conll").read_text(), encoding="utf-8")
    assert main(train_on(long_file, tmp_path / "run")) == 0
    import seqtransfer

    tags = seqtransfer.load(tmp_path / "run").predict([["word"] * 2000])
    assert len(tags[0]) == 2000


def test_blank_lines_in_prediction_input_are_left_out_with_a_warning(tiny_run, tmp_path, capsys):
    """Paragraph breaks in raw text are common: they are left out, and the warning names them; a
    file of blank lines alone is one error line, and nothing is written."""
    text = tmp_path / "input.txt"
    text.write_text("John lives in Berlin\n\n  \nMary loves Paris\n", encoding="utf-8")
    output = tmp_path / "tagged.conll"
    assert main(["predict", str(tiny_run), str(text), "--output", str(output)]) == 0
    assert f"{text}: 2 blank lines left out (lines 2, 3)" in capsys.readouterr().err
    assert [block.split("\n")[0].split("\t")[0] for block in output.read_text(encoding="utf-8").strip().split("\n\n")] == ["John", "Mary"]
    text.write_text("\n \n", encoding="utf-8")
    message = run_cli(["predict", str(tiny_run), str(text), "--output", str(tmp_path / "none.conll")], capsys)
    assert str(text) in message and "no sentences" in message and not (tmp_path / "none.conll").exists()


@pytest.mark.parametrize("make", [lambda root: root / "missing", lambda root: root])
def test_run_dir_that_is_not_a_run(tmp_path, capsys, make):
    message = run_cli(["predict", str(make(tmp_path)), "-"], capsys)
    assert str(make(tmp_path)) in message and "seqtransfer train" in message


def test_output_that_already_holds_a_finished_run(tiny_run, capsys):
    message = run_cli(tiny_train_arguments(tiny_run), capsys)
    assert "already" in message and str(tiny_run) in message


def test_the_value_rules_of_registry_settings_name_every_registry_entry():
    """model.encoder_adapter, multitask.weight_schedule and the tokenizer settings are checked against the registries' names."""
    from seqtransfer.config import RunConfig, apply_overrides, check_values
    from seqtransfer.config_values import TOKENIZER_NAMES
    from seqtransfer.data.tokenize import TOKENIZERS
    from seqtransfer.models.adapters import ADAPTERS
    from seqtransfer.workflows.multitask import WEIGHT_SCHEDULES

    for name in ADAPTERS:
        check_values(apply_overrides(RunConfig(), [f"model.encoder_adapter={name}"]))
    for name in WEIGHT_SCHEDULES:
        check_values(apply_overrides(RunConfig(), [f"multitask.weight_schedule={name}"]))
    with pytest.raises(SeqTransferError, match="geometric, linear or constant"):
        check_values(apply_overrides(RunConfig(), ["multitask.weight_schedule=cosine"]))
    assert TOKENIZER_NAMES == tuple(TOKENIZERS)
    for name in TOKENIZERS:
        check_values(apply_overrides(RunConfig(), [f"data.select_tokenizer={name}", f"train.adversarial_tokenizer={name}"]))
    with pytest.raises(SeqTransferError, match="one of whitespace, tweet, slavic, got 'nltk'"):
        check_values(apply_overrides(RunConfig(), ["data.select_tokenizer=nltk"]))


def test_predict_reads_a_conll_or_conllu_file_by_its_extension(tiny_run, tmp_path, capsys):
    """Without --format, a .conll file is read as columns (not each token line as a sentence of
    its own); --format text still reads it as raw text."""
    path = tmp_path / "input.conll"
    path.write_text("John\tB-person\nlives\tO\n\nMary\tB-person\n", encoding="utf-8")
    assert main(["predict", str(tiny_run), str(path), "--columns", "word,ner"]) == 0
    blocks = capsys.readouterr().out.strip().split("\n\n")
    assert [[line.split("\t")[0] for line in block.splitlines()] for block in blocks] == [["John", "lives"], ["Mary"]]
    assert main(["predict", str(tiny_run), str(path), "--format", "text"]) == 0
    assert [line.split("\t")[0] for line in capsys.readouterr().out.split("\n\n")[0].splitlines()] == ["John", "B-person"]
    other = tmp_path / "input.txt"  # another extension: columns when --columns names them
    other.write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    assert main(["predict", str(tiny_run), str(other), "--columns", "word,ner"]) == 0
    assert [line.split("\t")[0] for line in capsys.readouterr().out.split("\n\n")[0].splitlines()] == ["John", "lives"]
    tabbed = tmp_path / "input.tsv"  # NER corpora ship as .tsv column files too: --columns says which
    tabbed.write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    assert main(["predict", str(tiny_run), str(tabbed), "--columns", "word,ner"]) == 0
    assert [line.split("\t")[0] for line in capsys.readouterr().out.split("\n\n")[0].splitlines()] == ["John", "lives"]
