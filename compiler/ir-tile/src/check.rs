//! The helper every per-op rule is written with ([`Check`]), and the rules
//! that several dialects share: memory accesses, shared allocations, tile
//! copies, shuffles, votes and atomics keep their shape from Tile IR to
//! Target IR.

use tessera_ir::{Attr, MemSpace, Module, OpId, ScalarType, Type, VerifyError, VerifyErrors};

use crate::shape::{self, is_memref_in};

/// The op a rule looks at, and where its findings go.
pub(crate) struct Check<'a> {
    pub m: &'a Module,
    pub op: OpId,
    pub name: &'a str,
    errors: &'a mut VerifyErrors,
}

impl<'a> Check<'a> {
    pub fn new(m: &'a Module, op: OpId, errors: &'a mut VerifyErrors) -> Check<'a> {
        Check {
            m,
            op,
            name: m.op(op).name.as_str(),
            errors,
        }
    }

    pub fn fail(&mut self, message: impl Into<String>) {
        self.errors.push(VerifyError::at_op(self.m, self.op, message));
    }

    pub fn push(&mut self, error: VerifyError) {
        self.errors.push(error);
    }

    pub fn attr(&self, key: &str) -> Option<&'a Attr> {
        self.m.attr(self.op, key)
    }

    pub fn int(&self, key: &str) -> Option<i64> {
        self.attr(key).and_then(Attr::as_int)
    }

    pub fn operand_count(&self) -> usize {
        self.m.operands(self.op).len()
    }

    pub fn operand_type(&self, i: usize) -> Type {
        self.m.value_type(self.m.operands(self.op)[i]).clone()
    }

    pub fn result_type(&self, i: usize) -> Type {
        self.m.value_type(self.m.results(self.op)[i]).clone()
    }

    pub fn result_is(&mut self, i: usize, ty: &Type) {
        let actual = self.result_type(i);
        if actual != *ty {
            self.fail(format!("`{}` gives `{actual}` here; it must give `{ty}`", self.name));
        }
    }

    pub fn operand_is(&mut self, i: usize, ty: &Type) {
        let actual = self.operand_type(i);
        if actual != *ty {
            self.fail(format!(
                "operand #{i} of `{}` is `{actual}`; it must be `{ty}`",
                self.name
            ));
        }
    }

    /// The string attribute `key`, which must be one of `allowed`.
    pub fn one_of(&mut self, key: &str, allowed: &[&str]) -> Option<String> {
        let value = self.attr(key).and_then(Attr::as_str)?;
        if allowed.contains(&value) {
            return Some(value.to_string());
        }
        let list: Vec<String> = allowed.iter().map(|a| format!("\"{a}\"")).collect();
        self.fail(format!(
            "`{key}` of `{}` must be one of {}; it is \"{value}\"",
            self.name,
            list.join(", ")
        ));
        None
    }

    pub fn one_of_opt(&mut self, key: &str, allowed: &[&str]) {
        if self.attr(key).is_some() {
            self.one_of(key, allowed);
        }
    }

    pub fn int_at_least(&mut self, key: &str, min: i64) {
        if let Some(v) = self.int(key) {
            if v < min {
                self.fail(format!("`{key}` of `{}` must be at least {min}; it is {v}", self.name));
            }
        }
    }

    pub fn int_in(&mut self, key: &str, allowed: &[i64]) {
        if let Some(v) = self.int(key) {
            if !allowed.contains(&v) {
                let list: Vec<String> = allowed.iter().map(i64::to_string).collect();
                self.fail(format!(
                    "`{key}` of `{}` must be one of {}; it is {v}",
                    self.name,
                    list.join(", ")
                ));
            }
        }
    }

    /// `dim` is 0, 1 or 2 (x, y, z).
    pub fn dim_attr(&mut self) {
        self.int_in("dim", &[0, 1, 2]);
    }

    /// The op is directly in a region of one of `parents`.
    pub fn parent_is(&mut self, parents: &[&str]) {
        let parent = self.m.parent_op(self.op).map(|p| self.m.op(p).name.as_str());
        if !parent.is_some_and(|p| parents.contains(&p)) {
            let list: Vec<String> = parents.iter().map(|p| format!("`{p}`")).collect();
            self.fail(format!("`{}` ends a region of {} only", self.name, list.join(" or ")));
        }
    }

    /// Whether an enclosing op (inside the function) is one of `ops`.
    pub fn inside(&self, ops: &[&str]) -> bool {
        enclosed_by(self.m, self.op, ops)
    }

    pub fn region_arg_types(&self, r: usize) -> Vec<Type> {
        let region = self.m.regions(self.op)[r];
        self.m
            .region_args(region)
            .iter()
            .map(|&a| self.m.value_type(a).clone())
            .collect()
    }

    /// Region `r` ends with one of `allowed`.
    pub fn region_ends_with(&mut self, r: usize, allowed: &[&str], expected: &str) {
        let region = self.m.regions(self.op)[r];
        let last = self.m.block_ops(self.m.region_block(region)).last().copied();
        if !last.is_some_and(|l| allowed.contains(&self.m.op(l).name.as_str())) {
            self.fail(format!("region #{r} of `{}` must end with `{expected}`", self.name));
        }
    }

    /// Operands `from..` are `count` indices of type `index`, for a memref
    /// of rank `count`.
    pub fn indices(&mut self, from: usize, rank: usize, what: &str) -> bool {
        let given = self.operand_count().saturating_sub(from);
        if given != rank {
            self.fail(format!(
                "`{}` on a rank-{rank} memref takes {rank} {what}, not {given}",
                self.name
            ));
            return false;
        }
        for i in from..from + rank {
            let ty = self.operand_type(i);
            if ty != Type::INDEX {
                self.fail(format!("{what} of `{}` are `index`, not `{ty}`", self.name));
                return false;
            }
        }
        true
    }

    /// Operand `i`, which must be a memref (in one of `spaces`, when given).
    pub fn memref(&mut self, i: usize, role: &str, spaces: &[MemSpace]) -> Option<Type> {
        let ty = self.operand_type(i);
        match &ty {
            Type::MemRef { space, .. } if spaces.is_empty() || spaces.contains(space) => Some(ty),
            Type::MemRef { space, .. } => {
                let list: Vec<&str> = spaces.iter().map(|s| s.name()).collect();
                self.fail(format!(
                    "the {role} of `{}` is in {} memory; it must be in {} memory",
                    self.name,
                    space.name(),
                    list.join(" or ")
                ));
                None
            }
            _ => {
                self.fail(format!("the {role} of `{}` is `{ty}`, not a memref", self.name));
                None
            }
        }
    }
}

/// Whether an op enclosing `op` inside its function is one of `ops`.
pub(crate) fn enclosed_by(m: &Module, op: OpId, ops: &[&str]) -> bool {
    let mut current = op;
    while let Some(parent) = m.parent_op(current) {
        if m.is_function(parent) {
            return false;
        }
        if ops.contains(&m.op(parent).name.as_str()) {
            return true;
        }
        current = parent;
    }
    false
}

pub(crate) fn rank(ty: &Type) -> usize {
    ty.dims().map_or(0, <[_]>::len)
}

/// `load(%mem, %idx...) -> elem`.
pub(crate) fn load(c: &mut Check, mem: usize, first_index: usize) {
    let Some(ty) = c.memref(mem, "memory operand", &[]) else {
        return;
    };
    if c.indices(first_index, rank(&ty), "indices") {
        c.result_is(0, &Type::Scalar(ty.elem().unwrap_or(ScalarType::F32)));
    }
}

/// `store(%v, %mem, %idx...)`.
pub(crate) fn store(c: &mut Check) {
    let Some(ty) = c.memref(1, "memory operand", &[]) else {
        return;
    };
    if c.indices(2, rank(&ty), "indices") {
        c.operand_is(0, &Type::Scalar(ty.elem().unwrap_or(ScalarType::F32)));
    }
}

/// `view(%mem, %idx...)`: fewer indices than the memref's rank, and a
/// result of the remaining dims, element type and memory space.
pub(crate) fn view(c: &mut Check) {
    let Some(Type::MemRef { dims, elem, space, .. }) = c.memref(0, "memory operand", &[]) else {
        return;
    };
    let given = c.operand_count() - 1;
    if given >= dims.len() {
        c.fail(format!(
            "`tile.view` of a rank-{} memref fixes at most {} leading dims, not {given}",
            dims.len(),
            dims.len().saturating_sub(1)
        ));
        return;
    }
    if c.indices(1, given, "indices") {
        c.result_is(0, &Type::memref(dims[given..].to_vec(), elem, space));
    }
}

/// A buffer swizzled over `span` bytes: the pattern runs over its last two
/// dims, rows in multiples of 8 and each row whole `span`-byte units.
fn swizzled_shape(c: &mut Check, span: i64, dims: &[tessera_ir::Dim], elem: ScalarType) {
    let fits = match dims {
        [.., rows, cols] => match (rows.as_const(), cols.as_const()) {
            (Some(rows), Some(cols)) => shape::swizzle_fits(span, rows, cols * i64::from(elem.bits())),
            _ => false,
        },
        _ => false,
    };
    if !fits {
        c.fail(format!(
            "a {span}-byte swizzle runs over the last two dims of `{}`: rows in multiples of 8, each row whole {span}-byte units",
            c.name
        ));
    }
}

/// A shared allocation (`tile.alloc_shared` and its target forms): a
/// shared memref whose layout agrees with the op's `swizzle`/`bank_pad`.
pub(crate) fn alloc_shared(c: &mut Check) {
    let ty = c.result_type(0);
    let Type::MemRef {
        space: MemSpace::Shared,
        layout,
        ..
    } = &ty
    else {
        c.fail(format!("`{}` gives a `memref<…, shared>`, not `{ty}`", c.name));
        return;
    };
    if let Some(swizzle) = c.attr("swizzle") {
        let good = match swizzle {
            Attr::Int(v) => [32, 64, 128].contains(v),
            Attr::Str(_) => true,
            _ => false,
        };
        if !good {
            c.fail(format!(
                "`swizzle` of `{}` is a span of 32, 64 or 128 bytes (or a named pattern); it is {swizzle}",
                c.name
            ));
        }
        if let (true, Attr::Int(span), Some(dims), Some(elem)) = (good, swizzle, ty.dims(), ty.elem()) {
            swizzled_shape(c, *span, dims, elem);
        }
        // A named pattern is not applied, so padding may go with it (seed
        // 000's `{ swizzle = "xor", bank_pad = 1 }`).
        if matches!(swizzle, Attr::Int(_)) && c.int("bank_pad").is_some_and(|p| p > 0) {
            c.fail(format!("`{}` is swizzled or padded by `bank_pad`, not both", c.name));
        }
        if let Some(typed) = layout.get("swizzle") {
            if typed != swizzle {
                c.fail(format!(
                    "`{}` says `swizzle = {swizzle}` but its type says `swizzle={typed}`",
                    c.name
                ));
            }
        }
    }
    if let Some(pad) = c.int("bank_pad") {
        if pad < 0 {
            c.fail(format!("`bank_pad` of `{}` must not be negative; it is {pad}", c.name));
        }
        if let Some(typed) = layout.get("pad") {
            if typed.as_int() != Some(pad) {
                c.fail(format!(
                    "`{}` says `bank_pad = {pad}` but its type says `pad={typed}`",
                    c.name
                ));
            }
        }
    }
}

/// Whether a tile of `tile` dims fits in a memref of `mem` dims where both
/// are constant.
fn tile_fits(tile: &Type, mem: &Type) -> bool {
    let (Some(t), Some(m)) = (tile.dims(), mem.dims()) else {
        return true;
    };
    t.iter().zip(m).all(|(a, b)| match (a.as_const(), b.as_const()) {
        (Some(a), Some(b)) => a <= b,
        _ => true,
    })
}

/// `load_tile(%mem, %off...) -> tensor`.
pub(crate) fn load_tile(c: &mut Check) {
    let Some(mem) = c.memref(0, "memory operand", &[]) else {
        return;
    };
    if !c.indices(1, rank(&mem), "offsets") {
        return;
    }
    let tile = c.result_type(0);
    tile_of(c, &tile, &mem);
}

/// `store_tile(%v, %mem, %off...)`.
pub(crate) fn store_tile(c: &mut Check) {
    let Some(mem) = c.memref(1, "memory operand", &[]) else {
        return;
    };
    if !c.indices(2, rank(&mem), "offsets") {
        return;
    }
    let tile = c.operand_type(0);
    tile_of(c, &tile, &mem);
}

fn tile_of(c: &mut Check, tile: &Type, mem: &Type) {
    let Type::Tensor { elem, .. } = tile else {
        c.fail(format!("`{}` moves a tile (`tensor<…>`), not `{tile}`", c.name));
        return;
    };
    if Some(*elem) != mem.elem() || rank(tile) != rank(mem) {
        c.fail(format!(
            "the tile `{tile}` does not match the memref `{mem}`: the element type and the rank must agree"
        ));
    } else if !tile_fits(tile, mem) {
        c.fail(format!("the tile `{tile}` is larger than the memref `{mem}`"));
    }
}

/// A tile copy from global to shared memory: `(%dst, %src, %off...)`
/// followed by `trailing` other operands. Gives the destination's type.
pub(crate) fn tile_copy(c: &mut Check, trailing: usize) -> Option<Type> {
    tile_copy_of(c, trailing, false)
}

/// As [`tile_copy`]; with `leading`, `%src` may have more dims than
/// `%dst`, its leading offsets selecting the slice the tile is copied
/// from (a TMA load of a `tile.view`).
pub(crate) fn tile_copy_of(c: &mut Check, trailing: usize, leading: bool) -> Option<Type> {
    let dst = c.memref(0, "destination", &[MemSpace::Shared])?;
    let src = c.memref(1, "source", &[MemSpace::Global])?;
    let r = rank(&src);
    let given = c.operand_count().saturating_sub(2 + trailing);
    if given != r {
        c.fail(format!(
            "`{}` from a rank-{r} memref takes {r} offsets, not {given}",
            c.name
        ));
        return None;
    }
    for i in 2..2 + r {
        let ty = c.operand_type(i);
        if ty != Type::INDEX {
            c.fail(format!("offsets of `{}` are `index`, not `{ty}`", c.name));
            return None;
        }
    }
    let ranks_fit = if leading {
        (1..=r).contains(&rank(&dst))
    } else {
        rank(&dst) == r
    };
    if dst.elem() != src.elem() || !ranks_fit {
        let ranks = if leading {
            "at most the rank of its source"
        } else {
            "rank"
        };
        c.fail(format!(
            "`{}` copies between memrefs of the same element type and {ranks}, not `{src}` into `{dst}`",
            c.name
        ));
        return None;
    }
    Some(dst)
}

/// `shuffle(%v, %lane_or_delta) -> v`: a scalar from another lane.
pub(crate) fn shuffle(c: &mut Check) {
    let v = c.operand_type(0);
    if !matches!(v, Type::Scalar(_)) {
        c.fail(format!("`{}` moves a scalar between lanes, not `{v}`", c.name));
        return;
    }
    let lane = c.operand_type(1);
    if !matches!(lane, Type::Scalar(s) if !s.is_float() && s != ScalarType::I1) {
        c.fail(format!("the lane or delta of `{}` is an integer, not `{lane}`", c.name));
    }
    c.result_is(0, &v);
    if let Some(width) = c.int("width") {
        if !(1..=32).contains(&width) || width & (width - 1) != 0 {
            c.fail(format!(
                "shuffle width must be a power of two up to 32; `{}` has width {width}",
                c.name
            ));
        }
    }
}

/// `vote(%pred)`: `i1` for any/all, a lane mask for ballot.
pub(crate) fn vote(c: &mut Check) {
    c.operand_is(0, &Type::I1);
    let result = c.result_type(0);
    let ballot = c.attr("mode").and_then(Attr::as_str) == Some("ballot");
    let good = if ballot {
        matches!(result, Type::Scalar(s) if !s.is_float() && matches!(s.bits(), 32 | 64))
    } else {
        result == Type::I1
    };
    if !good {
        let expected = if ballot { "a 32- or 64-bit lane mask" } else { "`i1`" };
        c.fail(format!("`{}` gives {expected} here, not `{result}`", c.name));
    }
}

pub(crate) const ATOMIC_KINDS: &[&str] = &["add", "max", "min", "exch", "cas", "and", "or", "xor"];

/// `atomic(%mem, %idx..., [%expected,] %v) -> old`.
pub(crate) fn atomic(c: &mut Check, spaces: &[MemSpace]) {
    let Some(kind) = c.one_of("kind", ATOMIC_KINDS) else {
        return;
    };
    let Some(mem) = c.memref(0, "memory operand", spaces) else {
        return;
    };
    let values = if kind == "cas" { 2 } else { 1 };
    let r = rank(&mem);
    if c.operand_count() != 1 + r + values {
        c.fail(format!(
            "`{}` {kind} on a rank-{r} memref takes the memref, {r} {} and {values} value{}",
            c.name,
            if r == 1 { "index" } else { "indices" },
            if values == 1 { "" } else { "s" }
        ));
        return;
    }
    for i in 1..=r {
        c.operand_is(i, &Type::INDEX);
    }
    let elem = Type::Scalar(mem.elem().unwrap_or(ScalarType::F32));
    for i in 1 + r..c.operand_count() {
        c.operand_is(i, &elem);
    }
    c.result_is(0, &elem);
    if ["and", "or", "xor"].contains(&kind.as_str()) && mem.elem().is_some_and(ScalarType::is_float) {
        c.fail(format!("atomic `{kind}` needs integers, not `{elem}`"));
    }
}

/// A matrix product in the target dialects, `(%a, %b, %c) -> c`: shapes
/// as for `tile.mma` (b transposed, NxK, with the unit attribute
/// `transpose_b`); gives `(M, N, K)` when they fit.
pub(crate) fn matrix_product(c: &mut Check) -> Option<(tessera_ir::Dim, tessera_ir::Dim, tessera_ir::Dim)> {
    let (a, b, acc) = (c.operand_type(0), c.operand_type(1), c.operand_type(2));
    let transposed = c.m.attr(c.op, "transpose_b").is_some();
    match shape::product_dims(&a, &b, &acc, transposed) {
        Ok(dims) => {
            c.result_is(0, &acc);
            Some(dims)
        }
        Err(e) => {
            c.fail(format!("`{}` shapes do not fit: {e}", c.name));
            None
        }
    }
}

/// The operand is in shared memory.
pub(crate) fn in_shared(c: &mut Check, i: usize, role: &str) -> bool {
    let ty = c.operand_type(i);
    if is_memref_in(&ty, MemSpace::Shared) {
        return true;
    }
    c.fail(format!(
        "the {role} of `{}` must be in shared memory; it is `{ty}`",
        c.name
    ));
    false
}
