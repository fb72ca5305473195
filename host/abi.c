/*
 * abi.c - the table of public types, struct fields and constants that
 * bindings check their own declarations against (clpe_abi_entries).
 *
 * Every entry is produced by the compiler from clpe.h itself (sizeof,
 * offsetof, the enumerators), so the table cannot disagree with the header
 * it was built with. A new public struct field or constant belongs here too:
 * the Python package's tests parse clpe.h and fail on anything missing.
 */
#include "clpe.h"

#include <stddef.h>

#define ABI_TYPE(t) {.name = #t, .size = sizeof(t), .kind = CLPE_ABI_TYPE}
#define ABI_FIELD(s, f)                                                               \
    {.name = #s "." #f, .offset = offsetof(s, f), .size = sizeof(((s *)0)->f),        \
     .kind = CLPE_ABI_FIELD}
#define ABI_CONSTANT(c) {.name = #c, .value = (int64_t)(c), .kind = CLPE_ABI_CONSTANT}

static const clpe_abi_entry abi_table[] = {
    /* First, so that a binding can check how it reads the rest. */
    ABI_TYPE(clpe_abi_entry),
    ABI_FIELD(clpe_abi_entry, name),
    ABI_FIELD(clpe_abi_entry, value),
    ABI_FIELD(clpe_abi_entry, offset),
    ABI_FIELD(clpe_abi_entry, size),
    ABI_FIELD(clpe_abi_entry, kind),
    ABI_FIELD(clpe_abi_entry, reserved),
    ABI_TYPE(clpe_abi_kind),
    ABI_CONSTANT(CLPE_ABI_TYPE),
    ABI_CONSTANT(CLPE_ABI_FIELD),
    ABI_CONSTANT(CLPE_ABI_CONSTANT),

    ABI_CONSTANT(CLPE_VERSION_MAJOR),
    ABI_CONSTANT(CLPE_VERSION_MINOR),
    ABI_CONSTANT(CLPE_VERSION_PATCH),
    ABI_CONSTANT(CLPE_VERSION_NUMBER),

    ABI_TYPE(clpe_status),
    ABI_CONSTANT(CLPE_SUCCESS),
    ABI_CONSTANT(CLPE_ERROR_NULL_ENCODER),
    ABI_CONSTANT(CLPE_ERROR_NULL_QUEUE),
    ABI_CONSTANT(CLPE_ERROR_NULL_BUFFER),
    ABI_CONSTANT(CLPE_ERROR_NULL_POINTER),
    ABI_CONSTANT(CLPE_ERROR_INVALID_D),
    ABI_CONSTANT(CLPE_ERROR_INVALID_BASE),
    ABI_CONSTANT(CLPE_ERROR_INVALID_SCALE),
    ABI_CONSTANT(CLPE_ERROR_INVALID_CONFIG),
    ABI_CONSTANT(CLPE_ERROR_UNSUPPORTED_DTYPE),
    ABI_CONSTANT(CLPE_ERROR_INVALID_PITCH),
    ABI_CONSTANT(CLPE_ERROR_BUFFER_TOO_SMALL),
    ABI_CONSTANT(CLPE_ERROR_POSITION_OVERFLOW),
    ABI_CONSTANT(CLPE_ERROR_CONTEXT_MISMATCH),
    ABI_CONSTANT(CLPE_ERROR_DEVICE_MISMATCH),
    ABI_CONSTANT(CLPE_ERROR_DEVICE_UNSUPPORTED),
    ABI_CONSTANT(CLPE_ERROR_INVALID_WAIT_LIST),
    ABI_CONSTANT(CLPE_ERROR_MISALIGNED_OFFSET),
    ABI_CONSTANT(CLPE_ERROR_INVALID_POSITIONS),
    ABI_CONSTANT(CLPE_ERROR_INDEX_BUFFER_TOO_SMALL),
    ABI_CONSTANT(CLPE_ERROR_HOST_ONLY),
    ABI_CONSTANT(CLPE_ERROR_OUT_OF_HOST_MEMORY),
    ABI_CONSTANT(CLPE_ERROR_NO_DEVICE),
    ABI_CONSTANT(CLPE_ERROR_TOO_LARGE),
    ABI_CONSTANT(CLPE_ERROR_DTYPE_MISMATCH),
    ABI_CONSTANT(CLPE_ERROR_ALIASING),
    ABI_CONSTANT(CLPE_ERROR_UNKNOWN_PRESET),
    ABI_CONSTANT(CLPE_ERROR_INVALID_IDS),
    ABI_CONSTANT(CLPE_ERROR_RESERVED_FIELD),
    ABI_CONSTANT(CLPE_ERROR_INVALID_ROPE),
    ABI_CONSTANT(CLPE_ERROR_INVALID_SCALING),
    ABI_CONSTANT(CLPE_ERROR_END_UNSTABLE),

    ABI_CONSTANT(CLPE_MAX_D),
    ABI_TYPE(clpe_freq),
    ABI_CONSTANT(CLPE_FREQ_PAPER),
    ABI_CONSTANT(CLPE_FREQ_TENSOR2TENSOR),
    ABI_TYPE(clpe_layout),
    ABI_CONSTANT(CLPE_LAYOUT_INTERLEAVED),
    ABI_CONSTANT(CLPE_LAYOUT_SPLIT),
    ABI_CONSTANT(CLPE_LAYOUT_SPLIT_COS_FIRST),
    ABI_TYPE(clpe_dtype),
    ABI_CONSTANT(CLPE_DTYPE_F32),
    ABI_CONSTANT(CLPE_DTYPE_F16),
    ABI_CONSTANT(CLPE_DTYPE_BF16),
    ABI_CONSTANT(CLPE_DTYPE_F64),
    ABI_CONSTANT(CLPE_FLAG_ODD_D_ZERO_COLUMN),
    ABI_CONSTANT(CLPE_FLAG_PADDING_ROW),
    ABI_CONSTANT(CLPE_FLAG_ODD_D_HALF_PAIR),

    ABI_TYPE(clpe_config),
    ABI_FIELD(clpe_config, d),
    ABI_FIELD(clpe_config, base),
    ABI_FIELD(clpe_config, freq),
    ABI_FIELD(clpe_config, layout),
    ABI_FIELD(clpe_config, dtype),
    ABI_FIELD(clpe_config, scale),
    ABI_FIELD(clpe_config, flags),
    ABI_FIELD(clpe_config, padding_position),
    ABI_FIELD(clpe_config, reserved),

    ABI_TYPE(clpe_build_log),
    ABI_FIELD(clpe_build_log, buffer),
    ABI_FIELD(clpe_build_log, capacity),
    ABI_FIELD(clpe_build_log, length),

    ABI_TYPE(clpe_launch_info),
    ABI_FIELD(clpe_launch_info, pairs_per_item),
    ABI_FIELD(clpe_launch_info, rows_per_item),
    ABI_FIELD(clpe_launch_info, work_group_size),
    ABI_FIELD(clpe_launch_info, max_launch_rows),
    ABI_FIELD(clpe_launch_info, max_launch_batch),
    ABI_FIELD(clpe_launch_info, tile_walk),
    ABI_FIELD(clpe_launch_info, reserved32),
    ABI_FIELD(clpe_launch_info, reserved),

    ABI_TYPE(clpe_tensor),
    ABI_FIELD(clpe_tensor, buffer),
    ABI_FIELD(clpe_tensor, offset),
    ABI_FIELD(clpe_tensor, row_pitch),
    ABI_FIELD(clpe_tensor, batch_pitch),
    ABI_FIELD(clpe_tensor, reserved),

    ABI_TYPE(clpe_position_source),
    ABI_CONSTANT(CLPE_POSITIONS_START),
    ABI_CONSTANT(CLPE_POSITIONS_PER_SEQUENCE),
    ABI_CONSTANT(CLPE_POSITIONS_IDS),
    ABI_TYPE(clpe_positions),
    ABI_FIELD(clpe_positions, source),
    ABI_FIELD(clpe_positions, start),
    ABI_FIELD(clpe_positions, buffer),
    ABI_FIELD(clpe_positions, offset),
    ABI_FIELD(clpe_positions, reserved),

    ABI_TYPE(clpe_token_ids),
    ABI_FIELD(clpe_token_ids, buffer),
    ABI_FIELD(clpe_token_ids, offset),
    ABI_FIELD(clpe_token_ids, reserved),

    ABI_TYPE(clpe_rope_pairing),
    ABI_CONSTANT(CLPE_ROPE_HALF_SPLIT),
    ABI_CONSTANT(CLPE_ROPE_INTERLEAVED),
    ABI_TYPE(clpe_rope_scaling),
    ABI_CONSTANT(CLPE_ROPE_DEFAULT),
    ABI_CONSTANT(CLPE_ROPE_LINEAR),
    ABI_CONSTANT(CLPE_ROPE_DYNAMIC),
    ABI_CONSTANT(CLPE_ROPE_YARN),
    ABI_CONSTANT(CLPE_ROPE_LLAMA3),
    ABI_CONSTANT(CLPE_ROPE_LONGROPE),
    ABI_CONSTANT(CLPE_ROPE_FREQUENCIES),
    ABI_CONSTANT(CLPE_ROPE_INVERSE),

    ABI_TYPE(clpe_rope_config),
    ABI_FIELD(clpe_rope_config, head_dim),
    ABI_FIELD(clpe_rope_config, rotary_dim),
    ABI_FIELD(clpe_rope_config, base),
    ABI_FIELD(clpe_rope_config, pairing),
    ABI_FIELD(clpe_rope_config, dtype),
    ABI_FIELD(clpe_rope_config, scaling),
    ABI_FIELD(clpe_rope_config, factor),
    ABI_FIELD(clpe_rope_config, original_max_position),
    ABI_FIELD(clpe_rope_config, low_freq_factor),
    ABI_FIELD(clpe_rope_config, high_freq_factor),
    ABI_FIELD(clpe_rope_config, beta_fast),
    ABI_FIELD(clpe_rope_config, beta_slow),
    ABI_FIELD(clpe_rope_config, mscale),
    ABI_FIELD(clpe_rope_config, mscale_all_dim),
    ABI_FIELD(clpe_rope_config, no_truncate),
    ABI_FIELD(clpe_rope_config, attention_factor),
    ABI_FIELD(clpe_rope_config, seq_len),
    ABI_FIELD(clpe_rope_config, short_factor),
    ABI_FIELD(clpe_rope_config, long_factor),
    ABI_FIELD(clpe_rope_config, frequencies),
    ABI_FIELD(clpe_rope_config, reserved),

    ABI_TYPE(clpe_rope_tensor),
    ABI_FIELD(clpe_rope_tensor, buffer),
    ABI_FIELD(clpe_rope_tensor, offset),
    ABI_FIELD(clpe_rope_tensor, heads),
    ABI_FIELD(clpe_rope_tensor, head_pitch),
    ABI_FIELD(clpe_rope_tensor, row_pitch),
    ABI_FIELD(clpe_rope_tensor, batch_pitch),
    ABI_FIELD(clpe_rope_tensor, reserved),

    ABI_TYPE(clpe_host_rope_tensor),
    ABI_FIELD(clpe_host_rope_tensor, data),
    ABI_FIELD(clpe_host_rope_tensor, heads),
    ABI_FIELD(clpe_host_rope_tensor, head_pitch),
    ABI_FIELD(clpe_host_rope_tensor, row_pitch),
    ABI_FIELD(clpe_host_rope_tensor, batch_pitch),
    ABI_FIELD(clpe_host_rope_tensor, reserved),

    /* multimodal rotary */
    ABI_CONSTANT(CLPE_MROPE_MAX_STREAMS),
    ABI_TYPE(clpe_mrope_ladder),
    ABI_CONSTANT(CLPE_MROPE_ONE_LADDER),
    ABI_CONSTANT(CLPE_MROPE_LADDER_PER_STREAM),

    ABI_TYPE(clpe_mrope_config),
    ABI_FIELD(clpe_mrope_config, rope),
    ABI_FIELD(clpe_mrope_config, streams),
    ABI_FIELD(clpe_mrope_config, section),
    ABI_FIELD(clpe_mrope_config, ladder),
    ABI_FIELD(clpe_mrope_config, reserved),

    ABI_TYPE(clpe_mrope_positions),
    ABI_FIELD(clpe_mrope_positions, buffer),
    ABI_FIELD(clpe_mrope_positions, offset),
    ABI_FIELD(clpe_mrope_positions, stream_pitch),
    ABI_FIELD(clpe_mrope_positions, token_pitch),
    ABI_FIELD(clpe_mrope_positions, reserved),

    ABI_TYPE(clpe_host_mrope_positions),
    ABI_FIELD(clpe_host_mrope_positions, data),
    ABI_FIELD(clpe_host_mrope_positions, stream_pitch),
    ABI_FIELD(clpe_host_mrope_positions, token_pitch),
    ABI_FIELD(clpe_host_mrope_positions, reserved),
};

const clpe_abi_entry *clpe_abi_entries(size_t *count)
{
    if (count)
        *count = sizeof abi_table / sizeof abi_table[0];
    return abi_table;
}
