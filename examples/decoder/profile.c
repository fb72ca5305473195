/* SPDX-License-Identifier: Apache-2.0 */
/*
 * profile.c - summing OpenCL profiling events by kind of step.
 */
#include "profile.h"

#include <stdlib.h>
#include <string.h>

cl_event *profile_event(profile *p, step_kind kind)
{
    if (!p->enabled)
        return NULL;
    if (p->count == p->capacity) {
        size_t next = p->capacity ? p->capacity * 2 : 256;
        cl_event *events = realloc(p->events, next * sizeof *events);
        if (!events) {
            p->overflow = 1;
            return NULL;
        }
        p->events = events;
        step_kind *kinds = realloc(p->kinds, next * sizeof *kinds);
        if (!kinds) {
            p->overflow = 1;
            return NULL;
        }
        p->kinds = kinds;
        p->capacity = next;
    }
    p->kinds[p->count] = kind;
    p->events[p->count] = NULL;
    return &p->events[p->count++];
}

void profile_collect(profile *p)
{
    for (size_t i = 0; i < p->count; i++) {
        cl_event e = p->events[i];
        if (!e)
            continue; /* the command failed before it made one */
        cl_ulong start = 0, end = 0;
        if (clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_START, sizeof start, &start, NULL) ==
                CL_SUCCESS &&
            clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL) ==
                CL_SUCCESS &&
            end >= start) {
            p->ns[p->kinds[i]] += (double)(end - start);
            p->commands[p->kinds[i]]++;
        }
        clReleaseEvent(e);
    }
    p->count = 0;
}

void profile_reset(profile *p)
{
    for (size_t i = 0; i < p->count; i++)
        if (p->events[i])
            clReleaseEvent(p->events[i]);
    p->count = 0;
    memset(p->ns, 0, sizeof p->ns);
    memset(p->commands, 0, sizeof p->commands);
    p->overflow = 0;
}

void profile_release(profile *p)
{
    profile_reset(p);
    free(p->events);
    free(p->kinds);
    p->events = NULL;
    p->kinds = NULL;
    p->capacity = 0;
}
