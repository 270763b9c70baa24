//! The printer of the textual form (grammar in `spec/ir.md`). It renumbers
//! values `%0, %1, …` in textual order per isolated scope (the module's top
//! level, and each function-like op), so printing what it parses gives the
//! same text byte for byte.

use std::collections::{BTreeMap, HashMap};
use std::fmt::{self, Write as _};

use crate::{Attr, BlockId, DimExpr, Loc, Module, OpId, Type, ValueId, FUNCTION_TYPE, SYM_NAME};

/// The canonical text of a module.
pub fn print_module(m: &Module) -> String {
    let mut p = Printer {
        m,
        out: String::new(),
        names: Vec::new(),
    };
    p.module();
    p.out
}

/// The canonical text of one op (and its regions) at indentation 0, values
/// numbered within the op alone; for messages and debugging.
pub fn print_op(m: &Module, op: OpId) -> String {
    let mut p = Printer {
        m,
        out: String::new(),
        names: Vec::new(),
    };
    p.names.push(p.number(&[], &[op]));
    p.op(op, 0);
    p.out
}

struct Printer<'a> {
    m: &'a Module,
    out: String,
    /// The value numbering of each isolated scope being printed.
    names: Vec<HashMap<ValueId, usize>>,
}

impl Printer<'_> {
    fn module(&mut self) {
        let m = self.m;
        self.out.push_str("module");
        if let Some(name) = &m.name {
            self.out.push(' ');
            write_symbol(&mut self.out, name);
        }
        if !m.attrs.is_empty() {
            self.out.push_str(" attributes ");
            write_dict(&mut self.out, &m.attrs);
        }
        write_loc(&mut self.out, &m.loc);
        self.out.push_str(" {\n");
        let ops = m.block_ops(m.body());
        self.names.push(self.number(&[], ops));
        for &op in ops {
            self.op(op, 2);
        }
        self.names.pop();
        self.out.push_str("}\n");
    }

    /// Numbers the values of an isolated scope in textual order: `args`,
    /// then for each op its results and then its regions' arguments and ops,
    /// not entering nested function-like ops (they number their own).
    fn number(&self, args: &[ValueId], ops: &[OpId]) -> HashMap<ValueId, usize> {
        enum Item<'a> {
            Args(&'a [ValueId]),
            Ops(&'a [OpId], usize),
        }
        let mut names = HashMap::new();
        let mut stack = vec![Item::Ops(ops, 0), Item::Args(args)];
        while let Some(item) = stack.pop() {
            match item {
                Item::Args(args) => {
                    for &a in args {
                        let n = names.len();
                        names.entry(a).or_insert(n);
                    }
                }
                Item::Ops(list, i) => {
                    let Some(&op) = list.get(i) else { continue };
                    stack.push(Item::Ops(list, i + 1));
                    for &r in self.m.results(op) {
                        let n = names.len();
                        names.entry(r).or_insert(n);
                    }
                    if self.m.is_function(op) {
                        continue;
                    }
                    for &region in self.m.regions(op).iter().rev() {
                        let block = self.m.region_block(region);
                        stack.push(Item::Ops(self.m.block_ops(block), 0));
                        stack.push(Item::Args(self.m.block_args(block)));
                    }
                }
            }
        }
        names
    }

    fn value(&mut self, v: ValueId) {
        match self.names.last().and_then(|n| n.get(&v)) {
            Some(n) => {
                let _ = write!(self.out, "%{n}");
            }
            // Only in a module that fails the structural verifier: a value
            // of another scope or of no op. Deliberately not parseable.
            None => {
                let _ = write!(self.out, "%!{}", v.index());
            }
        }
    }

    fn values(&mut self, vs: &[ValueId]) {
        for (i, &v) in vs.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            self.value(v);
        }
    }

    fn indent(&mut self, n: usize) {
        self.out.extend(std::iter::repeat_n(' ', n));
    }

    /// Whether `op` prints in the function form: function-like, with entry
    /// arguments of the declared parameter types.
    fn is_function_form(&self, op: OpId) -> bool {
        let m = self.m;
        if !m.is_function(op) {
            return false;
        }
        let (Some((inputs, _)), Some(entry)) = (m.func_type(op), m.entry_block(op)) else {
            return false;
        };
        let args = m.block_args(entry);
        args.len() == inputs.len() && args.iter().zip(inputs).all(|(&a, t)| m.value_type(a) == t)
    }

    fn op(&mut self, op: OpId, indent: usize) {
        if self.is_function_form(op) {
            self.function(op, indent);
        } else {
            self.generic_op(op, indent);
        }
    }

    fn function(&mut self, op: OpId, indent: usize) {
        let m = self.m;
        let data = m.op(op);
        let entry = m.entry_block(op).expect("a function has a region");
        let (_, results) = m.func_type(op).expect("a function has a type");
        let args = m.block_args(entry);
        self.names.push(self.number(args, m.block_ops(entry)));
        self.indent(indent);
        let _ = write!(self.out, "{} ", data.name);
        write_symbol(&mut self.out, m.func_name(op).unwrap_or_default());
        self.out.push('(');
        for (i, &a) in args.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            self.value(a);
            let _ = write!(self.out, ": {}", m.value_type(a));
        }
        self.out.push_str(") -> ");
        write_type_list(&mut self.out, results);
        let attrs: BTreeMap<String, Attr> = data
            .attrs
            .iter()
            .filter(|(k, _)| k.as_str() != SYM_NAME && k.as_str() != FUNCTION_TYPE)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if !attrs.is_empty() {
            self.out.push_str(" attributes ");
            write_dict(&mut self.out, &attrs);
        }
        write_loc(&mut self.out, &data.loc);
        self.out.push_str(" {\n");
        for &inner in m.block_ops(entry) {
            self.op(inner, indent + 2);
        }
        self.indent(indent);
        self.out.push_str("}\n");
        self.names.pop();
    }

    fn generic_op(&mut self, op: OpId, indent: usize) {
        let m = self.m;
        let data = m.op(op);
        self.indent(indent);
        if !data.results().is_empty() {
            self.values(data.results());
            self.out.push_str(" = ");
        }
        let _ = write!(self.out, "{}(", data.name);
        self.values(&data.operands);
        self.out.push(')');
        // A function-like op whose body does not take its declared
        // parameters (invalid, but printable) still numbers its own values.
        let isolated = m.is_function(op);
        if isolated {
            let block = m.region_block(data.regions()[0]);
            self.names.push(self.number(m.block_args(block), m.block_ops(block)));
        }
        if !data.regions().is_empty() {
            self.out.push_str(" (");
            for (i, &r) in data.regions().iter().enumerate() {
                if i > 0 {
                    self.out.push_str(", ");
                }
                self.block(m.region_block(r), indent);
            }
            self.out.push(')');
        }
        if isolated {
            self.names.pop();
        }
        if !data.attrs.is_empty() {
            self.out.push(' ');
            write_dict(&mut self.out, &data.attrs);
        }
        self.out.push_str(" : ");
        let inputs: Vec<Type> = data.operands.iter().map(|&v| self.operand_type(v)).collect();
        write_type_list(&mut self.out, &inputs);
        self.out.push_str(" -> ");
        let results: Vec<Type> = data.results().iter().map(|&v| m.value_type(v).clone()).collect();
        match results.as_slice() {
            [single] if !matches!(single, Type::Function { .. }) => {
                let _ = write!(self.out, "{single}");
            }
            _ => write_type_list(&mut self.out, &results),
        }
        write_loc(&mut self.out, &data.loc);
        self.out.push('\n');
    }

    fn operand_type(&self, v: ValueId) -> Type {
        if self.m.has_value(v) {
            self.m.value_type(v).clone()
        } else {
            Type::Token
        }
    }

    /// `{`, the argument line `^(%3: index):` when there are arguments, the
    /// ops, and `}` at the op's indentation.
    fn block(&mut self, block: BlockId, indent: usize) {
        let m = self.m;
        self.out.push_str("{\n");
        let args = m.block_args(block);
        if !args.is_empty() {
            self.indent(indent);
            self.out.push_str("^(");
            for (i, &a) in args.iter().enumerate() {
                if i > 0 {
                    self.out.push_str(", ");
                }
                self.value(a);
                let _ = write!(self.out, ": {}", m.value_type(a));
            }
            self.out.push_str("):\n");
        }
        for &op in m.block_ops(block) {
            self.op(op, indent + 2);
        }
        self.indent(indent);
        self.out.push('}');
    }
}

fn write_loc(out: &mut String, loc: &Loc) {
    if !loc.is_unknown() {
        let _ = write!(out, " {loc}");
    }
}

fn write_type_list(out: &mut String, types: &[Type]) {
    out.push('(');
    for (i, t) in types.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "{t}");
    }
    out.push(')');
}

/// Whether `s` prints bare as a dict key or symbol name.
pub(crate) fn is_bare_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '.'))
}

/// Whether `s` is a dim symbol: an identifier without `$` or `.`.
pub(crate) fn is_dim_symbol(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn write_symbol(out: &mut String, name: &str) {
    out.push('@');
    write_name(out, name);
}

fn write_name(out: &mut String, name: &str) {
    if is_bare_name(name) {
        out.push_str(name);
    } else {
        write_string(out, name);
    }
}

pub(crate) fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn write_dict(out: &mut String, dict: &BTreeMap<String, Attr>) {
    out.push('{');
    for (i, (key, value)) in dict.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write_name(out, key);
        if !matches!(value, Attr::Unit) {
            let _ = write!(out, " = {value}");
        }
    }
    out.push('}');
}

fn write_float(out: &mut String, v: f64) {
    if v.is_nan() {
        let _ = write!(out, "nan(0x{:016x})", v.to_bits());
    } else if v.is_infinite() {
        out.push_str(if v > 0.0 { "inf" } else { "-inf" });
    } else {
        // Debug prints the shortest text that parses back to the same bits,
        // always with a `.` or an exponent, so it never reads as an integer.
        let _ = write!(out, "{v:?}");
    }
}

fn write_dim(out: &mut String, d: &DimExpr) {
    if d.is_bare() {
        let _ = write!(out, "{d}");
    } else {
        let _ = write!(out, "({d})");
    }
}

impl fmt::Display for Attr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        match self {
            Attr::Int(v) => {
                let _ = write!(out, "{v}");
            }
            Attr::Float(v) => write_float(&mut out, *v),
            Attr::Bool(v) => {
                let _ = write!(out, "{v}");
            }
            Attr::Str(s) => write_string(&mut out, s),
            Attr::Type(t) => {
                let _ = write!(out, "{t}");
            }
            Attr::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    let _ = write!(out, "{item}");
                }
                out.push(']');
            }
            Attr::Dict(d) => write_dict(&mut out, d),
            Attr::Symbol(s) => write_symbol(&mut out, s),
            Attr::Unit => out.push_str("unit"),
        }
        f.write_str(&out)
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        match self {
            Type::Scalar(s) => out.push_str(s.name()),
            Type::Tensor { dims, elem } => {
                out.push_str("tensor<");
                for d in dims {
                    write_dim(&mut out, d);
                    out.push('x');
                }
                let _ = write!(out, "{}>", elem.name());
            }
            Type::MemRef {
                dims,
                elem,
                space,
                layout,
            } => {
                out.push_str("memref<");
                for d in dims {
                    write_dim(&mut out, d);
                    out.push('x');
                }
                let _ = write!(out, "{}, {}", elem.name(), space.name());
                for (key, value) in layout {
                    out.push_str(", ");
                    write_name(&mut out, key);
                    let _ = write!(out, "={value}");
                }
                out.push('>');
            }
            Type::Ptr(space) => {
                let _ = write!(out, "ptr<{}>", space.name());
            }
            Type::Token => out.push_str("!token"),
            Type::Function { inputs, results } => {
                write_type_list(&mut out, inputs);
                out.push_str(" -> ");
                write_type_list(&mut out, results);
            }
            Type::Opaque { dialect, body } => {
                let _ = write!(out, "!{dialect}.{body}");
            }
        }
        f.write_str(&out)
    }
}

impl fmt::Display for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Loc::Unknown => f.write_str("loc(unknown)"),
            Loc::Source { file, start, end } => {
                let mut path = String::new();
                write_string(&mut path, file);
                write!(f, "loc({path}:{start}..{end})")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{MemSpace, ScalarType};

    #[test]
    fn types_print_canonically() {
        let hd = DimExpr::sym("H").mul(&DimExpr::sym("Dh"));
        let t = Type::tensor(
            [DimExpr::sym("M"), hd, DimExpr::sym("idx"), 128.into()],
            ScalarType::BF16,
        );
        assert_eq!(t.to_string(), "tensor<Mx(Dh*H)x(idx)x128xbf16>");
        assert_eq!(Type::tensor([], ScalarType::F32).to_string(), "tensor<f32>");
        let mut m = Type::memref([128.into(), 64.into()], ScalarType::BF16, MemSpace::Shared);
        if let Type::MemRef { layout, .. } = &mut m {
            layout.insert("swizzle".into(), Attr::Int(128));
            layout.insert("pad".into(), Attr::Int(8));
        }
        assert_eq!(m.to_string(), "memref<128x64xbf16, shared, pad=8, swizzle=128>");
        assert_eq!(Type::function([Type::F32], []).to_string(), "(f32) -> ()");
        assert_eq!(Type::opaque("nvptx", "mbarrier").to_string(), "!nvptx.mbarrier");
    }

    #[test]
    fn attrs_print_canonically() {
        assert_eq!(Attr::Float(1.0).to_string(), "1.0");
        assert_eq!(Attr::Float(1e-7).to_string(), "1e-7");
        assert_eq!(Attr::Float(f64::NEG_INFINITY).to_string(), "-inf");
        assert_eq!(Attr::Float(f64::NAN).to_string(), "nan(0x7ff8000000000000)");
        assert_eq!(Attr::str("a\"b\n\u{1}").to_string(), r#""a\"b\n\u{1}""#);
        let d = Attr::Dict(BTreeMap::from([
            ("unroll".to_string(), Attr::Unit),
            ("a b".to_string(), Attr::Symbol("f".into())),
        ]));
        assert_eq!(d.to_string(), r#"{"a b" = @f, unroll}"#);
        assert_eq!(
            Loc::source("a.tsr", tessera_base::Span::new(1, 4)).to_string(),
            r#"loc("a.tsr":1..4)"#
        );
    }
}
