/* SPDX-License-Identifier: Apache-2.0 */
/*
 * checks.c - the encoder's own argument checks: the call on an encoder,
 * its [batch, seq, d] regions and the token ids of a gather, through the
 * checks every call shares (core/checks.c).
 */
#include "sinusoid/sinusoid.h"

clpe_status clpe__check_call(const clpe_encoder *enc, cl_command_queue queue,
                             cl_uint num_events, const cl_event *wait_list)
{
    if (!enc)
        return CLPE_ERROR_NULL_ENCODER;
    return clpe__check_call_on(enc->shared, queue, num_events, wait_list);
}

clpe_status clpe__check_queue(const clpe_encoder *enc, cl_command_queue queue,
                              cl_uint num_events, const cl_event *wait_list)
{
    return clpe__check_queue_on(enc->shared, queue, num_events, wait_list);
}

clpe_status clpe__resolve_shape(const clpe_encoder *enc, size_t offset_bytes, size_t row_pitch,
                                size_t batch_pitch, size_t batch, size_t seq, clpe_region *r)
{
    return clpe__resolve_rows(enc->cfg.d, clpe__dtype_size(enc->cfg.dtype), offset_bytes,
                              row_pitch, batch_pitch, batch, seq, r);
}

clpe_status clpe__resolve_tensor(const clpe_encoder *enc, const clpe_tensor *t, size_t batch,
                                 size_t seq, clpe_region *r)
{
    if (!t)
        return CLPE_ERROR_NULL_POINTER;
    if (!t->buffer)
        return CLPE_ERROR_NULL_BUFFER;
    if (!CLPE__RESERVED_ZERO(t))
        return CLPE_ERROR_RESERVED_FIELD;
    r->buffer = t->buffer;
    return clpe__resolve_shape(enc, t->offset, t->row_pitch, t->batch_pitch, batch, seq, r);
}

clpe_status clpe__check_buffer(const clpe_encoder *enc, cl_mem buffer, size_t bytes,
                               clpe_status too_small)
{
    return clpe__check_buffer_in(enc->shared->context, buffer, bytes, too_small);
}

clpe_status clpe__check_region(const clpe_encoder *enc, const clpe_region *r)
{
    return clpe__check_buffer(enc, r->buffer, r->end_bytes, CLPE_ERROR_BUFFER_TOO_SMALL);
}

clpe_status clpe__check_ids(const clpe_encoder *enc, const clpe_token_ids *ids, size_t count)
{
    size_t bytes;
    if (!ids || !ids->buffer || ids->offset % sizeof(cl_int))
        return CLPE_ERROR_INVALID_IDS;
    if (!CLPE__RESERVED_ZERO(ids))
        return CLPE_ERROR_RESERVED_FIELD;
    if (!clpe__mul_size(count, sizeof(cl_int), &bytes) ||
        !clpe__add_size(bytes, ids->offset, &bytes))
        return CLPE_ERROR_TOO_LARGE;
    return clpe__check_buffer(enc, ids->buffer, bytes, CLPE_ERROR_INVALID_IDS);
}
