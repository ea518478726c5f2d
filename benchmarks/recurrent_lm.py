"""Training throughput of our ELMo-style recurrent LM (issue 54): tokens per second, the share of
this CPU's sgemm peak that the arithmetic reaches, and where a training step's time goes.

    python benchmarks/recurrent_lm.py [--sizes small large] [--amp off bf16] [--softmax adaptive full] [--threads 2] [--steps 6] [--output benchmarks/results/recurrent_lm.json]

For each size: batches of 64 real tweets (``tweets_unlabeled`` with ``$SEQTRANSFER_DATA``, else a
synthetic text of the same sentence lengths) with the vocabularies pretraining builds from the whole
text (``tweets_unlabeled``: 23,149 softmax words, as the LMs of docs/results/recurrent_lm.md have;
until 2026-11-30 they were built from the timed batches alone, about 1,060 words, which understated
the softmax); each ``--softmax`` (adaptive, pretraining's default, or full) is a row; after two warm-up
steps, ``--steps`` full training steps (forward, backward, Adam) are timed. Floating-point
operations per step: the forward pass's counted by torch's FlopCounterMode (the LSTMs with
projections included: they run torch's own kernel, whose matrix products it counts; were they
not counted, their sizes would give them: per token, direction and layer 2 * 4N(P + P) for the
gates and 2 * N * P for the projection), the backward pass counted as twice the forward. The peak: the best of 2048 x 2048 x 2048 fp32 matrix products
with the same threads (a bf16 row, ``pretrain-lm --amp bf16``'s autocast, is also set against the best
bf16 product of that size, the bf16 peak). A profile of one more step groups the time by part: the forward pass's character CNN, LSTMs and
softmax, the backward pass, Adam's update, and the rest. Run on a quiet machine; say what else ran.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import random
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from seqtransfer.embeddings.recurrent_lm import DEFAULTS, FIRST_CHARACTER, SIZES, RecurrentLanguageModel, encode_batch  # noqa: E402
from seqtransfer.workflows.recurrent_pretraining import RecurrentSettings, split_sentences, vocabularies  # noqa: E402


def sgemm_peak(threads: int, size: int = 2048, repeats: int = 5, dtype: torch.dtype = torch.float32) -> float:
    """Best matrix-product rate (FLOP/s) of ``size`` cubed in ``dtype`` with ``threads`` threads."""
    torch.set_num_threads(threads)
    left, right = torch.randn(size, size, dtype=dtype), torch.randn(size, size, dtype=dtype)
    left @ right
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        left @ right
        best = min(best, time.perf_counter() - started)
    return 2 * size**3 / best


def sentences(count: int | None) -> list[list[str]]:
    """Tweets tokenised as pretraining reads them (the first ``count``, or all), or synthetic sentences of 10-30 tokens."""
    data = os.environ.get("SEQTRANSFER_DATA")
    if data and (Path(data) / "tweets_unlabeled").is_dir():
        from seqtransfer.corpora.unlabeled import RAW_CORPORA, read_text_lines
        from seqtransfer.data.tokenize import TOKENIZERS

        lines, _, _ = read_text_lines("tweets_unlabeled", data)
        split = TOKENIZERS[RAW_CORPORA["tweets_unlabeled"].tokenizer]
        return [tokens for line in lines[:count] if (tokens := split(line))]
    count = 20000 if count is None else count  # the synthetic text's whole: about as many words as the tweets' vocabulary
    generator = random.Random(1)
    words = ["".join(generator.choices("abcdefghijklmnopqrstuvwxyz", k=generator.randint(2, 9))) for _ in range(20000)]
    return [[generator.choice(words) for _ in range(generator.randint(10, 30))] for _ in range(count)]


def lstm_flops(settings: dict, tokens: int) -> float:
    """Forward + backward FLOPs of the four projected LSTMs over ``tokens`` positions, where torch's
    FlopCounterMode does not count them itself: it counts the matrix products of torch's own LSTM
    kernel (the one an LSTM with projections runs), not those inside oneDNN's."""
    from torch.utils.flop_counter import FlopCounterMode

    probe = torch.nn.LSTM(4, 8, proj_size=4, batch_first=True)
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        probe(torch.zeros(1, 2, 4))
    if counter.get_total_flops() > 0:
        return 0.0  # already in the counted forward pass
    cell, projection = settings["cell"], settings["projection"]
    forward = 2 * 4 * cell * (projection + projection) + 2 * cell * projection
    return 3 * forward * tokens * 4  # two directions x two layers; backward costs twice the forward


def measure(size: str, text: list[list[str]], vocabulary: tuple[list[str], list[str]], threads: int, steps: int, amp: str = "off", softmax: str = "adaptive", batch_size: int = 64) -> dict:
    """One row: ``steps`` timed training steps of the ``size`` LM on ``text``'s batches, with ``vocabulary`` (words, characters)."""
    from torch.profiler import record_function
    from torch.utils.flop_counter import FlopCounterMode

    torch.set_num_threads(threads)
    torch.manual_seed(1)
    words, characters = vocabulary
    word_ids, character_ids = {word: index for index, word in enumerate(words)}, {character: index + FIRST_CHARACTER for index, character in enumerate(characters)}
    settings = {**SIZES[size], **DEFAULTS, "softmax": softmax, "words": len(words), "characters": len(characters) + FIRST_CHARACTER}
    model = RecurrentLanguageModel(settings)
    optimizer = torch.optim.Adam(model.parameters(), 1e-3)
    batches = [encode_batch(text[start : start + batch_size], character_ids, 50, word_ids) for start in range(0, len(text) - batch_size + 1, batch_size)]

    def step(batch: dict) -> None:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp == "bf16"):  # what pretrain-lm --amp bf16 wraps the forward pass in
            loss, count = model.losses(batch["forms"], batch["form_index"], batch["lengths"], batch["words"])
        optimizer.zero_grad(set_to_none=True)
        with record_function("part::backward"):  # labels for time_by_part's profile; no cost without a profiler
            (loss / count).backward()
        with record_function("part::Adam"):
            optimizer.step()

    for batch in batches[:2]:
        step(batch)
    timed = batches[2 : 2 + steps]
    started = time.perf_counter()
    for batch in timed:
        step(batch)
    seconds = time.perf_counter() - started
    tokens = sum(int(batch["lengths"].sum()) - 2 * len(batch["lengths"]) for batch in timed)  # the words, without <S> and </S>
    positions = sum(int(batch["lengths"].sum()) for batch in timed)
    with FlopCounterMode(display=False) as counter:  # the convolutions, linear layers and softmax of one forward pass
        with torch.no_grad():
            for batch in timed:
                model.losses(batch["forms"], batch["form_index"], batch["lengths"], batch["words"])
    flops = 3 * counter.get_total_flops() + lstm_flops(settings, positions)
    return {
        "size": size,
        "amp": amp,
        "softmax": softmax,
        "encoder_parameters": sum(p.numel() for n, p in model.named_parameters() if not n.startswith("softmax.")),
        "softmax_words": len(words),
        "steps": len(timed),
        "tokens": tokens,
        "seconds": round(seconds, 3),
        "tokens_per_second": round(tokens / seconds, 1),
        "flops_per_second": flops / seconds,
        "time_by_part": time_by_part(model, step, timed[0]),
    }


def time_by_part(model: RecurrentLanguageModel, step, batch: dict) -> dict[str, float]:
    """Share of one step's wall time per part: the CPU time torch.profiler gives each record_function label
    (inclusive of what runs inside it; the labelled parts do not nest), the rest what no label covers."""
    from torch.profiler import ProfilerActivity, profile, record_function

    originals = {"tokens": model.tokens.forward, "softmax": model.negative_log_likelihood, "lstm": model.direction}

    def labelled(name, function):
        def wrapper(*arguments, **keywords):
            with record_function(f"part::{name}"):
                return function(*arguments, **keywords)

        return wrapper

    model.tokens.forward = labelled("forward: character CNN", originals["tokens"])
    model.negative_log_likelihood = labelled("forward: softmax", originals["softmax"])
    model.direction = labelled("forward: LSTMs", originals["lstm"])
    started = time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU]) as profiler:
        step(batch)
    total = time.perf_counter() - started
    model.tokens.forward, model.negative_log_likelihood, model.direction = originals["tokens"], originals["softmax"], originals["lstm"]
    parts = {event.key.removeprefix("part::"): event.cpu_time_total / 1e6 for event in profiler.key_averages() if event.key.startswith("part::")}
    parts["the rest"] = total - sum(parts.values())
    return {name: round(seconds / total, 3) for name, seconds in parts.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=["small", "large"], choices=list(SIZES))
    parser.add_argument("--amp", nargs="+", default=["off"], choices=["off", "bf16"], help="precisions to time, each a row (default off: fp32)")
    parser.add_argument("--softmax", nargs="+", default=["adaptive"], choices=["adaptive", "full"], help="softmaxes to time, each a row (default adaptive, pretraining's)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--output", type=Path)
    arguments = parser.parse_args()
    peak = sgemm_peak(arguments.threads)
    bf16_peak = sgemm_peak(arguments.threads, dtype=torch.bfloat16) if "bf16" in arguments.amp else None
    whole = sentences(None)
    defaults = RecurrentSettings()  # pretrain-lm's: sentences cut at max_tokens, the held-out share left out, the softmax's words capped
    training, _ = split_sentences([sentence[: defaults.max_tokens] for sentence in whole], defaults.held_out, 1)  # seed 1, pretrain-lm's default
    vocabulary = vocabularies(training, defaults.vocabulary_size)
    text = [sentence[: defaults.max_tokens] for sentence in whole[: 64 * (arguments.steps + 3)]]
    print(f"sgemm peak ({arguments.threads} threads, 2048^3 fp32): {peak / 1e9:.1f} GFLOP/s" + (f"; bf16: {bf16_peak / 1e9:.1f} GFLOP/s" if bf16_peak else ""))
    results = []
    for size, amp, softmax in itertools.product(arguments.sizes, arguments.amp, arguments.softmax):
        result = measure(size, text, vocabulary, arguments.threads, arguments.steps, amp, softmax)
        result["share_of_sgemm_peak"] = round(result["flops_per_second"] / peak, 3)
        if amp == "bf16":
            result["share_of_bf16_peak"] = round(result["flops_per_second"] / bf16_peak, 3)
        result["flops_per_second"] = round(result["flops_per_second"] / 1e9, 2)
        results.append(result)
        parts = ", ".join(f"{name} {share:.0%}" for name, share in result["time_by_part"].items())
        bf16_share = f" ({result['share_of_bf16_peak']:.0%} of the bf16 peak)" if amp == "bf16" else ""
        print(
            f"{size} {'fp32' if amp == 'off' else amp} {softmax} softmax ({result['softmax_words']:,} words): {result['encoder_parameters']:,} parameters, "
            f"{result['tokens_per_second']:,.0f} training tokens/s, "
            f"{result['flops_per_second']:.1f} GFLOP/s = {result['share_of_sgemm_peak']:.0%} of sgemm peak{bf16_share}; time: {parts}"
        )
    if arguments.output:
        arguments.output.write_text(
            json.dumps(
                {
                    "machine": platform.processor() or platform.machine(),
                    "threads": arguments.threads,
                    "torch": torch.__version__,
                    "sgemm_peak_gflops": round(peak / 1e9, 1),
                    "bf16_peak_gflops": round(bf16_peak / 1e9, 1) if bf16_peak else None,
                    "results": results,
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
