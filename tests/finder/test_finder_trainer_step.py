"""The all-bf16 task is "transformers 5 with the Trainer": its optimizer step is the Trainer's.

The Trainer's default ``optim`` (read from transformers itself, not from our data) is
``adamw_torch_fused``, whose step allocates no temporary (vram.optimizer_step: only the foreach
implementation allocates one the size of the local parameters). So on one card, where no DDP
bucket exists, the all-bf16 answer is bf16 weights, bf16 gradients and two bf16 moments:
exactly 8 bytes per parameter, for every model of the catalogue. On the main of 545077f the
finder counted it with ``settings.optimizer_impl`` (foreach) and showed 10 bytes per parameter
beside a label naming the Trainer (Llama 3.1 8B: 80.3 GB instead of 64.2 GB).
"""

from __future__ import annotations

import json

from hooks.finder.compute import answer, load_catalogue
from tests.finder.answers import finder_text

BF16_TRAINING_BYTES_PER_PARAM = 2 + 2 + 2 + 2  # weights, gradients, exp_avg, exp_avg_sq (all bf16)


def trainer_default_impl(tmp_path) -> str:
    from transformers import (
        TrainingArguments,
    )  # about 4 s of imports: paid by the test, not by every worker's collection

    optim = TrainingArguments(output_dir=str(tmp_path)).optim
    name = getattr(optim, "value", optim)
    assert name == "adamw_torch_fused", name  # the day this changes, the finder's task must follow
    return "fused"


def bf16_tasks(catalogue) -> list[str]:
    return [key for key, task in catalogue.tasks.items() if task.get("optimizer") == "adamw-bf16"]


def test_the_all_bf16_task_is_counted_with_the_trainers_default_step(tmp_path):
    catalogue = load_catalogue()
    tasks = bf16_tasks(catalogue)
    assert tasks, "the finder offers an all-bf16 task"
    expected = trainer_default_impl(tmp_path)
    shipped = {task["key"]: task for task in json.loads(finder_text())["tasks"]}
    for key in tasks:
        assert shipped[key]["optimizer_impl"] == expected  # what the page's worker sends to vram
        for model in catalogue.models.values():
            found = answer(catalogue, model.key, key, 1, "ddp")
            assert found["per_gpu_bytes"] == BF16_TRAINING_BYTES_PER_PARAM * found["params"], (
                model.key,
                found["parts"],
            )


def test_the_other_training_tasks_keep_the_guides_scripts_step():
    catalogue = load_catalogue()
    shipped = {task["key"]: task for task in json.loads(finder_text())["tasks"]}
    others = [
        key
        for key, task in catalogue.tasks.items()
        if task["kind"] == "training" and task.get("optimizer") != "adamw-bf16"
    ]
    assert others
    for key in others:  # torch.optim.AdamW(params) as train.py builds it: foreach on CUDA
        assert shipped[key]["optimizer_impl"] == "foreach"
