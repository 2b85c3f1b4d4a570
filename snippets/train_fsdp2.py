# train_fsdp2.py: avvialo con  torchrun --nproc_per_node=4 train_fsdp2.py
import argparse
import gc
import os
import pathlib
import sys
import time

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset
from transformers import AutoConfig, AutoModelForCausalLM

if "LOCAL_RANK" not in os.environ:
    sys.exit("Start it with torchrun: torchrun --nproc_per_node=4 train_fsdp2.py")

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=3)
parser.add_argument("--out", default="checkpoints")
parser.add_argument("--model", default="Qwen/Qwen3-0.6B")
# un modello minuscolo dalla config, senza download
parser.add_argument("--tiny", action="store_true")
args = parser.parse_args()

local_rank = int(os.environ["LOCAL_RANK"])
acc = torch.accelerator.current_accelerator()
device = torch.device(acc.type, local_rank) if acc else torch.device("cpu")
if acc:
    torch.accelerator.set_device_index(local_rank)
dist.init_process_group(dist.get_default_backend_for_device(device))
rank = dist.get_rank()

torch.manual_seed(0)  # stessi dati e stessi pesi iniziali su ogni rank
if args.tiny:
    config = AutoConfig.for_model(
        "qwen3", vocab_size=256, hidden_size=64, intermediate_size=128,
        num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
        head_dim=16, tie_word_embeddings=True)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
else:  # pesi in fp32: i calcoli in bf16 li fa MixedPrecisionPolicy
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32)
model.to(device)
# dati sintetici: mettici i tuoi
tokens = torch.randint(0, model.config.vocab_size, (256, 33))
data = TensorDataset(tokens[:, :-1], tokens[:, 1:])
sampler = DistributedSampler(data, shuffle=True)
loader = DataLoader(data, batch_size=16, sampler=sampler)

# pesi in bf16 per i calcoli, media dei gradienti in fp32
mp_policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
# più macchine: HSDP, pezzi divisi dentro una macchina e copiati tra le macchine
per_node = int(os.environ["LOCAL_WORLD_SIZE"])
nodes = dist.get_world_size() // per_node
mesh = None  # una macchina: FSDP su tutti i rank
if nodes > 1:
    # dimensione 0: tra le macchine (copie); dimensione 1: dentro una (pezzi)
    names = ("node", "gpu")
    mesh = init_device_mesh(device.type, (nodes, per_node), mesh_dim_names=names)
# ogni blocco transformer (decoder layer) è un’unità di FSDP2
for layer in model.model.layers:
    fully_shard(layer, mesh=mesh, mp_policy=mp_policy)
fully_shard(model, mesh=mesh, mp_policy=mp_policy)  # e la radice: embedding e testa
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)


def load_checkpoint(path):
    model_state, optim_state = get_state_dict(model, optimizer)
    dcp.load(model_state, checkpoint_id=path / "model")  # collettivo: tutti i rank
    dcp.load(optim_state, checkpoint_id=path / "optim")
    set_state_dict(
        model, optimizer, model_state_dict=model_state, optim_state_dict=optim_state
    )


def save_checkpoint(path):
    # ogni rank scrive il suo pezzo: dcp.save è collettivo, mai sotto if rank == 0
    model_state, optim_state = get_state_dict(model, optimizer)
    dcp.save(model_state, checkpoint_id=path / "model")
    dcp.save(optim_state, checkpoint_id=path / "optim")
    if rank == 0:  # config.json: per dcp_to_hf.py, che ricostruisce il modello
        model.config.save_pretrained(path)


# riprende dall’ultimo checkpoint completo (DCP scrive .metadata per ultimo)
out = pathlib.Path(args.out)
done = [path for path in out.glob("epoch-*") if (path / "optim" / ".metadata").exists()]
start = 0
if done:
    last = max(done, key=lambda path: int(path.name.removeprefix("epoch-")))
    load_checkpoint(last)
    start = int(last.name.removeprefix("epoch-"))
    if rank == 0:
        print(f"resumed from {last}", flush=True)

for epoch in range(start, args.epochs):
    sampler.set_epoch(epoch)  # un ordine diverso a ogni epoca
    started, seen = time.perf_counter(), 0
    for step, (inputs, targets) in enumerate(loader):
        logits = model(inputs.to(device)).logits.float()  # logit in fp32 per la loss
        logits = logits.flatten(0, 1)
        loss = torch.nn.functional.cross_entropy(logits, targets.to(device).flatten())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if acc and epoch == start and step == 0:
            # dopo il primo step: la memoria vera, da confrontare con il calcolatore
            peak_gb = torch.accelerator.max_memory_allocated() / 1e9
            print(f"rank {rank}: peak {peak_gb:.3f} GB allocated", flush=True)
        seen += inputs.numel()  # token di questo rank
    last_loss = loss.item()  # aspetta che la GPU finisca: il tempo è quello vero
    seconds = time.perf_counter() - started
    save_checkpoint(out / f"epoch-{epoch + 1}")
    if rank == 0:  # log solo dal rank 0
        # la velocità del tuo ciclo (la prima epoca conta anche l’avvio)
        speed = seen / seconds
        print(f"epoch {epoch}: loss {last_loss:.4f}; {speed:.0f} tokens/s per GPU"
              f" ({seen} tokens in {seconds:.2f} s)", flush=True)
# FSDP2 lega il gruppo di processi a modello e ottimizzatore: liberali prima di chiudere
del model, optimizer
gc.collect()
dist.destroy_process_group()
