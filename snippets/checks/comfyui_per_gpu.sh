# Una istanza di ComfyUI per scheda, ognuna sulla sua porta
for gpu in 0 1 2 3; do
  CUDA_VISIBLE_DEVICES=$gpu python main.py --listen --port $((8188 + gpu)) &
done
