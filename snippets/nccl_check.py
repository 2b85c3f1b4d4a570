# nccl_check.py: avvialo con  torchrun --nproc_per_node=4 nccl_check.py
import datetime, os, sys, time
import torch, torch.distributed as dist

local_rank = int(os.environ["LOCAL_RANK"])  # la scheda di questo processo su questa macchina
shm, min_mb = os.statvfs("/dev/shm"), int(os.environ.get("NCCL_CHECK_MIN_SHM_MB", 256))
if shm.f_bavail * shm.f_frsize < min_mb * 10**6 and os.environ.get("NCCL_SHM_DISABLE") != "1":
    sys.exit(f"/dev/shm has {shm.f_bavail * shm.f_frsize // 10**6} MB free, less than {min_mb} MB: NCCL would die with a bus error. "
             "Restart the container with --shm-size=1g (or --ipc=host), or set NCCL_SHM_DISABLE=1 (slower)")
acc = torch.accelerator.current_accelerator()
if acc is None and os.environ.get("NCCL_CHECK_ALLOW_CPU") != "1":
    sys.exit("PyTorch sees no GPU: check nvidia-smi and that torch is a CUDA build (NCCL_CHECK_ALLOW_CPU=1 runs a CPU rehearsal)")
device = torch.device(acc.type, local_rank) if acc else torch.device("cpu")
if acc: torch.accelerator.set_device_index(local_rank)
sync = torch.accelerator.synchronize if acc else (lambda: None)
timeout = int(os.environ.get("NCCL_CHECK_TIMEOUT", 120))  # secondi: un rank assente diventa un errore, non un blocco
dist.init_process_group(dist.get_default_backend_for_device(device), timeout=datetime.timedelta(seconds=timeout))
rank, n, expected = dist.get_rank(), dist.get_world_size(), dist.get_world_size() * (dist.get_world_size() + 1) // 2
size = int(os.environ.get("NCCL_CHECK_MIB", 1024)) * 2**20  # 1 GiB
x = torch.full((size // 2,), rank + 1, dtype=torch.bfloat16, device=device)
try:
    dist.all_reduce(x); sync()  # 1 + 2 + ... + n: risultato noto in anticipo, esatto in bf16 fino a 22 rank
    if not torch.equal(x, torch.full_like(x, expected)):
        sys.exit(f"rank {rank}: all_reduce returned a WRONG sum (expected {expected} everywhere): do not train on this machine")
    for _ in range(3): dist.all_reduce(x)  # riscaldamento
    sync(); start = time.perf_counter()  # il tempo parte e si ferma solo a schede ferme
    for _ in range(10): dist.all_reduce(x)
    sync(); seconds = (time.perf_counter() - start) / 10
except RuntimeError as error:
    sys.exit(f"rank {rank}: all_reduce failed or did not finish within {timeout} s ({error}). Rerun with NCCL_DEBUG=INFO")
algbw = size / seconds / 1e9  # GB/s come in nccl-tests: busbw = algbw * 2(n-1)/n
sys.stdout.write(f"rank {rank}/{n} local_rank {local_rank} {device} {os.uname().nodename}: {1 / seconds:.1f} all-reduce/s"
                 f" of {size / 1e9:.2f} GB, algbw {algbw:.1f} GB/s, busbw {algbw * 2 * (n - 1) / n:.1f} GB/s, sum {expected} correct\n")
sys.stdout.flush()  # una riga intera in una sola scrittura: le righe dei rank non si mescolano
dist.destroy_process_group()
