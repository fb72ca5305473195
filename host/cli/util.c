/*
 * util.c - what the clpe tool's commands share (see cli.h): messages,
 * device opening, configuration from flags, element decoding and output
 * files that appear only when complete.
 */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("clpe: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

void cli_status_error(const char *what, clpe_status status)
{
    cli_error("%s: %s (%d)", what, clpe_status_string(status), (int)status);
}

double cli_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- devices ------------------------------------------------------------------ */

void cli_device_string(cl_device_id dev, cl_device_info what, char *buf, size_t cap)
{
    if (cap == 0)
        return;
    buf[0] = '\0';
    if (clGetDeviceInfo(dev, what, cap, buf, NULL) != CL_SUCCESS)
        buf[0] = '\0';
    buf[cap - 1] = '\0';
    /* Some drivers pad names with spaces. */
    size_t n = strlen(buf);
    while (n && buf[n - 1] == ' ')
        buf[--n] = '\0';
}

int cli_device_open_id(cl_platform_id platform, cl_device_id device, cli_device *dev)
{
    memset(dev, 0, sizeof *dev);
    dev->platform = platform;
    dev->device = device;
    cli_device_string(device, CL_DEVICE_NAME, dev->name, sizeof dev->name);
    if (clGetPlatformInfo(platform, CL_PLATFORM_NAME, sizeof dev->platform_name,
                          dev->platform_name, NULL) != CL_SUCCESS)
        dev->platform_name[0] = '\0';
    dev->platform_name[sizeof dev->platform_name - 1] = '\0';

    cl_int err = CL_SUCCESS;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)platform, 0};
    dev->context = clCreateContext(props, 1, &device, NULL, NULL, &err);
    if (!dev->context) {
        cli_status_error("cannot create an OpenCL context", err);
        return CLI_EXIT_RUNTIME;
    }
    dev->queue = clCreateCommandQueue(dev->context, device, 0, &err);
    if (!dev->queue) {
        cli_status_error("cannot create an OpenCL command queue", err);
        clReleaseContext(dev->context);
        dev->context = NULL;
        return CLI_EXIT_RUNTIME;
    }
    return CLI_EXIT_OK;
}

int cli_device_open(const char *selector, cli_device *dev)
{
    cl_platform_id platform = NULL;
    cl_device_id device = NULL;
    memset(dev, 0, sizeof *dev);
    clpe_status st = clpe_select_device(selector, &platform, &device);
    if (st == CLPE_ERROR_NO_DEVICE) {
        const char *env = getenv("CLPE_DEVICE");
        if (selector && *selector)
            cli_error("--device '%s' matches no OpenCL device (see 'clpe devices')", selector);
        else if (env && *env)
            cli_error("CLPE_DEVICE='%s' matches no OpenCL device (see 'clpe devices')", env);
        else
            cli_error("no OpenCL device found (is an OpenCL driver such as PoCL installed?)");
        return CLI_EXIT_RUNTIME;
    }
    if (st != CLPE_SUCCESS) {
        cli_status_error("cannot list OpenCL devices", st);
        return CLI_EXIT_RUNTIME;
    }
    return cli_device_open_id(platform, device, dev);
}

void cli_device_close(cli_device *dev)
{
    if (dev->queue)
        clReleaseCommandQueue(dev->queue);
    if (dev->context)
        clReleaseContext(dev->context);
    dev->queue = NULL;
    dev->context = NULL;
}

/* Test-only: is dtype listed in CLPE_CLI_HIDE_DTYPES? */
static int dtype_hidden(int dtype)
{
    const char *list = getenv("CLPE_CLI_HIDE_DTYPES");
    if (!list || !*list)
        return 0;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", list);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
        if (cli_dtype_from_name(tok) == dtype)
            return 1;
    return 0;
}

int cli_device_supports(cl_device_id dev, int dtype)
{
    if (dtype_hidden(dtype))
        return 0;
    return clpe_device_supports_dtype(dev, (clpe_dtype)dtype) != 0;
}

/* ---- configuration ------------------------------------------------------------ */

int cli_config_from_args(const cli_args *a, clpe_config *cfg, int64_t *first_position)
{
    int64_t first = 0;
    if (a->preset) {
        clpe_status st = clpe_config_preset(a->preset, a->d, cfg, &first);
        if (st == CLPE_ERROR_UNKNOWN_PRESET) {
            cli_error("--preset must be vaswani, tensor2tensor, fairseq, marian or opennmt-tf, "
                      "got '%s'", a->preset);
            return CLI_EXIT_USAGE;
        }
        if (st == CLPE_ERROR_INVALID_D) {
            cli_error("--d %u is not valid for --preset %s", (unsigned)a->d, a->preset);
            return CLI_EXIT_USAGE;
        }
        if (st != CLPE_SUCCESS) {
            cli_status_error("--preset", st);
            return CLI_EXIT_USAGE;
        }
    } else {
        *cfg = clpe_config_default(a->d);
        /* Fields the default may leave unset: start from a known state. */
        cfg->flags = 0;
        cfg->padding_position = 0;
    }
    if (a->have_base)
        cfg->base = a->base;
    if (a->freq != CLI_UNSET)
        cfg->freq = (clpe_freq)a->freq;
    if (a->layout != CLI_UNSET)
        cfg->layout = (clpe_layout)a->layout;
    if (a->dtype != CLI_UNSET)
        cfg->dtype = (clpe_dtype)a->dtype;
    *first_position = a->have_start ? a->start : first;

    clpe_status st = clpe_config_check(cfg);
    switch (st) {
    case CLPE_SUCCESS:
        return CLI_EXIT_OK;
    case CLPE_ERROR_INVALID_D:
        if (cfg->d & 1u)
            cli_error("--d must be even, got %u", (unsigned)cfg->d);
        else
            cli_error("--d must be between 2 and %u, got %u", (unsigned)CLPE_MAX_D,
                      (unsigned)cfg->d);
        return CLI_EXIT_USAGE;
    case CLPE_ERROR_INVALID_BASE:
        cli_error("--base must be a finite number above 1, got %g", cfg->base);
        return CLI_EXIT_USAGE;
    case CLPE_ERROR_UNSUPPORTED_DTYPE:
        cli_error("--dtype %s is not supported by this build of the clpe library",
                  cli_dtype_name(cfg->dtype));
        return CLI_EXIT_RUNTIME;
    default:
        cli_status_error("invalid configuration", st);
        return CLI_EXIT_USAGE;
    }
}

clpe_encoder *cli_encoder_create(const cli_device *dev, const clpe_config *cfg)
{
    char log[8192];
    clpe_build_log bl = {log, sizeof log, 0};
    clpe_status st = CLPE_SUCCESS;
    log[0] = '\0';
    clpe_encoder *enc = clpe_encoder_create(dev->context, dev->device, cfg, &bl, &st);
    if (enc)
        return enc;
    if (st == CLPE_ERROR_UNSUPPORTED_DTYPE) {
        cli_error("device '%s' does not support --dtype %s", dev->name,
                  cli_dtype_name(cfg->dtype));
    } else if (st == CLPE_ERROR_DEVICE_UNSUPPORTED) {
        cli_error("device '%s' cannot run clpe: %s", dev->name, clpe_status_string(st));
    } else {
        char what[320];
        snprintf(what, sizeof what, "cannot create an encoder on '%s'", dev->name);
        cli_status_error(what, st);
        if (bl.length > 1)
            fprintf(stderr, "%s\n", log);
    }
    return NULL;
}

/* ---- output files ------------------------------------------------------------- */

/* The one temporary file a signal must remove. A signal handler can only
 * reach static storage; the tool writes one output file at a time. */
static char signal_tmp_path[4096];
static volatile sig_atomic_t signal_tmp_armed;

static void on_signal(int sig)
{
    if (signal_tmp_armed)
        unlink(signal_tmp_path);
    signal(sig, SIG_DFL);
    raise(sig);
}

static void arm_signals(const char *tmp)
{
    if (strlen(tmp) >= sizeof signal_tmp_path)
        return;
    memcpy(signal_tmp_path, tmp, strlen(tmp) + 1);
    signal_tmp_armed = 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
}

static void disarm_signals(void)
{
    signal_tmp_armed = 0;
}

int cli_outfile_open(cli_outfile *o, const char *path, const char *flag)
{
    memset(o, 0, sizeof *o);
    size_t len = strlen(path);
    if (len == 0 || path[len - 1] == '/') {
        cli_error("cannot write %s '%s': not a file name", flag, path);
        return CLI_EXIT_RUNTIME;
    }
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        cli_error("cannot write %s '%s': it is a directory", flag, path);
        return CLI_EXIT_RUNTIME;
    }
    /* dir/.name.tmp-XXXXXX: same directory, so the rename is atomic. */
    const char *slash = strrchr(path, '/');
    size_t dir_len = slash ? (size_t)(slash - path + 1) : 0;
    o->final_path = malloc(len + 1);
    o->tmp_path = malloc(len + 16);
    if (!o->final_path || !o->tmp_path) {
        cli_error("out of memory");
        cli_outfile_abort(o);
        return CLI_EXIT_RUNTIME;
    }
    memcpy(o->final_path, path, len + 1);
    memcpy(o->tmp_path, path, dir_len);
    snprintf(o->tmp_path + dir_len, len + 16 - dir_len, ".%s.tmp-XXXXXX", path + dir_len);
    int fd = mkstemp(o->tmp_path);
    if (fd < 0) {
        cli_error("cannot write %s '%s': %s", flag, path, strerror(errno));
        free(o->tmp_path);
        o->tmp_path = NULL;
        cli_outfile_abort(o);
        return CLI_EXIT_RUNTIME;
    }
    arm_signals(o->tmp_path);
    /* mkstemp makes the file 0600; give it the permissions a plain fopen
     * would have (0666 less the umask). */
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, 0666 & ~mask);
    o->f = fdopen(fd, "wb");
    if (!o->f) {
        cli_error("cannot write %s '%s': %s", flag, path, strerror(errno));
        close(fd);
        cli_outfile_abort(o);
        return CLI_EXIT_RUNTIME;
    }
    return CLI_EXIT_OK;
}

int cli_outfile_commit(cli_outfile *o, const char *flag)
{
    int bad = ferror(o->f);
    int saved = errno;
    if (fclose(o->f) != 0 && !bad) {
        bad = 1;
        saved = errno;
    }
    o->f = NULL;
    if (bad) {
        cli_error("cannot write %s '%s': %s", flag, o->final_path,
                  saved ? strerror(saved) : "write error");
        cli_outfile_abort(o);
        return CLI_EXIT_RUNTIME;
    }
    if (rename(o->tmp_path, o->final_path) != 0) {
        cli_error("cannot write %s '%s': %s", flag, o->final_path, strerror(errno));
        cli_outfile_abort(o);
        return CLI_EXIT_RUNTIME;
    }
    disarm_signals();
    free(o->tmp_path);
    free(o->final_path);
    memset(o, 0, sizeof *o);
    return CLI_EXIT_OK;
}

void cli_outfile_abort(cli_outfile *o)
{
    if (o->f)
        fclose(o->f);
    if (o->tmp_path) {
        unlink(o->tmp_path);
        disarm_signals();
    }
    free(o->tmp_path);
    free(o->final_path);
    memset(o, 0, sizeof *o);
}
