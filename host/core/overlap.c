/* SPDX-License-Identifier: Apache-2.0 */
/*
 * overlap.c - whether two strided sets of bytes intersect, and the aliasing
 * and access rules of a call's operands built on it (see overlap.h).
 *
 * A footprint is brought to a normal form: dimensions of one position
 * dropped, the rest sorted by pitch, a dimension whose runs touch or overlap
 * folded into the width, and two dimensions that continue each other merged.
 * Two footprints are then compared from their outermost dimension in:
 *  - bounding ranges apart: disjoint;
 *  - the same outer pitch P (one fused buffer's q and k, cos and sin rows):
 *    entry i of one and entry j of the other can only meet for the one or
 *    two shifts m = j - i that bring their inner ranges together, and every
 *    pair with the same shift looks alike, so each shift is one comparison
 *    of the inner footprints;
 *  - different outer pitches: the footprint with the larger one is cut into
 *    its entries that reach the other's bounding range, each compared in turn.
 * Each step peels one dimension off, so layouts whose pitches line up take a
 * handful of steps; the walk gives up, answering "overlap", after
 * STEP_BUDGET steps.
 */
#include "core/overlap.h"

#include <string.h>

#define STEP_BUDGET 4096
/* Spans and distances stay below this, so int64 arithmetic cannot overflow. */
#define SPAN_MAX ((uint64_t)1 << 61)

typedef struct normal {
    int n;                                 /* dimensions left, innermost first */
    int64_t width;
    int64_t count[CLPE_FOOTPRINT_DIMS];
    int64_t pitch[CLPE_FOOTPRINT_DIMS];
    int64_t span[CLPE_FOOTPRINT_DIMS];     /* bytes from the first to past the last of dims 0..j */
} normal;

/* The normal form; false when the set is empty. *ok false: too large to compare. */
static bool normalize(const clpe_footprint *f, normal *out, bool *ok)
{
    *ok = true;
    out->n = 0;
    if (f->width == 0)
        return false;
    clpe_stride dims[CLPE_FOOTPRINT_DIMS];
    int n = 0;
    for (unsigned j = 0; j < f->ndims && j < CLPE_FOOTPRINT_DIMS; ++j) {
        if (f->dims[j].count == 0)
            return false;
        if (f->dims[j].count > 1)
            dims[n++] = f->dims[j];
    }
    for (int a = 1; a < n; ++a) /* insertion sort by pitch */
        for (int b = a; b > 0 && dims[b].pitch < dims[b - 1].pitch; --b) {
            clpe_stride t = dims[b];
            dims[b] = dims[b - 1];
            dims[b - 1] = t;
        }
    uint64_t width = f->width;
    if (width >= SPAN_MAX) {
        *ok = false;
        return true;
    }
    int m = 0;
    for (int j = 0; j < n; ++j) {
        uint64_t count = dims[j].count, pitch = dims[j].pitch, span = 0;
        if (__builtin_mul_overflow(count - 1, pitch, &span) || span >= SPAN_MAX) {
            *ok = false;
            return true;
        }
        if (m == 0 && pitch <= width) { /* runs that touch or overlap: one run */
            width += span;
            if (width >= SPAN_MAX) {
                *ok = false;
                return true;
            }
            continue;
        }
        if (m > 0 && (uint64_t)out->pitch[m - 1] * (uint64_t)out->count[m - 1] == pitch) {
            out->count[m - 1] *= (int64_t)count; /* continues the previous dimension */
            continue;
        }
        out->count[m] = (int64_t)count;
        out->pitch[m] = (int64_t)pitch;
        ++m;
    }
    out->n = m;
    out->width = (int64_t)width;
    int64_t inner = out->width;
    for (int j = 0; j < m; ++j) {
        uint64_t span = (uint64_t)(out->count[j] - 1) * (uint64_t)out->pitch[j] + (uint64_t)inner;
        if (span >= SPAN_MAX) {
            *ok = false;
            return true;
        }
        out->span[j] = inner = (int64_t)span;
    }
    return true;
}

static int64_t floor_div(int64_t a, int64_t b) /* b > 0 */
{
    int64_t q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

static int64_t ceil_div(int64_t a, int64_t b) /* b > 0 */
{
    int64_t q = a / b;
    return (a % b != 0 && a > 0) ? q + 1 : q;
}

/* Bytes from the first to past the last of the innermost n dimensions. */
static int64_t span_of(const normal *f, int n)
{
    return n ? f->span[n - 1] : f->width;
}

/* Do the innermost na dimensions of a at oa and nb of b at ob share a byte? */
static bool meet(const normal *a, int na, int64_t oa, const normal *b, int nb, int64_t ob,
                 int *budget)
{
    if (--*budget < 0)
        return true;
    if (oa >= ob + span_of(b, nb) || ob >= oa + span_of(a, na))
        return false;
    if (na == 0 && nb == 0)
        return true;
    int64_t pa = na ? a->pitch[na - 1] : 0, pb = nb ? b->pitch[nb - 1] : 0;
    if (pa == pb) {
        /* entries i of a and i + m of b meet only if
         * -inner_b < (ob - oa) + m * P < inner_a */
        int64_t p = pa, ia = span_of(a, na - 1), ib = span_of(b, nb - 1);
        int64_t d = ob - oa;
        int64_t lo = floor_div(-ib - d, p) + 1, hi = ceil_div(ia - d, p) - 1;
        if (lo < 1 - a->count[na - 1])
            lo = 1 - a->count[na - 1];
        if (hi > b->count[nb - 1] - 1)
            hi = b->count[nb - 1] - 1;
        for (int64_t m = lo; m <= hi; ++m)
            if (meet(a, na - 1, oa, b, nb - 1, ob + m * p, budget))
                return true;
        return false;
    }
    if (pa < pb) { /* cut the footprint with the larger outer pitch */
        const normal *t = a;
        a = b;
        b = t;
        int tn = na;
        na = nb;
        nb = tn;
        int64_t to = oa;
        oa = ob;
        ob = to;
        pa = pb;
    }
    int64_t ia = span_of(a, na - 1), end_b = ob + span_of(b, nb);
    int64_t lo = floor_div(ob - oa - ia, pa) + 1, hi = ceil_div(end_b - oa, pa) - 1;
    if (lo < 0)
        lo = 0;
    if (hi > a->count[na - 1] - 1)
        hi = a->count[na - 1] - 1;
    for (int64_t i = lo; i <= hi; ++i)
        if (meet(a, na - 1, oa + i * pa, b, nb, ob, budget))
            return true;
    return false;
}

bool clpe__footprints_overlap(const clpe_footprint *a, uint64_t a_base, const clpe_footprint *b,
                              uint64_t b_base)
{
    normal na, nb;
    bool ok_a, ok_b;
    if (!normalize(a, &na, &ok_a) || !normalize(b, &nb, &ok_b))
        return false; /* an empty set meets nothing */
    uint64_t oa, ob;
    if (!ok_a || !ok_b || __builtin_add_overflow(a_base, a->offset, &oa) ||
        __builtin_add_overflow(b_base, b->offset, &ob))
        return true;
    /* bounding ranges first, in unsigned arithmetic: the two may be far apart */
    uint64_t end_a = oa + (uint64_t)span_of(&na, na.n), end_b = ob + (uint64_t)span_of(&nb, nb.n);
    if (end_a < oa || end_b < ob)
        return true;
    if (oa >= end_b || ob >= end_a)
        return false;
    /* they intersect, so their distance is below the larger span */
    uint64_t low = oa < ob ? oa : ob;
    int budget = STEP_BUDGET;
    return meet(&na, na.n, (int64_t)(oa - low), &nb, nb.n, (int64_t)(ob - low), &budget);
}

clpe_footprint clpe__footprint_bytes(size_t offset, size_t width)
{
    clpe_footprint f;
    memset(&f, 0, sizeof f);
    f.offset = offset;
    f.width = width;
    return f;
}

clpe_footprint clpe__footprint_region(const clpe_region *r, size_t d, size_t esize, size_t batch,
                                      size_t seq)
{
    /* a resolved region's pitches times esize fit: its end_bytes did */
    clpe_footprint f = clpe__footprint_bytes(r->offset * esize, d * esize);
    f.ndims = 2;
    f.dims[0] = (clpe_stride){seq, seq > 1 ? r->row_pitch * esize : 0};
    f.dims[1] = (clpe_stride){batch, batch > 1 ? r->batch_pitch * esize : 0};
    return f;
}

clpe_footprint clpe__strided_footprint(size_t offset, size_t width, const clpe_stride *dims,
                                       unsigned ndims, size_t esize)
{
    /* the callers resolved these layouts: every pitch of a dimension of two
     * or more entries, times esize, is below the layout's end, which fit */
    clpe_footprint f = clpe__footprint_bytes(offset * esize, width * esize);
    f.ndims = ndims;
    for (unsigned j = 0; j < ndims; ++j)
        f.dims[j] = (clpe_stride){dims[j].count, dims[j].count > 1 ? dims[j].pitch * esize : 0};
    return f;
}

/* ---- operands ---- */

/* Where a cl_mem's storage lives: the memory object it is carved from (its
 * parent for a sub-buffer; for CL_MEM_USE_HOST_PTR, host memory itself) and
 * the bytes [start, start + size) it covers there. */
typedef struct storage {
    const void *root;
    uint64_t start;
    size_t size;
    cl_mem_flags flags;
} storage;

/* Stands for host memory as the root of CL_MEM_USE_HOST_PTR buffers. */
static const char host_memory_root = 0;

static clpe_status storage_of(cl_mem m, storage *s)
{
    void *host = NULL;
    cl_mem parent = NULL;
    size_t origin = 0;
    cl_int err = clGetMemObjectInfo(m, CL_MEM_FLAGS, sizeof s->flags, &s->flags, NULL);
    if (err == CL_SUCCESS)
        err = clGetMemObjectInfo(m, CL_MEM_SIZE, sizeof s->size, &s->size, NULL);
    if (err == CL_SUCCESS)
        err = clGetMemObjectInfo(m, CL_MEM_HOST_PTR, sizeof host, &host, NULL);
    if (err == CL_SUCCESS)
        err = clGetMemObjectInfo(m, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof parent, &parent, NULL);
    if (err == CL_SUCCESS && parent)
        err = clGetMemObjectInfo(m, CL_MEM_OFFSET, sizeof origin, &origin, NULL);
    if (err != CL_SUCCESS)
        return err;
    if ((s->flags & CL_MEM_USE_HOST_PTR) && host) {
        s->root = &host_memory_root;
        s->start = (uint64_t)(uintptr_t)host;
    } else if (parent) {
        s->root = parent;
        s->start = origin;
    } else {
        s->root = m;
        s->start = 0;
    }
    return CLPE_SUCCESS;
}

static bool present(const clpe_operand *op)
{
    return op->buffer || op->host;
}

/* Do two operands, one of them written, collide? */
static bool collide(const clpe_operand *a, const storage *sa, const clpe_operand *b,
                    const storage *sb)
{
    if (!a->buffer != !b->buffer)
        return false; /* host memory and a buffer: no call takes both */
    if (!a->buffer)
        return clpe__footprints_overlap(&a->bytes, (uint64_t)(uintptr_t)a->host, &b->bytes,
                                        (uint64_t)(uintptr_t)b->host);
    if (a->buffer == b->buffer)
        return clpe__footprints_overlap(&a->bytes, 0, &b->bytes, 0);
    if (sa->root != sb->root)
        return false;
    return sa->start < sb->start + sb->size && sb->start < sa->start + sa->size;
}

clpe_status clpe__check_operands(const clpe_operand *ops, size_t count)
{
    enum { MAX_OPERANDS = 12 };
    storage st[MAX_OPERANDS];
    if (count > MAX_OPERANDS)
        return CLPE_ERROR_TOO_LARGE;
    for (size_t j = 0; j < count; ++j) {
        if (!ops[j].buffer)
            continue;
        clpe_status status = storage_of(ops[j].buffer, &st[j]);
        if (status != CLPE_SUCCESS)
            return status;
        if (((ops[j].access & CLPE_ACCESS_WRITE) && (st[j].flags & CL_MEM_READ_ONLY)) ||
            ((ops[j].access & CLPE_ACCESS_READ) && (st[j].flags & CL_MEM_WRITE_ONLY)))
            return CLPE_ERROR_BUFFER_ACCESS;
    }
    for (size_t j = 0; j < count; ++j)
        for (size_t k = j + 1; k < count; ++k)
            if (present(&ops[j]) && present(&ops[k]) &&
                ((ops[j].access | ops[k].access) & CLPE_ACCESS_WRITE) &&
                collide(&ops[j], &st[j], &ops[k], &st[k]))
                return CLPE_ERROR_ALIASING;
    return CLPE_SUCCESS;
}
