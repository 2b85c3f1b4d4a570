# Un’istanza di ComfyUI per scheda, sulla sua porta, aperta solo alla macchina stessa
for gpu in 0 1 2 3; do
  CUDA_VISIBLE_DEVICES=$gpu python main.py --listen 127.0.0.1 --port $((8188 + gpu)) &
done
# Dal tuo computer: un tunnel SSH per porta, poi apri http://localhost:8188 e le altre
ssh -N -L 8188:localhost:8188 -L 8189:localhost:8189 \
    -L 8190:localhost:8190 -L 8191:localhost:8191 root@203.0.113.10
