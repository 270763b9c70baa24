//! The op table: every builtin namespace member and global builtin, with
//! what each check needs to know about it. One concept, one place: type
//! rules, effects, determinism, barrier safety, numerics, and (later)
//! completion and hover all read this table.

use tessera_base::FileSpan;
use tessera_diagnostics::{Applicability, Code, Diagnostic, Fix};
use tessera_syntax::ast::{Expr, ExprKind};

use crate::effects::{Effect, EffectSet};
use crate::names::did_you_mean;

/// Where a builtin may be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Context {
    Anywhere,
    /// Only inside `@kernel` functions (thread intrinsics, shared memory).
    Kernel,
    /// Only outside kernels (tensor creation, launches, printing).
    Host,
}

/// How a builtin relates to the determinism contract.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Det {
    Deterministic,
    /// Draws random numbers: needs a bound stream (`stream=`) in
    /// `@deterministic` code.
    Rng,
    /// An atomic read-modify-write: unordered, so nondeterministic for floats.
    Atomic,
    /// A reduction: tree-ordered in `@deterministic` code; an explicit
    /// `order="unordered"` is rejected there.
    Reduction,
    /// Nondeterministic by nature; the text names the deterministic alternative.
    Nondeterministic(&'static str),
}

/// How the result's type follows from the arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Shape {
    /// Returns nothing.
    Unit,
    /// Returns an integer index (thread ids, counts).
    Index,
    /// Returns a value of the first argument's type.
    SameAsFirst,
    /// Returns a value of the first argument's shape, in its float type:
    /// `f32` for an integer or bool (`exp(2)`, `sqrt(i)`).
    FloatOfFirst,
    /// Elementwise over its tensor arguments, with NumPy broadcasting.
    Broadcast,
    /// `op.where(condition, x, y)`: `x` where the bool condition holds,
    /// else `y`, all three broadcast.
    Select,
    /// `A[.., M, K] @ B[.., K, N] -> [.., M, N]`.
    Matmul,
    /// `q[.., M, D]`, `k[.., N, D]`, `v[.., N, Dv] -> [.., M, Dv]`, in `q`'s dtype.
    Attention,
    /// Removes the `axis` (default: all) dimension.
    Reduce,
    /// The index of an extremum: a reduction's dims, `i64`.
    ArgReduce,
    /// Swaps the last two dimensions (or those named by `dims`).
    Transpose,
    /// New dims given by the `shape` argument; element counts must match.
    Reshape,
    /// Concatenation along `axis`: other dims must match.
    Concat,
    /// Stacking along a new `axis`: every dim must match.
    Stack,
    /// A host tensor whose dims are the shape arguments.
    Create,
    /// A shared-memory buffer: dtype from the bracket, dims from the arguments.
    AllocShared,
    /// `range(...)`.
    Range,
    /// Converts to the dtype given as second argument.
    Cast,
    /// A namespace-specific object the checker does not look into.
    Opaque,
    /// A numerics policy value.
    Policy,
    /// A string (`format`, `repr`).
    Text,
    /// A scalar of this dtype (`tile.vote_ballot`'s lane mask).
    Scalar(crate::ty::DType),
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Builtin {
    /// `tile.async_copy`, or a plain name for globals.
    pub path: &'static str,
    /// Parameters as shown in completion and hover.
    pub params: &'static str,
    pub doc: &'static str,
    pub context: Context,
    pub effects: EffectSet,
    pub det: Det,
    /// Returns a value that differs between threads of a block.
    pub thread_dependent: bool,
    /// Must be reached by every thread of the block (a barrier).
    pub block_collective: bool,
    /// Reduces or accumulates, so it needs an accumulate dtype (numerics).
    pub accumulates: bool,
    /// The argument it writes through, by position and name (`C` of
    /// `tile.mma`): a parameter there must be `mut`.
    pub writes: Option<(usize, &'static str)>,
    /// Its arguments are numbers: in device code a tensor of no dims (an
    /// `f32[]` parameter) passed to it is read as its element.
    pub reads_elements: bool,
    pub shape: Shape,
}

const fn op(path: &'static str, params: &'static str, doc: &'static str, shape: Shape) -> Builtin {
    Builtin {
        path,
        params,
        doc,
        context: Context::Anywhere,
        effects: EffectSet::PURE,
        det: Det::Deterministic,
        thread_dependent: false,
        block_collective: false,
        accumulates: false,
        writes: None,
        reads_elements: false,
        shape,
    }
}

impl Builtin {
    const fn kernel(mut self) -> Builtin {
        self.context = Context::Kernel;
        self
    }
    const fn host(mut self) -> Builtin {
        self.context = Context::Host;
        self
    }
    const fn effects(mut self, effects: &[Effect]) -> Builtin {
        self.effects = EffectSet::of(effects);
        self
    }
    const fn det(mut self, det: Det) -> Builtin {
        self.det = det;
        self
    }
    const fn thread_dependent(mut self) -> Builtin {
        self.thread_dependent = true;
        self
    }
    const fn block_collective(mut self) -> Builtin {
        self.block_collective = true;
        self
    }
    const fn writes(mut self, index: usize, name: &'static str) -> Builtin {
        self.writes = Some((index, name));
        self
    }
    const fn accumulates(mut self) -> Builtin {
        self.accumulates = true;
        self
    }
    const fn reads_elements(mut self) -> Builtin {
        self.reads_elements = true;
        self
    }

    /// The names its parameters may be passed by: those of `params`, less
    /// the variadic `*shape` and the bracket's `[dtype]`.
    pub fn param_names(&self) -> Vec<&'static str> {
        // Within the call's parentheses (after a subscript's `[dtype]`),
        // split at the commas outside defaults' own brackets.
        let params = self.params;
        let open = params.find('(').map_or(params.len(), |i| i + 1);
        let close = params.rfind(')').unwrap_or(params.len()).max(open);
        tessera_base::split_top_level(&params[open..close])
            .into_iter()
            .filter_map(|p| {
                let name = p.split('=').next()?.trim();
                (!name.is_empty() && !name.starts_with('*')).then_some(name)
            })
            .collect()
    }

    /// Whether it takes any number of positional arguments (a `*`
    /// parameter: `zeros(*shape)`, `print(*values)`).
    pub fn variadic(&self) -> bool {
        self.params.contains('*')
    }

    /// The member name: `async_copy` for `tile.async_copy`.
    pub fn name(&self) -> &'static str {
        self.path.rsplit('.').next().unwrap_or(self.path)
    }

    pub fn namespace(&self) -> Option<&'static str> {
        self.path.rsplit_once('.').map(|(ns, _)| ns)
    }
}

use Effect::*;
use Shape::*;

/// What an exchange's or compare-and-swap's nondeterminism calls for instead.
const EXCHANGE_ALTERNATIVE: &str =
    "which thread's value lands depends on the order of the threads; let one thread, chosen by its index, write";

/// The builtins of the launch geometry, which take an optional `axis`.
pub const GEOMETRY: [&str; 5] = [
    "launch.thread_id",
    "launch.local_id",
    "launch.block_id",
    "launch.block_dim",
    "launch.grid_dim",
];

/// The scopes of `tile.fence`: the threads that see its ordering.
pub const FENCE_SCOPES: [&str; 3] = ["block", "device", "system"];

/// The string arguments that name one of a few choices, checked when the
/// argument is written (each choice list is the IR verifier's for the
/// attribute the lowering gives it): builtin, parameter, the choices, and
/// what the default does.
pub const CHOICES: [(&str, &str, &[&str], &str); 6] = [
    (
        "tile.fence",
        "scope",
        &FENCE_SCOPES,
        "\"device\" (the default) orders the accesses for every thread of the grid, as `__threadfence()` does",
    ),
    (
        "tile.reduce",
        "op",
        &["sum", "max", "min", "prod"],
        "\"sum\" (the default) adds; CUDA's and NumPy's `add` is `sum`",
    ),
    (
        "tile.reduce",
        "order",
        &["tree", "unordered"],
        "\"tree\" (the default) fixes the association order, and \"unordered\" leaves it to the target",
    ),
    (
        "cast",
        "rounding",
        &tessera_base::ROUNDINGS,
        "\"nearest_even\" (the default) is IEEE round to nearest, ties to even",
    ),
    (
        "numerics.policy",
        "rounding",
        &tessera_base::ROUNDINGS,
        "\"nearest_even\" (the default) is IEEE round to nearest, ties to even",
    ),
    (
        "op.all_reduce",
        "algo",
        &["binary_tree", "ring"],
        "\"binary_tree\" (the default) is deterministic",
    ),
];

/// E0204 for the keyword argument `name`, at `at`, that `b` does not take:
/// with `near`, the parameter it most likely means, a help and (where the
/// keyword's own span is known, `fix_at`) a fix that renames it; otherwise
/// a note with `b`'s parameters.
pub fn unknown_keyword(
    b: &Builtin,
    name: &str,
    at: FileSpan,
    fix_at: Option<FileSpan>,
    near: Option<&str>,
) -> Diagnostic {
    let diag = Diagnostic::error(Code::E0204, format!("`{}` has no parameter `{name}`", b.path))
        .with_primary(at, "unknown keyword argument");
    let Some(s) = near else {
        return diag.with_note(format!("`{}` takes `{}{}`", b.path, b.path, b.params));
    };
    let diag = diag.with_help(format!("did you mean `{s}`?"));
    match fix_at {
        Some(fix_at) => {
            diag.with_fix(Fix::new(format!("write `{s}`"), Applicability::MachineApplicable).with_edit(fix_at, s))
        }
        None => diag,
    }
}

/// E0204 for `given`, the argument of `param` of `path`, when it is not a
/// string literal that names one of `choices`, with a fix to the near one.
pub fn unknown_choice(
    path: &str,
    param: &str,
    choices: &[&str],
    default: &str,
    given: &Expr,
    at: FileSpan,
) -> Option<Diagnostic> {
    let named = match &given.unparen().kind {
        ExprKind::Str(s) => Some(s.as_str()),
        _ => None,
    };
    if named.is_some_and(|s| choices.contains(&s)) {
        return None;
    }
    let listed: Vec<String> = choices.iter().map(|c| format!("\"{c}\"")).collect();
    let label = match named {
        Some(s) => format!("\"{s}\""),
        None => "not a string literal".to_string(),
    };
    let diag = Diagnostic::error(
        Code::E0204,
        format!("the `{param}` of `{path}` is one of {}", listed.join(", ")),
    )
    .with_primary(at, label);
    // A longer or shorter spelling of one (`"stochastic_round"`), or one a
    // letter or two away.
    let near = named.and_then(|s| {
        let affix = choices
            .iter()
            .copied()
            .find(|c| s.len() >= 3 && (s.starts_with(c) || c.starts_with(s)));
        affix.or_else(|| did_you_mean(s, choices.iter().copied()))
    });
    Some(match near {
        Some(near) => diag.with_help(format!("did you mean \"{near}\"?")).with_fix(
            Fix::new(format!("write \"{near}\""), Applicability::MachineApplicable)
                .with_edit(at, format!("\"{near}\"")),
        ),
        None => diag.with_help(default),
    })
}

/// The methods of host code's strings, as Python's: (name, what it does).
pub const STR_METHODS: [(&str, &str); 12] = [
    ("join", "The items of an iterable of strings, this string between them."),
    (
        "split",
        "The pieces between occurrences of `sep` (runs of whitespace without it).",
    ),
    (
        "strip",
        "Without leading and trailing `chars` (whitespace without them).",
    ),
    ("lstrip", "Without leading `chars` (whitespace without them)."),
    ("rstrip", "Without trailing `chars` (whitespace without them)."),
    ("upper", "In upper case."),
    ("lower", "In lower case."),
    ("replace", "With every `old` replaced by `new`."),
    ("startswith", "Whether it starts with `prefix`."),
    ("endswith", "Whether it ends with `suffix`."),
    ("find", "The index of the first `sub`, -1 when there is none."),
    ("count", "How many times `sub` occurs, without overlap."),
];

/// The methods of host code's lists, as Python's: (name, what it does).
/// The first [`LIST_MUTATORS`] change the list in place.
pub const LIST_METHODS: [(&str, &str); 11] = [
    ("append", "Adds `object` at the end."),
    ("extend", "Adds the items of `iterable` at the end."),
    ("insert", "Inserts `object` before `index` (clamped to the list)."),
    ("pop", "Removes and gives the item at `index` (the last without one)."),
    (
        "remove",
        "Removes the first item equal to `value` (an error when there is none).",
    ),
    ("clear", "Removes every item."),
    ("reverse", "Reverses the items in place."),
    (
        "sort",
        "Sorts the items in place, smallest first (largest with `reverse=True`), stably, in the order of `sorted`.",
    ),
    ("copy", "A new list of the same items."),
    ("index", "The index of the first item equal to `value`."),
    ("count", "How many items equal `value`."),
];

/// How many of [`LIST_METHODS`], from the first, change the list.
pub const LIST_MUTATORS: usize = 8;

/// The methods of host code's tuples, as Python's: a list's last two,
/// `index` and `count`.
pub const TUPLE_METHODS: &[(&str, &str)] = LIST_METHODS.split_at(LIST_METHODS.len() - 2).1;

/// The methods of host code's dicts, as Python's: (name, what it does).
/// The first [`DICT_MUTATORS`] change the dict in place.
pub const DICT_METHODS: [(&str, &str); 9] = [
    (
        "pop",
        "Removes `key` and gives its value (`default` when it is missing, else an error).",
    ),
    (
        "setdefault",
        "The value of `key`, after setting it to `default` (None without one) when it is missing.",
    ),
    ("update", "Sets every key of the dict `other` to its value there."),
    ("clear", "Removes every key."),
    ("keys", "The keys, as a list, in insertion order."),
    ("values", "The values, as a list, in insertion order."),
    ("items", "The (key, value) pairs, as a list of tuples."),
    ("get", "The value of `key`, else `default` (None without one)."),
    ("copy", "A new dict of the same entries."),
];

/// How many of [`DICT_METHODS`], from the first, change the dict.
pub const DICT_MUTATORS: usize = 4;

/// The methods a value of type `ty` has in host code, from the tables
/// above (dicts have no type of their own: none for them).
pub fn methods_of(ty: &crate::ty::Ty) -> &'static [(&'static str, &'static str)] {
    match ty {
        crate::ty::Ty::Str => &STR_METHODS,
        crate::ty::Ty::List(_) => &LIST_METHODS,
        crate::ty::Ty::Tuple(_) => TUPLE_METHODS,
        _ => &[],
    }
}

/// The namespaces of values' methods, which no global name reaches: a
/// cooperative group's (`g = tile.cooperative_group(size=64)`; `g.sync()`).
pub const VALUE_NAMESPACES: [&str; 1] = [GROUP];

/// The namespace of a cooperative group's methods.
pub const GROUP: &str = "group";

/// The builtin namespaces.
pub const NAMESPACES: [&str; 14] = [
    "op", "tile", "launch", "tshared", "rng", "dist", "numerics", "effects", "tensor", "stream", "graph", "autotune",
    "mesh", "tessera",
];

pub static BUILTINS: &[Builtin] = &[
    // ---- globals
    op("range", "(start, stop = None, step = 1)", "Integers from `start` to `stop` by `step`.", Range),
    op("len", "(x)", "The size of the first dimension of `x`.", Index),
    op("enumerate", "(iterable, start = 0)", "Pairs of a count (from `start`) and each item of `iterable`.", Opaque).host(),
    op("list", "(iterable = ())", "A new list of the items of `iterable` (a tuple, list, range, dict's keys, string's characters or tensor's rows).", Opaque).host(),
    op("tuple", "(iterable = ())", "A tuple of the items of `iterable`, as `list` takes them.", Opaque).host(),
    op("reversed", "(iterable)", "The items of `iterable` last first, as a list.", Opaque).host(),
    op("any", "(iterable)", "Whether some item of `iterable` is true.", Opaque).host(),
    op("all", "(iterable)", "Whether every item of `iterable` is true.", Opaque).host(),
    op("round", "(number, ndigits = None)", "Python's `round`: to the nearest int, ties to even, or to `ndigits` decimal places as a float.", Opaque).host(),
    op("sorted", "(iterable, reverse = False, key = None)", "The items of `iterable` (a list, tuple, range, dict's keys or string) in a new list, smallest first (largest with `reverse=True`), or by what the function `key` gives for each: numbers with numbers, strings with strings, lists and tuples by their items, as Python's `sorted`.", Opaque).host(),
    op("sum", "(iterable, start = 0)", "`start` plus the items of `iterable` (a list, a range, or a tensor's rows), added left to right as Python's `sum` does.", Opaque).host(),
    op("format", "(value, spec = \"\")", "The text of `value` as Python's `format` writes it (`format(x, \".3f\")`, `format(n, \">8,d\")`): what an f-string field `{x:.3f}` becomes.", Text).host(),
    op("str", "(value)", "The text of `value`, as `print` writes it.", Text).host(),
    op("repr", "(value)", "Python's `repr` of `value` (a string quoted): what an f-string field `{x!r}` becomes.", Text).host(),
    op("zip", "(*iterables)", "Tuples of the items of the iterables at each position, as many as the shortest has.", Opaque).host(),
    op("divmod", "(a, b)", "`(a // b, a % b)`, as Python's `divmod`: the quotient rounded down and the remainder with `b`'s sign.", Opaque).host(),
    op("pow", "(base, exp, mod = None)", "`base ** exp`, as Python's `pow`; with `mod`, of ints, `base ** exp % mod` without the power's size.", Opaque).host(),
    op("hex", "(n)", "An int's digits in base 16, as Python's `hex`: `hex(255)` is `'0xff'`.", Text).host(),
    op("oct", "(n)", "An int's digits in base 8, as Python's `oct`: `oct(8)` is `'0o10'`.", Text).host(),
    op("bin", "(n)", "An int's digits in base 2, as Python's `bin`: `bin(5)` is `'0b101'`.", Text).host(),
    op("chr", "(i)", "The one-character string of Unicode code point `i`, as Python's `chr`.", Text).host(),
    op("ord", "(c)", "The Unicode code point of the one-character string `c`, as Python's `ord`.", Index).host(),
    op("min", "(a, b, *rest, key = None)", "The smallest of the values (elementwise for tensors); on the host also of what one value iterates (a list, tuple, range, string, dict or 1-d tensor), or by what the function `key` gives for each, as Python's `min`.", SameAsFirst).reads_elements(),
    op("max", "(a, b, *rest, key = None)", "The largest of the values (elementwise for tensors); on the host also of what one value iterates (a list, tuple, range, string, dict or 1-d tensor), or by what the function `key` gives for each, as Python's `max`.", SameAsFirst).reads_elements(),
    op("abs", "(x)", "Absolute value, elementwise.", SameAsFirst).reads_elements(),
    op("ceil_div", "(a, b)", "`a` divided by `b`, rounded up.", Index),
    op("sqrt", "(x)", "Square root, elementwise.", FloatOfFirst).reads_elements(),
    op("rsqrt", "(x)", "1 / sqrt(x), elementwise.", FloatOfFirst).reads_elements(),
    op("exp", "(x)", "Exponential, elementwise.", FloatOfFirst).reads_elements(),
    op("exp2", "(x)", "2 to the power `x`, elementwise.", FloatOfFirst).reads_elements(),
    op("erf", "(x)", "The error function, elementwise.", FloatOfFirst).reads_elements(),
    op("log", "(x)", "Natural logarithm, elementwise.", FloatOfFirst).reads_elements(),
    op("tanh", "(x)", "Hyperbolic tangent, elementwise.", FloatOfFirst).reads_elements(),
    op("sin", "(x)", "Sine of radians, elementwise.", FloatOfFirst).reads_elements(),
    op("cos", "(x)", "Cosine of radians, elementwise.", FloatOfFirst).reads_elements(),
    op("floor", "(x)", "The largest integer not above `x`, elementwise, in `x`'s type.", SameAsFirst).reads_elements(),
    op("ceil", "(x)", "The smallest integer not below `x`, elementwise, in `x`'s type.", SameAsFirst).reads_elements(),
    op("cast", "(x, dtype, rounding = \"nearest_even\", saturate = False)", "Converts `x` to `dtype` with an explicit rounding mode.", Cast).reads_elements(),
    op("bitcast", "(x, dtype)", "The bits of `x` read as `dtype`, a type of the same width: `bitcast(1.0, u32)` is 1065353216.", Cast).reads_elements(),
    op("print", "(*values, sep = \" \", end = \"\\n\")", "Prints values, separated by `sep`, and then `end` (a newline). In a kernel each thread prints its own line of scalars and string literals, shown after the launch in block and thread order.", Unit).effects(&[Io]),
    op("zeros", "(*shape, dtype = f32)", "A host tensor of zeros.", Create).host(),
    op("ones", "(*shape, dtype = f32)", "A host tensor of ones.", Create).host(),
    op("full", "(*shape, value, dtype = f32)", "A host tensor filled with `value`.", Create).host(),
    op("empty", "(*shape, dtype = f32)", "An uninitialized host tensor.", Create).host(),
    op("arange", "(start, stop = None, step = 1, dtype = f32)", "The values `0 .. n`, or `start .. stop` by `step` (`arange(start, stop, step)`), as a host tensor.", Create).host(),
    op("rand", "(*shape, seed, dtype = f32)", "Uniform random values in [0, 1).", Create).host().effects(&[Random]).det(Det::Rng),
    op("randn", "(*shape, seed, dtype = f32)", "Standard normal random values.", Create).host().effects(&[Random]).det(Det::Rng),
    op("assert_allclose", "(actual, expected, rtol = 1e-5, atol = 1e-8)", "Fails unless the tensors agree within the tolerances.", Unit).host().effects(&[Io]),
    op("allclose", "(actual, expected, rtol = 1e-5, atol = 1e-8)", "Whether the tensors agree within the tolerances (`assert allclose(...)` reports the worst element).", Opaque).host(),
    op("load", "(path)", "Reads a `.npy` file into a host tensor.", Opaque).host().effects(&[Io]),
    op("save", "(path, x)", "Writes a host tensor to a `.npy` file.", Unit).host().effects(&[Io]),
    op("tile_linear_id", "()", "This tile's index within its group.", Index).kernel().thread_dependent(),
    op("group_tile_count", "()", "The number of tiles in a group.", Index).kernel(),
    op("group_linear_id", "()", "This group's index in the grid (the same for all tiles of a group).", Index).kernel(),
    op("tbarrier", "()", "Waits until every tile of the group arrives; shared-memory writes before it are visible after it.", Unit).kernel().block_collective(),
    op("atomic_add", "(target, value)", "Adds `value` to `target` atomically and gives the old value; the order of concurrent adds is unspecified.", SameAsFirst)
        .kernel().thread_dependent().effects(&[Memory]).det(Det::Atomic).writes(0, "target"),
    op("atomic_max", "(target, value)", "Stores the larger of `target` and `value` into `target` atomically and gives the old value.", SameAsFirst)
        .kernel().thread_dependent().effects(&[Memory]).det(Det::Atomic).writes(0, "target"),
    op("atomic_min", "(target, value)", "Stores the smaller of `target` and `value` into `target` atomically and gives the old value.", SameAsFirst)
        .kernel().thread_dependent().effects(&[Memory]).det(Det::Atomic).writes(0, "target"),
    op("atomic_and", "(target, value)", "Stores `target & value` into the integer `target` atomically and gives the old value.", SameAsFirst)
        .kernel().thread_dependent().effects(&[Memory]).det(Det::Atomic).writes(0, "target"),
    op("atomic_or", "(target, value)", "Stores `target | value` into the integer `target` atomically and gives the old value.", SameAsFirst)
        .kernel().thread_dependent().effects(&[Memory]).det(Det::Atomic).writes(0, "target"),
    op("atomic_xor", "(target, value)", "Stores `target ^ value` into the integer `target` atomically and gives the old value.", SameAsFirst)
        .kernel().thread_dependent().effects(&[Memory]).det(Det::Atomic).writes(0, "target"),
    op("atomic_exch", "(target, value)", "Stores `value` into `target` atomically and gives the old value.", SameAsFirst)
        .kernel().thread_dependent().effects(&[Memory]).det(Det::Nondeterministic(EXCHANGE_ALTERNATIVE)).writes(0, "target"),
    op("atomic_cas", "(target, expected, value)", "Stores `value` into `target` atomically if it holds `expected`, and gives the old value.", SameAsFirst)
        .kernel().thread_dependent().effects(&[Memory]).det(Det::Nondeterministic(EXCHANGE_ALTERNATIVE)).writes(0, "target"),
    op("deterministic", "(seed)", "A region (`with deterministic(seed=N):`) under the determinism contract.", Opaque),
    op("nondeterministic", "(reason)", "A region (`with nondeterministic(\"why\"):`) where the determinism contract is waived.", Opaque),
    // ---- launch
    op("launch.thread_id", "(axis = None)", "This thread's index in the grid: along `axis` (0, 1, 2 for x, y, z) `block_id(axis) * block_dim(axis) + local_id(axis)`; without `axis`, its linear index over the whole grid (x fastest).", Index).kernel().thread_dependent(),
    op("launch.local_id", "(axis = None)", "This thread's index in its block: along `axis`, or linear without it (`tile_linear_id()`).", Index).kernel().thread_dependent(),
    op("launch.block_id", "(axis = None)", "This thread's block's index in the grid: along `axis`, or linear without it (`group_linear_id()`).", Index).kernel(),
    op("launch.block_dim", "(axis = None)", "Threads per block: along `axis`, or in all without it (`group_tile_count()`).", Index).kernel(),
    op("launch.grid_dim", "(axis = None)", "Blocks in the grid: along `axis`, or in all without it.", Index).kernel(),
    op("launch.grid", "(blocks, threads)", "A launch configuration for a kernel.", Opaque).host(),
    // ---- tshared
    op("tshared.alloc", "[dtype](*dims, swizzle = None, bank_pad = 0)", "Allocates a shared-memory buffer for the tile group.", AllocShared).kernel(),
    // ---- tile
    op("tile.alloc_shared", "[dtype](*dims, swizzle = None, bank_pad = 0)", "Allocates a shared-memory buffer.", AllocShared).kernel(),
    op("tile.zeros", "[dtype](*dims, dtype = f32)", "A register tile of zeros (an accumulator).", Create).kernel(),
    op("tile.async_copy", "(dst, src, stage = None)", "Starts an asynchronous copy into `dst`; complete it with `tile.wait_async(stage=...)` before reading `dst`.", Unit).kernel().writes(0, "dst"),
    op("tile.wait_async", "(stage = None)", "Waits for the asynchronous copies of `stage` to complete.", Unit).kernel(),
    op("tile.cp_async", "(dst, src = None)", "`tile.cp_async(src)` copies the tile `src` into shared memory and returns the copy; `tile.cp_async(dst, src)` copies it into the shared buffer `dst` (seed forms; they complete by the next `tile.barrier()`).", SameAsFirst).kernel(),
    op("tile.barrier", "()", "Block-wide barrier.", Unit).kernel().block_collective(),
    op("tile.fence", "(scope = \"device\")", "Orders this thread's memory accesses: the threads of `scope` (\"block\", \"device\" or \"system\") see those before it before those after it (CUDA's `__threadfence_block()`, `__threadfence()`, `__threadfence_system()`).", Unit).kernel(),
    op("tile.range", "(x, axis, step)", "Iterates the tile blocks of `x` along `axis`.", Range).kernel(),
    op("tile.mma", "(A, B, C, BM, BN, BK)", "Iterates the tensor-core fragments of `C += A @ B`.", Range).kernel().accumulates().writes(2, "C"),
    op("tile.mma_sync", "(m, n, k)", "One tensor-core multiply-accumulate step.", Unit).kernel(),
    op("tile.dot", "(a, b, accumulate = None)", "Tile matrix product.", Matmul).kernel().accumulates(),
    op("tile.softmax", "(x, axis = -1, accumulate = None)", "Softmax along `axis`.", SameAsFirst).kernel().accumulates(),
    op("tile.relu", "(x)", "max(x, 0), elementwise.", SameAsFirst).kernel(),
    op("tile.exp", "(x)", "Exponential, elementwise.", SameAsFirst).kernel(),
    op("tile.reduce", "(x, op = \"sum\", axis = None, order = \"tree\")", "Reduces `x`; `order=\"tree\"` fixes the association order.", Reduce).kernel().accumulates().det(Det::Reduction),
    op("tile.sum", "(x, axis = None, accumulate = None)", "Sum of `x`.", Reduce).kernel().accumulates().det(Det::Reduction),
    op("tile.warp_shuffle_down", "(value, offset)", "The value of the lane `offset` above this one.", SameAsFirst).kernel().thread_dependent(),
    op("tile.warp_shuffle_xor", "(value, mask)", "The value of the lane `lane ^ mask` (butterfly).", SameAsFirst).kernel().thread_dependent(),
    op("tile.warp_shuffle_up", "(value, offset)", "The value of the lane `offset` below this one (the lanes below `offset` keep their own).", SameAsFirst).kernel().thread_dependent(),
    op("tile.warp_shuffle", "(value, lane)", "The value of lane `lane` of the warp (a broadcast when every lane names the same one).", SameAsFirst).kernel().thread_dependent(),
    op("tile.vote_any", "(predicate)", "Whether the predicate holds on any lane of the warp.", Scalar(crate::ty::DType::Bool)).kernel(),
    op("tile.vote_all", "(predicate)", "Whether the predicate holds on every lane of the warp.", Scalar(crate::ty::DType::Bool)).kernel(),
    op("tile.vote_ballot", "(predicate)", "A `u64` mask whose bit `i` is set when the predicate holds on lane `i` of the warp.", Scalar(crate::ty::DType::U64)).kernel(),
    op("tile.popcount", "(x)", "The number of bits set in the integer `x`.", SameAsFirst).kernel(),
    op("tile.lane_id", "()", "This thread's lane within its warp.", Index).kernel().thread_dependent(),
    op("tile.warp_id", "()", "This thread's warp within its block.", Index).kernel().thread_dependent(),
    op("tile.cooperative_group", "(size)", "A cooperative group of `size` threads: consecutive linear indices of the block, whose methods are `g.thread_rank()` and `g.sync()`.", Opaque).kernel(),
    // ---- the methods of a cooperative group (`g.thread_rank()`): the
    // namespace of a group's value, not a global name
    op("group.thread_rank", "()", "This thread's rank in its cooperative group: its linear index in the block modulo the group's size.", Index).kernel().thread_dependent(),
    op("group.sync", "()", "Waits until every thread of the cooperative group arrives (a barrier of the whole block: every thread of the block must reach it).", Unit).kernel().block_collective(),
    op("tile.atomic_add", "(target, value)", "Atomic add (unordered).", Unit).kernel().thread_dependent().effects(&[Memory]).det(Det::Atomic).writes(0, "target"),
    // ---- rng
    op("rng.uniform", "(*shape, stream = None, dtype = f32, counter = None)", "Uniform random values in [0, 1) from a counter-based stream; in a kernel without a shape, one value per thread, drawn at `counter` (the thread's index in the grid by default).", Create).effects(&[Random]).det(Det::Rng),
    op("rng.normal", "(*shape, stream = None, dtype = f32, counter = None)", "Standard normal random values from a counter-based stream; in a kernel without a shape, one value per thread, drawn at `counter` (the thread's index in the grid by default).", Create).effects(&[Random]).det(Det::Rng),
    op("rng.stream", "(name)", "A named counter-based random stream.", Opaque),
    // ---- op (operator level)
    op("op.matmul", "(a, b, tile_shape = None, accumulate = None)", "Matrix product `a @ b`.", Matmul).accumulates(),
    op("op.softmax", "(x, axis = -1, accumulate = None)", "Numerically stable softmax along `axis`.", SameAsFirst).accumulates(),
    op(
        "op.log_softmax",
        "(x, axis = -1, accumulate = None)",
        "The logarithm of the softmax along `axis`, `x - max - log(sum(exp(x - max)))` (stable where `log(op.softmax(x))` underflows).",
        SameAsFirst,
    )
    .accumulates(),
    op(
        "op.cumsum",
        "(x, axis = -1, accumulate = None)",
        "The inclusive cumulative sum along `axis` (`y[i] = x[0] + … + x[i]`), added in index order in `accumulate` (by default the dtype of `x`): the same order, and bits, on every target.",
        SameAsFirst,
    )
    .accumulates(),
    op("op.layernorm", "(x, weight, bias, eps = 1e-5, accumulate = None)", "Layer normalization over the last dimension.", SameAsFirst).accumulates(),
    op("op.rmsnorm", "(x, weight, eps = 1e-6, accumulate = None)", "RMS normalization over the last dimension.", SameAsFirst).accumulates(),
    op("op.sum", "(x, axis = None, keepdims = False, accumulate = None)", "Sum along `axis` (of all without it); with `keepdims=True` the reduced dims stay, as 1.", Reduce).accumulates().det(Det::Reduction),
    op("op.mean", "(x, axis = None, keepdims = False, accumulate = None)", "Mean along `axis` (of all without it); with `keepdims=True` the reduced dims stay, as 1.", Reduce).accumulates().det(Det::Reduction),
    op(
        "op.var",
        "(x, axis = None, keepdims = False, correction = 1, accumulate = None)",
        "Variance along `axis` (of all without it), `sum((x - mean)²) / (n - correction)` as PyTorch's: `correction=1` (the default) is the sample variance, 0 the population's.",
        Reduce,
    )
    .accumulates()
    .det(Det::Reduction),
    op(
        "op.std",
        "(x, axis = None, keepdims = False, correction = 1, accumulate = None)",
        "Standard deviation along `axis` (of all without it): the square root of `op.var` with the same arguments.",
        Reduce,
    )
    .accumulates()
    .det(Det::Reduction),
    op("op.max", "(x, axis = None, keepdims = False)", "The largest element along `axis` (of all without it); NaN if any is NaN. With `keepdims=True` the reduced dims stay, as 1.", Reduce),
    op("op.min", "(x, axis = None, keepdims = False)", "The smallest element along `axis` (of all without it); NaN if any is NaN. With `keepdims=True` the reduced dims stay, as 1.", Reduce),
    op("op.argmax", "(x, axis = None, keepdims = False)", "The index (`i64`) of the largest element along `axis`, the first of equal ones (of the flattened tensor without `axis`); a NaN is the largest. Host code only.", ArgReduce).host(),
    op("op.argmin", "(x, axis = None, keepdims = False)", "The index (`i64`) of the smallest element along `axis`, the first of equal ones (of the flattened tensor without `axis`); a NaN is the smallest. Host code only.", ArgReduce).host(),
    op("op.where", "(condition, x, y)", "`x` where the bool `condition` holds, else `y`, elementwise with broadcasting.", Select),
    op("op.add", "(a, b)", "Elementwise sum with broadcasting.", Broadcast),
    op("op.mul", "(a, b)", "Elementwise product with broadcasting.", Broadcast),
    op("op.relu", "(x)", "max(x, 0), elementwise; NaN stays NaN, as PyTorch's.", SameAsFirst),
    op("op.gelu", "(x, approximate = \"none\")", "GELU activation, elementwise, as PyTorch's: 0.5·x·(1 + erf(x/√2)), or with `approximate=\"tanh\"` 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).", SameAsFirst),
    op("op.sigmoid", "(x)", "1 / (1 + exp(-x)), elementwise.", FloatOfFirst),
    op("op.silu", "(x)", "x · sigmoid(x) (swish), elementwise.", FloatOfFirst),
    op("op.transpose", "(x, perm = None, dims = None)", "Swaps two dimensions (the last two by default).", Transpose),
    op("op.reshape", "(x, shape)", "The same elements with new dims.", Reshape),
    op("op.concat", "(tensors, axis = 0)", "Concatenates along `axis`.", Concat),
    op("op.stack", "(tensors, axis = 0)", "Stacks tensors of one shape along a new dim at `axis`, as NumPy's `stack`.", Stack),
    op("op.dropout", "(x, p, stream = None)", "Zeroes elements with probability `p` and scales the others by `1 / (1 - p)`.", SameAsFirst).effects(&[Random]).det(Det::Rng),
    op("op.flash_attention", "(q, k, v, causal = False, scale = None, accumulate = None)", "Fused attention: `softmax(q @ kᵀ · scale) @ v` over the last two dims, `q` [.., M, D], `k` [.., N, D], `v` [.., N, Dv] → [.., M, Dv] in `q`'s dtype; `scale` defaults to 1/√D; `causal` lets query `i` see keys `j ≤ i + N - M`.", Attention).accumulates(),
    op("op.scatter_add", "(target, index, values)", "Adds `values` at `index`; colliding indices add in unspecified order.", SameAsFirst)
        .effects(&[Memory]).det(Det::Nondeterministic("sort the indices and use `op.segment_sum`, which adds in a fixed order")),
    op("op.segment_sum", "(values, segments)", "Sums values per segment in a fixed order.", Opaque).accumulates(),
    op("op.all_reduce", "(x, op = \"sum\", axis = None, mesh = None, algo = \"binary_tree\", deterministic = True)", "Reduces `x` across a mesh axis.", SameAsFirst)
        .effects(&[Collective]).accumulates(),
    op("op.all_gather", "(x, axis)", "Gathers `x` across a mesh axis.", Opaque).effects(&[Collective]),
    op("op.reduce_scatter", "(x, axis)", "Reduces and scatters `x` across a mesh axis.", Opaque).effects(&[Collective]).accumulates(),
    // ---- dist
    op("dist.Mesh", "(axes, devices, shape = None)", "A device mesh with named axes.", Opaque).host(),
    op("dist.tensor", "(shape, layout, mesh, dtype)", "A tensor sharded over a mesh.", Opaque).host(),
    op("dist.ShardSpec", "(partition = None, mesh_axes = None, replicate = False, reduce = None)", "How a tensor is sharded.", Opaque),
    // ---- numerics
    op("numerics.policy", "(storage, compute, accumulate = None, rounding = \"nearest_even\", saturate = False, denorm = \"preserve\")", "A numerics policy.", Policy),
    op("numerics.Training", "", "bf16 storage and compute, f32 accumulation.", Policy),
    op("numerics.Inference", "", "fp8 storage, bf16 compute and accumulation.", Policy),
    op("numerics.NVFP4", "", "nvfp4 storage, f16 compute, f32 accumulation.", Policy),
    op("numerics.AdaptivePrecision", "(low, high, threshold)", "Switches between two policies on a measured range.", Policy),
    // ---- effects
    op("effects.suspend", "(effect)", "A region whose named effect does not propagate outward.", Opaque),
    // ---- stream, graph, autotune
    op("stream.new", "()", "A new stream.", Opaque).host(),
    op("stream.memcpy_async", "(dst, src, stream)", "An asynchronous copy on `stream`.", Unit).host().effects(&[Memory]),
    op("stream.synchronize", "()", "Waits for all streams.", Unit).host(),
    op("graph.capture", "()", "Records launches into a graph.", Opaque).host(),
    op("graph.launch", "(g)", "Replays a captured graph.", Unit).host(),
    op("autotune.search", "(kernel, params, objective)", "Searches kernel configurations.", Opaque).host(),
];

/// Looks up a builtin by its full path (`tile.async_copy`) or global name.
pub fn lookup(path: &str) -> Option<&'static Builtin> {
    BUILTINS.iter().find(|b| b.path == path)
}

/// Members of a namespace, for did-you-mean and completion.
pub fn members(namespace: &str) -> impl Iterator<Item = &'static Builtin> + '_ {
    BUILTINS.iter().filter(move |b| b.namespace() == Some(namespace))
}

/// Global builtins (no namespace).
pub fn globals() -> impl Iterator<Item = &'static Builtin> {
    BUILTINS.iter().filter(|b| b.namespace().is_none())
}

/// The preset policies: (name, storage, compute, accumulate).
pub const PRESET_POLICIES: [(&str, crate::ty::DType, crate::ty::DType, crate::ty::DType); 3] = [
    (
        "Training",
        crate::ty::DType::Bf16,
        crate::ty::DType::Bf16,
        crate::ty::DType::F32,
    ),
    (
        "Inference",
        crate::ty::DType::Fp8E4m3,
        crate::ty::DType::Bf16,
        crate::ty::DType::Bf16,
    ),
    (
        "NVFP4",
        crate::ty::DType::Nvfp4,
        crate::ty::DType::F16,
        crate::ty::DType::F32,
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_unique_and_namespaced() {
        for (i, b) in BUILTINS.iter().enumerate() {
            assert!(BUILTINS[..i].iter().all(|o| o.path != b.path), "duplicate {}", b.path);
            if let Some(ns) = b.namespace() {
                assert!(
                    NAMESPACES.contains(&ns) || VALUE_NAMESPACES.contains(&ns),
                    "{} is in an unknown namespace",
                    b.path
                );
            }
        }
    }

    #[test]
    fn lookup_finds_members() {
        assert_eq!(lookup("tile.async_copy").map(|b| b.name()), Some("async_copy"));
        assert!(members("tshared").any(|b| b.name() == "alloc"));
        assert!(globals().any(|b| b.path == "tbarrier"));
    }
}
