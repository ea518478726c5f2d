"""Our own pretrained LM (`seqtransfer pretrain-lm`, masked and causal) as the encoder of a tagger
adapted with LoRA, Houlsby adapters or chain-thaw: it trains, and its run predicts."""

from __future__ import annotations

import pytest
from conftest import FIXTURES, TINY_MODEL
from test_pretrain_lm import LINES, TINY_LM

import seqtransfer
from seqtransfer.cli import run

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
    metrics = run(
        [
            "train",
            "--train",
            str(FIXTURES / "tiny_ner_train.conll"),
            "--dev",
            str(FIXTURES / "tiny_ner_dev.conll"),
            "--columns",
            "word,ner",
            "--epochs",
            "1",
            "--output",
            str(output),
            "--quiet",
            *TINY_MODEL,
            f"model.encoder={language_model}",
            "model.encoder_mode=finetune",
            *SCHEMES[scheme],
        ]
    )
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


def test_a_causal_lm_pools_sentences_by_their_mean_and_its_auxiliary_lm_predicts_the_next_sub_word(language_model, tmp_path, capsys):
    """A left-to-right LM's [CLS] vector sees only itself (the same for every sentence): one line before
    anything is written. Its auxiliary LM loss continues its pretraining: each sub-word predicts the next."""
    from test_parser import error_line

    sentences = [
        "train",
        "--train",
        str(FIXTURES / "tiny_sentiment_train.tsv"),
        "--dev",
        str(FIXTURES / "tiny_sentiment_dev.tsv"),
        "--epochs",
        "1",
        "--quiet",
        *TINY_MODEL,
        f"model.encoder={language_model}",
        "model.encoder_mode=finetune",
    ]
    causal = language_model.parent.name.startswith("lm-causal")
    if causal:
        message = "reads left to right (a causal LM): its first vector ([CLS]) sees only the first token"
        assert message in error_line([*sentences, "--output", str(tmp_path / "cls")], capsys) and not (tmp_path / "cls").exists()
    else:
        assert run([*sentences, "--output", str(tmp_path / "cls")])["dev"] is not None
    output = tmp_path / "auxiliary"
    assert run([*sentences, "--output", str(output), "model.sentence_pooling=mean", "transfer.auxiliary_lm_weight=0.1"])["dev"] is not None
    log = (output / "log.txt").read_text(encoding="utf-8")
    assert "auxiliary LM head: the encoder folder's pretraining head" in log
    assert ("each next sub-word (a causal LM's objective)" in log) == causal and ("masked sub-words (15 %)" in log) == (not causal)


@pytest.mark.parametrize("language_model", ["causal"], indirect=True)  # the masked LM's term: test_masked_lm.py
def test_the_causal_auxiliary_loss_is_the_lms_own_next_sub_word_loss(language_model, tmp_path):
    """The term, with weight 1, equals Hugging Face's BertLMHeadModel loss (summed) when that model
    holds the run's encoder and head: the same objective as the LM's pretraining."""
    import torch
    from transformers import BertLMHeadModel

    from seqtransfer.data.batching import encode_sentences, make_batch
    from seqtransfer.rundir import load_run
    from seqtransfer.transfer.masked_lm import CausalLanguageModelLoss

    output = tmp_path / "run"
    run(
        [
            "train",
            "--train",
            str(FIXTURES / "tiny_ner_train.conll"),
            "--dev",
            str(FIXTURES / "tiny_ner_dev.conll"),
            "--columns",
            "word,ner",
            "--epochs",
            "1",
            "--output",
            str(output),
            "--quiet",
            *TINY_MODEL,
            f"model.encoder={language_model}",
            "model.encoder_mode=finetune",
            "transfer.auxiliary_lm_weight=0.5",
        ]
    )
    loaded = load_run(output)
    model = loaded.model.eval()
    batch = make_batch(encode_sentences([["John", "loves", "Paris"], ["Mary", "lives", "in", "Lagos", "now"]], loaded.vocabularies), torch.arange(2).numpy())
    reference = BertLMHeadModel.from_pretrained(str(language_model)).eval()
    state = {f"bert.{name}": tensor for name, tensor in model.encoder.state_dict().items() if not name.startswith("pooler.")}  # the LM has no pooler
    head = model.language_model.state_dict()
    state.update(
        {
            "cls.predictions.transform.dense.weight": head["transform.weight"],
            "cls.predictions.transform.dense.bias": head["transform.bias"],
            "cls.predictions.transform.LayerNorm.weight": head["norm.weight"],
            "cls.predictions.transform.LayerNorm.bias": head["norm.bias"],
            "cls.predictions.decoder.weight": head["decoder"],
            "cls.predictions.bias": head["bias"],
            "cls.predictions.decoder.bias": head["bias"],
        }
    )
    missing, unexpected = reference.load_state_dict(state, strict=False)
    assert not unexpected and not [name for name in missing if "position_ids" not in name]
    reference.cls.predictions.transform.LayerNorm.eps = model.language_model.norm.eps  # ours keeps torch's eps (masked_lm.py)
    labels = batch.subword_ids.masked_fill(~batch.subword_mask.bool(), -100)
    with torch.no_grad():
        outputs = reference(input_ids=batch.subword_ids, attention_mask=batch.subword_mask, labels=labels)
        predicted = int((labels[:, 1:] != -100).sum())
        ours = CausalLanguageModelLoss(1.0, None)(model, batch)  # no separator left out: every real pair, as Hugging Face's loss
    assert ours.item() == pytest.approx(outputs.loss.item() * predicted, rel=1e-4)
    from seqtransfer.embeddings.transformer import tokenizer_of

    separator = tokenizer_of(str(language_model)).sep_token_id
    assert int((batch.subword_ids == separator).sum()) == 2  # each window ends with one, followed by padding: nothing to leave out here
    pair = make_batch(encode_sentences([["John", "loves", "[SEP]", "Paris"]], loaded.vocabularies), torch.arange(1).numpy())
    with torch.no_grad():  # a pair's first [SEP] predicts nothing: the second text is not what pretraining taught after it
        scored = CausalLanguageModelLoss(1.0, separator)(model, pair) < CausalLanguageModelLoss(1.0, None)(model, pair)
    assert scored
