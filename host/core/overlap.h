/* SPDX-License-Identifier: Apache-2.0 */
/*
 * overlap.h - the bytes a call's operands touch, and whether an operand it
 * writes shares any of them with another: the one aliasing rule of every
 * enqueue call and every host emulation call.
 *
 * Two operands collide when their sets of bytes intersect, not their
 * bounding ranges: q and k heads interleaved per token in one fused buffer,
 * or cos and sin in the two halves of each row, are disjoint and accepted.
 */
#ifndef CLPE_OVERLAP_H
#define CLPE_OVERLAP_H

#include "core/core.h"

#define CLPE_FOOTPRINT_DIMS 4

/* One dimension of a footprint: count positions, pitch bytes apart. */
typedef struct clpe_stride {
    size_t count, pitch;
} clpe_stride;

/* The bytes of a strided layout: `width` contiguous bytes starting at each
 *     offset + i_0 * dims[0].pitch + ... + i_{n-1} * dims[n-1].pitch,
 *     0 <= i_j < dims[j].count,
 * dims in any order (a tensor's heads, rows and sequences, whichever pitch is
 * largest). A count or a width of 0 makes the empty set. */
typedef struct clpe_footprint {
    size_t offset; /* bytes from the start of the memory (a cl_mem, or a host pointer) */
    size_t width;
    unsigned ndims;
    clpe_stride dims[CLPE_FOOTPRINT_DIMS];
} clpe_footprint;

/* Do footprint a at address a_base and footprint b at b_base (one address
 * space: 0 and 0 for two footprints of one cl_mem, the pointers for host
 * memory) share a byte? Exact for layouts whose pitches line up level by
 * level (every tensor layout clpe takes against another of the same
 * family, or any layout against a contiguous range) and for any pair that
 * a bounded walk decides; where the walk would take more than a few
 * thousand steps the answer is true, so a caller refuses rather than
 * guesses. */
bool clpe__footprints_overlap(const clpe_footprint *a, uint64_t a_base, const clpe_footprint *b,
                              uint64_t b_base);

/* width bytes at offset: ids, positions, a bad-id report. */
clpe_footprint clpe__footprint_bytes(size_t offset, size_t width);

/* The footprint of `width` elements of esize bytes at element `offset`,
 * repeated along ndims (at most CLPE_FOOTPRINT_DIMS) dimensions whose
 * counts and pitches are in elements: a rotary tensor for the KV-cache
 * call (heads, tokens), or one tensor of its cache (heads, slots of a
 * block, blocks: every entry a call may write). */
clpe_footprint clpe__strided_footprint(size_t offset, size_t width, const clpe_stride *dims,
                                       unsigned ndims, size_t esize);

/* The footprint of a resolved [batch, seq, d] region of esize-byte elements. */
clpe_footprint clpe__footprint_region(const clpe_region *r, size_t d, size_t esize, size_t batch,
                                      size_t seq);

/* How a call uses an operand. */
typedef enum clpe_access {
    CLPE_ACCESS_READ = 1,
    CLPE_ACCESS_WRITE = 2,
    CLPE_ACCESS_READ_WRITE = 3
} clpe_access;

/* One operand of a call: bytes of a cl_mem (buffer), or of host memory
 * (buffer NULL, host its pointer). Neither: an absent optional operand. */
typedef struct clpe_operand {
    cl_mem buffer;
    const void *host;
    clpe_footprint bytes;
    clpe_access access;
} clpe_operand;

/* Every operand of one call, checked together:
 *  - CLPE_ERROR_BUFFER_ACCESS when a buffer's CL_MEM_READ_ONLY forbids a
 *    write or CL_MEM_WRITE_ONLY a read (what kernels do with such a buffer
 *    OpenCL leaves undefined);
 *  - CLPE_ERROR_ALIASING when an operand written shares a byte with another
 *    operand. Within one cl_mem (or host memory) that is decided by
 *    clpe__footprints_overlap. Two different cl_mem that share storage (a
 *    buffer and its sub-buffer, sub-buffers whose ranges overlap, buffers
 *    over overlapping host memory with CL_MEM_USE_HOST_PTR) collide whatever
 *    their elements, since OpenCL leaves writing one while the other is in
 *    use undefined; sub-buffers that do not overlap are independent;
 *  - an OpenCL status when a buffer's information cannot be read.
 * An operand that reads and writes the same bytes in place is one operand
 * with CLPE_ACCESS_READ_WRITE. */
clpe_status clpe__check_operands(const clpe_operand *ops, size_t count);

/* The operands of clpe's own argument types (checks.c): a region's
 * elements, the int64 positions a checked position source reads (none for
 * CLPE_POSITIONS_START), and count int32 token ids. */
clpe_operand clpe__region_operand(const clpe_region *r, size_t d, size_t esize, size_t batch,
                                  size_t seq, clpe_access access);
clpe_operand clpe__positions_operand(const clpe_position_args *p);
clpe_operand clpe__ids_operand(const clpe_token_ids *ids, size_t count);

#endif /* CLPE_OVERLAP_H */
