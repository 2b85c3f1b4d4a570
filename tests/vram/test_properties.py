"""Property tests (hypothesis): orderings and round trips that must hold for any input."""

from __future__ import annotations

from hypothesis import given, strategies as st

import vram

params_st = st.integers(min_value=1, max_value=10**13)
world_st = st.integers(min_value=1, max_value=1024)
stage_st = st.sampled_from([0, 1, 2, 3])
optimizer_st = st.sampled_from(sorted(vram.OPTIMIZERS))


@given(params_st, world_st, world_st, stage_st, optimizer_st)
def test_per_gpu_memory_never_grows_with_more_gpus(params, a, b, stage, optimizer):
    few, many = sorted((a, b))
    assert (
        vram.model_states_per_gpu(params, many, stage, optimizer).total_bytes
        <= vram.model_states_per_gpu(params, few, stage, optimizer).total_bytes
    )


@given(params_st, world_st, optimizer_st)
def test_zero3_le_zero2_le_zero1_le_ddp(params, world_size, optimizer):
    totals = [vram.model_states_per_gpu(params, world_size, s, optimizer).total_bytes for s in (3, 2, 1, 0)]
    assert totals == sorted(totals)


@given(params_st, world_st, st.sampled_from([1, 2, 3]), optimizer_st)
def test_offload_moves_the_optimizer_states_without_losing_any(params, world_size, stage, optimizer):
    kept = vram.training_memory_per_gpu(params, world_size, stage, optimizer)
    moved = vram.training_memory_per_gpu(params, world_size, stage, optimizer, offload_optimizer=True)
    assert moved.per_gpu_bytes + kept.optimizer_bytes == kept.per_gpu_bytes
    assert moved.host_optimizer_bytes_per_machine == kept.optimizer_bytes * world_size


@given(st.integers(min_value=0, max_value=10**15))
def test_gb_and_gib_round_trip(n_bytes):
    assert vram.gb_to_bytes(vram.bytes_to_gb(n_bytes)) == n_bytes
    assert vram.gib_to_bytes(vram.bytes_to_gib(n_bytes)) == n_bytes


@given(st.integers(min_value=1, max_value=10**15))
def test_parse_params_round_trips_plain_integers(n):
    assert vram.parse_params(str(n)) == n


@given(st.integers(min_value=0, max_value=10**6), st.integers(min_value=1, max_value=64))
def test_fsdp2_chunks_cover_dim0_exactly_once(dim0, world_size):
    rows = [vram.fsdp2_local_rows(dim0, world_size, r) for r in range(world_size)]
    assert sum(rows) == dim0
    assert max(rows) <= vram.fsdp2_chunk_rows(dim0, world_size)
    assert vram.fsdp2_chunk_rows(dim0, world_size) * world_size < dim0 + world_size


@given(*(st.integers(min_value=1, max_value=2**14) for _ in range(4)))
def test_recomputation_never_keeps_more(s, b, h, a):
    none, selective, full = (
        vram.activation_bytes_per_layer(s, b, h, a, mode) for mode in ("none", "selective", "full")
    )
    assert full <= selective <= none


@given(st.integers(min_value=0, max_value=10**12))
def test_nf4_is_between_4_and_4_5_bits_per_element(n):
    nbytes = vram.nf4_bytes(n)
    assert n / 2 <= nbytes <= n * 4.5 / 8 + 8
