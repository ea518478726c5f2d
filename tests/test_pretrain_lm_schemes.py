"""Our own pretrained LM (`seqtransfer pretrain-lm`, masked and causal) as the encoder of a tagger
adapted with LoRA, Houlsby adapters or chain-thaw: it trains, and its run predicts."""

from __future__ import annotations

import pytest

import seqtransfer
from conftest import FIXTURES, TINY_MODEL
from seqtransfer.cli import run
from test_pretrain_lm import LINES, TINY_LM

pytest.importorskip("transformers")

SCHEMES = {
    "lora": ["model.encoder_adapter=lora", "model.lora_rank=2"],
    "houlsby": ["model.encoder_adapter=houlsby", "model.adapter_size=4"],
    "chain_thaw": ["transfer.adaptations=[chain_thaw]"],
    "chain_thaw_lora": ["model.encoder_adapter=lora", "model.lora_rank=2", "transfer.adaptations=[chain_thaw]"],
}


@pytest.fixture(scope="module", params=["masked", "causal"])
def language_model(request, tmp_path_factory):
    """A tiny LM folder (1 layer of 16 units) pretrained on ten short lines."""
    folder = tmp_path_factory.mktemp(f"lm-{request.param}")
    (folder / "text.txt").write_text("\n".join(LINES * 4) + "\n", encoding="utf-8")
    run(["pretrain-lm", "--text", str(folder / "text.txt"), "--output", str(folder / "lm"), "--objective", request.param, *TINY_LM])
    return folder / "lm"


@pytest.fixture(autouse=True)
def feature_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SEQTRANSFER_CACHE", str(tmp_path / "cache"))


@pytest.mark.parametrize("scheme", SCHEMES)
def test_a_pretrained_lm_trains_and_predicts_under_each_adaptation(language_model, tmp_path, scheme):
    from safetensors.torch import load_file

    output = tmp_path / scheme
    metrics = run(["train", "--train", str(FIXTURES / "tiny_ner_train.conll"), "--dev", str(FIXTURES / "tiny_ner_dev.conll"), "--columns", "word,ner",
                   "--epochs", "1", "--output", str(output), "--quiet", *TINY_MODEL, f"model.encoder={language_model}", "model.encoder_mode=finetune",
                   *SCHEMES[scheme]])
    saved = load_file(str(output / "model.safetensors"))
    phases = [record["phase"] for record in metrics["history"]]
    if scheme.startswith("chain_thaw"):  # under LoRA the embeddings train nothing: no phase of theirs
        layer = "encoder.base_model.model.encoder.layer.0" if scheme == "chain_thaw_lora" else "encoder.encoder.layer.0"
        assert phases == ["head", *(["encoder.embeddings"] if scheme == "chain_thaw" else []), layer, "all"]
    else:
        assert phases == ["train"]
    if "model.encoder_adapter=lora" in SCHEMES[scheme]:
        assert any("lora_A" in name for name in saved) and all("lora_" in name or not name.startswith("encoder.") for name in saved)
    if scheme == "houlsby":
        assert any(".adapter.down." in name for name in saved)
    if scheme != "chain_thaw":  # an adapter: the encoder's own weights stay frozen
        assert 0 < metrics["trainable_parameters"] < metrics["parameters"]
    predicted = seqtransfer.load(output, device="cpu").predict([["John", "loves", "Paris"], ["Mary"]])
    assert [len(labels) for labels in predicted] == [3, 1]


def test_a_causal_lm_pools_sentences_by_their_mean_and_takes_no_masked_lm_loss(language_model, tmp_path, capsys):
    """A left-to-right LM's [CLS] vector sees only itself (the same for every sentence), and a masked-LM
    loss reads both sides of a word: with a causal LM both are one line before anything is written."""
    from test_parser import error_line

    sentences = ["train", "--train", str(FIXTURES / "tiny_sentiment_train.tsv"), "--dev", str(FIXTURES / "tiny_sentiment_dev.tsv"), "--epochs", "1", "--quiet",
                 *TINY_MODEL, f"model.encoder={language_model}", "model.encoder_mode=finetune"]
    causal = language_model.parent.name.startswith("lm-causal")
    refused = {"cls": ([], "reads left to right (a causal LM): its first vector ([CLS]) sees only the first token"),
               "auxiliary LM": (["model.sentence_pooling=mean", "transfer.auxiliary_lm_weight=0.1"], "adds a masked-LM loss, which reads both sides")}
    for number, (settings, message) in enumerate(refused.values()):
        output = tmp_path / f"sentences-{number}"
        if causal:
            assert message in error_line([*sentences, "--output", str(output), *settings], capsys)
            assert not output.exists()
        else:  # a masked LM: both train
            assert run([*sentences, "--output", str(output), *settings])["dev"] is not None
    if causal:
        assert run([*sentences, "--output", str(tmp_path / "mean"), "model.sentence_pooling=mean"])["dev"] is not None
