accelerate launch --num_processes 4 train.py  # Hugging Face Accelerate
