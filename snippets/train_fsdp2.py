# train_fsdp2.py: avvialo con  torchrun --nproc_per_node=4 train_fsdp2.py
import argparse
import gc
import os
import pathlib
import sys

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

if "LOCAL_RANK" not in os.environ:
    sys.exit("Start it with torchrun: torchrun --nproc_per_node=4 train_fsdp2.py")

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=3)
parser.add_argument("--out", default="checkpoints")
args = parser.parse_args()

local_rank = int(os.environ["LOCAL_RANK"])
acc = torch.accelerator.current_accelerator()
device = torch.device(acc.type, local_rank) if acc else torch.device("cpu")
if acc:
    torch.accelerator.set_device_index(local_rank)
dist.init_process_group(dist.get_default_backend_for_device(device))
rank = dist.get_rank()


class TinyLM(torch.nn.Module):
    # un piccolo modello linguistico: embedding, blocchi transformer, testa
    def __init__(self, vocab=256, dim=64, layers=4):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, dim)
        layer = torch.nn.TransformerEncoderLayer
        self.blocks = torch.nn.ModuleList(
            layer(dim, 4, 4 * dim, dropout=0.0, batch_first=True) for _ in range(layers)
        )
        self.head = torch.nn.Linear(dim, vocab)

    def forward(self, tokens):
        mask = torch.nn.Transformer.generate_square_subsequent_mask(tokens.shape[1])
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x, src_mask=mask.to(x.device), is_causal=True)
        return self.head(x).float()  # logit in fp32 per la loss


torch.manual_seed(0)  # stessi dati e stessi pesi iniziali su ogni rank
tokens = torch.randint(0, 256, (256, 33))  # dati sintetici: mettici i tuoi
data = TensorDataset(tokens[:, :-1], tokens[:, 1:])
sampler = DistributedSampler(data, shuffle=True)
loader = DataLoader(data, batch_size=16, sampler=sampler)

model = TinyLM().to(device)
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
# ogni blocco è un’unità di FSDP2 (con Hugging Face: model.model.layers)
for block in model.blocks:
    fully_shard(block, mesh=mesh, mp_policy=mp_policy)
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
    for step, (inputs, targets) in enumerate(loader):
        logits = model(inputs.to(device)).flatten(0, 1)
        loss = torch.nn.functional.cross_entropy(logits, targets.to(device).flatten())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if acc and epoch == start and step == 0:
            # dopo il primo step: la memoria vera, da confrontare con il calcolatore
            peak_gb = torch.accelerator.max_memory_allocated() / 1e9
            print(f"rank {rank}: peak {peak_gb:.3f} GB allocated", flush=True)
    save_checkpoint(out / f"epoch-{epoch + 1}")
    if rank == 0:  # log solo dal rank 0
        print(f"epoch {epoch}: loss {loss.item():.4f}", flush=True)
# FSDP2 lega il gruppo di processi a modello e ottimizzatore: liberali prima di chiudere
del model, optimizer
gc.collect()
dist.destroy_process_group()
