"""Parameter counts from a Hugging Face ``config.json`` (llama, mistral, qwen2, gemma2, mixtral).

Inputs are the config's own keys; outputs are exact integer parameter counts, the same
as ``sum(p.numel() for p in model.parameters())`` of the ``*ForCausalLM`` model that
``transformers`` builds from the config. Per decoder layer, the modules are those of
the ``transformers`` modeling files (``modeling_llama.py``, ``modeling_mistral.py``,
``modeling_qwen2.py``, ``modeling_gemma2.py``, ``modeling_mixtral.py``):

- attention: ``q_proj`` hidden -> heads*head_dim, ``k_proj``/``v_proj`` hidden ->
  kv_heads*head_dim (grouped-query attention, Ainslie et al. 2023, arXiv:2305.13245),
  ``o_proj`` heads*head_dim -> hidden. ``head_dim`` is the config's when given (gemma2,
  llama-3.2) else hidden/heads. Biases: llama and gemma2 ``attention_bias`` (q, k, v, o),
  qwen2 always on q, k, v and never on o, mistral and mixtral none.
- MLP (SwiGLU): ``gate_proj``, ``up_proj`` hidden -> intermediate, ``down_proj`` back;
  llama's ``mlp_bias`` adds biases. Mixtral replaces it by ``num_local_experts`` experts
  (``w1``, ``w3`` hidden -> intermediate, ``w2`` back) and a router ``gate`` hidden ->
  experts, no biases (Jiang et al. 2024, arXiv:2401.04088, §2.1).
- norms: RMSNorm weights of size hidden: two per layer (gemma2: four, pre/post attention
  and feed-forward), one final norm.
- embeddings: vocab*hidden, and an ``lm_head`` of the same size unless
  ``tie_word_embeddings`` (default false; true for gemma2).

Every expert counts toward memory; "active" parameters (those one token passes
through: ``num_experts_per_tok`` experts of each layer) only toward compute.
Raises ``ConfigError`` (a ValueError) naming the source, the key and the fix.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping


class ConfigError(ValueError):
    """A model config that cannot be read or lacks what the calculator needs (one line)."""


@dataclass(frozen=True)
class _Family:
    qkv_bias_key: str | None  # config key switching q/k/v biases, or None
    qkv_bias_default: bool  # value when the key is absent (or fixed when key is None)
    o_bias_key: str | None
    mlp_bias_key: str | None
    norms_per_layer: int
    tie_default: bool
    moe: bool = False


_FAMILIES: dict[str, _Family] = {
    "llama": _Family("attention_bias", False, "attention_bias", "mlp_bias", 2, False),
    "mistral": _Family(None, False, None, None, 2, False),
    "qwen2": _Family(None, True, None, None, 2, False),
    "gemma2": _Family("attention_bias", False, "attention_bias", None, 4, True),
    "mixtral": _Family(None, False, None, None, 2, False, moe=True),
}
SUPPORTED_MODEL_TYPES = tuple(sorted(_FAMILIES))


@dataclass(frozen=True)
class Linear:
    """One ``nn.Linear`` of a decoder layer, repeated ``copies`` times (MoE experts)."""

    name: str
    in_features: int
    out_features: int
    bias: bool = False
    copies: int = 1
    active_copies: int | None = None  # copies one token uses; None = all

    @property
    def weight_params(self) -> int:
        """Weight elements of all copies (excludes biases)."""
        return self.copies * self.in_features * self.out_features

    @property
    def params(self) -> int:
        """Weight and bias elements of all copies."""
        return self.weight_params + self.copies * self.out_features * self.bias

    @property
    def active_params(self) -> int:
        """Elements one token passes through."""
        copies = self.copies if self.active_copies is None else self.active_copies
        return copies * (self.in_features * self.out_features + self.out_features * self.bias)


@dataclass(frozen=True)
class ModelConfig:
    """What the calculator reads from a Hugging Face config (sizes in elements)."""

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
    num_local_experts: int = 0  # 0: dense MLP
    num_experts_per_tok: int = 0
    source: str = "<config>"

    @property
    def is_moe(self) -> bool:
        return self.num_local_experts > 0


@dataclass(frozen=True)
class ParamCount:
    """Parameters (elements): ``total`` held in memory, ``active`` used per token."""

    total: int
    active: int


def _get(raw: Mapping[str, Any], key: str, source: str, default: Any = None) -> Any:
    value = raw.get(key, default)
    if value is None:
        raise ConfigError(f"{source}: missing key {key!r}; copy it from the model's config.json")
    return value


def _positive_int(raw: Mapping[str, Any], key: str, source: str, default: Any = None) -> int:
    value = _get(raw, key, source, default)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(f"{source}: key {key!r} must be a positive integer, got {value!r}")
    return value


def _flag(raw: Mapping[str, Any], key: str | None, default: bool, source: str) -> bool:
    if key is None:
        return default
    value = raw.get(key, default)
    if not isinstance(value, bool):
        raise ConfigError(f"{source}: key {key!r} must be true or false, got {value!r}")
    return value


def model_config_from_dict(raw: Mapping[str, Any], source: str = "<config>") -> ModelConfig:
    """Build a ``ModelConfig`` from a parsed ``config.json`` (a dict).

    ``source`` names the file in error messages. Raises ConfigError for a missing or
    ill-typed key, an unsupported ``model_type``, or heads that do not divide hidden
    when the config gives no ``head_dim``.
    """
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{source}: expected a JSON object, got {type(raw).__name__}")
    model_type = raw.get("model_type")
    if model_type not in _FAMILIES:
        raise ConfigError(
            f"{source}: unsupported model_type {model_type!r}; "
            f"supported: {', '.join(SUPPORTED_MODEL_TYPES)}"
        )
    family = _FAMILIES[model_type]
    hidden = _positive_int(raw, "hidden_size", source)
    heads = _positive_int(raw, "num_attention_heads", source)
    if raw.get("head_dim") is not None:
        head_dim = _positive_int(raw, "head_dim", source)
    elif hidden % heads:
        raise ConfigError(
            f"{source}: hidden_size {hidden} is not a multiple of num_attention_heads {heads}; "
            "add the model's 'head_dim'"
        )
    else:
        head_dim = hidden // heads
    experts = _positive_int(raw, "num_local_experts", source) if family.moe else 0
    return ModelConfig(
        model_type=model_type,
        vocab_size=_positive_int(raw, "vocab_size", source),
        hidden_size=hidden,
        intermediate_size=_positive_int(raw, "intermediate_size", source),
        num_hidden_layers=_positive_int(raw, "num_hidden_layers", source),
        num_attention_heads=heads,
        num_key_value_heads=_positive_int(raw, "num_key_value_heads", source, default=heads),
        head_dim=head_dim,
        qkv_bias=_flag(raw, family.qkv_bias_key, family.qkv_bias_default, source),
        o_bias=_flag(raw, family.o_bias_key, False, source),
        mlp_bias=_flag(raw, family.mlp_bias_key, False, source),
        norms_per_layer=family.norms_per_layer,
        tie_word_embeddings=_flag(raw, "tie_word_embeddings", family.tie_default, source),
        num_local_experts=experts,
        num_experts_per_tok=_positive_int(raw, "num_experts_per_tok", source) if family.moe else 0,
        source=source,
    )


def load_model_config(path: str | Path) -> ModelConfig:
    """Read a ``config.json`` file into a ``ModelConfig``.

    Raises ConfigError (one line naming the file) when the file cannot be read, is not
    JSON, or fails ``model_config_from_dict``.
    """
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{source}: cannot read the file ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{source}: not a UTF-8 text file; pass the model's config.json") from None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{source}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
            "pass the model's config.json"
        ) from None
    return model_config_from_dict(raw, source)


def as_model_config(config: ModelConfig | Mapping[str, Any] | str | Path) -> ModelConfig:
    """Accept a ``ModelConfig``, a parsed config dict, or a path to ``config.json``."""
    if isinstance(config, ModelConfig):
        return config
    if isinstance(config, Mapping):
        return model_config_from_dict(config)
    return load_model_config(config)


def decoder_linears(config: ModelConfig) -> tuple[Linear, ...]:
    """The ``nn.Linear`` modules of ONE decoder layer, named as in ``transformers``."""
    h, hd = config.hidden_size, config.head_dim
    q_out, kv_out = config.num_attention_heads * hd, config.num_key_value_heads * hd
    attention = (
        Linear("q_proj", h, q_out, config.qkv_bias),
        Linear("k_proj", h, kv_out, config.qkv_bias),
        Linear("v_proj", h, kv_out, config.qkv_bias),
        Linear("o_proj", q_out, h, config.o_bias),
    )
    i = config.intermediate_size
    if not config.is_moe:
        return attention + (
            Linear("gate_proj", h, i, config.mlp_bias),
            Linear("up_proj", h, i, config.mlp_bias),
            Linear("down_proj", i, h, config.mlp_bias),
        )
    e, k = config.num_local_experts, config.num_experts_per_tok
    return attention + (
        Linear("gate", h, e),  # the router: every token passes through it
        Linear("w1", h, i, copies=e, active_copies=k),
        Linear("w3", h, i, copies=e, active_copies=k),
        Linear("w2", i, h, copies=e, active_copies=k),
    )


def embedding_params(config: ModelConfig) -> int:
    """Input embedding plus, when untied, the ``lm_head`` (vocab x hidden each)."""
    one = config.vocab_size * config.hidden_size
    return one if config.tie_word_embeddings else 2 * one


def count_params(config: ModelConfig | Mapping[str, Any] | str | Path) -> ParamCount:
    """Exact parameter count of the model (elements): total and active per token.

    Accepts what ``as_model_config`` accepts. Raises ConfigError for a bad config.
    """
    config = as_model_config(config)
    linears = decoder_linears(config)
    norms = config.norms_per_layer * config.hidden_size
    per_layer = sum(lin.params for lin in linears) + norms
    active_per_layer = sum(lin.active_params for lin in linears) + norms
    outside = embedding_params(config) + config.hidden_size  # + final norm
    layers = config.num_hidden_layers
    return ParamCount(total=outside + layers * per_layer, active=outside + layers * active_per_layer)

