"""A pretrained LM continued on target-domain text (``seqtransfer finetune-lm``; ULMFiT's second
stage, domain-adaptive pretraining; issue 56, point 2).

The LM keeps its vocabulary and character set (the target's new words read as <unk> in its softmax;
its characters still spell them for the encoder) and trains on the target text with ULMFiT's
discriminative rates (each layer group below the top at the rate of the one above divided by
``discriminative_factor``, 2.6) and slanted triangular rates (``train.schedule=slanted_triangular``),
stopping early on the held-out perplexity of target text it does not train on. The perplexity of
that held-out text is measured before and after: what the stage bought. The result is a folder of
the same architecture, usable wherever the first one was.

Our ELMo-style LM (``embeddings/recurrent_lm.py``), our AWD-LSTM (``embeddings/awd_lstm.py``:
ULMFiT's own LM, read as a stream in chunks of ``bptt`` words as in its pretraining) and
Transformers (our ``pretrain-lm`` LMs, MiniLM, MPNet, any Hugging Face folder with a masked or
causal LM class: ``workflows/transformer_continuation.py``, which says how a missing MLM head is
made) are continued; other folders are refused with one line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from torch import nn

from seqtransfer.embeddings.awd_lstm import is_awd_lstm, load_awd_lstm, save_awd_lstm
from seqtransfer.embeddings.packaged import PACKAGED
from seqtransfer.embeddings.recurrent_lm import is_recurrent_lm, load_recurrent_lm, read_vocabulary, save_recurrent_lm, softmax_word_ids
from seqtransfer.embeddings.tokenization import window_limit
from seqtransfer.embeddings.transformer import encoder_config, encoder_fingerprint, encoder_path, is_causal_encoder
from seqtransfer.errors import SeqTransferError
from seqtransfer.workflows.awd_pretraining import StreamBatches, StreamPretraining
from seqtransfer.workflows.awd_pretraining import encode_sentences as encode_stream
from seqtransfer.workflows.pretraining import LanguageModelBatches, LanguageModelSettings, Pretraining, encode_lines, held_out_batches, perplexity, start_work_folder
from seqtransfer.workflows.recurrent_pretraining import RecurrentBatches, RecurrentPretraining, on_device, prepare_run, publish, train_language_model, training_cost
from seqtransfer.workflows.transformer_continuation import MAX_SUBWORDS, is_transformer_folder, load_language_model, transformer_groups, unknown_share


@dataclass
class ContinuationSettings:
    source: str  # the LM folder continued
    source_hash: str  # its files' hash: another LM in its place is another run
    held_out: float = 0.1  # share of the target lines kept for perplexity
    max_tokens: int = 100
    discriminative_factor: float = 2.6
    bptt: int = 70  # the AWD-LSTM's chunks of its stream (its pretraining's default)


LAYER_GROUPS = ("tokens.", "lstm_layers.0.", "lstm_layers.1.", "softmax.")  # bottom to top
AWD_LAYER_GROUPS = ("embedding.", "lstm_layers.0.", "lstm_layers.1.", ("lstm_layers.2.", "decoder_bias"))  # the tied decoder's bias with the top layer


def discriminative_groups(language_model: nn.Module, learning_rate: float, factor: float, layer_groups: tuple = LAYER_GROUPS) -> list[dict]:
    """Parameter groups bottom to top, the top (the softmax) at ``learning_rate``, each lower one ``factor`` times slower."""
    groups = []
    for depth, prefix in enumerate(reversed(layer_groups)):
        parameters = [parameter for name, parameter in language_model.named_parameters() if name.startswith(prefix)]
        if parameters:
            groups.append({"params": parameters, "lr": learning_rate / factor**depth})
    return groups[::-1]


def continue_language_model(folder: str, sentences: list[list[str]], settings: ContinuationSettings, train_config, output: Path, log, show_progress: bool = True, device: str = "auto") -> dict:
    """Continue the LM of ``folder`` on ``sentences``; write the continued LM's folder ``output``
    (built in ``output.partial``; an interrupted run resumes from there)."""
    check_continuable(folder)
    if is_transformer_folder(folder):
        return continue_transformer(folder, sentences, settings, train_config, output, log, show_progress, device)
    if is_awd_lstm(Path(folder)):
        return continue_awd_lstm(folder, sentences, settings, train_config, output, log, show_progress, device)
    sentences = [sentence[: settings.max_tokens] for sentence in sentences if sentence]
    work, identity, training, held_out = prepare_run(sentences, settings, train_config, output, architecture="bilstm-continued")
    language_model, word_ids, character_ids = load_recurrent_lm(Path(folder))
    words, characters = read_vocabulary(Path(folder))
    model = on_device(RecurrentPretraining(language_model), device)
    limit = language_model.settings["max_characters"]
    source = RecurrentBatches(training, word_ids, character_ids, limit, train_config.batch_size, train_config.seed)
    scored = RecurrentBatches(held_out, word_ids, character_ids, limit, train_config.evaluation_batch_size, train_config.seed).fixed()
    before = perplexity(model, scored)
    unknown = sum(word not in word_ids for sentence in training for word in sentence) / max(sum(map(len, training)), 1)
    log(
        f"continuing {folder} on {len(training):,} target sentences ({sum(map(len, training)):,} tokens, {unknown:.1%} outside its softmax's words), "
        f"{len(held_out):,} held out; held-out perplexity before: {before:.2f}"
    )
    start_work_folder(work, identity)
    groups = discriminative_groups(language_model, train_config.learning_rate, settings.discriminative_factor)
    result, final = train_language_model(model, source, scored, train_config, work, log, show_progress, parameter_groups=groups)
    log(f"held-out perplexity of the target text: {before:.2f} before, {final:.2f} after")
    summary = continuation_summary("bilstm", settings, before, unknown, (training, held_out), language_model.settings, training_cost(result, final, sum(map(len, training)), train_config.amp, model))
    save_recurrent_lm(work / "model", language_model.cpu(), words, characters)
    publish(work, output, summary)
    return summary


def continue_awd_lstm(folder: str, sentences: list[list[str]], settings: ContinuationSettings, train_config, output: Path, log, show_progress: bool, device: str) -> dict:
    """The AWD-LSTM continued on ``sentences``, read as its pretraining read its text (a stream
    of the sentences, each ended by </S>, in chunks of ``bptt`` words), with discriminative rates
    over its embedding and each LSTM layer; its folder written as ``output``."""
    work, identity, training, held_out = prepare_run([sentence for sentence in sentences if sentence], settings, train_config, output, architecture="awd-lstm-continued")
    language_model, words = load_awd_lstm(Path(folder))
    word_ids = softmax_word_ids(words)
    model = on_device(StreamPretraining(language_model), device)
    source = StreamBatches(encode_stream(training, word_ids), train_config.batch_size, settings.bptt, train_config.seed)
    scored = StreamBatches(encode_stream(held_out, word_ids), train_config.batch_size, settings.bptt, train_config.seed).fixed()
    before = perplexity(model, scored)
    unknown = sum(word not in word_ids for sentence in training for word in sentence) / max(sum(map(len, training)), 1)
    read = f"{len(training):,} target sentences ({source.tokens:,} tokens with </S>, {unknown:.1%} outside its words), {len(held_out):,} held out"
    log(f"continuing {folder} on {read}; held-out perplexity before: {before:.2f}")
    start_work_folder(work, identity)
    groups = discriminative_groups(language_model, train_config.learning_rate, settings.discriminative_factor, AWD_LAYER_GROUPS)
    result, final = train_language_model(model, source, scored, train_config, work, log, show_progress, parameter_groups=groups)
    log(f"held-out perplexity of the target text: {before:.2f} before, {final:.2f} after")
    cost = training_cost(result, final, source.tokens, train_config.amp, model)
    summary = {**continuation_summary("awd-lstm", settings, before, unknown, (training, held_out), language_model.settings, cost), "bptt": settings.bptt}
    save_awd_lstm(work / "model", language_model.cpu(), words)
    publish(work, output, summary)
    return summary


def continue_transformer(folder: str, sentences: list[list[str]], settings, train_config, output: Path, log, show_progress: bool, device: str) -> dict:
    """The Transformer of ``folder`` (a path or ``minilm``/``mpnet``) continued on ``sentences``; its
    folder, head included, written as ``output``."""
    from transformers import AutoTokenizer

    path = encoder_path(folder)
    causal = is_causal_encoder(folder)
    work, identity, training, held_out = prepare_run([sentence for sentence in sentences if sentence], settings, train_config, output, architecture="transformer-continued")
    tokenizer = AutoTokenizer.from_pretrained(str(path))
    if not causal and tokenizer.mask_token_id is None:
        raise SeqTransferError("this encoder's tokenizer has no mask token, so it cannot be continued as a masked LM", path=path)
    language_model, head = load_language_model(path, causal)
    length = min(MAX_SUBWORDS, window_limit(encoder_config(folder), tokenizer) + 2)  # what its positions hold, [CLS] and [SEP] included
    lm_settings = LanguageModelSettings(objective="causal" if causal else "masked", max_length=length)
    sequences = encode_lines(tokenizer, [" ".join(sentence) for sentence in training], length)
    source = LanguageModelBatches(sequences, lm_settings, tokenizer, train_config.batch_size, train_config.seed)
    scored = held_out_batches(tokenizer, [" ".join(sentence) for sentence in held_out], lm_settings, train_config)
    model = on_device(Pretraining(language_model, causal), device)
    before = perplexity(model, scored)
    subwords = sum(map(len, sequences))
    log(
        f"continuing {folder} as a {lm_settings.objective} LM on {len(sequences):,} target sentences ({subwords:,} sub-words), {len(held_out):,} held out; "
        f"its LM head: {'from the folder' if head == 'pretrained' else 'new (random transform, decoder tied to the input embeddings)'}; "
        f"held-out {'pseudo-' if not causal else ''}perplexity before: {before:.2f}"
    )
    start_work_folder(work, identity)
    groups = transformer_groups(language_model, train_config.learning_rate, settings.discriminative_factor)
    result, final = train_language_model(model, source, scored, train_config, work, log, show_progress, parameter_groups=groups)
    log(f"held-out {'pseudo-' if not causal else ''}perplexity of the target text: {before:.2f} before, {final:.2f} after")
    model_settings = {"model_type": encoder_config(folder).get("model_type"), "objective": lm_settings.objective, "max_subwords": length, "head": head}
    summary = continuation_summary("transformer", settings, before, unknown_share(tokenizer, sequences), (training, held_out), model_settings, training_cost(result, final, subwords, model=model))
    if not show_progress:
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()
    language_model.cpu().save_pretrained(work / "model")
    tokenizer.save_pretrained(work / "model")
    publish(work, output, summary)
    return summary


def continuation_summary(architecture: str, settings: ContinuationSettings, before: float, unknown: float, splits: tuple[list, list], model_settings: dict, cost: dict) -> dict:
    """What ``pretraining.json`` says of a continuation: the LM continued, the perplexity before
    (the cost holds the one after), the target words outside its vocabulary, the splits' sizes."""
    training, held_out = splits
    return {
        "architecture": architecture,
        "continued_from": settings.source,
        "continued_from_hash": settings.source_hash,
        "held_out_perplexity_before": round(before, 3),
        "unknown_word_share": round(unknown, 4),
        "discriminative_factor": settings.discriminative_factor,
        "training_sentences": len(training),
        "held_out_sentences": len(held_out),
        "settings": model_settings,
        **cost,
    }


def check_continuable(folder: str) -> None:
    """A folder of our ELMo-style LM, our AWD-LSTM, or a Transformer (a path, or ``minilm``/``mpnet``); others are one line."""
    if folder in PACKAGED:
        encoder_path(folder)  # installed, or one line saying how
        return
    if not Path(folder).is_dir():
        raise SeqTransferError("LM folder not found", path=folder, hint="pass the folder seqtransfer pretrain-lm wrote, or minilm / mpnet")
    if not (is_recurrent_lm(Path(folder)) or is_awd_lstm(Path(folder)) or is_transformer_folder(folder)):
        raise SeqTransferError(
            "finetune-lm continues our own LMs (pretrain-lm) and Hugging Face Transformer folders, and this folder holds neither",
            path=folder,
            hint="pass a folder written by seqtransfer pretrain-lm, a Transformer folder (config.json, weights, tokenizer), or minilm / mpnet",
        )


def source_settings(folder: str, held_out: float, discriminative_factor: float) -> ContinuationSettings:
    """The continuation's settings, the source LM named by its path and its hash."""
    check_continuable(folder)
    return ContinuationSettings(folder, encoder_fingerprint(folder), held_out, discriminative_factor=discriminative_factor)
