"""SuPar 1.1.4's biaffine dependency parser, trained and timed in its own venv (see compare_supar.py).

    benchmarks/.supar-venv/bin/python supar_runner.py SETTINGS.json RESULT.json

Trains with SuPar's own command (``supar.cmds.biaffine_dep train``) for a fixed number of epochs
and times only its training passes (``_train``) and its evaluation passes (``_evaluate``) by
wrapping them; then parses the test file with tree decoding (``predict --tree``), timed. Writes
per-epoch training seconds, parse seconds, peak resident memory and the prediction file path.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time

os.environ.setdefault("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")  # SuPar's checkpoints hold pickled objects

import torch  # noqa: E402
from supar.cmds import biaffine_dep  # noqa: E402
from supar.parsers.dep import BiaffineDependencyParser  # noqa: E402

TIMES: dict[str, list[float]] = {"train": [], "evaluate": []}


def timed(name, function):
    def wrapper(*arguments, **keywords):
        started = time.perf_counter()
        try:
            return function(*arguments, **keywords)
        finally:
            TIMES[name].append(time.perf_counter() - started)
    return wrapper


def run_command(arguments: list[str]) -> None:
    sys.argv = ["biaffine-dep", *arguments]
    biaffine_dep.main()


def main(settings_path: str, result_path: str) -> None:
    settings = json.load(open(settings_path))
    BiaffineDependencyParser._train = timed("train", BiaffineDependencyParser._train)
    BiaffineDependencyParser._evaluate = timed("evaluate", BiaffineDependencyParser._evaluate)
    common = ["-d", "-1", "-t", str(settings["threads"]), "-p", settings["model"]]
    run_command(["train", "-b", *common, "-c", settings["config"], "--feat", "char", "--embed", "", "--n-embed", str(settings["word_dimension"]),
                 "--buckets", "32", "--punct", "--train", settings["train"], "--dev", settings["dev"], "--test", settings["test"],
                 f"--seed={settings['seed']}"])  # epochs and tokens per batch are in the config file
    parser = BiaffineDependencyParser.load(settings["model"])
    torch.set_num_threads(settings["threads"])
    parse_seconds = {}
    for batch_tokens in settings["parse_batch_tokens"]:  # the best of two passes at each batch size (in tokens)
        for _ in range(2):
            started = time.perf_counter()
            parser.predict(settings["test"], pred=settings["predictions"], tree=True, proj=False, buckets=8, batch_size=batch_tokens, verbose=False)
            parse_seconds[batch_tokens] = min(parse_seconds.get(batch_tokens, float("inf")), time.perf_counter() - started)
    result = {"train_seconds": TIMES["train"], "evaluate_seconds": TIMES["evaluate"], "parse_seconds_by_batch": parse_seconds, "parse_seconds": min(parse_seconds.values()),
              "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "predictions": settings["predictions"],
              "torch": torch.__version__}
    json.dump(result, open(result_path, "w"), indent=1)


if __name__ == "__main__":
    main(*sys.argv[1:3])
