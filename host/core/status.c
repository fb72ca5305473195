/* SPDX-License-Identifier: Apache-2.0 */
/*
 * status.c - version numbers and the text of every status.
 */
#include "core/core.h"

unsigned clpe_version(void) { return CLPE_VERSION_NUMBER; }

const char *clpe_version_string(void) { return CLPE_VERSION_STRING; }

int clpe_status_is_opencl(clpe_status status)
{
    return (status <= -1 && status >= -72) || (status <= -1000 && status >= -1200);
}

static const char *opencl_status_string(clpe_status status)
{
    switch (status) {
    case CL_DEVICE_NOT_FOUND: return "OpenCL: device not found";
    case CL_DEVICE_NOT_AVAILABLE: return "OpenCL: device not available";
    case CL_COMPILER_NOT_AVAILABLE: return "OpenCL: compiler not available";
    case CL_MEM_OBJECT_ALLOCATION_FAILURE: return "OpenCL: memory object allocation failure";
    case CL_OUT_OF_RESOURCES: return "OpenCL: out of resources";
    case CL_OUT_OF_HOST_MEMORY: return "OpenCL: out of host memory";
    case CL_PROFILING_INFO_NOT_AVAILABLE: return "OpenCL: profiling info not available";
    case CL_MEM_COPY_OVERLAP: return "OpenCL: memory copy overlap";
    case CL_BUILD_PROGRAM_FAILURE: return "OpenCL: kernel build failed (see the build log)";
    case CL_MISALIGNED_SUB_BUFFER_OFFSET: return "OpenCL: misaligned sub-buffer offset";
    case CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST:
        return "OpenCL: an event in the wait list failed";
    case CL_INVALID_VALUE: return "OpenCL: invalid value";
    case CL_INVALID_DEVICE: return "OpenCL: invalid device";
    case CL_INVALID_CONTEXT: return "OpenCL: invalid context";
    case CL_INVALID_COMMAND_QUEUE: return "OpenCL: invalid command queue";
    case CL_INVALID_MEM_OBJECT: return "OpenCL: invalid memory object";
    case CL_INVALID_PROGRAM: return "OpenCL: invalid program";
    case CL_INVALID_PROGRAM_EXECUTABLE: return "OpenCL: invalid program executable";
    case CL_INVALID_KERNEL_NAME: return "OpenCL: invalid kernel name";
    case CL_INVALID_KERNEL: return "OpenCL: invalid kernel";
    case CL_INVALID_ARG_INDEX: return "OpenCL: invalid kernel argument index";
    case CL_INVALID_ARG_VALUE: return "OpenCL: invalid kernel argument value";
    case CL_INVALID_ARG_SIZE: return "OpenCL: invalid kernel argument size";
    case CL_INVALID_KERNEL_ARGS: return "OpenCL: kernel arguments not set";
    case CL_INVALID_WORK_DIMENSION: return "OpenCL: invalid work dimension";
    case CL_INVALID_WORK_GROUP_SIZE: return "OpenCL: invalid work-group size";
    case CL_INVALID_WORK_ITEM_SIZE: return "OpenCL: invalid work-item size";
    case CL_INVALID_GLOBAL_OFFSET: return "OpenCL: invalid global offset";
    case CL_INVALID_EVENT_WAIT_LIST: return "OpenCL: invalid event wait list";
    case CL_INVALID_EVENT: return "OpenCL: invalid event";
    case CL_INVALID_OPERATION: return "OpenCL: invalid operation";
    case CL_INVALID_BUFFER_SIZE: return "OpenCL: invalid buffer size";
    case CL_INVALID_GLOBAL_WORK_SIZE: return "OpenCL: invalid global work size";
    case CL_INVALID_PROPERTY: return "OpenCL: invalid property";
    case CL_INVALID_BUILD_OPTIONS: return "OpenCL: invalid build options";
    case CL_INVALID_PLATFORM: return "OpenCL: invalid platform";
    case CL_INVALID_DEVICE_TYPE: return "OpenCL: invalid device type";
    case -1001: return "OpenCL: no platform found (is an ICD installed?)";
    default: return "OpenCL: error";
    }
}

const char *clpe_status_string(clpe_status status)
{
    switch (status) {
    case CLPE_SUCCESS: return "success";
    case CLPE_ERROR_NULL_ENCODER: return "encoder is NULL";
    case CLPE_ERROR_NULL_QUEUE: return "command queue is NULL";
    case CLPE_ERROR_NULL_BUFFER: return "buffer is NULL";
    case CLPE_ERROR_NULL_POINTER: return "a required pointer is NULL";
    case CLPE_ERROR_INVALID_D: return "d must be even and between 2 and 2^24";
    case CLPE_ERROR_INVALID_BASE: return "base must be finite and greater than 1";
    case CLPE_ERROR_INVALID_SCALE:
        return "scale must be finite (an FP8 KV cache's key_scale and value_scale: positive)";
    case CLPE_ERROR_INVALID_CONFIG: return "unknown frequency convention, layout or dtype";
    case CLPE_ERROR_UNSUPPORTED_DTYPE: return "dtype not supported here";
    case CLPE_ERROR_INVALID_PITCH: return "row pitch below d, or sequences overlap";
    case CLPE_ERROR_BUFFER_TOO_SMALL: return "buffer too small for the region";
    case CLPE_ERROR_POSITION_OVERFLOW: return "position overflows int64";
    case CLPE_ERROR_CONTEXT_MISMATCH: return "queue, buffer or event from another OpenCL context";
    case CLPE_ERROR_DEVICE_MISMATCH: return "queue belongs to another device";
    case CLPE_ERROR_DEVICE_UNSUPPORTED:
        return "device lacks 64-bit integers or the full profile";
    case CLPE_ERROR_INVALID_WAIT_LIST:
        return "event wait list and its count disagree, or an entry is not an event";
    case CLPE_ERROR_MISALIGNED_OFFSET: return "byte offset not a multiple of the element size";
    case CLPE_ERROR_INVALID_POSITIONS: return "unknown position source, or its buffer missing";
    case CLPE_ERROR_INDEX_BUFFER_TOO_SMALL: return "position buffer too small";
    case CLPE_ERROR_HOST_ONLY: return "host-only encoder cannot enqueue";
    case CLPE_ERROR_OUT_OF_HOST_MEMORY: return "out of host memory";
    case CLPE_ERROR_NO_DEVICE: return "no matching OpenCL device";
    case CLPE_ERROR_TOO_LARGE: return "size too large";
    case CLPE_ERROR_DTYPE_MISMATCH: return "embedding table dtype differs from the encoder's";
    case CLPE_ERROR_ALIASING: return "input and output share a buffer but not a layout";
    case CLPE_ERROR_UNKNOWN_PRESET: return "unknown preset name";
    case CLPE_ERROR_INVALID_IDS: return "token-id buffer missing, misaligned or too small";
    case CLPE_ERROR_RESERVED_FIELD: return "a reserved struct field is not zero";
    case CLPE_ERROR_INVALID_ROPE: return "rotary: invalid head_dim, rotary_dim, pairing or heads";
    case CLPE_ERROR_INVALID_SCALING: return "rotary: unknown scaling or a scaling parameter out of range";
    case CLPE_ERROR_BUFFER_ACCESS:
        return "a buffer's CL_MEM_READ_ONLY or CL_MEM_WRITE_ONLY flag forbids this use of it";
    case CLPE_ERROR_INVALID_SLOTS: return "KV cache: a slot out of range, or two tokens on one slot";
    default:
        return clpe_status_is_opencl(status) ? opencl_status_string(status) : "unknown status";
    }
}
