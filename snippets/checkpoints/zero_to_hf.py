# zero_to_hf.py: checkpoint ZeRO di DeepSpeed → cartella Hugging Face
# python zero_to_hf.py checkpoints/checkpoint-500 hf_model  (--dtype fp32)
import argparse
import shutil
from pathlib import Path

import torch
from deepspeed.utils.zero_to_fp32 import get_fp32_state_dict_from_zero_checkpoint
from transformers import AutoConfig, AutoModelForCausalLM

parser = argparse.ArgumentParser()
parser.add_argument("checkpoint")
parser.add_argument("out")
parser.add_argument("--dtype", choices=["bf16", "fp32"], default="bf16")
args = parser.parse_args()

# i pezzi di tutti i rank riuniti nella RAM, in fp32: 4 byte per parametro
state = get_fp32_state_dict_from_zero_checkpoint(args.checkpoint)
config = AutoConfig.from_pretrained(args.checkpoint)
with torch.device("meta"):  # solo la forma del modello, senza memoria
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
# strict: ogni nome del checkpoint è un parametro del modello, e viceversa
model.load_state_dict(state, strict=True, assign=True)
del state
model.tie_weights()  # embedding e testa condivisi (se il modello li lega)
dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float32
# safetensors: un tensore condiviso una volta sola, file da 5 GB al massimo
model.to(dtype).save_pretrained(args.out, max_shard_size="5GB")
for tokenizer_file in Path(args.checkpoint).glob("tokenizer*"):
    shutil.copy(tokenizer_file, args.out)
