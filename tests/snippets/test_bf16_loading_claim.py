"""What the guide says about bf16 and the Hugging Face libraries, asserted with the libraries.

- Under the framework table (docs/index.*.md, #fsdp-zero): transformers 5 loads a model in
  its checkpoint's dtype, and with DDP neither Accelerate's ``mixed_precision="bf16"`` nor
  the Trainer's ``bf16=True`` adds an fp32 copy, so AdamW then keeps its moments in bf16;
  ``dtype=torch.float32`` gives the mixed precision the tables count. On a tiny Llama saved
  in bf16 (as Llama 3.1's checkpoint is): ``from_pretrained``, ``Accelerator.prepare``,
  ``Trainer`` and an AdamW step.
- #data-parallel: ``accelerate launch --mixed_precision bf16`` reaches the Trainer.
"""

from __future__ import annotations

import pytest
import torch
import transformers


@pytest.fixture(scope="module")
def bf16_checkpoint(tmp_path_factory):
    config = transformers.LlamaConfig(
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        vocab_size=64,
    )
    folder = tmp_path_factory.mktemp("bf16-llama")
    transformers.LlamaForCausalLM(config).to(torch.bfloat16).save_pretrained(folder)
    return folder


def dtypes(model) -> set:
    return {parameter.dtype for parameter in model.parameters()}


def test_from_pretrained_keeps_the_checkpoint_dtype_unless_told(bf16_checkpoint):
    assert dtypes(transformers.AutoModelForCausalLM.from_pretrained(bf16_checkpoint)) == {torch.bfloat16}
    fp32 = transformers.AutoModelForCausalLM.from_pretrained(bf16_checkpoint, dtype=torch.float32)
    assert dtypes(fp32) == {torch.float32}


def test_accelerate_and_the_trainer_add_no_fp32_copy_without_fsdp_or_deepspeed(bf16_checkpoint, tmp_path):
    from accelerate import Accelerator

    prepared = Accelerator(mixed_precision="bf16", cpu=True).prepare(
        transformers.AutoModelForCausalLM.from_pretrained(bf16_checkpoint)
    )
    assert dtypes(prepared) == {torch.bfloat16}

    args = transformers.TrainingArguments(output_dir=str(tmp_path), bf16=True, use_cpu=True, report_to=[])
    trainer = transformers.Trainer(model=transformers.AutoModelForCausalLM.from_pretrained(bf16_checkpoint), args=args)
    optimizer = trainer.create_optimizer()
    assert dtypes(trainer.model) == {torch.bfloat16}

    trainer.model(input_ids=torch.tensor([[1, 2, 3]]), labels=torch.tensor([[1, 2, 3]])).loss.backward()
    optimizer.step()
    moments = {state[key].dtype for state in optimizer.state.values() for key in ("exp_avg", "exp_avg_sq")}
    assert moments == {torch.bfloat16}


def test_the_trainer_takes_accelerate_launchs_mixed_precision(monkeypatch, tmp_path):
    """docs (#data-parallel): ``accelerate launch --mixed_precision bf16`` acts on scripts that use
    Accelerator or the Trainer; the launcher passes it as ACCELERATE_MIXED_PRECISION, which the
    Trainer's arguments read (test_configs.py checks the launcher sets it)."""
    monkeypatch.setenv("ACCELERATE_MIXED_PRECISION", "bf16")
    assert (
        transformers.TrainingArguments(output_dir=str(tmp_path), use_cpu=True, report_to=[]).mixed_precision == "bf16"
    )
    monkeypatch.delenv("ACCELERATE_MIXED_PRECISION")
    assert transformers.TrainingArguments(output_dir=str(tmp_path), use_cpu=True, report_to=[]).mixed_precision == "no"
