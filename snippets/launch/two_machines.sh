# Lo stesso comando su ognuna delle due macchine; MASTER_IP: l’indirizzo della prima
torchrun --nnodes=2 --nproc_per_node=8 --rdzv-backend=c10d \
    --rdzv-endpoint=$MASTER_IP:29500 --rdzv-id=job1 train_fsdp2.py
