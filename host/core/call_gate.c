/* SPDX-License-Identifier: Apache-2.0 */
/*
 * call_gate.c - all-or-nothing calls: a call of several commands holds them
 * behind a user event of its own (see clpe_call_gate in internal.h).
 */
#include "core/core.h"

#include <stdlib.h>

clpe_status clpe__gate_open(cl_context context, cl_uint num_events,
                            const cl_event *wait_list, clpe_call_gate *g)
{
    cl_int err = CL_SUCCESS;
    g->gate = NULL;
    g->wait_list = malloc((num_events + 1) * sizeof *g->wait_list);
    if (!g->wait_list)
        return CLPE_ERROR_OUT_OF_HOST_MEMORY;
    g->gate = clCreateUserEvent(context, &err);
    if (err != CL_SUCCESS) {
        free(g->wait_list);
        g->wait_list = NULL;
        g->gate = NULL;
        return err;
    }
    for (cl_uint k = 0; k < num_events; ++k)
        g->wait_list[k] = wait_list[k];
    g->wait_list[num_events] = g->gate;
    g->num_events = num_events + 1;
    return CLPE_SUCCESS;
}

void clpe__gate_close(clpe_call_gate *g, clpe_status status)
{
    if (!g->gate)
        return;
    clSetUserEventStatus(g->gate, status == CLPE_SUCCESS ? CL_COMPLETE
                                  : status < 0            ? status
                                                          : CL_INVALID_OPERATION);
    clReleaseEvent(g->gate);
    free(g->wait_list);
    g->gate = NULL;
    g->wait_list = NULL;
}

clpe_status clpe__enqueue_nothing(cl_command_queue queue, cl_uint num_events,
                                  const cl_event *wait_list, cl_event *event)
{
    if (!event)
        return CLPE_SUCCESS;
    return clEnqueueMarkerWithWaitList(queue, num_events, wait_list, event);
}
