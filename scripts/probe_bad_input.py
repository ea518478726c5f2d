"""A bad-input probe (issue 50, point 5): hundreds of crafted inputs, each run through the CLI in
this process; a case behaves when the command either succeeds or fails with one error line and no
traceback, and nothing it should not have written is left behind.

    SEQTRANSFER_DATA=../shared/datasets python scripts/probe_bad_input.py [--output probe.json]

The cases, made in a temporary folder from the test fixtures:

- data files: each of ~25 damaged training files (empty, binary, NUL bytes, UTF-16, Latin-1, BOMs,
  CRLF, TABs in tokens, one column, swapped columns, a label per line without words, broken
  IOB2, a 5,000-character token, a 2,000-token sentence, CoNLL-U with bad IDs, heads, fields,
  a cycle, no root, ...) trained as a tagger and as a parser, and evaluated by a trained run;
- run directories: a trained run with one file removed, truncated, emptied or replaced by
  nonsense (config.yaml, vocabulary.json, model.safetensors, metrics.json), predicted with and
  evaluated;
- options: numeric options given 0, -1, 2.5, "x" and huge values, for train, predict, evaluate
  and pretrain-lm;
- experiment files: YAML that does not parse, unknown names, cycles, wrong types, a Python tag;
- the Python API: ``load`` with wrong options or damaged runs, ``predict`` given dicts, None,
  numbers, flat lists, empty or non-string tokens, a 3,000-token sentence (a tagger and a parser);
- kill -9: a tagger's training process (200 epochs of the tiny fixture) killed at 12 moments
  (importing, reading, in an epoch, while a checkpoint is written...), then the same command again:
  it behaves when the second command finishes (or, where the first had finished before the kill,
  refuses to train it again) with weights byte-identical to those of a run never interrupted.

Prints the count that behaves and each case that does not (its command and the end of its
traceback); ``--output`` writes the cases as JSON.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
NER_DATA = ["--train", str(FIXTURES / "tiny_ner_train.conll"), "--dev", str(FIXTURES / "tiny_ner_dev.conll"), "--columns", "word,ner"]  # the tiny NER fixture
sys.path.insert(0, str(ROOT / "src"))

TINY = [
    "model.embeddings=null",
    "model.word_dimension=8",
    "model.char_dimension=6",
    "model.char_hidden=8",
    "model.hidden=16",
    "train.threads=1",
    "model.parser_hidden=8",
    "model.parser_layers=1",
    "model.arc_hidden=6",
    "model.relation_hidden=4",
]


def damaged_files(folder: Path) -> dict[str, Path]:
    """Name -> a damaged training file (tagging CoNLL, CoNLL-U, or a sentence TSV)."""
    ner = (FIXTURES / "tiny_ner_train.conll").read_text(encoding="utf-8")
    dep = (FIXTURES / "tiny_dep_train.conllu").read_text(encoding="utf-8")
    first_token = dep.split("\n")[2]
    contents: dict[str, bytes] = {
        "empty.conll": b"",
        "blank_lines.conll": b"\n\n\n",
        "binary.conll": bytes(range(256)) * 4,
        "nul.conll": ner.replace("John", "Jo\x00hn").encode(),
        "utf16.conll": ner.encode("utf-16"),
        "utf8_bom.conll": b"\xef\xbb\xbf" + ner.encode(),
        "latin1.conll": ner.replace("John", "Jöhn").encode("latin-1"),
        "crlf.conll": ner.replace("\n", "\r\n").encode(),
        "spaces.conll": ner.replace("\t", " ").encode(),
        "mixed_separators.conll": "\n".join(line.replace("\t", " ") if index % 2 else line for index, line in enumerate(ner.split("\n"))).encode(),
        "one_column.conll": "\n".join(line.split()[0] if line.strip() else "" for line in ner.split("\n")).encode(),
        "swapped.conll": "\n".join("\t".join(line.split()[::-1]) for line in ner.split("\n")).encode(),
        "labels_only.conll": "\n".join(line.split()[-1] if line.strip() else "" for line in ner.split("\n")).encode(),
        "broken_iob.conll": ner.replace("B-", "I-").encode(),
        "three_columns.conll": "\n".join(f"{line}\textra" if line else line for line in ner.split("\n")).encode(),
        "unknown_labels_only.conll": "\n".join(f"{line.split()[0]}\tX{index}" if line.strip() else "" for index, line in enumerate(ner.split("\n"))).encode(),
        "huge_token.conll": ner.replace("John", "x" * 5000, 1).encode(),
        "long_sentence.conll": ("\n".join(f"w{i} O" for i in range(2000)) + "\n\n" + ner).encode(),
        "no_final_newline.conll": ner.rstrip("\n").encode(),
        "only_docstart.conll": b"-DOCSTART- -X- O O\n\n",
        "empty.conllu": b"",
        "bad_id.conllu": dep.replace(first_token, "x" + first_token, 1).encode(),
        "bad_head.conllu": dep.replace("\t2\tnsubj", "\t99\tnsubj", 1).encode(),
        "text_head.conllu": dep.replace("\t2\tnsubj", "\tx\tnsubj", 1).encode(),
        "few_fields.conllu": dep.replace(first_token, "\t".join(first_token.split("\t")[:5]), 1).encode(),
        "self_head.conllu": dep.replace("1\tI\ti\tPRON\t_\t_\t2", "1\tI\ti\tPRON\t_\t_\t1", 1).encode(),
        "no_root.conllu": dep.replace("\t0\troot", "\t1\troot", 1).encode(),
        "gap_id.conllu": dep.replace("3\tcoffee", "5\tcoffee", 1).encode(),
        "no_deprel.conllu": dep.replace("\tnsubj\t", "\t_\t", 1).encode(),
        "utf16.conllu": dep.encode("utf-16"),
        "lowercase_prefixes.conll": ner.replace("B-", "b-").replace("I-", "i-").encode(),
        "types_in_two_cases.conll": ner.replace("B-person", "b-PERSON", 2).encode(),
        "swapped_header.tsv": b"label\ttext\npos\tgreat acting\nneg\tboring movie\n",
        "empty_text.tsv": b"text\tlabel\ngreat acting\tpos\n\tneg\n",
        "extra_field.tsv": b"text\tlabel\ngreat acting\tpos\tx\n",
        "one_bad_score.tsv": ("text\tscore\n" + "".join(f"sentence {i}\t{'n/a' if i == 3 else i + 0.5}\n" for i in range(12))).encode(),
        "no_header.tsv": b"great acting\tpos\nboring movie\tneg\n",
    }
    paths = {}
    for name, data in contents.items():
        path = folder / name
        path.write_bytes(data)
        paths[name] = path
    return paths


def file_cases(folder: Path, files: dict[str, Path], run: Path, parser_run: Path) -> list[list[str]]:
    cases = []
    for name, path in files.items():
        output = str(folder / "out" / name)
        if name.endswith(".tsv"):
            cases.append(["train", "--train", str(path), "--dev", str(FIXTURES / "tiny_sentiment_dev.tsv"), "--epochs", "1", "--quiet", "--output", output + "-sentence", *TINY])
            cases.append(["evaluate", str(run), "--file", str(path)])
        elif name.endswith(".conll"):
            cases.append(["train", "--train", str(path), "--dev", str(FIXTURES / "tiny_ner_dev.conll"), "--columns", "word,ner", "--epochs", "1", "--quiet", "--output", output + "-ner", *TINY])
            cases.append(["train", "--train", str(path), "--dev", str(FIXTURES / "tiny_ner_dev.conll"), "--epochs", "1", "--quiet", "--output", output + "-auto", *TINY])
            cases.append(["evaluate", str(run), "--file", str(path), "--columns", "word,ner"])
            cases.append(["predict", str(run), str(path), "--output", output + "-predicted.txt"])
        else:
            cases.append(["train", "--train", str(path), "--dev", str(FIXTURES / "tiny_dep_dev.conllu"), "--task", "dependency", "--epochs", "1", "--quiet", "--output", output + "-dep", *TINY])
            cases.append(["train", "--train", str(path), "--dev", str(FIXTURES / "tiny_dep_dev.conllu"), "--task", "upos", "--epochs", "1", "--quiet", "--output", output + "-upos", *TINY])
            cases.append(["evaluate", str(parser_run), "--file", str(path), "--task", "dependency"])
            cases.append(["predict", str(parser_run), str(path), "--format", "conllu", "--output", output + "-parsed.conllu"])
    return cases


def damaged_runs(folder: Path, run: Path) -> list[Path]:
    """Copies of ``run`` with one file removed, emptied, truncated or replaced."""
    runs = []
    for name in ("config.yaml", "vocabulary.json", "model.safetensors", "metrics.json"):
        for damage in ("removed", "empty", "truncated", "nonsense"):
            copy = folder / "runs" / f"{name}-{damage}"
            shutil.copytree(run, copy)
            path = copy / name
            data = path.read_bytes()
            if damage == "removed":
                path.unlink()
            else:
                path.write_bytes({"empty": b"", "truncated": data[: len(data) // 2], "nonsense": b"{[: not what it should be ]}"}[damage])
            runs.append(copy)
    return runs


def run_directory_cases(folder: Path, runs: list[Path]) -> list[list[str]]:
    text = folder / "input.txt"
    text.write_text("John lives in New York\n", encoding="utf-8")
    cases = []
    for run in runs:
        cases.append(["predict", str(run), str(text), "--output", str(folder / "out" / f"{run.name}.txt")])
        cases.append(["evaluate", str(run), "--file", str(FIXTURES / "tiny_ner_test.conll"), "--columns", "word,ner"])
        cases.append(
            [
                "transfer",
                "--source",
                str(run),
                "--method",
                "finetune",
                "--train",
                str(FIXTURES / "tiny_pos_train.conll"),
                "--dev",
                str(FIXTURES / "tiny_pos_dev.conll"),
                "--columns",
                "word,pos",
                "--epochs",
                "1",
                "--quiet",
                "--output",
                str(folder / "out" / f"{run.name}-sft"),
                *TINY,
            ]
        )
    return cases


def option_cases(folder: Path, run: Path) -> list[list[str]]:
    text = folder / "input.txt"
    base = ["train", "--train", str(FIXTURES / "tiny_ner_train.conll"), "--dev", str(FIXTURES / "tiny_ner_dev.conll"), "--columns", "word,ner", "--quiet", *TINY]
    cases = []
    for value in ("0", "-1", "2.5", "x", "1000000000000"):
        output = str(folder / "out" / f"options-{value}")
        cases += [
            [*base, "--epochs", value, "--output", output + "-epochs"],
            [*base, "--epochs", "1", "--seed", value, "--output", output + "-seed"],
            [*base, "--epochs", "1", "--output", output + "-batch", f"train.batch_size={value}"],
            [*base, "--epochs", "1", "--output", output + "-rate", f"train.learning_rate={value}"],
            [*base, "--epochs", "1", "--output", output + "-hidden", f"model.hidden={value}"],
            [*base, "--epochs", "1", "--output", output + "-dropout", f"model.dropout={value}"],
            ["predict", str(run), str(text), "--batch-size", value, "--output", output + "-predicted.txt"],
            ["evaluate", str(run), "--file", str(FIXTURES / "tiny_ner_test.conll"), "--columns", "word,ner", "--batch-size", value],
            ["pretrain-lm", "--architecture", "bilstm", "--size", "tiny", "--text", str(text), "--epochs", value, "--output", output + "-lm"],
            ["pretrain-lm", "--architecture", "bilstm", "--size", "tiny", "--text", str(text), "--held-out", value, "--output", output + "-lm2"],
        ]
    cases += [
        [*base, "--epochs", "1", "--output", str(folder / "out" / "unknown-key"), "model.nosuch=1"],
        [*base, "--epochs", "1", "--output", str(folder / "out" / "unknown-section"), "nosuch.hidden=1"],
        [*base, "--epochs", "1", "--output", str(folder / "out" / "no-value"), "model.hidden"],
    ]
    return cases


EXPERIMENTS = {
    "unparsable.yaml": "name: [unclosed\n",
    "not_a_mapping.yaml": "- a\n- b\n",
    "empty.yaml": "",
    "unknown_scheme.yaml": "name: a\ntitle: t\ncommand: x\ntargets:\n  T: {dataset: wnut17}\nmethods:\n  M: {scheme: nosuch}\nreference: M\n",
    "unknown_dataset.yaml": "name: a\ntitle: t\ncommand: x\ntargets:\n  T: {dataset: nosuch}\nmethods:\n  M: {scheme: scratch}\nreference: M\n",
    "unknown_reference.yaml": "name: a\ntitle: t\ncommand: x\ntargets:\n  T: {dataset: wnut17}\nmethods:\n  M: {scheme: scratch}\nreference: N\n",
    "unknown_source.yaml": "name: a\ntitle: t\ncommand: x\ntargets:\n  T: {dataset: wnut17, source: s}\nmethods:\n  M: {scheme: finetune}\nreference: M\n",
    "task_typo.yaml": "name: a\ntitle: t\ncommand: x\ntargets:\n  T: {dataset: wnut17, task: nre}\nmethods:\n  M: {scheme: scratch}\nreference: M\n",
    "wrong_type.yaml": "name: a\ntitle: t\ncommand: x\ntargets: [1, 2]\nmethods:\n  M: {scheme: scratch}\nreference: M\n",
    "ensemble_cycle.yaml": "name: a\ntitle: t\ncommand: x\ntargets:\n  T: {dataset: wnut17}\nmethods:\n  A: {scheme: scratch}\n  E1: {ensemble: [A, E2]}\n  E2: {ensemble: [A, E1]}\nreference: A\n",
    "bad_override.yaml": "name: a\ntitle: t\ncommand: x\noverrides: [model.nosuch=1]\ntargets:\n  T: {dataset: wnut17}\nmethods:\n  M: {scheme: scratch}\nreference: M\n",
    "method_bad_value.yaml": "name: a\ntargets:\n  T: {dataset: wnut17}\nmethods:\n  M: {scheme: scratch, overrides: [train.learning_rate=abc]}\n",
    "no_methods.yaml": "name: a\ntargets:\n  T: {dataset: wnut17}\n",
    "python_tag.yaml": "name: !!python/object/apply:os.system ['echo hacked']\ntitle: t\ncommand: x\ntargets: {}\nmethods: {}\nreference: M\n",
}


def experiment_cases(folder: Path) -> list[list[str]]:
    cases = []
    for name, text in EXPERIMENTS.items():
        path = folder / name
        path.write_text(text, encoding="utf-8")
        cases.append(["experiment", "list", str(path), "--results", str(folder / "results" / name)])
        cases.append(["experiment", "run", str(path), "--results", str(folder / "results" / name)])
    return cases


API_INPUTS = {
    "a dict": {"a": 1},
    "None": None,
    "a number": 7,
    "an empty list": [],
    "a flat token list": ["I", "love", "NYC"],
    "an empty sentence": [[]],
    "an empty token": [["I", ""]],
    "a None token": [["I", None]],
    "a number token": [["I", 3]],
    "a string": "I love NYC",
    "a blank string": "   ",
    "a long sentence": [["w"] * 3000],
    "nested too deep": [[["I"]]],
}
LOAD_OPTIONS = {
    "batch_size='8'": {"batch_size": "8"},
    "batch_size=2.5": {"batch_size": 2.5},
    "batch_size=0": {"batch_size": 0},
    "batch_size=-1": {"batch_size": -1},
    "tokenizer=nosuch": {"tokenizer": "nosuch"},
    "device=nosuch": {"device": "nosuch"},
}


def api_cases(run: Path, parser_run: Path, damaged: list[Path], folder: Path) -> list[dict]:
    """The Python API: ``load`` and ``predict`` given what a user might pass; behaves when it returns or raises SeqTransferError."""
    import seqtransfer
    from seqtransfer.errors import SeqTransferError

    calls = [
        (f"predict({name}) on a {kind}", lambda value=value, directory=directory: seqtransfer.load(directory, device="cpu").predict(value))
        for name, value in API_INPUTS.items()
        for kind, directory in (("tagger", run), ("parser", parser_run))
    ]
    calls += [(f"load({name})", lambda options=options: seqtransfer.load(run, **options).predict([["I", "love", "NYC"]])) for name, options in LOAD_OPTIONS.items()]
    calls += [(f"load(a run with {directory.name})", lambda directory=directory: seqtransfer.load(directory, device="cpu").predict([["I"]])) for directory in damaged]
    calls += [("load(a folder that is no run)", lambda: seqtransfer.load(folder / "out")), ("load(a missing folder)", lambda: seqtransfer.load(folder / "nosuch"))]
    results = []
    for name, call in calls:
        result = {"command": ["api", name]}
        try:
            with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
                call()
            result["behaves"], result["stderr"] = True, "returned"
        except SeqTransferError as error:
            result["behaves"], result["stderr"] = True, str(error)[:300]
        except Exception:  # noqa: BLE001 - any other exception is a defect the probe reports
            result["behaves"], result["traceback"], result["stderr"] = False, traceback.format_exc()[-1500:], ""
        results.append(result)
    return results


def weights_digest(run: Path) -> str | None:
    path = run / "model.safetensors"
    return hashlib.md5(path.read_bytes()).hexdigest() if path.is_file() else None


def kill_cases(folder: Path, moments: tuple[float, ...] = (0.3, 1.0, 1.5, 2.0, 2.5, 3.0, 3.3, 3.6, 4.0, 4.5, 5.0, 8.0)) -> list[dict]:
    """A training killed with SIGKILL after each of ``moments`` seconds, then run again to its end."""
    command = [str(Path(sys.executable).with_name("seqtransfer")), "train", *NER_DATA, "--epochs", "200", "train.patience=200", "--quiet", *TINY]
    reference = folder / "kill-reference"
    subprocess.run([*command, "--output", str(reference)], capture_output=True, check=True)
    expected, results = weights_digest(reference), []
    for moment in moments:
        run = folder / f"kill-{moment}"
        process = subprocess.Popen([*command, "--output", str(run)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(moment)
        if process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
            process.wait()
        finished_first = (run / "metrics.json").is_file()  # the run was whole before the kill (metrics.json is written last): the same command refuses to train it again
        again = subprocess.run([*command, "--output", str(run)], capture_output=True, text=True)
        found = weights_digest(run)
        second_ok = ("already holds a finished run" in again.stderr and again.returncode == 2) if finished_first else again.returncode == 0
        result = {
            "command": ["kill -9 after", f"{moment} s", "then", *command[1:3]],
            "exit": again.returncode,
            "stderr": again.stderr[-600:],
            "resumed": "resuming after epoch" in again.stdout,
            "finished_before_the_kill": finished_first,
            "behaves": second_ok and found == expected,
        }
        if not result["behaves"]:
            result["stderr"] += f" (weights {found} against {expected})"
        results.append(result)
    return results


def run_case(arguments: list[str]) -> dict:
    """Run one command in this process: its exit code, the end of its stderr and any traceback."""
    from seqtransfer.cli import main

    error, output = io.StringIO(), io.StringIO()
    result = {"command": arguments}
    try:
        with contextlib.redirect_stderr(error), contextlib.redirect_stdout(output):
            result["exit"] = main(arguments)
    except SystemExit as exit_:  # argparse's usage error: one usage line and one error line
        result["exit"] = exit_.code
    except BaseException:  # noqa: BLE001 - an exception escaping main() is what the probe looks for
        result["exit"], result["traceback"] = "exception", traceback.format_exc()[-1500:]
    result["stderr"] = error.getvalue()[-600:]
    errors = [line for line in error.getvalue().splitlines() if line.startswith(("seqtransfer: error", "Traceback"))]
    result["behaves"] = "traceback" not in result and "Traceback" not in error.getvalue() and len(errors) <= 1
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, help="write every case as JSON")
    arguments = parser.parse_args()
    from seqtransfer.cli import main as cli

    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        (folder / "out").mkdir()
        run, parser_run = folder / "run", folder / "parser"
        with contextlib.redirect_stdout(io.StringIO()):
            cli(["train", *NER_DATA, "--epochs", "1", "--quiet", "--output", str(run), *TINY])
            cli(
                [
                    "train",
                    "--train",
                    str(FIXTURES / "tiny_dep_train.conllu"),
                    "--dev",
                    str(FIXTURES / "tiny_dep_dev.conllu"),
                    "--task",
                    "dependency",
                    "--epochs",
                    "1",
                    "--quiet",
                    "--output",
                    str(parser_run),
                    *TINY,
                ]
            )
        (folder / "input.txt").write_text("John lives in New York\n", encoding="utf-8")
        cases = file_cases(folder, damaged_files(folder), run, parser_run)
        damaged = damaged_runs(folder, run)
        cases += run_directory_cases(folder, damaged)
        cases += option_cases(folder, run)
        cases += experiment_cases(folder)
        results = [run_case(case) for case in cases] + api_cases(run, parser_run, damaged, folder) + kill_cases(folder)
    good = sum(result["behaves"] for result in results)
    print(f"{good} of {len(results)} cases behave")
    killed = [result for result in results if "resumed" in result]
    print(f"kill -9: {sum(result['resumed'] for result in killed)} of {len(killed)} second commands resumed from a checkpoint (the others started afresh)")
    for result in results:
        if not result["behaves"]:
            print("-", " ".join(result["command"][:6]), "...", (result.get("traceback") or result["stderr"]).strip().splitlines()[-1][:200])
    if arguments.output:
        arguments.output.write_text(json.dumps(results, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
