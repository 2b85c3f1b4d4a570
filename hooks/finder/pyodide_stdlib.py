"""Write ``hooks/finder/pyodide_stdlib.txt``: the members of Pyodide's ``python_stdlib.zip``
the finder's worker imports, the standard library the site ships (``pyodide_assets.stdlib_bundle``).

    python -m hooks.finder.pyodide_stdlib          # after a Pyodide upgrade or a new import in vram/

Node (which ``npm`` brings) runs the pinned package with its whole standard library and does
what ``docs/assets/finder-worker.js`` does: start Pyodide, put the calculator's archive on
``sys.path``, import ``vram.job``, and answer jobs of every kind the page sends (training,
LoRA, QLoRA under FSDP2, serving, a run with prices, the offload's host RAM) and the bad
inputs it refuses (not JSON, a key twice, an unknown family, a multimodal gemma3, a missing
key, a bad price), so the modules imported on the way (a codec, a lazily imported helper)
are listed too. What is listed: every module the import system loaded from the package's
zip (its ``__spec__.origin``); modules Pyodide has built in or frozen are not files of it.
Browser tests then run every job of ``tests/browser/test_finder_jobs.py`` against it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from hooks.data.load import DATA_DIR
from hooks.finder.compute import job, load_catalogue, model_config_files
from hooks.finder.pyodide_assets import PACKAGE_STDLIB, PYODIDE_DIR, STDLIB_MEMBERS, lock_file, vram_bundle

HEADER = """\
# The members of node_modules/pyodide/python_stdlib.zip the finder's worker imports: the standard
# library the site ships as assets/pyodide-stdlib.zip.zst (hooks/finder/pyodide_assets.py), each member
# compiled from the package's (verify/precompile.py, verify/artifact.py). Written by `python -m hooks.finder.pyodide_stdlib`
# from what Pyodide's start, `import vram.job` and every kind of job import; do not edit by hand.
"""

TRACE = """
import { loadPyodide } from "%(pyodide)s/pyodide.mjs";
import fs from "fs";
const pyodide = await loadPyodide({ indexURL: "%(pyodide)s/", lockFileURL: "%(lock)s" });
pyodide.FS.writeFile("/home/pyodide/vram.zip", fs.readFileSync("%(bundle)s"));
pyodide.globals.set("jobs", fs.readFileSync("%(jobs)s", { encoding: "utf8" }));
console.log(pyodide.runPython(`
import json, sys, zipimport
sys.path.insert(0, "/home/pyodide/vram.zip")
import vram.job
calculator = zipimport.zipimporter("/home/pyodide/vram.zip")
for job in json.loads(jobs):
    if job.get("config") is None:
        job["config"] = calculator.get_data("configs/" + job.pop("model") + ".json").decode()
    vram.job.answer_json(json.dumps(job))
json.dumps(sorted({m.__spec__.origin.split(".zip/", 1)[1] for m in list(sys.modules.values())
                   if getattr(m, "__spec__", None) is not None and ".zip/" in (m.__spec__.origin or "")
                   and m.__spec__.origin.startswith("/lib/python")}))
`));
"""


def sample_jobs() -> list[dict]:
    """A job of every task of finder.yaml on 2 cards (the reference job, the catalogue's cards
    and prices), each with a change the reader can make, and the bad inputs the page sends."""
    catalogue = load_catalogue()
    jobs = []
    for task_key, task in catalogue.tasks.items():
        model = "gpt-oss-20b" if task_key == "serve-mxfp4" else "llama-3.1-8b"
        option = "8192" if task["kind"] == "serving" else ("fsdp2-reshard" if task["kind"] == "lora" else "zero2")
        found = job(catalogue, model, task_key, 2, option)
        found.pop("config")
        found["model"] = model
        if task["kind"] == "training":
            jobs.append(found | {"offload": "optimizer", "host_ram_gb": {"h100": 512}, "prices": {"h100": "12.5"}})
        jobs.append(found | ({"kv_dtype": "fp8", "concurrent": 8} if task["kind"] == "serving" else {"seq_len": 4096}))
    bad_configs = [
        "{",
        '{"a": 1, "a": 2}',
        '{"model_type": "falcon"}',
        "[1]",
        '{"model_type": "gemma3", "text_config": {"hidden_size": 2560}}',
        '{"model_type": "llama", "hidden_size": 4096}',
        '{"model_type": "llama", "' + "9" * 5000 + '": 1}',
    ]
    jobs += [{"kind": "training", "config": text} for text in bad_configs]
    jobs += [
        {"kind": "training", "model": "llama-3.1-8b", "prices": {"h100": "x"}, "gpus": jobs[0]["gpus"]},
        {"kind": "lora", "model": "llama-3.1-8b", "targets": "nope"},
        {"kind": "nope", "model": "llama-3.1-8b"},
    ]
    return jobs


def traced_members(pyodide: Path = PYODIDE_DIR) -> list[str]:
    """The members of ``pyodide/python_stdlib.zip`` a run of the worker's steps imports."""
    with tempfile.TemporaryDirectory(prefix="pyodide-stdlib-") as tmp:
        folder = Path(tmp)
        (folder / "vram.zip").write_bytes(vram_bundle(model_config_files(DATA_DIR)))
        (folder / "lock.json").write_bytes(lock_file(pyodide))
        (folder / "jobs.json").write_text(json.dumps(sample_jobs()), encoding="utf-8")
        script = folder / "trace.mjs"
        script.write_text(
            TRACE
            % {
                "pyodide": pyodide.resolve(),
                "lock": folder / "lock.json",
                "bundle": folder / "vram.zip",
                "jobs": folder / "jobs.json",
            },
            encoding="utf-8",
        )
        run = subprocess.run(["node", str(script)], capture_output=True, text=True, timeout=600, check=False)
    if run.returncode != 0:
        raise SystemExit(f"hooks.finder.pyodide_stdlib: node failed:\n{run.stderr[-3000:]}")
    return json.loads(run.stdout.strip().splitlines()[-1])


def main() -> int:
    members = traced_members()
    STDLIB_MEMBERS.write_text(HEADER + "".join(f"{name}\n" for name in members), encoding="utf-8")
    print(f"{STDLIB_MEMBERS.name}: {len(members)} members of {PACKAGE_STDLIB}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
