# DeepSpeed ZeRO (Trainer o Accelerate): lo script è già nella cartella del checkpoint
python checkpoints/checkpoint-500/zero_to_fp32.py \
    checkpoints/checkpoint-500 hf_model --safe_serialization
# Accelerate o Trainer con FSDP e SHARDED_STATE_DICT: un solo model.safetensors
accelerate merge-weights checkpoints/checkpoint-500/pytorch_model_fsdp_0 hf_model
# torch.distributed.checkpoint (train_fsdp2.py): un solo file di torch.save
python -m torch.distributed.checkpoint.format_utils \
    dcp_to_torch checkpoints/epoch-3/model model.pt
