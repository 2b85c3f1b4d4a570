# nccl_check.py: avvialo con  torchrun --nproc_per_node=4 nccl_check.py
import datetime
import os
import sys
import time

import torch
import torch.distributed as dist

if "LOCAL_RANK" not in os.environ:
    sys.exit("Start it with torchrun: torchrun --nproc_per_node=4 nccl_check.py")

# LOCAL_RANK: la scheda di questo processo su questa macchina
local_rank = int(os.environ["LOCAL_RANK"])
size_mib = int(os.environ.get("NCCL_CHECK_MIB", 1024))  # 1 GiB
timeout_s = int(os.environ.get("NCCL_CHECK_TIMEOUT", 120))
min_shm_mb = int(os.environ.get("NCCL_CHECK_MIN_SHM_MB", 256))

# NCCL passa i dati tra i processi di una macchina in /dev/shm
shm = os.statvfs("/dev/shm")
free_shm_mb = shm.f_bavail * shm.f_frsize // 10**6
if free_shm_mb < min_shm_mb and os.environ.get("NCCL_SHM_DISABLE") != "1":
    sys.exit(
        f"/dev/shm has {free_shm_mb} MB free, less than {min_shm_mb} MB: "
        "NCCL would die with a bus error. Restart the container with "
        "--shm-size=1g (or --ipc=host), or set NCCL_SHM_DISABLE=1 (slower)"
    )

acc = torch.accelerator.current_accelerator()
if acc is None and os.environ.get("NCCL_CHECK_ALLOW_CPU") != "1":
    sys.exit(
        "PyTorch sees no GPU: check nvidia-smi and that torch is a CUDA build "
        "(NCCL_CHECK_ALLOW_CPU=1 runs a CPU rehearsal)"
    )
if acc is None:
    device = torch.device("cpu")
else:
    device = torch.device(acc.type, local_rank)
    torch.accelerator.set_device_index(local_rank)


def sync():
    # aspetta che la scheda abbia finito: solo allora l’orologio dice il vero
    if acc is not None:
        torch.accelerator.synchronize()


# nccl sulle GPU, gloo sulla CPU; un rank assente diventa un errore, non un blocco
backend = dist.get_default_backend_for_device(device)
dist.init_process_group(backend, timeout=datetime.timedelta(seconds=timeout_s))
rank = dist.get_rank()
n = dist.get_world_size()

# ogni rank manda rank + 1: la somma 1 + 2 + ... + n è nota in anticipo
expected = n * (n + 1) // 2
# oltre 2^24 il float32 non conta più gli interi esatti
if expected > 2**24:
    sys.exit(f"rank {rank}: {n} ranks are more than this check can sum exactly")
x = torch.full((size_mib * 2**20 // 4,), rank + 1, dtype=torch.float32, device=device)

# con gloo un errore o un timeout arriva all’except; con NCCL il watchdog
# di PyTorch ferma prima il processo (vedi il testo sotto lo script)
try:
    dist.all_reduce(x)
    sync()
    if not torch.all(x == expected):
        sys.exit(
            f"rank {rank}: all_reduce returned a WRONG sum "
            f"(expected {expected} everywhere): do not train on this machine"
        )
    for _ in range(3):  # riscaldamento
        dist.all_reduce(x)
    sync()
    start = time.perf_counter()
    for _ in range(10):
        dist.all_reduce(x)
    sync()
    seconds = (time.perf_counter() - start) / 10
except RuntimeError as error:
    sys.exit(
        f"rank {rank}: all_reduce failed or did not finish within {timeout_s} s "
        f"({error}). Rerun with NCCL_DEBUG=INFO"
    )

# GB/s come in nccl-tests: algbw = byte / tempo, busbw = algbw * 2(n-1)/n
algbw = x.nbytes / seconds / 1e9
if n > 1:
    busbw = f"busbw {algbw * 2 * (n - 1) / n:.1f} GB/s"
else:
    busbw = "no busbw (1 rank: nothing crosses a link)"
line = (
    f"rank {rank}/{n} local_rank {local_rank} {device} {os.uname().nodename}: "
    f"{1 / seconds:.1f} all-reduce/s of {x.nbytes / 1e9:.2f} GB, "
    f"algbw {algbw:.1f} GB/s, {busbw}, sum {expected} correct\n"
)
# una riga intera in una sola scrittura: le righe dei rank non si mescolano
sys.stdout.write(line)
sys.stdout.flush()
dist.destroy_process_group()
