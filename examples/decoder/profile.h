/* SPDX-License-Identifier: Apache-2.0 */
/*
 * profile.h - time per kind of step, from OpenCL profiling events.
 *
 * When enabled, every command the decoder enqueues hands its event to
 * profile_event(); profile_collect() (after the queue has finished) adds up
 * each command's CL_PROFILING_COMMAND_START..END by kind and releases the
 * events. Disabled, profile_event() returns NULL and nothing is recorded.
 */
#ifndef DECODER_PROFILE_H
#define DECODER_PROFILE_H

#include <clpe.h> /* the OpenCL headers, with clpe's target version */

#include <stddef.h>

typedef enum step_kind {
    STEP_POSITION, /* clpe: gather (+ encoding), rotary, the copy into the KV cache */
    STEP_MATMUL,   /* CLBlast */
    STEP_OTHER,    /* norms, activations, attention, bias and residual adds */
    STEP_KINDS
} step_kind;

typedef struct profile {
    int enabled;
    cl_event *events;
    step_kind *kinds;
    size_t count, capacity;
    double ns[STEP_KINDS];
    size_t commands[STEP_KINDS];
    int overflow; /* an event could not be kept (out of memory): totals are short */
} profile;

/* Where the next command of this kind puts its event, or NULL. */
cl_event *profile_event(profile *p, step_kind kind);
/* Add up the events recorded since the last call; the queue must be idle. */
void profile_collect(profile *p);
/* Forget the totals (events still held are released uncounted). */
void profile_reset(profile *p);
void profile_release(profile *p);

#endif
