/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_devices.c - `clpe devices`: every OpenCL device, numbered the way
 * clpe_select_device counts them, with the default marked.
 */
#include "cli.h"

#include "common/json.h"

#include <stdlib.h>
#include <string.h>

/* "OpenCL 3.0 PoCL ..." -> "3.0" */
static void opencl_version(cl_device_id dev, char *out, size_t cap)
{
    char buf[256];
    cli_device_string(dev, CL_DEVICE_VERSION, buf, sizeof buf);
    const char *p = strncmp(buf, "OpenCL ", 7) == 0 ? buf + 7 : buf;
    size_t n = strcspn(p, " ");
    if (n >= cap)
        n = cap - 1;
    memcpy(out, p, n);
    out[n] = '\0';
}

static int has_extension(cl_device_id dev, const char *name)
{
    size_t size = 0;
    if (clGetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, 0, NULL, &size) != CL_SUCCESS || size == 0)
        return 0;
    char *ext = malloc(size + 1);
    if (!ext)
        return 0;
    int found = 0;
    if (clGetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, size, ext, NULL) == CL_SUCCESS) {
        ext[size] = '\0';
        size_t n = strlen(name);
        for (const char *p = ext; (p = strstr(p, name)) != NULL; p += n)
            if ((p == ext || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
                found = 1;
    }
    free(ext);
    return found;
}

static const char *type_name(cl_device_id dev)
{
    cl_device_type t = 0;
    if (clGetDeviceInfo(dev, CL_DEVICE_TYPE, sizeof t, &t, NULL) != CL_SUCCESS)
        return "?";
    if (t & CL_DEVICE_TYPE_GPU) return "gpu";
    if (t & CL_DEVICE_TYPE_CPU) return "cpu";
    if (t & CL_DEVICE_TYPE_ACCELERATOR) return "accel";
    return "other";
}

/* The tuning row in effect for a device, as one line under its row. */
static void print_tuning(const clpe_device_tuning *t)
{
    printf("     tuning %s: pairs/item %u (f16/bf16 rows %u, rope %u), rows/item %u, "
           "work-group %u, tile walk %s (%u pairs), ahead %u (16-bit %u) steps, "
           "prefetch for write %s, bfloat16 on halves %s\n",
           t->row, t->pairs_per_item, t->pairs_per_item_rows16, t->pairs_per_item_rope16,
           t->rows_per_item, t->work_group_size, t->tile_walk ? "on" : "off", t->tile_pairs,
           t->ahead_steps, t->ahead_steps16, t->prefetch_for_write ? "yes" : "no",
           t->bf16_halves ? "yes" : "no");
}

static void json_tuning(FILE *f, const clpe_device_tuning *t)
{
    fprintf(f, "{\"row\": ");
    json_string(f, t->row);
    fprintf(f,
            ", \"pairs_per_item\": %u, \"pairs_per_item_rows16\": %u, "
            "\"pairs_per_item_rope16\": %u, \"rows_per_item\": %u, \"work_group_size\": %u, "
            "\"tile_walk\": %s, \"tile_pairs\": %u, \"ahead_steps\": %u, "
            "\"ahead_steps16\": %u, \"prefetch_for_write\": %s, \"bf16_halves\": %s}",
            t->pairs_per_item, t->pairs_per_item_rows16, t->pairs_per_item_rope16,
            t->rows_per_item, t->work_group_size, t->tile_walk ? "true" : "false",
            t->tile_pairs, t->ahead_steps, t->ahead_steps16,
            t->prefetch_for_write ? "true" : "false", t->bf16_halves ? "true" : "false");
}

int cli_cmd_devices(const cli_args *args)
{
    cl_uint np = 0;
    cl_int err = clGetPlatformIDs(0, NULL, &np);
    if (err == -1001 /* CL_PLATFORM_NOT_FOUND_KHR */ || (err == CL_SUCCESS && np == 0)) {
        cli_error("no OpenCL platform found (is an OpenCL driver such as PoCL installed?)");
        return CLI_EXIT_RUNTIME;
    }
    if (err != CL_SUCCESS) {
        cli_status_error("cannot list OpenCL platforms", err);
        return CLI_EXIT_RUNTIME;
    }
    cli_outfile json;
    memset(&json, 0, sizeof json);
    int rc = CLI_EXIT_OK;
    if (args->json && (rc = cli_outfile_open(&json, args->json, "--json")) != CLI_EXIT_OK)
        return rc;
    cl_platform_id *plats = malloc(np * sizeof *plats);
    if (!plats || clGetPlatformIDs(np, plats, NULL) != CL_SUCCESS) {
        free(plats);
        cli_outfile_abort(&json);
        cli_error("cannot list OpenCL platforms");
        return CLI_EXIT_RUNTIME;
    }
    cl_platform_id def_plat = NULL;
    cl_device_id def_dev = NULL;
    int have_default = clpe_select_device(NULL, &def_plat, &def_dev) == CLPE_SUCCESS;
    if (args->json)
        fprintf(json.f, "{\n  \"clpe_version\": \"%s\",\n  \"devices\": [",
                clpe_version_string());

    printf("  #  type   OpenCL  fp16  fp64     memory  device [platform, vendor]\n");
    unsigned index = 0;
    for (cl_uint p = 0; p < np; ++p) {
        char pname[256] = "";
        if (clGetPlatformInfo(plats[p], CL_PLATFORM_NAME, sizeof pname, pname, NULL) != CL_SUCCESS)
            pname[0] = '\0';
        pname[sizeof pname - 1] = '\0';
        cl_uint nd = 0;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd) != CL_SUCCESS || nd == 0)
            continue;
        cl_device_id *devs = malloc(nd * sizeof *devs);
        if (!devs || clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, nd, devs, NULL) != CL_SUCCESS) {
            free(devs);
            continue;
        }
        for (cl_uint k = 0; k < nd; ++k, ++index) {
            char name[256], vendor[256], ver[32];
            cli_device_string(devs[k], CL_DEVICE_NAME, name, sizeof name);
            cli_device_string(devs[k], CL_DEVICE_VENDOR, vendor, sizeof vendor);
            opencl_version(devs[k], ver, sizeof ver);
            cl_ulong mem = 0;
            clGetDeviceInfo(devs[k], CL_DEVICE_GLOBAL_MEM_SIZE, sizeof mem, &mem, NULL);
            int is_default = have_default && devs[k] == def_dev;
            int fp16 = has_extension(devs[k], "cl_khr_fp16");
            int fp64 = has_extension(devs[k], "cl_khr_fp64");
            printf("%c%2u  %-5s  %-6s  %-4s  %-4s  %6.1f GiB  %s [%s, %s]\n",
                   is_default ? '*' : ' ', index, type_name(devs[k]), ver, fp16 ? "yes" : "no",
                   fp64 ? "yes" : "no", (double)mem / (1024.0 * 1024.0 * 1024.0), name, pname,
                   vendor);
            clpe_device_tuning tuning;
            clpe_status tstatus = clpe_get_device_tuning(devs[k], &tuning);
            if (args->verbose) {
                if (tstatus == CLPE_SUCCESS)
                    print_tuning(&tuning);
                else
                    printf("     tuning: cannot be read (%s)\n", clpe_status_string(tstatus));
            }
            if (args->json) {
                FILE *f = json.f;
                fprintf(f, "%s\n    {\"index\": %u, \"default\": %s, \"type\": \"%s\", \"name\": ",
                        index ? "," : "", index, is_default ? "true" : "false",
                        type_name(devs[k]));
                json_string(f, name);
                fprintf(f, ", \"platform\": ");
                json_string(f, pname);
                fprintf(f, ", \"vendor\": ");
                json_string(f, vendor);
                fprintf(f, ", \"opencl\": ");
                json_string(f, ver);
                fprintf(f, ", \"fp16\": %s, \"fp64\": %s, \"global_memory\": %llu, \"tuning\": ",
                        fp16 ? "true" : "false", fp64 ? "true" : "false",
                        (unsigned long long)mem);
                if (tstatus == CLPE_SUCCESS)
                    json_tuning(f, &tuning);
                else
                    fprintf(f, "null");
                fputc('}', f);
            }
        }
        free(devs);
    }
    free(plats);
    if (index == 0) {
        cli_outfile_abort(&json);
        cli_error("no OpenCL device found");
        return CLI_EXIT_RUNTIME;
    }
    const char *env = getenv("CLPE_DEVICE");
    if (!have_default)
        printf("CLPE_DEVICE='%s' matches no device; commands will fail until it does\n",
               env ? env : "");
    else if (env && *env)
        printf("* default (CLPE_DEVICE='%s'); choose another with --device INDEX|gpu|cpu|NAME\n",
               env);
    else
        printf("* default (the first GPU, else the first device); choose another with "
               "--device or CLPE_DEVICE\n");
    if (args->json) {
        fprintf(json.f, "\n  ]\n}\n");
        return cli_outfile_commit(&json, "--json");
    }
    return CLI_EXIT_OK;
}
