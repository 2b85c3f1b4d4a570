# Dove si ferma NCCL: il primo errore nel log è quello che conta
NCCL_DEBUG=INFO torchrun --nproc_per_node=4 nccl_check.py
# Schede consumer: senza trasferimenti peer-to-peer spesso i blocchi spariscono
NCCL_P2P_DISABLE=1 torchrun --nproc_per_node=4 train.py
