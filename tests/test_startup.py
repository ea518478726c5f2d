"""What every command pays before it works: `--help` without torch, a run without torch's compiler."""

import subprocess
import sys

import torch

from seqtransfer.commands.selflabel import METHOD_NAMES
from seqtransfer.training.seeding import seed_everything
from seqtransfer.workflows.selflabel import METHODS


def imported_after(code: str) -> set[str]:
    """The top-level modules a fresh interpreter holds after running ``code``."""
    script = f"import sys\n{code}\nprint(' '.join(sorted({{name.split('.')[0] for name in sys.modules}})))"
    output = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    return set(output.split())


def test_help_does_not_import_torch():
    assert "torch" not in imported_after("from seqtransfer.cli import build_parser\nbuild_parser()")


def test_selflabel_choices_are_the_workflow_methods():
    assert METHOD_NAMES == tuple(METHODS)


def test_seeding_turns_deterministic_algorithms_on_without_the_compiler():
    modules = subprocess.run(
        [sys.executable, "-c", "import sys\nfrom seqtransfer.training.seeding import seed_everything\nseed_everything(1, 1)\nprint('torch._inductor' in sys.modules)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert modules.strip() == "False"
    seed_everything(1, 1)
    assert torch.are_deterministic_algorithms_enabled() and torch.is_deterministic_algorithms_warn_only_enabled()
