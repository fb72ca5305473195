/* SPDX-License-Identifier: Apache-2.0 */
/*
 * main.c - the clpe command-line tool: parse, print help or version, and
 * run one command. Everything here is a client of the public API.
 */
#include "cli.h"
#include "signals.h"

#include <stdio.h>
#include <string.h>

static const char GENERAL_HELP[] =
    "usage: clpe COMMAND [FLAGS]\n"
    "\n"
    "Exact sinusoidal position encoding on any OpenCL device.\n"
    "\n"
    "commands:\n"
    "  devices     list OpenCL platforms and devices, and which one is the default\n"
    "  table       print the encoding of a few positions\n"
    "  encode      write the [N, D] encoding of N positions to a .npy file\n"
    "  check       verify every output bit of a device against the host emulation\n"
    "  plot        draw the encoding and its dot-product similarity to a PNG\n"
    "  rope-cache  write the rotary cos/sin cache of N positions to two .npy files\n"
    "\n"
    "  clpe COMMAND --help   flags of one command\n"
    "  clpe --version        versions of the tool and the library\n"
    "\n"
    "Devices are chosen by --device SEL (an index from 'clpe devices', gpu, cpu, or\n"
    "part of a platform, device or vendor name) or the CLPE_DEVICE environment\n"
    "variable; otherwise the first GPU, else the first device.\n"
    "Numbers are decimal: leading zeros are ignored (010 is ten), 0x is refused.\n"
    "Exit status: 0 success, 1 runtime failure (device, I/O, failed check), 2 usage.\n";

#define CONFIG_FLAGS                                                                  \
    "  --d D              model width: even, 2 .. 16777216 (required)\n"              \
    "  --base B           frequency base, > 1 (default 10000)\n"                      \
    "  --freq paper|t2t   frequencies: paper base^(-2i/d) (default), or\n"            \
    "                     tensor2tensor base^(-i/(d/2-1))\n"                          \
    "  --layout interleaved|split|cos-first\n"                                        \
    "                     sin,cos pairs side by side (default), all sines first,\n"   \
    "                     or all cosines first (Hugging Face Musicgen)\n"             \
    "  --dtype f32|f16|bf16|f64\n"                                                    \
    "                     element type (default f32)\n"                               \
    "  --preset NAME      a framework's convention: vaswani, tensor2tensor, fairseq,\n" \
    "                     marian, opennmt-tf, xlm, musicgen (sets --freq, --layout\n" \
    "                     and the first position; some allow odd --d)\n"            \
    "  --padding-idx N    fairseq's padding_idx: position N's row is all zeros and\n" \
    "                     the first position is N+1 unless --start is given (with\n" \
    "                     any preset or none; fairseq's own is 1)\n"                 \
    "  --device SEL       device selector (see 'clpe --help')\n"

static const char DEVICES_HELP[] =
    "usage: clpe devices [--verbose] [--json FILE]\n"
    "\n"
    "List every OpenCL device with the index --device accepts, its platform, vendor,\n"
    "OpenCL version, fp16/fp64 support, global memory, and which device a command\n"
    "uses by default (marked '*'; CLPE_DEVICE changes it).\n"
    "\n"
    "  -v, --verbose      also print the row of clpe's device tuning table in effect\n"
    "                     for each device (pairs and rows per work-item, work-group\n"
    "                     size, tile walk, steps asked for ahead, prefetch for write),\n"
    "                     with the CLPE_* tuning knobs of the environment applied\n"
    "  --json FILE        also write the list, with each device's tuning, as JSON\n";

static const char TABLE_HELP[] =
    "usage: clpe table --d D --pos P1,P2,... [FLAGS]\n"
    "\n"
    "Print one row per position, computed on the device.\n"
    "\n"
    "  --pos LIST         positions: integers and ranges START:STOP[:STEP]\n"
    "                     (STOP excluded), separated by commas; e.g. 5,6,305 or 0:8\n"
    "  --digits N         decimals printed, 0 .. 17 (default 4)\n" CONFIG_FLAGS
    "\n"
    "example: clpe table --d 8 --pos 5,6,305 --digits 3\n";

static const char ENCODE_HELP[] =
    "usage: clpe encode --seq N --d D -o FILE.npy [FLAGS]\n"
    "\n"
    "Compute the [N, D] encoding of positions START .. START+N-1 on the device and\n"
    "write it as a NumPy .npy file (version 1.0, C order). Element types: f32 '<f4',\n"
    "f16 '<f2', f64 '<f8'; bf16 is stored as '<u2' holding the raw bfloat16 bits\n"
    "(in NumPy: (a.astype(np.uint32) << 16).view(np.float32)). The array is computed\n"
    "and written in chunks, so it may be larger than device memory. A file appears\n"
    "only when complete and keeps the mode of the one it replaces; a link is\n"
    "followed; a FIFO, a terminal or /dev/stdout is written directly.\n"
    "\n"
    "  --hf-config FILE   a model's config.json (Hugging Face): head_dim (or\n"
    "                     hidden_size / num_attention_heads), rotary_dim,\n"
    "                     partial_rotary_factor or rotary_pct, rope_theta and\n"
    "                     rope_scaling of any type above or mrope, pairing from\n"
    "                     model_type (gptj, codegen, deepseek: interleaved), as the\n"
    "                     Python package's from_hf_config maps it; the flags that\n"
    "                     set a part of the configuration are refused with it\n"
    "  --seq N            number of positions (rows), >= 1 (required)\n"
    "  --start P          first position, any 64-bit integer (default 0, or the\n"
    "                     preset's first position)\n"
    "  -o, --output FILE  the .npy file to write (required)\n"
    "  --chunk-rows R     rows per chunk (default: about 1 MiB on a CPU, 8 MiB\n"
    "                     on other devices)\n"
    "  --devices LIST     spread the rows over several devices: 'all', or\n"
    "                     selectors separated by commas; each gets a share in\n"
    "                     proportion to its speed, measured first; the file's\n"
    "                     bytes are those of one device's encode. Prints the split\n"
    "  --measure-write    first time plain writes of the same bytes to the same\n"
    "                     file system (in the output's temporary file), then the\n"
    "                     same after reserving the bytes as the encode does, and\n"
    "                     print both rates next to the encode's\n"
    "  -q, --quiet        no progress bar and no summary on stderr\n" CONFIG_FLAGS
    "\n"
    "example: clpe encode --seq 1000000 --d 512 -o pe.npy\n";

static const char CHECK_HELP[] =
    "usage: clpe check [--device SEL | --all-devices] [--quick] [--paths LIST] [--json FILE]\n"
    "\n"
    "The conformance run: on each device, for every element type it supports, both\n"
    "frequency conventions and both layouts, run the table, fused add and gather\n"
    "paths, and the rotary paths (rope: both pairings, partial rotary, [b,s,h,d]\n"
    "and [b,h,s,d], queries and keys, every position source, the inverse; rope_cache)\n"
    "at edge and random positions (up to +-2^63) and compare every output bit\n"
    "with the library's host emulation; sample the error against a 256-bit MPFR\n"
    "reference (float32 rotations: within 2^-22 hypot(a, b) of the exact one).\n"
    "Also rotary into a KV cache (rope_kv: contiguous; rope_kv_paged: paged, heads\n"
    "outside the slots), fused QKV and separate q, k, v, every cache dtype (FP8\n"
    "included), padding slots (-1), the inverse; and the OpenCL C functions of\n"
    "clpe_device.h compiled into a kernel of the check's own (device_functions).\n"
    "Prints one row per device and type and one line per path; exits 1 if anything\n"
    "fails.\n"
    "\n"
    "  --device SEL       check this device (default: the default device)\n"
    "  --all-devices      check every device of every platform\n"
    "  --quick            a smaller run (a few seconds)\n"
    "  --paths LIST       only these paths, comma-separated (default: all): table,\n"
    "                     add, add_out, gather, pad_positions, rope, rope_cache,\n"
    "                     rope_kv, rope_kv_paged, device_functions\n"
    "  --json FILE        also write the results as JSON\n"
    "  -q, --quiet        print only the table\n";

static const char PLOT_HELP[] =
    "usage: clpe plot --seq N --d D -o FILE.png [FLAGS]\n"
    "\n"
    "Draw the encoding of positions START .. START+N-1 as a heatmap (positions down,\n"
    "dimensions across, blue -1 .. red +1), the similarity PE(p).PE(q)/(D/2) of\n"
    "every pair of positions, and the similarity of one position with all others.\n"
    "\n"
    "  --seq N            positions, 1 .. 4096 (required)\n"
    "  --start P          first position (default 0)\n"
    "  --query P          the position compared with all others (default the middle)\n"
    "  -o, --output FILE  the PNG file to write (required)\n" CONFIG_FLAGS
    "\n"
    "example: clpe plot --seq 128 --d 128 -o plot.png\n";

static const char ROPE_CACHE_HELP[] =
    "usage: clpe rope-cache --seq N --head-dim D --cos-out COS.npy --sin-out SIN.npy\n"
    "                       [FLAGS]\n"
    "       clpe rope-cache --seq N --hf-config config.json --cos-out COS.npy\n"
    "                       --sin-out SIN.npy [--start P] [--dtype T] [--device SEL]\n"
    "\n"
    "Compute the rotary position embedding's cos and sin of positions START ..\n"
    "START+N-1 on the device, each [N, R] (R the rotary width), already multiplied\n"
    "by the scaling's amplitude, as Hugging Face's rotary embeddings return them:\n"
    "half pairing repeats the halves (cos[s][j] = cos[s][j + R/2]), interleaved\n"
    "pairing repeats each value twice. Files as for encode (.npy; bf16 as '<u2'\n"
    "raw bits); the two appear together, only when both are complete.\n"
    "\n"
    "  --hf-config FILE   a model's config.json (Hugging Face): head_dim (or\n"
    "                     hidden_size / num_attention_heads), rotary_dim,\n"
    "                     partial_rotary_factor or rotary_pct, rope_theta and\n"
    "                     rope_scaling of any type above or mrope, pairing from\n"
    "                     model_type (gptj, codegen, deepseek: interleaved), as the\n"
    "                     Python package's from_hf_config maps it; the flags that\n"
    "                     set a part of the configuration are refused with it\n"
    "  --seq N            number of positions (rows), >= 1 (required)\n"
    "  --head-dim D       elements per head, 2 .. 16777216 (required)\n"
    "  --rotary-dim R     leading elements that rotate: even, <= D (default D)\n"
    "  --start P          first position, any 64-bit integer (default 0)\n"
    "  --base B           rope_theta, > 1 (default 10000)\n"
    "  --pairing half|interleaved\n"
    "                     pairs (i, i+R/2) as GPT-NeoX and Hugging Face (default),\n"
    "                     or (2i, 2i+1) as GPT-J and Meta's Llama code\n"
    "  --scaling default|linear|dynamic|yarn|llama3|longrope\n"
    "                     frequencies as Hugging Face's rope_init_fns (default: none)\n"
    "  --factor F         linear, dynamic, yarn, llama3: the scaling factor, >= 1;\n"
    "                     longrope: max_position_embeddings / original (amplitude)\n"
    "  --original-max-position N\n"
    "                     dynamic: max_position_embeddings; yarn, llama3, longrope:\n"
    "                     the original_max_position_embeddings (>= 1)\n"
    "  --short-factor-file FILE, --long-factor-file FILE\n"
    "                     longrope (both required): R/2 positive numbers each,\n"
    "                     separated by spaces, newlines or commas, optionally in\n"
    "                     [brackets] (a config.json's arrays pasted as they are);\n"
    "                     the long list serves once START+N exceeds\n"
    "                     --original-max-position\n"
    "  --low-freq-factor X, --high-freq-factor Y\n"
    "                     llama3: the frequency factors, 0 < X < Y\n"
    "  --beta-fast A, --beta-slow B\n"
    "                     yarn: the ramp, A >= B > 0 (default 32 and 1)\n"
    "  --positions FILE   multimodal rotary: an int64 .npy [streams, tokens] of\n"
    "                     positions (Qwen2-VL's position_ids of one sequence, [3,\n"
    "                     tokens]; its vision pos_ids transposed, [2, patches]);\n"
    "                     one row per token instead of --start and --seq\n"
    "  --mrope-section S  with --positions: the pairs of each stream, 1 to 4\n"
    "                     comma-separated counts summing to R/2 (Qwen2-VL: 16,24,24)\n"
    "  --vision           with --positions: each stream's pairs a frequency ladder\n"
    "                     of their own, as Qwen2-VL's vision tower (default\n"
    "                     sections: two halves, rows then columns)\n"
    "  --dtype f32|f16|bf16|f64\n"
    "                     element type (default f32)\n"
    "  --cos-out FILE     the cos .npy file to write (required)\n"
    "  --sin-out FILE     the sin .npy file to write (required)\n"
    "  -q, --quiet        no summary on stderr\n"
    "  --device SEL       device selector (see 'clpe --help')\n"
    "\n"
    "Dynamic and longrope scaling take the length Hugging Face does, max(position)\n"
    "+ 1: here START+N, or the largest position of --positions plus one. With\n"
    "--positions, row t holds each pair's cos or sin at its stream's position of\n"
    "token t, as apply_multimodal_rotary_pos_emb multiplies by.\n"
    "\n"
    "example: clpe rope-cache --seq 4096 --head-dim 128 --base 500000 --scaling llama3\n"
    "         --factor 8 --original-max-position 8192 --low-freq-factor 1\n"
    "         --high-freq-factor 4 --cos-out cos.npy --sin-out sin.npy\n"
    "         clpe rope-cache --head-dim 128 --base 1000000 --mrope-section 16,24,24\n"
    "         --positions position_ids.npy --cos-out cos.npy --sin-out sin.npy\n"
    "         clpe rope-cache --seq 8192 --hf-config config.json --cos-out cos.npy\n"
    "         --sin-out sin.npy\n";

static const char *help_for(cli_command cmd)
{
    switch (cmd) {
    case CLI_CMD_DEVICES: return DEVICES_HELP;
    case CLI_CMD_TABLE: return TABLE_HELP;
    case CLI_CMD_ENCODE: return ENCODE_HELP;
    case CLI_CMD_CHECK: return CHECK_HELP;
    case CLI_CMD_PLOT: return PLOT_HELP;
    case CLI_CMD_ROPE_CACHE: return ROPE_CACHE_HELP;
    case CLI_CMD_NONE: break;
    }
    return GENERAL_HELP;
}

int main(int argc, char **argv)
{
    cli_args args;
    char err[512];
    int rc;
    cli_signals_init();
    switch (cli_parse(argc, argv, &args, err, sizeof err)) {
    case CLI_PARSE_HELP:
        fputs(help_for(args.command), stdout);
        rc = CLI_EXIT_OK;
        break;
    case CLI_PARSE_VERSION:
        printf("clpe %s (library %s)\n", CLPE_VERSION_STRING, clpe_version_string());
        rc = CLI_EXIT_OK;
        break;
    case CLI_PARSE_USAGE:
        cli_error("%s", err);
        rc = CLI_EXIT_USAGE;
        break;
    case CLI_PARSE_OK:
    default:
        switch (args.command) {
        case CLI_CMD_DEVICES: rc = cli_cmd_devices(&args); break;
        case CLI_CMD_TABLE: rc = cli_cmd_table(&args); break;
        case CLI_CMD_ENCODE: rc = cli_cmd_encode(&args); break;
        case CLI_CMD_CHECK: rc = cli_cmd_check(&args); break;
        case CLI_CMD_PLOT: rc = cli_cmd_plot(&args); break;
        case CLI_CMD_ROPE_CACHE: rc = cli_cmd_rope_cache(&args); break;
        case CLI_CMD_NONE:
        default: rc = CLI_EXIT_USAGE; break;
        }
        break;
    }
    cli_args_free(&args);
    if (fflush(stdout) != 0 && rc == CLI_EXIT_OK) {
        cli_error("cannot write to standard output");
        rc = CLI_EXIT_RUNTIME;
    }
    return rc;
}
