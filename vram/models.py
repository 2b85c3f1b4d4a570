"""Parameter counts and module shapes from a Hugging Face ``config.json``, as ``transformers`` builds them.

Families: every ``model_type`` of the registry (``vram.families``; the built-in ones are
``SUPPORTED_MODEL_TYPES``). For each, its entry holds what the config class of
``transformers`` 5.23 (``transformers/models/<family>/configuration_<family>.py``) gives as the
default of every key a config leaves out, and what the modeling file (``modeling_<family>.py``)
builds: this module turns that into the modules ``AutoModelForCausalLM.from_config`` builds
(besides the llama-shaped layout below: olmo2/olmo3's and OLMoE's q/k norms, glm4's fused
``gate_up_proj`` and four norms, qwen2_moe's gated shared expert, glm4_moe's and
deepseek_v3's dense first layers and ungated ``shared_experts``, deepseek_v3's latent
attention: ``q_a_proj``/``q_a_layernorm``/``q_b_proj`` or ``q_proj``,
``kv_a_proj_with_mqa``, ``kv_a_layernorm``, ``kv_b_proj``, ``o_proj``). The counts here equal
``sum(p.numel() for p in set(model.parameters()))`` of that model, to the parameter
(tests/vram/test_models_oracle.py builds every config on the meta device).

Per decoder layer, named as in the modeling files:

- attention: ``q_proj`` hidden -> heads*head_dim, ``k_proj``/``v_proj`` hidden ->
  kv_heads*head_dim (grouped-query attention, Ainslie et al. 2023, arXiv:2305.13245),
  ``o_proj`` back to hidden; phi3 fuses q, k and v into one ``qkv_proj``. Biases: llama,
  qwen3, qwen3_moe, gemma2, gemma3_text and gpt_oss follow ``attention_bias`` on all four
  (gpt_oss defaults to true), qwen2 always on q, k, v and never on o, mistral, mixtral and
  phi3 none. qwen3, qwen3_moe and gemma3_text add ``q_norm``/``k_norm`` RMSNorms of
  head_dim; gpt_oss adds one learned attention-sink logit per query head (``sinks``).
- MLP (SwiGLU): ``gate_proj``, ``up_proj`` hidden -> intermediate, ``down_proj`` back
  (llama's ``mlp_bias`` adds biases; phi3 fuses gate and up into ``gate_up_proj``).
- mixture of experts: transformers 5.x stores the experts of a layer as fused 3-D
  parameters of one ``experts`` module, not as ``nn.Linear``: mixtral and qwen3_moe
  ``gate_up_proj`` (E, 2*I, hidden) and ``down_proj`` (E, hidden, I), gpt_oss the same
  transposed plus ``gate_up_proj_bias`` (E, 2*I) and ``down_proj_bias`` (E, hidden); the
  router is a module holding a (E, hidden) weight (gpt_oss: and an E bias), not an
  ``nn.Linear`` either. I is ``intermediate_size`` (mixtral, gpt_oss) or
  ``moe_intermediate_size`` (qwen3_moe, whose layers listed in ``mlp_only_layers`` or off
  the ``decoder_sparse_step`` keep a dense MLP of ``intermediate_size``).
- norms: RMSNorm weights of size hidden, two per layer (gemma2 and gemma3_text four), one
  final norm; embeddings vocab*hidden and an ``lm_head`` of the same size unless
  ``tie_word_embeddings``.

Every expert counts toward memory; "active" parameters (those one token passes through:
``num_experts_per_tok`` experts of each MoE layer) only toward compute. Both embeddings
count as active (Mistral AI's 12.9B for Mixtral 8x7B); OpenAI's 3.6B for gpt-oss-20b
leaves the input embedding (a lookup) out.

Keys the file leaves out take the config class's defaults, except the five size keys,
which a config.json must name (``model_config_from_dict``). Refused with ``ConfigError``
(a ValueError: one line naming the source, the key and the fix): what the config class
refuses (a ``null`` where the field is not optional, a
``hidden_size`` not divisible by the heads where the class checks it: llama, gemma2,
gemma3_text), a ``num_key_value_heads`` that does not divide ``num_attention_heads``
(transformers builds it, but attention cannot group the heads), a null ``sliding_window``
for gemma2, gemma3_text and gpt_oss (transformers builds them, but every forward fails), a
``model_type`` outside
the families above, non-integer or implausible sizes (any size over ``MAX_SIZE``, more than
``MAX_LAYERS`` layers, or more than 10^15 parameters in all), and a file that is not a JSON object of at most 1 MiB.
Keys no count here depends on (``rope_parameters``, ``partial_rotary_factor``,
``max_position_embeddings``, router options, ...) are not checked, and an
activation name is checked only by ``vram.activations``: transformers may refuse such a
file (a NaN rope factor, an unknown activation) where the calculator still counts it.
"""

from __future__ import annotations

import json
import math
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from math import prod
from pathlib import Path
from typing import Any

from .families import (
    CHUNKED,
    FULL,
    MULTIMODAL_WRAPPERS,
    REQUIRED_KEYS,
    SLIDING,
    Family,
    get_family,
    is_registered,
    model_types,
)
from .json_nesting import MAX_JSON_DEPTH, too_deep
from .units import MAX_PARAMS

# Larger than any dimension of a published model by far (largest vocabularies: 262,208;
# hidden sizes: 18,432; layers: 126; experts: 384); beyond it a value is a typo.
MAX_SIZE = 2**24
# Layers: 126 in the deepest published model (Llama 3.1 405B); every layer costs a tuple entry here.
MAX_LAYERS = 2**16
# Hub config.json files of causal LMs are a few KB; a file past this is not one (and is not read whole).
MAX_CONFIG_BYTES = 2**20
_UNSET = object()
# A config.json names these (a file without them is cut short: refused, not defaulted).
_REQUIRED = REQUIRED_KEYS
# The built-in families (vram.family_entries); a family registered later is read as well.
SUPPORTED_MODEL_TYPES = model_types()
_COMMON_NULLABLE = frozenset({"sliding_window", "attn_logit_softcapping", "final_logit_softcapping", "layer_types"})


class ConfigError(ValueError):
    """A model config that cannot be read or that transformers would not build (one line)."""


# --- what the calculator knows of one model ----------------------------------------------


@dataclass(frozen=True)
class ModelConfig:
    """A config as transformers resolves it (sizes in elements; defaults already applied).

    ``layer_types``: one entry per decoder layer, "full_attention" or "sliding_attention",
    as the KV cache of transformers sees it (``DynamicCache`` makes the sliding ones keep a
    window); ``sliding_window``: tokens of that window (None: no sliding layer).
    ``moe_layers``: True for each layer whose MLP is a mixture of experts.
    ``hidden_act``: the MLP's activation name (gemma: ``hidden_activation``; gpt_oss's
    experts use their own clamped SwiGLU whatever it says). ``defaulted``: keys the file
    left out, filled from the config class. ``norm_topk_prob``: the router renormalises the
    top-k weights (mixtral always; qwen3_moe when its key says so). ``bidirectional_attention``:
    gemma3_text's ``use_bidirectional_attention`` (every attention layer gets a mask tensor).
    ``fused``: the family's fused projections ("qkv_gate_up": phi3, "gate_up": glm4);
    ``qk_norm``: its q/k norms (``vram.families.QK_NORMS``, "" for none);
    ``shared_expert_size``: width of the shared expert beside the routed ones (0: none);
    ``rotary_dim``: glm4's rotated width per head, int(head_dim x partial_rotary_factor) (0:
    the family copies no cos/sin per layer).
    ``attention_chunk_size``: the tokens of llama4_text's chunked layers (``layer_types``
    "chunked_attention": each token attends within its chunk; a cache keeps them as a window);
    ``rope_layers``: which layers apply RoPE (llama4_text and smollm3 skip it on some);
    ``attn_temperature_tuning``: llama4_text's no-RoPE layers scale their queries.
    ``kv_lora_rank``, ``q_lora_rank``, ``qk_rope_head_dim``, ``v_head_dim``: deepseek_v3's
    multi-head latent attention (0 elsewhere), whose ``head_dim`` is the query/key width
    ``qk_nope_head_dim + qk_rope_head_dim``.
    Everything else about the family's structure is its registry entry (``family``).
    """

    model_type: str
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    qkv_bias: bool = False
    o_bias: bool = False
    mlp_bias: bool = False
    norms_per_layer: int = 2
    tie_word_embeddings: bool = False
    num_local_experts: int = 0  # 0: dense MLP everywhere
    num_experts_per_tok: int = 0
    moe_intermediate_size: int = 0  # width of one expert (mixtral, gpt_oss: intermediate_size)
    moe_layers: tuple[bool, ...] = ()
    shared_expert_size: int = 0
    rotary_dim: int = 0
    attention_chunk_size: int | None = None  # llama4_text's chunked layers (None: none)
    rope_layers: tuple[bool, ...] = ()  # which layers apply RoPE (empty: all)
    attn_temperature_tuning: bool = False  # llama4_text: the no-RoPE layers scale their queries
    q_lora_rank: int = 0  # deepseek_v3's query rank (0: one q_proj)
    kv_lora_rank: int = 0  # deepseek_v3's latent width (0: not latent attention)
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0
    norm_topk_prob: bool = False
    bidirectional_attention: bool = False
    fused: str = ""
    qk_norm: str = ""
    attention_sinks: bool = False
    hidden_act: str = "silu"
    layer_types: tuple[str, ...] = ()
    sliding_window: int | None = None
    attn_logit_softcapping: float | None = None
    final_logit_softcapping: float | None = None
    max_position_embeddings: int | None = None
    defaulted: tuple[str, ...] = ()
    source: str = "<config>"

    def __post_init__(self) -> None:
        layers = self.num_hidden_layers
        if not self.moe_layers:
            object.__setattr__(self, "moe_layers", (self.num_local_experts > 0,) * layers)
        if not self.layer_types:
            object.__setattr__(self, "layer_types", (FULL,) * layers)
        if not self.rope_layers:
            object.__setattr__(self, "rope_layers", (True,) * layers)
        if self.num_local_experts and not self.moe_intermediate_size:
            object.__setattr__(self, "moe_intermediate_size", self.intermediate_size)
        for name in ("moe_layers", "layer_types", "rope_layers"):
            if len(getattr(self, name)) != layers:
                raise ValueError(f"{name}: one entry per layer ({layers}), got {len(getattr(self, name))}")

    @property
    def family(self) -> Family:
        """The registry entry of this config's model_type (``vram.families``)."""
        return get_family(self.model_type)

    @property
    def is_mla(self) -> bool:
        """deepseek_v3: multi-head latent attention (one latent per token and layer in the KV cache)."""
        return self.kv_lora_rank > 0

    @property
    def kv_cache_width(self) -> int:
        """Elements one token adds to one layer's KV cache: K and V of every KV head
        (2 x kv_heads x head_dim), or MLA's latent and rotary key (kv_lora_rank +
        qk_rope_head_dim: transformers' cache of the compressed latent, vLLM's
        ``MLAAttentionSpec`` with one KV head of that size)."""
        if self.is_mla:
            return self.kv_lora_rank + self.qk_rope_head_dim
        return 2 * self.num_key_value_heads * self.head_dim

    @property
    def is_moe(self) -> bool:
        """True when at least one layer's MLP is a mixture of experts."""
        return any(self.moe_layers)

    @property
    def fused_projections(self) -> bool:
        """phi3: q, k and v fused into ``qkv_proj`` (and gate and up into ``gate_up_proj``)."""
        return self.fused == "qkv_gate_up"

    @property
    def expert_bias(self) -> bool:
        """gpt_oss: its experts and router carry biases."""
        experts = self.family.experts
        return bool(experts and experts.router_bias)

    @property
    def config_class(self) -> str:
        """Name of the transformers config class of this family (for messages)."""
        return self.family.config_class

    @property
    def modeling_file(self) -> str:
        """The transformers modeling file whose modules are counted here."""
        return self.family.modeling


@dataclass(frozen=True)
class ParamCount:
    """Parameters (elements): ``total`` held in memory, ``active`` used per token."""

    total: int
    active: int


@dataclass(frozen=True)
class Linear:
    """One ``nn.Linear`` of a decoder layer (``name``: its attribute, e.g. ``q_proj``)."""

    name: str
    in_features: int
    out_features: int
    bias: bool = False

    @property
    def weight_params(self) -> int:
        """Weight elements (out x in)."""
        return self.in_features * self.out_features

    @property
    def params(self) -> int:
        """Weight and bias elements."""
        return self.weight_params + self.out_features * self.bias


@dataclass(frozen=True)
class Module:
    """One module of the model with the parameters it holds directly (``recurse=False``).

    ``path``: its name inside a decoder layer (``self_attn.q_proj``) or inside the model
    (``model.embed_tokens``, ``lm_head``); ``kind``: "linear" (an ``nn.Linear``),
    "embedding", "norm", "experts" (fused 3-D expert weights), "router", "attention"
    (gpt_oss's sinks); ``shapes``: name -> shape of each direct parameter;
    ``experts``/``active_experts``: for kind "experts", E and the experts one token uses;
    ``tied``: the lm_head whose weight is the embedding's (counted once in totals).
    """

    path: str
    kind: str
    shapes: tuple[tuple[str, tuple[int, ...]], ...]
    experts: int = 0
    active_experts: int = 0
    tied: bool = False

    @property
    def name(self) -> str:
        """Last component of the path (what PEFT's ``target_modules`` matches)."""
        return self.path.rpartition(".")[2]

    @property
    def params(self) -> int:
        """Elements of the parameters this module holds directly."""
        return sum(prod(shape) for _, shape in self.shapes)

    @property
    def active_params(self) -> int:
        """Elements one token passes through (experts: active_experts / experts of them)."""
        if self.kind == "experts":
            return self.params // self.experts * self.active_experts
        return self.params

    def linear(self) -> Linear:
        """This ``nn.Linear`` as a ``Linear``. Raises ValueError for another kind."""
        if self.kind != "linear":
            raise ValueError(f"{self.path} is not an nn.Linear")
        shapes = dict(self.shapes)
        out_features, in_features = shapes["weight"]
        return Linear(self.name, in_features, out_features, "bias" in shapes)


# --- reading a config.json ----------------------------------------------------------------


class _Reader:
    """Reads keys of one raw config with the family's defaults and transformers' types."""

    def __init__(self, raw: Mapping[str, Any], model_type: str, source: str, required: frozenset[str]):
        self.raw, self.family, self.source, self.required = raw, get_family(model_type), source, required
        self.modeling_file = self.family.modeling
        self.defaulted: list[str] = []

    def fail(self, message: str) -> ConfigError:
        return ConfigError(f"{self.source}: {message}")

    def get(self, key: str, default: Any = _UNSET) -> Any:
        if key in self.raw:
            value = self.raw[key]
            if value is None and key not in self.family.nullable and key not in _COMMON_NULLABLE:
                raise self.fail(
                    f"key {key!r} is null, which {self.family.config_class} refuses; "
                    f"give a value or leave the key out (default: {self.family.defaults.get(key)!r})"
                )
            return value
        if key in self.required:
            raise self.fail(f"missing key {key!r}; copy it from the model's config.json")
        if default is _UNSET:
            default = self.family.defaults.get(key)
        self.defaulted.append(key)
        return default

    def size(self, key: str, value: Any = _UNSET, minimum: int = 1, maximum: int = MAX_SIZE) -> int:
        value = self.get(key) if value is _UNSET else value
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(f"key {key!r} must be an integer, got {_short(value)}")
        if value < minimum:
            raise self.fail(f"key {key!r} must be at least {minimum}, got {value}")
        if value > maximum:
            raise self.fail(f"key {key!r} is implausibly large ({_short(value)} > {maximum:,}); check the file")
        return value

    def flag(self, key: str | bool) -> bool:
        if isinstance(key, bool):
            return key
        value = self.get(key)
        if not isinstance(value, bool):
            raise self.fail(f"key {key!r} must be true or false, got {_short(value)}")
        return value

    def number(self, key: str) -> float | None:
        value = self.get(key)
        if value is None:
            return None
        # typed ``float | None`` in the (strict) config classes: a JSON integer such as 50 is refused
        if not isinstance(value, float) or math.isnan(value):
            example = f" ({value}.0)" if isinstance(value, int) and not isinstance(value, bool) else ""
            raise self.fail(f"key {key!r} must be a number with a decimal point{example} or null, got {_short(value)}")
        return value


def _short(value: Any) -> str:
    """repr of a value, cut for one line (a 5,000-digit integer stays readable)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"an integer of {len(str(abs(value)))} digits"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _head_dim(r: _Reader, hidden: int, heads: int) -> int:
    family = r.family
    if family.head_dim == "attribute":
        if "head_dim" not in r.raw:
            return hidden // heads  # modeling file: getattr(config, "head_dim", hidden // heads)
        value = r.raw["head_dim"]
        if value is None:
            raise r.fail(f"key 'head_dim' is null, which {r.modeling_file} cannot use; give a value or leave it out")
        return r.size("head_dim", value)
    if family.head_dim == "required" and r.raw.get("head_dim") is None:
        raise r.fail(
            f"key 'head_dim' is missing or null, which {r.modeling_file} cannot build "
            f"({family.config_class} leaves it None); copy it from the model's config.json"
        )
    value = r.get("head_dim")
    if value is None:  # llama, mistral, mixtral: __post_init__ sets hidden // heads
        return hidden // heads
    return r.size("head_dim", value)


def _layer_types(r: _Reader, layers: int, window: int | None) -> tuple[str, ...]:
    """layer_types as the config's __post_init__ and DynamicCache resolve them."""
    given = r.raw.get("layer_types")
    rule = r.family.layer_rule
    kinds = (FULL, SLIDING, CHUNKED) if rule == "llama4" else (FULL, SLIDING)
    if given is not None:
        if not isinstance(given, list) or len(given) != layers or any(t not in kinds for t in given):
            raise r.fail(
                f"key 'layer_types' must list {layers} entries (num_hidden_layers), each "
                + " or ".join(f"'{kind}'" for kind in kinds)
            )
        if SLIDING in given and window is None:
            raise r.fail("key 'layer_types' has sliding layers but 'sliding_window' is null")
        return tuple(given)
    if rule == "llama4":  # Llama4TextConfig: the RoPE layers are chunked, the no-RoPE ones full
        return tuple(CHUNKED if rope else FULL for rope in _rope_layers(r, layers))
    if rule == "every_2nd_full":  # gemma2, gpt_oss: "sliding" if (i + 1) % 2 else "full"
        return tuple(SLIDING if (i + 1) % 2 else FULL for i in range(layers))
    if rule == "gemma3":
        pattern = r.size("sliding_window_pattern")
        return tuple(SLIDING if (i + 1) % pattern else FULL for i in range(layers))
    if rule == "every_4th_full":  # olmo3: "sliding" if (i + 1) % 4 != 0 else "full"
        return tuple(SLIDING if (i + 1) % 4 else FULL for i in range(layers))
    if rule == "qwen":
        first = r.size("max_window_layers", minimum=0)
        return tuple(SLIDING if window is not None and i >= first else FULL for i in range(layers))
    if rule == "qwen2_moe":  # Qwen2MoeConfig: odd layers below max_window_layers
        last = r.size("max_window_layers", minimum=0)
        return tuple(SLIDING if window is not None and (i + 1) % 2 and i < last else FULL for i in range(layers))
    if rule == "smollm3":  # SmolLM3Config: the no-RoPE layers slide when use_sliding_window
        rope = _rope_layers(r, layers)
        return tuple(SLIDING if window is not None and not rope[i] else FULL for i in range(layers))
    # llama, mistral, mixtral, phi3, qwen3_moe: no layer_types field; DynamicCache makes every
    # layer sliding when the config has a sliding_window (cache_utils.get_layer_types_and_kwargs).
    return ((SLIDING if window is not None else FULL),) * layers


def _window(r: _Reader) -> int | None:
    family = r.family
    window = r.get("sliding_window") if family.layer_rule != "none" else r.raw.get("sliding_window")
    if family.layer_rule in ("qwen", "qwen_moe", "qwen2_moe", "smollm3") and not r.flag("use_sliding_window"):
        if window is not None:  # unused, but its type is checked, as the config class does
            r.size("sliding_window", window, minimum=0)
        return None  # Qwen2/Qwen3(Moe)Config: sliding_window = sliding_window if use_sliding_window else None
    if window is not None:
        window = r.size("sliding_window", window)
    if window is None:
        if family.layer_rule in ("every_2nd_full", "gemma3", "every_4th_full"):
            # the config class accepts it, but the model builds a sliding-window mask in every forward
            raise r.fail(
                f"key 'sliding_window' is null, which {r.modeling_file} cannot run (it builds a "
                f"sliding-window mask in every forward); give the window or leave the key out "
                f"(default: {family.defaults['sliding_window']})"
            )
        return None
    if family.layer_rule == "gemma3" and _bidirectional(r):
        window = window // 2 + 1  # Gemma3TextConfig.__post_init__
    return window


def _chunk(r: _Reader, layer_types: tuple[str, ...]) -> int | None:
    """llama4_text's ``attention_chunk_size`` where a layer is chunked (None otherwise)."""
    if CHUNKED not in layer_types:
        return None
    chunk = r.get("attention_chunk_size")
    if chunk is None:  # masking_utils.create_chunked_causal_mask raises in every forward
        raise r.fail(
            f"key 'attention_chunk_size' is null, which {r.modeling_file} cannot run with chunked "
            f"layers (its chunked mask needs it); give the chunk or leave the key out "
            f"(default: {r.family.defaults['attention_chunk_size']})"
        )
    return r.size("attention_chunk_size", chunk)


def _mla(r: _Reader) -> tuple[int, int, int, int, int]:
    """deepseek_v3's latent attention: (q_lora_rank (0: null, one q_proj), kv_lora_rank,
    qk_nope_head_dim, qk_rope_head_dim, v_head_dim), as ``DeepseekV3Attention`` builds it."""
    q_rank = r.get("q_lora_rank")
    q_rank = 0 if q_rank is None else r.size("q_lora_rank", q_rank)
    kv_rank = r.size("kv_lora_rank")
    nope = r.size("qk_nope_head_dim", minimum=0)
    rope = r.size("qk_rope_head_dim")
    if rope % 2:  # the rotary embedding turns pairs of dimensions
        raise r.fail(f"key 'qk_rope_head_dim' must be even (the rotary embedding turns pairs), got {rope}")
    value = r.get("v_head_dim")
    if value is None:
        raise r.fail(f"key 'v_head_dim' is null, which {r.modeling_file} cannot build; give the value head width")
    return q_rank, kv_rank, nope, rope, r.size("v_head_dim", value)


def _rope_layers(r: _Reader, layers: int) -> tuple[bool, ...]:
    """Which layers apply RoPE (smollm3's ``no_rope_layers``: 1 = RoPE, despite the name)."""
    given = r.get("no_rope_layers")
    if given == [] and r.family.layer_rule == "llama4":  # Llama4TextConfig: an empty list takes the default
        given = None
    if given is None:  # SmolLM3Config, Llama4TextConfig: every no_rope_layer_interval-th layer skips RoPE
        interval = r.size("no_rope_layer_interval")
        return tuple(bool((i + 1) % interval) for i in range(layers))
    if not isinstance(given, list) or len(given) < layers or any(v not in (0, 1) or isinstance(v, bool) for v in given):
        raise r.fail(f"key 'no_rope_layers' must list {layers} entries (num_hidden_layers), each 0 or 1")
    return tuple(bool(v) for v in given[:layers])


def _bidirectional(r: _Reader) -> bool:
    """gemma3_text's use_bidirectional_attention (``bool | None``; null is false)."""
    value = r.get("use_bidirectional_attention")
    return False if value is None else r.flag("use_bidirectional_attention")


def _moe_layers(r: _Reader, layers: int) -> tuple[int, int, int, tuple[bool, ...]]:
    """(experts, experts per token, expert width, which layers are MoE)."""
    spec = r.family.experts
    if spec is None:
        return 0, 0, 0, (False,) * layers
    # attribute_map aliases one key to the class's field; with both keys, the alias is set
    # after the fields and wins (mixtral, gpt_oss: num_experts; qwen3_moe: num_local_experts).
    key = spec.alias if spec.alias in r.raw else spec.key
    experts = r.size(key, r.get(key, r.family.defaults[spec.key]), minimum=spec.min_experts)
    top_k = r.size("num_experts_per_tok")
    if top_k > max(experts, 1) and experts:
        raise r.fail(f"num_experts_per_tok {top_k} is more than the {experts} experts")
    width = r.size(spec.width)
    if spec.dense_rule == "none":
        return experts, top_k, width, (True,) * layers
    if spec.router == "sigmoid_group":
        _check_groups(r, experts, top_k)
    if spec.dense_rule == "llama4":  # Llama4TextConfig.moe_layers, or every interleave_moe_layer_step-th layer
        listed = r.get("moe_layers")
        if listed is None:
            step = r.size("interleave_moe_layer_step")
            return experts, top_k, width, tuple((i + 1) % step == 0 for i in range(layers))
        if not isinstance(listed, list) or any(isinstance(i, bool) or not isinstance(i, int) for i in listed):
            raise r.fail("key 'moe_layers' must be a list of layer indices")
        return experts, top_k, width, tuple(i in set(listed) for i in range(layers))
    if spec.dense_rule == "first_k":  # Glm4Moe/DeepseekV3DecoderLayer: experts from first_k_dense_replace on
        first = r.size("first_k_dense_replace", minimum=0)
        if first > layers:
            raise r.fail(
                f"key 'first_k_dense_replace' ({first}) is larger than num_hidden_layers ({layers}): "
                f"it counts the dense layers before the first mixture of experts"
            )
        return experts, top_k, width, tuple(i >= first for i in range(layers))
    step = r.size("decoder_sparse_step")
    listed = r.get("mlp_only_layers") or []
    if not isinstance(listed, list) or any(isinstance(i, bool) or not isinstance(i, int) for i in listed):
        raise r.fail("key 'mlp_only_layers' must be a list of layer indices")
    dense = set(listed)
    # Qwen3MoeDecoderLayer: experts unless the layer is in mlp_only_layers or off the sparse step.
    moe = tuple(i not in dense and experts > 0 and (i + 1) % step == 0 for i in range(layers))
    return experts, top_k, width, moe


def _check_groups(r: _Reader, experts: int, top_k: int) -> None:
    """The group-limited routing of glm4_moe and deepseek_v3 (``*TopkRouter.forward``): scores
    viewed as ``n_group`` groups of E / n_group experts, the best two of each summed, the
    ``topk_group`` best groups kept, the top-k chosen among their experts."""
    groups = r.size("n_group")
    if experts % groups:
        raise r.fail(
            f"key 'n_group' ({groups}) does not divide the {experts} routed experts "
            f"(the router views them as n_group equal groups)"
        )
    if experts // groups < 2:
        raise r.fail(
            f"key 'n_group' ({groups}) leaves fewer than 2 experts per group "
            f"(the router sums the best two of each group)"
        )
    kept = r.size("topk_group")
    if kept > groups:
        raise r.fail(f"key 'topk_group' ({kept}) is more than n_group ({groups})")
    if top_k > kept * (experts // groups):
        raise r.fail(
            f"num_experts_per_tok {top_k} is more than the {kept * (experts // groups)} experts "
            f"of the topk_group best groups"
        )


def _norm_topk(r: _Reader) -> bool:
    spec = r.family.experts
    if spec is None:
        return False
    return spec.norm_topk == "always" or (spec.norm_topk == "key" and r.flag("norm_topk_prob"))


def _rotary_dim(r: _Reader, head_dim: int) -> int:
    """glm4: int(head_dim x partial_rotary_factor), the factor from ``rope_parameters`` or the
    top level (Glm4Config moves it there; default 0.5). 0 for families without that copy."""
    default = r.family.partial_rotary
    if not default:
        return 0
    rope = r.raw.get("rope_parameters")
    factor = rope.get("partial_rotary_factor") if isinstance(rope, Mapping) else None
    factor = r.raw.get("partial_rotary_factor", default) if factor is None else factor
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not 0 < factor <= 1:
        raise r.fail(f"key 'partial_rotary_factor' must be a number above 0 and at most 1, got {_short(factor)}")
    return int(head_dim * factor)


def _shared_expert_size(r: _Reader) -> int:
    """Width of the shared expert (0: none): qwen2_moe's ``shared_expert_intermediate_size``."""
    spec = r.family.experts
    assert spec is not None  # called for a mixture-of-experts family only
    shared = spec.shared
    if shared == "qwen2_moe":
        return r.size("shared_expert_intermediate_size")
    if shared == "llama4":  # Llama4TextMoe.shared_expert: one MLP of the experts' width
        return r.size("intermediate_size")
    if shared == "deepseek":  # one MLP of moe_intermediate_size x n_shared_experts
        return r.size("moe_intermediate_size") * r.size("n_shared_experts")
    return 0


def json_type_name(value: Any) -> str:
    """The JSON type of a parsed value as RFC 8259 names it (``array`` for a list, ``string``,
    ``number``, ``boolean``, ``null``, ``object``), the words of the text a reader pasted, not
    Python's ``list`` or ``NoneType``; another Python type keeps its own name."""
    if isinstance(value, bool):
        return "boolean"
    names = {list: "array", str: "string", int: "number", float: "number", dict: "object", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def odd_characters(value: str) -> list[tuple[str, str, str]]:
    """The characters of ``value`` other than printable ASCII (a look-alike such as the Cyrillic
    '\u0430' in 'll\u0430ma'), each once, in order: (the character, its code point ``U+0430``, its
    Unicode name, ``UNNAMED`` for one the standard does not name)."""
    import unicodedata

    odd = [c for c in dict.fromkeys(value) if not (" " <= c <= "~")]
    return [(c, f"U+{ord(c):04X}", unicodedata.name(c, "UNNAMED")) for c in odd]


def shown_model_type(value: Any) -> str:
    """A model_type for a message: its repr, and where it holds a character other than
    printable ASCII (``odd_characters``), each such character's code point and Unicode name,
    so that the reader sees why it is not the one they meant."""
    if not isinstance(value, str):
        return _short(value)
    odd = odd_characters(value)
    if not odd:
        return _short(value)
    names = ", ".join(f"{c!r} is {point} {name}" for c, point, name in odd[:4])
    more = f" and {len(odd) - 4} more" if len(odd) > 4 else ""
    return f"{_short(value)} (not plain ASCII: {names}{more})"


def model_config_from_dict(raw: Mapping[str, Any], source: str = "<config>") -> ModelConfig:
    """Build a ``ModelConfig`` from a parsed ``config.json`` (a dict), as transformers resolves it.

    ``source`` names the file in error messages. The size keys (vocab_size, hidden_size,
    intermediate_size, num_hidden_layers, num_attention_heads) must be there: a
    config.json without them is cut short. Every other key left out takes the default of
    the family's config class (transformers 5.23), and is listed in ``defaulted``. A
    multimodal ``gemma3`` config is refused in one line: transformers builds it with a SigLIP
    vision tower and a projector (and ties its embeddings by the top-level
    ``tie_word_embeddings``), which are not modelled here; its ``text_config`` saved as a
    file of its own is the language model, where every key may take Gemma3TextConfig's
    default. Raises ConfigError (one line) for an unsupported or non-text ``model_type``, a missing
    size key, a null the config class refuses, a non-integer, negative or implausible size
    (over ``MAX_SIZE``; layers over ``MAX_LAYERS``), KV heads that do not divide the attention heads, a ``hidden_size``
    the config class refuses, malformed ``layer_types``, a null ``sliding_window`` for gemma2,
    gemma3_text or gpt_oss (accepted by their config classes, but no forward of the model
    runs without it), an activation name that is not a string, or sizes that make more than ``vram.units.MAX_PARAMS`` (10^15) parameters (the
    bound ``--params`` has).
    """
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{source}: expected a JSON object, got {json_type_name(raw)}")
    model_type = raw.get("model_type")
    required = _REQUIRED
    if model_type == "gemma3":  # the multimodal model: refused, its vision tower is not modelled
        text = raw.get("text_config")
        if not isinstance(text, Mapping) or text.get("model_type", "gemma3_text") != "gemma3_text":
            raise ConfigError(f"{source}: a gemma3 config needs a 'text_config' object of model_type 'gemma3_text'")
        raise ConfigError(
            f"{source}: a multimodal gemma3 config (Gemma3ForConditionalGeneration: a SigLIP vision tower "
            f"and a projector beside the language model) is not counted; to count the language model "
            f"alone (Gemma3ForCausalLM), save its text_config as a file of its own, model_type gemma3_text, "
            f"with the sizes it leaves to Gemma3TextConfig's defaults written out (vocab_size 262208 among them)"
        )
    if isinstance(model_type, str) and model_type in MULTIMODAL_WRAPPERS:
        built, default_text = MULTIMODAL_WRAPPERS[model_type]
        text = raw.get("text_config")
        text_type = text.get("model_type", default_text) if isinstance(text, Mapping) else default_text
        how = (
            f"save its text_config as a file of its own, model_type {text_type}, with the sizes it leaves to "
            f"its config class's defaults written out"
            if is_registered(text_type)
            else f"its language model's family, {text_type}, is not in the registry either"
        )
        raise ConfigError(
            f"{source}: a multimodal {model_type} config ({built}: a vision tower and a projector "
            f"beside the language model) is not counted; to count the language model alone, {how}"
        )
    if not is_registered(model_type):
        raise ConfigError(
            f"{source}: unsupported model_type {shown_model_type(model_type)}; supported: {', '.join(model_types())}"
        )
    r = _Reader(raw, model_type, source, required)
    family = r.family
    hidden = r.size("hidden_size")
    heads = r.size("num_attention_heads")
    layers = r.size("num_hidden_layers", maximum=MAX_LAYERS)
    kv = r.get("num_key_value_heads")
    kv = heads if kv is None else r.size("num_key_value_heads", kv)
    if heads % kv:
        raise r.fail(
            f"num_key_value_heads {kv} does not divide num_attention_heads {heads} "
            "(each KV head serves a whole group of query heads)"
        )
    if family.checks_hidden_heads and hidden % heads:
        raise r.fail(
            f"hidden_size {hidden} is not a multiple of num_attention_heads {heads}, "
            f"which {family.config_class} refuses"
        )
    mla = _mla(r) if family.attention == "mla" else (0, 0, 0, 0, 0)
    head_dim = mla[2] + mla[3] if family.attention == "mla" else _head_dim(r, hidden, heads)
    if head_dim == 0:
        raise r.fail(f"hidden_size {hidden} // num_attention_heads {heads} is 0; add the model's 'head_dim'")
    window = _window(r)
    experts, top_k, width, moe = _moe_layers(r, layers)
    layer_types = _layer_types(r, layers, window)
    chunk = _chunk(r, layer_types)
    max_pos = r.get("max_position_embeddings")
    activation = r.get(family.activation_key)
    if not isinstance(activation, str):  # the config classes type it ``str``
        raise r.fail(
            f"key {family.activation_key!r} must be a string (an activation such as 'silu'), got {_short(activation)}"
        )
    config = ModelConfig(
        model_type=model_type,
        vocab_size=r.size("vocab_size"),
        hidden_size=hidden,
        intermediate_size=r.size(family.mlp_width),
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv,
        head_dim=head_dim,
        qkv_bias=r.flag(family.qkv_bias),
        o_bias=r.flag(family.o_bias),
        mlp_bias=r.flag(family.mlp_bias),
        norms_per_layer=len(family.layer_norms),
        tie_word_embeddings=r.flag("tie_word_embeddings"),
        num_local_experts=experts,
        num_experts_per_tok=top_k,
        moe_intermediate_size=width,
        moe_layers=moe,
        shared_expert_size=_shared_expert_size(r) if experts else 0,
        rotary_dim=_rotary_dim(r, head_dim),
        q_lora_rank=mla[0],
        kv_lora_rank=mla[1],
        qk_rope_head_dim=mla[3],
        v_head_dim=mla[4],
        norm_topk_prob=_norm_topk(r),
        bidirectional_attention=family.layer_rule == "gemma3" and _bidirectional(r),
        fused=family.fused,
        qk_norm=family.qk_norm if not family.qk_norm_key or r.flag(family.qk_norm_key) else "",
        attention_sinks=family.sinks,
        hidden_act=activation,
        layer_types=layer_types,
        attention_chunk_size=chunk,
        rope_layers=_rope_layers(r, layers) if family.layer_rule in ("llama4", "smollm3") else (),
        attn_temperature_tuning=family.layer_rule == "llama4" and r.flag("attn_temperature_tuning"),
        sliding_window=window,
        attn_logit_softcapping=r.number("attn_logit_softcapping")
        if "attn_logit_softcapping" in family.defaults
        else None,
        final_logit_softcapping=r.number("final_logit_softcapping")
        if "final_logit_softcapping" in family.defaults
        else None,
        max_position_embeddings=max_pos if isinstance(max_pos, int) and not isinstance(max_pos, bool) else None,
        defaulted=tuple(dict.fromkeys(r.defaulted)),
        source=source,
    )
    total = count_params(config).total
    if total > MAX_PARAMS:  # the bound of vram.units.parse_params (--params)
        raise r.fail(f"the sizes make {total:.3g} parameters, more than 10^15 parameters: implausible; check the file")
    return config


def load_model_config(path: str | Path) -> ModelConfig:
    """Read a ``config.json`` file into a ``ModelConfig``.

    Raises ConfigError (one line naming the file) when the path is not a regular file (a
    FIFO, a device), the file cannot be read, is larger than ``MAX_CONFIG_BYTES`` (1 MiB),
    is not UTF-8 or not JSON (including integers over Python's 4,300-digit limit), nests
    deeper than ``vram.json_nesting.MAX_JSON_DEPTH`` (checked before parsing), writes a key twice in one object (``json`` would keep the
    last silently), or fails ``model_config_from_dict``.
    """
    source = str(path)
    try:
        if not stat.S_ISREG(Path(path).stat().st_mode):  # a FIFO would block, /dev/zero never end
            raise ConfigError(f"{source}: not a regular file; pass the model's config.json")
        with open(path, "rb") as file:
            data = file.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{source}: cannot read the file ({exc.strerror or exc})") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{source}: larger than 1 MiB, which no config.json is; pass the model's config.json")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{source}: not a UTF-8 text file; pass the model's config.json") from None
    if too_deep(text):  # before json.loads, which recurses once per level
        raise ConfigError(
            f"{source}: nested deeper than {MAX_JSON_DEPTH} levels, which no config.json is; "
            "pass the model's config.json"
        )
    try:
        raw = json.loads(text, object_pairs_hook=_refuse_duplicate_keys)
    except _DuplicateKey as exc:
        raise ConfigError(
            f"{source}: key {_short(exc.args[0])} appears twice (JSON readers keep one of them silently); keep one"
        ) from None
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{source}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); pass the model's config.json"
        ) from None
    except ValueError:  # an integer literal beyond sys.get_int_max_str_digits()
        raise ConfigError(f"{source}: a number in the file has too many digits to be a model size") from None
    except RecursionError:
        raise ConfigError(f"{source}: nested too deeply to be a config.json") from None
    return model_config_from_dict(raw, source)


class _DuplicateKey(Exception):
    """A key written twice in one JSON object (its argument)."""


def _refuse_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            raise _DuplicateKey(key)
        seen.add(key)
    return dict(pairs)


def as_model_config(config: ModelConfig | Mapping[str, Any] | str | Path) -> ModelConfig:
    """Accept a ``ModelConfig``, a parsed config dict, or a path to ``config.json``.

    Returns a ``ModelConfig`` (the same object when given one). Raises ConfigError as
    ``model_config_from_dict`` (a dict) or ``load_model_config`` (a path) does.
    """
    if isinstance(config, ModelConfig):
        return config
    if isinstance(config, Mapping):
        return model_config_from_dict(config)
    return load_model_config(config)


# --- the modules transformers builds ------------------------------------------------------


def _linear(path: str, in_features: int, out_features: int, bias: bool) -> Module:
    shapes = (("weight", (out_features, in_features)),) + ((("bias", (out_features,)),) if bias else ())
    return Module(path, "linear", shapes)


def _norm(path: str, size: int) -> Module:
    return Module(path, "norm", (("weight", (size,)),))


@lru_cache(maxsize=1024)  # a ModelConfig is frozen: the finder asks about the same layers often
def layer_modules(config: ModelConfig, layer: int) -> tuple[Module, ...]:
    """Every module of decoder layer ``layer`` (0-based) that holds parameters directly.

    Shapes as in the family's modeling file (module docstring; the norms by the names of the
    family's registry entry, ``Family.layer_norms``). Raises ValueError for a layer index
    out of range.
    """
    if not 0 <= layer < config.num_hidden_layers:
        raise ValueError(f"layer must be in 0..{config.num_hidden_layers - 1}, got {layer!r}")
    return (
        _attention_modules(config)
        + _mlp_modules(config, layer)
        + tuple(_norm(name, config.hidden_size) for name in config.family.layer_norms)
    )


def _mla_modules(config: ModelConfig) -> tuple[Module, ...]:
    """DeepseekV3Attention: the query through a rank-q_lora_rank bottleneck (or one q_proj),
    keys and values from one latent of kv_lora_rank (and a rotary key shared by the heads)."""
    h, n, qk = config.hidden_size, config.num_attention_heads, config.head_dim
    r, rope, v = config.kv_lora_rank, config.qk_rope_head_dim, config.v_head_dim
    nope = qk - rope
    if config.q_lora_rank:
        q = [
            _linear("self_attn.q_a_proj", h, config.q_lora_rank, config.qkv_bias),
            _norm("self_attn.q_a_layernorm", config.q_lora_rank),
            _linear("self_attn.q_b_proj", config.q_lora_rank, n * qk, False),
        ]
    else:
        q = [_linear("self_attn.q_proj", h, n * qk, False)]
    return (
        *q,
        _linear("self_attn.kv_a_proj_with_mqa", h, r + rope, config.qkv_bias),
        _norm("self_attn.kv_a_layernorm", r),
        _linear("self_attn.kv_b_proj", r, n * (nope + v), False),
        _linear("self_attn.o_proj", n * v, h, config.o_bias),
    )


def _attention_modules(config: ModelConfig) -> tuple[Module, ...]:
    if config.is_mla:
        return _mla_modules(config)
    h, hd = config.hidden_size, config.head_dim
    q_out, kv_out = config.num_attention_heads * hd, config.num_key_value_heads * hd
    if config.fused_projections:
        modules = [_linear("self_attn.qkv_proj", h, q_out + 2 * kv_out, config.qkv_bias)]
    else:
        modules = [
            _linear("self_attn.q_proj", h, q_out, config.qkv_bias),
            _linear("self_attn.k_proj", h, kv_out, config.qkv_bias),
            _linear("self_attn.v_proj", h, kv_out, config.qkv_bias),
        ]
    modules.append(_linear("self_attn.o_proj", q_out, h, config.o_bias))
    if config.qk_norm == "head":
        modules += [_norm("self_attn.q_norm", hd), _norm("self_attn.k_norm", hd)]
    elif config.qk_norm == "whole":  # olmo2, olmo3: over the whole projection
        modules += [_norm("self_attn.q_norm", q_out), _norm("self_attn.k_norm", kv_out)]
    elif config.qk_norm == "l2":  # llama4_text's Llama4TextL2Norm holds no weight
        pass
    elif config.qk_norm == "olmoe":  # OlmoeAttention: hidden, and (hidden // heads) * kv_heads
        modules += [
            _norm("self_attn.q_norm", h),
            _norm("self_attn.k_norm", h // config.num_attention_heads * config.num_key_value_heads),
        ]
    if config.attention_sinks:
        modules.append(Module("self_attn", "attention", (("sinks", (config.num_attention_heads,)),)))
    return tuple(modules)


def _dense_mlp(config: ModelConfig, prefix: str, width: int) -> list[Module]:
    h = config.hidden_size
    if config.fused:
        first = [_linear(f"{prefix}.gate_up_proj", h, 2 * width, config.mlp_bias)]
    else:
        first = [
            _linear(f"{prefix}.gate_proj", h, width, config.mlp_bias),
            _linear(f"{prefix}.up_proj", h, width, config.mlp_bias),
        ]
    return [*first, _linear(f"{prefix}.down_proj", width, h, config.mlp_bias)]


def _mlp_modules(config: ModelConfig, layer: int) -> tuple[Module, ...]:
    prefix = config.family.mlp_prefix
    if not config.moe_layers[layer]:
        return tuple(_dense_mlp(config, prefix, config.intermediate_size))
    spec = config.family.experts
    assert spec is not None  # config.is_moe
    e, h, i = config.num_local_experts, config.hidden_size, config.moe_intermediate_size
    k = config.num_experts_per_tok
    experts: tuple[tuple[str, tuple[int, ...]], ...]
    if spec.layout == "llama4":  # Llama4TextMoe: every expert runs on every token (their scores zero but the top-k)
        experts = (("gate_up_proj", (e, h, 2 * i)), ("down_proj", (e, i, h)))
        return (
            Module(f"{prefix}.experts", "experts", experts, e, e),
            Module(f"{prefix}.router", "router", (("weight", (e, h)),)),
            *_dense_mlp(config, f"{prefix}.shared_expert", config.shared_expert_size),
        )
    if spec.layout == "gpt_oss":  # GptOssExperts, GptOssTopKRouter
        experts = (
            ("gate_up_proj", (e, h, 2 * i)),
            ("gate_up_proj_bias", (e, 2 * i)),
            ("down_proj", (e, i, h)),
            ("down_proj_bias", (e, h)),
        )
        return (
            Module("mlp.router", "router", (("weight", (e, h)), ("bias", (e,)))),
            Module("mlp.experts", "experts", experts, e, k),
        )
    # MixtralExperts / Qwen3MoeExperts and their TopKRouter (mlp.gate)
    experts = (("gate_up_proj", (e, 2 * i, h)), ("down_proj", (e, h, i)))
    modules = [Module("mlp.gate", "router", (("weight", (e, h)),)), Module("mlp.experts", "experts", experts, e, k)]
    if spec.shared == "qwen2_moe":  # Qwen2MoeSparseMoeBlock: shared_expert and its one-output gate
        modules += _dense_mlp(config, "mlp.shared_expert", config.shared_expert_size)
        modules.append(_linear("mlp.shared_expert_gate", h, 1, False))
    elif spec.shared == "deepseek":  # Glm4MoeMoE, DeepseekV3MoE: shared_experts, ungated
        modules += _dense_mlp(config, "mlp.shared_experts", config.shared_expert_size)
    return tuple(modules)


def root_modules(config: ModelConfig) -> tuple[Module, ...]:
    """The modules outside the decoder layers: embedding, final norm, lm_head (maybe tied).

    ``config``: a ``ModelConfig`` (already resolved, so nothing is raised). Shapes in elements,
    as ``modeling_<family>.py`` builds them: ``embed_tokens`` and ``lm_head`` vocab x hidden.
    """
    v, h = config.vocab_size, config.hidden_size
    return (
        Module("model.embed_tokens", "embedding", (("weight", (v, h)),)),
        _norm("model.norm", h),
        Module("lm_head", "linear", (("weight", (v, h)),), tied=config.tie_word_embeddings),
    )


def _layer_params(config: ModelConfig, layer: int) -> tuple[int, int]:
    modules = layer_modules(config, layer)
    return sum(m.params for m in modules), sum(m.active_params for m in modules)


def _distinct_layers(config: ModelConfig) -> dict[bool, int]:
    """Layers differ only by MoE or dense MLP: one representative index per kind."""
    kinds: dict[bool, int] = {}
    for index, moe in enumerate(config.moe_layers):
        kinds.setdefault(moe, index)
    return kinds


ModelLike = ModelConfig | Mapping[str, Any] | str | Path


def decoder_layer_params(config: ModelLike) -> int:
    """Parameters (elements) of one decoder layer, the largest if layers differ.

    FSDP2's unit when ``fully_shard`` wraps each decoder layer. Raises ConfigError.
    """
    config = as_model_config(config)
    return max(_layer_params(config, index)[0] for index in _distinct_layers(config).values())


def root_params(config: ModelLike) -> int:
    """Parameters (elements) outside the decoder layers: embedding, final norm and an untied lm_head.

    FSDP2's root unit when ``fully_shard`` wraps each decoder layer and then the model.
    Raises ConfigError for a bad config.
    """
    config = as_model_config(config)
    return sum(m.params for m in root_modules(config) if not m.tied)


def count_params(config: ModelLike) -> ParamCount:
    """Exact parameter count of the model (elements): total and active per token.

    Accepts what ``as_model_config`` accepts. Raises ConfigError for a bad config.
    """
    config = as_model_config(config)
    per_kind = {moe: _layer_params(config, index) for moe, index in _distinct_layers(config).items()}
    total = active = root_params(config)
    for moe in config.moe_layers:
        total += per_kind[moe][0]
        active += per_kind[moe][1]
    return ParamCount(total=total, active=active)


def largest_layer_params(config: ModelLike) -> int:
    """The most parameters one module holds directly: DeepSpeed ZeRO-3's "largest layer".

    ``max(sum(p.numel() for p in m.parameters(recurse=False)) for m in model.modules())``,
    the loop of ``model_to_params`` in ``deepspeed/runtime/zero/stage3.py`` (the module
    gathered whole at once). Llama 3.1 8B: the 128,256 x 4,096 embedding, 525,336,576;
    Mixtral 8x7B: one layer's fused experts, 8 x 3 x 14,336 x 4,096 = 1,409,286,144.
    Returns elements; raises ConfigError for a bad config.
    """
    config = as_model_config(config)
    modules = list(root_modules(config))
    for index in _distinct_layers(config).values():
        modules += layer_modules(config, index)
    return max(m.params for m in modules)


def linear_params(config: ModelLike) -> int:
    """Elements of every ``nn.Linear`` weight and bias, ``lm_head`` included (tied or not).

    What PyTorch autocast copies to bf16 when it runs a Linear on fp32 weights. Fused
    expert parameters (transformers 5.x MoE) are not ``nn.Linear``; their matmuls go
    through ``nn.functional.linear`` on the 3-D parameter and are not counted here.
    Raises ConfigError for a bad config.
    """
    config = as_model_config(config)
    kinds = _distinct_layers(config)
    per_kind = {
        moe: sum(m.params for m in layer_modules(config, index) if m.kind == "linear") for moe, index in kinds.items()
    }
    return sum(m.params for m in root_modules(config) if m.kind == "linear") + sum(
        per_kind[moe] for moe in config.moe_layers
    )


def decoder_linears(config: ModelLike, layer: int | None = None) -> tuple[Linear, ...]:
    """The ``nn.Linear`` modules of one decoder layer (default: the largest), named as in transformers.

    ``layer``: a 0-based index. Sizes in elements. Raises ConfigError for a bad config and
    ValueError for a layer index out of range.
    """
    config = as_model_config(config)
    if layer is None:
        kinds = _distinct_layers(config)
        layer = max(kinds.values(), key=lambda index: _layer_params(config, index)[0])
    return tuple(m.linear() for m in layer_modules(config, layer) if m.kind == "linear")


def embedding_params(config: ModelLike) -> int:
    """Input embedding plus, when untied, the ``lm_head`` (vocab x hidden elements each).

    What model cards leave out of "non-embedding" parameters. Raises ConfigError for a bad config.
    """
    config = as_model_config(config)
    one = config.vocab_size * config.hidden_size
    return one if config.tie_word_embeddings else 2 * one
