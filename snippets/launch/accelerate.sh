# Uno script con Accelerator o il Trainer, in bf16 (senza --mixed_precision: fp32)
accelerate launch --num_processes 4 --mixed_precision bf16 train_hf.py
