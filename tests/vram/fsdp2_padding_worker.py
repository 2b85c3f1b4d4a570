"""Run as a script: FSDP2's buffers at their peak when N does not divide every dim 0, as rank 0 of N.

Usage: python fsdp2_padding_worker.py OUT_JSON
Rank 0 of N under PyTorch's fake process group (every buffer FSDP2 allocates is real, the
collectives are no-ops): a small transformers Mixtral (fused experts, E on dim 0) sharded as the
guide's FSDP2 script does (``fully_shard`` on each decoder layer, then on the root,
``MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32)``), one forward and backward of
the causal-LM loss, FSDP2's buffers sampled as ``fsdp2_worker.fsdp_buffer_peak`` samples them
(gathered weights, unsharded gradients, kept and in-flight reduce-scatter inputs). Reported per
scenario: the config, N, the stage, the peak and its parts, and the elements of the model
transformers built (P, one block, the root, lm_head + final norm). Nothing here reads ``vram``.
"""

import json
import sys
import warnings
from pathlib import Path

import torch
import torch.distributed as dist
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
from torch.testing._internal.distributed.fake_pg import FakeStore

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fsdp2_worker import _groups, fsdp_buffer_peak, model_sizes

# hidden 48, vocabulary 96 and the 2 x 12 KV rows divide by 3 and 6: only the experts (dim 0 = E)
# and the router (E rows) are padded
MIXTRAL = {
    "model_type": "mixtral",
    "vocab_size": 96,
    "hidden_size": 48,
    "intermediate_size": 96,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "num_local_experts": 4,
    "num_experts_per_tok": 2,
    "tie_word_embeddings": False,
}
SCENARIOS = {
    # name: (config overrides, N, reshard_after_forward of the blocks)
    "e4_n3_stage3": ({}, 3, True),  # a block's backward, the prefetched block gathered
    "e4_n3_stage2": ({}, 3, False),
    "e8_n6_stage3": ({"num_local_experts": 8}, 6, True),  # Mixtral's 8 experts on 6 GPUs: 12 gathered
    "e4_n3_one_layer": ({"num_hidden_layers": 1, "intermediate_size": 384}, 3, True),  # its reduce-scatter
    "vocab_n3_root": ({"vocab_size": 4001, "num_hidden_layers": 2}, 3, True),  # the root's, 4,002 rows
}


def run(config: dict, world_size: int, reshard: bool) -> dict:
    import transformers

    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=world_size)
    try:
        cfg = transformers.AutoConfig.for_model(**config)
        cfg._attn_implementation = "sdpa"
        torch.manual_seed(0)
        model = transformers.AutoModelForCausalLM.from_config(cfg)
        sizes = model_sizes(model)
        policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        for layer in model.model.layers:
            fully_shard(layer, reshard_after_forward=reshard, mp_policy=policy)
        fully_shard(model, mp_policy=policy)
        peak = {"total": 0}
        tokens = torch.randint(0, config["vocab_size"], (2, 8))
        with fsdp_buffer_peak(_groups(model), peak):
            model(input_ids=tokens, labels=tokens).loss.backward()
        return {
            "config": config,
            "world_size": world_size,
            "zero_stage": 3 if reshard else 2,
            "sizes": sizes,
            "peak_fsdp_buffers_bytes": peak["total"],
            "peak_parts": {k: v for k, v in peak.items() if k != "total"},
        }
    finally:
        dist.destroy_process_group()


def main() -> None:
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    report = {name: run({**MIXTRAL, **overrides}, n, reshard) for name, (overrides, n, reshard) in SCENARIOS.items()}
    with open(sys.argv[1], "w", encoding="utf-8") as out:
        json.dump(report, out)


if __name__ == "__main__":
    main()
