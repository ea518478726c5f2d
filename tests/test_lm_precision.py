"""Mixed precision for pretraining our recurrent LMs (``pretrain-lm --amp``): bf16 autocast with
fp32 weights, the loss and the held-out perplexity in fp32, the precision recorded and part of the
run's identity."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
import test_awd_lstm
import test_recurrent_lm
import torch
from safetensors.torch import load_file
from test_recurrent_lm import one_line_error

from seqtransfer.cli import run
from seqtransfer.embeddings.recurrent_lm import DEFAULTS, SIZES, RecurrentLanguageModel, encode_batch
from seqtransfer.errors import SeqTransferError
from seqtransfer.training.precision import concrete_mode, resolve_precision
from seqtransfer.workflows.awd_pretraining import StreamPretraining
from seqtransfer.workflows.pretraining import check_work_folder, start_work_folder
from seqtransfer.workflows.recurrent_pretraining import RecurrentPretraining, run_identity

text = test_recurrent_lm.text  # 200 random lines of 25 words


@pytest.mark.parametrize("options", [test_recurrent_lm.TINY_LM, test_awd_lstm.TINY_LM], ids=["bilstm", "awd-lstm"])
def test_bf16_pretraining_records_its_precision_and_scores_as_fp32_does(text, tmp_path, options):
    summaries = {amp: run(["pretrain-lm", "--text", str(text), "--output", str(tmp_path / amp), *options, "--amp", amp]) for amp in ("off", "bf16")}
    for amp, summary in summaries.items():
        assert json.loads((tmp_path / amp / "pretraining.json").read_text())["amp"] == amp == summary["amp"]
    fp32, bf16 = (summaries[amp]["held_out_perplexity"] for amp in ("off", "bf16"))
    assert abs(bf16 - fp32) / fp32 < 0.05  # the same seed and batches, rounded differently
    weights = {amp: load_file(str(tmp_path / amp / "model.safetensors")) for amp in ("off", "bf16")}
    assert weights["off"].keys() == weights["bf16"].keys() and all(tensor.dtype == torch.float32 for tensor in weights["bf16"].values())
    assert not all(torch.equal(weights["off"][name], weights["bf16"][name]) for name in weights["off"])  # bf16 did run


def test_the_recurrent_lm_loss_stays_fp32_under_bf16_autocast():
    torch.manual_seed(0)
    model = RecurrentLanguageModel({**SIZES["tiny"], **DEFAULTS, "softmax": "adaptive", "words": 40, "characters": 30}).eval()
    batch = encode_batch([["ab", "cd", "ab"], ["cd", "ef"]], {character: index + 10 for index, character in enumerate("abcdef")}, 20, {"ab": 3, "cd": 4, "ef": 5})
    arguments = (batch["forms"], batch["form_index"], batch["lengths"], batch["words"])
    with torch.no_grad():
        exact, _ = model.losses(*arguments)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            mixed, _ = model.losses(*arguments)
    assert mixed.dtype == torch.float32 and abs(mixed.item() - exact.item()) / exact.item() < 0.02


def test_only_the_lms_pretraining_and_encoders_take_mixed_precision():
    cpu = torch.device("cpu")
    for pretraining in (RecurrentPretraining, StreamPretraining):
        assert resolve_precision("bf16", pretraining.__new__(pretraining), cpu).dtype == torch.bfloat16
    with pytest.raises(SeqTransferError, match="is for fine-tuned Transformer encoders"):
        resolve_precision("bf16", torch.nn.LSTM(2, 2), cpu)


def test_a_run_resumes_only_a_folder_of_its_own_precision(tmp_path):
    settings = SimpleNamespace(size="tiny")
    identity = {amp: run_identity([["a", "b"]], settings, SimpleNamespace(learning_rate=1e-3, batch_size=8, max_epochs=2, patience=2, seed=1, gradient_clip=5.0, amp=amp)) for amp in ("off", "bf16")}
    assert "amp" not in identity["off"]["training"] and identity["bf16"]["training"]["amp"] == "bf16"  # fp32 folders made before --amp still resume
    for saved, resumed in (("off", "bf16"), ("bf16", "off")):
        work = tmp_path / f"{saved}.partial"
        start_work_folder(work, identity[saved])
        check_work_folder(work, identity[saved])  # the same run resumes
        with pytest.raises(SeqTransferError, match=r"other settings \(training.amp\)"):
            check_work_folder(work, identity[resumed])


def test_auto_trains_in_a_concrete_precision():
    assert concrete_mode("auto", torch.device("cpu")) == "off" and concrete_mode("bf16", torch.device("cpu")) == "bf16"


def test_amp_is_one_line_for_the_transformer_lm(text, tmp_path, capsys):
    error = one_line_error(capsys, ["pretrain-lm", "--text", str(text), "--output", str(tmp_path / "lm"), "--amp", "bf16", "--quiet"])
    assert "--amp bf16 is a BiLSTM or AWD-LSTM LM's option; the Transformer LM does not read it" in error
    assert not (tmp_path / "lm").exists() and not (tmp_path / "lm.partial").exists()


@pytest.mark.parametrize("options", [test_recurrent_lm.TINY_LM, test_awd_lstm.TINY_LM], ids=["bilstm", "awd-lstm"])
def test_finetune_lm_continues_in_bf16_and_records_it(text, tmp_path, options):
    run(["pretrain-lm", "--text", str(text), "--output", str(tmp_path / "general"), *options])
    continued = ["finetune-lm", str(tmp_path / "general"), "--text", str(text), "--epochs", "1", "--batch-size", "16", "--threads", "1", "--quiet", "--device", "cpu"]
    summary = run([*continued, "--output", str(tmp_path / "target"), "--amp", "bf16"])
    assert summary["amp"] == "bf16" == json.loads((tmp_path / "target" / "pretraining.json").read_text())["amp"]
    assert summary["held_out_perplexity"] > 1


def test_finetune_lm_refuses_amp_for_a_transformer_in_one_line(text, tmp_path, capsys):
    pytest.importorskip("transformers")
    from test_encoders import save_tiny_encoder

    folder = save_tiny_encoder(tmp_path / "bert")
    error = one_line_error(capsys, ["finetune-lm", str(folder), "--text", str(text), "--output", str(tmp_path / "out"), "--amp", "bf16", "--quiet"])
    assert "--amp bf16 is for our recurrent LMs" in error and not (tmp_path / "out").exists()
