//! The registry of diagnostic codes. A code, once published, keeps its
//! meaning; `spec/diagnostics.md` lists every code here (a test checks it).

use std::fmt;

#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Code(&'static str);

impl Code {
    pub fn as_str(self) -> &'static str {
        self.0
    }

    /// The registry entry of a code such as `"E0030"`.
    pub fn lookup(code: &str) -> Option<&'static CodeInfo> {
        CODES.iter().find(|info| info.code.0.eq_ignore_ascii_case(code))
    }

    pub fn info(self) -> &'static CodeInfo {
        Code::lookup(self.0).expect("every Code constant is registered")
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl fmt::Debug for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

/// What a code means: a one-line title and a long explanation with an
/// example, printed by `tessera check --explain CODE`.
pub struct CodeInfo {
    pub code: Code,
    pub title: &'static str,
    pub explanation: &'static str,
}

macro_rules! codes {
    ($($name:ident: $title:literal => $explanation:literal,)*) => {
        impl Code {
            $(pub const $name: Code = Code(stringify!($name));)*
        }

        /// Every code, in numeric order.
        pub static CODES: &[CodeInfo] = &[
            $(CodeInfo { code: Code::$name, title: $title, explanation: $explanation },)*
        ];
    };
}

codes! {
    E0001: "unexpected character" =>
"A character appeared that cannot start any token, such as `$` or `?`, or a
backslash that is not the last character of a line.

```tessera
x = 3 $ 4    # error: `$` is not an operator
```

Remove the character. A backslash continues a line only when it is the
last character before the line break.",

    E0002: "unterminated string literal" =>
"A string literal was opened but not closed before the end of its line (or,
for a triple-quoted string, before the end of the file).

```tessera
msg = \"unfinished
```

Close the string with the quote that opened it.",

    E0003: "invalid number literal" =>
"A number literal is malformed: a digit that its base does not allow, a
misplaced `_`, an empty exponent, or a suffix that is not a size unit.

```tessera
a = 0x1G      # `G` is not a hexadecimal digit
b = 1__000    # `_` may only separate single digits
c = 16_KB     # size literals use KiB, MiB or GiB
```

Size literals are integers with a binary unit: `16_KiB`, `4_MiB`, `1_GiB`,
`1_TiB`.",

    E0004: "invalid escape sequence" =>
"A string contains a backslash escape that Tessera does not know.

```tessera
path = \"C:\\qdata\"   # `\\q` is not an escape
```

The escapes are `\\\\`, `\\'`, `\\\"`, `\\n`, `\\r`, `\\t`, `\\0` and
`\\u{...}`. Write `\\\\` for a literal backslash.",

    E0005: "source file is not valid UTF-8" =>
"Tessera source files are UTF-8 text. The file holds a byte sequence that is
not UTF-8, usually because it was saved in another encoding or is binary.

Re-save the file as UTF-8.",

    E0010: "indentation mixes tabs and spaces" =>
"The indentation of a line compares differently with the block it is in
depending on how wide a tab is: Tessera, like Python, requires the order
to be the same with a tab counted as 8 columns and as 1, so tabs and
spaces cannot stand in for each other.

```tessera
def f(x: f32) -> f32:
    y = x      # four spaces
\treturn y   # a tab
```

Indent every line of a file the same way, preferably with four spaces.",

    E0011: "unindent does not match any outer indentation level" =>
"A line is indented less than the line before it, but not as far back as
any enclosing block.

```tessera
def f(x: f32) -> f32:
    if x > 0.0:
        x = 0.0
  return x     # two spaces: neither the `if` body nor the `def` body
```

Indent the line to the level of the block it belongs to.",

    E0012: "unexpected indent" =>
"A line is indented more than the line before it, but the line before does
not open a block (it does not end with `:`).

```tessera
x = 1
    y = 2
```

Remove the extra indentation, or end the previous line with `:` if it was
meant to open a block.",

    E0013: "expected an indented block" =>
"A line ending with `:` opens a block (the body of a `def`, `if`, `for`,
`while` or `with`), but the next line is not indented further.

```tessera
def f():
return 1
```

Indent the body, or write `pass` as an empty body.",

    E0014: "nesting too deep" =>
"Brackets, blocks or expressions are nested deeper than the compiler
accepts: 200 levels of brackets, 100 levels of blocks, 256 levels of
expression. Such code is almost always generated; split it into smaller
expressions or functions.",

    E0020: "unclosed delimiter" =>
"An opening `(`, `[` or `{` has no matching closing delimiter.

```tessera
y = f(x, (a + b)
```

Add the missing closing delimiter.",

    E0021: "mismatched closing delimiter" =>
"A closing delimiter does not match the innermost open one.

```tessera
y = f(x]
```

Close the innermost open delimiter first: `(` with `)`, `[` with `]`, `{`
with `}`.",

    E0022: "unmatched closing delimiter" =>
"A closing `)`, `]` or `}` appears with no delimiter open.

```tessera
y = x + 1)
```

Remove it, or add the opening delimiter it was meant to close.",

    E0030: "unexpected token" =>
"The parser found a token where the grammar does not allow it. The message
says what was expected instead.

```tessera
y = x + * 2
```

See the grammar summary in `spec/grammar.md`.",

    E0031: "missing `:`" =>
"The header of a block statement (`def`, `if`, `elif`, `else`, `for`,
`while`, `with`) must end with `:`.

```tessera
if x > 0
    y = x
```

Add the colon; `tessera check --fix` does it for you.",

    E0033: "decorator not followed by a function" =>
"Decorators such as `@kernel` or `@deterministic(seed=42)` apply to the
function defined right after them. Here something other than `def` follows.

```tessera
@kernel
x = 1
```

Put the decorator directly above a `def`, or remove it.",

    E0034: "`where` clause without constraints" =>
"A `where` clause must list at least one shape constraint.

```tessera
def f(x: f32[D]) -> f32[D] where:
    return x
```

List the constraints (`where D % 8 == 0, D <= 4096`) or remove `where`.",

    E0035: "invalid assignment target" =>
"Only names, attributes (`a.b`), subscripts (`a[i]`) and tuples of these can
be assigned to.

```tessera
f(x) = 3
a + b += 1
```

Assign to a variable, an element or an attribute instead.",

    E0036: "comparison operators cannot be chained" =>
"Tessera does not chain comparisons as Python does; `a < b < c` is an
error rather than a silent surprise.

```tessera
ok = 0 < i < n
```

Write `0 < i and i < n`.",

    E0037: "positional argument after keyword argument" =>
"In a call or a bracket argument list, positional arguments come first.

```tessera
y = op.matmul(tile_shape=(128, 128, 64), a, b)
```

Move the positional arguments before the keyword arguments.",

    E0038: "`break` or `continue` outside a loop" =>
"`break` and `continue` only make sense inside `for` or `while`.

```tessera
def f():
    break
```

Remove the statement or move it into a loop.",

    E0039: "`return` outside a function" =>
"`return` may only appear inside a `def`.

```tessera
return 3
```",

    E0041: "parameter without default after one with a default" =>
"Once a parameter has a default value, every later parameter needs one too.

```tessera
def f(eps: f32 = 1e-5, x: f32[N]):
    pass
```

Move the parameters with defaults to the end.",

    E0101: "unknown name" =>
"A name is used that is not a parameter, a local, a function of this file,
an import or a builtin.

```tessera
@kernel
def k(x: f32[N], out: mut f32[N]):
    i = launch.thread_id()
    out[i] = x[j]
```

Define the name first, or fix its spelling; the help line suggests the
closest known name.",

    E0102: "unknown member of a namespace" =>
"A builtin namespace (`op`, `tile`, `launch`, `tshared`, `rng`, `dist`,
`numerics`, `effects`, ...) has no member of this name.

```tessera
@kernel
def k(out: mut f32[N]):
    out[launch.thread_idx()] = 1.0
```",

    E0103: "unknown decorator" =>
"Tessera's decorators are `@kernel`, `@deterministic(seed=...)`,
`@numerics(policy)`, `@test`, `@host` and `@autotune(...)`.

```tessera
@kernal
def k(x: f32[N]):
    pass
```",

    E0104: "function defined twice" =>
"Two functions in one file have the same name.

```tessera
def f(x: f32) -> f32:
    return x

def f(x: f32) -> f32:
    return x
```",

    E0105: "unresolved import" =>
"An import names a module that does not exist, or a member the module does
not have. Modules are `tessera` (the builtins) and sibling `.tsr` files.

```tessera
from tessera import tiles
```",

    E0106: "duplicate parameter" =>
"Two parameters of one function have the same name.

```tessera
def f(x: f32, x: f32) -> f32:
    return x
```",

    E0107: "nested function" =>
"Functions are defined at the top level of a file only.

```tessera
def outer():
    def inner():
        pass
```",

    E0108: "local read before it is assigned" =>
"A kernel or device function reads a local that not every path from its
start assigns: a local assigned under a condition, in a loop body (which
may run zero times) or after the read in the source.

```tessera
@kernel
def k(x: f32[N], out: mut f32[N]):
    i = launch.thread_id()
    if i < 2:
        v = x[i]
    out[i] = v
```

The threads that skip the assignment would read whatever the register
held. Assign the local before the branch (`v = 0.0`), or on every path
(an `else`). Host code follows Python and fails when it runs instead.",

    E0201: "unknown type" =>
"A type annotation names something that is not a dtype. The dtypes are
`f64 f32 tf32 f16 bf16 fp8_e4m3 fp8_e5m2 fp4_e2m1 nvfp4 i8 i16 i32 i64
u8 u16 u32 u64 bool`; `tensor[dtype]` is a tensor of unknown rank.

```tessera
def f(x: bf61[N]) -> bf16[N]:
    return x
```",

    E0202: "unknown memory space" =>
"A memory-space qualifier is not one of `register shared lds global managed
host tmem constant local`.

```tessera
def f(x: sharde f32[N]):
    pass
```",

    E0203: "type mismatch" =>
"A value's dtype or shape does not fit where it is used: an argument whose
dtype differs from its parameter's, or a value whose shape differs from
the declared one.

```tessera
def f(x: f32[N]) -> f32[N]:
    return x

def g(y: i32[N]) -> f32[N]:
    return f(y)
```

Convert explicitly with `cast(value, dtype)`.",

    E0204: "wrong arguments" =>
"A call passes too many or too few arguments, or a keyword argument the
function does not have.

```tessera
def f(x: f32) -> f32:
    return x

def g() -> f32:
    return f(1.0, 2.0)
```",

    E0205: "write to a parameter that is not `mut`" =>
"Parameters are read-only unless declared `mut`; a kernel's outputs are
`mut` parameters.

```tessera
@kernel
def fill(out: f32[N]):
    out[launch.thread_id()] = 0.0
```

Declare the parameter `out: mut f32[N]`; `tessera check --fix` does it.",

    E0206: "a kernel returns a value" =>
"Kernels produce results by writing into `mut` parameters; they return
nothing.

```tessera
@kernel
def k(x: f32[N]) -> f32:
    return x[0]
```",

    E0207: "launch brackets on a function that is not a kernel" =>
"Only `@kernel` functions are launched with `f[grid=..., block=...](...)`.

```tessera
def f(x: f32[N]):
    pass

def main():
    f[grid=(1,), block=(32,)](zeros(32))
```",

    E0208: "kernel-only operation outside a kernel" =>
"Thread intrinsics, barriers and shared memory exist only inside
`@kernel` functions, and kernels are launched from host code only.

```tessera
def f() -> i32:
    return tile_linear_id()
```",

    E0209: "host-only operation inside a kernel" =>
"Tensor creation, random tensors and stream operations run on the host,
not inside kernels. A kernel prints scalars and string literals, each
thread its own line; a whole tensor is printed on the host.

```tessera
@kernel
def k(x: f32[N]):
    print(x)
```

Print an element, `print(x[i])`, or print `x` after the launch.",

    E0210: "kernel called without launch brackets" =>
"A kernel runs as a grid of blocks; calling it like a function does not
say how many.

```tessera
@kernel
def k(x: mut f32[N]):
    x[launch.thread_id()] = 0.0

def main():
    k(zeros(256))
```

Launch it: `k[grid=(1,), block=(256,)](x)`.",

    E0211: "shared memory escapes its kernel" =>
"A shared-memory buffer lives only while its block runs; it cannot be
returned or stored beyond the kernel.",

    E0212: "memory space not available on the target" =>
"Tensor memory (`tmem`) exists on sm_100 and later; the current targets
(sm_80, sm_90a, gfx90a, gfx942) have none.

```tessera
@kernel
def k(acc: mut tmem f32[128, 128]):
    pass
```",

    E0214: "not callable" =>
"Something that is not a function is called.

```tessera
def f(x: f32[N]) -> f32[N]:
    return x(1)
```",

    E0215: "not indexable" =>
"Something that holds no elements is indexed: a scalar, a function, a
builtin. A shared buffer comes from calling `tshared.alloc` with a dtype
and dims; the function itself cannot be indexed.

```tessera
@kernel
def k(x: f32[N]):
    smem = tshared.alloc
    smem[0] = x[0]
```",

    E0216: "device function misused" =>
"A `@device` function is kernel code: it is called from kernels and from
other device functions, and the compiler inlines it there. Host code and
operator functions cannot call it, a function cannot be both `@kernel`
and `@device`, and a device function cannot call itself, directly or
through others (inlining would not end).

```tessera
@device
def square(v: f32) -> f32:
    return v * v

def main():
    print(square(2.0))
```

Launch a kernel that calls it instead.",

    E0217: "block shape not allowed" =>
"A kernel's header `tile[(x, y, z)]` gives its block: 1 to 3 positive
sizes, 1 to 1024 threads in all. A GPU target runs whole warps (32 threads
on NVIDIA GPUs, 64 on AMD's): there the threads must be a multiple of
the warp; the CPU takes any count.

```tessera
@kernel tile[(2000,)]
def k(y: mut f32[N]):
    pass
```

Split the work over more blocks: `tile[(256,)]` and a grid of
`cdiv(N, 256)`.",

    E0218: "missing return value" =>
"A function that declares a result (`-> f32[N]`) returns one on every
path: falling off the end of its body would give no value.

```tessera
def clipped(x: f32[N], on: bool) -> f32[N]:
    if on:
        return op.relu(x)
```

Add the missing `return`, here `return x` after the `if`.",

    E0219: "result of a check discarded" =>
"A statement that is only `allclose(...)` or a comparison computes an
answer and drops it: the test it was meant to be passes whatever the
values are.

```tessera
def main():
    x = ones(4)
    allclose(x, x * 2.0)
```

Assert it: `assert allclose(x, x * 2.0)`. A comparison `x == 1` meant as
an assignment is written `x = 1`.",

    E0220: "module constant changed" =>
"Host code reads a module constant's list or dict as a copy and never
changes the constant: appending to it, storing or deleting an element,
directly (`TABLE`), by an import (`from ops import TABLE`) or through its
module (`ops.TABLE`).

```tessera
TABLE = [1, 2]

def main():
    TABLE.append(3)
```

Copy it into a local and change that: `table = TABLE`, then
`table.append(3)`.",

    E0301: "unsupported shape constraint" =>
"A `where` clause holds constraints on dims: divisibility `D % 8 == 0`,
comparisons `S <= 8192`, equalities `D == H * Dh` and ranges
`B in 1..=4096`.

```tessera
def f(x: f32[N]) -> f32[N] where N:
    return x
```",

    E0302: "dims disagree" =>
"A dim symbol of a function gets two different sizes from its arguments,
or an argument's dim differs from a fixed or derived dim of the parameter.

```tessera
def add(a: f32[N], b: f32[N]) -> f32[N]:
    return a + b

def g(x: f32[4], y: f32[8]) -> f32[4]:
    return add(x, y)
```",

    E0303: "wrong number of dims" =>
"A tensor has a different rank than expected.

```tessera
def f(x: f32[M, N]) -> f32[M, N]:
    return x

def g(y: f32[8]) -> f32[8, 8]:
    return f(y)
```",

    E0304: "shape constraint violated" =>
"A call passes tensors whose dims break a `where` constraint of the callee.
The message names the argument, the dim, the symbol and its value, and
the rule.

```tessera
def attention(q: bf16[B, S, D]) -> bf16[B, S, D] where D % 8 == 0:
    return q

def caller(q: bf16[2, 16, 100]) -> bf16[2, 16, 100]:
    return attention(q)
```

Constraints that cannot be decided at compile time are checked once at
run time, on entry, with the same message.",

    E0305: "matmul inner dims differ" =>
"In `a @ b` (and `op.matmul`, `tile.dot`) the last dim of `a` must equal
the second-to-last dim of `b`.

```tessera
def f(a: f32[4, 8], b: f32[16, 4]) -> f32[4, 4]:
    return a @ b
```",

    E0306: "shapes do not broadcast" =>
"Elementwise operators broadcast as NumPy does: dims are matched from the
right, and each pair must be equal or one of them 1.

```tessera
def f(a: f32[4, 8], b: f32[4]) -> f32[4, 8]:
    return a + b
```",

    E0307: "axis out of range" =>
"A reduction, concatenation or (log-)softmax names an axis the tensor does not have.

```tessera
def f(x: f32[4, 8]) -> f32[4]:
    return op.sum(x, axis=2)
```",

    E0308: "reshape changes the number of elements" =>
"A reshape keeps every element; the new dims must have the same product.

```tessera
def f(x: f32[4, 8]) -> f32[5, 6]:
    return op.reshape(x, (5, 6))
```",

    E0309: "concatenated tensors differ" =>
"Tensors concatenated along an axis must agree in every other dim.

```tessera
def f(a: f32[4, 8], b: f32[4, 9]) -> f32[8, 8]:
    return op.concat((a, b), axis=0)
```",

    E0310: "too many indices" =>
"A tensor is indexed with more indices than it has dims.

```tessera
def f(x: f32[4]) -> f32:
    return x[0, 1]
```",

    E0311: "shared buffer layout does not fit its shape" =>
"A shared buffer's `swizzle=` spans 32, 64 or 128 bytes and runs over its
last two dims: the rows a multiple of 8, each row whole spans (TMA's and
wgmma's swizzled layouts). It is not combined with `bank_pad`.

```tessera
@kernel tile[(128,)] shared(16_KiB)
def k(x: f32[n], out: mut f32[n]):
    t = tshared.alloc[f32](12, 32, swizzle=128)
    i = tile_linear_id()
    t[0, i % 32] = x[i]
    tbarrier()
    out[i] = t[0, i % 32]
```",

    E0312: "dim no call can bind" =>
"A parameter's dim uses a symbol that no call or launch can find a size
for. A call binds a symbol that is a whole dim of some parameter, one a
`where S == ...` constraint gives from bound ones, and the one unknown
factor of a product dim (`H * D` when another parameter binds `H`). Give
the symbol a dim of its own in a parameter, or fix it with a constraint.

```tessera
def heads(x: f32[S, H * D]) -> f32[S, H * D]:
    return x * 2.0
```",

    E0313: "dim not positive" =>
"A dim written as a number in a type is at least 1: a parameter of
`f32[0]` or `f32[-1]` holds no tensor a call could pass, and the
kernels for it would tile nothing (NumPy's `-1`, \"whatever is left\",
is a reshape's, not a type's). Name the dim for any size.

```tessera
def total(x: f32[-1]) -> f32:
    return op.sum(x)
```",

    E0314: "index out of range" =>
"A constant index is past the end of a dim whose size is a constant:
dim 0 of a buffer of two slots has the indices 0 and 1.

```tessera
@kernel tile[(128,)]
def k(x: f32[N], out: mut f32[N]):
    bufs = tshared.alloc[f32](2, 128)
    tile.async_copy(bufs[2], x[0:128], stage=0)
    tile.wait_async(stage=0)
```

Index within the dim (`bufs[1]`), or allocate more slots.",

    E0401: "effect not declared" =>
"A function with an `effects(...)` clause performs an effect the clause
does not list, directly or through a function it calls. The clause must
cover what the compiler infers; functions without a clause are only
inferred.

```tessera
def log_mean(x: f32[N]) -> f32 effects(random):
    m = op.mean(x)
    print(m)
    return m
```

Add the effect; `tessera check --fix` does it. An effect that must not
propagate can be suspended around the call with
`with effects.suspend(\"io\"):`.",

    E0402: "unknown effect" =>
"The effects are `random`, `io`, `memory` and `collective`.

```tessera
def f(x: f32) -> f32 effects(randomness):
    return x
```",

    E0501: "random numbers without a bound stream in deterministic code" =>
"Inside `@deterministic`, every random draw names its stream, so the
numbers depend only on (function, mesh coordinates, step, seed).

```tessera
@deterministic(seed=42)
def f(n: i64) -> f32[n] effects(random):
    return rng.uniform(n)
```

Pass `stream=rng.stream(\"name\")`.",

    E0502: "unordered floating-point atomic in deterministic code" =>
"Floating-point addition is not associative, so atomics that add in
arrival order give different bits from run to run.

```tessera
@kernel
@deterministic(seed=1)
def k(x: f32[N], out: mut f32[1]):
    atomic_add(out[0], x[launch.thread_id()])
```

Use a tree reduction (`tile.reduce(x, op=\"sum\", order=\"tree\")`), or
wrap the region in `with nondeterministic(\"why\"):`.",

    E0503: "unordered reduction in deterministic code" =>
"Reductions in `@deterministic` code use a fixed tree order; asking for
`order=\"unordered\"` there contradicts the contract.

```tessera
@kernel
@deterministic(seed=1)
def k(x: f32[N], out: mut f32[1]):
    out[0] = tile.reduce(x, op=\"sum\", order=\"unordered\")
```",

    E0504: "nondeterministic operation in deterministic code" =>
"An operation whose result depends on timing (such as a scatter-add with
colliding indices) is used in `@deterministic` code.

```tessera
@deterministic(seed=1)
def f(t: f32[N], i: i64[M], v: f32[M]) -> f32[N] effects(memory):
    return op.scatter_add(t, i, v)
```",

    E0505: "deterministic code calls a device function outside the contract" =>
"A `@device` function is inlined into the kernel that calls it, so its body
runs under the caller's determinism contract. Deterministic code calls only
device functions that are `@deterministic` themselves, whose bodies are
checked against the contract.

```tessera
@device
def bump(x: mut f32[N], v: f32):
    atomic_add(x[0], v)

@kernel
@deterministic(seed=1)
def k(x: mut f32[N]):
    bump(x, 1.0)
```

Mark the device function `@deterministic`.",

    E0601: "barrier under thread-dependent control flow" =>
"A barrier must be reached by every thread of the block. Under a condition
that depends on the thread id, some threads skip it and the block hangs.

```tessera
@kernel
def k(x: mut f32[N]):
    i = tile_linear_id()
    if i < 16:
        tbarrier()
```

Move the barrier out of the condition.",

    E0701: "accumulation without an accumulate dtype" =>
"A reducing or accumulating operation (`op.matmul`, `op.sum`, `op.softmax`,
`tile.dot`, ...) needs an accumulate dtype. It has one when the call says
`accumulate=`, when its accumulator fixes it (the `C` of
`tile.mma(A, B, C, ...)`), or when a numerics policy that states one is in
force (`@numerics(P)` or `with numerics(P):`). Otherwise f32 and f64 values
accumulate in their own type, and lower precisions (tf32, f16, bf16, fp8,
fp4, nvfp4) are an error.

```tessera
def f(a: bf16[M, K], b: bf16[K, N]) -> bf16[M, N]:
    return op.matmul(a, b)
```

Write `op.matmul(a, b, accumulate=f32)` or put the function under
`@numerics(Training)`. A stated accumulate dtype is at least as wide as
the values it accumulates: `accumulate=f32` over f64 values, or an
integer one over floats, is this error too.",

    E0702: "implicit downcast" =>
"A value is stored into a narrower floating-point type without saying how
to round.

```tessera
@kernel
def k(x: f32[N], out: mut bf16[N]):
    i = launch.thread_id()
    out[i] = x[i]
```

Write `cast(x[i], bf16, rounding=\"nearest_even\")`; `tessera check --fix`
does it.",

    E0703: "unknown numerics policy" =>
"`@numerics(P)` and `with numerics(P):` take a preset (`Training`,
`Inference`, `NVFP4`) or a policy bound at the top level with
`P = numerics.policy(...)`.

```tessera
@numerics(Trainng)
def f(x: bf16[N]) -> bf16[N]:
    return x
```",

    E0801: "async copy destination read before its wait" =>
"The destination of `tile.async_copy(..., stage=s)` is undefined until
`tile.wait_async(stage=s)` completes; a read before that races with the
copy.

```tessera
@kernel
def k(x: f32[N], out: mut f32[N]):
    buf = tshared.alloc[f32](128)
    tile.async_copy(buf, x, stage=0)
    out[0] = buf[0]
    tile.wait_async(stage=0)
```",

    E0802: "async copy never waited for" =>
"Every `tile.async_copy` must be completed by a `tile.wait_async` of its
stage before the kernel ends.

```tessera
@kernel
def k(x: f32[N]):
    buf = tshared.alloc[f32](128)
    tile.async_copy(buf, x, stage=0)
```",

    E0803: "async copy stage already in flight" =>
"Stages are unique per region: a stage cannot be reused until the copies
already in it have been waited for.

```tessera
@kernel
def k(x: f32[N], y: f32[N]):
    a = tshared.alloc[f32](128)
    b = tshared.alloc[f32](128)
    tile.async_copy(a, x, stage=0)
    tile.async_copy(b, y, stage=0)
    tile.wait_async(stage=0)
```",

    E0804: "wait for a stage with no copy in flight" =>
"`tile.wait_async(stage=s)` waits for copies issued into stage `s`; here
none is in flight.

```tessera
@kernel
def k(x: f32[N]):
    tile.wait_async(stage=1)
```",

    E0805: "shared memory over budget" =>
"The shared memory a kernel allocates exceeds what its header declares
(`shared(16_KiB)`) or what the target provides per block.

```tessera
@kernel tile[(128,)] shared(1_KiB)
def k(x: f32[N]):
    buf = tshared.alloc[f32](1024)
```",

    E0806: "shared buffer of a size not known at the launch" =>
"Shared memory is laid out when a kernel is launched, so each dim of
`tshared.alloc` is a constant (a literal, a module constant, a local
assigned once with a constant) or a polynomial of the kernel's dims
(`N`, `2 * N + 1`), which the launch binds. A local computed while the
kernel runs is known too late; so is a division of dims. A buffer sized
at the launch is neither swizzled nor padded.

```tessera
@kernel
def k(x: f32[N]):
    half = N // 2
    buf = tshared.alloc[f32](half)
```

Size the buffer with the kernel's dims (`tshared.alloc[f32](N)`), or with
a constant as large as any launch needs, and guard its indices.",

    E0901: "IR verification failed" =>
"An op of the intermediate representation breaks a rule: a structural one
that holds in every dialect (a value is used before it is defined, a
function uses a value from outside it, a function's body does not take its
parameters) or one its dialect states (an unknown op, a wrong number of
operands, a missing attribute, operand types that do not fit).

```tir
module {
  func.func @f(%0: f32) -> (f32) {
    func.return(%1) : (f32) -> ()
    %1 = func.call(%0) {callee = @f} : (f32) -> f32
  }
}
```

In the compiler this is a bug in the pass that produced the IR; in a `.tir`
file given to `tessera opt`, fix the op the message points at. The rules are
in the chapter on the IR (`spec/ir.md`).",

    E0902: "malformed IR text" =>
"The text given to `tessera opt` is not a module of the IR's textual form:
a syntax error, a value defined twice or never, or an op whose written
type does not match its operands or results.

```tir
module {
  func.func @f(%0: f32) -> (f32) {
    func.return(%0, %0) : (f32) -> ()
  }
}
```

Every op is written `%results = dialect.op(%operands) : (operand types) ->
result types`, with one type per operand and per result; the grammar is in
`spec/ir.md`.",

    E0903: "cannot lower to the IR" =>
"The program checked clean, but a construct in it has no form in the IR
layers yet, so `tessera build` cannot compile it. The lowering reports it
instead of dropping it; the construct and the function are named.

```tessera
def f(x: f32[N]) -> f32[N]:
    for i in range(4):
        x = x * 2.0
    return x
```

Operator-level functions are straight-line tensor code (Graph IR has no
loops); write the loop in a `@kernel`, or unroll it. `spec/lowering.md`
lists what each layer accepts.",

    E0904: "cannot generate code" =>
"The program lowered through every IR layer, but the code generator (LLVM)
has no translation yet for an op in its Target IR, or the op needs more of
the target than it has (for example more shared memory for a matrix
product's staging than the GPU provides). The diagnostic names the op and
points at the `.tsr` source it came from. `spec/codegen.md` lists what each
target supports; a smaller tile shape or a different target usually
helps.",

    E1001: "device unavailable" =>
"`tessera run --device cuda` (or `hip`) found no driver library or no
device. The CUDA driver (`libcuda.so`) and the HIP runtime
(`libamdhip64.so`) are loaded when the program starts, so Tessera runs on
machines without them; there, only the CPU device is available.

```console
$ tessera run saxpy.tsr --device cuda
error[E1001]: cannot use CUDA: the CUDA driver library (libcuda.so) is not installed
  help: run on the CPU with `--device cpu`
```

Run with `--device cpu`, which executes every kernel with GPU semantics
on this machine's cores, or install the driver.

A device without the memory kind that `--memory managed` or `--memory
pinned` asks for is refused the same way, before anything runs; its help
names `--memory device`, which every device has.",

    E1002: "no entry function" =>
"`tessera run` starts at `def main():`, or at the function that `--entry`
names, and the program has no such function.

```tessera-run
def helper() -> f32:
    return 1.0
```

Add a `def main():`, or name the function to run with `--entry NAME`.",

    E1003: "assertion failed" =>
"An `assert` statement, `assert_allclose` or `assert allclose(...)` in host
code did not hold. For tensors the message gives the tolerances, how many
elements differ, and the worst one with its index.

```tessera-run
def main():
    x = full(4, 1.0)
    y = full(4, 1.5)
    assert_allclose(x, y, rtol=1e-5, atol=1e-8)
```

Two values agree when `|actual - expected| <= atol + rtol * |expected|`,
as in NumPy.",

    E1004: "cannot read or write a .npy file" =>
"`load`, `save`, `--input` or `--output` met a file that could not be read
or written, or that is not a `.npy` file the runtime supports: a bad magic
string or header, a format version other than 1.0, 2.0 and 3.0, Fortran
order, an unsupported dtype, or data that does not match the header's
shape.

```tessera-run
def main():
    x = load(\"missing.npy\")
```

Save arrays with `numpy.save` in C order (`np.ascontiguousarray`); the
supported dtypes are f2, f4, f8, i1, i4, i8, u1, b1 and V2 (bf16).",

    E1005: "value does not fit the parameter" =>
"A value given to a function or kernel at run time does not fit the
parameter it binds: a tensor of another dtype or rank (from a `.npy`
input, say), a tensor where a scalar is expected, a missing or unknown
`--input`.

```console
$ tessera run attention.tsr --entry attention --input q=q_f64.npy
error[E1005]: `--input q=q_f64.npy` holds an f64 array, but the parameter is bf16[B, S, D]
```

Convert the data to the parameter's dtype and shape before saving it (the
help names the NumPy type: `a.astype(ml_dtypes.bfloat16)`), or change the
parameter.",

    E1006: "not supported in host code" =>
"Host code called something the interpreter of host code cannot run: a
builtin that has no host implementation yet, or a construct that only
device code has.

```tessera-run
def main():
    g = graph.capture()
```

The host supports tensor creation, `.npy` files, arithmetic, printing,
assertions, loops and branches, kernel launches and calls of operator
functions; `spec/runtime.md` lists them.",

    E1007: "index out of range" =>
"An index or slice of a tensor, tuple or list in host code is outside its
extent.

```tessera-run
def main():
    x = zeros(4)
    print(x[4])
```

Indices run from `0` to `n - 1` (negative ones count from the end);
slices are clamped as in Python.",

    E1008: "kernel launch failed" =>
"A kernel could not be launched or did not complete: a grid or block over
the device's limits, a barrier that not every thread of a block reaches,
a deadlock between barriers and warp operations, or an error of the
device's driver.

```tessera-run
@kernel
def fill(x: mut f32[N]):
    x[launch.thread_id()] = 1.0

def main():
    x = zeros(4096)
    fill[grid=(1,), block=(4096,)](x)
```

A block holds at most 1024 threads: launch more blocks
(`grid=(ceil_div(n, 256),), block=(256,)`). A barrier must be reached by
every thread of the block.",

    E1009: "invalid value in host code" =>
"Host code computed something that has no value: an integer division or
remainder by zero, an integer overflow, a negative or too large size, a
random seed that is not a non-negative integer.

```tessera-run
def main():
    n = 0
    print(10 // n)
```

Check the value before the operation.",

    E1010: "cannot profile as asked" =>
"`tessera profile` was given options it cannot carry out, or could not
write what it measured: `--repeat 0` (no run would be recorded), or an
output directory (`-o DIR`) that cannot be created or written.

```console
$ tessera profile examples/matmul.tsr --repeat 0
error[E1010]: `--repeat` must be at least 1, not 0
```

Record at least one run (`--repeat 1` is the default; `--warmup N` adds
runs that are not recorded), and write to a directory you can create.",
    E1011: "cannot tune as asked" =>
"`tessera tune` could not carry out the search, or a build could not read
the tuning cache: the file has no `@autotune(...)` function (or not the
one `--entry` names), no configuration of the search space compiled and
ran, or the cache (`$TESSERA_CACHE_DIR/tune.json`, else
`.tessera/tune.json`) is not valid JSON or cannot be written.

```console
$ tessera tune examples/saxpy.tsr --dim N=1024
error[E1011]: examples/saxpy.tsr has no `@autotune(...)` function
```

Decorate an operator function with the knobs to search, for example
`@autotune(BM=[64, 128], BN=[64, 128], stages=[2, 3])`; delete a damaged
cache file (builds then use the targets' default tiles).",
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_sorted_and_unique() {
        for pair in CODES.windows(2) {
            assert!(pair[0].code < pair[1].code, "{} before {}", pair[0].code, pair[1].code);
        }
    }

    #[test]
    fn lookup_is_case_insensitive() {
        assert_eq!(Code::lookup("e0030").map(|i| i.code), Some(Code::E0030));
        assert!(Code::lookup("E9999").is_none());
    }
}
