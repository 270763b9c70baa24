//! What the Graph and Schedule layers share: shapes and NumPy broadcasting,
//! the text of dims in `where` constraints and launch grids, the module's
//! layer, and the classes of graph ops.

use std::collections::{BTreeMap, BTreeSet};

use tessera_ir::{Attr, CmpOp, Dim, DimExpr, Module, OpId, ShapeConstraint, Type};

/// The shape of a tensor, or `[]` for a scalar; `None` for other types.
pub fn shape(ty: &Type) -> Option<&[Dim]> {
    match ty {
        Type::Tensor { dims, .. } => Some(dims),
        Type::Scalar(_) => Some(&[]),
        _ => None,
    }
}

/// `[4, M, (H*Dh)]`: a shape as the messages show it.
pub fn show_shape(dims: &[Dim]) -> String {
    let parts: Vec<String> = dims.iter().map(ToString::to_string).collect();
    format!("[{}]", parts.join(", "))
}

/// NumPy broadcasting of two shapes (aligned at the last dim; a dim of 1
/// stretches). On a mismatch, the index of the offending dim counted from
/// the end (0 = last).
pub fn broadcast(a: &[Dim], b: &[Dim]) -> Result<Vec<Dim>, usize> {
    let rank = a.len().max(b.len());
    let one = DimExpr::constant(1);
    let mut out = Vec::with_capacity(rank);
    for from_end in (0..rank).rev() {
        let da = (from_end < a.len()).then(|| &a[a.len() - 1 - from_end]);
        let db = (from_end < b.len()).then(|| &b[b.len() - 1 - from_end]);
        let d = match (da, db) {
            (Some(x), None) | (None, Some(x)) => x.clone(),
            (Some(x), Some(y)) if x == y => x.clone(),
            (Some(x), Some(y)) if *x == one => y.clone(),
            (Some(x), Some(y)) if *y == one => x.clone(),
            (Some(_), Some(_)) => return Err(from_end),
            (None, None) => unreachable!("from_end is below the larger rank"),
        };
        out.push(d);
    }
    Ok(out)
}

/// The number of elements: the product of the dims.
pub fn num_elements(dims: &[Dim]) -> DimExpr {
    dims.iter().fold(DimExpr::constant(1), |acc, d| acc.mul(d))
}

/// An axis attribute (negative counts from the end) as an index below `rank`.
pub fn normalize_axis(axis: i64, rank: usize) -> Option<usize> {
    let rank = i64::try_from(rank).ok()?;
    let a = if axis < 0 { axis + rank } else { axis };
    (0..rank).contains(&a).then_some(a as usize)
}

/// A divisibility constraint of a `where` clause: `dim % modulus == 0`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Divisible {
    pub dim: DimExpr,
    pub modulus: i64,
    /// The constraint as written in the `constraints` attribute.
    pub text: String,
}

/// What a function's dims satisfy when its kernels run: its `constraints`
/// and what its `graph.guard` ops check on entry, with their texts.
pub fn facts(m: &Module, func: OpId) -> Vec<(ShapeConstraint, &str)> {
    let declared = m
        .attr(func, "constraints")
        .and_then(Attr::as_array)
        .unwrap_or_default()
        .iter()
        .filter_map(Attr::as_str);
    let guarded = m
        .entry_block(func)
        .map(|b| m.block_ops(b))
        .unwrap_or_default()
        .iter()
        .filter(|&&op| m.op(op).name == "graph.guard")
        .filter_map(|&op| m.attr(op, "constraint").and_then(Attr::as_str));
    declared
        .chain(guarded)
        .filter_map(|text| Some((ShapeConstraint::parse(text)?, text)))
        .collect()
}

/// The divisibility constraints among a function's [`facts`] (the other
/// forms, `S <= 8192` or `B in 1..=4096`, say nothing about tiles).
pub fn divisibility(m: &Module, func: Option<OpId>) -> Vec<Divisible> {
    let Some(func) = func else {
        return Vec::new();
    };
    facts(m, func)
        .into_iter()
        .filter_map(|(c, text)| Divisible::of(&c, text))
        .collect()
}

impl Divisible {
    /// `c` when it is a divisibility constraint, written `text`.
    pub fn of(c: &ShapeConstraint, text: &str) -> Option<Divisible> {
        match c {
            ShapeConstraint::Divisible { dim, by } => Some(Divisible {
                dim: dim.clone(),
                modulus: *by,
                text: text.to_string(),
            }),
            _ => None,
        }
    }

    /// The divisibility constraints among `facts` (constraints with their
    /// text).
    pub fn all_of(facts: &[(ShapeConstraint, String)]) -> Vec<Divisible> {
        facts.iter().filter_map(|(c, text)| Divisible::of(c, text)).collect()
    }
}

/// Whether one of `func`'s [`facts`] says `a == b`.
pub fn known_equal(m: &Module, func: OpId, a: &DimExpr, b: &DimExpr) -> bool {
    let difference = a.sub(b);
    facts(m, func).into_iter().any(|(c, _)| match c {
        ShapeConstraint::Compare {
            lhs,
            op: CmpOp::Eq,
            rhs,
        } => {
            let d = lhs.sub(&rhs);
            d == difference || d.neg() == difference
        }
        _ => false,
    })
}

/// The dim symbols a call of `func` binds: those of its parameter types
/// and those its `constraints` relate to them (`E == 2 * D` derives `E`).
pub fn function_dims(m: &Module, func: OpId) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    if let Some((inputs, _)) = m.func_type(func) {
        for d in inputs.iter().filter_map(Type::dims).flatten() {
            out.extend(d.symbols().into_iter().map(str::to_string));
        }
    }
    let declared = m.attr(func, "constraints").and_then(Attr::as_array).unwrap_or_default();
    for c in declared
        .iter()
        .filter_map(Attr::as_str)
        .filter_map(ShapeConstraint::parse)
    {
        out.extend(c.symbols().into_iter().map(str::to_string));
    }
    out
}

/// What a call binds the callee's dim symbols to: each parameter dim that
/// is a single symbol takes the dim of the argument in its place (the
/// first binding wins; the verifier compares the rest).
pub fn call_binding(params: &[Type], args: &[Type]) -> BTreeMap<String, DimExpr> {
    let mut bound = BTreeMap::new();
    for (p, a) in params.iter().zip(args) {
        let (Some(pd), Some(ad)) = (p.dims(), a.dims()) else {
            continue;
        };
        if pd.len() != ad.len() {
            continue;
        }
        for (p, a) in pd.iter().zip(ad) {
            if let Some(sym) = p.as_sym() {
                bound.entry(sym.to_string()).or_insert_with(|| a.clone());
            }
        }
    }
    bound
}

/// `ty` with the callee's dims replaced as `binding` says.
pub fn instantiate(ty: &Type, binding: &BTreeMap<String, DimExpr>) -> Type {
    ty.map_dims(&|d| d.substitute(|s| binding.get(s).cloned()))
}

/// The largest modulus that a divisibility constraint gives `dim`.
pub fn modulus_of<'d>(constraints: &'d [Divisible], dim: &DimExpr) -> Option<&'d Divisible> {
    constraints.iter().filter(|c| c.dim == *dim).max_by_key(|c| c.modulus)
}

/// Whether a tile of `size` over a dim that is a multiple of `modulus`
/// respects that constraint (spec/ir-schedule.md, "Tile shapes and `where`
/// constraints"): it divides the modulus (no tile straddles the dim's end)
/// or is a multiple of the modulus's [`aligning_part`] (every tile starts
/// where the dim's alignment facts hold; the last tile is masked).
pub fn tile_respects(size: i64, modulus: i64) -> bool {
    size > 0 && modulus > 0 && (modulus % size == 0 || size % aligning_part(modulus) == 0)
}

/// The largest power of two dividing `modulus` (32 of 96, 1 of 3): all a
/// divisibility constraint tells the code generator, whose vector widths,
/// 16-byte rows and runs are powers of two, so a tile that is a multiple
/// of it loses nothing by not being a multiple of `modulus` itself.
pub fn aligning_part(modulus: i64) -> i64 {
    modulus & modulus.wrapping_neg()
}

/// One entry of a launch grid: a number of blocks known at compile time,
/// or an expression over dim symbols evaluated at launch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GridDim {
    Const(i64),
    /// `dim` blocks (the text is the dim's canonical form, `B*H`).
    Dim(DimExpr),
    /// `cdiv(dim, tile)`: ⌈dim / tile⌉ blocks.
    CeilDiv(DimExpr, i64),
    /// `persistent(w1, w2, …)`: a persistent grid, one block per
    /// multiprocessor of the device but no more blocks than work items,
    /// the product of the entries `w1, w2, …` (each of another form). Its
    /// blocks walk the work items themselves (`spec/ir-schedule.md`,
    /// "Persistent grids").
    Persistent(Vec<GridDim>),
}

impl GridDim {
    /// ⌈extent / tile⌉, folded when the extent is a constant.
    pub fn ceil_div(extent: &DimExpr, tile: i64) -> GridDim {
        match extent.as_const() {
            Some(c) => GridDim::Const((c + tile - 1) / tile),
            None if tile == 1 => GridDim::Dim(extent.clone()),
            None => GridDim::CeilDiv(extent.clone(), tile),
        }
    }

    pub fn to_attr(&self) -> Attr {
        match self {
            GridDim::Const(c) => Attr::Int(*c),
            GridDim::Dim(d) => Attr::Str(d.to_string()),
            GridDim::CeilDiv(d, t) => Attr::Str(format!("cdiv({d}, {t})")),
            GridDim::Persistent(work) => Attr::Str(format!(
                "persistent({})",
                work.iter().map(GridDim::text).collect::<Vec<_>>().join(", ")
            )),
        }
    }

    /// The entry as the text of a string attribute (`128`, `cdiv(M, 64)`).
    fn text(&self) -> String {
        match self.to_attr() {
            Attr::Str(s) => s,
            other => other.to_string(),
        }
    }

    /// Reads a grid entry: a positive integer, `E`, `cdiv(E, T)` or
    /// `persistent(W, …)` of entries of the other forms.
    pub fn from_attr(attr: &Attr) -> Option<GridDim> {
        match attr {
            Attr::Int(c) if *c > 0 => Some(GridDim::Const(*c)),
            Attr::Str(s) => {
                if let Some(inner) = s.strip_prefix("persistent(").and_then(|r| r.strip_suffix(')')) {
                    let work: Vec<GridDim> = tessera_base::split_top_level(inner)
                        .into_iter()
                        .map(|w| match w.trim().parse::<i64>() {
                            Ok(c) => GridDim::from_attr(&Attr::Int(c)),
                            Err(_) => GridDim::from_attr(&Attr::str(w.trim())),
                        })
                        .collect::<Option<_>>()?;
                    let nested = work.iter().any(|w| matches!(w, GridDim::Persistent(_)));
                    (!work.is_empty() && !nested).then_some(GridDim::Persistent(work))
                } else if let Some(inner) = s.strip_prefix("cdiv(").and_then(|r| r.strip_suffix(')')) {
                    let (dim, tile) = inner.rsplit_once(',')?;
                    let tile: i64 = tile.trim().parse().ok()?;
                    (tile > 0).then_some(GridDim::CeilDiv(DimExpr::parse(dim)?, tile))
                } else {
                    Some(GridDim::Dim(DimExpr::parse(s)?))
                }
            }
            _ => None,
        }
    }
}

/// Which layer a module is in: its `layer` attribute, `graph` when absent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layer {
    Graph,
    Schedule,
    Tile,
    Target,
}

impl Layer {
    pub fn name(self) -> &'static str {
        match self {
            Layer::Graph => "graph",
            Layer::Schedule => "schedule",
            Layer::Tile => "tile",
            Layer::Target => "target",
        }
    }

    /// The module's layer, or the offending value of `layer`.
    pub fn of(m: &Module) -> Result<Layer, String> {
        match m.attrs.get("layer") {
            None => Ok(Layer::Graph),
            Some(Attr::Str(s)) => match s.as_str() {
                "graph" => Ok(Layer::Graph),
                "schedule" => Ok(Layer::Schedule),
                "tile" => Ok(Layer::Tile),
                "target" => Ok(Layer::Target),
                _ => Err(format!("\"{s}\"")),
            },
            Some(other) => Err(other.to_string()),
        }
    }
}

/// The graph ops that compute on tensors: in Schedule IR they live in
/// kernels.
/// Ops without operands that each kernel using them holds a copy of: a
/// constant, and a dim's value (which every kernel can compute from the
/// dims it is launched with).
pub fn is_leaf(name: &str) -> bool {
    matches!(name, "graph.constant" | "graph.dim")
}

pub fn is_compute(name: &str) -> bool {
    matches!(
        name,
        "graph.elementwise"
            | "graph.matmul"
            | "graph.reduce"
            | "graph.softmax"
            | "graph.cumsum"
            | "graph.attention"
            | "graph.norm"
            | "graph.transpose"
            | "graph.reshape"
            | "graph.concat"
            | "graph.cast"
            | "graph.broadcast"
            | "graph.slice"
    )
}

/// The compute ops evaluated element by element (each output element
/// depends on at most one element of each operand): they fuse into
/// `elementwise` kernels.
pub fn is_pointwise(name: &str) -> bool {
    matches!(
        name,
        "graph.elementwise"
            | "graph.cast"
            | "graph.broadcast"
            | "graph.transpose"
            | "graph.reshape"
            | "graph.slice"
            | "graph.concat"
    )
}

/// The effect names of the language (`spec/effects.md`).
pub const EFFECTS: [&str; 4] = ["random", "io", "memory", "collective"];

/// The effect a side-effecting graph op has, by itself (`graph.call`
/// carries its callee's effects, `graph.guard` none: it only orders).
pub fn effect_of(name: &str) -> Option<&'static str> {
    match name {
        "graph.all_reduce" => Some("collective"),
        "graph.rng" => Some("random"),
        "graph.print" => Some("io"),
        _ => None,
    }
}

/// The declared effects of a function: its `effects` attribute's strings.
pub fn declared_effects(m: &Module, func: OpId) -> Vec<&str> {
    m.attr(func, "effects")
        .and_then(Attr::as_array)
        .map(|items| items.iter().filter_map(Attr::as_str).collect())
        .unwrap_or_default()
}

/// Whether the function is `@deterministic` (the attribute is a unit flag
/// or the seed).
pub fn is_deterministic(m: &Module, func: Option<OpId>) -> bool {
    func.is_some_and(|f| m.attr(f, "deterministic").is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dims(text: &[&str]) -> Vec<Dim> {
        text.iter().map(|t| DimExpr::parse(t).unwrap()).collect()
    }

    #[test]
    fn broadcasting_follows_numpy() {
        assert_eq!(broadcast(&dims(&["M", "N"]), &dims(&["N"])), Ok(dims(&["M", "N"])));
        assert_eq!(broadcast(&dims(&["M", "1"]), &dims(&["1", "N"])), Ok(dims(&["M", "N"])));
        assert_eq!(broadcast(&dims(&["4", "8"]), &dims(&["4", "7"])), Err(0));
        assert_eq!(broadcast(&dims(&["B", "S"]), &dims(&["S", "S"])), Err(1));
        assert_eq!(broadcast(&[], &dims(&["3"])), Ok(dims(&["3"])));
    }

    #[test]
    fn grid_entries_round_trip() {
        for g in [
            GridDim::Const(4),
            GridDim::Dim(DimExpr::parse("B*H").unwrap()),
            GridDim::CeilDiv(DimExpr::parse("M").unwrap(), 128),
            GridDim::Persistent(vec![
                GridDim::CeilDiv(DimExpr::parse("M").unwrap(), 128),
                GridDim::CeilDiv(DimExpr::parse("N").unwrap(), 256),
                GridDim::Dim(DimExpr::parse("B*H").unwrap()),
                GridDim::Const(2),
            ]),
        ] {
            assert_eq!(GridDim::from_attr(&g.to_attr()), Some(g));
        }
        assert_eq!(
            GridDim::Persistent(vec![
                GridDim::CeilDiv(DimExpr::parse("M").unwrap(), 128),
                GridDim::Const(1)
            ])
            .to_attr(),
            Attr::str("persistent(cdiv(M, 128), 1)")
        );
        for bad in [
            "persistent()",
            "persistent(persistent(M))",
            "persistent(M, cdiv(N, 0))",
            "persistent(0)",
        ] {
            assert_eq!(GridDim::from_attr(&Attr::str(bad)), None, "{bad}");
        }
        assert_eq!(GridDim::ceil_div(&DimExpr::constant(300), 128), GridDim::Const(3));
        assert_eq!(GridDim::from_attr(&Attr::Int(0)), None);
        assert_eq!(GridDim::from_attr(&Attr::str("cdiv(M, 0)")), None);
    }
}
