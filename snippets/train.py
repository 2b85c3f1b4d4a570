# train.py: avvialo con  torchrun --nproc_per_node=4 train.py --out checkpoints
import argparse
import contextlib
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

if "LOCAL_RANK" not in os.environ:
    sys.exit("Start it with torchrun: torchrun --nproc_per_node=4 train.py")

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=3)
parser.add_argument("--accumulation-steps", type=int, default=4)
parser.add_argument("--out", default="checkpoints")
args = parser.parse_args()

# un processo per scheda, lanciato da torchrun
local_rank = int(os.environ["LOCAL_RANK"])
acc = torch.accelerator.current_accelerator()
device = torch.device(acc.type, local_rank) if acc else torch.device("cpu")
if acc:
    torch.accelerator.set_device_index(local_rank)
# nccl sulle GPU, gloo sulla CPU
backend = dist.get_default_backend_for_device(device)
dist.init_process_group(backend)
rank = dist.get_rank()

torch.manual_seed(0)  # stessi dati e stessi pesi iniziali su ogni rank
# dati sintetici: mettici i tuoi
data = TensorDataset(torch.randn(4096, 32), torch.randn(4096, 1))
# ogni rank riceve una fetta diversa
sampler = DistributedSampler(data, shuffle=True)
loader = DataLoader(data, batch_size=64, sampler=sampler)
model = torch.nn.Sequential(
    torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1)
).to(device)
model = DistributedDataParallel(model, device_ids=[local_rank] if acc else None)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

for epoch in range(args.epochs):
    sampler.set_epoch(epoch)  # un ordine diverso a ogni epoca
    for step, (inputs, targets) in enumerate(loader, start=1):
        # gradient accumulation: uno step ogni accumulation_steps batch; l’ultimo
        # gruppo dell’epoca può averne meno, e la media si fa sui batch che ha
        start = (step - 1) // args.accumulation_steps * args.accumulation_steps
        group = min(args.accumulation_steps, len(loader) - start)
        last = step == start + group
        # no_sync(): gradienti locali; DDP ne fa la media solo all’ultimo
        with contextlib.nullcontext() if last else model.no_sync():
            outputs = model(inputs.to(device))
            loss = torch.nn.functional.mse_loss(outputs, targets.to(device))
            (loss / group).backward()
        if last:
            optimizer.step()
            optimizer.zero_grad()
    if rank == 0:  # log e checkpoint solo dal rank 0
        print(f"epoch {epoch}: loss {loss.item():.4f}", flush=True)
        os.makedirs(args.out, exist_ok=True)
        torch.save(model.module.state_dict(), os.path.join(args.out, "checkpoint.pt"))
dist.destroy_process_group()
