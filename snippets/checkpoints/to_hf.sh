# DeepSpeed ZeRO (Trainer o Accelerate): una cartella che from_pretrained carica
python zero_to_hf.py checkpoints/checkpoint-500 hf_model
# Accelerate o Trainer con FSDP e SHARDED_STATE_DICT: un solo model.safetensors
accelerate merge-weights checkpoints/checkpoint-500/pytorch_model_fsdp_0 hf_model
# torch.distributed.checkpoint (train_fsdp2.py): una cartella che from_pretrained carica
python dcp_to_hf.py checkpoints/epoch-3 hf_model
