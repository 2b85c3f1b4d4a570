# train_hf.py: fine-tuning di un modello causale con il Trainer di Hugging Face
# avvialo con accelerate launch o torchrun; senza GPU: aggiungi --tiny
import os
from dataclasses import dataclass

import torch
from transformers import (AutoConfig, AutoModelForCausalLM, AutoTokenizer,
                          HfArgumentParser, Trainer, TrainingArguments)


@dataclass
class ScriptArguments:
    model: str = "Qwen/Qwen3-0.6B"
    data: str = "train.txt"  # un esempio per riga: mettici i tuoi dati
    seq_len: int = 512
    tiny: bool = False  # un modello minuscolo dalla config, senza download
    lora: bool = False  # adattatori LoRA (PEFT) al posto dei pesi interi


parser = HfArgumentParser((ScriptArguments, TrainingArguments))
# senza GPU: processi sulla CPU con gloo, anche sotto accelerate launch;
# bf16 come lo chiede accelerate launch (--mixed_precision o il file di config)
parser.set_defaults(output_dir="checkpoints", use_cpu=not torch.cuda.is_available(),
                    bf16=os.environ.get("ACCELERATE_MIXED_PRECISION") == "bf16",
                    max_steps=100, learning_rate=2e-5, logging_steps=10,
                    save_strategy="no", report_to="none")
script, args = parser.parse_args_into_dataclasses()

if script.tiny:
    config = AutoConfig.for_model(
        "qwen3", vocab_size=256, hidden_size=64, intermediate_size=128,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        head_dim=16, tie_word_embeddings=True)
    torch.manual_seed(0)  # gli stessi pesi iniziali su ogni rank
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    # progressioni aritmetiche modulo 256: un compito che si impara in pochi step
    g = torch.Generator().manual_seed(0)
    start, stride = torch.randint(256, (2, 512, 1), generator=g)
    ids = (start + stride * torch.arange(script.seq_len)) % 256
    # il modello sposta da sé le etichette di un token: labels = input_ids
    dataset = [{"input_ids": x, "labels": x} for x in ids]
else:
    tokenizer = AutoTokenizer.from_pretrained(script.model)
    # pesi in fp32: la precisione mista (bf16) la aggiungono Accelerate o DeepSpeed
    model = AutoModelForCausalLM.from_pretrained(script.model, dtype=torch.float32)
    with open(script.data, encoding="utf-8") as f:
        lines = [line for line in f.read().splitlines() if line.strip()]
    tokens = tokenizer(lines, truncation=True, max_length=script.seq_len,
                       padding="max_length", return_tensors="pt")
    labels = tokens["input_ids"].masked_fill(tokens["attention_mask"] == 0, -100)
    dataset = [{"input_ids": i, "attention_mask": m, "labels": y} for i, m, y
               in zip(tokens["input_ids"], tokens["attention_mask"], labels)]

if script.lora:
    from peft import LoraConfig, get_peft_model

    model = get_peft_model(model, LoraConfig(r=16, lora_alpha=32,
                                             target_modules="all-linear",
                                             task_type="CAUSAL_LM"))

trainer = Trainer(model=model, args=args, train_dataset=dataset)
if trainer.is_world_process_zero():  # quanti processi, e DDP, FSDP o DeepSpeed
    kind = trainer.accelerator.distributed_type.name
    print(f"world_size={args.world_size} distributed_type={kind}", flush=True)
trainer.train()
trainer.save_model()  # con FSDP e ZeRO-3 lo chiamano tutti i rank
trainer.accelerator.end_training()  # chiude il gruppo di processi prima di uscire
