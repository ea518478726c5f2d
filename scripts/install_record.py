"""Record which carried packages a GPU script installed where, and where each module is imported from.

    PYTHONPATH=TARGET python scripts/install_record.py RECORD.json GROUP TARGET DIGEST REUSED MODULE...

Run by scripts/gpu_check.sh and scripts/gpu_bench.sh after installing a group of carried wheels into
TARGET (REUSED: 1 when an earlier call's copy was kept). Adds GROUP to RECORD.json (the Python, the
wheels' digest, the distributions in TARGET, each module's version and file) and exits non-zero
naming every module that does not import, or that imports from elsewhere than its carried copy.
"""

import importlib
import importlib.metadata as metadata
import json
import sys
from pathlib import Path

record_path, group, target, digest, reused, *modules = sys.argv[1:]
path = Path(record_path)
record = json.loads(path.read_text()) if path.is_file() else {}
imports, problems = {}, []
for name in modules:
    try:
        module = importlib.import_module(name)
    except Exception as error:  # noqa: BLE001 - every failure is reported
        problems.append(f"{name}: {type(error).__name__}: {error}")
        continue
    where = str(Path(module.__file__).resolve()) if getattr(module, "__file__", None) else None
    imports[name] = {"version": getattr(module, "__version__", None), "from": where}
    top = name.split(".")[0]
    carried = (Path(target) / top).exists() or (Path(target) / f"{top}.py").exists()
    if carried and not (where or "").startswith(str(Path(target).resolve())):
        problems.append(f"{name}: imported from {where}, not from the carried copy in {target}")
record[group] = {
    "python": sys.executable,
    "python_version": sys.version.split()[0],
    "target": target,
    "wheels_digest": digest,
    "reused": reused == "1",
    "installed": sorted(f"{d.metadata['Name']}=={d.version}" for d in metadata.distributions(path=[target])),
    "imports": imports,
    "problems": problems,
}
path.write_text(json.dumps(record, indent=1))
print(f"{group}: " + ", ".join(f"{name} {value['version'] or ''} ({value['from']})" for name, value in imports.items()))
sys.exit("install problems: " + "; ".join(problems) if problems else 0)
