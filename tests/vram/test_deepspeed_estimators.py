"""``--framework deepspeed`` against DeepSpeed 0.19's own estimator functions.

Oracle: ``estimate_zero2_model_states_mem_needs`` and ``estimate_zero3_model_states_mem_needs``
imported from the installed DeepSpeed (CPU-only), called with ``additional_buffer_factor=1``
and the model's P and largest module taken from transformers on the meta device
(``transformers_oracle.built``), for every model the finder shows, on 1, 2, 4 and 8 GPUs,
with and without offload. The estimators return (cpu_bytes, gpu_bytes[, largest_layer_memory]).
Then the cases of shared/cases/oracles.md, "Model states per GPU, DeepSpeed", typed verbatim.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
import yaml
from hypothesis import example, given, settings, strategies as st

import vram
from tests.vram.transformers_oracle import built
from vram.deepspeed_zero import deepspeed_memory
from vram.frameworks import framework_memory

REPO = Path(__file__).resolve().parents[2]
MODELS_DIR = REPO / "snippets" / "data" / "models"
WORLD_SIZES = (1, 2, 4, 8)
P8B, LARGEST_8B = 8_030_261_248, 525_336_576  # oracles.md


@pytest.fixture(scope="module")
def estimators():
    logging.getLogger("DeepSpeed").setLevel(logging.ERROR)
    from deepspeed.runtime.zero.stage3 import estimate_zero3_model_states_mem_needs
    from deepspeed.runtime.zero.stage_1_and_2 import estimate_zero2_model_states_mem_needs

    return estimate_zero2_model_states_mem_needs, estimate_zero3_model_states_mem_needs


def _finder_models() -> list[str]:
    entries = yaml.safe_load((REPO / "snippets" / "data" / "models.yaml").read_text(encoding="utf-8"))["models"]
    return [entry["config"] for entry in entries.values()]


@pytest.fixture(scope="module", params=_finder_models())
def model(request):
    """(P, largest module) from transformers' meta model, and the calculator's config."""
    path = MODELS_DIR / request.param
    meta = built(json.loads(path.read_text(encoding="utf-8")))
    return meta.total, meta.largest_module, vram.load_model_config(path)


def test_zero2_gpu_side_equals_the_estimator(estimators, model):
    zero2, _ = estimators
    params, _, _ = model
    for n in WORLD_SIZES:
        for offload in (False, True):
            _, gpu = zero2(params, num_gpus_per_node=n, num_nodes=1, cpu_offload=offload, additional_buffer_factor=1)
            assert deepspeed_memory(params, n, 2, offload_optimizer=offload).per_gpu_bytes == gpu


def test_zero3_gpu_and_host_equal_the_estimator(estimators, model):
    _, zero3 = estimators
    params, largest, config = model
    assert vram.largest_layer_params(config) == largest  # what --config feeds the calculator
    for n in WORLD_SIZES:
        for offload_optimizer, offload_params in ((False, False), (True, False), (True, True)):
            cpu, gpu, largest_memory = zero3(
                params,
                largest,
                num_gpus_per_node=n,
                num_nodes=1,
                cpu_offload=offload_optimizer,
                cpu_offload_params=offload_params,
                zero_init=True,
                additional_buffer_factor=1,
            )
            mem = deepspeed_memory(
                params,
                n,
                3,
                offload_optimizer=offload_optimizer,
                offload_params=offload_params,
                largest_layer_params=largest,
            )
            assert mem.per_gpu_bytes == gpu
            assert mem.working_bytes == largest_memory
            if offload_optimizer:  # with offload, the estimator's host side is what the partitions pin
                assert mem.host_bytes == cpu


def test_zero2_offload_host_is_16_bytes_per_param_the_estimators_load_term_aside(estimators, model):
    """The estimator takes max(4 * N, 16) B per parameter: equal to ours up to N = 4."""
    zero2, _ = estimators
    params, _, _ = model
    for n in WORLD_SIZES:
        cpu, _ = zero2(params, num_gpus_per_node=n, num_nodes=1, cpu_offload=True, additional_buffer_factor=1)
        mem = deepspeed_memory(params, n, 2, offload_optimizer=True)
        assert cpu == max(4 * n, 16) * params
        assert mem.host_bytes == 16 * params
        assert any("max(4*N, 16)" in note for note in mem.notes)
        assert any("additional_buffer_factor=1.5" in note for note in mem.notes)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(st.integers(1, 1024), st.integers(1, 10**15), st.booleans(), st.integers(0, 10**15))
@example(5, 700_000_000_000_003, False, 0)  # 18P/N = ...010.8: the estimator's float rounds up to ...011
@example(7, 999_999_999_999_999, False, 5)
@example(1024, 1025, False, 1)  # r = 1 < N/18: 18 bytes above
@example(1, 10**15, True, 10**15)
def test_any_size_equals_the_estimator_when_n_divides_p_and_stays_within_18_bytes_otherwise(
    estimators, n, params, divisible, largest_seed
):
    """Partitions are whole elements (DeepSpeed pads them); the estimators truncate
    int(18P/N) in floating point. Bound of the docstring: equal when N divides P; else 18 -
    floor(18r/N) bytes above (r = P mod N: 1 to 18), one byte more or less once 18P passes
    2^53 (the float division's rounding); 2 - floor(2r/N) (1 or 2) with offload_optimizer."""
    zero2, zero3 = estimators
    if divisible:
        params = max(n, params - params % n)
    largest = 1 + largest_seed % params
    exact = params % n == 0
    r = params % n
    rounding = 1 if r and 18 * params >= 2**53 else 0  # the quotient then has too few bits for 1/N

    def check(ours: int, theirs: int, per_element: int) -> None:
        above = per_element - (per_element * r) // n if r else 0  # whole elements minus the floor
        assert abs(ours - theirs - above) <= rounding, (ours, theirs, above)

    check(deepspeed_memory(params, n, 2).per_gpu_bytes, zero2(params, n, 1, False, 1)[1], 18)
    check(
        deepspeed_memory(params, n, 3, largest_layer_params=largest).per_gpu_bytes,
        zero3(params, largest, n, 1, False, False, True, 1)[1],
        18,
    )
    check(
        deepspeed_memory(params, n, 3, offload_optimizer=True, largest_layer_params=largest).per_gpu_bytes,
        zero3(params, largest, n, 1, True, False, True, 1)[1],
        2,
    )  # 2 ceil(P/N) vs int(2P/N)
    # no partition left on the GPU: 2P, and the largest layer alone
    assert deepspeed_memory(params, n, 2, offload_optimizer=True).per_gpu_bytes == zero2(params, n, 1, True, 1)[1]
    assert (
        deepspeed_memory(
            params, n, 3, offload_optimizer=True, offload_params=True, largest_layer_params=largest
        ).per_gpu_bytes
        == zero3(params, largest, n, 1, True, True, True, 1)[1]
    )
    if exact:  # host RAM per machine: the estimator's 16P (18P with offload_param) at factor 1
        for offload_params, index in ((False, 0), (True, 0)):
            mem = deepspeed_memory(
                params, n, 3, offload_optimizer=True, offload_params=offload_params, largest_layer_params=largest
            )
            assert mem.host_bytes == zero3(params, largest, n, 1, True, offload_params, True, 1)[index]


def test_one_parameter_on_four_gpus_holds_whole_elements(estimators):
    """oracles.md, edges: 1 parameter on 4 GPUs at ZeRO-3: a GPU holds a whole element of each
    state (2 B of bf16 weights, 4 of fp32 gradients, 4 + 8 of fp32 master and moments), not
    the estimator's int(18/4) = 4 bytes shared among them."""
    _, zero3 = estimators
    mem = deepspeed_memory(1, 4, 3, largest_layer_params=1)
    assert (mem.weights_bytes, mem.gradients_bytes, mem.optimizer_bytes) == (2, 4, 12)
    assert mem.per_gpu_bytes == 4 + 18 == zero3(1, 1, 4, 1, False, False, True, 1)[1] + 14
    assert any("whole elements" in note for note in mem.notes)


# --- shared/cases/oracles.md, "Model states per GPU, DeepSpeed" --------------------------


def test_llama_8b_zero2_and_zero3_on_8_and_4_gpus():
    assert deepspeed_memory(P8B, 8, 2).per_gpu_bytes == 34_128_610_304
    assert deepspeed_memory(P8B, 8, 3, largest_layer_params=LARGEST_8B).per_gpu_bytes == 20_169_434_112
    assert deepspeed_memory(P8B, 4, 2).per_gpu_bytes == 52_196_698_112
    assert deepspeed_memory(P8B, 4, 3, largest_layer_params=LARGEST_8B).per_gpu_bytes == 38_237_521_920
    # the ZeRO paper's 2P + 14P/N, kept under --framework zero-paper
    assert vram.model_states_per_gpu(P8B, 8, 2).total_bytes == 30_113_479_680


def test_llama_8b_largest_layer_is_the_embedding(shared_configs):
    assert vram.largest_layer_params(shared_configs / "llama-3.1-8b.json") == LARGEST_8B


def test_llama_8b_zero2_offload_one_gpu():
    mem = deepspeed_memory(P8B, 1, 2, offload_optimizer=True)
    assert mem.per_gpu_bytes == 16_060_522_496  # 2P: the gradients go to the CPU too
    assert mem.host_bytes == 128_484_179_968  # fp32 master + two moments + fp32 gradients = 16P


def test_1b_zero2_offload_on_4_gpus_is_2_gb():
    mem = deepspeed_memory(10**9, 4, 2, offload_optimizer=True)
    assert mem.per_gpu_bytes == 2 * 10**9
    zero_paper = framework_memory("zero-paper", vram.breakdown.ModelShape(10**9), 4, 2, offload_optimizer=True)
    assert zero_paper.per_gpu_bytes == 2_500_000_000  # the paper's idealisation keeps 2.50


def test_split_is_the_estimators_own_comment():
    """stage_1_and_2.py: "18 = 2_grads_16bit + 4_grads_32bit + 4_params_32bit +
    8_optimizer_states_32bit(momentum and variance)", beside 2 for the 16-bit parameters."""
    mem = deepspeed_memory(P8B, 8, 2)
    split = {(t.key, t.coefficients) for t in mem.terms}
    assert split == {
        ("bf16_weights", ((2, "P"),)),
        ("bf16_gradient_partition", ((2, "P/N"),)),
        ("fp32_gradient_partition", ((4, "P/N"),)),
        ("fp32_master_partition", ((4, "P/N"),)),
        ("optimizer_state_partition", ((8, "P/N"),)),
    }
    assert (mem.weights_bytes, mem.optimizer_bytes) == (2 * P8B, 12 * P8B // 8)
    stage3 = deepspeed_memory(P8B, 8, 3, largest_layer_params=LARGEST_8B)
    assert stage3.working_bytes == 4 * LARGEST_8B
    assert all("stage3.py" in t.what for t in stage3.terms)


@pytest.mark.parametrize(
    "kwargs, needle",
    [
        (dict(zero_stage=3), "largest"),
        (dict(zero_stage=0, offload_optimizer=True), "offload_optimizer"),
        (dict(zero_stage=2, offload_optimizer=True, offload_params=True), "offload_param"),
        (dict(zero_stage=3, offload_params=True, largest_layer_params=5), "offload_param"),
        (dict(zero_stage=2, optimizer="adamw-fp32"), "adamw-fp32"),
    ],
)
def test_refusals(kwargs, needle):
    with pytest.raises(ValueError, match=needle):
        deepspeed_memory(P8B, 4, **kwargs)
