"""Bad entries of snippets/data/measurements.yaml are one line naming the file, the entry and the
key (hooks/data/measurements.py, hooks/data/schemas.py's MeasurementsFile), never a traceback and
never a silently wrong calibration. One case also runs as a whole build (tests/site/test_build_errors.py)."""

from __future__ import annotations

import re
import shutil

import pytest

from hooks.data.load import check_data_files
from hooks.data.measurements import measured_data
from hooks.errors import RenderError
from tests.conftest import REPO_ROOT

WHERE = "snippets/data/measurements.yaml: measurements."


def _edit(folder, old, new):
    path = folder / "measurements.yaml"
    text = path.read_text(encoding="utf-8")
    assert old in text, f"measurements.yaml no longer holds {old!r}: update this test"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


ENTRY = "  torchtune-8b-full-4090:\n    source: torchtune-readme-2024\n"
CASES = {
    "no source": (ENTRY, "  torchtune-8b-full-4090:\n", rf"{WHERE}torchtune-8b-full-4090\.source: Field required"),
    "unknown card": (
        "    gpu: rtx-4090\n    count: 1\n    interconnect: none\n    model: llama-3.1-8b\n    task: full\n",
        "    gpu: rtx-4080\n    count: 1\n    interconnect: none\n    model: llama-3.1-8b\n    task: full\n",
        rf"{WHERE}torchtune-8b-full-4090\.gpu: 'rtx-4080' is not a card of gpus\.yaml or of cards",
    ),
    "negative throughput": (
        "    tokens_per_s: 1650\n",
        "    tokens_per_s: -1650\n",
        rf"{WHERE}torchtune-8b-full-4090\.tokens_per_s: Input should be greater than 0",
    ),
    "not a number": (
        "    tokens_per_s: 1650\n",
        "    tokens_per_s: fast\n",
        rf"{WHERE}torchtune-8b-full-4090\.tokens_per_s: Input should be a valid number",
    ),
    "decoding without its engine": (
        "    task: serving\n    engine: vllm\n    weights: bf16\n    kv_dtype: bf16\n    prompt: 32\n",
        "    task: serving\n    weights: bf16\n    kv_dtype: bf16\n    prompt: 32\n",
        rf"{WHERE}vllm-8b-b8-h200: a serving run needs engine",
    ),
    "an unknown engine": (
        "    engine: vllm\n    weights: bf16\n    kv_dtype: bf16\n    prompt: 32\n",
        "    engine: ollama\n    weights: bf16\n    kv_dtype: bf16\n    prompt: 32\n",
        rf"{WHERE}vllm-8b-b8-h200\.engine: engine: 'ollama' is not one of exllamav2, llama\.cpp",
    ),
    "a context that is not prompt + output / 2": (
        "    prompt: 32\n    output: 128\n    context: 96\n    batch: 8\n    tokens_per_s: 1228.67\n",
        "    prompt: 32\n    output: 128\n    context: 128\n    batch: 8\n    tokens_per_s: 1228.67\n",
        rf"{WHERE}vllm-8b-b8-h200: context: 128 is not the mean tokens in the cache",
    ),
    "a page neither at a commit nor dated": (
        '    read: "2026-12-04"\n',
        "",
        (
            r"snippets/data/measurements\.yaml: sources\.vllm-ci-h200-9515: url: a GitHub file at a 40-hex "
            "commit, or a page with the date it was read"
        ),
    ),
    "packed samples per second that do not give the rate": (
        "    derived_from: {samples_per_s: 16.287, seq_len: 2048}\n",
        "    derived_from: {samples_per_s: 16.287, seq_len: 4096}\n",
        rf"{WHERE}dgxc-hf-mistral-7b-lora-8xh100: tokens_per_s: 33355\.8 is not what derived_from gives, 66711\.55",
    ),
    "samples per second mixed with a step time": (
        "    derived_from: {samples_per_s: 16.287, seq_len: 2048}\n",
        "    derived_from: {samples_per_s: 16.287, seq_len: 2048, global_batch: 512, step_s: 31.4}\n",
        rf"{WHERE}dgxc-hf-mistral-7b-lora-8xh100\.derived_from: give tokens and seconds, global_batch, seq_len",
    ),
    "a held-out source without its reason": (
        '    holdout: "collected after rule R2 was frozen (091d827): predicted, never calibrated on"\n',
        "    holdout: true\n",
        r"snippets/data/measurements\.yaml: sources\.universal-llm-trainer-2025\.holdout: Input should be a valid string",
    ),
    "a training run without its model code": (
        "    model: llama-3.1-8b\n    task: full\n    model_code: own\n    seq_len: 2048\n",
        "    model: llama-3.1-8b\n    task: full\n    seq_len: 2048\n",
        rf"{WHERE}torchtune-8b-full-4090: a full run needs model_code",
    ),
    "a model code no rule knows": (
        "    model: llama-3.1-8b\n    task: full\n    model_code: own\n    seq_len: 2048\n",
        "    model: llama-3.1-8b\n    task: full\n    model_code: hf\n    seq_len: 2048\n",
        rf"{WHERE}torchtune-8b-full-4090\.model_code: Input should be 'transformers' or 'own'",
    ),
    "a model code on a decoding run": (
        '    table: "Latency tests, latency_llama8B_tp1, H200, mean latency 833.421 ms"\n',
        '    table: "Latency tests, latency_llama8B_tp1, H200, mean latency 833.421 ms"\n    model_code: own\n',
        rf"{WHERE}vllm-8b-b8-h200: model_code is for training runs",
    ),
    "a held-out source collected after a rule that does not exist": (
        "    collected_after: R2\n",
        "    collected_after: R9\n",
        r"snippets/data/measurements\.yaml: sources\.universal-llm-trainer-2025: collected_after: 'R9' is not one of R0, R1, R2, R3",
    ),
    "a held-out source without the rule it was collected after": (
        "    collected_after: R2\n",
        "",
        r"snippets/data/measurements\.yaml: sources\.universal-llm-trainer-2025: holdout and collected_after go together",
    ),
    "implausible, not excluded": (
        "    tokens_per_s: 1650\n",
        "    tokens_per_s: 3650\n",
        (
            rf"{WHERE}torchtune-8b-full-4090\.tokens_per_s: implies 142% of RTX 4090 24GB's "
            "dense BF16 peak; at or above 90% an entry stays only marked excluded"
        ),
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_a_bad_entry_is_one_line_naming_file_entry_and_key(case, tmp_path):
    folder = tmp_path / "data"
    shutil.copytree(REPO_ROOT / "snippets" / "data", folder)
    old, new, message = CASES[case]
    _edit(folder, old, new)
    with pytest.raises(RenderError) as info:
        check_data_files(folder)  # the schema, as every build runs it first
        measured_data(folder)  # what only the files together can say (the catalogue, the implied share)
    text = str(info.value)
    assert "\n" not in text and "Traceback" not in text
    assert re.search(message, text), text
