"""LoRA and QLoRA memory: a frozen base plus small trainable adapters, on one GPU.

LoRA (Hu et al. 2021, arXiv:2106.09685, §4.1): a frozen ``nn.Linear`` W (in -> out) gets
B @ A with A: rank x in and B: out x rank, so rank * (in + out) trainable parameters per
adapted module. Only the adapters have gradients and optimizer states.

QLoRA (Dettmers et al. 2023, arXiv:2305.14314, §3): the frozen base is stored in 4-bit
NF4 with double-quantised constants (``vram.dtypes.nf4_bytes``: 4.127 bits per weight).
What transformers 5.23 really quantises (``integrations/bitsandbytes.py``,
``replace_with_bnb_linear``): the weight of every module whose type is exactly
``nn.Linear``, except the output embedding (``lm_head``) and tied weights
(``quantizers/base.py``, ``get_keys_to_not_convert``), one tensor each. So the decoder's
attention and dense-MLP projections are NF4; their biases, the embeddings, ``lm_head``
and the norms stay in bf16, and so do the parts of a mixture of experts that are not
``nn.Linear`` in transformers 5.x: the fused 3-D expert parameters and the router
(mixtral, qwen3_moe, gpt_oss). For an MoE model most of the base therefore stays in bf16
(Mixtral 8x7B: its experts alone are 45.1 of its 46.7 billion parameters). Not counted:
gpt_oss keeps its RMSNorm weights in fp32 (``_keep_in_fp32_modules``), 2 B more on each
of 141,120 of them for gpt-oss-20b. Counted besides data and constants: each quantised tensor's
``QuantState`` holds its own tables (bitsandbytes 0.50 ``functional.quantize_4bit``: the NF4
code, 16 fp32 values; with double quantisation the fp32 offset and the nested state's dynamic
map, 256 fp32 values, a new tensor per call): ``NF4_TABLE_BYTES`` = 1,092 B per tensor,
measured with bitsandbytes 0.50.2 on CPU.

LoRA targets: PEFT's ``target_modules``, matched against the last name of each module.
``"all-linear"`` (the default here, and what the finder uses) is PEFT's shorthand for
every ``nn.Linear`` but the output layer (``tuners_utils._maybe_include_all_linear_layers``):
the decoder's projections (q, k, v, o, gate, up, down; phi3's fused ``qkv_proj`` and
``gate_up_proj``). Where transformers 5 fused the experts of a model that had
``nn.Linear`` experts in transformers 4 (mixtral, and qwen3_moe through qwen2_moe's
conversion pattern), PEFT 0.21 converts the targets (``utils/transformers_weight_conversion.py``,
``_convert_peft_config_moe``): the v4 names (mixtral ``gate``, ``w1``, ``w3``, ``w2``;
qwen3_moe ``gate``, ``gate_proj``, ``up_proj``, ``down_proj``; all of them under
"all-linear") become ``target_parameters`` on the router's weight and the fused
``gate_up_proj``/``down_proj``, each adapted per expert (``lora.ParamWrapper``: A is
rank*E x in, B out x rank*E), ``gate_up_proj`` with rank 2r because two v4 projections are
fused in it (and both must be targeted). gpt_oss never had v4 experts: its router and
experts are not adapted. PEFT 0.21's per-family defaults
(``TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING``: ``q_proj``, ``v_proj`` for llama,
mistral, mixtral, qwen2, qwen3, gemma2, gemma3_text; none for phi3, qwen3_moe, gpt_oss,
where PEFT asks for targets) are ``PEFT_DEFAULT_TARGETS``.

Adapter bytes per parameter come from the optimizer (``vram.states.OPTIMIZERS``). The
default "adamw-fp32" matches PEFT, which keeps adapter weights in fp32
(``autocast_adapter_dtype=True``): 4 + 4 + 8 = 16 B per adapter parameter.
Activations are not included.

On several GPUs (``lora_memory_per_gpu``): the adapters are the only trainable
parameters, so ZeRO (Rajbhandari et al. 2019, arXiv:1910.02054, §5.1) shards their
optimizer states (stage 1), gradients (2) and weights (3) as ``vram.sharding`` does for
a full model. The frozen base has no gradients or optimizer states: stages 0-2 keep a
whole copy on every GPU; stage 3 (DeepSpeed ZeRO-3, FSDP ``FULL_SHARD``) partitions
every parameter, frozen ones included, so each GPU keeps 1/N of it (``transformers``
PR #29587 "Add support for FSDP+QLoRA and DeepSpeed ZeRO3+QLoRA": a 70B base in 4 bit,
35 GB, becomes 17.5 GB per GPU on two).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .breakdown import ModelShape, model_shape
from .dtypes import NF4, nf4_bytes, tensor_bytes
from .families import get_family, model_types
from .fsdp2 import fsdp2_model_states_per_rank, gathered_sizes, rank0_shard_params
from .models import ModelConfig, Module, as_model_config, count_params, layer_modules
from .optimizer_step import step_temporary_coefficients
from .sharding import check_world_size, check_zero_stage, model_states_per_gpu
from .states import BytesPerParam, as_bytes_per_param
from .units import ceil_div
from .validate import check_int, check_params

ModelLike = ModelConfig | Mapping[str, Any] | str | Path
# PEFT's shorthand for every nn.Linear but the output layer.
ALL_LINEAR = "all-linear"
# PEFT 0.21 TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING (families it lists).
# (the registry's ``Family.peft_targets``; families PEFT does not list are left out).
PEFT_DEFAULT_TARGETS: dict[str, tuple[str, ...]] = {
    name: get_family(name).peft_targets for name in model_types() if get_family(name).peft_targets
}
BASE_DTYPES = ("fp32", "bf16", "fp16", NF4)


@dataclass(frozen=True)
class LoraMemory:
    """Bytes on one GPU: frozen base weights and the adapters' model states.

    ``adapter_params`` is the number of trainable parameters of the whole model (not a
    per-GPU share); every ``*_bytes`` field is what one GPU holds.
    """

    base_weights_bytes: int
    adapter_params: int
    adapter_weights_bytes: int
    adapter_gradients_bytes: int
    adapter_optimizer_bytes: int

    @property
    def total_bytes(self) -> int:
        """Base weights plus adapter weights, gradients and optimizer states (bytes)."""
        return (
            self.base_weights_bytes
            + self.adapter_weights_bytes
            + self.adapter_gradients_bytes
            + self.adapter_optimizer_bytes
        )


@dataclass(frozen=True)
class LoraTarget:
    """One adapted weight of a decoder layer: A is (rank x rank_factor x experts) x in, B out x that."""

    name: str
    in_features: int
    out_features: int
    experts: int = 1
    rank_factor: int = 1

    def params(self, rank: int) -> int:
        """Trainable elements of A and B at ``rank``."""
        return rank * self.rank_factor * self.experts * (self.in_features + self.out_features)


def _adapted_as_linear(config: ModelConfig, module: Module) -> bool:
    """PEFT adapts this module as an nn.Linear: one, or llama4_text's router (a subclass)."""
    experts = config.family.experts
    return module.kind == "linear" or (module.kind == "router" and bool(experts and experts.router_is_linear))


def _resolve(config: ModelConfig, target_modules: str | Iterable[str]) -> tuple[frozenset[str], frozenset[str]]:
    """(names of nn.Linear modules, names of expert parameters) a target_modules value adapts, as PEFT does."""
    layers = {moe: index for index, moe in reversed(list(enumerate(config.moe_layers)))}
    modules = [m for index in layers.values() for m in layer_modules(config, index)]
    experts = config.family.experts  # PEFT 0.21 _MOE_TARGET_MODULE_MAPPING / _MOE_FUSED_TARGETS
    linear = {m.name for m in modules if _adapted_as_linear(config, m)}
    # PEFT converts by model_type: a qwen3_moe layer with a dense MLP loses its gate/up/down
    # Linear targets to the (absent) expert parameters too.
    v4 = dict(experts.peft_v4_names) if experts else {}
    if isinstance(target_modules, str):
        if target_modules != ALL_LINEAR:  # PEFT full-matches a string, as a regex, against whole module names
            raise ValueError(
                f"target_modules {target_modules!r} is a string: pass a list of names such as "
                f"[{target_modules!r}] (PEFT reads a string other than {ALL_LINEAR!r} as a regular "
                "expression over whole module names)"
            )
        targets = linear | set(v4)
    else:
        targets = set(target_modules)
    if not targets:
        raise ValueError(f"no LoRA target modules given; known: {ALL_LINEAR}, {', '.join(sorted(linear | set(v4)))}")
    params = {v4[name] for name in targets if name in v4}
    for fused in set(v4.values()):
        halves = {name for name, new in v4.items() if new == fused}
        if len(halves) > 1 and 0 < len(targets & halves) < len(halves):
            raise ValueError(
                f"LoRA targets {', '.join(sorted(targets & halves))} of {config.model_type} need "
                f"{', '.join(sorted(halves - targets))} too: transformers 5 fuses them into {fused} (PEFT refuses one alone)"
            )
    names = targets - set(v4)
    kinds = {m.name: m.kind for m in modules}
    not_linear = sorted(name for name in names if name not in linear and name in kinds)
    if not_linear:
        raise ValueError(
            f"LoRA target {', '.join(not_linear)} of {config.model_type} is not an nn.Linear in transformers 5.x "
            f"(a {kinds[not_linear[0]]}); nn.Linear modules: {', '.join(sorted(linear))}"
        )
    unknown = sorted(names - linear)
    if unknown:
        raise ValueError(
            f"unknown LoRA target modules {unknown!r} for {config.model_type}; "
            f"known: {ALL_LINEAR}, {', '.join(sorted(linear | set(v4)))}"
        )
    return frozenset(names), frozenset(params)


def lora_targets(
    config: ModelLike, layer: int, target_modules: str | Iterable[str] = ALL_LINEAR
) -> tuple[LoraTarget, ...]:
    """The weights of decoder layer ``layer`` that PEFT 0.21 adapts for ``target_modules`` (module docstring).

    ``target_modules``: ``"all-linear"`` or an iterable of module names (the last component
    of a module's path, as PEFT matches a list); a string other than "all-linear" is refused,
    since PEFT would read it as a regular expression over whole module names. Names outside
    the decoder layers (``lm_head``, ``embed_tokens``) and names absent from the model are
    refused, where PEFT adapts the first and ignores the second as long as one name matches.
    Raises ValueError for an unknown name, a name that is not an nn.Linear in transformers
    5.x and not a converted v4 expert name, half of a fused expert pair, or such a string.
    """
    config = as_model_config(config)
    names, params = _resolve(config, target_modules)
    targets = []
    for module in layer_modules(config, layer):
        if _adapted_as_linear(config, module) and module.name in names:
            out_features, in_features = dict(module.shapes)["weight"]
            targets.append(LoraTarget(module.path, in_features, out_features))
        elif module.kind == "router" and "router" in params:
            e, h = dict(module.shapes)["weight"]
            targets.append(LoraTarget(module.path + ".weight", h, e))
        elif module.kind == "experts":
            e, i, h = config.num_local_experts, config.moe_intermediate_size, config.hidden_size
            if "gate_up_proj" in params:
                targets.append(LoraTarget(module.path + ".gate_up_proj", h, 2 * i, e, rank_factor=2))
            if "down_proj" in params:
                targets.append(LoraTarget(module.path + ".down_proj", i, h, e))
    return tuple(targets)


def lora_adapter_params(config: ModelLike, rank: int, target_modules: str | Iterable[str] = ALL_LINEAR) -> int:
    """Trainable LoRA parameters (elements) of the whole model, as PEFT 0.21 creates them.

    rank x (in + out) for every adapted nn.Linear of every layer, and for converted MoE
    experts rank x factor x E x (in + out) (module docstring). target_modules:
    ``"all-linear"`` (default) or module names as PEFT's ``target_modules`` (decoder
    ``nn.Linear`` names; mixtral's and qwen3_moe's v4 expert names). Llama 3 8B, rank 16,
    all-linear: 41,943,040 (PEFT's ``print_trainable_parameters``). Raises ValueError for
    rank < 1 or a target ``lora_targets`` refuses.
    """
    config = as_model_config(config)
    check_int(rank, "rank", 1)
    _resolve(config, target_modules)  # refuse a bad target even where no layer has it
    per_kind: dict[bool, int] = {}
    for index, moe in enumerate(config.moe_layers):
        if moe not in per_kind:
            per_kind[moe] = sum(t.params(rank) for t in lora_targets(config, index, target_modules))
    return sum(per_kind[moe] for moe in config.moe_layers)


def _quantized_linears(config: ModelConfig, layer: int) -> list[int]:
    """Weight elements of each nn.Linear of one decoder layer (what bitsandbytes quantises)."""
    return [m.linear().weight_params for m in layer_modules(config, layer) if m.kind == "linear"]


def qlora_quantized_params(config: ModelLike) -> int:
    """Elements transformers 5.23 hands to bitsandbytes for 4-bit: every decoder nn.Linear weight.

    lm_head (the output embedding) and tied weights are left out, as
    ``quantizers.base.get_keys_to_not_convert`` does; MoE experts and routers are not
    ``nn.Linear`` in transformers 5.x and stay in bf16. Raises ValueError (ConfigError).
    """
    config = as_model_config(config)
    per_kind = {
        moe: sum(_quantized_linears(config, index))
        for moe, index in {moe: i for i, moe in reversed(list(enumerate(config.moe_layers)))}.items()
    }
    return sum(per_kind[moe] for moe in config.moe_layers)


# Per quantised tensor, bitsandbytes' QuantState tables (module docstring): the NF4 code
# (16 x fp32), the double quantisation's offset (1 x fp32) and nested dynamic map (256 x fp32).
NF4_TABLE_BYTES = 16 * 4 + 4 + 256 * 4


def _qlora_base_parts(config: ModelConfig) -> tuple[int, int, int]:
    """(packed 4-bit data, NF4 quantisation constants and tables, bf16 rest) of a QLoRA base,
    in bytes.

    Quantised: ``qlora_quantized_params``, one NF4 tensor per nn.Linear weight, each with its
    ``NF4_TABLE_BYTES``; the rest bf16.
    """
    per_kind: dict[bool, tuple[int, int]] = {}
    for index, moe in enumerate(config.moe_layers):
        if moe not in per_kind:
            sizes = _quantized_linears(config, index)
            per_kind[moe] = (
                sum(ceil_div(n, 2) for n in sizes),
                sum(nf4_bytes(n) - ceil_div(n, 2) + NF4_TABLE_BYTES for n in sizes),
            )
    packed = sum(per_kind[moe][0] for moe in config.moe_layers)
    constants = sum(per_kind[moe][1] for moe in config.moe_layers)
    rest = count_params(config).total - qlora_quantized_params(config)
    return packed, constants, tensor_bytes(rest, "bf16")


def qlora_base_bytes(config: ModelLike) -> int:
    """Bytes of a QLoRA base as transformers + bitsandbytes load it: the weight of every decoder
    ``nn.Linear`` in NF4 (one tensor each, constants double-quantised), everything else in bf16
    (embeddings, lm_head, norms, biases, and MoE experts and routers, which are not nn.Linear).

    Raises ValueError (ConfigError) for a bad config.
    """
    return sum(_qlora_base_parts(as_model_config(config)))


def nf4_packed_bf16_rows(n_elements: int) -> int:
    """Rows of the (rows, 1) bf16 tensor bitsandbytes 0.50.2 stores ``n_elements`` of NF4 data in
    with ``quant_storage=torch.bfloat16``: the ceil(n/2) packed bytes viewed as 2-byte elements
    (``backends/default/ops.py``, ``quantize_4bit``: ``packed.view(quant_storage).unsqueeze(1)``)."""
    return ceil_div(ceil_div(n_elements, 2), 2)


def qlora_fsdp2_shape(config: ModelLike) -> ModelShape:
    """The parameters FSDP2 shards for a QLoRA base loaded with
    ``bnb_4bit_quant_storage=torch.bfloat16``: ``model_shape(config)`` with every quantised
    weight (``qlora_quantized_params``: each decoder ``nn.Linear``'s) replaced by its packed NF4
    data, ``nf4_packed_bf16_rows`` x 1 bf16 elements, so that ``params``,
    ``decoder_layer_params`` (the largest layer) and ``param_shapes`` count bf16 elements as
    FSDP2 all-gathers and shards them; ``root_params`` stays (embeddings, final norm and
    ``lm_head`` are not quantised). The quantisation constants are not parameters and are not
    in it. Raises ValueError (ConfigError) for a bad config."""
    config = as_model_config(config)
    shape = model_shape(config)
    shapes = dict(shape.param_shapes or ())
    per_layer = 0
    for index in range(config.num_hidden_layers):
        layer = 0
        for module in layer_modules(config, index):
            for name, dims in module.shapes:
                numel = 1
                for d in dims:
                    numel *= d
                if module.kind == "linear" and name == "weight":
                    shapes[dims] -= 1
                    packed = (nf4_packed_bf16_rows(numel), 1)
                    shapes[packed] = shapes.get(packed, 0) + 1
                    numel = packed[0]
                layer += numel
        per_layer = max(per_layer, layer)
    kept = tuple((dims, count) for dims, count in shapes.items() if count)
    params = sum(count * _numel(dims) for dims, count in kept)
    return replace(
        shape,
        params=params,
        decoder_layer_params=per_layer,
        param_shapes=kept,
        largest_layer_params=None,
        linear_params=None,
        layer_shapes=None,
    )


def _numel(dims: tuple[int, ...]) -> int:
    numel = 1
    for d in dims:
        numel *= d
    return numel


def _adapter_memory(base_weights_bytes: int, adapter_params: int, optimizer: str | BytesPerParam) -> LoraMemory:
    bpp = as_bytes_per_param(optimizer)
    return LoraMemory(
        base_weights_bytes=base_weights_bytes,
        adapter_params=adapter_params,
        adapter_weights_bytes=adapter_params * bpp.weights,
        adapter_gradients_bytes=adapter_params * bpp.gradients,
        adapter_optimizer_bytes=adapter_params * bpp.optimizer,
    )


def _check_base_dtype(base_dtype: str) -> str:
    if base_dtype not in BASE_DTYPES:
        raise ValueError(f"unknown base_dtype {base_dtype!r}; known: {', '.join(BASE_DTYPES)}")
    return base_dtype


def lora_memory(
    base_params: int,
    adapter_params: int,
    base_dtype: str = "bf16",
    optimizer: str | BytesPerParam = "adamw-fp32",
) -> LoraMemory:
    """LoRA/QLoRA bytes on one GPU from bare counts.

    base_params: frozen parameters (> 0); adapter_params: trainable ones (>= 0);
    base_dtype: fp32, bf16, fp16 or nf4 (nf4 here treats the whole base as one quantised
    tensor; use ``lora_memory_for_config`` to keep embeddings and norms in bf16).
    Returns ``LoraMemory`` in bytes. Raises ValueError.
    """
    check_params(base_params)
    check_int(adapter_params, "adapter_params", 0)
    base = tensor_bytes(base_params, _check_base_dtype(base_dtype))
    return _adapter_memory(base, adapter_params, optimizer)


def lora_memory_for_config(
    config: ModelLike,
    rank: int,
    target_modules: str | Iterable[str] = ALL_LINEAR,
    base_dtype: str = "bf16",
    optimizer: str | BytesPerParam = "adamw-fp32",
) -> LoraMemory:
    """LoRA (base_dtype bf16/fp16/fp32) or QLoRA (base_dtype "nf4") bytes for a model config.

    One GPU: ``lora_memory_per_gpu`` with world_size 1 (nothing to shard). Returns
    ``LoraMemory`` in bytes. Raises ValueError (ConfigError) for a bad config, rank,
    target or dtype.
    """
    return lora_memory_per_gpu(config, rank, 1, 0, target_modules, base_dtype, optimizer)


def lora_memory_per_gpu(
    config: ModelLike,
    rank: int,
    world_size: int,
    zero_stage: int,
    target_modules: str | Iterable[str] = ALL_LINEAR,
    base_dtype: str = "bf16",
    optimizer: str | BytesPerParam = "adamw-fp32",
) -> LoraMemory:
    """LoRA/QLoRA bytes on ONE of ``world_size`` data-parallel GPUs under ZeRO ``zero_stage``.

    Adapters (``rank``, ``target_modules`` as in ``lora_adapter_params``; ``optimizer``
    as in ``vram.states.OPTIMIZERS``): sharded exactly like ``model_states_per_gpu``
    (ZeRO paper §5.1): optimizer states from stage 1, gradients from 2, weights at 3,
    each rank's share rounded up to whole bytes. ``adapter_params`` stays the model's
    total count of trainable parameters; the byte fields are per GPU.

    Frozen base (``base_dtype`` fp32/bf16/fp16, or "nf4" sized as ``qlora_base_bytes``):
    the whole of it on every GPU at stages 0-2; at stage 3 each GPU keeps 1/world_size
    (rounded up; FSDP's padding of each flat parameter is not counted).
    QLoRA at stage 3 assumes what FSDP and DeepSpeed ZeRO-3 need to shard 4-bit weights
    at all: ``BitsAndBytesConfig(bnb_4bit_quant_storage=torch.bfloat16)`` (bitsandbytes
    docs, "FSDP-QLoRA"; bitsandbytes PR #970), which stores the packed 4-bit data in a
    float dtype of the same bytes. The data and the bf16 rest are split; the NF4
    quantisation constants (absmax, about 0.127 bit per weight) live in each layer's
    ``quant_state``, which is not a parameter, and stay whole on every GPU (Answer.AI
    fsdp_qlora PR #4: the ``quant_state`` is left "attached to all rank's Linear4bit
    layers"). With world_size 1 every stage gives the one-GPU figure.

    Returns ``LoraMemory`` in bytes per GPU. Raises ValueError (ConfigError) for a bad
    config, rank, target, dtype or optimizer, world_size < 1 or zero_stage not 0-3.
    """
    config = as_model_config(config)
    check_world_size(world_size)
    check_zero_stage(zero_stage)
    adapters = lora_adapter_params(config, rank, target_modules)
    states = model_states_per_gpu(adapters, world_size, zero_stage, optimizer)
    if _check_base_dtype(base_dtype) == NF4:
        packed, constants, rest = _qlora_base_parts(config)
    else:
        packed, constants, rest = 0, 0, tensor_bytes(count_params(config).total, base_dtype)
    base = ceil_div(packed + rest, world_size) + constants if zero_stage == 3 else packed + constants + rest
    return LoraMemory(
        base_weights_bytes=base,
        adapter_params=adapters,
        adapter_weights_bytes=states.weights_bytes,
        adapter_gradients_bytes=states.gradients_bytes,
        adapter_optimizer_bytes=states.optimizer_bytes,
    )


# --- LoRA (bf16 base) under FSDP2 -----------------------------------------------------------

LORA_FSDP2_MIN_LAYERS = 3  # the moments below were measured on 3 decoder layers


@dataclass(frozen=True)
class LoraFsdp2Memory:
    """Bytes on rank 0 of ``world_size`` when PEFT's LoRA trains under FSDP2 (``lora_fsdp2_memory``).

    ``adapter_params`` is the model's total of trainable parameters; every ``*_bytes`` field
    is what rank 0 holds: the persistent shards, FSDP2's buffers at the moment of forward or
    backward that holds the most (``backward_working_bytes``, the activations add to it) and
    what the optimizer step allocates (``step_working_bytes``).
    """

    base_weights_bytes: int
    adapter_params: int
    adapter_weights_bytes: int
    adapter_gradients_bytes: int
    adapter_optimizer_bytes: int
    backward_working_bytes: int
    step_working_bytes: int

    @property
    def states_bytes(self) -> int:
        """Base shards plus the adapters' weight, gradient and optimizer shards (bytes)."""
        return (
            self.base_weights_bytes
            + self.adapter_weights_bytes
            + self.adapter_gradients_bytes
            + self.adapter_optimizer_bytes
        )

    @property
    def backward_bytes(self) -> int:
        """States plus FSDP2's buffers at the fullest moment of forward/backward (bytes)."""
        return self.states_bytes + self.backward_working_bytes

    @property
    def per_gpu_bytes(self) -> int:
        """The larger of ``backward_bytes`` and the optimizer step (states plus its temporaries)."""
        return max(self.backward_bytes, self.states_bytes + self.step_working_bytes)


def lora_fsdp2_memory(
    config: ModelLike,
    rank: int,
    world_size: int,
    zero_stage: int,
    target_modules: str | Iterable[str] = ALL_LINEAR,
    optimizer_impl: str = "foreach",
    base_dtype: str = "bf16",
) -> LoraFsdp2Memory:
    """LoRA bytes on rank 0 of ``world_size`` GPUs under PyTorch 2.13 FSDP2, bf16 or NF4 (QLoRA) base.

    The run modelled: the model loaded in bf16, PEFT 0.21's LoRA (``rank``, ``target_modules``
    as in ``lora_adapter_params``; adapters in fp32, PEFT's ``autocast_adapter_dtype=True``),
    ``fully_shard`` on every decoder layer with ``reshard_after_forward`` True (``zero_stage``
    3) or False (2) and on the root, ``MixedPrecisionPolicy(param_dtype=bf16,
    reduce_dtype=fp32)`` as snippets/train_fsdp2.py builds it, ``torch.optim.AdamW`` over the
    adapters only in ``optimizer_impl`` (``vram.optimizer_step``). Shards follow FSDP2's dim-0
    rule (``vram.fsdp2``): Pb/N the base elements rank 0 holds, A/N its adapter elements.
    In elements: Pb the frozen base, A the adapters, R the root (embedding, final norm, lm_head:
    frozen, never adapted), B one decoder layer's base and a its adapters (the largest).

    - persistent: bf16 base shards 2Pb/N; adapters fp32 4A/N, fp32 gradient shards 4A/N,
      AdamW 8A/N;
    - backward, zero_stage 3: the moment ``vram.fsdp2.working_moments`` calls a decoder
      layer's, with frozen weights that have no gradients: the root gathered (2R), this block
      and the prefetched one gathered (4(B + a): the adapters cast to bf16 with them), this
      block's bf16 adapter gradients (2a) and the previous block's fp32 reduce-scatter input
      (4a); the root has no gradients, hence no reduce-scatter of its own;
    - zero_stage 2: the whole model's bf16 unsharded weights (2(Pb + A)) from forward to each
      block's backward, and the larger of the last block's all-gather buffer that forward keeps
      for overlap (``comm_ctx.all_gather_state``: 2(B + a)) and a block's reduce-scatter (its
      weights resharded, -2(B + a), its bf16 gradients in its fp32 input, 6a: the larger when
      a > 2B, at very high ranks);
    - the step: the states and the AdamW temporaries over the local adapters (foreach 4A/N,
      forloop 8 B per element of the largest local adapter tensor, fused 0); the gathered
      weights are resharded by then.

    Oracle: real ``fully_shard`` on 2 gloo ranks on CPU with PEFT on a small Llama, at both
    stages and both moments of stage 2 (tests/vram/test_lora_fsdp2.py, lora_fsdp2_worker.py):
    every byte above but AdamW's 0-dim ``step`` tensors (4 B per adapter tensor).

    QLoRA (``base_dtype`` "nf4"): the base loaded by transformers + bitsandbytes 0.50.2 with
    ``BitsAndBytesConfig(bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
    bnb_4bit_quant_storage=torch.bfloat16)``, the storage FSDP needs to shard 4-bit weights at
    all (bitsandbytes docs, "FSDP-QLoRA"; PR #970): each quantised weight is then a bf16
    parameter of shape (``nf4_packed_bf16_rows``, 1) that FSDP2 shards, gathers and frees like
    any other, so every formula above holds with Pb, B and the shards counted on
    ``qlora_fsdp2_shape(config)`` (2 B per packed element: half a byte per weight). The
    quantisation constants (``QuantState``: absmax, the nested absmax and the tables,
    ``_qlora_base_parts``) are not parameters: FSDP2 leaves them whole on every rank, in
    ``base_weights_bytes`` beside the shards. Oracle: the same run on 2 gloo ranks with
    bitsandbytes' ``Linear4bit`` quantised on the CPU (tests/vram/test_qlora_fsdp2.py,
    qlora_fsdp2_worker.py). Not counted: the bf16 weight bitsandbytes dequantises for one matmul
    at a time in forward and backward (2 B per element of that weight, freed after it).

    Not modelled (raised): fewer than ``LORA_FSDP2_MIN_LAYERS`` decoder layers, LoRA on fused
    expert parameters (PEFT's ``target_parameters``: mixtral, qwen3_moe), a base other than
    bf16 and nf4.
    Returns ``LoraFsdp2Memory`` in bytes. Raises ValueError (ConfigError) for a bad config,
    rank, target, world_size, implementation or a zero_stage other than 2 or 3.
    """
    config = as_model_config(config)
    n = check_world_size(world_size)
    if _check_base_dtype(base_dtype) not in ("bf16", NF4):
        raise ValueError(f"LoRA under FSDP2 is modelled with a bf16 or nf4 (QLoRA) base, got {base_dtype!r}")
    if zero_stage not in (2, 3):
        raise ValueError(
            f"LoRA under FSDP2 is modelled at zero_stage 2 (reshard_after_forward=False) and 3 "
            f"(True), got {zero_stage!r} (FSDP2 has no ZeRO-1; 0 is DDP: lora_memory_per_gpu)"
        )
    per_coefficient, per_largest = step_temporary_coefficients("adamw", optimizer_impl)
    check_int(rank, "rank", 1)
    if config.num_hidden_layers < LORA_FSDP2_MIN_LAYERS:
        raise ValueError(
            f"LoRA under FSDP2 is measured from {LORA_FSDP2_MIN_LAYERS} decoder layers on, "
            f"{config.model_type} has {config.num_hidden_layers}"
        )
    adapters = lora_adapter_params(config, rank, target_modules)
    shapes, per_layer = [], 0
    for index in range(config.num_hidden_layers):
        targets = lora_targets(config, index, target_modules)
        if any(t.experts > 1 or t.rank_factor > 1 or t.name.endswith(".weight") for t in targets):
            raise ValueError(
                "LoRA on fused expert parameters (PEFT's target_parameters) under FSDP2 is not "
                "modelled; target the attention projections only"
            )
        per_layer = max(per_layer, sum(t.params(rank) for t in targets))
        for t in targets:
            shapes += [(rank, t.in_features), (t.out_features, rank)]  # lora_A, lora_B
    shape = qlora_fsdp2_shape(config) if base_dtype == NF4 else model_shape(config)
    constants = _qlora_base_parts(config)[1] if base_dtype == NF4 else 0  # whole on every rank
    adapter_states = fsdp2_model_states_per_rank(shapes, n, 0, "adamw-fp32")
    local_adapters = sum(_rank0_chunk(s, n) for s in shapes)  # rank 0's rows are all its own
    # the base as FSDP2 gathers it: each parameter padded to N x ceil(dim0 / N) rows (vram.fsdp2.gathered_sizes)
    base, root, block = gathered_sizes(shape, n)
    if zero_stage == 3:
        working = 2 * root + 4 * (block + per_layer) + 2 * per_layer + 4 * per_layer
    else:
        working = 2 * (base + adapters) + max(2 * (block + per_layer), -2 * (block + per_layer) + 6 * per_layer)
    largest = max((_rank0_chunk(s, n) for s in shapes), default=0)
    return LoraFsdp2Memory(
        base_weights_bytes=tensor_bytes(rank0_shard_params(shape, n), "bf16") + constants,
        adapter_params=adapters,
        adapter_weights_bytes=adapter_states.weights_bytes,
        adapter_gradients_bytes=adapter_states.gradients_bytes,
        adapter_optimizer_bytes=adapter_states.optimizer_bytes,
        backward_working_bytes=working,
        step_working_bytes=per_coefficient * local_adapters + per_largest * largest,
    )


def _rank0_chunk(shape: tuple[int, int], world_size: int) -> int:
    """Elements of rank 0's chunk of a 2-D parameter: ceil(dim0 / N) rows x dim1."""
    return ceil_div(shape[0], world_size) * shape[1]
