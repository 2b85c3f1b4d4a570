torchrun --nproc_per_node=4 train.py  # PyTorch puro, Hugging Face Trainer
