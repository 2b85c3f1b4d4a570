df -h /dev/shm             # poche decine di MB bastano per un "bus error"
NCCL_SHM_DISABLE=1 torchrun --nproc_per_node=4 train.py
