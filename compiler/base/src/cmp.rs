//! The comparison of a shape constraint (`S <= 8192`), shared by the
//! checker's constraints over polynomials and the IR's over dims.

/// A comparison of two dims.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl CmpOp {
    /// Every comparison with its symbol, two-character symbols first (the
    /// order in which a reader tries them).
    pub const ALL: [(CmpOp, &'static str); 6] = [
        (CmpOp::Eq, "=="),
        (CmpOp::Ne, "!="),
        (CmpOp::Le, "<="),
        (CmpOp::Ge, ">="),
        (CmpOp::Lt, "<"),
        (CmpOp::Gt, ">"),
    ];

    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
        }
    }

    /// Whether `a op b`.
    pub fn holds(self, a: i64, b: i64) -> bool {
        match self {
            CmpOp::Eq => a == b,
            CmpOp::Ne => a != b,
            CmpOp::Lt => a < b,
            CmpOp::Le => a <= b,
            CmpOp::Gt => a > b,
            CmpOp::Ge => a >= b,
        }
    }
}
