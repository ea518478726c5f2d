"""The paper experiments ship in the package: found by name, listed with their cost, their config
files read from the package when the working folder has no `experiments/` (an installed wheel)."""

import subprocess
import sys
from pathlib import Path

import pytest

from seqtransfer.corpora.task_data import read_label_map
from seqtransfer.errors import SeqTransferError
from seqtransfer.experiments.shipped import experiment_file, shipped_names, shipped_table
from seqtransfer.experiments.spec import load_experiment
from seqtransfer.files import SHIPPED_EXPERIMENTS

ROOT = Path(__file__).resolve().parents[1]


def test_the_clone_folder_is_the_shipped_one():
    assert (ROOT / "experiments").resolve() == SHIPPED_EXPERIMENTS
    assert "pretrand-table4" in shipped_names() and "mutspad-table2" in shipped_names()


@pytest.mark.parametrize("name", ["pretrand-table4", "pretrand_table4", "pretrand_table4.yaml"])
def test_a_shipped_experiment_is_found_by_name_from_any_folder(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert experiment_file(name) == SHIPPED_EXPERIMENTS / "pretrand_table4.yaml"
    assert load_experiment(name).name == "pretrand_table4"


def test_a_file_of_the_working_folder_wins_over_a_shipped_one(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pretrand_table4.yaml").write_text("mine")
    assert experiment_file("pretrand_table4.yaml") == Path("pretrand_table4.yaml")


def test_an_unknown_name_lists_the_shipped_ones(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SeqTransferError, match="no experiment file or shipped experiment named 'pretrand-table9'") as raised:
        experiment_file("pretrand-table9")
    assert "pretrand-table4" in raised.value.hint


def test_config_paths_of_the_experiments_are_read_from_the_package_outside_a_clone(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert read_label_map("experiments/configs/ptb_to_upos.yaml")["conll2000"]["MD"] == "AUX"  # the shipped file, read outside a clone
    with pytest.raises(SeqTransferError, match="not found"):
        read_label_map("experiments/configs/no_such_map.yaml")


def test_experiment_list_shows_every_shipped_experiment_with_its_cost():
    output = subprocess.run([sys.executable, "-m", "seqtransfer.cli", "experiment", "list"], capture_output=True, text=True, check=True).stdout
    rows = shipped_table()
    assert len(rows) == len(list(SHIPPED_EXPERIMENTS.glob("*.yaml"))) > 20
    for row in rows:
        assert f"{row['name']} " in output and row["cost"] and f"cost: {row['cost']}" in output


@pytest.mark.slow
def test_the_built_wheel_works_where_it_is_installed():
    """Builds the sdist and wheel, installs the wheel in a clean venv and runs it outside the clone."""
    result = subprocess.run(["bash", str(ROOT / "scripts" / "wheel_check.sh")], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "wheel check passed" in result.stdout
