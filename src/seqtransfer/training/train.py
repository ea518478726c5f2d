"""Train a tagger from a RunConfig and write its run directory."""

from __future__ import annotations

import random
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from seqtransfer import rundir
from seqtransfer.config import RunConfig
from seqtransfer.data.batching import encode_sentences
from seqtransfer.data.task_data import TaskData, load_task_data
from seqtransfer.data.vocabulary import Vocabularies, build_vocabularies, word_key
from seqtransfer.embeddings.static import build_embedding_matrix, load_vectors
from seqtransfer.errors import SeqTransferError
from seqtransfer.models.tagger import Tagger, count_parameters
from seqtransfer.training.loop import EvaluationSet, fit, predict_labels
from seqtransfer.training.metrics import evaluate


def seed_everything(seed: int, threads: int) -> None:
    """Make a run repeatable on CPU."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True, warn_only=True)


def prepare_vocabularies(config: RunConfig, data: TaskData, log: Callable[[str], None]) -> tuple[Vocabularies, np.ndarray]:
    """Vocabularies and the initial word embedding matrix (pre-trained rows where available)."""
    model_config, data_config = config.model, config.data
    evaluation_tokens = [tokens for split in data.splits if split != "train" for tokens in data.tokens(split)]
    vectors = None
    if model_config.embeddings:
        keys = {word_key(t, model_config.lowercase_words, data_config.twitter_normalization) for s in data.tokens("train") + evaluation_tokens for t in s}
        vectors = load_vectors(model_config.embeddings, keys, lowercase=model_config.lowercase_words)
        if vectors.dimension != model_config.word_dimension:
            raise SeqTransferError(
                f"embeddings '{model_config.embeddings}' have {vectors.dimension} dimensions, model.word_dimension is {model_config.word_dimension}",
                hint=f"set model.word_dimension={vectors.dimension}",
            )
    pretrained = set(vectors.words) if vectors is not None else set()
    vocabularies = build_vocabularies(
        data.tokens("train"), data.labels("train"), evaluation_tokens, pretrained, model_config.lowercase_words, data_config.twitter_normalization
    )
    matrix, found = build_embedding_matrix(vocabularies.words.items, vectors, model_config.word_dimension, seed=config.train.seed)
    log(f"vocabulary: {len(vocabularies.words)} words ({found} pre-trained), {len(vocabularies.characters)} characters, {len(vocabularies.labels)} labels")
    return vocabularies, matrix


def evaluation_set(data: TaskData, split: str, vocabularies: Vocabularies) -> EvaluationSet:
    return EvaluationSet(encode_sentences(data.tokens(split), vocabularies), data.labels(split))


def train_tagger(config: RunConfig, run_directory: str | Path, log: Callable[[str], None] = print, show_progress: bool = True) -> dict:
    """Train, keep the best dev epoch, score dev and test, and write the run directory."""
    directory = Path(run_directory)
    if (directory / rundir.METRICS).exists():
        raise SeqTransferError("run directory already holds a finished run", path=directory, hint="choose another --output")
    started = time.perf_counter()
    seed_everything(config.train.seed, config.train.threads)
    data = load_task_data(config.data)
    if "dev" not in data.splits:
        raise SeqTransferError(f"dataset '{data.dataset}' has no dev split for early stopping", hint="pass --dev PATH")
    vocabularies, matrix = prepare_vocabularies(config, data, log)
    rundir.save_setup(directory, config, vocabularies)
    model = Tagger(config.model, len(vocabularies.words), len(vocabularies.characters), len(vocabularies.labels))
    model.load_word_vectors(matrix)
    train = encode_sentences(data.tokens("train"), vocabularies, data.labels("train"))
    dev = evaluation_set(data, "dev", vocabularies)
    log(f"training on {data.dataset}/{data.task}: {len(train.lengths)} sentences, {int(train.lengths.sum())} tokens; {count_parameters(model)} parameters")
    result = fit(model, train, dev, vocabularies.labels, data.metric, config.train, checkpoint_dir=directory / "checkpoint", log=log, show_progress=show_progress)
    model.load_state_dict(result.best_state)
    metrics = {"dataset": data.dataset, "task": data.task, "metric": data.metric, "best_epoch": result.best_epoch}
    for split in data.splits:
        if split == "train":
            continue
        evaluation = dev if split == "dev" else evaluation_set(data, split, vocabularies)
        predicted = predict_labels(model, evaluation.encoded, vocabularies.labels, config.train.evaluation_batch_size)
        metrics[split] = evaluate(evaluation.gold, predicted, data.metric)
        rundir.write_predictions(directory / "predictions" / f"{split}.conll", data.tokens(split), evaluation.gold, predicted)
    metrics.update(parameters=count_parameters(model), history=result.history, seconds=round(time.perf_counter() - started, 1))
    rundir.save_weights(directory, result.best_state)
    rundir.save_metrics(directory, metrics)
    shutil.rmtree(directory / "checkpoint", ignore_errors=True)
    return metrics
