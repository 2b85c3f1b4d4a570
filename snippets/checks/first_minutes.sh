nvidia-smi                 # modello, memoria e driver di ogni scheda
nvidia-smi topo -m         # come sono collegate le schede
python -c "import torch; print(torch.cuda.device_count())"  # quante schede vede PyTorch
