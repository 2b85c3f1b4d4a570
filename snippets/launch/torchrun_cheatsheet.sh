# Una macchina, tutte le schede che vede; la porta la sceglie torchrun
torchrun --standalone --nproc_per_node=gpu train.py
# Due lavori sulla stessa macchina: schede diverse; se fissi la porta, una per lavoro
CUDA_VISIBLE_DEVICES=0,1 torchrun --nproc_per_node=2 --master_port=29500 \
    train.py --out a
CUDA_VISIBLE_DEVICES=2,3 torchrun --nproc_per_node=2 --master_port=29501 \
    train.py --out b
# Se un processo muore, torchrun riavvia tutti (fino a 3 volte): lo script riprende
torchrun --standalone --nproc_per_node=gpu --max-restarts=3 train_fsdp2.py
# Meno frammentazione della memoria delle GPU
PYTORCH_ALLOC_CONF=expandable_segments:True \
    torchrun --standalone --nproc_per_node=gpu train.py
