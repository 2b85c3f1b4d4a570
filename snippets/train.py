# train.py: avvialo con  torchrun --nproc_per_node=4 train.py --out checkpoints
import argparse, os
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=3)
parser.add_argument("--out", default="checkpoints")
args = parser.parse_args()

local_rank = int(os.environ["LOCAL_RANK"])  # un processo per scheda, lanciato da torchrun
acc = torch.accelerator.current_accelerator()
device = torch.device(acc.type, local_rank) if acc else torch.device("cpu")
if acc: torch.accelerator.set_device_index(local_rank)
dist.init_process_group(dist.get_default_backend_for_device(device))  # nccl sulle GPU, gloo sulla CPU
rank = dist.get_rank()

torch.manual_seed(0)  # stessi dati e stessi pesi iniziali su ogni rank
data = TensorDataset(torch.randn(4096, 32), torch.randn(4096, 1))  # dati sintetici: mettici i tuoi
sampler = DistributedSampler(data, shuffle=True)  # ogni rank riceve una fetta diversa
loader = DataLoader(data, batch_size=64, sampler=sampler)
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1)).to(device)
model = DistributedDataParallel(model, device_ids=[local_rank] if acc else None)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

for epoch in range(args.epochs):
    sampler.set_epoch(epoch)  # un ordine diverso a ogni epoca
    for inputs, targets in loader:
        loss = torch.nn.functional.mse_loss(model(inputs.to(device)), targets.to(device))
        optimizer.zero_grad()
        loss.backward()  # DDP fa la media dei gradienti tra le schede qui
        optimizer.step()
    if rank == 0:  # log e checkpoint solo dal rank 0
        print(f"epoch {epoch}: loss {loss.item():.4f}", flush=True)
        os.makedirs(args.out, exist_ok=True)
        torch.save(model.module.state_dict(), os.path.join(args.out, "checkpoint.pt"))
dist.destroy_process_group()
