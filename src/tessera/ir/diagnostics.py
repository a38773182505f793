"""Coded diagnostics: every error Tessera reports has a stable code, a message and a hint.

Codes are part of the public contract (tests and users match on them), so they
live in one registry and are never renamed. `TesseraError` carries the code,
the offending op (when there is one) and the hint; `format_diagnostic` prints
it MLIR-style as `file:line:col: error: CODE: message`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.utils.exceptions import VerifyException  # 1 module, cheap: xdsl's passes report a TesseraError as theirs


@dataclass(frozen=True)
class Code:
    name: str
    summary: str
    hint: str


_REGISTRY: dict[str, Code] = {}


def _code(name: str, summary: str, hint: str) -> Code:
    code = Code(name, summary, hint)
    _REGISTRY[name] = code
    return code


# --- parsing and generic IR structure ---------------------------------------
IR_PARSE = _code("IR_PARSE", "the input is not valid IR text",
                 "check the text near the reported position against the op's assembly format")
IR_VERIFY = _code("IR_VERIFY", "an op failed a structural check",
                  "read the message: it names the op and the violated rule")
IR_DOMINANCE = _code("IR_DOMINANCE", "a value is used where its definition does not dominate",
                     "define the value before the use, in the same or an enclosing block")
IR_INPUT = _code("IR_INPUT", "the input could not be read",
                 "pass a readable UTF-8 .mlir file or '-' for stdin")
# --- tile types ---------------------------------------------------------------
TILE_TYPE_INVALID = _code("TILE_TYPE_INVALID", "a !tile.tile type is malformed",
                          "write !tile.tile<DIMSxELEM> or !tile.tile<DIMSxELEM, SPACE> with positive static dims "
                          "and SPACE one of reg, smem, global")
TILE_FRAGMENT_BARE = _code("TILE_FRAGMENT_BARE", "a fragment type has no parameters",
                           "write the whole contract: !tile.fragment<m=16, n=8, k=16, elem=bf16, acc=f32, "
                           "role=\"acc\", layout=\"row\", family=\"mma_sync\">")
TILE_FRAGMENT_PARAM_INVALID = _code("TILE_FRAGMENT_PARAM_INVALID", "a fragment type parameter has an illegal value",
                                    "m, n, k are positive; role is a|b|acc; layout is row|col; "
                                    "family is auto|mma_sync|wgmma; elem is bf16|f16|f32; acc is f32|f16")
# --- fragment contract (type equality) --------------------------------------
TILE_FRAGMENT_ROLE_MISMATCH = _code("TILE_FRAGMENT_ROLE_MISMATCH", "a fragment has the wrong role",
                                    "mma takes role a, role b and role acc fragments, in that order; "
                                    "a loop-carried accumulator keeps role acc")
TILE_FRAGMENT_FAMILY_MISMATCH = _code("TILE_FRAGMENT_FAMILY_MISMATCH", "fragments of different families meet",
                                      "the family fixes the register layout: convert explicitly or keep one family "
                                      "('auto' equals only 'auto')")
TILE_FRAGMENT_ACC_MISMATCH = _code("TILE_FRAGMENT_ACC_MISMATCH", "fragments disagree on the accumulator type",
                                   "use one accumulator type (e.g. f32) for every operand and the loop-carried value")
TILE_FRAGMENT_ELEM_MISMATCH = _code("TILE_FRAGMENT_ELEM_MISMATCH", "fragments disagree on the input element type",
                                    "convert the operands to one element type before packing")
TILE_FRAGMENT_SHAPE_MISMATCH = _code("TILE_FRAGMENT_SHAPE_MISMATCH", "fragments disagree on m, n or k",
                                     "all fragments of one mma share (m, n, k)")
TILE_FRAGMENT_LAYOUT_MISMATCH = _code("TILE_FRAGMENT_LAYOUT_MISMATCH", "fragments disagree on layout",
                                      "keep the layout of a loop-carried fragment unchanged")
TILE_FRAGMENT_FOOTPRINT = _code("TILE_FRAGMENT_FOOTPRINT", "a fragment does not fit the tile it is taken from or written to",
                                "warps * fragment shape must fit inside the tile")
TILE_FAMILY_UNSUPPORTED_ARCH = _code("TILE_FAMILY_UNSUPPORTED_ARCH", "a fragment's family cannot run on the target arch",
                                     "mma_sync needs sm_80 or newer and wgmma needs sm_90a exactly: pick another "
                                     "family, family=\"auto\", or another arch")
# --- tile ops -----------------------------------------------------------------
TILE_MMA_SHAPE_MISMATCH = _code("TILE_MMA_SHAPE_MISMATCH", "mma operand shapes do not agree",
                                "a is MxK, b is KxN and the accumulator is MxN")
TILE_MMA_DTYPE_MISMATCH = _code("TILE_MMA_DTYPE_MISMATCH", "mma operand element types are not a supported combination",
                                "a and b share bf16, f16 or f32; the accumulator is f32 (or f16 for f16 inputs)")
TILE_TYPE_MISMATCH = _code("TILE_TYPE_MISMATCH", "operands of an elementwise op differ in type",
                           "broadcast or convert explicitly so that all operands share shape and element type")
TILE_SHAPE_MISMATCH = _code("TILE_SHAPE_MISMATCH", "tile shapes are incompatible for this op",
                            "read the op's shape rule in the message")
TILE_ELEMENT_TYPE_INVALID = _code("TILE_ELEMENT_TYPE_INVALID", "the op does not accept this element type",
                                  "float ops take bf16/f16/f32/f64 tiles; select takes an i1 condition")
TILE_SPACE_INVALID = _code("TILE_SPACE_INVALID", "a tile is in the wrong memory space for this op",
                           "values live in reg; tile.alloc gives smem buffers; tile.view gives global views")
TILE_MEMREF_MISMATCH = _code("TILE_MEMREF_MISMATCH", "a tile and a memref disagree",
                             "give one index per memref dimension, a tile rank <= memref rank and the same element type")
TILE_ATTR_INVALID = _code("TILE_ATTR_INVALID", "an op attribute has an illegal value",
                          "read the message for the accepted values")
TILE_LOOP_TYPE_MISMATCH = _code("TILE_LOOP_TYPE_MISMATCH", "scf.for iter_arg, block argument, yield and result types differ",
                                "a loop-carried value keeps one type: init, block argument, yield and result")
# --- passes and pipelines ------------------------------------------------------
OPT_PIPELINE_SYNTAX = _code("OPT_PIPELINE_SYNTAX", "the pass pipeline string is malformed",
                            "write builtin.module(pass-a{opt=v},pass-b) or pass-a{opt=v},pass-b")
OPT_PASS_UNKNOWN = _code("OPT_PASS_UNKNOWN", "the pipeline names a pass that does not exist",
                         "run tessera-opt --help for the list of passes")
OPT_OPTION_UNKNOWN = _code("OPT_OPTION_UNKNOWN", "a pass was given an option it does not have",
                           "run tessera-opt --help for each pass's options")
OPT_OPTION_INVALID = _code("OPT_OPTION_INVALID", "a pass option has a value of the wrong type or range",
                           "run tessera-opt --help for each option's type")
OPT_OPTION_MISSING = _code("OPT_OPTION_MISSING", "a required pass option is missing",
                           "required options (arch among them) have no default: give them in the pipeline")
OPT_PASS_FAILED = _code("OPT_PASS_FAILED", "a pass stopped with an internal error instead of a coded diagnostic",
                        "this is a bug in the named pass: report it with the input file and the pipeline")
OPT_COMMAND_LINE = _code("OPT_COMMAND_LINE", "the tessera-opt command line is malformed",
                         "run tessera-opt --help for the accepted arguments")
OPT_OUTPUT = _code("OPT_OUTPUT", "the output file could not be written",
                   "pass -o a writable path, or '-' for stdout")
OPT_DIAGNOSTIC_MISSING = _code("OPT_DIAGNOSTIC_MISSING", "an expected-error annotation matched no diagnostic",
                               "the annotated line must produce an error whose 'CODE: message' contains the text; "
                               "fix the input or the annotation")
OPT_DIAGNOSTIC_UNEXPECTED = _code("OPT_DIAGNOSTIC_UNEXPECTED", "a diagnostic matched no expected-error annotation",
                                  "annotate the line with // expected-error {{CODE}} (or @+N/@-N from another line), "
                                  "or fix the input")
OPT_DIAGNOSTIC_ANNOTATION = _code("OPT_DIAGNOSTIC_ANNOTATION", "an expected-error annotation is malformed",
                                  "write // expected-error {{TEXT}}, // expected-error@+N {{TEXT}} or "
                                  "// expected-error@-N {{TEXT}}")
TILE_FRAGMENT_UNSUPPORTED = _code("TILE_FRAGMENT_UNSUPPORTED", "tile-to-fragments cannot map this mma onto tensor-core fragments",
                                  "use bf16/f16 operands, an f32 accumulator and tile shapes whose per-warp m, n, k are "
                                  "multiples of the arch's instruction (mma_sync m16n8k16, wgmma m64nNk16)")
TILE_PIPELINE_UNSUPPORTED = _code("TILE_PIPELINE_UNSUPPORTED", "pipeline-smem cannot software-pipeline this loop",
                                  "pipeline-smem handles K-loops whose async copies read views of the induction variable "
                                  "and loop invariants into buffers used only by that loop; use stages=1 otherwise")


# --- reference interpreter (tessera.reference) ---------------------------------
REF_FUNC_NOT_FOUND = _code("REF_FUNC_NOT_FOUND", "the module has no function of that name, or several and none was named",
                           "pass func_name= naming one func.func of the module")
REF_GRID_INVALID = _code("REF_GRID_INVALID", "the launch grid is malformed",
                         "give the grid as a positive int or a tuple of 1 to 3 positive ints")
REF_ARG_COUNT = _code("REF_ARG_COUNT", "the number of arguments differs from the kernel signature",
                      "pass one value per func.func argument, in order")
REF_ARG_KIND = _code("REF_ARG_KIND", "an argument is not the kind of value its parameter takes",
                     "memref parameters take numpy arrays; index/iN parameters take Python ints; float parameters "
                     "take Python floats")
REF_ARG_RANK = _code("REF_ARG_RANK", "an array argument has the wrong number of dimensions",
                     "reshape the array to the memref's rank")
REF_ARG_DTYPE = _code("REF_ARG_DTYPE", "an array argument has the wrong element type",
                      "convert with .astype(): bf16 is ml_dtypes.bfloat16, f16 np.float16, f32 np.float32, "
                      "f64 np.float64, i32 np.int32")
REF_ARG_SHAPE = _code("REF_ARG_SHAPE", "an array argument disagrees with a static dimension of its memref",
                      "static memref dims must equal the array's; use ? for a dimension that varies")
REF_ARG_LAYOUT = _code("REF_ARG_LAYOUT", "an array argument is not C-contiguous",
                       "pass np.ascontiguousarray(x): the compiled kernel indexes C-contiguous arrays only")
REF_ARG_ALIAS = _code("REF_ARG_ALIAS", "an array the kernel writes shares memory with another argument",
                      "pass a separate output array: the compiled kernel's pointers are __restrict__")
REF_ARG_VALUE = _code("REF_ARG_VALUE", "a scalar argument is out of range for its type",
                      "pass a value representable in the parameter's type")
REF_ARG_READONLY = _code("REF_ARG_READONLY", "the kernel writes to an array argument that is read-only",
                         "pass a writeable array (e.g. np.array(x) or x.copy()) for every output")
REF_LOOP_STEP = _code("REF_LOOP_STEP", "a loop's step is not positive at run time",
                      "scf.for (tl.range) needs a step > 0; a zero or negative step never ends on the GPU")
REF_OP_UNSUPPORTED = _code("REF_OP_UNSUPPORTED", "the reference interpreter has no implementation for an op",
                           "run Tile or Fragment IR (before lower-tile-to-nv); target ops run only on the GPU")
REF_FRAGMENT_BOUNDS = _code("REF_FRAGMENT_BOUNDS", "a fragment window reaches outside the tile it is packed from",
                            "offsets plus warps * fragment shape must stay inside the source tile")
REF_WARP_GRID_MISMATCH = _code("REF_WARP_GRID_MISMATCH", "fragments built for different warp grids meet",
                               "use one warps [wm, wn] for every pack, store and unpack of a fragment chain")
REF_TOKEN_INVALID = _code("REF_TOKEN_INVALID", "tile.wait got a value that no tile.async_copy produced",
                          "wait only on tokens returned by tile.async_copy")
REF_EXEC_FAILED = _code("REF_EXEC_FAILED", "an op failed while the reference interpreter ran it",
                        "read the message: it names the op and the failing value")


# --- kernel surface ---------------------------------------------------------------
DSL_OUTSIDE_TRACE = _code("DSL_OUTSIDE_TRACE", "a kernel-language function was called outside a kernel trace",
                          "call it inside a function decorated with @tessera.kernel and trace that with "
                          "f.trace(...) (did you forget @tessera.kernel?)")
DSL_KERNEL_CALL = _code("DSL_KERNEL_CALL", "a @tessera.kernel function was called directly",
                        "trace it with f.trace(*arg_specs, **meta) and run the traced IR (reference interpreter "
                        "or runtime); inside another kernel's body a kernel call is inlined")
DSL_SOURCE = _code("DSL_SOURCE", "the kernel's source is not available or is not a plain function",
                   "write kernels as def functions in a .py file so inspect.getsource can read them")
DSL_SIGNATURE = _code("DSL_SIGNATURE", "the trace arguments do not match the kernel's signature",
                      "pass one arg spec per positional parameter and every meta-parameter (keyword-only) by "
                      "keyword; *args and **kwargs are not allowed in a kernel signature")
DSL_ARG_SPEC = _code("DSL_ARG_SPEC", "an argument spec is malformed",
                     "use tessera.tensor(shape, dtype) with int or str dims, tessera.scalar(f32|i32|index), "
                     "a numpy array, a Python float or int, or None for an absent optional argument")
DSL_DTYPE_INVALID = _code("DSL_DTYPE_INVALID", "an element type is unknown or not allowed here",
                          "use one of bf16, f16, f32, f64, i32, i1, index (tessera.tl.f32, 'f32', np.float32, ...)")
DSL_DTYPE_MISMATCH = _code("DSL_DTYPE_MISMATCH", "operands have different element types",
                           "convert one operand explicitly with .to(dtype); Tessera does not promote implicitly")
DSL_SHAPE_MISMATCH = _code("DSL_SHAPE_MISMATCH", "tile shapes are incompatible for this operation",
                           "elementwise operands have equal rank and dims that are equal or 1; dot takes MxK and "
                           "KxN tiles and an MxN accumulator")
DSL_SHAPE_INVALID = _code("DSL_SHAPE_INVALID", "a tile shape is not a tuple of positive Python ints",
                          "tile shapes are static: use ints or meta-parameters, or make the tensor dimension "
                          "static in its tessera.tensor spec")
DSL_AXIS_INVALID = _code("DSL_AXIS_INVALID", "an axis is out of range",
                         "program_id/num_programs take 0, 1 or 2; reductions and iota take an axis of the tile")
DSL_OFFSETS_INVALID = _code("DSL_OFFSETS_INVALID", "a load or store has the wrong offsets for its tensor",
                            "give one offset per tensor dimension (ints or index scalars); the tile covers the "
                            "trailing dims and its rank is at most the tensor's")
DSL_OPERAND_INVALID = _code("DSL_OPERAND_INVALID", "an operand is not the kind of value the operation takes",
                            "tiles come from tl.load, tl.zeros, tl.full, tl.arange and tile arithmetic; tensors are "
                            "kernel arguments; scalars are index, i32 or f32 values")
DSL_UNSUPPORTED = _code("DSL_UNSUPPORTED", "the operation is not supported on traced values",
                        "read the message for the supported alternative")
DSL_TRACED_BOOL = _code("DSL_TRACED_BOOL", "a traced value was used where Python needs a concrete value",
                        "branch on tiles with tl.where; branch on compile-time values by making them "
                        "meta-parameters (keyword-only)")
DSL_LOOP_ESCAPE = _code("DSL_LOOP_ESCAPE", "a value defined inside a tl.range loop is used outside it",
                        "initialise the name before the loop so that it is loop-carried, or use it only inside the loop")
DSL_LOOP_CARRIED = _code("DSL_LOOP_CARRIED", "a loop-carried value changes type or kind in the loop body",
                         "a loop-carried name keeps one type: initialise it before the loop with its final type "
                         "(tl.zeros, tl.full, .to(dtype))")
DSL_LOOP_SYNTAX = _code("DSL_LOOP_SYNTAX", "a tl.range loop uses syntax that cannot become scf.for",
                        "a tl.range loop has one name as its target and no break, continue, return, yield or else")
DSL_LOOP_BOUNDS = _code("DSL_LOOP_BOUNDS", "a tl.range bound is not an integer",
                        "bounds and step are Python ints or index/i32 scalars; a constant step is positive")
DSL_KERNEL_RETURN = _code("DSL_KERNEL_RETURN", "a kernel body returned a value",
                          "kernels return nothing: write results to an output tensor with tl.store")
DSL_META_INVALID = _code("DSL_META_INVALID", "a meta-parameter has a value the kernel does not accept",
                         "read the kernel's docstring for the accepted meta-parameter values")


# --- codegen toolchain (tessera.target.nvidia.toolchain: NVRTC, SASS) -----------------------------
CODEGEN_TOOLCHAIN_MISSING = _code("CODEGEN_TOOLCHAIN_MISSING", "a CUDA toolchain component (NVRTC, cuobjdump/nvdisasm) "
                                  "could not be found or loaded",
                                  "pip install the pinned nvidia-cuda-nvrtc, nvidia-cuda-cuobjdump, "
                                  "nvidia-cuda-nvdisasm, cuda-bindings and cuda-core (./run.sh installs them)")
CODEGEN_ARCH_UNSUPPORTED = _code("CODEGEN_ARCH_UNSUPPORTED", "the target arch is malformed or this NVRTC cannot build it",
                                 "write sm_<major><minor>[a], e.g. sm_80, sm_86, sm_89, sm_90 or sm_90a")
CODEGEN_OPTION_INVALID = _code("CODEGEN_OPTION_INVALID", "a compile option is unknown or has a value of the wrong type",
                               "use the option names of tessera.target.nvidia.toolchain.nvrtc.OPTION_TYPES with bool, int or str values")
CODEGEN_COMPILE_FAILED = _code("CODEGEN_COMPILE_FAILED", "NVRTC (or ptxas inside it) rejected the CUDA C++ source",
                               "read the compiler log in the message; an instruction the arch lacks (wgmma on sm_90) "
                               "belongs in a lowering-time arch check")
CODEGEN_SASS_FAILED = _code("CODEGEN_SASS_FAILED", "the disassembler could not read the cubin",
                            "pass the cubin bytes of a CompiledArtifact; a truncated or corrupted cubin cannot be read")
# --- runtime (tessera.runtime: device, load, launch) -------------------------------
RUNTIME_NO_DEVICE = _code("RUNTIME_NO_DEVICE", "no CUDA device is available",
                          "run on a machine with an NVIDIA GPU and driver, or use the CPU reference interpreter "
                          "explicitly")
RUNTIME_LOAD_FAILED = _code("RUNTIME_LOAD_FAILED", "the cubin could not be loaded for this device",
                            "recompile for the device's arch (tessera.runtime.device_info().arch); a cubin whose bytes "
                            "do not match its hash is never loaded")
RUNTIME_ARG_INVALID = _code("RUNTIME_ARG_INVALID", "a launch argument does not fit its kernel parameter",
                            "pass one argument per parameter: device arrays (torch/cupy, __cuda_array_interface__ or "
                            "DLPack) or numpy arrays of the declared dtype, C-contiguous and large enough; ints and "
                            "floats in range")
RUNTIME_LAUNCH_FAILED = _code("RUNTIME_LAUNCH_FAILED", "the kernel launch or its execution failed",
                              "read the driver error in the message: check grid, block, shared memory and the "
                              "kernel's memory accesses (an execution fault poisons the CUDA context)")
RUNTIME_LAUNCH_TIMEOUT = _code("RUNTIME_LAUNCH_TIMEOUT", "a kernel did not finish within the launch time bound",
                               "a kernel that waits forever (a deadlocked barrier or pipeline) ends here instead of "
                               "hanging the process; raise the bound with TESSERA_LAUNCH_TIMEOUT_S (seconds, or 0 for "
                               "none) if the kernel is merely long")
RUNTIME_TMA_INVALID = _code("RUNTIME_TMA_INVALID", "an array cannot be described by a TMA tensor map",
                            "TMA reads bf16/f16/f32 arrays of 2 to 5 dims, non-empty, with contiguous rows, a 16-byte aligned base address "
                            "and a row pitch that is a multiple of 16 bytes (pad the row length if needed)")


# --- nv target (lower-tile-to-nv, tessera.target.nvidia.ir.ops) and CUDA emission ------------
NV_ARCH_UNSUPPORTED = _code("NV_ARCH_UNSUPPORTED", "an instruction or fragment family needs an arch the target is not",
                            "mma.sync and cp.async need sm_80 or newer, wgmma needs sm_90a exactly: pick a family "
                            "the arch has (tile-to-fragments with the same arch does) or another arch")
NV_OP_INVALID = _code("NV_OP_INVALID", "an nv op failed a structural check",
                      "read the message: it names the operand, its type and the rule (register counts follow the "
                      "lane map or the blocked distribution)")
NV_LOWER_UNSUPPORTED = _code("NV_LOWER_UNSUPPORTED", "lower-tile-to-nv cannot lower this op or type",
                             "read the message for what is supported; run tile-to-fragments first so that every "
                             "tile.mma is a fragment_mma of a family the arch has")
NV_THREADS_MISMATCH = _code("NV_THREADS_MISMATCH", "fragment ops of one kernel use warp grids of different sizes",
                            "use warps [wm, wn] with one product wm*wn in every fragment op of a kernel, or set "
                            "the func attribute nv.num_threads to 32*wm*wn")
NV_SMEM_OVERFLOW = _code("NV_SMEM_OVERFLOW", "the kernel needs more shared memory than the arch has per CTA",
                         "use smaller tiles or fewer pipeline stages (sm_80: 163 KiB, sm_86/sm_89: 99 KiB, "
                         "sm_90: 227 KiB)")
NV_WGMMA_UNSUPPORTED = _code("NV_WGMMA_UNSUPPORTED", "warp-specialize cannot lower this wgmma kernel",
                             "the sm_90a lowering takes one top-level loop whose tile.dots read tiles loaded (in the "
                             "loop, or once before it) from kernel arguments, or A from registers, with register "
                             "math around them; other kernels target sm_90 (mma.sync)")
EMIT_UNKNOWN_OP = _code("EMIT_UNKNOWN_OP", "CUDA emission met an op it has no text for",
                        "only nv, arith, math, scf.for/yield and func ops can be emitted: run lower-tile-to-nv "
                        "(every pipeline that runs a generator must include it)")
EMIT_UNSUPPORTED = _code("EMIT_UNSUPPORTED", "CUDA emission cannot express a value or type",
                         "read the message: kernel arguments are memrefs and index/integer/float scalars, memrefs "
                         "are kernel arguments, one func.func per kernel")


# --- compile driver and user-facing ops (tessera.compile, tessera.ops) -------------
COMPILE_INPUT_INVALID = _code("COMPILE_INPUT_INVALID", "tessera.compile was given something that is not a traced kernel",
                              "trace the kernel first: tessera.compile(my_kernel.trace(*specs, **meta), arch='sm_90') "
                              "(did you forget .trace(...)?)")
COMPILE_PIPELINE_INCOMPLETE = _code("COMPILE_PIPELINE_INCOMPLETE", "a tile.* op survived the compile pipeline and "
                                    "would reach CUDA emission",
                                    "compile with the named pipeline tessera-lower-to-nv{arch=...}; a custom pipeline "
                                    "must run tile-to-fragments and lower-tile-to-nv")
COMPILE_LAUNCH_SHAPE_INVALID = _code("COMPILE_LAUNCH_SHAPE_INVALID", "a launch-shape knob has a bad value, or two "
                                     "knobs do not go together",
                                     "see tessera.compiler.launch_shape: stages 1-8, schedule cooperative|pingpong, "
                                     "cluster 1|2, splitk 1-16, multicast b|a|k (with cluster 2), streamk (not with "
                                     "splitk > 1), fixup gather|scatter (scatter: splitk > 1, cooperative, cluster 1, "
                                     "static tiles, TMA store)")
COMPILE_ARCH_MISMATCH = _code("COMPILE_ARCH_MISMATCH", "the pipeline lowered the kernel for another arch than the "
                              "cubin is built for",
                              "give the same arch to the pipeline and to tessera.compile (the default pipeline does)")
# Performance findings of the compile report (tessera.compiler.report): warnings, never errors.
COMPILE_PERF_SPILL = _code("COMPILE_PERF_SPILL", "the kernel keeps values in local memory (cuobjdump reports "
                           "LOCAL bytes per thread)",
                           "lower the register pressure: smaller tiles (BM, BN), fewer live values in the "
                           "epilogue, or more threads per tile; ck.report.text() shows registers and occupancy")
COMPILE_PERF_STACK = _code("COMPILE_PERF_STACK", "the kernel has a stack frame: spilled registers, a run-time "
                           "indexed local array or a call that was not inlined",
                           "ptxas puts register spills in the stack frame: lower the register pressure (smaller "
                           "tiles, fewer live values) and index register arrays only with compile-time constants")
COMPILE_PERF_REGISTER_LIMIT = _code("COMPILE_PERF_REGISTER_LIMIT", "the kernel uses every register a thread can "
                                    "have (255), so ptxas had no room left",
                                    "expect spills or a reordered schedule: use smaller tiles or more warps per "
                                    "tile so each thread holds fewer accumulator values")
COMPILE_PERF_WGMMA_SERIALIZED = _code("COMPILE_PERF_WGMMA_SERIALIZED", "ptxas serialised the kernel's wgmma "
                                      "instructions (C7513 and its kin in the NVRTC log)",
                                      "no register a wgmma reads or accumulates into may be written while a wgmma "
                                      "group is in flight: wait for the group (wgmma.wait_group) before touching "
                                      "its registers, and keep wgmma accumulators out of non-wgmma code")
COMPILE_LAUNCH_INVALID = _code("COMPILE_LAUNCH_INVALID", "a one-line launch kernel[grid](...) has a malformed grid, "
                               "lane or launch keyword",
                               "give the grid as 1 to 3 positive ints or a function of the meta-parameters returning "
                               "them, lane='cuda' or 'reference' (TESSERA_INTERPRET=1), and keep lane/stream/arch/"
                               "launch_shape out of the kernel's parameter names")
COMPILE_PERF_DOT_ON_CUDA_CORES = _code("COMPILE_PERF_DOT_ON_CUDA_CORES", "a tile dot of the kernel runs on CUDA "
                                       "cores: its machine code has no HMMA or HGMMA",
                                       "pass bf16 or f16 operands (f32 operands are never rounded to tf32, so they "
                                       "multiply with FFMA), and compile for sm_80 or newer (sm_90a for wgmma)")
OPS_NO_GPU = _code("OPS_NO_GPU", "the op was asked to run on the GPU (lane 'auto' or 'cuda') but there is no CUDA device",
                   "run on a machine with an NVIDIA GPU and driver, or ask for the CPU reference interpreter "
                   "explicitly with lane='reference' (results then say lane='reference')")
OPS_LANE_INVALID = _code("OPS_LANE_INVALID", "the op was given an unknown lane",
                         "pass lane='auto' (the GPU, or an error without one), 'cuda' or 'reference'")
OPS_ARG_TYPE = _code("OPS_ARG_TYPE", "an op argument is not an array the op can take",
                     "pass numpy arrays (copied to the device and back) or CUDA arrays: torch tensors or objects "
                     "with __cuda_array_interface__ (cupy, numba)")
OPS_ARG_DTYPE = _code("OPS_ARG_DTYPE", "an op argument has an unsupported element type, or operands disagree on it",
                      "read the op's docstring for its dtypes: operands of one product share bf16, f16 or f32; "
                      "convert explicitly (Tessera does not promote)")
OPS_ARG_SHAPE = _code("OPS_ARG_SHAPE", "an op argument has the wrong rank or shape for the others",
                      "read the message for the expected shape: it names each dimension and where it comes from")
OPS_ARG_LAYOUT = _code("OPS_ARG_LAYOUT", "an op argument is not C-contiguous",
                       "pass contiguous arrays (x.contiguous() in torch, np.ascontiguousarray / cupy.ascontiguousarray); "
                       "use trans_a/trans_b for a transposed GEMM operand")
OPS_ARG_DEVICE = _code("OPS_ARG_DEVICE", "op arguments live in places the lane cannot use together",
                       "the cuda lane takes all arrays on one GPU, or all numpy arrays; the reference lane takes numpy "
                       "arrays (copy device arrays to the host first)")
OPS_ARG_ALIGNMENT = _code("OPS_ARG_ALIGNMENT", "a device array's address is not a multiple of its element size",
                          "pass arrays from a framework allocator (torch, cupy), not byte-offset views; 16-byte "
                          "aligned arrays also take the vectorised copy path")
OPS_ARG_ALIAS = _code("OPS_ARG_ALIAS", "an output array overlaps an input array",
                      "write to a fresh array (leave out=None) or to one that shares no memory with the inputs; "
                      "only gemm's c may be its out")
OPS_ARG_READONLY = _code("OPS_ARG_READONLY", "an output array is read-only",
                         "pass a writeable array as out= (np.array(x) or x.copy())")
OPS_ARG_VALUE = _code("OPS_ARG_VALUE", "an op option has a value the op does not accept",
                      "read the message for the accepted values (e.g. activation in none/relu/gelu/silu, real "
                      "alpha/beta/scale, bool flags)")
OPS_GQA_HEADS = _code("OPS_GQA_HEADS", "attention query heads are not a multiple of the key/value heads",
                      "grouped-query attention needs q heads H = G * H_kv with k and v sharing H_kv heads")
OPS_BACKWARD_UNSUPPORTED = _code("OPS_BACKWARD_UNSUPPORTED", "a gradient was asked of an op that has no backward "
                                 "kernel yet", "detach the op's inputs (or wrap the call in torch.no_grad()) for "
                                 "inference, or use an op with a backward (tessera gemm) for the trained part")
OPS_AUTOTUNE_INPUT = _code("OPS_AUTOTUNE_INPUT", "the autotuner was given a malformed op name, key, candidate list "
                           "or measure function",
                           "pass tune(op: str, key: dict of str/int/float/bool, candidates: non-empty list of such "
                           "dicts, measure: callable(config) -> seconds)")
OPS_AUTOTUNE_FAILED = _code("OPS_AUTOTUNE_FAILED", "every autotuning candidate failed to compile, launch or measure",
                            "read each candidate's error in the message; add a config the target can run, or fix "
                            "the lowering it needs")
OPS_AUTOTUNE_PIN_INVALID = _code("OPS_AUTOTUNE_PIN_INVALID", "a pinned autotuning config is malformed or names "
                                 "parameters no candidate has",
                                 "write TESSERA_PIN_<OP>=BM=128,BN=256,BK=64,stages=4 (NAME=VALUE pairs, commas "
                                 "between) or pin(op, {...}, **key_subset) naming every parameter of a candidate")
OPS_AUTOTUNE_CACHE_CORRUPT = _code("OPS_AUTOTUNE_CACHE_CORRUPT", "the autotuning cache file (or an entry in it) "
                                   "could not be read or written; it is ignored (a warning)",
                                   "nothing to do: the next tune re-measures and rewrites it; delete "
                                   "$TESSERA_CACHE_DIR/autotune.json to start afresh")

# --- benchmarking helpers (tessera.testing) ------------------------------------------
BENCH_ARG_INVALID = _code("BENCH_ARG_INVALID", "a timing or perf-report helper got a malformed argument",
                          "read the message: do_bench takes a callable and positive warmup/rep in ms; a Benchmark "
                          "needs non-empty x_names, x_vals and line_vals")
BENCH_UNAVAILABLE = _code("BENCH_UNAVAILABLE", "a timing or plot needs an optional package or device that is absent",
                          "install the package named in the message (torch for CUDA timing, matplotlib for plots) "
                          "or time on the CPU")

def all_codes() -> dict[str, Code]:
    return dict(_REGISTRY)


class TesseraError(VerifyException):
    """A diagnostic with a code; `op` locates it when it comes from the IR."""

    def __init__(self, code: Code, message: str, op=None, hint: str | None = None):
        self.code = code
        self.message = message
        self.op = op
        self.hint = hint if hint is not None else code.hint
        self.location: str | None = None
        super().__init__(f"{code.name}: {message}")

    def with_location(self, location: str) -> "TesseraError":
        self.location = location
        return self

    def __str__(self) -> str:
        return format_diagnostic(self)


def op_location(op) -> str:
    """`file:line:col` of an op, or of its closest located ancestor."""
    from xdsl.dialects.builtin import FileLineColLoc  # an op exists: xdsl is loaded already

    while op is not None:
        loc = getattr(op, "location", None)
        if isinstance(loc, FileLineColLoc):
            return f"{loc.filename.data}:{loc.line.data}:{loc.column.data}"
        op = op.parent_op()
    return "<unknown>:0:0"


def format_diagnostic(err: TesseraError) -> str:
    where = err.location or (op_location(err.op) if err.op is not None else "<unknown>:0:0")
    text = f"{where}: error: {err.code.name}: {err.message}"
    if err.hint:
        text += f"\n  hint: {err.hint}"
    return text
