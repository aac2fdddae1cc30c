/* edgegrad.h — the public C API of edgegrad, a compiler and runtime for on-device training of
 * conv nets.
 *
 * A training step (forward, loss, backward) is exported from PyTorch by the Python package
 * `edgegrad.export` into a graph file (`step.json`, format in docs/graph-format.md) and a
 * weights file (`step.safetensors`). This API loads such a graph, verifies it, and runs it on
 * portable CPU kernels. It also decides, for a phone SoC, which nodes its NPU could run and why
 * the others stay on the CPU (the compile section below).
 *
 * Worked example (error handling shortened; every call returns an eg_status):
 *
 *     eg_model *model = NULL;
 *     eg_runtime *rt = NULL;
 *     if (eg_model_load("step.json", &model) != EG_OK) {
 *       fprintf(stderr, "%s\n", eg_last_error());   // e.g. "step.json: node relu: ..."
 *       return 1;
 *     }
 *     eg_runtime_create(model, &rt);
 *     eg_tensor x;                                     // read an input from a .npy file
 *     eg_npy_load("input.npy", &x);
 *     eg_runtime_set_input(rt, "input", &x);           // copied; x may be freed now
 *     eg_tensor_free(&x);
 *     ...                                              // every other input
 *     eg_runtime_run(rt);
 *     eg_tensor loss;                                  // a view into the runtime's memory,
 *     eg_runtime_output(rt, 0, &loss);                 // valid until the next run or destroy
 *     eg_runtime_destroy(rt);
 *     eg_model_destroy(model);
 *
 * Errors: every function that can fail returns an eg_status; on failure eg_last_error() returns
 * one line of the form "<where>: <what> (<values>): <rule>" describing it (per thread, until the
 * next failing call on that thread). Nothing a file or a caller passes can crash the library:
 * a NULL handle or required pointer, an index out of range, a negative count or a shape beyond
 * edgegrad's limits gives EG_ERR_ARGUMENT with its message. The calls without a status (counts,
 * getters) return 0 for them (NULL for a string, -1 for eg_tensor_numel) and leave the message
 * as it was; the destroy and free calls accept NULL and do nothing.
 * Handles are not thread-safe; use one runtime per thread.
 * Structures passed by pointer carry their size (the section "binary compatibility: struct
 * sizes" below): set struct_size with the EG_*(...) initialisers or eg_*_defaults, and an app
 * built against an older or newer header of the same soname keeps working. */
#ifndef EDGEGRAD_H
#define EDGEGRAD_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this header: MAJOR.MINOR.PATCH; the library's own is eg_version(). */
#define EG_VERSION_MAJOR 0
#define EG_VERSION_MINOR 2
#define EG_VERSION_PATCH 0
#define EG_VERSION_STRING "0.2.0"
/* One number that orders versions: MAJOR * 10000 + MINOR * 100 + PATCH. */
#define EG_VERSION_NUMBER (EG_VERSION_MAJOR * 10000 + EG_VERSION_MINOR * 100 + EG_VERSION_PATCH)

/* EG_API marks the public functions: the only symbols the shared libraries (libedgegrad.so,
 * libedgegrad_rt.so) export; everything else in them is hidden. */
#if defined(_WIN32) && defined(EG_BUILDING_LIBRARY)
#define EG_API __declspec(dllexport)
#elif defined(__GNUC__)
#define EG_API __attribute__((visibility("default")))
#else
#define EG_API
#endif
/* ---- binary compatibility: struct sizes ------------------------------------------------ *
 * Structures cross the library boundary by pointer, and a release may add fields to them, so
 * each one that may grow says how large the caller's copy is:
 *
 *   - a structure the library reads (the options: eg_runtime_options, eg_compile_options,
 *     eg_optimizer_options, eg_trainer_options; eg_trainer_array) starts with
 *     `size_t struct_size`, which the caller sets to the sizeof of its own declaration: the
 *     initialiser macros (EG_RUNTIME_OPTIONS(...), EG_COMPILE_OPTIONS(...),
 *     EG_TRAINER_ARRAY(...): struct_size, then the initialisers given) and the eg_*_defaults
 *     functions do it.
 *
 *         eg_runtime_options opt = EG_RUNTIME_OPTIONS(.max_memory_bytes = (size_t)512 << 20);
 *         eg_compile_options copt = EG_COMPILE_OPTIONS(.soc = "SM8650");
 *         eg_runtime_options all_defaults = EG_RUNTIME_OPTIONS();   // or NULL options
 *
 *   - a function that fills a caller's structure (eg_model_input, eg_get_target,
 *     eg_tensor_compare, eg_optimizer_defaults, ...) takes the caller's sizeof as its last
 *     argument, `out_size`; the macro of the same name below its declaration passes it, so C
 *     callers write eg_model_input(model, i, &desc) and get eg_model_input(model, i, &desc,
 *     sizeof *(&desc)). (Bindings from other languages call the function with the size; a
 *     definition or a NULL `out` names it in parentheses: (eg_model_input)(model, i, NULL, n).)
 *
 * Fields are only ever appended, each starting at or past the sizeof of the layout before it,
 * so an app built against an older header holds a prefix of the library's layout, and one
 * built against a newer header the library's layout and more. The library
 *   - reads the caller's struct_size bytes and no more: a field past them takes its default
 *     (what the initialiser macro or the eg_*_defaults function gives it), and a byte past
 *     the library's own layout (a newer header's field) must be 0, i.e. that field left at
 *     its default: a non-zero one is refused, since this library cannot do what it asks;
 *   - fills exactly `out_size` bytes: its fields up to them, and 0 in a newer header's fields
 *     it does not know (0: "this library does not say");
 *   - accepts a size that is a multiple of the structure's alignment, at least sizeof(size_t)
 *     (the size field: everything else takes its default) and at most EG_STRUCT_SIZE_MAX;
 *     another (a struct_size never set is 0) is EG_ERR_ARGUMENT, "<function>: <struct>
 *     size (N bytes): <rule>".
 * An array of such structures (eg_trainer_set_data's) is walked with its first element's
 * struct_size as the stride; every element must carry the same. eg_trainer_event, which the
 * library passes to a callback, carries the library's struct_size: before reading a field a
 * newer header added, a callback checks EG_HAS_FIELD(event, eg_trainer_event, field). The
 * small value types eg_tensor, eg_file_part, eg_safetensors_entry and eg_safetensors_meta
 * never change (the library hands out arrays of the last two): changing one would be a new
 * soname. An app built against another release's header can compare eg_version() with
 * EG_VERSION_NUMBER; before 1.0 a new minor version may change anything (and has its own
 * soname, libedgegrad.so.0.MINOR). */
#define EG_STRUCT_SIZE_MAX 4096
/* Whether `ptr`'s struct_size covers `field` of `type`. */
#define EG_HAS_FIELD(ptr, type, field) \
  ((ptr)->struct_size >= offsetof(type, field) + sizeof(((type *)0)->field))

/* The largest tensor rank edgegrad handles (ATen allows more; conv nets never need it). */
#define EG_MAX_RANK 8

typedef enum eg_status {
  EG_OK = 0,
  EG_ERR_IO,          /* a file could not be opened, read or written */
  EG_ERR_FORMAT,      /* a file is malformed (JSON, safetensors, .npy) */
  EG_ERR_INVALID,     /* a graph breaks a rule: dangling id, cycle, shape contradicting its op */
  EG_ERR_UNSUPPORTED, /* well-formed but not supported by edgegrad (unknown op, dtype, ...) */
  EG_ERR_ARGUMENT,    /* the caller passed something wrong (name, dtype, shape, NULL) */
  EG_ERR_NOMEM,       /* out of memory */
  EG_ERR_RUNTIME,     /* the data made an op fail while running (e.g. class index out of range) */
  EG_ERR_LIMIT,       /* a limit the caller set would be exceeded (eg_runtime_options) */
  EG_ERR_STATE        /* the call is not valid in the handle's current state (e.g. reading an
                         output before any run) */
} eg_status;

typedef enum eg_dtype {
  EG_DTYPE_FLOAT32 = 0,
  EG_DTYPE_FLOAT64,
  EG_DTYPE_FLOAT16,
  EG_DTYPE_INT64,
  EG_DTYPE_INT32,
  EG_DTYPE_INT8,
  EG_DTYPE_UINT8,
  EG_DTYPE_BOOL,
  EG_DTYPE_COUNT
} eg_dtype;

/* How NPU partitions compute floats (docs/fp16.md). FP32: every float tensor of a partition
 * holds fp32 values (an "ideal NPU"). FP16: as Qualcomm's HTP computes float graphs — every
 * float tensor of a partition is stored as fp16 would store it (inputs and weights rounded to
 * nearest even as they enter, each op's output rounded after the op, magnitudes above 65504
 * saturated), each op computing in fp32 in between. CPU nodes always compute in fp32.
 * DEFAULT (0) means "unset": when compiling, the SoC's own (fp16 on every SoC with a float
 * path, as its HTP computes; fp32 elsewhere), the program's recorded precision when running
 * one. */
typedef enum eg_precision {
  EG_PRECISION_DEFAULT = 0,
  EG_PRECISION_FP32 = 1,
  EG_PRECISION_FP16 = 2
} eg_precision;

/* A dense, C-ordered tensor. `data` holds product(shape) elements of `dtype`. Who owns `data`
 * is said by the call that produced the tensor. */
typedef struct eg_tensor {
  eg_dtype dtype;
  int32_t rank;
  int64_t shape[EG_MAX_RANK];
  void *data;
} eg_tensor;

/* What an input holds that a training loop draws afresh for every step. */
typedef enum eg_random_kind {
  EG_RANDOM_NONE = 0,  /* data, a parameter, a buffer: given by the caller */
  EG_RANDOM_BERNOULLI  /* a 0/1 mask of the step's own Bernoulli draw (nn.Dropout, Dropout2d,
                          StochasticDepth in train mode): each element 1 with probability
                          eg_tensor_desc.random_p, else 0, in the input's dtype (float32,
                          float64, uint8 or bool) */
} eg_random_kind;

/* What an input or output of a training step is to a training loop, as the exporter recorded
 * it (the graph JSON's "role" and "of", docs/export.md; a compiled program keeps them). A graph
 * written before roles were recorded reads as data inputs and plain outputs: nothing to train
 * until it is exported again. */
typedef enum eg_io_role {
  EG_ROLE_DATA = 0,      /* input: examples, fed a batch per step (images, features) */
  EG_ROLE_LABEL,         /* input: the classes a loss (nll_loss, cross_entropy) reads */
  EG_ROLE_PARAMETER,     /* input: a trainable parameter; `pair`: its gradient output */
  EG_ROLE_BUFFER,        /* input: a state buffer (BatchNorm's running_mean); `pair`: the output
                            holding its new value */
  EG_ROLE_RANDOM,        /* input: a random draw (a Dropout mask), drawn afresh per step */
  EG_ROLE_LOSS,          /* output: the scalar loss */
  EG_ROLE_GRADIENT,      /* output: the gradient of parameter input `pair` */
  EG_ROLE_BUFFER_UPDATE, /* output: the new value of buffer input `pair` */
  EG_ROLE_OUTPUT         /* output: any other (the model's output, an input's gradient) */
} eg_io_role;

/* Name, dtype and shape of a model input or output (`data` unused, NULL), and its role. `name`
 * stays valid while the model lives. */
typedef struct eg_tensor_desc {
  const char *name;
  eg_tensor tensor;
  /* The input's or output's role in a training step, and the index of its partner (a
   * parameter's gradient output, a gradient's parameter input, a buffer's update and back);
   * -1 where it has none. */
  eg_io_role role;
  int pair;
  /* An input holding a trainable parameter or state buffer: its PyTorch state_dict name
   * ("layer1.0.conv1.weight"), as the exporter recorded it; NULL otherwise (and for outputs). */
  const char *state_dict;
  /* An input holding a random draw of the traced step (the exporter's "random_inputs":
   * bernoulli_<k>); EG_RANDOM_NONE otherwise (and for outputs). The runtime treats it as any
   * input: the caller sets a fresh draw before each step (`edgegrad train` does). */
  eg_random_kind random;
  /* EG_RANDOM_BERNOULLI: the probability of a one, in [0, 1] (1 - Dropout's p); NAN where the
   * traced step took it from a tensor (no loop can draw it then). 0 for other inputs. */
  double random_p;
} eg_tensor_desc;

typedef struct eg_model eg_model;
typedef struct eg_runtime eg_runtime;

/* ---- version, errors and dtypes ------------------------------------------------------ */

/* The library's version as EG_VERSION_NUMBER encodes it (the header's may differ when an app
 * was built against another release: compare the two at start-up). */
EG_API int eg_version(void);
/* The library's version string, "0.1.0". */
EG_API const char *eg_version_string(void);

/* Logging. The library never writes to stdout or stderr: what it has to say beyond a returned
 * status (today: the compiler's --dump-after text IR, at EG_LOG_DEBUG, one message per dump)
 * goes to the callback set here, process-wide; with none set (the default) it is dropped. The
 * callback may be called from any thread that calls into the library; `message` is valid
 * during the call only. */
typedef enum eg_log_level {
  EG_LOG_ERROR = 0,
  EG_LOG_WARNING,
  EG_LOG_INFO,
  EG_LOG_DEBUG
} eg_log_level;
typedef void (*eg_log_fn)(eg_log_level level, const char *message, void *user);
/* Sets (NULL: removes) the callback and the pointer it gets as `user`. */
EG_API void eg_set_log_callback(eg_log_fn callback, void *user);

/* The message of the last failing call on this thread ("" if none). */
EG_API const char *eg_last_error(void);
/* "float32", "int64", ... ; "?" for an invalid value. */
EG_API const char *eg_dtype_name(eg_dtype dtype);
/* The role's name as graph files write it: "data", "label", "parameter", "buffer", "random",
 * "loss", "gradient", "buffer_update", "output"; "?" for an invalid value. */
EG_API const char *eg_io_role_name(eg_io_role role);
/* Bytes per element (bool: 1); 0 for an invalid value. */
EG_API size_t eg_dtype_size(eg_dtype dtype);
/* Number of elements of a tensor (1 for rank 0); -1 when `t` is NULL, its rank is outside
 * [0, EG_MAX_RANK], a dimension is negative, or the shape breaks the size rule every reader
 * applies (each dimension at most 2^40, the non-zero ones multiplying to at most 2^40): a
 * count that is not -1 times eg_dtype_size cannot overflow. */
EG_API int64_t eg_tensor_numel(const eg_tensor *t);

/* ---- models --------------------------------------------------------------------------- */

/* Loads and verifies a graph file (`json_path`) and the weights file it names — or a compiled
 * program file (.egp, told apart by its first bytes; see "compiled programs" below). On success
 * *out owns everything (free with eg_model_destroy); on failure *out is NULL. */
EG_API eg_status eg_model_load(const char *json_path, eg_model **out);
/* Loads and validates a compiled program file (.egp) only: what an app linked against the
 * runtime library alone (libedgegrad_rt, which has no graph JSON loader and no compiler) calls.
 * Same ownership as eg_model_load; a file that is not a compiled program fails with
 * EG_ERR_FORMAT. eg_model_load hands .egp files to it. */
EG_API eg_status eg_model_load_compiled(const char *path, eg_model **out);
EG_API void eg_model_destroy(eg_model *model);

/* Counts of inputs and outputs (0 for a NULL model). */
EG_API int eg_model_num_inputs(const eg_model *model);
EG_API int eg_model_num_outputs(const eg_model *model);
/* Describes input/output `index` (0-based) in *out (`out_size` bytes: the struct sizes
 * above). EG_ERR_ARGUMENT if out of range or a pointer is NULL. */
EG_API eg_status eg_model_input(const eg_model *model, int index, eg_tensor_desc *out,
                                size_t out_size);
EG_API eg_status eg_model_output(const eg_model *model, int index, eg_tensor_desc *out,
                                 size_t out_size);
#define eg_model_input(model, index, out) eg_model_input(model, index, out, sizeof *(out))
#define eg_model_output(model, index, out) eg_model_output(model, index, out, sizeof *(out))

/* Graph statistics for `edgegrad info`. */
typedef struct eg_model_stats {
  int num_nodes;
  int num_values;
  int num_statics;        /* frozen weights and constants */
  size_t static_bytes;    /* their total size in bytes */
} eg_model_stats;
/* Fills *out, `out_size` bytes (all zeros for a NULL model; nothing when `out` is NULL or the
 * size is not one the struct sizes above allow). */
EG_API void eg_model_get_stats(const eg_model *model, eg_model_stats *out, size_t out_size);
#define eg_model_get_stats(model, out) eg_model_get_stats(model, out, sizeof *(out))
/* Number of distinct op targets in the graph (0 for a NULL model), and the `index`-th one (in
 * first-use order) with how many nodes use it. `target` is the traced name, e.g.
 * "aten.convolution_backward.default"; either of `target` and `count` may be NULL.
 * EG_ERR_ARGUMENT for a NULL model or an index out of range. */
EG_API int eg_model_num_op_kinds(const eg_model *model);
EG_API eg_status eg_model_op_kind(const eg_model *model, int index, const char **target,
                                  int *count);

/* ---- running -------------------------------------------------------------------------- */

/* Plans memory for the model once (activations packed by lifetime) and allocates it. The model
 * must outlive the runtime. No memory limit (eg_runtime_create_with_options with NULL). */
EG_API eg_status eg_runtime_create(const eg_model *model, eg_runtime **out);
EG_API void eg_runtime_destroy(eg_runtime *rt);

/* Limits a device app sets on a runtime. Make them with EG_RUNTIME_OPTIONS(...) (struct_size
 * set, every field not named 0) naming what you need: every field's 0 means "no limit" or "the
 * default", which is also what a field past an older caller's struct_size takes.
 *
 *     eg_runtime_options opt = EG_RUNTIME_OPTIONS(.max_memory_bytes = (size_t)512 << 20);
 *     eg_status s = eg_runtime_create_with_options(model, &opt, &rt);
 *     if (s == EG_ERR_LIMIT) ...   // eg_last_error(): the bytes needed, by part, and the limit
 *
 * Check inputs with eg_model_check_input before creating the runtime to refuse wrong files
 * before any memory is reserved. */
typedef struct eg_runtime_options {
  size_t struct_size; /* sizeof(eg_runtime_options) as the caller declares it (above) */
  /* The most bytes the runtime may reserve at creation: its activation arena (in a compiled
   * runtime, with each NPU partition's staging buffers and executor tensors, planned into it
   * for the time the partition runs), kernel scratch and input buffers together (not counted:
   * the compiled program itself and the constants its NPU partitions derive from their
   * weights at creation). The runtime
   * plans first and checks this before allocating any of them; over it, creation fails with
   * EG_ERR_LIMIT and a message giving the bytes needed (and each part) and the limit. 0 = no
   * limit. (Running allocates nothing, so creation is the only place memory is reserved.) */
  size_t max_memory_bytes;
  /* Threads the runtime's kernels (and OpenBLAS) use while eg_runtime_run runs; the caller's
   * own setting is restored when the run returns. 0 = the process default (OMP_NUM_THREADS, else
   * one per core). Must be >= 0 (else EG_ERR_ARGUMENT at creation). */
  int num_threads;
  /* Time every step of each run (a CPU node, or an NPU partition with its layout conversions)
   * for eg_runtime_profile_*; off (false) costs nothing but a branch per step. */
  bool profile;
  /* A folder to dump every NPU partition's boundary tensors into, so that a partition can be
   * checked on its own (e.g. its ONNX model, `edgegrad export-onnx`, fed from the dump on
   * another backend): each run writes, for each partition it runs, <dir>/partition_<k>/
   * <name>.npy for every input of the partition (just before it runs) and every output (just
   * after). <name> is the tensor's name in the partition's graph (`edgegrad inspect`); one
   * that is not a plain file name ([A-Za-z0-9_.-], not starting with '.', at most 200 bytes)
   * has its other bytes replaced by '_' and "~<tensor index>" appended. Each file holds the
   * value as PyTorch has it: the graph's dtype and shape in NCHW order (int64 also where the
   * NPU holds int32, the float where it holds a quantized value). Files are written atomically
   * and overwritten by the next run; other files in <dir> are left alone. The dump's time
   * counts into its partition's step in a profile. Checked at creation: <dir> is an existing
   * folder, or its parent is (the first run creates it), and the runtime runs at least one
   * NPU partition (a compiled program or eg_runtime_create_compiled, with nodes on the NPU);
   * else EG_ERR_ARGUMENT. A folder or file that cannot be written fails the run (EG_ERR_IO),
   * leaving the files written so far. NULL = off, costing nothing but a branch per NPU
   * partition run. The string is copied. */
  const char *dump_partitions_dir;
  /* How the NPU partitions of a compiled program compute floats (eg_precision): DEFAULT (0)
   * runs them at the precision the program was compiled for (eg_compile_options.precision,
   * recorded in a .egp); FP32 or FP16 overrides it; another value is EG_ERR_ARGUMENT at
   * creation. Ignored for a model that is not compiled (CPU nodes compute in fp32). FP16
   * partitions hold fp16-rounded copies of their float inputs and weights, reserved at
   * creation beside the derived constants (not counted in max_memory_bytes). */
  eg_precision precision;
} eg_runtime_options;
/* An initialiser: struct_size set, then `...` (designated initialisers), every other field 0. */
#define EG_RUNTIME_OPTIONS(...) {.struct_size = sizeof(eg_runtime_options), __VA_ARGS__}
#define EG_RUNTIME_OPTIONS_INIT EG_RUNTIME_OPTIONS()

/* eg_runtime_create with limits; `options` NULL means none (all defaults). For a model loaded
 * from a compiled program it runs the program, as eg_runtime_create does. */
EG_API eg_status eg_runtime_create_with_options(const eg_model *model,
                                                const eg_runtime_options *options,
                                                eg_runtime **out);

/* Checks `value` against the model input called `name` exactly as eg_runtime_set_input does
 * (same status and message), without a runtime: lets a caller refuse wrong inputs before it
 * reserves the runtime's memory. */
EG_API eg_status eg_model_check_input(const eg_model *model, const char *name,
                                      const eg_tensor *value);

/* Copies `value` into the input called `name`. Its dtype and shape must equal the model's:
 * otherwise EG_ERR_ARGUMENT naming the input, what was given and what is expected. */
EG_API eg_status eg_runtime_set_input(eg_runtime *rt, const char *name, const eg_tensor *value);
/* Runs the graph once. Every input must have been set (EG_ERR_ARGUMENT names a missing one).
 * Inputs keep their values across runs. */
EG_API eg_status eg_runtime_run(eg_runtime *rt);
/* The current value of input `index` (as set, or as an optimizer's step changed it), as a
 * view into the runtime's memory. EG_ERR_ARGUMENT if out of range or not set. */
EG_API eg_status eg_runtime_input(const eg_runtime *rt, int index, eg_tensor *out);
/* Output `index` of the last run, as a view into the runtime's memory (do not free `data`;
 * valid until the next run or eg_runtime_destroy). EG_ERR_ARGUMENT before the first run. */
EG_API eg_status eg_runtime_output(const eg_runtime *rt, int index, eg_tensor *out);

/* ---- profile ------------------------------------------------------------------------ *
 * With eg_runtime_options.profile, each run records one entry per step, in run order: a CPU
 * node, or an NPU partition (all its nodes run as one step on the executor). Entries describe
 * the last run (each run replaces them).
 *
 *     eg_runtime_options opt = EG_RUNTIME_OPTIONS(.profile = true);
 *     ... eg_runtime_run(rt);
 *     for (int i = 0; i < eg_runtime_profile_count(rt); i++) {
 *       eg_profile_entry e;
 *       eg_runtime_profile_entry(rt, i, &e);   // e.name, e.ns, e.flops ...
 *     }
 *     eg_runtime_profile_write_trace(rt, "step.trace.json");   // chrome://tracing, Perfetto */
typedef struct eg_profile_entry {
  const char *name;    /* the node's name; an NPU partition: "partition K" */
  const char *op;      /* the node's ATen op; an NPU partition: "npu partition" */
  const char *target;  /* "cpu" or "npu" */
  int n_nodes;         /* graph nodes the step runs (1 for a CPU node) */
  int64_t start_ns;    /* when it started, from the start of the run */
  int64_t ns;          /* how long it took */
  int64_t convert_ns;  /* of ns, an NPU partition's layout and dtype conversions at its
                          boundaries (NCHW <-> NHWC staging); 0 on the CPU */
  double flops;        /* estimated floating-point operations (a multiply-add is 2) */
  int64_t bytes;       /* bytes of the tensors it reads and writes */
} eg_profile_entry;

/* Entries of the last run: 0 without eg_runtime_options.profile or before the first run. */
EG_API int eg_runtime_profile_count(const eg_runtime *rt);
/* Entry `index` (run order); its strings live as long as the runtime. EG_ERR_ARGUMENT out of
 * range. */
EG_API eg_status eg_runtime_profile_entry(const eg_runtime *rt, int index, eg_profile_entry *out,
                                          size_t out_size);
#define eg_runtime_profile_entry(rt, index, out) \
  eg_runtime_profile_entry(rt, index, out, sizeof *(out))
/* Wall time of the last profiled run's steps, start of the first to end of the last. */
EG_API int64_t eg_runtime_profile_total_ns(const eg_runtime *rt);
/* The last run as a Chrome trace (JSON: one complete event per step, microseconds, and nested
 * in an NPU partition's event one per QNN op it ran, named after the node it lowers), written
 * atomically to `path`. EG_ERR_ARGUMENT without a profiled run; EG_ERR_IO if it cannot be
 * written (the old file, if any, stays). */
EG_API eg_status eg_runtime_profile_write_trace(const eg_runtime *rt, const char *path);

/* ---- training ----------------------------------------------------------------------- *
 * An exported training step records the role of each input and output (eg_tensor_desc.role,
 * docs/export.md): a trainable parameter is an input P of role EG_ROLE_PARAMETER, its
 * gradient the output of role EG_ROLE_GRADIENT paired with it (the exporter names it "grad_P",
 * but only the recorded pair counts); a state buffer (e.g. BatchNorm's running_mean) is an input
 * B of role EG_ROLE_BUFFER, its new value the paired output of role EG_ROLE_BUFFER_UPDATE. */

/* Counts the model's trainable parameters and state buffers: inputs of role
 * EG_ROLE_PARAMETER and EG_ROLE_BUFFER paired with their gradient or update output (an
 * evaluation graph's parameters and buffers have none: it trains nothing). */
EG_API void eg_model_training_io(const eg_model *model, int *num_params, int *num_buffers);

/* The classes input `index` holds labels of: where an nll_loss node (cross_entropy's, over
 * [N, C] or [N, C, H, W] log-probabilities) reads the input as its target, *classes = C and
 * *ignore_index = that node's ignore_index (a label equal to it is skipped); a label outside
 * [0, C) that is not ignore_index stops a run. *classes = 0 when no such node reads it (the
 * smallest C when several do). Lets a training loop check its labels before the first step. */
EG_API eg_status eg_model_input_classes(const eg_model *model, int index, int64_t *classes,
                                        int64_t *ignore_index);

/* An optimizer over a runtime's trainable parameters (the roles above), with torch.optim's
 * update rules, its state (momentum buffers, Adam's moments) kept per parameter:
 *
 *     eg_optimizer_options o;
 *     eg_optimizer_defaults(EG_OPTIMIZER_ADAMW, &o);   // sets o.struct_size too
 *     o.lr = 1e-3;
 *     eg_optimizer *opt;
 *     eg_optimizer_create(rt, &o, &opt);
 *     for (...) {
 *       ... eg_runtime_set_input(rt, "input", &batch) ...
 *       eg_runtime_run(rt);
 *       eg_optimizer_step(opt);      // parameters updated, buffers take their new values
 *     }
 *     eg_optimizer_destroy(opt);     // before the runtime
 *
 * SGD: g = grad + weight_decay*p; with momentum, b = g on the first step, then
 * b = momentum*b + (1-dampening)*g, and g = nesterov ? g + momentum*b : b; p -= lr*g.
 * Adam: g = grad + weight_decay*p; AdamW: p *= 1 - lr*weight_decay. Then (t = step count)
 * m = beta1*m + (1-beta1)*g, v = beta2*v + (1-beta2)*g*g,
 * p -= lr/(1-beta1^t) * m / (sqrt(v)/sqrt(1-beta2^t) + eps).
 *
 * Loss scaling (loss_scale; torch.amp.GradScaler's rules), against gradients that underflow
 * in fp16 NPU partitions (docs/fp16.md): each run's backward starts from S instead of 1 (its
 * seed, ones_like(loss) or the constant it is compiled into, holds S; the loss output stays
 * as it is), so every gradient comes out multiplied by S. Where fp16 NPU partitions read the
 * seed it holds S as fp16 stores it: rounded, saturated at 65504 (65536 is 65504).
 * eg_optimizer_step then unscales the gradient outputs in place (grad *= (float)(1/S), S the
 * value the seed held) before the update, so the update (weight
 * decay, momentum, Adam's moments) sees unscaled gradients, and skips the update when any
 * scaled gradient element was inf or NaN — or, on a runtime with fp16 NPU partitions, of a
 * magnitude >= 65504 (fp16's largest: the HTP saturates there instead of overflowing to inf):
 * the parameters, the optimizer's state and its step count stay, the buffers still take their
 * new values (the forward ran, as in PyTorch). DYNAMIC then adapts S: after a skipped step
 * S *= backoff_factor and the count of good steps restarts; after growth_interval good steps
 * in a row S *= growth_factor (unless that overflows float32). STATIC keeps S. An NPU
 * partition reads the seed as an input the runtime writes before each run (the compiler
 * lowers it so); eg_optimizer_create refuses a model without a seed, with two, or with one an
 * NPU partition holds any other way (EG_ERR_UNSUPPORTED). */
typedef enum eg_loss_scale_mode {
  EG_LOSS_SCALE_NONE = 0, /* the seed is 1: no scaling, no checks (today's behaviour) */
  EG_LOSS_SCALE_STATIC,   /* S = init_scale throughout; overflowed steps skipped */
  EG_LOSS_SCALE_DYNAMIC,  /* GradScaler: S from init_scale, adapted */
  EG_LOSS_SCALE_AUTO      /* DYNAMIC where the runtime's NPU partitions compute in fp16 (where
                             gradients underflow), else NONE: eg_optimizer_loss_scaling says */
} eg_loss_scale_mode;

typedef enum eg_optimizer_kind {
  EG_OPTIMIZER_SGD = 0,
  EG_OPTIMIZER_ADAM,
  EG_OPTIMIZER_ADAMW
} eg_optimizer_kind;

typedef struct eg_optimizer_options {
  size_t struct_size;  /* sizeof(eg_optimizer_options) as the caller declares it */
  eg_optimizer_kind kind;
  double lr;           /* >= 0 */
  double weight_decay; /* >= 0; SGD and Adam: L2 added to the gradient; AdamW: decoupled */
  double momentum;     /* SGD, >= 0 */
  double dampening;    /* SGD */
  bool nesterov;       /* SGD: needs momentum > 0 and dampening 0 (as torch.optim.SGD) */
  double beta1, beta2; /* Adam/AdamW, each in [0, 1) */
  double eps;          /* Adam/AdamW, >= 0 */
  /* Loss scaling (above); zero fields take GradScaler's defaults. */
  eg_loss_scale_mode loss_scale;
  double init_scale;        /* STATIC, DYNAMIC: the first S, finite in (0, FLT_MAX] (0: 65536) */
  double growth_factor;     /* DYNAMIC: finite, > 1 (0: 2) */
  double backoff_factor;    /* DYNAMIC: in (0, 1) (0: 0.5) */
  int64_t growth_interval;  /* DYNAMIC: good steps before S grows, in [1, INT32_MAX] (0: 2000) */
} eg_optimizer_options;

typedef struct eg_optimizer eg_optimizer;

/* Fills *out (`out_size` bytes, out->struct_size = out_size) with torch.optim's defaults for
 * `kind`: SGD lr 1e-3, momentum, dampening, weight decay 0; Adam lr 1e-3, betas (0.9, 0.999),
 * eps 1e-8, weight decay 0; AdamW the same with weight decay 1e-2; no loss scaling (its fields
 * 0). These are the values a field past an older caller's struct_size takes (its `kind`'s).
 * EG_ERR_ARGUMENT for a NULL `out` or a size the struct sizes above refuse. */
EG_API eg_status eg_optimizer_defaults(eg_optimizer_kind kind, eg_optimizer_options *out,
                                       size_t out_size);
#define eg_optimizer_defaults(kind, out) eg_optimizer_defaults(kind, out, sizeof *(out))
/* An optimizer for every trainable parameter of `rt` (state zeroed, step count 0).
 * EG_ERR_ARGUMENT names an option out of range, or a model with nothing to train. The runtime
 * must outlive it. */
EG_API eg_status eg_optimizer_create(eg_runtime *rt, const eg_optimizer_options *options,
                                     eg_optimizer **out);
EG_API void eg_optimizer_destroy(eg_optimizer *opt);
/* After a successful eg_runtime_run: one update of every parameter from its gradient, and every
 * state buffer takes its new value. EG_ERR_STATE before a run, and
 * when the step count is INT64_MAX (no further step can be counted); a refused step changes
 * nothing. */
EG_API eg_status eg_optimizer_step(eg_optimizer *opt);
/* The learning rate of the next steps (a schedule sets it before each). EG_ERR_ARGUMENT < 0. */
EG_API eg_status eg_optimizer_set_lr(eg_optimizer *opt, double lr);
/* Steps taken (Adam's t; 0 for a NULL optimizer); set it when restoring a checkpoint together
 * with the state: any count >= 0 (else EG_ERR_ARGUMENT). */
EG_API int64_t eg_optimizer_steps(const eg_optimizer *opt);
EG_API eg_status eg_optimizer_set_steps(eg_optimizer *opt, int64_t steps);
/* The optimizer's state tensors, for checkpoints: per parameter P, "P.momentum_buffer" (SGD
 * with momentum) or "P.exp_avg" and "P.exp_avg_sq" (Adam/AdamW); float32, P's shape. `out` is
 * a view into the optimizer's memory: write it to restore a checkpoint. */
EG_API int eg_optimizer_num_states(const eg_optimizer *opt);
EG_API eg_status eg_optimizer_state(eg_optimizer *opt, int index, const char **name,
                                    eg_tensor *out);
/* Loss scaling: S, the scale the next run's backward starts from (1 without loss scaling, 0
 * for a NULL optimizer), and the steps skipped so far because their gradients overflowed (-1
 * when a restored state holds no count; eg_optimizer_step then refuses it).
 * With loss scaling the state tensors end with "loss_scaler", float64 [3]: S, the good steps
 * since S last changed (DYNAMIC), the skipped steps; a checkpoint restores them there. */
EG_API double eg_optimizer_loss_scale(const eg_optimizer *opt);
/* The loss scaling the optimizer does: its options', AUTO resolved (NONE for a NULL one). */
EG_API eg_loss_scale_mode eg_optimizer_loss_scaling(const eg_optimizer *opt);
EG_API int64_t eg_optimizer_skipped_steps(const eg_optimizer *opt);

/* ---- trainer ----------------------------------------------------------------------------- *
 * Fine-tuning as a library: a training loop over a runtime of a training step, as `edgegrad
 * train` runs it (it is a shell over this). The trainer owns an optimizer (above) over the
 * runtime's parameters, feeds mini-batches of the graph's batch size from arrays the caller
 * owns, shuffles them per epoch, draws the step's random inputs (Dropout masks), sets each
 * epoch's learning rate from a schedule, evaluates an evaluation graph, reports through a
 * callback, and saves and loads checkpoints that resume bit for bit:
 *
 *     eg_optimizer_options sgd;
 *     eg_optimizer_defaults(EG_OPTIMIZER_SGD, &sgd);
 *     sgd.lr = 0.05;
 *     eg_trainer_options o;
 *     eg_trainer_defaults(&o);
 *     o.optimizer = &sgd;                              // read by eg_trainer_create
 *     eg_trainer *tr;
 *     eg_trainer_create(rt, &o, &tr);                  // rt: eg_runtime_create(step model)
 *     eg_runtime_load_weights(rt, "step.init.safetensors");
 *     eg_trainer_array data[] = {EG_TRAINER_ARRAY("input", images),
 *                                EG_TRAINER_ARRAY("target", labels)};
 *     eg_trainer_set_data(tr, data, 2);               // views: keep them alive
 *     eg_trainer_fit(tr, 5);                           // epochs 1..5
 *     eg_trainer_save_weights(tr, "tuned.safetensors");
 *     eg_trainer_destroy(tr);                          // before the runtime
 *
 * Every input of the step has a role (eg_tensor_desc.role): parameters and buffers live in the
 * runtime (set them first: eg_runtime_load_weights), data and labels come from the arrays,
 * random draws from the trainer's stream. The example order of epoch e is a permutation drawn
 * from (seed, e) alone, so a run resumed at any step sees the batches an uninterrupted one
 * would. */
typedef enum eg_lr_schedule {
  EG_LR_CONSTANT = 0, /* lr throughout */
  EG_LR_STEP,         /* epoch e (0-based): lr * gamma^floor(e / lr_step) (torch StepLR) */
  EG_LR_COSINE        /* lr * (1 + cos(pi e / epochs)) / 2 (CosineAnnealingLR, eta_min 0) */
} eg_lr_schedule;

typedef struct eg_trainer_options {
  size_t struct_size; /* sizeof(eg_trainer_options) as the caller declares it */
  /* The optimizer, read by eg_trainer_create (its lr is the schedule's base); NULL:
   * eg_optimizer_defaults(EG_OPTIMIZER_SGD) with loss_scale AUTO. A pointer rather than a
   * member, so that each of the two structures can grow on its own (a member's growth would
   * move the fields after it). */
  const eg_optimizer_options *optimizer;
  eg_lr_schedule schedule;
  int64_t lr_step;  /* STEP: epochs between decays, >= 1 */
  double lr_gamma;  /* STEP: the factor, finite, >= 0 */
  int64_t epochs;   /* the epochs the run is planned for (0: open): COSINE's T_max (needed
                       there), and a checkpoint beyond them is refused */
  bool shuffle;     /* a fresh permutation per epoch (else the arrays' order) */
  uint64_t seed;    /* seeds the shuffle and the random inputs' stream */
  bool normalize;   /* uint8 arrays for float32 inputs become (x/255 - mean) / std */
  double mean, std; /* normalize: finite, std > 0 */
} eg_trainer_options;

/* The examples of one data or label input: `t` is [N, ...], each example the input's shape
 * without its batch axis; any integer dtype for an int64 input, uint8 for a float32 one with
 * normalize. A view: the trainer reads the caller's memory, which must stay valid and
 * unchanged while the trainer uses it. `origin` names it in messages ("data/target.npy");
 * NULL: "array <input>". The functions taking an array of them (eg_trainer_set_data,
 * eg_trainer_set_eval, eg_trainer_step_batch) step through it by its first element's
 * struct_size, which every element must repeat. */
typedef struct eg_trainer_array {
  size_t struct_size; /* sizeof(eg_trainer_array) as the caller declares it: the arrays'
                         stride, the same in every element */
  const char *input;
  eg_tensor t;
  const char *origin;
} eg_trainer_array;
/* An initialiser: struct_size set, then `...`: EG_TRAINER_ARRAY("input", images, NULL). */
#define EG_TRAINER_ARRAY(...) {.struct_size = sizeof(eg_trainer_array), __VA_ARGS__}

typedef enum eg_trainer_event_kind {
  EG_TRAINER_STEP = 0, /* after each step's update */
  EG_TRAINER_EPOCH,    /* after each epoch (and its evaluation) */
  EG_TRAINER_EVAL      /* the evaluation before the first step of a fresh run */
} eg_trainer_event_kind;

/* The library's (struct_size: its sizeof; see EG_HAS_FIELD). */
typedef struct eg_trainer_event {
  size_t struct_size;
  eg_trainer_event_kind kind;
  int64_t epoch;       /* 1-based; EVAL: 0 */
  int64_t step;        /* STEP: 1-based step of the epoch; EPOCH: steps per epoch */
  int64_t steps;       /* steps per epoch */
  int64_t global_step; /* steps run (updates and loss scaling's skipped ones) */
  double loss;         /* STEP: the step's; EPOCH: the epoch's mean */
  double lr;
  double val_loss, val_accuracy; /* EPOCH, EVAL with an evaluation set: the mean loss, top-1
                                    where the evaluation graph's output is [batch, classes]
                                    and the set has labels; NAN otherwise */
  double seconds;      /* EPOCH: time of its steps run since this trainer started it */
  int64_t steps_run;   /* EPOCH: how many of its steps that was (fewer after a resume) */
  double zero_grads;   /* EPOCH: the share of gradient elements exactly 0 */
  double loss_scale;   /* the optimizer's for the next step (1 without loss scaling) */
  int64_t skipped_steps;
} eg_trainer_event;

/* Called by eg_trainer_step/_fit; a non-zero return stops eg_trainer_fit after that event
 * (EG_ERR_STATE, "stopped by the callback"), the trainer's position kept. */
typedef int (*eg_trainer_callback)(const eg_trainer_event *event, void *user);

typedef struct eg_trainer eg_trainer;

/* Fills *out (`out_size` bytes, out->struct_size = out_size) with the defaults, which are
 * also what a field past an older caller's struct_size takes: no optimizer (NULL: SGD's
 * defaults with loss scaling AUTO), a constant schedule (lr_step 1, lr_gamma 0.1), epochs 0,
 * shuffle on, seed 0, no normalization (mean 0, std 1). EG_ERR_ARGUMENT for a NULL `out` or a
 * size the struct sizes above refuse. */
EG_API eg_status eg_trainer_defaults(eg_trainer_options *out, size_t out_size);
#define eg_trainer_defaults(out) eg_trainer_defaults(out, sizeof *(out))
/* A trainer over `rt`, a runtime of a training step (a scalar loss output, parameters with
 * gradient outputs), at epoch 0 step 0. EG_ERR_ARGUMENT names an option out of range or a
 * model that is no training step. The runtime must outlive it. */
EG_API eg_status eg_trainer_create(eg_runtime *rt, const eg_trainer_options *options,
                                   eg_trainer **out);
EG_API void eg_trainer_destroy(eg_trainer *tr);
/* The training set: one array per data and label input of the step, every one with the same
 * N >= the batch size B. Checked whole before use (shapes, dtypes, finite floats, labels >= 0
 * and below the classes of the loss that reads them, or its ignore_index); each epoch runs
 * N / B steps (the N mod B examples left over in each epoch's order are not fed). Hashed into
 * the checkpoints' run signature. Replaces a set given before; the position starts over. */
EG_API eg_status eg_trainer_set_data(eg_trainer *tr, const eg_trainer_array *arrays, int n);
/* The evaluation graph's runtime (the model in eval mode: STEM.eval.json; NULL: none) and its
 * validation set (as eg_trainer_set_data, for its data and label inputs). Its inputs that are
 * parameters or buffers of the step (by name, same dtype and shape) take the step's current
 * values before each evaluation; it has a scalar float output "loss", and an output "output"
 * for top-1. The runtime must outlive the trainer. */
EG_API eg_status eg_trainer_set_eval(eg_trainer *tr, eg_runtime *eval_rt,
                                     const eg_trainer_array *arrays, int n);
/* Instead of a validation set of its own: holds back round(fraction * N) examples of the
 * training set (the last of an order drawn from the seed; the last ones without shuffle) as
 * the validation set of `eval_rt` (its data inputs take the training arrays of the same
 * names), the training set keeping the rest in their order. After eg_trainer_set_data; both
 * sides keep at least one example. The trainer copies the examples it holds. */
EG_API eg_status eg_trainer_hold_out(eg_trainer *tr, eg_runtime *eval_rt, double fraction);
EG_API void eg_trainer_set_callback(eg_trainer *tr, eg_trainer_callback callback, void *user);
/* A log of every event, one JSON object per line, at `path` (NULL: none), appended to with
 * `append` (a resumed run) else written anew: {"event": "step", "epoch", "step", "global_step",
 * "loss", "lr"}, {"event": "epoch", "epoch", "train_loss", "val_loss", "val_accuracy" (with an
 * evaluation set), "seconds", "lr", "zero_grads"}, {"event": "eval", "epoch": 0, "val_loss",
 * "val_accuracy"}; with loss scaling each adds "loss_scale" (the next step's) and
 * "skipped_steps". Each line is flushed as it is written; one that cannot be is EG_ERR_IO from
 * the step that wrote it. */
EG_API eg_status eg_trainer_set_log(eg_trainer *tr, const char *path, bool append);
/* Checkpoints written by the trainer itself at `path` (NULL: none): after every epoch, and
 * within one after every `every_steps` steps (0: epochs only). A temporary file a killed writer
 * left beside `path` ("<path>.tmp.XXXXXX") is removed here. A step that fails then says in its
 * message which checkpoint is intact. */
EG_API eg_status eg_trainer_set_checkpoints(eg_trainer *tr, const char *path,
                                            int64_t every_steps);
/* The next step of the epoch sequence: feeds its batch, draws the random inputs, runs, checks
 * the loss is finite, updates (the optimizer's step) and checks the parameters are; at the end
 * of an epoch evaluates and reports it. *loss (may be NULL): the step's loss. A loss or
 * parameter that is not finite: EG_ERR_RUNTIME, training state as before the update
 * (parameters after a non-finite update are not). EG_ERR_STATE without data. */
EG_API eg_status eg_trainer_step(eg_trainer *tr, double *loss);
/* Steps until `epochs` epochs are done (a total: from a checkpoint after epoch 1, fit(2) runs
 * one more; at or past it, nothing); before the first step of a fresh run, evaluates (EVAL). */
EG_API eg_status eg_trainer_fit(eg_trainer *tr, int64_t epochs);
/* One step on one batch the caller gives (inputs, each of the input's dtype and shape): no data
 * set, order or epochs. Data and label inputs not in `batch` keep the values set in the runtime
 * before; random inputs not in it are drawn as above. For streaming apps (a camera's frames)
 * and `edgegrad run --steps`. */
EG_API eg_status eg_trainer_step_batch(eg_trainer *tr, const eg_trainer_array *batch, int n,
                                       double *loss);
/* The evaluation graph over the validation set with the step's current parameters and
 * buffers. EG_ERR_STATE without one. */
EG_API eg_status eg_trainer_evaluate(eg_trainer *tr, double *loss, double *accuracy);
/* Epochs done, steps done in the next epoch, steps per epoch (0 without data). */
EG_API void eg_trainer_position(const eg_trainer *tr, int64_t *epoch, int64_t *step,
                                int64_t *steps_per_epoch);
/* The sets' sizes: the training set's examples and batch size (each epoch feeds
 * examples / batch batches), the validation set's (0 without one). */
EG_API void eg_trainer_sizes(const eg_trainer *tr, int64_t *examples, int64_t *batch,
                             int64_t *val_examples, int64_t *val_batch);
EG_API eg_optimizer *eg_trainer_optimizer(eg_trainer *tr);
/* A checkpoint (safetensors, written atomically): every parameter and buffer, the optimizer's
 * state, the position, the random stream and the run's signature (optimizer options,
 * schedule, shuffle, seed, normalization, batch, examples, a hash of the data), with a CRC-32
 * over all of it. Loading checks the checksum, the signature against this trainer's (a
 * checkpoint of another run, model or data is refused, naming the first difference), every
 * tensor's name, dtype and shape, and the position against the data, then restores all of it:
 * training continues bit for bit as if uninterrupted. */
EG_API eg_status eg_trainer_save_checkpoint(eg_trainer *tr, const char *path);
EG_API eg_status eg_trainer_load_checkpoint(eg_trainer *tr, const char *path);
/* The parameters and buffers (safetensors, atomically) under their PyTorch state_dict names
 * (model.load_state_dict(..., strict=False) takes them; an input without one under its own
 * name), with metadata format=pt and producer=`producer` (NULL: "edgegrad"). */
EG_API eg_status eg_trainer_save_weights(eg_trainer *tr, const char *path, const char *producer);

/* Sets every parameter and buffer input of `rt` from `path`: a safetensors file holding each
 * under its state_dict name or its input name (other tensors are ignored: a whole state_dict
 * works), or a folder of <input>.npy. Checked whole before any is set. */
EG_API eg_status eg_runtime_load_weights(eg_runtime *rt, const char *path);
/* The same values read for `m` without a runtime: vals[i] (one per input, zeroed by the caller;
 * eg_tensor_free each) for every parameter and buffer input i that `skip` (NULL: none) does not
 * mark. On failure none is held. */
EG_API eg_status eg_model_read_weights(const eg_model *m, const char *path, const bool *skip,
                                       eg_tensor *values);

/* ---- targets -------------------------------------------------------------------------- */

/* A Snapdragon SoC edgegrad compiles for. Strings are static. */
typedef struct eg_target_info {
  const char *soc;      /* "SM8650" — the name --soc takes */
  const char *product;  /* "Snapdragon 8 Gen 3" */
  int htp_arch;         /* HTP generation: 68, 69, 73, 75, 79, 81 */
  int vtcm_mb;          /* VTCM size in MB */
  int has_float;        /* 1 if the NPU runs float (fp16) graphs on this SoC */
  const char *note;     /* why it differs from its generation, or "" */
  int soc_model;        /* QNN's number for the SoC (its HTP backend's soc_model, 57 for
                           SM8650); 0 when not known */
  /* How its HTP computes float graphs, as measured with QNN's HTP emulator: "fp16" (fp16
   * storage: eg_precision FP16), or "none" without a float path. Compiling uses it (fp32
   * where it is "none") unless eg_compile_options.precision says otherwise. */
  const char *float_precision;
} eg_target_info;

EG_API int eg_num_targets(void);
/* Target `index` (0-based, table order). EG_ERR_ARGUMENT if out of range. */
EG_API eg_status eg_get_target(int index, eg_target_info *out, size_t out_size);
#define eg_get_target(index, out) eg_get_target(index, out, sizeof *(out))

/* ---- compiling for the NPU: placement -------------------------------------------------- *
 * The first stage of compiling a model for a SoC decides, node by node, what the NPU (HTP) runs
 * and why the rest stays on the CPU. NPU nodes are grouped into partitions: maximal connected
 * groups that keep the graph acyclic, each run later as one NPU graph (docs/report-format.md).
 *
 * A node stays on the CPU, with one of these reasons, when (first that applies):
 *   - edgegrad has no NPU lowering for its op:    "no NPU lowering for aten.relu"
 *   - it computes in float and the SoC has no fp16 path:
 *         "float ops need HTP V69+ with fp16; SM8350 is V68"
 *   - its lowering needs a newer HTP generation:  "aten.X needs HTP V73+; SM8450 is V69"
 *   - the caller skipped it:                      "skipped by --skip-op aten.relu",
 *                                                 "skipped by --skip-node relu_3"
 *   - the lowering declines this node:            its own reason
 *   - it is a getitem:                            "follows its producer" (getitem nodes always
 *                                                 take their producer's placement)
 *
 * Ops without an NPU lowering stay on the CPU ("no NPU lowering for aten.X"). The placement is
 * one stage: eg_model_save_compiled writes the whole compiled program (below).
 *
 *     const char *skip[] = {"aten.relu"};
 *     eg_compile_options opt = EG_COMPILE_OPTIONS(.soc = "SM8650", .skip_ops = skip,
 *                                                 .num_skip_ops = 1);
 *     eg_compile_report *rep = NULL;
 *     if (eg_compile_report_create(model, &opt, &rep) != EG_OK) { ... eg_last_error() ... }
 *     for (int i = 0; i < eg_compile_report_num_nodes(rep); i++) {
 *       eg_placement_info p;
 *       eg_compile_report_node(rep, i, &p);
 *       printf("%s: %s\n", p.name, p.placement == EG_PLACEMENT_NPU ? "npu" : p.reason);
 *     }
 *     eg_compile_report_write_json(rep, "report.json");
 *     eg_compile_report_destroy(rep);
 */

typedef enum eg_placement { EG_PLACEMENT_CPU = 0, EG_PLACEMENT_NPU = 1 } eg_placement;

typedef struct eg_compile_options {
  size_t struct_size; /* sizeof(eg_compile_options) as the caller declares it */
  /* The target SoC, a name `eg_get_target` lists ("SM8650", case-insensitive). Required. */
  const char *soc;
  /* Ops to keep on the CPU (`edgegrad compile --skip-op`): each a traced target
   * ("aten.add.Tensor"), a target without ".default" ("aten.relu"), or an op name matching all
   * its overloads ("aten.add"). NULL when num_skip_ops is 0. A name that matches no node is not
   * an error: it gives a warning (eg_compile_report_warning). */
  const char *const *skip_ops;
  int num_skip_ops;
  /* Nodes to keep on the CPU by node name (`--skip-node`); unmatched names give a warning. */
  const char *const *skip_nodes;
  int num_skip_nodes;
  /* Non-zero (`--no-fallback`): fail with EG_ERR_UNSUPPORTED when any node would run on the CPU
   * (the message gives the count and the first few nodes with their reasons). */
  int no_fallback;
  /* Debugging (`edgegrad compile --dump-after=PASS`): NULL, a compiler pass's name
   * ("decompose", "layout_nhwc", ...) or "all". Compilation always runs the passes on a copy of
   * the model's graph (the report places the nodes of that compiled graph); with this set,
   * eg_compile_report_create also logs the copy's text IR after that pass (after every pass for
   * "all") to the log callback (eg_set_log_callback) at EG_LOG_DEBUG, one message per dump
   * opening with "# after PASS"; a name that is no pass fails
   * with EG_ERR_ARGUMENT listing the valid ones. Ignored by eg_runtime_create_compiled and
   * eg_model_save_compiled. */
  const char *dump_after;
  /* How the program's NPU partitions compute floats (eg_precision; `--precision`): FP16 for
   * the fp16 storage QNN's HTP computes float graphs in, FP32 for an "ideal NPU" computing in
   * fp32; DEFAULT (0) takes the SoC's (eg_target_info.float_precision: fp16 on every SoC with
   * a float path, fp32 on the others, which place no float partition). A compiled program
   * records it, and its runtimes use it unless eg_runtime_options.precision overrides it;
   * another value is EG_ERR_ARGUMENT. It does not change placement. */
  eg_precision precision;
} eg_compile_options;
/* An initialiser: struct_size set, then `...` (designated initialisers), every other field 0. */
#define EG_COMPILE_OPTIONS(...) {.struct_size = sizeof(eg_compile_options), __VA_ARGS__}
#define EG_COMPILE_OPTIONS_INIT EG_COMPILE_OPTIONS()

typedef struct eg_compile_report eg_compile_report;

/* One node's placement. Strings belong to the report. */
typedef struct eg_placement_info {
  const char *name;        /* the node's name, e.g. "convolution_backward_1" */
  const char *target;      /* its op, e.g. "aten.convolution_backward.default" */
  eg_placement placement;
  int partition;           /* NPU: its partition (0-based); CPU: -1 */
  const char *reason;      /* CPU: why, one sentence; NPU: NULL */
  /* A node the compiler's passes made (e.g. mse_loss_backward decomposed into sub/mul): the
   * name of the traced node it replaces; NULL for a node as traced. */
  const char *source;
  /* Its floating-point operations per step, estimated as the profile does (a multiply-add
   * counts 2: convolutions and each gradient convolution_backward computes 2 * outputs *
   * Cin/groups * kH * kW, matrix products 2 * outputs * K; views and copies 0; any other op
   * one per element it writes). */
  double flops;
} eg_placement_info;

/* Compiles `model` for options->soc as far as placement: the compiler's passes run on a copy of
 * its graph (they may fold, decompose or insert nodes; such nodes carry `source`), then every
 * node of that compiled graph is placed. On success *out owns the result (free with
 * eg_compile_report_destroy); it does not refer to the model, which may be destroyed first.
 * Failures: EG_ERR_ARGUMENT for a NULL argument or an unknown SoC (the message lists the valid
 * names); EG_ERR_NOMEM. With options->no_fallback and a node on the CPU the status is
 * EG_ERR_UNSUPPORTED and *out is STILL set to the full report, so the caller can list the CPU
 * nodes and write the report; it must destroy it. On every other failure *out is NULL. */
EG_API eg_status eg_compile_report_create(const eg_model *model, const eg_compile_options *options,
                                          eg_compile_report **out);
EG_API void eg_compile_report_destroy(eg_compile_report *report);

/* The SoC placed for. */
EG_API void eg_compile_report_target(const eg_compile_report *report, eg_target_info *out,
                                     size_t out_size);
#define eg_compile_report_target(report, out) eg_compile_report_target(report, out, sizeof *(out))
/* The precision the NPU partitions compute floats in (options->precision): "fp32" or "fp16";
 * NULL for a NULL report. */
EG_API const char *eg_compile_report_precision(const eg_compile_report *report);
/* Nodes in graph (topological) order; `index` in [0, num_nodes), else EG_ERR_ARGUMENT. */
EG_API int eg_compile_report_num_nodes(const eg_compile_report *report);
EG_API eg_status eg_compile_report_node(const eg_compile_report *report, int index,
                                        eg_placement_info *out, size_t out_size);
#define eg_compile_report_node(report, index, out) \
  eg_compile_report_node(report, index, out, sizeof *(out))
/* Partitions, numbered in order of their first node. Partition `index` has *num_nodes nodes,
 * given by node index (as in eg_compile_report_node) ascending in *nodes, which the report owns.
 * EG_ERR_ARGUMENT if `index` is out of range. */
EG_API int eg_compile_report_num_partitions(const eg_compile_report *report);
EG_API eg_status eg_compile_report_partition(const eg_compile_report *report, int index,
                                             int *num_nodes, const int32_t **nodes);
/* Warnings about the options, one line each, e.g. "--skip-node relu_9: no node has this name". */
EG_API int eg_compile_report_num_warnings(const eg_compile_report *report);
EG_API const char *eg_compile_report_warning(const eg_compile_report *report, int index);
/* Notes on the placement, one line each, e.g. that a frozen weight is read by the NPU graphs of
 * several partitions (each holds a copy at run time; the .egp stores its bytes once). */
/* The step's estimated FLOPs (eg_placement_info.flops summed over the nodes): *total, and
 * *npu on the nodes the NPU runs (either pointer may be NULL). The NPU's share is npu / total
 * (0 when total is 0). */
EG_API void eg_compile_report_flops(const eg_compile_report *report, double *total, double *npu);
EG_API int eg_compile_report_num_notes(const eg_compile_report *report);
EG_API const char *eg_compile_report_note(const eg_compile_report *report, int index);
/* Writes the report as JSON (docs/report-format.md) to `path`, atomically (a temporary file
 * renamed over `path`). EG_ERR_IO if it cannot be written. */
EG_API eg_status eg_compile_report_write_json(const eg_compile_report *report, const char *path);

/* Compiles `model` for options->soc in memory and creates a runtime that runs it: NPU
 * partitions on the NPU executor (QNN-modelled ops, NHWC), every other node on the portable CPU
 * kernels, with layout conversions at partition boundaries. Use it like eg_runtime_create's.
 * options->no_fallback is ignored here (use eg_compile_report_create to enforce it). */
EG_API eg_status eg_runtime_create_compiled(const eg_model *model,
                                            const eg_compile_options *options, eg_runtime **out);
/* eg_runtime_create_compiled with limits (eg_runtime_options; NULL means none). */
EG_API eg_status eg_runtime_create_compiled_with_options(const eg_model *model,
                                                         const eg_compile_options *options,
                                                         const eg_runtime_options *runtime_options,
                                                         eg_runtime **out);

/* ---- compiled programs (.egp) ----------------------------------------------------------- *
 * A compiled program file holds a model compiled for one SoC: the graph, every node's
 * placement, each NPU partition's QNN graph (ops, params, tensors) and every static (weight)
 * byte exactly once, in one versioned binary (docs/program-format.md). eg_model_load reads it
 * like a graph file (it tells them apart by the file's first bytes, not its name), the result
 * describes the same inputs and outputs, and eg_runtime_create runs it as compiled: NPU
 * partitions on the NPU executor, the rest on the CPU kernels, with the layout and dtype
 * conversions at partition boundaries (eg_runtime_create_compiled would compile its graph
 * again, for the options' SoC). Loading checks every offset, size, count and id; a
 * corrupted file is EG_ERR_FORMAT (or EG_ERR_UNSUPPORTED for another version, op or SoC)
 * with a message "<file>: <section>: <what> (<values>): <rule>".
 *
 *     eg_compile_options opt = EG_COMPILE_OPTIONS(.soc = "SM8650");
 *     eg_model_save_compiled(model, &opt, "step.egp");   // compile and write
 *     eg_model *prog = NULL;
 *     eg_model_load("step.egp", &prog);                  // validated
 *     eg_runtime_create(prog, &rt);                      // runs the compiled program
 */

/* Compiles `model` for options->soc (skip lists honoured, no_fallback ignored) and writes the
 * program to `path` atomically (a temporary file renamed over it). EG_ERR_ARGUMENT for a NULL
 * argument or an unknown SoC; EG_ERR_IO if it cannot be written. */
EG_API eg_status eg_model_save_compiled(const eg_model *model, const eg_compile_options *options,
                                        const char *path);

/* 1 if `model` was loaded from a compiled program file, else 0. */
EG_API int eg_model_is_compiled(const eg_model *model);

/* A compiled model's program. Strings belong to the model. */
typedef struct eg_program_info {
  const char *soc;          /* the SoC it was compiled for, e.g. "SM8650" */
  /* How its NPU partitions compute floats, as compiled (eg_compile_options.precision; a
   * runtime may override it): "fp32" or "fp16". */
  const char *precision;
  int num_partitions;       /* NPU partitions */
  int num_npu_nodes;        /* graph nodes inside them */
  int num_cpu_nodes;        /* graph nodes run on the CPU kernels */
  int num_steps;            /* CPU nodes + partitions, run in order */
  size_t static_bytes;      /* the file's static section: every distinct static byte range once
                               (IR weights and NPU STATIC tensors), 64-byte aligned */
  size_t file_bytes;        /* the file's size */
} eg_program_info;
/* EG_ERR_ARGUMENT if the model is not compiled. */
EG_API eg_status eg_model_program_info(const eg_model *model, eg_program_info *out,
                                       size_t out_size);
#define eg_model_program_info(model, out) eg_model_program_info(model, out, sizeof *(out))

typedef struct eg_npu_partition_info {
  const char *name;         /* its QNN graph's name, "partition_0" */
  int num_nodes;            /* graph nodes it runs, by node index ascending in `nodes` */
  const int32_t *nodes;
  const char *first_node, *last_node; /* names of nodes[0] and nodes[num_nodes - 1] */
  int num_tensors, num_ops;
  int num_inputs, num_outputs; /* boundary values copied in before / out after it runs */
} eg_npu_partition_info;

/* A QNN tensor of a partition (tensor `index` in [0, num_tensors)). */
typedef struct eg_npu_tensor_info {
  const char *name;
  const char *type;         /* "APP_WRITE" (boundary input), "APP_READ" (boundary output),
                               "NATIVE" (intermediate), "STATIC" (weights in the file) */
  const char *dtype;        /* QNN data type: "float32", "int32", "bool8", ... */
  int rank;
  uint32_t dims[EG_MAX_RANK]; /* QNN layout: rank-4 tensors are NHWC */
  size_t nbytes;
  /* Quantized (fixed-point) tensors: "SCALE_OFFSET" or "AXIS_SCALE_OFFSET" (NULL for others);
   * real = scale * (q + offset); per axis: one scale / offset per index of dims[quant_axis]. */
  const char *encoding;
  int quant_axis;           /* AXIS_SCALE_OFFSET; -1 otherwise */
  int num_scales;           /* 1 or dims[quant_axis] */
  const float *scales;      /* owned by the model */
  const int32_t *offsets;
  /* A float32 tensor: the precision its values are stored in when the program runs as
   * compiled, "fp32" or "fp16" (eg_program_info.precision); NULL for other dtypes. */
  const char *precision;
} eg_npu_tensor_info;

/* A QNN op of a partition (op `index` in [0, num_ops), in execution order). */
typedef struct eg_npu_op_info {
  const char *name;
  const char *type;         /* QNN op type: "Conv2d", "Relu", ... */
  int num_inputs;
  const int32_t *inputs;    /* tensor indices; -1 for an omitted optional input */
  int num_outputs;
  const int32_t *outputs;
  int num_params;
} eg_npu_op_info;

/* Partition / tensor / op / param accessors of a compiled model; EG_ERR_ARGUMENT when the
 * model is not compiled or an index is out of range. */
EG_API eg_status eg_model_npu_partition(const eg_model *model, int partition,
                                        eg_npu_partition_info *out, size_t out_size);
EG_API eg_status eg_model_npu_tensor(const eg_model *model, int partition, int tensor,
                                     eg_npu_tensor_info *out, size_t out_size);
EG_API eg_status eg_model_npu_op(const eg_model *model, int partition, int op, eg_npu_op_info *out,
                                 size_t out_size);
#define eg_model_npu_partition(model, partition, out) \
  eg_model_npu_partition(model, partition, out, sizeof *(out))
#define eg_model_npu_tensor(model, partition, tensor, out) \
  eg_model_npu_tensor(model, partition, tensor, out, sizeof *(out))
#define eg_model_npu_op(model, partition, op, out) \
  eg_model_npu_op(model, partition, op, out, sizeof *(out))
/* Param `index` of an op: *name, and its value written into `value` (`size` bytes, always
 * NUL-terminated) as JSON text: 3, 0.5, true, [2, 2], [[1, 1], [0, 0]]; a non-finite float as
 * the string "inf", "-inf" or "nan". */
EG_API eg_status eg_model_npu_op_param(const eg_model *model, int partition, int op, int index,
                                       const char **name, char *value, size_t size);

/* Writes NPU partition `partition` of a compiled model as a standard ONNX model (IR version 8,
 * opset 17) at `path`, atomically: the function the partition computes on its boundary tensors,
 * which are the graph's inputs and outputs in the layout and dtype the CPU side holds them
 * (NCHW, int64), named as `edgegrad run --dump-partitions` names its files; STATIC tensors are
 * initializers (each once); every QNN op becomes the ONNX op(s) that QNN's ONNX Runtime
 * execution provider turns back into it (docs/onnx-export.md), node names leading back to the
 * IR nodes. EG_ERR_ARGUMENT for a model that is not compiled or a partition out of range;
 * EG_ERR_UNSUPPORTED naming the tensor or op for a partition with quantized tensors. */
EG_API eg_status eg_model_export_onnx(const eg_model *model, int partition, const char *path);

/* ---- files ------------------------------------------------------------------------------ */

/* Opens `path` for reading as every edgegrad reader does: a regular file only (symbolic links
 * followed). A FIFO, device, socket or folder is refused with EG_ERR_IO ("<path>: not a
 * regular file (fifo): ...") without anything blocking on it. On success *fd is a blocking,
 * read-only, close-on-exec descriptor (the caller closes it) and *size the file's size. */
EG_API eg_status eg_file_open_read(const char *path, int *fd, uint64_t *size);

/* One run of bytes eg_file_write_atomic writes. */
typedef struct eg_file_part {
  const void *data;
  size_t size;
} eg_file_part;
/* Writes the `n_parts` parts, in order, to `path` atomically, as every edgegrad writer does: into
 * a new file "<path>.tmp.XXXXXX" beside it (a random suffix; created exclusively, so never
 * through an existing file or symbolic link; permissions 0666 less the umask, as any new file),
 * flushed to disk, then renamed over `path`. Readers see the old file or the new one, never a
 * part; a symbolic link at `path` is replaced, not followed. On failure the temporary file is
 * removed, `path` is as it was, and the message names `path`. */
EG_API eg_status eg_file_write_atomic(const char *path, const eg_file_part *parts, int n_parts);

/* ---- .npy files ----------------------------------------------------------------------- */

/* Parses the `size` bytes of a .npy file held in memory (e.g. a member of an .npz archive, or
 * an app's asset) as eg_npy_load reads a file; `name` is the file's name in messages. */
EG_API eg_status eg_npy_parse(const char *name, const void *bytes, size_t size, eg_tensor *out);
/* A source of bytes for eg_npy_read: copies up to `size` bytes into `buf` and returns how many
 * (0 at the end of the source), or -1 on an error. */
typedef int64_t (*eg_read_fn)(void *user, void *buf, size_t size);
/* Reads a .npy file of `size` bytes from `read`, checking what eg_npy_parse checks, without
 * holding its bytes twice: the header is read and checked first (the data must be exactly the
 * `size` bytes after it), then out->data is allocated and the data read straight into it. Reads
 * at most `size` bytes. A source that ends early or fails gives EG_ERR_IO ("<name>: read N of
 * M bytes"). `name` names the file in messages. */
EG_API eg_status eg_npy_read(const char *name, uint64_t size, eg_read_fn read, void *user,
                             eg_tensor *out);
/* Reads a NumPy .npy file (format 1.0/2.0/3.0, little-endian, C order, a dtype edgegrad
 * knows). On success out->data is malloc'ed: free it with eg_tensor_free. */
EG_API eg_status eg_npy_load(const char *path, eg_tensor *out);
/* Writes `t` as a .npy file, atomically (a temporary file renamed over `path`). EG_ERR_ARGUMENT,
 * with nothing written, for a NULL pointer, an invalid dtype or rank, a shape eg_tensor_numel
 * refuses (-1), or NULL data for a non-empty tensor; EG_ERR_IO if it cannot be written. */
EG_API eg_status eg_npy_save(const char *path, const eg_tensor *t);
/* Frees data from eg_npy_load and sets it to NULL. */
EG_API void eg_tensor_free(eg_tensor *t);

/* ---- safetensors files ---------------------------------------------------------------- */

/* A safetensors file (huggingface.co/docs/safetensors) read whole and checked: the weights a
 * graph names, first values for training, trained weights, checkpoints. The layout and every
 * check are documented in src/api/safetensors.c. */
typedef struct eg_safetensors eg_safetensors;

/* A named tensor. Read from a file, `t` is a read-only view into the file's bytes, valid until
 * eg_safetensors_destroy and not necessarily aligned for its dtype (memcpy it out before using
 * it as an array; never eg_tensor_free it); given to eg_safetensors_save, the caller's tensor. */
typedef struct eg_safetensors_entry {
  const char *name;
  eg_tensor t;
} eg_safetensors_entry;

/* A string pair of the file's "__metadata__". */
typedef struct eg_safetensors_meta {
  const char *key;
  const char *value;
} eg_safetensors_meta;

/* Reads the safetensors file `path` (a regular file, see eg_file_open_read; at most 16 GiB, its
 * header at most 100 MiB) and checks every field before anything is used: the header is JSON
 * (no key twice), an object; "__metadata__" an object of strings; every other key a tensor
 * with a dtype edgegrad has, a rank <= EG_MAX_RANK, a shape eg_tensor_numel accepts, and
 * data_offsets [begin, end] inside the data that hold exactly its bytes. EG_ERR_IO (cannot be
 * opened or read), EG_ERR_FORMAT (malformed), EG_ERR_UNSUPPORTED (a dtype or rank edgegrad does
 * not have), EG_ERR_NOMEM; the message starts with `path` and names the tensor or key at
 * fault. *out is NULL on failure; free it with eg_safetensors_destroy. */
EG_API eg_status eg_safetensors_load(const char *path, eg_safetensors **out);
EG_API void eg_safetensors_destroy(eg_safetensors *st);
/* The tensors, in the header's order; *n their count. */
EG_API const eg_safetensors_entry *eg_safetensors_entries(const eg_safetensors *st, int *n);
/* The tensor called `name`, or NULL. */
EG_API const eg_safetensors_entry *eg_safetensors_find(const eg_safetensors *st,
                                                       const char *name);
/* The "__metadata__" pairs, in the header's order; *n their count (0 when there are none). */
EG_API const eg_safetensors_meta *eg_safetensors_metadata(const eg_safetensors *st, int *n);
/* The metadata value of `key`, or NULL. */
EG_API const char *eg_safetensors_meta_get(const eg_safetensors *st, const char *key);
/* Writes the `n` tensors of `entries` (their bytes back to back, in this order, the first at an
 * 8-byte aligned offset of the file) and, when n_meta > 0, the `n_meta` pairs of `meta` as
 * "__metadata__" to `path` atomically (as eg_file_write_atomic). The same tensors and metadata
 * give the same bytes. EG_ERR_ARGUMENT, with nothing written, for a NULL pointer, a name or key
 * twice, the name "__metadata__", a name, key or value that is not UTF-8, a dtype or shape
 * eg_npy_save refuses, or NULL data for a non-empty tensor; EG_ERR_IO if it cannot be written;
 * EG_ERR_NOMEM. */
EG_API eg_status eg_safetensors_save(const char *path, const eg_safetensors_entry *entries,
                                     int n, const eg_safetensors_meta *meta, int n_meta);

/* ---- comparing outputs ---------------------------------------------------------------- */

/* The project's tolerance (the pass rule of the CLI's --expect and of the tests): a float
 * element passes when, computed in float64,
 *     |got - want| <= rtol * |want| + atol_scale * max(1, max |want| over finite want),
 * with NaN passing only where want is NaN and an infinity only where want holds the same
 * infinity; integer and bool elements must be equal; an empty tensor passes. */
#define EG_COMPARE_RTOL 1e-4
#define EG_COMPARE_ATOL 1e-5

typedef struct eg_compare_result {
  int64_t num_bad; /* elements out of tolerance; 0 when got passes */
  int64_t worst;   /* C-order index of the element furthest out of tolerance (a NaN or infinity
                      mismatch counts as infinitely far; the first of equals; for integers the
                      first differing one); -1 when num_bad is 0 */
  double got;      /* got's value at `worst` (0 when none) */
  double want;     /* want's value at `worst` (0 when none) */
  double err;      /* |got - want| at `worst`: NaN or inf for a non-finite mismatch */
  double tol;      /* the tolerance at `worst` (0 for integers) */
  double max_err;  /* the largest finite |got - want| over all elements */
} eg_compare_result;

/* Compares `got` with the reference `want` under the rule above (pass EG_COMPARE_RTOL and
 * EG_COMPARE_ATOL for the project's tolerance, smaller values for a tighter one) and fills *out.
 * EG_OK means the comparison ran: got passes when out->num_bad is 0. EG_ERR_ARGUMENT for a NULL
 * pointer, an invalid tensor, a negative or non-finite tolerance, or got and want differing in
 * dtype or shape. */
EG_API eg_status eg_tensor_compare(const eg_tensor *got, const eg_tensor *want, double rtol,
                                   double atol_scale, eg_compare_result *out, size_t out_size);
#define eg_tensor_compare(got, want, rtol, atol_scale, out) \
  eg_tensor_compare(got, want, rtol, atol_scale, out, sizeof *(out))

#ifdef __cplusplus
}
#endif
#endif
