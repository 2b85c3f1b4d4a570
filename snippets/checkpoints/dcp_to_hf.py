# dcp_to_hf.py: checkpoint DCP di train_fsdp2.py → cartella Hugging Face
# python dcp_to_hf.py checkpoints/epoch-3 hf_model  (--dtype fp32)
import argparse
from pathlib import Path

import torch
import torch.distributed.checkpoint as dcp
from transformers import AutoConfig, AutoModelForCausalLM

parser = argparse.ArgumentParser()
parser.add_argument("checkpoint")
parser.add_argument("out")
parser.add_argument("--dtype", choices=["bf16", "fp32"], default="bf16")
args = parser.parse_args()

checkpoint = Path(args.checkpoint)
config = AutoConfig.from_pretrained(checkpoint)  # il config.json di train_fsdp2.py
with torch.device("meta"):  # solo la forma del modello, senza memoria
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
# i pesi interi nella RAM, in fp32: 4 byte per parametro
model.to_empty(device="cpu")
model.tie_weights()  # embedding e testa condivisi (se il modello li lega)
state = model.state_dict()
# ogni nome del checkpoint è un parametro del modello, e viceversa
saved = dcp.FileSystemReader(checkpoint / "model").read_metadata().state_dict_metadata
if set(saved) != set(state):
    raise SystemExit(f"names differ: {sorted(set(saved) ^ set(state))}")
# un solo processo: DCP legge i pezzi del modello di tutti i rank
dcp.load(state, checkpoint_id=checkpoint / "model")
del state
dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float32
# safetensors: un tensore condiviso una volta sola, file da 5 GB al massimo
model.to(dtype).save_pretrained(args.out, max_shard_size="5GB")
