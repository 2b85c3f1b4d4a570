# Accelerate con FSDP2 (il file qui sopra); train_hf.py usa Accelerator o il Trainer
accelerate launch --config_file accelerate_fsdp2.yaml train_hf.py
# Accelerate con DeepSpeed: ZeRO-2, ZeRO-3 o una variante con offload
accelerate launch --num_processes 4 --mixed_precision bf16 \
    --use_deepspeed --deepspeed_config_file ds_zero3.json train_hf.py
# Trainer lanciato da torchrun: --bf16 e --deepspeed arrivano a TrainingArguments
torchrun --nproc_per_node=4 train_hf.py --bf16 --deepspeed ds_zero3.json
# LoRA con PEFT (--lora): si addestrano solo gli adattatori, con DDP
accelerate launch --num_processes 4 --mixed_precision bf16 train_hf.py --lora
